"""The consult trust boundary's markers, and keeping note text from forging them.

`consult` wraps retrieved notes in `<<<ORACLE REFERENCE DATA tag>>>` ... `<<<END ORACLE REFERENCE DATA tag>>>`.
Every field of a note that reaches an agent is written by whoever wrote the note, so none may carry
something that reads as a marker: inside the guidance every run of three angle brackets is defused
(`defuse`), and everywhere else (search, read, list, reflect, paths, frontmatter, logs, graph) a marker-shaped
run in front of the marker's words is (`defuse_markers`, `defuse_data` for JSON-shaped values), which leaves git
conflict markers and `<<<` in code untouched.

What counts as a bracket is what a model reads as one, not what a byte comparison sees: look-alike brackets
(full-width, small form, CJK and mathematical angle brackets, ornaments, `≪`, `«`), HTML entities (`&lt;`,
`&#60;`, `&#x3c;`), and brackets or words with invisible characters between them (zero-width, bidi controls,
soft hyphen, combining grapheme joiner, variation selectors, tag characters). The text is matched through a
*skeleton* (invisibles dropped, look-alikes and full-width or Cyrillic/Greek letters folded to ASCII) whose
every character remembers where it came from, so only the brackets of a match are replaced, in the original.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
import unicodedata
from collections.abc import Iterable
from typing import Any

# One-character look-alikes of < and >, and the characters that read as two or three of them.
_OPEN_ONE = "<\uff1c\ufe64\u3008\u2329\u27e8\u276e\u276c\u02c2\u1438\u2039\u29fc\u2a79\u227a"
_CLOSE_ONE = ">\uff1e\ufe65\u3009\u232a\u27e9\u276f\u276d\u02c3\u1433\u203a\u29fd\u2a7a\u227b"
_OPEN_MANY = {"\u226a": 2, "\u27ea": 2, "\u300a": 2, "\u00ab": 2, "\u22d8": 3, "\u2aa1": 2, "\u2a7d": 1}
_CLOSE_MANY = {"\u226b": 2, "\u27eb": 2, "\u300b": 2, "\u00bb": 2, "\u22d9": 3, "\u2aa2": 2, "\u2a7e": 1}
_ENTITY = r"&(?:lt|gt|#0*6[02]|#x0*3[ceCE]);?"
# ASCII runs as they are; an entity; runs of other characters, each folded or dropped one by one (`_fold`).
_SEGMENT = re.compile(rf"(?P<entity>{_ENTITY})|(?P<ascii>(?:[\x00-\x25\x27-\x7f]|&(?!{_ENTITY[1:]}))+)"
                      r"|(?P<other>[^\x00-\x7f]+)", re.IGNORECASE)
# Worth a skeleton at all: some bracket-like character or an entity's ampersand.
_SUSPECT = re.compile(f"[{_OPEN_ONE}{_CLOSE_ONE}{''.join(_OPEN_MANY)}{''.join(_CLOSE_MANY)}&]")
_UNSEEN = ("Cf", "Mn", "Me")  # format characters (zero-width, bidi, soft hyphen, tags), combining marks, selectors

_LETTERS = {  # Cyrillic and Greek capitals and small letters that look like the marker's Latin ones
    "А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "К": "K", "М": "M", "О": "O", "Р": "P", "Т": "T", "Х": "X",
    "а": "a", "с": "c", "е": "e", "о": "o", "р": "p", "х": "x", "Α": "A", "Β": "B", "Ε": "E", "Η": "H", "Κ": "K",
    "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Χ": "X", "ο": "o", "Ⅾ": "D", "Ⅽ": "C", "Ⅼ": "L", "ⅾ": "d",
}
_FOLD = str.maketrans({**{c: "<" for c in _OPEN_ONE}, **{c: ">" for c in _CLOSE_ONE}, **_LETTERS,
                       **{chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F) if chr(c) not in "\uff1c\uff1e"}})

_OPEN_RUN = re.compile(r"<(?:\s*<){2,}")
_CLOSE_RUN = re.compile(r">(?:\s*>){2,}")
_WORDS = r"[\W_]*(?:END[\W_]*)?ORACLE[\W_]*REFERENCE[\W_]*DATA"
_MARKER_OPEN = re.compile(rf"<(?:\s*<){{2,}}(?={_WORDS})", re.IGNORECASE)
_MARKER_CLOSE = re.compile(r"(?<=DATA)[\w\s]*?(>(?:\s*>){2,})", re.IGNORECASE)

# A per-process secret in every tag: a note's author cannot compute the tag of a consultation they
# have not seen, whatever they put in the note's title, headings or text.
_SALT = secrets.token_bytes(16)


@functools.lru_cache(maxsize=4096)
def _fold(c: str) -> str:
    """One non-ASCII character as a reader takes it: "" (unseen), "<"/">" (one or more), or its NFKC form."""
    if c in _OPEN_MANY or c in _CLOSE_MANY:
        return ("<" if c in _OPEN_MANY else ">") * (_OPEN_MANY.get(c) or _CLOSE_MANY[c])
    if unicodedata.category(c) in _UNSEEN:
        return ""
    folded = c.translate(_FOLD)
    if folded != c:
        return folded
    return "".join(f for f in unicodedata.normalize("NFKC", c).translate(_FOLD)
                   if unicodedata.category(f) not in _UNSEEN)


def _skeleton(text: str) -> tuple[str, list[int], list[int]]:
    """(skeleton, start, end): the text as a reader takes it, each skeleton character with the span of the
    original it stands for. Format characters and combining marks vanish, entities and look-alikes become
    `<`/`>` (`≪` two), other characters their compatibility form (NFKC: full-width and mathematical letters)."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for m in _SEGMENT.finditer(text):
        kind, s, e = m.lastgroup, m.start(), m.end()
        if kind == "ascii":
            chars.append(m.group())
            starts.extend(range(s, e))
            ends.extend(range(s + 1, e + 1))
            continue
        if kind == "entity":
            chars.append(_entity(m))
            starts.append(s)
            ends.append(e)
            continue
        for i, c in enumerate(m.group(), start=s):
            folded = _fold(c)
            if folded:
                chars.append(folded)
                starts.extend([i] * len(folded))
                ends.extend([i + 1] * len(folded))
    return "".join(chars), starts, ends


class _FoldTable(dict):
    """`str.translate` table of `_fold`, filled as characters are met: the skeleton's text at C speed."""

    def __missing__(self, code: int) -> str:
        value = chr(code) if code < 0x80 else _fold(chr(code))
        if len(self) < 65536:
            self[code] = value
        return value


_TABLE = _FoldTable()
_ENTITY_RE = re.compile(_ENTITY, re.IGNORECASE)


def _entity(m: re.Match[str]) -> str:
    entity = m.group().lower()
    return "<" if ("lt" in entity or "60" in entity or "3c" in entity) else ">"


def _defused(text: str, patterns: list[tuple[re.Pattern[str], int, str]]) -> str:
    if not _SUSPECT.search(text):
        return text
    quick = _ENTITY_RE.sub(_entity, text).translate(_TABLE)  # the skeleton without positions: usually no match
    if not any(pattern.search(quick) for pattern, _, _ in patterns):
        return text
    skeleton, starts, ends = _skeleton(text)
    found = []
    for pattern, group, char in patterns:
        for m in pattern.finditer(skeleton):
            s, e = m.span(group)
            found.append((s, e, char, sum(1 for c in skeleton[s:e] if c in "<>")))
    if not found:
        return text
    out, at = [], 0
    for s, e, char, count in sorted(found):
        begin, end = starts[s], ends[e - 1]
        if begin < at:
            continue
        out.append(text[at:begin])
        out.append(char * count)
        at = end
    out.append(text[at:])
    return "".join(out)


_INSIDE = [(_OPEN_RUN, 0, "‹"), (_CLOSE_RUN, 0, "›")]
_OUTSIDE = [(_MARKER_OPEN, 0, "‹"), (_MARKER_CLOSE, 1, "›")]


def defuse(text: str) -> str:
    """Text inside the boundary: no run of three brackets survives, so no marker can be spelled."""
    return _defused(text, _INSIDE)


def defuse_markers(text: str) -> str:
    """Note text outside the boundary: only a run of brackets that opens (or closes) the marker's words
    is defused, so ordinary text (`<<<<<<< HEAD`, heredocs) comes back as written."""
    return _defused(text, _OUTSIDE)


def defuse_data(value: Any) -> Any:
    """`defuse_markers` through JSON-shaped data (frontmatter, log rows, graph labels, resource `_meta`): every
    string, keys included, at any depth. Anything else comes back as it is."""
    if isinstance(value, str):
        return defuse_markers(value)
    if isinstance(value, dict):
        return {defuse_data(k): defuse_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(defuse_data(v) for v in value)
    return value


def tag_for(fields: Iterable[str]) -> str:
    """12 hex digits from the salt and every field the guidance shows: unpredictable to a note's author,
    and different whenever any shown field changes."""
    digest = hashlib.sha256(_SALT)
    for field in fields:
        digest.update(field.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:12]
