"""The keyword leg on PostgreSQL: FTS5's bm25, computed in SQL over the `postings` table.

PostgreSQL's own ts_rank reached 0.450 nDCG@10 on SciFact against FTS5's 0.703; bm25 over a postings table
reaches FTS5's figure. This is FTS5's formula (fts5_aux.c) term for term, so the two stores rank alike:

    score = sum over phrases i of  idf_i * f_i * (k1 + 1) / (f_i + k1 * (1 - b + b * D / avgdl))
    idf_i = ln((N - n_i + 0.5) / (n_i + 0.5)), 1e-6 when that is <= 0;   k1 = 1.2, b = 0.75

with f_i the phrase's occurrences weighted by column (BM25_WEIGHTS, read at query time), D the section's
tokens in every column, avgdl and N the table's totals (`fts_stats`), n_i the sections holding the phrase.
Phrases and tokens come from FTS5's own tokenizer (indexer/store/pg/tokens.py). A phrase of several tokens
(rare: a word unicode61 cuts) matches where they stand in a row in one column, from `pos` (column << 20 |
offset). Scores are "higher is better" like the SQLite store's `-bm25()`; ties break by section id.

The trigram table, which serves scripts written without spaces that are neither Thai nor Chinese/Japanese
(Lao, Khmer, Myanmar), is not kept here: such a term matches by substring, scored with the same formula
over characters. Short terms use the same LIKE scan as the SQLite store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from oracle_indexer.store.pg.db import Database, pg_sql
from oracle_indexer.store.pg.tokens import match_phrases, parse_match
from oracle_indexer.store.sqlite import keyword as sqlite_keyword
from oracle_indexer.store.sqlite.keyword import NOTE_BM25_WEIGHTS, like_pattern
from oracle_indexer.store.types import Filters


class PgKeywordStore(Protocol):
    """What the keyword leg uses of `PgStore` (pg/store.py, which calls it): its database. A Protocol, so this module
    does not name the class that imports it (an import circle, if only for the type checker)."""

    db: Database

K1 = 1.2
B = 0.75
POS_SHIFT = 20  # pos = column << POS_SHIFT | offset (a column of a million tokens is beyond any note)
SECTIONS, NOTES = 0, 1  # the two word tables (postings.tbl)


def _phrase_matches(tbl: int, phrases: Sequence[tuple[str, ...]], weights: Sequence[float],
                    docs: Sequence[int] | str | None = None) -> tuple[str, list]:
    """SQL for (i, doc, f): each phrase's matching rows with its column-weighted frequency, `docs` only when
    given (then n_i is not needed): rowids, or a SQL query that yields them (no parameters of its own)."""
    parts: list[str] = []
    args: list = []
    wexpr = " + ".join(f"coalesce(p0.tf[{c + 1}], 0) * {float(w)!r}" for c, w in enumerate(weights) if w)
    in_sql = isinstance(docs, str)
    for i, tokens in enumerate(phrases):
        restrict = (f" AND p0.doc IN ({docs})" if in_sql else " AND p0.doc = ANY(%s)") if docs is not None else ""
        doc_args = [list(docs)] if docs is not None and not in_sql else []
        if len(tokens) == 1:
            parts.append(f"SELECT {i} AS i, p0.doc, ({wexpr or '0'})::float8 AS f FROM postings p0"
                         f" WHERE p0.tbl = %s AND p0.term = %s{restrict}")
            args += [tbl, tokens[0], *doc_args]
            continue
        joins = "".join(f" JOIN postings p{k} ON p{k}.tbl = p0.tbl AND p{k}.doc = p0.doc AND p{k}.term = %s"
                        for k in range(1, len(tokens)))
        follows = " AND ".join(f"x + {k} = ANY(p{k}.pos)" for k in range(1, len(tokens)))
        inner = (f"SELECT {i} AS i, p0.doc, (SELECT coalesce(sum((%s::float8[])[(x >> {POS_SHIFT}) + 1]), 0)"
                 f" FROM unnest(p0.pos) x WHERE {follows}) AS f FROM postings p0{joins}"
                 f" WHERE p0.tbl = %s AND p0.term = %s{restrict}")
        parts.append(f"SELECT * FROM ({inner}) ph WHERE f > 0")
        args += [list(map(float, weights)), *tokens[1:], tbl, tokens[0], *doc_args]
    return " UNION ALL ".join(parts), args


def _phrase_counts(tbl: int, phrases: Sequence[tuple[str, ...]], weights: Sequence[float]) -> tuple[str, list]:
    """SQL for (i, hits): how many rows of the table match each phrase (n_i of bm25's idf), over the whole table.
    A one-token phrase is counted from the word's postings alone (an index-only count)."""
    parts: list[str] = []
    args: list = []
    for i, tokens in enumerate(phrases):
        if len(tokens) == 1:
            parts.append(f"SELECT {i} AS i, count(*)::float8 AS hits FROM postings WHERE tbl = %s AND term = %s")
            args += [tbl, tokens[0]]
        else:
            sql, phrase_args = _phrase_matches(tbl, [tokens], weights)
            parts.append(f"SELECT {i} AS i, count(*)::float8 AS hits FROM ({sql}) ph")
            args += phrase_args
    return " UNION ALL ".join(parts), args


def bm25_scores(tbl: int, phrases: Sequence[tuple[str, ...]], weights: Sequence[float],
                docs: str | None = None) -> tuple[str, list]:
    """SQL for (doc, s): every row matching any phrase with its bm25 score (higher is better); with `docs` (a SQL
    query of rowids, no parameters of its own), only those rows are scored, idf still counted over the table."""
    matches, args = _phrase_matches(tbl, phrases, weights, docs)
    count_args: list = []
    if docs is None:
        counts = "SELECT i, count(*)::float8 AS hits FROM m GROUP BY i"
    else:
        counts, count_args = _phrase_counts(tbl, phrases, weights)
    sql = (
        f"WITH m AS ({matches}),"
        f" n AS ({counts}),"
        " st AS (SELECT n::float8 AS rows, tokens::float8 / greatest(n, 1) AS avgdl FROM fts_stats WHERE tbl = %s)"
        " SELECT m.doc, sum(CASE WHEN ln((st.rows - n.hits + 0.5) / (n.hits + 0.5)) <= 0 THEN 1e-6"
        "   ELSE ln((st.rows - n.hits + 0.5) / (n.hits + 0.5)) END"
        f"   * m.f * {K1 + 1!r} / (m.f + {K1!r} * (1 - {B!r} + {B!r} * l.len / st.avgdl))) AS s"
        " FROM m JOIN n ON n.i = m.i CROSS JOIN st JOIN fts_docs l ON l.tbl = %s AND l.doc = m.doc GROUP BY m.doc"
    )
    return sql, [*args, *count_args, tbl, tbl]


def _trigram_scores(terms: Sequence[str]) -> tuple[str, list]:
    """SQL for (doc, s): sections whose title or content holds each term (case-folded), bm25 over characters."""
    parts, args = [], []
    for i, term in enumerate(terms):
        parts.append(
            f"SELECT {i} AS i, d.rowid AS doc, ((char_length(t.x) - char_length(replace(t.x, %s, '')))"
            " / greatest(char_length(%s), 1))::float8 AS f FROM documents d"
            " CROSS JOIN LATERAL (SELECT lower(coalesce(d.title, '') || ' ' || coalesce(d.content, '')) AS x) t"
            " WHERE strpos(t.x, %s) > 0")
        low = term.lower()
        args += [low, low, low]
    sql = (
        f"WITH m AS ({' UNION ALL '.join(parts)}),"
        " n AS (SELECT i, count(*)::float8 AS hits FROM m GROUP BY i),"
        " st AS (SELECT count(*)::float8 AS rows, greatest(avg(greatest(char_length(coalesce(title, '')) - 2, 0)"
        "   + greatest(char_length(coalesce(content, '')) - 2, 0)), 1)::float8 AS avgdl FROM documents)"
        " SELECT m.doc, sum(CASE WHEN ln((st.rows - n.hits + 0.5) / (n.hits + 0.5)) <= 0 THEN 1e-6"
        "   ELSE ln((st.rows - n.hits + 0.5) / (n.hits + 0.5)) END"
        f"   * m.f * {K1 + 1!r} / (m.f + {K1!r} * (1 - {B!r} + {B!r} * (greatest(char_length(coalesce(d.title, ''))"
        "   - 2, 0) + greatest(char_length(coalesce(d.content, '')) - 2, 0)) / st.avgdl))) AS s"
        " FROM m JOIN n ON n.i = m.i CROSS JOIN st JOIN documents d ON d.rowid = m.doc GROUP BY m.doc"
    )
    return sql, args


def _like_scores(term: str) -> tuple[str, list]:
    """SQL for (doc, s): the SQLite store's LIKE scan for a short unsegmented term, the same constant score."""
    pattern = like_pattern(term)
    return ("SELECT d.rowid AS doc, 0.5::float8 AS s FROM documents d"
            " WHERE (d.content LIKE %s ESCAPE '\\' OR d.title LIKE %s ESCAPE '\\')", [pattern, pattern])


def _sources(fts_match: str | None, trigram_match: str | None, like_terms: Sequence[str]) -> list[tuple[str, list]]:
    """One (doc, s) statement per source, as the SQLite store has one per FTS5 table and LIKE term."""
    out: list[tuple[str, list]] = []
    phrases = match_phrases(fts_match)
    if phrases:
        out.append(bm25_scores(SECTIONS, phrases, sqlite_keyword.BM25_WEIGHTS[1:]))
    trigrams = [t for t in parse_match(trigram_match) if t]
    if trigrams:
        out.append(_trigram_scores(trigrams))
    out += [_like_scores(t) for t in like_terms]
    return out


def _top_unfiltered(sql: str, args: list, limit: int, count: bool) -> tuple[str, list]:
    """The top `limit` (id, score, total) of one source without filters: ranked and counted over (doc, score)
    alone, the sections' ids read only for the rows scoring at least the `limit`-th best score (ties at the cut
    included, then broken by id as before). Every match used to be joined to `documents` for its id before the
    sort: at 100,000 sections, tens of thousands of lookups for a page of ten."""
    total = "(SELECT count(*) FROM k)" if count else "0"
    return (f"WITH k AS MATERIALIZED ({sql}),"
            " cut AS (SELECT min(t.s) AS s FROM (SELECT s FROM k ORDER BY s DESC LIMIT %s) t)"
            f" SELECT d.id, k.s, {total} FROM k JOIN documents d ON d.rowid = k.doc"
            " WHERE k.s >= (SELECT s FROM cut) ORDER BY k.s DESC, d.id LIMIT %s", [*args, limit, limit])


def _filter_sql(filters: Filters) -> tuple[str, list]:
    where, args = filters.sql("postgresql")
    return pg_sql(where), args


def keyword_search(store: PgKeywordStore, fts_match: str | None, trigram_match: str | None, like_terms: Sequence[str],
                   filters: Filters, limit: int, count: bool = True) -> tuple[list[tuple[str, float]], int]:
    """Top `limit` (id, score) by summed keyword score across sources, and the true number of matches (0 with
    `count=False`): the SQLite store's contract (indexer/store/sqlite/keyword.py), each source's top `limit` taken
    before the sum."""
    sources = _sources(fts_match, trigram_match, like_terms)
    if not sources:
        return [], 0
    where, filter_args = _filter_sql(filters)
    scores: dict[str, float] = {}
    if len(sources) == 1:  # the usual case: ranking and the true total from one pass over the matches
        sql, args = sources[0]
        if not filters.active:
            rows = store.db.run(*_top_unfiltered(sql, args, limit, count))
        else:
            total_sql = ", count(*) OVER ()" if count else ", 0"
            rows = store.db.run(
                f"SELECT d.id, k.s{total_sql} FROM ({sql}) k JOIN documents d ON d.rowid = k.doc WHERE {where}"
                " ORDER BY k.s DESC, d.id LIMIT %s", [*args, *filter_args, limit])
        return [(i, float(v)) for i, v, _ in rows], int(rows[0][2]) if rows else 0
    with store.db.connection() as conn:
        for sql, args in sources:
            rows = conn.execute(
                f"SELECT d.id, k.s FROM ({sql}) k JOIN documents d ON d.rowid = k.doc WHERE {where}"
                " ORDER BY k.s DESC, d.id LIMIT %s", [*args, *filter_args, limit]).fetchall()
            for doc_id, value in rows:
                scores[doc_id] = scores.get(doc_id, 0.0) + float(value)
        if not count:
            return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit], 0
        union = " UNION ".join(f"SELECT doc FROM ({sql}) k{n}" for n, (sql, _) in enumerate(sources))
        union_args = [a for _, args in sources for a in args]
        total = conn.execute(
            f"SELECT count(*) FROM documents d WHERE d.rowid IN ({union}) AND {where}",
            [*union_args, *filter_args]).fetchall()[0][0]
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return ranked, int(total)


def _restricted_matches(fts_match: str | None, trigram_match: str | None, like_terms: Sequence[str],
                        docs: str) -> tuple[list[str], list]:
    """One statement per source yielding `doc`: the rows of `docs` (a SQL query of rowids, no parameters of its own)
    that the source matches at all, unscored. Each source probes its postings (or the sections) for those rows only,
    as FTS5's `rowid IN (...)` does in the SQLite store, rather than scoring every match and keeping a few."""
    parts: list[str] = []
    args: list = []
    phrases = match_phrases(fts_match)
    if phrases:
        sql, phrase_args = _phrase_matches(SECTIONS, phrases, sqlite_keyword.BM25_WEIGHTS[1:], docs)
        parts.append(f"SELECT m.doc FROM ({sql}) m")
        args += phrase_args
    for term in (t for t in parse_match(trigram_match) if t):
        parts.append(f"SELECT d.rowid AS doc FROM documents d WHERE d.rowid IN ({docs})"
                     " AND strpos(lower(coalesce(d.title, '') || ' ' || coalesce(d.content, '')), %s) > 0")
        args.append(term.lower())
    for term in like_terms:
        pattern = like_pattern(term)
        parts.append(f"SELECT d.rowid AS doc FROM documents d WHERE d.rowid IN ({docs})"
                     " AND (d.content LIKE %s ESCAPE '\\' OR d.title LIKE %s ESCAPE '\\')")
        args += [pattern, pattern]
    return parts, args


def keyword_matching_ids(store: PgKeywordStore, fts_match: str | None, trigram_match: str | None,
                         like_terms: Sequence[str], ids: Sequence[str]) -> set[str]:
    """Which of `ids` the keyword query matches at all (to count a true hybrid total): one statement that probes
    each source's postings for those sections only. It used to compute the query's bm25 over every match and
    keep the asked ones at the end: at 100,000 sections that was the keyword leg's cost a second time (~180 ms
    of a hybrid search, BENCHMARKS.md)."""
    if not ids:
        return set()
    parts, args = _restricted_matches(fts_match, trigram_match, like_terms, "SELECT rowid FROM want")
    if not parts:
        return set()
    rows = store.db.run(
        "WITH want AS MATERIALIZED (SELECT rowid, id FROM documents WHERE id = ANY(%s))"
        f" SELECT w.id FROM want w WHERE w.rowid IN ({' UNION ALL '.join(parts)})", [list(ids), *args])
    return {r[0] for r in rows}


def terms_matched(store: PgKeywordStore, terms: Sequence[str], ids: Sequence[str]) -> dict[str, int]:
    """How many of `terms` (quoted FTS5 strings) each of `ids` contains in the word table: one statement (it was
    one to find the sections' rowids and one per term). A term counts once for a section whichever of its phrases
    match, as one MATCH does in the SQLite store; a term given twice counts twice."""
    if not terms or not ids:
        return {}
    parts: list[str] = []
    args: list = []
    for t, term in enumerate(terms):
        phrases = match_phrases(term)
        if not phrases:
            continue
        sql, term_args = _phrase_matches(SECTIONS, phrases, sqlite_keyword.BM25_WEIGHTS[1:], "SELECT rowid FROM want")
        parts.append(f"SELECT DISTINCT {t} AS t, m{t}.doc FROM ({sql}) m{t}")
        args += term_args
    if not parts:
        return {r[0]: 0 for r in store.db.run("SELECT id FROM documents WHERE id = ANY(%s)", [list(ids)])}
    rows = store.db.run(
        "WITH want AS MATERIALIZED (SELECT rowid, id FROM documents WHERE id = ANY(%s))"
        f" SELECT w.id, count(u.t) FROM want w LEFT JOIN ({' UNION ALL '.join(parts)}) u ON u.doc = w.rowid"
        " GROUP BY w.id", [list(ids), *args])
    return {i: int(n) for i, n in rows}


def section_counts(store: PgKeywordStore, terms: Sequence[str], cap: int) -> dict[str, int]:
    """How many sections hold each of `terms` (quoted FTS5 strings), stemmed as the index is, counted up to `cap`
    + 1: the SQLite store's contract (indexer/store/sqlite/keyword.py), the same counts from the postings. Terms of one
    token are counted in one round trip, each from its own postings (the cap stops a common word early); one that
    unicode61 cuts into several tokens counts the sections where they stand in a row; a term without a token
    matches nothing (0)."""
    phrases = {term: match_phrases(term) for term in terms}
    out = {term: 0 for term, p in phrases.items() if not p}
    single = {term: p[0][0] for term, p in phrases.items() if len(p) == 1 and len(p[0]) == 1}
    if single:
        tokens = sorted(set(single.values()))
        counted = dict(store.db.run(
            "SELECT t.term, (SELECT count(*) FROM (SELECT 1 FROM postings p WHERE p.tbl = %s AND p.term = t.term"
            " LIMIT %s) c) FROM unnest(%s::text[]) AS t(term)", [SECTIONS, cap + 1, tokens]))
        out.update({term: int(counted[token]) for term, token in single.items()})
    for term, p in phrases.items():
        if p and term not in single:
            sql, args = _phrase_matches(SECTIONS, p, sqlite_keyword.BM25_WEIGHTS[1:])
            out[term] = int(store.db.run(f"SELECT count(*) FROM (SELECT DISTINCT doc FROM ({sql}) m LIMIT %s) c",
                                         [*args, cap + 1])[0][0])
    return {term: out[term] for term in terms}


def note_keyword_scores(store: PgKeywordStore, fts_match: str | None, files: Sequence[str] | None) -> dict[str, float]:
    """bm25 of each of `files` (notes of more than one section; None: every such note) matching the word query as
    whole notes."""
    phrases = match_phrases(fts_match)
    if not phrases or files is not None and not files:
        return {}
    if files is None:
        sql, args = bm25_scores(NOTES, phrases, NOTE_BM25_WEIGHTS)
        rows = store.db.run(f"SELECT f.path, k.s FROM ({sql}) k JOIN files f ON f.rowid = k.doc"
                            " WHERE f.chunk_count > 1", args)
    else:  # only the notes asked are scored (their postings probed), idf counted over every note
        sql, args = bm25_scores(NOTES, phrases, NOTE_BM25_WEIGHTS, "SELECT rowid FROM want")
        rows = store.db.run(
            "WITH want AS MATERIALIZED (SELECT rowid, path FROM files WHERE path = ANY(%s) AND chunk_count > 1)"
            f" SELECT w.path, k.s FROM ({sql}) k JOIN want w ON w.rowid = k.doc", [list(files), *args])
    return {path: float(score) for path, score in rows}


def filtered_ids(store: PgKeywordStore, ids: Sequence[str], filters: Filters) -> set[str]:
    """Which of `ids` exist in the index and pass the filters (vector hits are checked here)."""
    if not ids:
        return set()
    if not filters.active:  # the vector leg's hits: the vector query said which are indexed (PgVectorStore.query)
        hit, indexed = store.db.take("indexed_ids", tuple(ids))
        if hit:
            return set(indexed)
    where, args = _filter_sql(filters)
    rows = store.db.run(f"SELECT d.id FROM documents d WHERE d.id = ANY(%s) AND {where}", [list(ids), *args])
    return {r[0] for r in rows}


def count_embedded(store: PgKeywordStore, filters: Filters) -> int:
    where, args = _filter_sql(filters)
    return int(store.db.run(f"SELECT count(*) FROM documents d WHERE d.in_vector = 1 AND {where}", args)[0][0])


class SqlWords:
    """The keyword leg's reads computed in SQL over `store`'s postings (protocols.KeywordReads): what PgStore reads
    when the working copy's own index does not hold what the database holds."""

    def __init__(self, store: PgKeywordStore) -> None:
        self.store = store

    def keyword_search(self, fts_match: str | None, trigram_match: str | None, like_terms: Sequence[str],
                       filters: Filters, limit: int, count: bool = True) -> tuple[list[tuple[str, float]], int]:
        return keyword_search(self.store, fts_match, trigram_match, like_terms, filters, limit, count)

    def keyword_matching_ids(self, fts_match: str | None, trigram_match: str | None, like_terms: Sequence[str],
                             ids: Sequence[str]) -> set[str]:
        return keyword_matching_ids(self.store, fts_match, trigram_match, like_terms, ids)

    def terms_matched(self, terms: Sequence[str], ids: Sequence[str]) -> dict[str, int]:
        return terms_matched(self.store, terms, ids)

    def note_keyword_scores(self, fts_match: str | None, files: Sequence[str] | None) -> dict[str, float]:
        return note_keyword_scores(self.store, fts_match, files)

    def section_counts(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        return section_counts(self.store, terms, cap)
