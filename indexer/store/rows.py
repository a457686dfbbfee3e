"""The typed rows the store hands to services: frozen, so a row read once cannot drift from the index.

A *section* is a row of `documents` (the table's historical name); a *note* is a row of `files`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

# SQLite's default limit on bound parameters is 999 on older builds: `IN (...)` lists go in parts of this size.
BATCH = 500


def batched(items: Sequence[T], size: int = BATCH) -> Iterator[list[T]]:
    """`items` in consecutive lists of at most `size` (the one batching helper for `IN (?,...)` lists)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def marks(n: int) -> str:
    """`?,?,...` for n bound parameters."""
    return ",".join("?" * n)


def note_mark(path: str, file_hash: str | None) -> int:
    """One note's share of an index's content state: the first 8 bytes of MD5(path, 0x1F, file hash) as a signed
    64-bit number, exactly as the PostgreSQL store's trigger computes it (indexer/store/pg/schema.py, migration 5)."""
    data = f"{path}\x1f{file_hash or ''}".encode()
    return int.from_bytes(hashlib.md5(data, usedforsecurity=False).digest()[:8], "big", signed=True)


def parser_version(value: str | None) -> int:
    """The parser version an index's meta records (`parser_version`, notes/parse.py PARSER_VERSION); 0 for an index
    that records none (parsed before versions were kept) or something unreadable."""
    return int(value) if value and value.isdigit() else 0


def content_state(notes: Iterable[tuple[str, str | None]]) -> int:
    """XOR of every (path, file hash)'s `note_mark`: equal for two indexes of the same files, whatever the order
    they were written in, and kept up to date by one XOR per note written or removed. Why: PostgreSQL keeps it
    in a row a trigger updates, so whether the working copy's own index holds what the database holds is one
    read of one row (indexer/store/pg/local_words.py)."""
    state = 0
    for path, file_hash in notes:
        state ^= note_mark(path, file_hash)
    return state


@dataclass(frozen=True)
class FileState:
    """What sync compares with the disk: an unchanged stat costs nothing, an unchanged hash no re-parse."""

    mtime_ns: int
    size: int
    file_hash: str


@dataclass(frozen=True)
class SectionFacts:
    """What ranking needs of a candidate section, without its text."""

    id: str
    file: str
    kind: str
    parent_id: str | None
    content_hash: str
    body_hash: str | None  # the note's title and sections (files.body_hash): equal for identical notes
    heading: str
    line_start: int
    line_end: int
    lang: str | None = None  # the note's language (indexer/notes/language.py)
    lang_from: str | None = None  # "frontmatter" | "folder" | "text": only the first two rank (structural)
    translation_key: str | None = None  # equal for a page and its translations


SECTION_COLUMNS = ("id, file, type, kind, title, heading, content, line_start, line_end, content_hash, concepts,"
                   " project, date, parent_id, position, in_vector, timestamp")


@dataclass(frozen=True)
class Section:
    """One section of a note, as indexed. `title` is the note's title; `heading` the section's path."""

    id: str
    file: str
    type: str
    kind: str
    title: str
    heading: str
    content: str
    line_start: int
    line_end: int
    content_hash: str
    concepts: tuple[str, ...]
    project: str | None
    date: str | None
    parent_id: str | None
    position: int
    in_vector: bool
    timestamp: str | None

    @classmethod
    def from_row(cls, row: Sequence) -> "Section":
        """From a row of SECTION_COLUMNS, in that order."""
        (id_, file, type_, kind, title, heading, content, line_start, line_end, content_hash, concepts,
         project, date, parent_id, position, in_vector, timestamp) = row[:17]
        return cls(id_, file, type_, kind, title or "", heading or "", content or "", line_start, line_end,
                   content_hash, tuple(json.loads(concepts or "[]")), project, date, parent_id, position,
                   bool(in_vector), timestamp)


@dataclass(frozen=True)
class IndexedNote:
    """A note (file) as the index knows it."""

    path: str
    type: str
    title: str | None
    size: int
    mtime_ns: int | None
    chunk_count: int
    file_hash: str


@dataclass(frozen=True)
class RelationRow:
    """A (subject, predicate, object) a note states, with the note and its first section."""

    subject: str
    predicate: str
    object: str
    file: str
    title: str
    type: str
    first_section_id: str
