"""Turn one markdown file into chunks: frontmatter out of the text, sections split by document type.

Pure functions over strings, so every split rule is tested without a database or a file system.

Split rules (DESIGN.md):
- principles: every section down to `###`, plus one chunk per top-level bullet of each section;
- learnings and retrospectives: `##` sections (deeper headings stay inside their section).
Text before the first split heading becomes an "intro" chunk when it says anything beyond the title.
Headings inside fenced code blocks are text, not structure. Metadata-only blocks (tag lines, link lists,
`**Date**: …` header blocks, a "Status" section; indexer/notes/blocks.py) are folded into the section before
them (the intro's into the section after it) rather than becoming fragments of their own.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import unicodedata
from dataclasses import dataclass, field

import yaml

from oracle_indexer.notes.blocks import block_date, block_tags, header_date, is_metadata_block
from oracle_indexer.notes.concepts import concept_text, extract_concepts, normalise_tags
from oracle_indexer.notes.fields import FieldValue, note_fields
from oracle_indexer.notes.freshness import note_freshness_dates
from oracle_indexer.notes.language import NoteLanguage, note_language

SPLIT_LEVEL = {"principle": 3, "learning": 2, "retro": 2, "note": 2}

# Bump when a change here (or in the modules this one calls) changes what an indexed note holds: its sections, their
# text, concepts, fields or dates. Every index records the version that parsed it (meta `parser_version`) and
# re-parses its notes once on the next sync when it is older (indexer/worker/sync.py): an upgrade does not leave
# notes parsed the old way until `oracle index --full`. 2: `## Context`-style headings are no concepts (session 15).
# 3: a design document's header fields date it (`Start Date:`, `Last updated:`: indexer/notes/blocks.py header_date).
PARSER_VERSION = 3

# Only the opening `#`s are a regex; the rest of the line is cut with str methods (see `_heading`): the
# obvious one-regex form `(.+?)(?:[ \t]+#+)?[ \t]*$` backtracks quadratically on a long run of spaces
# inside a heading (a 20,000-space heading took 16 s, a 2 MB one would never finish).
_HEADING_OPEN = re.compile(r"(#{1,6})[ \t]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BULLET = re.compile(r"^(?:[-*+]|\d{1,3}[.)])[ \t]+\S")
_DATE_IN_PATH = re.compile(r"(\d{4})-(\d{2})[-/](\d{2})")
_TIME_AFTER_PATH_DATE = re.compile(r"[/_ T-]([01]\d|2[0-3])[.:-]([0-5]\d)(?:[.:-]([0-5]\d))?(?!\d)")
_TIME_IN_VALUE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?")
_RULE_OR_BLANK = re.compile(r"^\s*(?:(?:-{3,}|\*{3,}|_{3,})\s*)?$")
MAX_TAGS = 100  # tags are stored per chunk: 100k tags x 100k bullets must not mean 10^10 rows


@dataclass(frozen=True)
class Chunk:
    """One searchable unit. `id` depends only on the file path and the section, never on content."""

    id: str
    file: str
    type: str
    kind: str  # "intro" | "section" | "bullet"
    title: str
    heading: str
    content: str
    line_start: int
    line_end: int
    content_hash: str
    concepts: tuple[str, ...]
    project: str | None
    date: str | None
    parent_id: str | None = None
    aliases: tuple[str, ...] = ()  # other names of the note (Obsidian `aliases:`), searched like the title
    timestamp: str | None = None  # "YYYY-MM-DDTHH:MM:SS" when the time of day is known (note_timestamp)

    def embed_text(self) -> str:
        return compose_embed_text(self.title, self.heading, self.content)


def compose_embed_text(title: str | None, heading: str | None, content: str | None) -> str:
    """What the embedding model sees: the note's title and heading give a section its context."""
    head = title or ""
    if heading:
        head = f"{head} — {heading}"
    return f"{head}\n{content or ''}"


@dataclass(frozen=True)
class Relation:
    """A (subject, predicate, object) statement a note makes, e.g. (oracle, stores index in, sqlite)."""

    subject: str
    predicate: str
    object: str


@dataclass
class ParsedFile:
    file: str
    type: str
    title: str
    frontmatter: dict
    chunks: list[Chunk]
    warnings: list[str] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    superseded_by: str | None = None  # a path or chunk id from `superseded_by:` in the frontmatter
    language: NoteLanguage = NoteLanguage()  # its language, where that came from, its translations' key
    last_verified: str | None = None  # ISO day from `last_verified:` (indexer/notes/freshness.py)
    review_after: str | None = None  # ISO day from `review_after:`
    fields: list[FieldValue] = field(default_factory=list)  # every frontmatter value, for `where` filters


@dataclass
class _Section:
    level: int
    heading_path: tuple[str, ...]
    start: int  # index into body lines of the first content line
    end: int = 0
    heading_line: int | None = None  # index of the heading line, None for the intro


CHUNK_ID_PATTERN = r"^c_[0-9a-f]{20}$"  # what chunk_id() makes: the one pattern for validating a section id
CHUNK_ID_RE = re.compile(CHUNK_ID_PATTERN)


def chunk_id(file: str, section_key: str) -> str:
    """Stable id from the file's path and the section's key: the indexer and the learn tool agree.
    Its shape is CHUNK_ID_PATTERN."""
    digest = hashlib.sha256(f"{file}\x00{section_key}".encode()).hexdigest()
    return f"c_{digest[:20]}"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Over complexity 10 on purpose: the frontmatter's cases (none, too large or deep, broken or repaired YAML, not a
# mapping, unclosed) in one scan.
def split_frontmatter(text: str) -> tuple[dict, str, int, list[str]]:  # noqa: C901
    """Return (metadata, body, number of lines the frontmatter took, warnings).

    A broken YAML block is reported and dropped from the body, so its raw text is never indexed as prose.
    A block that is not a mapping (a list, a scalar) is treated the same way.
    """
    if not text.startswith("---"):
        return {}, text, 0, []
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text, 0, []
    for i in range(1, len(lines)):
        # Only an unindented line closes the block: an indented `---` is a folded value's continuation
        # (PyYAML wraps long strings), and treating it as the end dropped every field after it.
        if lines[i].rstrip() in ("---", "..."):
            raw = "\n".join(lines[1:i])
            body = "\n".join(lines[i + 1 :])
            if len(raw) > MAX_FRONTMATTER_CHARS:  # PyYAML builds ~50,000 scalars a second: bound the cost
                return _recovered(raw, body, i + 1, f"is over {MAX_FRONTMATTER_CHARS // 1024} KB, too large for YAML")
            try:
                data = load_yaml(raw) if raw.strip() else {}
            except TooDeep:
                return _recovered(raw, body, i + 1, f"is nested more than {MAX_FRONTMATTER_DEPTH} levels deep")
            except yaml.YAMLError as exc:
                repaired = repair_colon_values(raw)
                if repaired is not None:
                    return repaired, body, i + 1, []
                mark = getattr(exc, "problem_mark", None)
                where = f" at line {mark.line + 2}" if mark is not None else ""
                return _recovered(raw, body, i + 1, f"is not valid YAML{where}")
            if data is None:
                data = {}
            if not isinstance(data, dict):
                return {}, body, i + 1, ["frontmatter is not a YAML mapping; metadata ignored"]
            problem = _shape_problem(data)
            if problem:
                return _recovered(raw, body, i + 1, problem)
            kept, dropped = _drop_impossible_dates(data)
            assert isinstance(kept, dict)  # a mapping stays a mapping
            return _text_keyed(kept), body, i + 1, [
                f"frontmatter {name}: {text!r} is not a calendar date; {what} ignored" for name, text, what in dropped]
    return {}, text, 0, ["frontmatter opened with --- but never closed; treated as text"]


def _drop_impossible_dates(node: object, name: str = "") -> tuple[object, list[tuple[str, str, str]]]:
    """The data without the fields (and list items) that hold a NotADate; (field name, text, what) of each."""
    dropped: list[tuple[str, str, str]] = []
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            field_name = f"{name}.{key}" if name else str(key)
            if isinstance(value, NotADate) or isinstance(key, NotADate):
                dropped.append((field_name, value.text if isinstance(value, NotADate) else key.text, "the field is"))
                continue
            out[key], inner = _drop_impossible_dates(value, field_name)
            dropped += inner
        return out, dropped
    if isinstance(node, list):
        items = []
        for value in node:
            if isinstance(value, NotADate):
                dropped.append((name, value.text, "that item is"))
                continue
            kept, inner = _drop_impossible_dates(value, name)
            items.append(kept)
            dropped += inner
        return items, dropped
    return node, dropped


def _text_keys(node: object) -> object:
    """The same data with every mapping key a string: YAML reads `2024-01-01: x` with a date for a key,
    which JSON (an API response) cannot carry. Depth is already bounded by `_shape_problem`."""
    if isinstance(node, dict):
        return _text_keyed(node)
    if isinstance(node, list):
        return [_text_keys(v) for v in node]
    return node


def _text_keyed(mapping: dict) -> dict:
    return {k if isinstance(k, str) else str(k): _text_keys(v) for k, v in mapping.items()}


def _recovered(raw: str, body: str, taken: int, problem: str) -> tuple[dict, str, int, list[str]]:
    recovered = lenient_frontmatter(raw)
    what = f"read line by line ({', '.join(sorted(recovered))})" if recovered else "metadata ignored"
    return recovered, body, taken, [f"frontmatter {problem}; {what}"]


_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster


class NotADate:
    """A value YAML reads as a timestamp that is no calendar date (`9999-99-99`, `2026-02-30`): before, building
    it raised ValueError and the whole note was dropped; now the field holding it is dropped, with a warning."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Loader(_BASE_LOADER):  # type: ignore[misc, valid-type]
    def construct_yaml_timestamp(self, node: yaml.Node) -> object:
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError):
            return NotADate(str(node.value))


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)
_YAML_LOADER = _Loader
MAX_FRONTMATTER_DEPTH = 32
MAX_FRONTMATTER_CHARS = 64 * 1024


class TooDeep(Exception):
    """The YAML nests collections deeper than MAX_FRONTMATTER_DEPTH."""


def load_yaml(raw: str) -> object:
    """YAML through libyaml, after its events show the nesting is shallow enough to build.

    libyaml's parser is a state machine, but building the objects recurses in C, one frame per level:
    `x: [[[[...` 25,000 levels deep (50 KB of frontmatter) overflows an 8 MB stack, a segfault that kills
    the process, and a thread's smaller stack goes at 2,000. Walking the events first costs a fraction of
    the load and stops at the first level too many; notes never nest more than a few levels.

    PyYAML 6.0.4's libyaml refuses by itself past 1,000 flow levels, in its scanner, which reads ahead of the
    events: that refusal is the same answer (too deep), whichever library version is installed.
    """
    depth = 0
    try:
        for event in yaml.parse(raw, Loader=_YAML_LOADER):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_FRONTMATTER_DEPTH:
                    raise TooDeep
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" in (exc.problem or ""):
            raise TooDeep from exc
        raise
    return yaml.load(raw, Loader=_YAML_LOADER)


def _shape_problem(data: dict) -> str | None:
    """Why parsed frontmatter is unsafe to hand on, or None.

    Whatever later walks the metadata (JSON for an API response, a recursive copy) must not blow up:
    YAML aliases let 1 KB of frontmatter stand for 10^9 nodes (a "billion laughs"), which a walk that does
    not track identity visits one by one. Notes never need them, so they are refused; the walk here visits
    each container once. (Depth is bounded already by `load_yaml`; checked again here for any caller.)
    """
    seen: set[int] = set()
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if id(node) in seen:
            return "repeats a node through a YAML alias (*name)"
        seen.add(id(node))
        if depth > MAX_FRONTMATTER_DEPTH:
            return f"is nested more than {MAX_FRONTMATTER_DEPTH} levels deep"
        children = list(node.keys()) + list(node.values()) if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)
    return None

_LOOSE_KEY = re.compile(r"^([A-Za-z_][\w-]*):[ \t]*(.*)$")
_PLAIN_VALUE = re.compile(r"^([A-Za-z_][\w-]*):[ \t]+([^\s\[\]{}|>&!#].*?)[ \t]*$")


def repair_colon_values(raw: str) -> dict | None:
    """Frontmatter as its author meant it when the only problem is plain values YAML reads as syntax.

    Oracle v2 writes `source: rrr: 15.00_session`, `title: Handoff System:` and `title: **Bold**`, and people
    write `title: A vs B: why`; YAML refuses the whole block over a ": ", a trailing ":" or a leading `*`
    (an alias) or `@`/backtick (reserved), or a quoted phrase with more after it (`title: "X" is Y`). Quoting
    just those values and parsing again gives exactly what the line says, so it is no warning. Anything else
    wrong still is (None here).
    """
    changed = False
    out = []
    for line in raw.split("\n"):
        match = _PLAIN_VALUE.match(line)
        value = match.group(2) if match else ""
        quoted = match is not None and value[0] in "\"'"
        if quoted and len(value) > 1 and value.endswith(value[0]):
            match = None  # a complete quoted scalar: YAML's own business
        if match and (quoted or ": " in value or value.endswith(":") or value[0] in "*@`%"):
            value = match.group(2).replace("'", "''")
            line = f"{match.group(1)}: '{value}'"
            changed = True
        out.append(line)
    if not changed:
        return None
    try:
        data = load_yaml("\n".join(out))
    except (yaml.YAMLError, TooDeep):
        return None
    if not isinstance(data, dict) or _shape_problem(data):
        return None
    return _text_keys(data)  # type: ignore[return-value]
_LOOSE_ITEM = re.compile(r"^[ \t]+-[ \t]+(.*)$")


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def lenient_frontmatter(raw: str) -> dict:
    """Recover `key: value` lines from frontmatter that YAML rejects.

    Hand-written notes often have an unquoted colon in a title ("title: A vs B: why"); YAML refuses the
    whole block, but each line still says plainly what it means. Flow lists `[a, b]` and block lists
    (`- a` lines under an empty key) are read as lists; everything else stays a string.
    """
    data: dict[str, object] = {}
    last_key: str | None = None
    for line in raw.split("\n"):
        item = _LOOSE_ITEM.match(line)
        listed = data.get(last_key) if last_key is not None else None
        if item and isinstance(listed, list):
            listed.append(_unquote(item.group(1)))
            continue
        match = _LOOSE_KEY.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2).strip()
        last_key = key
        if not value:
            data[key] = []
        elif value.startswith("[") and value.endswith("]"):
            data[key] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            data[key] = _unquote(value)
    return {k: v for k, v in data.items() if v != []}


def _scalar(value: object) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()[:10] if not isinstance(value, dt.datetime) else value.date().isoformat()
    text = str(value).strip()
    return text or None


def note_date(meta: dict, file: str) -> str | None:
    """ISO date from frontmatter (date/created), else from a YYYY-MM-DD or YYYY-MM/DD path."""
    for key in ("date", "created"):
        value = _scalar(meta.get(key))
        if value:
            match = _DATE_IN_PATH.search(value)
            return "-".join(match.groups()) if match else value[:10]
    match = _DATE_IN_PATH.search(file)
    return "-".join(match.groups()) if match else None


def note_timestamp(meta: dict, file: str, date: str | None) -> str | None:
    """`date` with its time of day, "YYYY-MM-DDTHH:MM:SS", when one is known, else None: "newest first"
    must not list a 00.27 retrospective before the 10.32 one of the same day. The time comes from a
    datetime in `date:`/`created:`, else from the file name right after the path's date
    (`2026-01/05/10.32_x.md`, `2026-01-04_12-21_x.md`) when that date is the note's date."""
    if not date:
        return None
    for key in ("date", "created"):
        value = meta.get(key)
        if isinstance(value, dt.datetime):
            return f"{date}T{value.strftime('%H:%M:%S')}"
        match = _TIME_IN_VALUE.match(str(value).strip()) if isinstance(value, str) else None
        if match:
            return f"{date}T{match[1]}:{match[2]}:{match[3] or '00'}"
        if value is not None and not isinstance(value, (dict, list)):
            break  # a date without a time: the path's time counts only for that same date (below)
    found = _DATE_IN_PATH.search(file)
    if not found or "-".join(found.groups()) != date:
        return None
    match = _TIME_AFTER_PATH_DATE.match(file, found.end())
    return f"{date}T{match[1]}:{match[2]}:{match[3] or '00'}" if match else None


def _is_fence_toggle(line: str, fence: str | None) -> tuple[bool, str | None]:
    """(is this line a fence opening or closing, the open fence after it).

    A fence closes only with the same character, at least as many of them, and nothing after.
    """
    match = _FENCE.match(line)
    if not match:
        return False, fence
    marker = match.group(1)
    if fence is None:
        return True, marker
    if marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker) :].strip():
        return True, None
    return False, fence


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line; an optional closing run of `#` after a space is dropped."""
    match = _HEADING_OPEN.match(line)
    if not match:
        return None
    text = line[match.end() :].rstrip(" \t")
    if len(line) == match.end():
        return None
    body = text.rstrip("#")
    if body != text and body.strip(" \t") and body[-1] in " \t":
        text = body
    return len(match.group(1)), text.strip()


def find_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of every ATX heading outside fenced code blocks."""
    out: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        toggled, fence_after = _is_fence_toggle(line, fence)
        if toggled:
            fence = fence_after
            continue
        if fence is not None:
            continue
        heading = _heading(line) if line.startswith("#") else None
        if heading:
            out.append((i, *heading))
    return out


def _sections(lines: list[str], split_level: int) -> list[_Section]:
    """Cut the body at headings of level <= split_level; the heading path tracks the outline above.

    A leading `#` heading is the note's title: it neither splits nor appears in heading paths.
    """
    headings = find_headings(lines)
    title_line = headings[0][0] if headings and headings[0][1] == 1 else None
    intro_start = 0
    if title_line is not None and not any(line.strip() for line in lines[:title_line]):
        intro_start = title_line + 1
    sections = [_Section(level=0, heading_path=(), start=intro_start)]
    stack: list[tuple[int, str]] = []
    for index, level, text in headings:
        if index == title_line:
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        if level <= split_level:
            sections[-1].end = index
            path = tuple(t for _, t in stack)
            sections.append(_Section(level=level, heading_path=path, start=index + 1, heading_line=index))
    sections[-1].end = len(lines)
    return sections


def _fold_metadata(sections: list[_Section], lines: list[str]) -> tuple[list[_Section], list[str]]:
    """Merge each metadata-only section into its neighbour: the nearest earlier section with text, else
    the nearest later one. Sections are contiguous runs of lines, so merging is widening a span (the
    line numbers stay true). Returns the sections left and the text of the folded blocks (for tags and
    a date). A note made only of metadata keeps it: something must remain to be found."""

    def text(section: _Section) -> str:
        start, end = _trim_span(lines, section.start, section.end)
        return "\n".join(lines[start:end])

    texts = [text(s) for s in sections]
    meta = [
        bool(t.strip()) and is_metadata_block(s.heading_path[-1] if s.heading_path else "", t, s.heading_line is None)
        for s, t in zip(sections, texts)
    ]
    keep = [bool(t.strip()) and not m for t, m in zip(texts, meta)]
    if not any(keep):
        return sections, []
    folded: list[str] = []
    out = [_Section(s.level, s.heading_path, s.start, s.end, s.heading_line) for s in sections]
    for i, is_meta in enumerate(meta):
        if not is_meta:
            continue
        folded.append(texts[i])
        before = next((j for j in range(i - 1, -1, -1) if keep[j]), None)
        if before is not None:
            out[before].end = out[i].end
        else:
            after = next(j for j in range(i + 1, len(out)) if keep[j])
            heading_line = out[i].heading_line
            out[after].start = heading_line if heading_line is not None else out[i].start
    return [s for s, k in zip(out, keep) if k], folded


def _bullets(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """Spans (start, end) of top-level list items, each with its indented continuation lines."""
    spans: list[tuple[int, int]] = []
    fence: str | None = None
    current: int | None = None
    for i in range(start, end):
        line = lines[i]
        toggled, fence = _is_fence_toggle(line, fence)
        in_code = toggled or fence is not None
        top_level = not in_code and bool(_BULLET.match(line))
        continues = current is not None and (in_code or line.startswith((" ", "\t")) or not line.strip())
        if top_level:
            if current is not None:
                spans.append((current, i))
            current = i
        elif current is not None and not continues:
            spans.append((current, i))
            current = None
    if current is not None:
        spans.append((current, end))
    return [(s, e) for s, e in ((s, _trim_end(lines, s, e)) for s, e in spans)]


def _trim_end(lines: list[str], start: int, end: int) -> int:
    while end > start and not lines[end - 1].strip():
        end -= 1
    return end


def _trim_span(lines: list[str], start: int, end: int) -> tuple[int, int]:
    while start < end and _RULE_OR_BLANK.match(lines[start]):
        start += 1
    while end > start and _RULE_OR_BLANK.match(lines[end - 1]):
        end -= 1
    return start, end


_RULE_TEXT = re.compile(r"\s*([-*_=~])(?:\s*\1){2,}\s*")


def _is_rule(text: str) -> bool:
    """A thematic break or underline ("---", "* * *", "==="): a separator, never a title ("*" alone is a
    title someone chose)."""
    return _RULE_TEXT.fullmatch(text) is not None


def bare_title(text: str | None) -> str | None:
    """A title without a leading markdown `# ` (Oracle v2 wrote `title: # Foo`, and `# # Foo` headings);
    None when nothing is left or only a rule (`# ---` is no title)."""
    if not text:
        return text
    text = re.sub(r"^(?:#{1,6}[ \t]+)+", "", text).strip()
    return None if not text or _is_rule(text) else text


def note_aliases(meta: dict) -> tuple[str, ...]:
    """Obsidian's `aliases:` (a list or one string): other names the note answers to."""
    value = meta.get("aliases", meta.get("alias"))
    items = value if isinstance(value, list) else [value]
    found = (" ".join(text.split()) for text in (_scalar(v) for v in items) if text)
    return tuple(dict.fromkeys(a for a in found if len(a) <= MAX_TERM_CHARS))[:MAX_TAGS]


# `[[target]]`, `[[target#heading]]`, `[[target|shown text]]`, `![[embed]]`; not inside code.
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
LINKS_TO = "links_to"


def wikilinks(lines: list[str]) -> list[str]:
    """Targets of Obsidian wikilinks in the body, in order, once each; embeds of non-notes (images) are not
    links to notes, and links shown inside code are text."""
    targets: dict[str, None] = {}
    fence: str | None = None
    for line in lines:
        toggled, fence = _is_fence_toggle(line, fence)
        if toggled or fence is not None or "[[" not in line:
            continue
        # Inside a table the alias's pipe is escaped (`[[Note\|alias]]`, `[[Note#h\|alias]]`): the backslash
        # belongs to the table, not to the target (it was left in the relation's object: `Note\`).
        for embed, target in _WIKILINK.findall(_INLINE_CODE.sub("", line).replace("\\|", "|")):
            target = target.strip()
            stem, dot, ext = target.rpartition(".")
            if dot and ext.lower() in ("md", "markdown"):
                target = stem
            elif embed and dot and "/" not in ext and " " not in ext:
                continue  # ![[diagram.png]]: an attachment
            if target:
                targets[target] = None
    return list(targets)


def link_relations(title: str, lines: list[str]) -> list[Relation]:
    """One `links_to` relation per wikilink target, the note's title as subject."""
    subject = relation_term(title)
    if subject is None:
        return []
    found = (relation_term(t) for t in wikilinks(lines))
    return [Relation(subject, LINKS_TO, obj) for obj in found if obj]


def title_for(meta: dict, lines: list[str], file: str) -> str:
    """Frontmatter title, else the first `#` heading, else the file name: never a bare '---'."""
    title = bare_title(_scalar(meta.get("title")))
    if title:
        return title
    for _, level, text in find_headings(lines):
        heading = bare_title(text)
        if level == 1 and heading:  # "# ", "# ---" and "# # " are not titles
            return heading
    stem = file.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return re.sub(r"[-_]+", " ", stem).strip() or stem


MAX_RELATIONS = 100
MAX_TERM_CHARS = 200
_TRIPLET_SEPARATORS = ("|", "->", "→")


def relation_term(value: object) -> str | None:
    """One side of a triplet as stored and shown: NFC, single spaces, at most MAX_TERM_CHARS."""
    text = _scalar(value)
    if text is None:
        return None
    text = " ".join(unicodedata.normalize("NFC", text).split())
    return text if text and len(text) <= MAX_TERM_CHARS else None


def relation_key(term: str) -> str:
    """How terms are matched: case and spacing do not matter ("SQLite" finds "sqlite")."""
    return " ".join(unicodedata.normalize("NFKC", term).casefold().split())


def _triplet_parts(item: object) -> list[object] | None:
    if isinstance(item, dict):
        return [item.get("subject"), item.get("predicate"), item.get("object")]
    if isinstance(item, (list, tuple)):
        return list(item)
    if isinstance(item, str):
        for sep in _TRIPLET_SEPARATORS:
            if sep in item:
                return [part.strip() for part in item.split(sep)]
    return None


def parse_relations(value: object) -> tuple[list[Relation], list[str]]:
    """Triplets from frontmatter `relations:`; each entry may be `[s, p, o]`, `{subject, predicate, object}`
    or `"s | p | o"`. A malformed entry is reported and skipped; the others are kept."""
    if value is None:
        return [], []
    items = value if isinstance(value, list) else [value]
    found: dict[Relation, None] = {}  # an ordered set: a list's `in` made 100k relations quadratic
    bad: list[int] = []
    for n, item in enumerate(items, start=1):
        parts = _triplet_parts(item)
        terms = [relation_term(p) for p in parts] if parts is not None and len(parts) == 3 else None
        if terms is None or any(t is None for t in terms):
            bad.append(n)
            continue
        found[Relation(*terms)] = None  # type: ignore[arg-type]
    out = list(found)
    warnings = [f"relations entry {n} is not a (subject, predicate, object) triplet of short texts; ignored"
                for n in bad[:5]]
    if len(bad) > 5:  # 100k bad entries must not mean 100k warnings
        warnings.append(f"{len(bad) - 5} more relations entries are not triplets either; ignored")
    if len(out) > MAX_RELATIONS:
        warnings.append(f"{len(out)} relations; only the first {MAX_RELATIONS} are kept")
        out = out[:MAX_RELATIONS]
    return out, warnings


def _with_links(relations: list[Relation], warnings: list[str],
                links: list[Relation]) -> tuple[list[Relation], list[str]]:
    """Frontmatter relations first, then wikilinks, within MAX_RELATIONS (saying when links were dropped)."""
    merged = list(dict.fromkeys([*relations, *links]))
    if len(merged) > MAX_RELATIONS and len(relations) <= MAX_RELATIONS:
        warnings = [*warnings, f"{len(merged)} relations with the wikilinks; only the first {MAX_RELATIONS} are kept"]
    return merged[:MAX_RELATIONS], warnings


# Over complexity 10 on purpose: the note's metadata and the chunk builder (`add`) its type's splitting calls share one
# scope.
def parse_markdown(text: str, file: str, doc_type: str) -> ParsedFile:  # noqa: C901
    """Split one file's text into chunks according to its document type."""
    meta, body, offset, warnings = split_frontmatter(text)
    lines = body.split("\n")
    title = title_for(meta, lines, file)
    aliases = note_aliases(meta)
    project = _scalar(meta.get("project"))
    date = note_date(meta, file)
    tags = list(dict.fromkeys(normalise_tags(meta.get("tags")) + normalise_tags(meta.get("concepts"))))
    if len(tags) > MAX_TAGS:
        warnings = [*warnings, f"{len(tags)} tags; only the first {MAX_TAGS} kept"]
        tags = tags[:MAX_TAGS]
    split_level = SPLIT_LEVEL[doc_type]
    seen_keys: dict[str, int] = {}
    chunks: list[Chunk] = []

    def add(kind: str, heading: str, key: str, start: int, end: int, parent: str | None) -> str | None:
        start, end = _trim_span(lines, start, end)
        content = "\n".join(lines[start:end]).strip()
        if not content:
            return None
        n = seen_keys.get(key, 0)
        seen_keys[key] = n + 1
        unique_key = key if n == 0 else f"{key}#{n + 1}"
        cid = chunk_id(file, unique_key)
        concepts = tuple(sorted(set(tags) | set(extract_concepts(concept_text(title, heading, content)))))
        chunks.append(
            Chunk(
                id=cid,
                file=file,
                type=doc_type,
                kind=kind,
                title=title,
                heading=heading,
                content=content,
                line_start=offset + start + 1,
                line_end=offset + end,
                content_hash=content_hash(content),
                concepts=concepts,
                project=project,
                date=date,
                parent_id=parent,
                aliases=aliases,
                timestamp=note_timestamp(meta, file, date),
            )
        )
        return cid

    sections, folded = _fold_metadata(_sections(lines, split_level), lines)
    if folded:
        found_tags = [t for block in folded for t in normalise_tags(block_tags(block))]
        tags = list(dict.fromkeys(tags + found_tags))[: max(MAX_TAGS, len(tags))]
        date = date or next((d for d in map(block_date, folded) if d), None)
    date = date or header_date(lines)
    for section in sections:
        heading = " > ".join(section.heading_path)
        if section.heading_line is None:
            key = "(intro)"
            kind = "intro"
        else:
            key = heading
            kind = "section"
        parent = add(kind, heading, key, section.start, section.end, None)
        if doc_type == "principle" and section.heading_line is not None:
            for n, (b_start, b_end) in enumerate(_bullets(lines, section.start, section.end), start=1):
                if not is_metadata_block("", "\n".join(lines[b_start:b_end]), intro=True):
                    add("bullet", heading, f"{key}/bullet{n}", b_start, b_end, parent)
    if offset and not body.strip():  # only frontmatter: indexed, yet nothing in it can be found
        warnings = [*warnings, "nothing after the frontmatter: the note has no text to search"]
    relations, relation_warnings = parse_relations(meta.get("relations"))
    relations, relation_warnings = _with_links(relations, relation_warnings, link_relations(title, lines))
    superseded_by = _scalar(meta.get("superseded_by"))
    if meta.get("superseded_by") is not None and superseded_by is None:
        relation_warnings.append("superseded_by must be one path or id; ignored")
    last_verified, review_after, date_warnings = note_freshness_dates(meta)
    fields, field_warnings = note_fields(meta)
    return ParsedFile(
        file=file, type=doc_type, title=title, frontmatter=meta, chunks=chunks,
        warnings=warnings + relation_warnings + date_warnings + field_warnings, relations=relations,
        superseded_by=superseded_by, language=note_language(meta, file, body), last_verified=last_verified,
        review_after=review_after, fields=fields,
    )

