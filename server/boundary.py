"""The consult trust boundary's markers, and keeping note text from forging them.

`consult` wraps retrieved notes in `<<<ORACLE REFERENCE DATA tag>>>` ... `<<<END ORACLE REFERENCE DATA tag>>>`.
Every field of a note that reaches an agent is written by whoever wrote the note, so none may carry
something that reads as a marker: inside the guidance every run of three angle brackets is defused
(`defuse`), and everywhere else (search, read, list, reflect) a marker-shaped run in front of the
marker's words is (`defuse_markers`), which leaves git conflict markers and `<<<` in code untouched.
Look-alike brackets (full-width, small form) and invisible separators between them count as brackets.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable

OPEN_BRACKETS = "<\uff1c\ufe64"  # <, full-width <, small-form <
CLOSE_BRACKETS = ">\uff1e\ufe65"
_GAP = r"[\s\u200b-\u200d\u2060\ufeff]*"  # whitespace and zero-width characters between brackets
_OPEN_RUN = re.compile(rf"[{OPEN_BRACKETS}](?:{_GAP}[{OPEN_BRACKETS}]){{2,}}")
_CLOSE_RUN = re.compile(rf"[{CLOSE_BRACKETS}](?:{_GAP}[{CLOSE_BRACKETS}]){{2,}}")
_MARKER_WORDS = rf"{_GAP}(?:END[\W_]*)?ORACLE[\W_]*REFERENCE[\W_]*DATA"
_MARKER_OPEN = re.compile(rf"[{OPEN_BRACKETS}](?:{_GAP}[{OPEN_BRACKETS}]){{2,}}(?={_MARKER_WORDS})", re.IGNORECASE)
_MARKER_CLOSE = re.compile(rf"(?<=DATA)([\w\s\u200b-\u200d\u2060\ufeff]*?)[{CLOSE_BRACKETS}](?:{_GAP}[{CLOSE_BRACKETS}]){{2,}}",
                           re.IGNORECASE)

# A per-process secret in every tag: a note's author cannot compute the tag of a consultation they
# have not seen, whatever they put in the note's title, headings or text.
_SALT = secrets.token_bytes(16)


def _brackets(match: re.Match[str], char: str) -> str:
    count = sum(1 for c in match.group(0) if c in OPEN_BRACKETS + CLOSE_BRACKETS)
    return char * count


def defuse(text: str) -> str:
    """Text inside the boundary: no run of three brackets survives, so no marker can be spelled."""
    text = _OPEN_RUN.sub(lambda m: _brackets(m, "‹"), text)
    return _CLOSE_RUN.sub(lambda m: _brackets(m, "›"), text)


def defuse_markers(text: str) -> str:
    """Note text outside the boundary: only a run of brackets that opens (or closes) the marker's words
    is defused, so ordinary text (`<<<<<<< HEAD`, heredocs) comes back as written."""
    if "DATA" not in text.upper():
        return text
    text = _MARKER_OPEN.sub(lambda m: _brackets(m, "‹"), text)
    return _MARKER_CLOSE.sub(lambda m: m.group(1) + _brackets(m, "›"), text)


def tag_for(fields: Iterable[str]) -> str:
    """12 hex digits from the salt and every field the guidance shows: unpredictable to a note's author,
    and different whenever any shown field changes."""
    digest = hashlib.sha256(_SALT)
    for field in fields:
        digest.update(field.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:12]
