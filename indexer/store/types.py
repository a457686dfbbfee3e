"""The store's neutral vocabulary: the values code above the store passes in and gets back, whichever backend
answers (indexer/store/protocols.py names the calls). Nothing here runs SQL; the backends render these values in
their own dialect (`Filters.sql`)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from oracle_indexer.notes.concepts import normalise_tags

Pattern = tuple[str | None, str | None, str | None]  # a relation pattern (subject, predicate, object); None: any


@dataclass(frozen=True)
class Filters:
    """Search filters, rendered to SQL over `documents d`. Concepts match when a section has any of them.

    Concepts pass through the indexer's own tag normaliser (`oracle_indexer.notes.concepts.normalise_tags`), so a filter
    names tags exactly as they were stored: a tag longer than the stored limit is cut the same way, and
    "ops;deploy" means the two tags the indexer made of it (two normalisers used to disagree on both, and
    such a filter never matched).
    """

    type: str | None = None
    concepts: tuple[str, ...] = ()
    project: str | None = None
    date_from: str | None = None
    date_to: str | None = None
    lang: str | None = None  # the note's language code (files.lang)
    # A `where` filter on frontmatter fields, resolved to notes (indexer/notes/fields.py select_notes): only these
    # notes (None: any), and never these.
    only_notes: frozenset[str] | None = None
    excluded_notes: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "concepts", tuple(normalise_tags(list(self.concepts))))

    @property
    def active(self) -> bool:
        return bool(self.type or self.concepts or self.project or self.date_from or self.date_to or self.lang
                    or self.only_notes is not None or self.excluded_notes)

    # Over complexity 10 on purpose: one clause per filter, in the order the WHERE reads, for both dialects.
    def sql(self, dialect: str = "sqlite") -> tuple[str, list]:  # noqa: C901
        """The filters as a WHERE clause over `documents d` with `?` parameters, and its arguments. `dialect`
        ("sqlite" or "postgresql", the store's `dialect`) spells the note lists: a JSON array read by json_each in
        SQLite, an array parameter (`= ANY`) in PostgreSQL; one parameter each either way, however many notes."""
        clauses: list[str] = []
        args: list = []
        if self.type:
            clauses.append("d.type = ?")
            args.append(self.type)
        if self.project:
            clauses.append("d.project = ?")
            args.append(self.project)
        if self.concepts:
            marks = ",".join("?" * len(self.concepts))
            clauses.append(f"d.id IN (SELECT doc_id FROM doc_concepts WHERE concept IN ({marks}))")
            args += list(self.concepts)
        if self.date_from:
            clauses.append("d.date >= ?")
            args.append(self.date_from)
        if self.date_to:
            clauses.append("d.date <= ?")
            args.append(self.date_to)
        if self.lang:
            clauses.append("d.file IN (SELECT path FROM files WHERE lang = ?)")
            args.append(self.lang)
        # one JSON array (or array) each, however many notes: no limit on bound parameters to meet
        if dialect == "postgresql":
            if self.only_notes is not None:
                clauses.append("d.file = ANY(?)")
                args.append(sorted(self.only_notes))
            if self.excluded_notes:
                clauses.append("NOT (d.file = ANY(?))")
                args.append(sorted(self.excluded_notes))
        else:
            if self.only_notes is not None:
                clauses.append("d.file IN (SELECT value FROM json_each(?))")
                args.append(json.dumps(sorted(self.only_notes), ensure_ascii=False))
            if self.excluded_notes:
                clauses.append("d.file NOT IN (SELECT value FROM json_each(?))")
                args.append(json.dumps(sorted(self.excluded_notes), ensure_ascii=False))
        return (" AND ".join(clauses) or "1 = 1"), args  # "1 = 1": true in SQLite and PostgreSQL alike


@dataclass(frozen=True)
class VectorHit:
    id: str
    similarity: float  # cosine similarity, 1 - cosine distance: higher is better


# -- the team's notes as revisions (indexer/store/pg/revisions.py) and a working copy's bases ---------------
@dataclass(frozen=True)
class Head:
    """A note's current revision: what a working copy compares its file with."""

    path: str
    revision: int
    seq: int
    hash: str | None  # None for a tombstone
    deleted: bool
    author: str | None
    at: float


@dataclass(frozen=True)
class Revision:
    """One entry of a note's history (without its text: `revision_content` reads that)."""

    path: str
    revision: int
    seq: int
    hash: str | None
    base: str | None
    deleted: bool
    author: str | None
    machine: str | None
    at: float
    size: int | None


@dataclass(frozen=True)
class Commit:
    """One revision to write: `expect` is the head's hash the writer read (None: a tombstone; False: no head)."""

    path: str
    content: bytes | None
    digest: str | None
    expect: str | None | bool
    base: str | None
    author: str | None


@dataclass(frozen=True)
class Base:
    """A file as it was when last in step with the database: its hash and its stat then."""

    hash: str
    mtime_ns: int
    size: int
