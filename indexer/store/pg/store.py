"""The store on PostgreSQL: the same typed reads and writes as the SQLite store, for several engines at once.

Reads are the SQLite store's own (indexer/store/sqlite/reads.py, one copy of each statement) run through the pool;
the few that SQLite spells its own way (GLOB) are overridden here. Writes are one transaction per note, as
in SQLite: the note's sections, their postings (the keyword index, indexer/store/pg/keyword.py), concepts,
relations and supersession commit together, so another engine never sees half a note. The keyword leg's
functions are methods here (`keyword_search`, ...), as they are on the SQLite store.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from oracle_indexer.locks import WriterLockBusy
from oracle_indexer.models.embed import text_key
from oracle_indexer.notes.fields import FieldValue
from oracle_indexer.notes.language import NoteLanguage
from oracle_indexer.notes.parse import Chunk, Relation, compose_embed_text, relation_key
from oracle_indexer.store.pg import keyword as pg_keyword
from oracle_indexer.store.pg.db import Database, database, pg_sql
from oracle_indexer.store.pg.keyword import NOTES, POS_SHIFT, SECTIONS
from oracle_indexer.store.pg.local_words import LocalWords, Reading, in_step
from oracle_indexer.store.pg.schema import SCHEMA_VERSION, WRITER_LOCK, migrate
from oracle_indexer.store.pg.tokens import tokenize_rows
from oracle_indexer.store.protocols import KeywordReads
from oracle_indexer.store.rows import BATCH, SECTION_COLUMNS, FileState, Section, SectionFacts, marks, parser_version
from oracle_indexer.store.sqlite.reads import Reads
from oracle_indexer.store.sqlite.writes import _embed_key, body_hash, note_text, section_text
from oracle_indexer.store.types import Filters

if TYPE_CHECKING:
    import numpy as np
    import psycopg

# Every table that holds what the markdown says (for --full): the embedding cache, meta and logs survive.
CONTENT_TABLES = ("documents", "doc_concepts", "files", "skipped", "relations", "superseded_files", "postings",
                  "fts_docs", "note_fields")


class PgCursorConn:
    """A transaction's connection with sqlite3's `execute`/`executemany` over `?` statements, for the few
    callers that write inside `Store.transaction()` with portable SQL (tests, the multilingual cache)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.raw = conn

    def execute(self, sql: str, args: Sequence[Any] = ()):
        return self.raw.execute(pg_sql(sql), list(args))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]):
        with self.raw.cursor() as cur:
            cur.executemany(pg_sql(sql), [list(r) for r in rows])
            return cur


class PgStore(Reads):
    """One knowledge base in one PostgreSQL database (or schema: set search_path in the URL's options)."""

    dialect = "postgresql"
    team = True

    def __init__(self, url: str, *, model_id: str | None = None) -> None:
        from oracle_indexer.models.embed import MODEL_ID

        self.url = url
        self.db: Database = database(url)
        try:
            self.applied = migrate(self.db)
        except BaseException:
            self.db.release()
            raise
        self.model_id = model_id or MODEL_ID
        self.recovered_from = None  # a server's data is never moved aside: it is not ours alone
        # the working copy's own index, read for the keyword leg while it holds what the database holds
        # (indexer/store/pg/local_words.py; indexer/serving/team.py follows it)
        self.local_words: LocalWords | None = None
        self._reading = Reading()
        self._sql_words = pg_keyword.SqlWords(self)
        self.verified = True
        self._closed = False
        if self.applied and self.applied[0] == 1:  # a new store knows nothing of the vectors stored
            self.set_meta("vectors_dirty", "1")
        self.set_meta("schema_version", str(SCHEMA_VERSION))

    @property
    def path(self) -> str:
        """Where the store is, for messages (the URL without its password)."""
        from oracle_indexer.store.pg.db import _safe

        return _safe(self.url)

    def verify(self) -> bool:
        """The SQLite store's deferred integrity check has no counterpart: PostgreSQL checks its own pages."""
        return False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.db.release()

    # -- reading ------------------------------------------------------------------------------------
    def fetch(self, sql: str, args: Sequence = ()) -> list[tuple]:
        return self.db.fetch(sql, args)

    def fetch_dicts(self, sql: str, args: Sequence = ()) -> list[dict]:
        return self.db.fetch_dicts(sql, args)

    def reading(self) -> AbstractContextManager[PgCursorConn]:
        @contextmanager
        def block() -> Iterator[PgCursorConn]:
            with self.db.connection() as conn:
                yield PgCursorConn(conn)
        return block()

    # -- the reads of one search, with what the next one needs fetched in the same round trip ---------
    # server/search.py reads a candidate pool's facts and then their notes' frontmatter supersessions, and the page's
    # sections and then their notes' dates (freshness). Each first read sends the second with it (pipeline mode,
    # one round trip) and stashes its rows for the second call (Database.stash: this thread, this second, no write
    # of this process in between, exactly the same notes); the statements are the SQLite store's own.
    _FACTS = ("SELECT d.id, d.file, d.kind, d.parent_id, d.content_hash, f.body_hash, d.heading, d.line_start,"
              " d.line_end, f.lang, f.lang_from, f.translation_key"
              " FROM documents d LEFT JOIN files f ON f.path = d.file"
              " WHERE d.id IN ({})")
    _SUPERSEDED_OF_IDS = ("SELECT file, target FROM superseded_files WHERE file IN"
                          " (SELECT file FROM documents WHERE id = ANY(%s))")
    _NOTE_DATES_OF_IDS = ("SELECT f.path, f.type, (SELECT d.date FROM documents d WHERE d.file = f.path ORDER BY"
                          " d.position LIMIT 1), f.last_verified, f.review_after FROM files f"
                          " WHERE f.path IN (SELECT file FROM documents WHERE id = ANY(%s))")

    _LANGUAGES = ("SELECT lang, count(*) FROM files WHERE lang IS NOT NULL AND lang_from IN ('frontmatter', 'folder')"
                  " GROUP BY lang ORDER BY lang")
    _PENDING = "SELECT count(*) FROM documents WHERE in_vector = 0"

    def chunk_count(self) -> int:
        """How many sections the index holds: the section word table's row count, which every note's write keeps
        in its own transaction (one row per section), instead of counting the documents (a scan per search).
        A search reads it first, then the notes' stated languages and (vector leg) the sections not embedded yet:
        those two come in the same round trip, for the calls that follow (Database.stash)."""
        generation = self.db.generation
        count, languages, pending, state = self.db.fetch_many([
            ("SELECT n FROM fts_stats WHERE tbl = %s", [SECTIONS]), (self._LANGUAGES, []), (self._PENDING, []),
            (self._STATE, [])])
        self.db.stash("structural_languages", None, {lang: n for lang, n in languages})
        self.db.stash("pending_count", None, int(pending[0][0]))
        self._reading.keep(generation, _state(state[0]))
        return int(count[0][0])

    # -- the content state, and the keyword leg from the working copy's own index ---------------------
    _STATE = ("SELECT (SELECT state FROM content_state), (SELECT n FROM fts_stats WHERE tbl = %d),"
              " (SELECT value FROM meta WHERE key = 'parser_version')" % SECTIONS)

    def content_state(self) -> tuple[int, int, int]:
        """(XOR of every note's path and file hash, sections, parser version), as `Reads.content_state` computes it
        for SQLite: the first from the row the `files` trigger keeps (schema migration 5), the second from the word
        table's count, the third from meta."""
        generation = self.db.generation
        state = _state(self.db.run(self._STATE)[0])
        self._reading.keep(generation, state)
        return state

    def _words(self) -> KeywordReads:
        """Where the keyword leg reads now: the working copy's own index when it holds what the database holds (by
        the state read at the start of this search, or read now), else this store's SQL."""
        local = self.local_words
        if local is None or local.state is None:
            return self._sql_words
        state = self._reading.get(self.db.generation) or self.content_state()
        return in_step(local, state) or self._sql_words

    def keyword_source(self) -> str:
        """"working copy" or "database": where the keyword leg would read now (stats, tests)."""
        return "database" if self._words() is self._sql_words else "working copy"

    def structural_languages(self) -> dict[str, int]:
        hit, value = self.db.take("structural_languages", None)
        return dict(value) if hit else super().structural_languages()

    def write_state(self) -> None:
        """None: this store cannot tell cheaply whether anything was written (Store.write_state)."""
        return None

    def pending_count(self) -> int:
        hit, value = self.db.take("pending_count", None)
        return int(value) if hit else super().pending_count()

    def section_facts(self, ids: Sequence[str]) -> dict[str, SectionFacts]:
        if not ids or len(ids) > BATCH:
            return super().section_facts(ids)
        part = list(ids)
        facts, superseded = self.db.fetch_many([(pg_sql(self._FACTS.format(marks(len(part)))), part),
                                                (self._SUPERSEDED_OF_IDS, [part])])
        out = {row[0]: SectionFacts(*row) for row in facts}
        self.db.stash("superseded_files", frozenset(f.file for f in out.values()), dict(superseded))
        return out

    def superseded_files(self, files: Sequence[str] | None = None) -> dict[str, str]:
        if files is not None:
            hit, value = self.db.take("superseded_files", frozenset(files))
            if hit:
                return {f: t for f, t in sorted(value.items())}
        return super().superseded_files(files)

    def sections_by_id(self, ids: Sequence[str]) -> dict[str, Section]:
        if not ids or len(ids) > BATCH:
            return super().sections_by_id(ids)
        part = list(ids)
        rows, dates = self.db.fetch_many([
            (pg_sql(f"SELECT {SECTION_COLUMNS} FROM documents WHERE id IN ({marks(len(part))})"), part),
            (self._NOTE_DATES_OF_IDS, [part])])
        out = {row[0]: Section.from_row(row) for row in rows}
        self.db.stash("note_dates", frozenset(s.file for s in out.values()), {r[0]: tuple(r[1:]) for r in dates})
        return out

    def note_dates(self, files: Sequence[str] | None = None
                   ) -> dict[str, tuple[str, str | None, str | None, str | None]]:
        if files is not None:
            hit, value = self.db.take("note_dates", frozenset(files))
            if hit:
                return {f: value[f] for f in sorted(value)}
        return super().note_dates(files)

    def ids_with_hash_prefix(self, prefix: str, limit: int = 20) -> list[str]:
        rows = self.db.run("SELECT id FROM documents WHERE starts_with(content_hash, %s) ORDER BY id LIMIT %s",
                           [prefix, limit])
        return [r[0] for r in rows]

    def has_thai(self) -> bool:
        return bool(self.db.run("SELECT 1 FROM documents WHERE content ~ '[ก-๛]' LIMIT 1"))

    # -- the keyword leg: the working copy's own index when in step (_words), else the SQL module's functions --
    def keyword_search(self, fts_match: str | None, trigram_match: str | None, like_terms: Sequence[str],
                       filters: Filters, limit: int, count: bool = True) -> tuple[list[tuple[str, float]], int]:
        return self._words().keyword_search(fts_match, trigram_match, like_terms, filters, limit, count)

    def keyword_matching_ids(self, fts_match: str | None, trigram_match: str | None, like_terms: Sequence[str],
                             ids: Sequence[str]) -> set[str]:
        return self._words().keyword_matching_ids(fts_match, trigram_match, like_terms, ids)

    def terms_matched(self, terms: Sequence[str], ids: Sequence[str]) -> dict[str, int]:
        return self._words().terms_matched(terms, ids)

    def note_keyword_scores(self, fts_match: str | None, files: Sequence[str] | None) -> dict[str, float]:
        return self._words().note_keyword_scores(fts_match, files)

    def section_counts(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        return self._words().section_counts(terms, cap)

    filtered_ids = pg_keyword.filtered_ids
    count_embedded = pg_keyword.count_embedded

    # -- writing ------------------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[PgCursorConn]:
        """One transaction; the connection speaks sqlite3's `?` dialect (see PgCursorConn)."""
        with self.db.transaction() as conn:
            yield PgCursorConn(conn)

    def set_meta(self, key: str, value: str) -> None:
        self.db.run("INSERT INTO meta (key, value) VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, value])

    def forget_file_states(self) -> None:
        """Forget every file's stat and hash, so the next sync re-parses every note (the SQLite store's contract,
        indexer/store/sqlite/writes.py). Section ids and vectors stay."""
        self.db.run("UPDATE files SET mtime_ns = 0, file_hash = ''")

    def touch_file(self, rel: str, mtime_ns: int, size: int) -> None:
        self.db.run("UPDATE files SET mtime_ns = %s, size = %s WHERE path = %s", [mtime_ns, size, rel])

    def replace_file(
        self,
        rel: str,
        doc_type: str,
        title: str,
        state: FileState,
        chunks: Sequence[Chunk],
        warnings: Sequence[str],
        relations: Sequence[Relation] = (),
        superseded_by: str | None = None,
        language: NoteLanguage = NoteLanguage(),
        verified: tuple[str | None, str | None] = (None, None),
        fields: Sequence[FieldValue] = (),
    ) -> list[str]:
        """Swap a file's sections in one transaction; the SQLite store's contract (indexer/store/sqlite/writes.py)."""
        aliases = next((c.aliases for c in chunks), ())
        section_tokens = tokenize_rows([section_text(c) for c in chunks])
        note_title, note_body = note_text(title, aliases, chunks)
        note_tokens = tokenize_rows([(note_title, note_body)])[0][:2]
        with self.db.transaction() as conn:
            _derived(conn)
            embedded = dict(conn.execute("SELECT id, embed_key FROM documents WHERE file = %s AND in_vector = 1",
                                         [rel]).fetchall())
            old_ids = _delete_file_rows(conn, rel)
            keys = [_embed_key(c, self.model_id) for c in chunks]
            rowids: dict[str, int] = {}
            if chunks:
                columns = list(zip(*[
                    (c.id, c.file, c.type, c.kind, c.title, c.heading, c.content, c.line_start, c.line_end,
                     c.content_hash, key, json.dumps(list(c.concepts), ensure_ascii=False), c.project, c.date,
                     c.parent_id, n, int(embedded.get(c.id) == key), c.timestamp)
                    for n, (c, key) in enumerate(zip(chunks, keys))]))
                types = ["text"] * 7 + ["integer"] * 2 + ["text"] * 6 + ["integer"] * 2 + ["text"]
                rowids = dict(conn.execute(
                    "INSERT INTO documents (id, file, type, kind, title, heading, content, line_start, line_end,"
                    " content_hash, embed_key, concepts, project, date, parent_id, position, in_vector, timestamp)"
                    " SELECT * FROM unnest(" + ", ".join(f"%s::{t}[]" for t in types) + ") RETURNING id, rowid",
                    [list(col) for col in columns]).fetchall())
                concept_rows = sorted({(c.id, concept) for c in chunks for concept in c.concepts})
                if concept_rows:
                    conn.execute("INSERT INTO doc_concepts (doc_id, concept)"
                                 " SELECT * FROM unnest(%s::text[], %s::text[]) ON CONFLICT DO NOTHING",
                                 [[a for a, _ in concept_rows], [b for _, b in concept_rows]])
            (file_rowid,) = conn.execute(
                "INSERT INTO files (path, type, title, mtime_ns, size, file_hash, chunk_count, warnings, indexed_at,"
                " body_hash, lang, lang_from, translation_key, last_verified, review_after)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
                " ON CONFLICT (path) DO UPDATE SET type=excluded.type,"
                " title=excluded.title, mtime_ns=excluded.mtime_ns, size=excluded.size, file_hash=excluded.file_hash,"
                " chunk_count=excluded.chunk_count, warnings=excluded.warnings, indexed_at=excluded.indexed_at,"
                " body_hash=excluded.body_hash, lang=excluded.lang, lang_from=excluded.lang_from,"
                " translation_key=excluded.translation_key, last_verified=excluded.last_verified,"
                " review_after=excluded.review_after RETURNING rowid",
                [rel, doc_type, title, state.mtime_ns, state.size, state.file_hash, len(chunks),
                 json.dumps(list(warnings), ensure_ascii=False), time.time(), body_hash(title, chunks),
                 language.lang, language.source, language.translation_key, *verified]).fetchall()[0]
            _write_postings(conn, [(SECTIONS, [rowids[c.id] for c in chunks], section_tokens),
                                   (NOTES, [file_rowid], [note_tokens])])
            if relations:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO relations (file, position, subject, predicate, object, subject_key, predicate_key,"
                        " object_key) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                        [(rel, n, r.subject, r.predicate, r.object, relation_key(r.subject), relation_key(r.predicate),
                          relation_key(r.object)) for n, r in enumerate(relations)])
            if superseded_by:
                conn.execute("INSERT INTO superseded_files (file, target) VALUES (%s, %s)", [rel, superseded_by])
            if fields:
                conn.execute(
                    "INSERT INTO note_fields (file, field, position, value, value_key, is_list)"
                    " SELECT %s, * FROM unnest(%s::text[], %s::integer[], %s::text[], %s::text[], %s::integer[])",
                    [rel, [f.field for f in fields], list(range(len(fields))), [f.value for f in fields],
                     [f.key for f in fields], [int(f.is_list) for f in fields]])
            conn.execute("DELETE FROM skipped WHERE path = %s", [rel])
        new_ids = {c.id for c in chunks}
        return [i for i in old_ids if i not in new_ids]

    def remove_file(self, rel: str) -> list[str]:
        with self.db.transaction() as conn:
            _derived(conn)
            ids = _delete_file_rows(conn, rel)
            conn.execute("DELETE FROM files WHERE path = %s", [rel])
            conn.execute("DELETE FROM skipped WHERE path = %s", [rel])
        return ids

    def clear(self) -> None:
        with self.db.transaction() as conn:
            for table in CONTENT_TABLES:
                conn.execute(f"DELETE FROM {table}")
            conn.execute("UPDATE fts_stats SET n = 0, tokens = 0")

    def record_skip(self, rel: str, reason: str) -> list[str]:
        ids = self.remove_file(rel)
        self.db.run("INSERT INTO skipped (path, reason, seen_at) VALUES (%s, %s, %s) ON CONFLICT (path) DO UPDATE SET"
                    " reason = excluded.reason, seen_at = excluded.seen_at", [rel, reason, time.time()])
        return ids

    def forget_skips(self, present: Iterable[str]) -> None:
        keep = set(present)
        gone = [p for p in self.skipped() if p not in keep]
        if gone:
            self.db.run("DELETE FROM skipped WHERE path = ANY(%s)", [gone])

    def cache_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        if vectors:
            self.db.run("INSERT INTO embeddings (key, vector) SELECT * FROM unnest(%s::text[], %s::bytea[])"
                        " ON CONFLICT DO NOTHING",
                        [list(vectors), [v.astype("float32").tobytes() for v in vectors.values()]])

    def mark_in_vector(self, ids: Sequence[str], value: int = 1) -> None:
        if ids:
            self.db.run("UPDATE documents SET in_vector = %s WHERE id = ANY(%s)", [value, list(ids)])

    def mark_all_out_of_vector(self) -> None:
        self.db.run("UPDATE documents SET in_vector = 0")

    def rekey(self, model: str) -> int:
        with self.db.transaction() as conn:
            rows = conn.execute("SELECT id, title, heading, content FROM documents").fetchall()
            if rows:
                conn.execute(
                    "UPDATE documents d SET embed_key = k.key, in_vector = 0"
                    " FROM unnest(%s::text[], %s::text[]) AS k(id, key) WHERE d.id = k.id",
                    [[r[0] for r in rows],
                     [text_key(compose_embed_text(title, heading, content), model)
                      for _, title, heading, content in rows]])
            conn.execute("INSERT INTO meta (key, value) VALUES ('embedding_model', %s)"
                         " ON CONFLICT (key) DO UPDATE SET value = excluded.value", [model])
        return len(rows)

    # -- the multilingual vector cache (indexer/models/multilingual.py) -------------------------------------
    def write_ml_vectors(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        self.db.run("INSERT INTO ml_vectors (key, vector) SELECT * FROM unnest(%s::text[], %s::bytea[])"
                    " ON CONFLICT DO NOTHING", [list(keys), [v.astype("float32").tobytes() for v in vectors]])

    def prune_ml_vectors(self) -> int:
        with self.db.connection() as conn:
            return conn.execute("DELETE FROM ml_vectors WHERE key NOT IN"
                                " (SELECT embed_key FROM documents WHERE embed_key IS NOT NULL)").rowcount

    # -- one writer across engines --------------------------------------------------------------------
    def writer_lock(self) -> "PgWriterLock":
        """The lock every write of this knowledge base holds, across engines and machines (see PgWriterLock)."""
        return PgWriterLock(self.url)


def _state(row: Sequence[Any]) -> tuple[int, int, int]:
    """The content state's row (PgStore._STATE) as `Reads.content_state`'s triple."""
    return int(row[0]), int(row[1]), parser_version(row[2])


def _derived(conn: psycopg.Connection) -> None:
    """This transaction writes derived data (the index, rebuilt from the markdown by the next sync, which compares
    files by hash): it need not wait for its WAL flush, as SQLite's synchronous=NORMAL does not. A server crash
    may lose the last fraction of a second of such commits, never corrupt them, and the next sync redoes them.
    500 SciFact abstracts, keyword phase, on a loaded 2-core machine: 4.4 s instead of 7.1 s."""
    conn.execute("SET LOCAL synchronous_commit = off")


def _delete_file_rows(conn: psycopg.Connection, rel: str) -> list[str]:
    """Remove a note's sections and everything keyed by them (postings, lengths, totals); their ids in order."""
    rows = conn.execute("SELECT rowid, id FROM documents WHERE file = %s ORDER BY position", [rel]).fetchall()
    note = conn.execute("SELECT rowid FROM files WHERE path = %s", [rel]).fetchone()
    _drop_postings(conn, SECTIONS, [r[0] for r in rows])
    if note:
        _drop_postings(conn, NOTES, [note[0]])
    if rows:
        conn.execute("DELETE FROM doc_concepts WHERE doc_id = ANY(%s)", [[r[1] for r in rows]])
        conn.execute("DELETE FROM documents WHERE file = %s", [rel])
    conn.execute("DELETE FROM relations WHERE file = %s", [rel])
    conn.execute("DELETE FROM superseded_files WHERE file = %s", [rel])
    conn.execute("DELETE FROM note_fields WHERE file = %s", [rel])
    return [r[1] for r in rows]


def _drop_postings(conn: psycopg.Connection, tbl: int, docs: Sequence[int]) -> None:
    if not docs:
        return
    gone = conn.execute("DELETE FROM fts_docs WHERE tbl = %s AND doc = ANY(%s) RETURNING len",
                        [tbl, list(docs)]).fetchall()
    if gone:
        conn.execute("UPDATE fts_stats SET n = n - %s, tokens = tokens - %s WHERE tbl = %s",
                     [len(gone), sum(r[0] for r in gone), tbl])
    conn.execute("DELETE FROM postings WHERE tbl = %s AND doc = ANY(%s)", [tbl, list(docs)])


def _copy_text(value: str) -> str:
    """A value in COPY's text format (backslash, tab and line breaks escaped; tokens rarely hold any)."""
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _write_postings(conn: psycopg.Connection,
                    groups: Sequence[tuple[int, Sequence[int], Sequence[Sequence[Sequence[str]]]]]) -> None:
    """For each (table, rows, their tokens per column): each row's terms with their count per column and positions,
    its length, and the table's totals: what FTS5 keeps for bm25 (indexer/store/pg/keyword.py). Two COPYs in
    COPY's text format for the whole note (a row at a time through psycopg's array dumper took most of the
    note's write time)."""
    postings: list[str] = []
    lengths: list[str] = []
    totals: dict[int, tuple[int, int]] = {}
    for tbl, docs, tokens in groups:
        width = max((len(cols) for cols in tokens), default=0)
        rows = tokens_total = 0
        for doc, cols in zip(docs, tokens):
            tf: dict[str, list[int]] = defaultdict(lambda: [0] * width)
            pos: dict[str, list[int]] = defaultdict(list)
            length = 0
            for c, words in enumerate(cols):
                length += len(words)
                for offset, word in enumerate(words):
                    tf[word][c] += 1
                    pos[word].append(c << POS_SHIFT | offset)
            for word in sorted(tf):
                postings.append(f"{tbl}\t{_copy_text(word)}\t{doc}\t{{{','.join(map(str, tf[word]))}}}"
                                f"\t{{{','.join(map(str, pos[word]))}}}\n")
            lengths.append(f"{tbl}\t{doc}\t{length}\n")
            rows += 1
            tokens_total += length
        totals[tbl] = (rows, tokens_total)
    with conn.cursor() as cur:
        if postings:
            with cur.copy("COPY postings (tbl, term, doc, tf, pos) FROM STDIN") as copy:
                copy.write("".join(postings))
        if lengths:
            with cur.copy("COPY fts_docs (tbl, doc, len) FROM STDIN") as copy:
                copy.write("".join(lengths))
    for tbl, (rows, tokens_total) in totals.items():
        if rows:
            conn.execute("UPDATE fts_stats SET n = n + %s, tokens = tokens + %s WHERE tbl = %s",
                         [rows, tokens_total, tbl])


WRITER_WAIT = 30.0  # seconds a write waits for another engine's writer lock before it is refused
# A holder whose heartbeat stops this long (a frozen or suspended engine: SIGSTOP, a laptop lid, a debugger) loses
# the lock: PostgreSQL ends its idle session (idle_session_timeout). A dead holder's session ends with its socket
# (at once on one machine; a machine lost without a word: within TCP_KEEPALIVE's ~25 s).
STUCK_SECONDS = 30.0
TCP_KEEPALIVE = {"tcp_keepalives_idle": 10, "tcp_keepalives_interval": 5, "tcp_keepalives_count": 3}


class PgWriterLock:
    """One writer at a time for one knowledge base, across engines and machines: a PostgreSQL session-level
    advisory lock held on a connection of its own for as long as the block runs (the file lock
    indexer/locks.py is for one machine). Re-entrant within a process, like WriterLock. If the holder dies
    (kill -9, a machine lost), its connection ends and PostgreSQL releases the lock, so another engine's write
    or sync goes on from where it stopped: each note is its own transaction, and a sync compares the files with
    the index by hash, so nothing is indexed twice and nothing is lost.

    Bounded (issue 39: a frozen engine's lock blocked every learn on every engine without limit): a write waits
    at most `wait` seconds (lock_timeout), then WriterLockBusy names the holder and since when. The holder's
    session heart-beats every `stuck_after` / 6 seconds and asks PostgreSQL to end it after `stuck_after`
    idle seconds, so a frozen engine's lock is reclaimed by the server itself; the frozen engine finds out
    when it wakes (`lost`, and a line on stderr)."""

    def __init__(self, url: str, wait: float = WRITER_WAIT, stuck_after: float = STUCK_SECONDS) -> None:
        self.url = url
        self.wait = wait
        self.stuck_after = stuck_after
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._conn: psycopg.Connection | None = None
        self._since: str | None = None
        self._beat: tuple[threading.Thread, threading.Event] | None = None
        self.lost = False  # the last hold ended with the session gone (this engine was stopped too long)

    def __enter__(self) -> "PgWriterLock":
        if not self._thread_lock.acquire(timeout=self.wait):
            raise WriterLockBusy(f"another write of this engine holds the writer lock since {self._since or '?'}"
                                 f" and it was not free within {self.wait:.0f} s; nothing was written: retry in a"
                                 " moment")
        try:
            if self._depth == 0:
                self._conn = self._take()
        except BaseException:
            self._thread_lock.release()
            raise
        self._depth += 1
        return self

    def _take(self) -> "psycopg.Connection":
        import datetime as dt
        import os

        import psycopg

        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5, application_name="oracle writer",
                               keepalives=1, keepalives_idle=10, keepalives_interval=5, keepalives_count=3)
        try:
            conn.execute(f"SET lock_timeout = {max(1, int(self.wait * 1000))}")
            try:
                conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [WRITER_LOCK])
            except psycopg.errors.LockNotAvailable:
                raise WriterLockBusy(self._busy(conn)) from None
            since = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            conn.execute("SET lock_timeout = 0")
            conn.execute("SELECT set_config('application_name', %s, false)",
                         [f"oracle writer since {since} pid {os.getpid()}"[:63]])
            for name, value in (("idle_session_timeout", max(1, int(self.stuck_after * 1000))), *TCP_KEEPALIVE.items()):
                try:
                    conn.execute(f"SET {name} = {int(value)}")
                except psycopg.Error:  # a server before PostgreSQL 14 has no idle_session_timeout
                    pass
        except BaseException:
            conn.close()
            raise
        self._since = since
        self.lost = False
        stop = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(conn, stop), name="oracle-writer-heartbeat", daemon=True)
        beat.start()
        self._beat = (beat, stop)
        return conn

    def _heartbeat(self, conn: "psycopg.Connection", stop: threading.Event) -> None:
        """Keep the holding session from looking idle while this engine runs; a frozen engine stops beating."""
        import psycopg

        while not stop.wait(self.stuck_after / 6):
            try:
                conn.execute("SELECT 1")
            except psycopg.Error:
                self.lost = True
                return

    def _busy(self, conn: "psycopg.Connection") -> str:
        """Who holds the lock and since when, for the refusal (PostgreSQL shows another role's sessions only to
        a superuser or pg_read_all_stats: then the holder is "another session")."""
        import psycopg

        holder = "another session"
        since = "an unknown time"
        try:
            found = conn.execute("SELECT hashtextextended(%s, 0)", [WRITER_LOCK]).fetchone()
            key = int(found[0]) if found else 0
            row = conn.execute(
                "SELECT a.pid, a.application_name, coalesce(host(a.client_addr), 'this machine'), a.state_change"
                " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'"
                " AND l.granted AND l.objsubid = 1 AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid"
                " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) LIMIT 1",
                [(key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF]).fetchone()
        except psycopg.Error:
            row = None
        if row is not None:
            pid, app, addr, changed = row
            if app and app.startswith("oracle writer since "):
                since = app.split()[3]
                holder = f"an Oracle engine, pid {app.split()[5] if len(app.split()) > 5 else '?'} from {addr}"
                reclaim = (f" (a stopped engine's lock is reclaimed after {self.stuck_after:.0f} s without a"
                           " heartbeat, a dead one's at once)")
            else:
                since = changed.strftime("%Y-%m-%dT%H:%M:%SZ") if changed else since
                holder = f"PostgreSQL backend {pid}, application {app!r} from {addr}"
                reclaim = (f" (not an Oracle engine: it keeps the lock until its session ends;"
                           f" SELECT pg_terminate_backend({pid}) ends it)")
        else:
            reclaim = ""
        return (f"another engine holds the writer lock since {since} ({holder}){reclaim}; waited {self.wait:.0f} s"
                " and nothing was written: retry in a moment")

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0 and self._conn is not None:
            conn, self._conn = self._conn, None
            if self._beat is not None:
                beat, stop = self._beat
                self._beat = None
                stop.set()
                beat.join()
            try:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [WRITER_LOCK])
            except Exception:  # noqa: BLE001 - the session is gone: so is the lock (closing alone releases it)
                self.lost = True
            finally:
                conn.close()
            if self.lost:
                import sys

                print(f"oracle: this engine lost the PostgreSQL writer lock while holding it (held since"
                      f" {self._since}; stopped for more than {self.stuck_after:.0f} s?): another engine may"
                      " have written meanwhile; the next sync compares the files with the index", file=sys.stderr)
            self._since = None
        self._thread_lock.release()

    def held_elsewhere(self) -> bool:
        """Whether another session holds the lock now (for status and tests)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
            got = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [WRITER_LOCK]).fetchall()[0][0]
            if got:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [WRITER_LOCK])
            return not got
