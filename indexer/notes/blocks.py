"""Which blocks of a note are metadata rather than meaning: pure functions over a block's lines.

Real notes carry header blocks (`**Date**: … **Context**: … **Confidence**: …`), tag lines
(`#git #maw`), "See also" link lists, tables of contents and one-word "Status: Accepted" sections. As
chunks of their own they are fragments: short, so bm25 favours them, and they match the note's title and
tag words without saying anything. The parser folds them into a neighbouring section instead
(indexer/notes/parse.py), so their words stay searchable where they belong; tags and a date found in them
still become the note's concepts and date.
"""

from __future__ import annotations

import datetime as dt
import re

# Headings under which a short block is bookkeeping, whatever its shape.
METADATA_HEADINGS = frozenset({
    "tags", "tag", "keywords", "status", "metadata", "meta", "related", "related notes", "related learnings",
    "related patterns", "related files", "related links", "see also", "links", "references", "refs", "sources",
    "context links", "backlinks", "table of contents", "contents", "toc", "date", "dates", "confidence",
})
SHORT_BLOCK = 120  # characters: a block this short under a metadata heading is metadata in any shape
MAX_VALUE = 120  # characters: a longer `**Key**: value` line is prose with a bold label, not a header

_KEY_VALUE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*([^*\n]{1,40}?):?\*\*:?|__([^_\n]{1,40}?):?__:?|([A-Za-z][\w /-]{0,30}):)\s*(.*)$"
)
_TAG_LINE = re.compile(r"^\s*(?:[-*+]\s+)?(?:(?:tags?|keywords)\s*:\s*)?(?:#[\w/-]+[\s,]*)+$", re.IGNORECASE)
_LINK_ITEM = re.compile(
    r"^\s*(?:[-*+]\s+|\d{1,3}[.)]\s+)?"
    r"(?:\[[^\]\n]*\]\([^)\n]*\)|\[\[[^\]\n]+\]\]|<?https?://\S+>?|`[^`\n]+\.md`|\*\*[^*\n]+\.md\*\*)"
    r".{0,80}$"
)
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
_HASHTAG = re.compile(r"#([\w/-]+)")
_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_DATE_KEYS = frozenset({"date", "created", "created at", "updated", "when"})


def _content_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip() and not _RULE.match(line)]


def _key_value(line: str) -> tuple[str, str] | None:
    match = _KEY_VALUE.match(line)
    if not match:
        return None
    key = next(g for g in match.groups()[:3] if g is not None)
    return key.strip().lower(), match.group(4).strip()


def is_tag_line(line: str) -> bool:
    return bool(_TAG_LINE.match(line))


def is_link_line(line: str) -> bool:
    return bool(_LINK_ITEM.match(line))


def is_header_line(line: str) -> bool:
    """`**Key**: short value` (or `Key: value`, bulleted or not): a field of a header block."""
    pair = _key_value(line)
    return pair is not None and len(pair[1]) <= MAX_VALUE


def is_metadata_block(heading: str, text: str, intro: bool) -> bool:
    """True when the block only records facts about the note (tags, links, header fields, a status).

    `heading` is the block's own heading (the last part of its path), empty for the intro. A header block
    of `Key: value` fields counts only as the intro or under a metadata heading: elsewhere, bold-labelled
    lines are usually the substance of a section ("**Why**: ...").
    """
    lines = _content_lines(text)
    if not lines:
        return False
    if all(is_tag_line(line) for line in lines) or all(is_link_line(line) for line in lines):
        return True
    named = heading.strip().strip("*_").rstrip(":").strip().lower() in METADATA_HEADINGS
    shaped = all(is_header_line(line) or is_tag_line(line) or is_link_line(line) for line in lines)
    if named:
        return shaped or len(text.strip()) <= SHORT_BLOCK
    return intro and all(is_header_line(line) for line in lines)


def block_tags(text: str) -> list[str]:
    """Hashtags on the block's tag lines (`#git #maw`, `Tags: #a #b`), in order."""
    tags: list[str] = []
    for line in _content_lines(text):
        if is_tag_line(line):
            tags.extend(_HASHTAG.findall(line))
    return tags


def block_date(text: str) -> str | None:
    """An ISO date from a `**Date**: 2025-12-28` style field, or None."""
    for line in _content_lines(text):
        pair = _key_value(line)
        if pair and pair[0] in _DATE_KEYS:
            match = _ISO_DATE.search(pair[1])
            if match:
                return match.group(1)
    return None


# A design document's header (RFCs, PEPs, KEPs, Go proposals) dates it in a list of fields before its first section:
# `- Start Date: 2014-03-11`, `Last updated: September 2, 2015`, `Created: 12-Feb-2014`. Read so that `list` orders
# such notes by date and date filters filter them (issue 48: 648 RFCs came out undated, in file-name order).
HEADER_DATE_KEYS = frozenset({
    "date", "created", "created at", "created on", "updated", "last updated", "last update", "last modified",
    "last revised", "modified",
    "start date", "started", "published", "when", "accepted", "proposed",
})
HEADER_LINES = 30  # non-empty lines read before the first `##` heading: a header, never the body
_MONTHS = {m: n for n, name in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                          "september", "october", "november", "december"), start=1)
           for m in (name, name[:3], name[:4])}
_WRITTEN = (re.compile(r"\b([A-Za-z]{3,9})\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4})\b"),  # September 2, 2015
            re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?[ -]([A-Za-z]{3,9})\.?[ ,-]*(\d{4})\b"))  # 2 Sep 2015, 12-Feb-2014
_SLASHED = re.compile(r"\b(\d{4})/(\d{1,2})/(\d{1,2})\b")
_MONTH_YEAR = re.compile(r"\b([A-Za-z]{3,9})\.?,? (\d{4})\b")  # February 2016, October, 2015: the month's first day
# a date field later on a line of other fields: `Author(s): Ann <ann@x> Last Updated: 2019-02-20`
_INLINE = re.compile(r"(?i)\b(last updated?|last modified|created|start date|date)\s*:\s*(.+)")


def written_date(value: str) -> str | None:
    """An ISO date from a header value: `2014-03-11`, `2015/09/02`, `September 2, 2015`, `2 Sep 2015`, `12-Feb-2014`,
    `February 2016` (its first day); None when it holds none, or one that is no calendar date."""
    parts = _numeric_date(value) or _named_month_date(value)
    if parts is None:
        return None
    try:
        return dt.date(*parts).isoformat()
    except ValueError:
        return None


def _numeric_date(value: str) -> tuple[int, int, int] | None:
    """(year, month, day) of `2014-03-11` or `2015/09/02` in `value`."""
    found = _ISO_DATE.search(value)
    if found:
        year, month, day = (int(x) for x in found.group(1).split("-"))
        return year, month, day
    slashed = _SLASHED.search(value)
    return (int(slashed[1]), int(slashed[2]), int(slashed[3])) if slashed else None


def _named_month_date(value: str) -> tuple[int, int, int] | None:
    """(year, month, day) of a date with the month's name: with its day first or after, or without a day."""
    for pattern, month_at, day_at in ((_WRITTEN[0], 1, 2), (_WRITTEN[1], 2, 1)):
        match = pattern.search(value)
        number = _MONTHS.get(match[month_at].lower()) if match else None
        if match and number:
            return int(match[3]), number, int(match[day_at])
    whole = _MONTH_YEAR.search(value)
    number = _MONTHS.get(whole[1].lower()) if whole else None
    return (int(whole[2]), number, 1) if whole and number else None


def header_date(lines: list[str]) -> str | None:
    """The date a note's header gives (see HEADER_DATE_KEYS), read from the lines before its first `##` heading."""
    seen = 0
    for line in lines:
        if line.startswith("## "):
            break
        if not line.strip():
            continue
        seen += 1
        if seen > HEADER_LINES:
            break
        pair = _key_value(line)
        if not (pair and pair[0] in HEADER_DATE_KEYS):
            inline = _INLINE.search(line)
            pair = (inline[1].lower(), inline[2]) if inline else None
        found = written_date(pair[1][:MAX_VALUE]) if pair else None
        if found:
            return found
    return None
