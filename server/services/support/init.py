"""`oracle init [PATH]`: look at a folder of markdown and write an `oracle.toml` that indexes it sensibly. The
survey, the language choice and the file are here; the CLI says what they mean (server/cli/init.py).

A new user's folder is rarely principles/learnings/retrospectives: an ADR repository keeps decisions in
`locales/<lang>/...`, an Obsidian vault keeps notes anywhere. Rather than make them learn the rules first,
init counts the markdown per folder, types each folder by what it looks like (indexer/notes/folders.py: ADRs
as principles, runbooks as learnings, dated notes as retrospectives, anything else as generic notes), writes
it with comments saying what each line does and why, and then says what `oracle index` will do with it: the
same `discover` the indexer runs, so no surprise later. The whole folder is indexed unless the user excludes
something (issue 40: with a `learnings/` present, init used to leave every other folder out). An Oracle v2
brain (`resonance/`, or a `ψ` on the path) keeps its own layout and what init always wrote for it (its top-level
folders mostly named by date as retro, nothing else): the typing of folders changes nothing it indexes.

A translated vault (`en/`, `th/`, `ja/`, `de/` ... with the same pages) is indexed in the user's language(s)
only, asking nothing: the languages named by the environment (LANGUAGE, LC_ALL, LC_MESSAGES, LANG) that have a
folder, else the largest folder. Every other language folder is an active line of `exclude` that a person
deletes to index it too; 34 languages of the Obsidian help vault took 23 minutes and 506 MB, and their
translations filled the English top 5. Folders of release notes and changelogs are named as a suggestion to
leave out (commented): hundreds of near-identical entries crowd out answers.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from oracle_indexer.notes.discover import Discovery, discover, top_folder
from oracle_indexer.notes.folders import FolderKind, classify
from oracle_indexer.notes.language import language_tag
from oracle_indexer.rootconfig import BUILTIN_FOLDER_TYPES, CONFIG_NAME, Layout, load_layout, read_gitignore
from oracle_indexer.safe_write import SHARED, SymlinkRefused, write_atomic
from oracle_server.services.vocabulary.errors import ServiceError

# Folders of release notes and changelogs: many near-identical entries that crowd out answers.
_CHANGELOG = re.compile(r"^(?:change[-_ ]?logs?|release[-_ ]?notes?|releases|what'?s[-_ ]new)$", re.IGNORECASE)
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")  # the order gettext reads them in


class InitError(ServiceError, RuntimeError):
    """init cannot proceed (no such folder, a config already there); the message says what to do."""


@dataclass
class Survey:
    """What a folder holds, as init sees it."""

    root: Path
    per_top: Counter = field(default_factory=Counter)  # top-level folder ("." = root files) -> markdown files
    dated: Counter = field(default_factory=Counter)  # top-level folder -> files named YYYY-MM-DD...
    builtin: set[str] = field(default_factory=set)  # built-in folder names present (learnings, ...)
    locales: dict[str, dict[str, int]] = field(default_factory=dict)  # folder -> its language folders -> files
    changelogs: dict[str, int] = field(default_factory=dict)  # a folder of release notes -> markdown files
    obsidian: bool = False
    heads: dict[str, str] = field(default_factory=dict)  # note path -> its first HEAD_BYTES, decoded (for typing)

    @property
    def total(self) -> int:
        return sum(self.per_top.values())


def survey(root: Path) -> Survey:
    """Count markdown files by top-level folder with the default exclusions (dot-folders, .gitignore)."""
    found = discover(root, Layout(default_type="learning", gitignore=read_gitignore(root)))  # every candidate
    result = Survey(root=root, obsidian=(root / ".obsidian").is_dir())
    for item in found.files:
        top = top_folder(item.rel)
        result.per_top[top] += 1
        if re.match(r"^\d{4}-\d{2}-\d{2}", item.rel.rsplit("/", 1)[-1]):
            result.dated[top] += 1
        for part in item.rel.split("/")[:-1]:
            if part in BUILTIN_FOLDER_TYPES:
                result.builtin.add(part)
        result.heads[item.rel] = _head(item.path)
    per_folder: Counter = Counter()  # every folder (at any depth) -> markdown files under it
    for item in found.files:
        parts = item.rel.split("/")[:-1]
        for depth in range(len(parts)):
            per_folder["/".join(parts[: depth + 1])] += 1
    for folder, n in sorted(per_folder.items()):
        parent, _, name = folder.rpartition("/")
        if language_tag(name):
            result.locales.setdefault(parent or ".", {})[name] = n
        if _CHANGELOG.match(name):
            result.changelogs[folder] = n
    result.locales = {k: v for k, v in result.locales.items() if len({language_tag(n) for n in v}) >= 2}
    return result


HEAD_BYTES = 8192  # enough of a note to see its headings and fields


def _head(path: Path) -> str:
    """The start of a note, for typing its folder; an unreadable file counts as empty (discover reports it)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def oracle_v2(s: Survey) -> bool:
    """An Oracle v2 brain (`ψ/memory`: resonance/, learnings/, retrospectives/ ...): typed by its own folders."""
    return "resonance" in s.builtin or "ψ" in s.root.parts or (s.root / "ψ").is_dir()


@dataclass(frozen=True)
class TypedFolder:
    """A folder init gave a type, why, and how many of the files it keeps are in it."""

    folder: str  # root-relative path, "." for the files in the root itself
    kind: FolderKind
    files: int
    written: bool  # a [types] line (else the default type covers it, or a built-in name does)


def _left_out(rel: str, gone: set[str]) -> bool:
    return any(rel == g or rel.startswith(g + "/") for g in gone)


def type_folders(s: Survey, choices: list[LanguageChoice]) -> list[TypedFolder]:
    """Each top-level folder's kind (from the files init keeps in it), and any deeper folder whose own kind is a
    specific one that differs from what its top-level folder gives it (`docs/adr` in a `docs` of notes). Folders
    with a built-in name are typed by it; language folders left out are not looked at."""
    gone = {c.pattern(n).strip("/") for c in choices for n in c.left_out}
    kept = {rel: text for rel, text in s.heads.items() if not _left_out(rel, gone)}
    under: dict[str, list[tuple[str, str]]] = {}  # folder (any depth) -> (file name, text) of every file below
    for rel, text in kept.items():
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            under.setdefault("/".join(parts[:depth]), []).append((parts[-1], text))
    out: list[TypedFolder] = []
    root_files = sum(1 for rel in kept if "/" not in rel)
    if root_files:
        out.append(TypedFolder(".", FolderKind("note", "notes", "files in the folder itself"), root_files, False))
    for top in sorted(f for f in under if "/" not in f):
        if top in BUILTIN_FOLDER_TYPES:
            kind = FolderKind(BUILTIN_FOLDER_TYPES[top], top, "built in")
            out.append(TypedFolder(top, kind, len(under[top]), False))
            continue
        kind = classify(top, under[top])
        out.append(TypedFolder(top, kind, len(under[top]), kind.specific))
        for folder in sorted(f for f in under if f.startswith(top + "/")):
            names = folder.split("/")
            if any(n in BUILTIN_FOLDER_TYPES for n in names[1:]):
                continue  # typed by its built-in name, at any depth
            inner = classify(folder, under[folder])
            parent_type = next((t.kind.type for t in reversed(out) if folder.startswith(t.folder + "/")), kind.type)
            if inner.specific and inner.type != parent_type:
                out.append(TypedFolder(folder, inner, len(under[folder]), True))
    return out


def user_languages(environ: Mapping[str, str] | None = None) -> list[str]:
    """The languages the environment names, most wanted first (`LANGUAGE=th:en`, `LANG=de_DE.UTF-8` -> de);
    C and POSIX name none."""
    env = os.environ if environ is None else environ
    out: list[str] = []
    for var in LOCALE_VARIABLES:
        for value in env.get(var, "").split(":"):
            lang = language_tag(value.split(".")[0].split("@")[0])
            if lang and lang not in out:
                out.append(lang)
    return out


@dataclass(frozen=True)
class LanguageChoice:
    """Which language folders of one parent are indexed, and why."""

    parent: str  # "." for the root
    kept: list[str]  # folder names
    left_out: list[str]
    reason: str

    def pattern(self, name: str) -> str:
        """The exclude line for one language folder, anchored to the root (a bare `de/` would match any depth)."""
        return f"/{name}/" if self.parent == "." else f"{self.parent}/{name}/"


def choose_languages(s: Survey, environ: Mapping[str, str] | None = None) -> list[LanguageChoice]:
    """For each folder of language folders: keep those in the user's languages (the environment), else the
    largest one; every other one is left out. Never a language the user writes in."""
    wanted = user_languages(environ)
    choices = []
    for parent, folders in sorted(s.locales.items()):
        kept = [name for name in folders if language_tag(name) in wanted]
        if kept:
            named = sorted({language_tag(n) or n for n in kept}, key=wanted.index)
            reason = f"your language{'s' if len(named) > 1 else ''} ({', '.join(named)}: from the environment)"
        else:
            largest = max(folders.items(), key=lambda kv: (kv[1], language_tag(kv[0]) == "en", kv[0]))[0]
            kept = [largest]
            reason = (f"the largest language folder ({folders[largest]} files;"
                      f" {'LANG names ' + ', '.join(wanted) if wanted else 'LANG names no language'})")
        choices.append(LanguageChoice(parent, sorted(kept), sorted(n for n in folders if n not in kept), reason))
    return choices


# What may not stand raw in a TOML string or comment (control characters; a newline would end a comment and make the
# rest of a folder's name live TOML), what a terminal or an editor acts on (C1 controls, line separators, bidi
# overrides), and a string's own quote and backslash. Lone surrogates are a name's bytes that are not UTF-8.
_TOML_UNSAFE = re.compile(r'["\\\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]')
_TOML_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if "\ud800" <= char <= "\udfff":  # surrogateescape: the byte the file system holds
        return f"\\x{ord(char) - 0xDC00:02x}" if ord(char) >= 0xDC80 else f"\\u{ord(char):04x}"
    return _TOML_SHORT.get(char, f"\\u{ord(char):04x}")


def shown(name: str) -> str:
    """A folder's name as it goes into a comment of oracle.toml: escaped, so that it stays on its comment line
    whatever it holds (issue 45: a folder named "x\\n[search]\\nsampling = true" switched sampling on)."""
    return _TOML_UNSAFE.sub(_escape, name)


def toml_string(name: str) -> str | None:
    """A name as a TOML basic string that reads back as exactly this name; None for a name no TOML string can
    hold (bytes that are not UTF-8 on disk)."""
    return None if _SURROGATE.search(name) else f'"{shown(name)}"'


def _toml_key(key: str) -> str:
    return toml_string(key) or f'"{shown(key)}"'  # the commented form: a person sees which folder it is


def changelogs_kept(s: Survey, choices: list[LanguageChoice]) -> dict[str, int]:
    """Folders of release notes and changelogs that are not already left out with their language."""
    gone = [c.pattern(n).strip("/") for c in choices for n in c.left_out]
    return {f: n for f, n in sorted(s.changelogs.items()) if not any(f == g or f.startswith(g + "/") for g in gone)}


def _exclude_lines(s: Survey, choices: list[LanguageChoice]) -> list[str]:
    """`exclude = [...]`: the other language folders (active), release notes and changelogs (suggested)."""
    body: list[str] = []
    for c in choices:
        where = "this folder" if c.parent == "." else f"{shown(c.parent)}/"
        body += [
            f"    # {where} holds one folder per language ({shown(', '.join(sorted([*c.kept, *c.left_out])))}).",
            f"    # Indexed: {shown(', '.join(n + '/' for n in c.kept))}, {shown(c.reason)}. To index another language",
            "    # too, delete its line below (search prefers the question's language and folds translations).",
            *(_string_line(c.pattern(name)) for name in c.left_out),
        ]
    logs = changelogs_kept(s, choices)
    if logs:
        body.append("    # Release notes and changelogs crowd out answers; uncomment to leave them out:")
        body += [f"    # {toml_string(folder + '/') or _UNWRITABLE + shown(folder) + '/'},    # {n} files"
                 for folder, n in sorted(logs.items())]
    if not body:
        return ["exclude = []"]
    return ["exclude = [", *body, "]"]


_UNWRITABLE = "(a name that is not UTF-8 on disk, which TOML cannot hold: rename it) "


def _string_line(pattern: str) -> str:
    """One active `exclude` entry, or a comment naming it when TOML cannot hold the name."""
    text = toml_string(pattern)
    return f"    {text}," if text is not None else f"    # {_UNWRITABLE}{shown(pattern)}"


def _dated_top(s: Survey, folder: str) -> bool:
    """A top-level folder mostly named by date (the one [types] line init writes for an Oracle v2 brain)."""
    return "/" not in folder and s.dated[folder] * 2 > s.per_top[folder]


def render_config(s: Survey, environ: Mapping[str, str] | None = None) -> str:
    """The commented oracle.toml for a survey (`environ`: where the user's languages are read from)."""
    choices = choose_languages(s, environ)
    lines = [
        f"# {CONFIG_NAME}: what Oracle indexes in this folder. Written by `oracle init`; edit freely.",
        "# Environment variables override it (ORACLE_FOLDER_TYPES, ORACLE_DEFAULT_TYPE).",
        "# Types: principle (how we work), learning (a pattern found while working), retro (what happened),",
        "# note (any other markdown, searched like the rest).",
        "",
        "[index]",
    ]
    others = {top: n for top, n in s.per_top.items() if top not in BUILTIN_FOLDER_TYPES}
    v2 = oracle_v2(s)
    if v2:
        lines += [
            f"# An Oracle v2 brain ({', '.join(sorted(s.builtin))}/): typed by its own folders, as without this file.",
            f"# {sum(others.values())} other markdown files are not indexed; uncomment to index them as notes:",
            '# default_type = "note"',
        ]
    else:
        lines += [
            "# Files in folders not typed under [types] (nor by a built-in name), and files directly in this",
            "# folder, get this type: note (searched like the rest). Remove the line to index only typed folders.",
            'default_type = "note"',
        ]
    lines += [
        "# Globs in .gitignore syntax (\"drafts/\", \"**/*.draft.md\"). Dot-folders (.git, .obsidian, .trash),",
        "# node_modules and what this folder's .gitignore lists are always left out.",
        *_exclude_lines(s, choices),
        '# include = ["*.md"]    # only files matching these (default: every .md and .markdown file)',
        "# gitignore = true      # false: index what .gitignore lists too",
    ]
    lines += [
        "",
        "[types]",
        "# \"folder/path\" = \"type\", paths from this folder; the most specific folder wins, so",
        "# \"docs\" = \"learning\" with \"docs/decisions\" = \"principle\" types decisions as principles.",
        "# \"**/name\" matches a folder of that name at any depth (like the built-in learnings/, principles/).",
        "# Markdown files per top-level folder here:",
    ]
    gone = {c.pattern(n).strip("/") for c in choices for n in c.left_out}
    if any("/" not in g for g in gone):
        lines.append(f"#   ({sum(1 for g in gone if '/' not in g)} language folders left out by exclude above)")
    lines.append("# Each folder's type is what it looks like (decisions/ADRs: principle, runbooks: learning,"
                 " dated notes:")
    lines.append("# retro, anything else: note); change a line to retype a folder.")
    for typed in type_folders(s, choices):
        about = shown(f"{typed.files} files, {typed.kind.kind}: {typed.kind.reason}")
        if typed.folder == ".":
            lines.append(f"#   (this folder itself): {typed.files} files ({'not indexed' if v2 else 'note'})")
        elif typed.kind.reason == "built in":
            lines.append(f"#   {shown(typed.folder)}/: {typed.files} files ({typed.kind.type}, built in)")
        elif typed.written and (not v2 or _dated_top(s, typed.folder)):  # v2: only what init always wrote
            key = toml_string(typed.folder)
            lines.append(f"{key} = \"{typed.kind.type}\"    # {about}" if key is not None else
                         f"# {_UNWRITABLE}{_toml_key(typed.folder)} = \"{typed.kind.type}\"    # {about}")
        else:
            lines.append(f"# {_toml_key(typed.folder)} = \"{typed.kind.type}\"    # {about}")
    lines += [
        "",
        "[embedding]",
        "# The model that embeds notes and questions: minilm (the default, all-MiniLM-L6-v2), or a folder holding",
        "# model.onnx and tokenizer.json (query_prefix / passage_prefix: what it expects before each,"
        " e.g. \"query: \").",
        "# A change re-embeds every note at the next `oracle index`; keyword search answers meanwhile.",
        '# model = "minilm"',
        "",
        "# [rerank]",
        "# A cross-encoder folder (model.onnx + tokenizer.json) that rereads each search's first `top` results and",
        "# blends its order with the fused one (`weight`: its share). Off unless a model is named;"
        " none ships with Oracle.",
        '# model = "models/ms-marco-MiniLM-L-6-v2"',
        "# top = 20",
        "# weight = 0.5",
        "",
        "# [frontmatter]",
        "# What notes must hold: `oracle index` reports each note that does not (it never refuses one).",
        '# required = ["owner"]',
        '# types = ["learning"]                 # the note types checked (default: all)',
        "# [frontmatter.allowed]",
        '# status = ["draft", "final"]',
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Initialised:
    """What init wrote and what it means: the file, the language folders it keeps and leaves out, the folders of
    release notes it suggests leaving out, and what `oracle index` will find with it (the indexer's `discover`)."""

    target: Path
    root: Path
    languages: list[LanguageChoice]
    changelogs: dict[str, int]
    found: Discovery
    # each folder's kind and why (type_folders), with the type `oracle index` will really give its files (the
    # layout as loaded, the environment included; None: not indexed)
    folders: list[tuple[TypedFolder, str | None]] = field(default_factory=list)


def init(path: Path, force: bool = False) -> Initialised:
    """Write PATH/oracle.toml (never over an existing one unless forced); return it and what it means."""
    root = path.expanduser().resolve()
    if not root.is_dir():
        raise InitError(f"{root} is not a folder")
    target = root / CONFIG_NAME
    if target.is_symlink():  # a repository could point it at any file of the person running init
        raise InitError(f"{target} is a symlink; oracle.toml must be a regular file: remove the link, then run init")
    if target.exists() and not force:
        raise InitError(f"{target} exists; edit it, or run `oracle init --force` to replace it")
    s = survey(root)
    if s.total == 0:
        raise InitError(f"no markdown files under {root} (dot-folders and .gitignore'd paths left out)")
    text = render_config(s)
    try:
        write_atomic(target, text, SHARED, refuse_symlink=True)  # a random temporary name: no planted link is followed
    except SymlinkRefused as exc:  # a link planted between the check above and now
        raise InitError(str(exc)) from None
    layout = load_layout(root)  # with the environment: what `oracle index` will really do
    choices = choose_languages(s)
    return Initialised(target=target, root=root, languages=choices, changelogs=changelogs_kept(s, choices),
                       found=discover(root, layout),
                       folders=[(f, layout.type_for("_.md" if f.folder == "." else f"{f.folder}/_.md"))
                                for f in type_folders(s, choices)])
