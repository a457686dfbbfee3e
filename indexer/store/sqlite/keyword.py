"""The keyword leg: FTS5 word and trigram tables (and a LIKE scan for short unsegmented terms), filters,
true totals. Every statement here is hand-written: bm25() with column weights, MATCH and the CROSS JOIN that
fixes SQLite's join order are beyond what sqlite-utils' query builder expresses.

The lead tunes ranking through these functions: their results are kept byte-identical across refactors.
`BM25_WEIGHTS` is read at query time (benchmarks/quality.py swaps it for a run).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol

from oracle_indexer.store.types import Filters


class KeywordStore(Protocol):
    """What the keyword leg uses of the SQLite store (`Store`, which calls every function here with itself). A
    Protocol rather than the class: naming `Store` here closed an import circle (the store imports this module),
    if only one the type checker followed."""

    section_count_cache: SectionCounts

    def fetch(self, sql: str, args: Sequence = ()) -> list[tuple]: ...

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

# bm25 column weights for documents_fts(id, title, heading, content, concepts): title words count more
# (title 3 vs 2: +0.002 nDCG@10 on SciFact train with weighted fusion; see benchmarks/HISTORY.md).
BM25_WEIGHTS = (0.0, 3.0, 1.5, 1.0, 1.0)
# ... and for notes_fts(title, body), the same title weight.
NOTE_BM25_WEIGHTS = (3.0, 1.0)
TIE_SLACK = 20  # rows fetched past the keyword pool, so that equal scores at the cut are all seen


class _Source(NamedTuple):
    """One way a chunk can match the keyword query."""

    clause: str  # FROM-and-MATCH clause over `documents d`
    score: str  # higher-better score expression
    args: list
    table: str | None  # the FTS5 table, which can rank and count alone; None for a LIKE scan


def _keyword_sources(fts_match: str | None, trigram_match: str | None, like_terms: Sequence[str]) -> list[_Source]:
    """One source per FTS5 table (and per LIKE term). bm25() only works in the query that runs the MATCH,
    so each source is its own statement."""
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    sources: list[_Source] = []
    if fts_match:
        sources.append(_Source(
            "documents_fts JOIN documents d ON d.rowid = documents_fts.rowid WHERE documents_fts MATCH ?",
            f"-bm25(documents_fts, {weights})",
            [fts_match],
            "documents_fts",
        ))
    if trigram_match:
        sources.append(_Source(
            "documents_tri JOIN documents d ON d.rowid = documents_tri.rowid WHERE documents_tri MATCH ?",
            "-bm25(documents_tri)",
            [trigram_match],
            "documents_tri",
        ))
    for term in like_terms:
        pattern = like_pattern(term)
        sources.append(_Source(
            "documents d WHERE (d.content LIKE ? ESCAPE '\\' OR d.title LIKE ? ESCAPE '\\')",
            "0.5",
            [pattern, pattern],
            None,
        ))
    return sources


def like_pattern(term: str) -> str:
    """A LIKE pattern finding `term` anywhere, its `%`, `_` and backslashes escaped (ESCAPE '\\')."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _matching_rowids_sql(sources: list[_Source]) -> tuple[str, list]:
    """Every matching rowid. FTS5 tables answer alone: joining `documents` for each of tens of thousands
    of matches (a common word at 100k chunks) cost more than the MATCH itself."""
    union = " UNION ".join(
        f"SELECT rowid FROM {s.table} WHERE {s.table} MATCH ?" if s.table else f"SELECT d.rowid FROM {s.clause}"
        for s in sources
    )
    return union, [a for s in sources for a in s.args]


def _ranked_in_fts(store: KeywordStore, source: _Source, filters: Filters,
                   limit: int) -> list[tuple[str, float]] | None:
    """The rows of `ORDER BY s DESC, d.id LIMIT limit` over the joined clause, but ranked inside FTS5 with
    only the top rows looked up in `documents`: a common word matches tens of thousands of chunks at 100k,
    and a join per match cost as much as bm25 itself. Filters become one set of rowids, checked per match
    (`+rowid` keeps SQLite from turning it into one FTS5 lookup per rowid). The top rows' ids come in the same
    statement: the ranked subquery (its LIMIT keeps SQLite from flattening it into the join) is joined to
    `documents` after the cut, one trip instead of two. None when equal scores at the cut run past the extra rows
    fetched, as only the join can order those by id."""
    assert source.table is not None
    where, filter_args = filters.sql()
    restrict = f" AND +rowid IN (SELECT d.rowid FROM documents d WHERE {where})" if filters.active else ""
    fetch = limit + TIE_SLACK
    found = store.fetch(
        f"SELECT f.rowid, f.s, d.id FROM (SELECT rowid, {source.score} AS s FROM {source.table}"
        f" WHERE {source.table} MATCH ?{restrict} ORDER BY s DESC LIMIT ?) f"
        " LEFT JOIN documents d ON d.rowid = f.rowid ORDER BY f.s DESC",
        [*source.args, *(filter_args if filters.active else []), fetch],
    )
    rows = [(rowid, s) for rowid, s, _ in found]
    if len(rows) == fetch and rows[-1][1] >= rows[limit - 1][1]:
        return None
    ids = {rowid: doc_id for rowid, _, doc_id in found if doc_id is not None}
    if len(ids) < len(rows):
        return None
    return sorted(((ids[r], s) for r, s in rows), key=lambda kv: (-kv[1], kv[0]))[:limit]


def keyword_search(
    store: KeywordStore,
    fts_match: str | None,
    trigram_match: str | None,
    like_terms: Sequence[str],
    filters: Filters,
    limit: int,
    count: bool = True,
) -> tuple[list[tuple[str, float]], int]:
    """Top `limit` (id, score) by summed keyword score across sources, and the true number of matches (0 with
    `count=False`, which skips counting them: query expansion's second query needs the ranking only)."""
    sources = _keyword_sources(fts_match, trigram_match, like_terms)
    if not sources:
        return [], 0
    where, filter_args = filters.sql()
    scores: dict[str, float] = {}
    for source in sources:
        rows = _ranked_in_fts(store, source, filters, limit) if source.table else None
        if rows is None:
            rows = store.fetch(
                f"SELECT d.id, {source.score} AS s FROM {source.clause} AND {where} ORDER BY s DESC, d.id LIMIT ?",
                [*source.args, *filter_args, limit],
            )
        for doc_id, value in rows:
            scores[doc_id] = scores.get(doc_id, 0.0) + float(value)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    if not count:
        return ranked, 0
    union, union_args = _matching_rowids_sql(sources)
    if filters.active:
        sql = f"SELECT count(*) FROM documents d WHERE d.rowid IN ({union}) AND {where}"
    else:
        sql = f"SELECT count(*) FROM ({union})"
    total = store.fetch(sql, [*union_args, *filter_args])[0][0]
    return ranked, int(total)


def keyword_matching_ids(
    store: KeywordStore,
    fts_match: str | None,
    trigram_match: str | None,
    like_terms: Sequence[str],
    ids: Sequence[str],
) -> set[str]:
    """Which of `ids` the keyword query matches at all (to count a true hybrid total). Each source checks
    its matches against the few rowids asked about, rather than collecting every match first."""
    sources = _keyword_sources(fts_match, trigram_match, like_terms)
    if not sources or not ids:
        return set()
    marks = ",".join("?" * len(ids))
    id_of = dict(store.fetch(f"SELECT rowid, id FROM documents WHERE id IN ({marks})", list(ids)))
    rowids = list(id_of)
    marks = ",".join("?" * len(rowids))
    found: set[str] = set()
    for s in sources:
        if s.table:
            sql = f"SELECT rowid FROM {s.table} WHERE {s.table} MATCH ? AND +rowid IN ({marks})"
        else:
            sql = f"SELECT d.rowid FROM {s.clause} AND d.rowid IN ({marks})"
        found.update(id_of[r] for (r,) in store.fetch(sql, [*s.args, *rowids]))
    return found


TERMS_PER_STATEMENT = 100  # MATCHes in one compound statement (SQLite allows 500 terms in a compound SELECT)


def terms_matched(store: KeywordStore, terms: Sequence[str], ids: Sequence[str]) -> dict[str, int]:
    """How many of `terms` (quoted FTS5 strings) each of `ids` contains in the word table: one MATCH per
    term, over the few ids asked about, all in one statement (UNION ALL keeps each term's matches apart;
    before, each term was a trip of its own, as the PostgreSQL store never did)."""
    if not terms or not ids:
        return {}
    marks = ",".join("?" * len(ids))
    id_of = dict(store.fetch(f"SELECT rowid, id FROM documents WHERE id IN ({marks})", list(ids)))
    counts = dict.fromkeys(id_of.values(), 0)
    if not id_of:
        return counts
    asked = "WITH asked(r) AS (VALUES " + ",".join(["(?)"] * len(id_of)) + ") "
    one = "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ? AND +rowid IN asked"
    for start in range(0, len(terms), TERMS_PER_STATEMENT):
        part = terms[start : start + TERMS_PER_STATEMENT]
        for (rowid,) in store.fetch(asked + " UNION ALL ".join([one] * len(part)), [*id_of, *part]):
            counts[id_of[rowid]] += 1
    return counts


# FTS5 keeps the list of a word table's segments in one row of its data table (FTS5_STRUCTURE_ROWID, 10). Every
# write flushes a new segment into it and advances the write counter it holds (the tables do not use the
# secure-delete option, which alone edits segments in place), so its bytes name one state of the table.
_WORD_TABLE_STATE = "SELECT block FROM documents_fts_data WHERE id = 10"
SECTION_COUNTS_KEPT = 50_000  # (term, cap) pairs a store remembers before it starts over


class SectionCounts:
    """Section counts already read, valid for one state of the word table (`_WORD_TABLE_STATE`).

    Counting is what query expansion costs most: FTS5 stores no document frequency, so each count walks the
    term's list of sections (a word in 700 of nat-brain's 7,310 sections ~0.14 ms, forty candidate words
    3.5-5 ms a search). Candidate words repeat from search to search (the everyday ones, which cost most,
    above all), and a count cannot change while the table does not; any write does change the state, and
    the counts of the old one are dropped. One per store, shared by its threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: bytes | None = None
        self._counts: dict[tuple[str, int], int] = {}

    def known(self, state: bytes | None, terms: Sequence[str], cap: int) -> dict[str, int]:
        """The counts of `terms` (under `cap`) read at `state`; none for an unknown state."""
        with self._lock:
            if state is None or state != self._state:
                return {}
            return {t: self._counts[(t, cap)] for t in terms if (t, cap) in self._counts}

    def remember(self, state: bytes | None, counts: dict[str, int], cap: int) -> None:
        """Keep `counts` (under `cap`), read at `state`; the counts of an older state are forgotten."""
        if state is None:
            return
        with self._lock:
            if state != self._state or len(self._counts) + len(counts) > SECTION_COUNTS_KEPT:
                self._state, self._counts = state, {}
            self._counts.update({(t, cap): n for t, n in counts.items()})


def word_table_state(store: KeywordStore) -> bytes | None:
    """The word table's state as FTS5 records it (see `_WORD_TABLE_STATE`); None if it records none."""
    rows = store.fetch(_WORD_TABLE_STATE)
    return bytes(rows[0][0]) if rows and rows[0][0] is not None else None


# The FTS5 tables every question reads, whose segments the maintenance worker merges (merge_segments). Not the
# trigram table: only unsegmented terms (Thai, CJK) read it, and it is ~5 times the size of the word table.
MERGED_TABLES = ("documents_fts", "notes_fts")


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's big-endian varint at `at`: (value, the position after it)."""
    value = 0
    for i in range(9):
        byte = data[at + i]
        if i == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    raise AssertionError("unreachable")


def segment_count(store: KeywordStore, table: str) -> int:
    """How many segments (b-trees) an FTS5 table's index is made of, from its structure record (a 4-byte cookie,
    then the varints nLevel, nSegment, ...). Every write transaction adds one, FTS5's automerge folds them
    level by level, and a query walks each term's list in every segment: on nat-brain's index of 14 segments a
    question's bm25 ranking took 2.9 ms, 2.4 ms after they were merged into one, counting its matches 0.51 -> 0.17
    ms."""
    assert table in MERGED_TABLES + ("documents_tri",)
    rows = store.fetch(f"SELECT block FROM {table}_data WHERE id = 10")
    if not rows or rows[0][0] is None:
        return 0
    block = bytes(rows[0][0])
    _levels, at = _varint(block, 4)
    return _varint(block, at)[0]


def merge_segments(store: KeywordStore, table: str, pages: int) -> bool:
    """One slice of merging all of an FTS5 table's segments into one (FTS5's 'merge' command with a negative
    page count: every level at once, about `pages` pages written, resumed by the next call), in its own write
    transaction so that a save waits for one slice at most. True when it did work (more may remain). The
    index holds the same rows and answers every query the same; only its layout changes."""
    assert table in MERGED_TABLES
    with store.transaction() as conn:
        before = conn.total_changes
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('merge', ?)", (-abs(pages),))
        return conn.total_changes - before >= 2  # FTS5's own test: fewer than 2 changes means nothing was left


def section_counts(store: KeywordStore, terms: Sequence[str], cap: int) -> dict[str, int]:
    """How many sections hold each of `terms` (quoted FTS5 strings) in the word table, stemmed as the index is
    ("buffers" counts the sections holding "buffer"), counted up to `cap` + 1: the document frequencies query
    expansion weighs words by, where a word in more than `cap` sections is too common to matter. One MATCH per
    term not counted before in this state of the table (SectionCounts); the cap stops a common word's count
    early (a word of 4,000 of nat-brain's 7,310 sections took ~2 ms to count in full, as long as twenty rare
    ones). Counts are kept only when the table's state was the same before and after they were read, so
    none is ever kept under a state it was not read in."""
    state = word_table_state(store)
    known = store.section_count_cache.known(state, terms, cap)
    missing = [term for term in dict.fromkeys(terms) if term not in known]
    counted = _count_sections(store, missing, cap)
    if counted and word_table_state(store) == state:
        store.section_count_cache.remember(state, counted, cap)
    return {term: known[term] if term in known else counted[term] for term in terms}


def _count_sections(store: KeywordStore, terms: list[str], cap: int) -> dict[str, int]:
    """Each term's section count up to `cap` + 1, TERMS_PER_STATEMENT terms to a statement (a compound SELECT of one
    capped MATCH each): a new question's expansion words cost one trip, not one each (issue 46: 30-40 of a new
    question's 52-62 statements on the bundled knowledge were these counts)."""
    one = "SELECT ?, (SELECT count(*) FROM (SELECT 1 FROM documents_fts WHERE documents_fts MATCH ? LIMIT ?))"
    counted: dict[str, int] = {}
    for start in range(0, len(terms), TERMS_PER_STATEMENT):
        part = terms[start:start + TERMS_PER_STATEMENT]
        args = [value for n, term in enumerate(part) for value in (n, term, cap + 1)]
        for n, count in store.fetch(" UNION ALL ".join([one] * len(part)), args):
            counted[part[int(n)]] = int(count)
    return counted


def note_keyword_scores(store: KeywordStore, fts_match: str | None, files: Sequence[str] | None) -> dict[str, float]:
    """-bm25 of each of `files` (note paths; None: every note) matching the word query as whole notes; notes that
    do not match are absent, and so are notes of one section, whose whole text is that section's (search adds only
    what a note holds beyond its best section, so one-section notes rank exactly as the section table says)."""
    if not fts_match or files is not None and not files:
        return {}
    weights = ", ".join(str(w) for w in NOTE_BM25_WEIGHTS)
    if files is None:
        rows = store.fetch(
            f"SELECT f.path, n.s FROM (SELECT rowid AS r, -bm25(notes_fts, {weights}) AS s FROM notes_fts"
            " WHERE notes_fts MATCH ?) n JOIN files f ON f.rowid = n.r WHERE f.chunk_count > 1",
            [fts_match],
        )
        return {path: float(score) for path, score in rows}
    marks = ",".join("?" * len(files))
    # `+rowid` checks each match against the candidates' rowids, rather than one MATCH per candidate.
    rows = store.fetch(
        f"SELECT f.path, n.s FROM (SELECT rowid AS r, -bm25(notes_fts, {weights}) AS s FROM notes_fts"
        " WHERE notes_fts MATCH ?"
        f" AND +rowid IN (SELECT rowid FROM files WHERE path IN ({marks}) AND chunk_count > 1)) n"
        " JOIN files f ON f.rowid = n.r",
        [fts_match, *files],
    )
    return {path: float(score) for path, score in rows}


def filtered_ids(store: KeywordStore, ids: Sequence[str], filters: Filters) -> set[str]:
    """Which of `ids` exist in the index and pass the filters (vector hits are checked here). The ids drive
    the lookup (CROSS JOIN fixes the order): left to itself SQLite walked every chunk of the filtered type
    or concept instead, 2-7 times slower at 100k chunks."""
    if not ids:
        return set()
    where, args = filters.sql()
    values = ",".join(["(?)"] * len(ids))
    rows = store.fetch(
        f"WITH v(id) AS (VALUES {values}) SELECT d.id FROM v CROSS JOIN documents d ON d.id = v.id WHERE {where}",
        [*ids, *args],
    )
    return {r[0] for r in rows}


def count_embedded(store: KeywordStore, filters: Filters) -> int:
    where, args = filters.sql()
    return store.fetch(f"SELECT count(*) FROM documents d WHERE d.in_vector = 1 AND {where}", args)[0][0]
