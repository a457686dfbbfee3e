"""The SQLite side of the index: files, chunks, two FTS5 tables, the embedding cache, skipped files.

- `documents_fts` (porter + unicode61) ranks words in spaced scripts with stemming;
- `documents_tri` (trigram) finds a word inside unsegmented text (Thai, Chinese, Japanese), where
  unicode61 sees a whole sentence as one token.
Both are keyed by the rowid of `documents`. WAL mode and a busy timeout let readers in other processes
carry on while one process writes. Every file's chunks change in one transaction.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # numpy only for the embedding cache (spawn -> tools/list does not need it)
    import numpy as np

from indexer.embed import text_key
from indexer.parse import Chunk, Relation, compose_embed_text, relation_key
from indexer.segment import THAI_MARKS, segment

# 2: relations and superseded_by from frontmatter (an index of version 1 re-parses every file once).
# 3: Thai segmented into words in documents_fts, whose tokenizer keeps Thai marks inside words (the
#    table is rebuilt), and metadata-only blocks folded into their neighbouring section.
SCHEMA_VERSION = "3"
# Tables whose definition changed at a schema version: dropped and rebuilt from the markdown.
_REBUILT_AT = {"3": ("documents_fts",)}
BUSY_TIMEOUT_MS = 10_000

# bm25 column weights for documents_fts(id, title, heading, content, concepts): title words count more
# (title 3 vs 2: +0.002 nDCG@10 on SciFact train with weighted fusion; see BENCHMARKS.md).
BM25_WEIGHTS = (0.0, 3.0, 1.5, 1.0, 1.0)
TIE_SLACK = 20  # rows fetched past the keyword pool, so that equal scores at the cut are all seen

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, type TEXT NOT NULL, title TEXT, mtime_ns INTEGER, size INTEGER,
    file_hash TEXT, chunk_count INTEGER, warnings TEXT, indexed_at REAL, body_hash TEXT
);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, file TEXT NOT NULL, type TEXT NOT NULL, kind TEXT NOT NULL, title TEXT,
    heading TEXT, content TEXT, line_start INTEGER, line_end INTEGER, content_hash TEXT,
    embed_key TEXT, concepts TEXT, project TEXT, date TEXT, parent_id TEXT, position INTEGER,
    in_vector INTEGER NOT NULL DEFAULT 0, timestamp TEXT
);
CREATE INDEX IF NOT EXISTS documents_file ON documents(file);
CREATE INDEX IF NOT EXISTS documents_type ON documents(type);
CREATE INDEX IF NOT EXISTS documents_in_vector ON documents(in_vector);
CREATE TABLE IF NOT EXISTS doc_concepts (doc_id TEXT NOT NULL, concept TEXT NOT NULL, PRIMARY KEY (concept, doc_id));
CREATE INDEX IF NOT EXISTS doc_concepts_doc ON doc_concepts(doc_id);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
    id UNINDEXED, title, heading, content, concepts,
    tokenize = "porter unicode61 remove_diacritics 2 tokenchars '{thai_marks}'"
);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_tri USING fts5(title, content, tokenize = 'trigram');
CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL, seen_at REAL);
CREATE INDEX IF NOT EXISTS documents_content_hash ON documents(content_hash);
CREATE TABLE IF NOT EXISTS relations (
    file TEXT NOT NULL, position INTEGER NOT NULL, subject TEXT NOT NULL, predicate TEXT NOT NULL,
    object TEXT NOT NULL, subject_key TEXT NOT NULL, predicate_key TEXT NOT NULL, object_key TEXT NOT NULL,
    PRIMARY KEY (file, position)
);
CREATE INDEX IF NOT EXISTS relations_subject ON relations(subject_key);
CREATE INDEX IF NOT EXISTS relations_predicate ON relations(predicate_key);
CREATE INDEX IF NOT EXISTS relations_object ON relations(object_key);
CREATE TABLE IF NOT EXISTS superseded_files (file TEXT PRIMARY KEY, target TEXT NOT NULL);
""".replace("{thai_marks}", THAI_MARKS)


def set_aside(path: Path, reason: Exception) -> Path:
    """Rename a database that cannot be opened (and its WAL files) out of the way; return the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.rename(Path(f"{target}{suffix}"))
    import sys

    print(f"oracle: {path} could not be opened ({reason}); moved to {target.name} and rebuilding", file=sys.stderr)
    return target


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info([{table}])")}


def _drop_changed_tables(conn: sqlite3.Connection) -> None:
    """Drop the tables whose definition changed since this index's schema version; the re-parse that
    a version change triggers (see Store._connect) fills them again."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    previous = row[0] if row else "0"
    for version, tables in _REBUILT_AT.items():
        if previous.isdigit() and int(previous) < int(version):
            for table in tables:
                conn.execute(f"DROP TABLE IF EXISTS {table}")


@dataclass(frozen=True)
class SectionFacts:
    id: str
    file: str
    kind: str
    parent_id: str | None
    content_hash: str
    body_hash: str | None  # the note's title and sections (files.body_hash): equal for identical notes
    heading: str
    line_start: int
    line_end: int


@dataclass(frozen=True)
class FileState:
    mtime_ns: int
    size: int
    file_hash: str


class Store:
    """One SQLite database per knowledge root. Cheap to open; safe to open in several processes."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._write_lock = threading.RLock()  # one connection, shared by the server's threads
        self.recovered_from: Path | None = None
        try:
            self._connect()
        except sqlite3.DatabaseError as exc:
            # The index is derived data: move the broken file aside and rebuild from the markdown.
            self.recovered_from = set_aside(path, exc)
            self._connect()

    def _connect(self) -> None:
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {check}")
            fresh = not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'documents'").fetchone()
            if not fresh:
                _drop_changed_tables(conn)
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        self.conn = conn
        if "body_hash" not in _columns(conn, "files"):  # an index from before schema version 3
            self.db["files"].add_column("body_hash", str)
        if "timestamp" not in _columns(conn, "documents"):  # an index from before note timestamps
            self.db["documents"].add_column("timestamp", str)
            with self.transaction() as c:  # re-parse every file on the next sync to fill the column
                c.execute("UPDATE files SET mtime_ns = 0, file_hash = ''")
        previous = self.get_meta("schema_version")
        if not fresh and previous != SCHEMA_VERSION:
            # Parsing gained new fields: forget the stat and hash of every file so the next sync re-parses
            # it (the embedding cache makes that cheap; chunk ids do not change).
            with self.transaction() as c:
                c.execute("UPDATE files SET mtime_ns = 0, file_hash = ''")
        self.set_meta("schema_version", SCHEMA_VERSION)
        if fresh:
            # A new (or rebuilt) index knows nothing of the vectors already stored: compare them first.
            self.set_meta("vectors_dirty", "1")

    @property
    def db(self):
        """sqlite-utils over the same connection, made on first use: importing sqlite-utils imports numpy
        (~0.15 s), which a server should not pay before its first `tools/list`."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE: take the write lock up front so two writers queue instead of deadlocking."""
        with self._write_lock:
            self._begin()
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def _begin(self) -> None:
        """BEGIN IMMEDIATE, waiting out SQLITE_BUSY_SNAPSHOT as the busy timeout waits out other writers.

        The connection is shared by threads. While one thread still steps through a SELECT, the connection
        holds that read snapshot; if another process has committed since, SQLite refuses this thread's
        BEGIN IMMEDIATE at once ("database is locked") without calling the busy handler. The read ends in
        a moment, so retry until the busy timeout (two servers and a watcher met this every few hundred
        learns in tests/test_paths.py).
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.005)

    # -- meta -------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- files ------------------------------------------------------------------------------------
    def file_states(self) -> dict[str, FileState]:
        rows = self.conn.execute("SELECT path, mtime_ns, size, file_hash FROM files")
        return {path: FileState(mtime_ns or 0, size or 0, file_hash or "") for path, mtime_ns, size, file_hash in rows}

    def touch_file(self, rel: str, mtime_ns: int, size: int) -> None:
        """Content unchanged but mtime moved (a `touch`, a checkout): remember the new stat."""
        with self.transaction() as conn:
            conn.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (mtime_ns, size, rel))

    def file_chunk_ids(self, rel: str) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT id FROM documents WHERE file = ? ORDER BY position", (rel,))]

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
    ) -> list[str]:
        """Swap a file's chunks in one transaction; return the chunk ids that disappeared.

        A chunk whose id and embedded text are unchanged keeps its vector (an edit elsewhere in the file,
        or a re-parse after a schema change, re-upserts nothing); other chunks start as not in the vector
        store, and the caller upserts them and `mark_in_vector`s.
        """
        with self.transaction() as conn:
            embedded = {
                doc_id: key
                for doc_id, key in conn.execute("SELECT id, embed_key FROM documents WHERE file = ? AND in_vector = 1", (rel,))
            }
            old_ids = self._delete_file_rows(conn, rel)
            for position, chunk in enumerate(chunks):
                embed_key = _embed_key(chunk)
                cur = conn.execute(
                    "INSERT INTO documents (id, file, type, kind, title, heading, content, line_start, line_end,"
                    " content_hash, embed_key, concepts, project, date, parent_id, position, in_vector, timestamp)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        chunk.id, chunk.file, chunk.type, chunk.kind, chunk.title, chunk.heading, chunk.content,
                        chunk.line_start, chunk.line_end, chunk.content_hash, embed_key,
                        json.dumps(list(chunk.concepts), ensure_ascii=False), chunk.project, chunk.date,
                        chunk.parent_id, position, int(embedded.get(chunk.id) == embed_key), chunk.timestamp,
                    ),
                )
                rowid = cur.lastrowid
                conn.execute(
                    "INSERT INTO documents_fts (rowid, id, title, heading, content, concepts) VALUES (?,?,?,?,?,?)",
                    (rowid, chunk.id, segment(" ".join((chunk.title, *chunk.aliases))),  # aliases: searched as titles
                     segment(chunk.heading), segment(chunk.content), " ".join(chunk.concepts)),
                )
                conn.execute(
                    "INSERT INTO documents_tri (rowid, title, content) VALUES (?,?,?)", (rowid, chunk.title, chunk.content)
                )
                conn.executemany(
                    "INSERT OR IGNORE INTO doc_concepts (doc_id, concept) VALUES (?, ?)",
                    [(chunk.id, c) for c in chunk.concepts],
                )
            conn.execute(
                "INSERT INTO files (path, type, title, mtime_ns, size, file_hash, chunk_count, warnings, indexed_at,"
                " body_hash) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET type=excluded.type,"
                " title=excluded.title, mtime_ns=excluded.mtime_ns, size=excluded.size, file_hash=excluded.file_hash,"
                " chunk_count=excluded.chunk_count, warnings=excluded.warnings, indexed_at=excluded.indexed_at,"
                " body_hash=excluded.body_hash",
                (rel, doc_type, title, state.mtime_ns, state.size, state.file_hash, len(chunks),
                 json.dumps(list(warnings), ensure_ascii=False), time.time(), body_hash(title, chunks)),
            )
            conn.executemany(
                "INSERT INTO relations (file, position, subject, predicate, object, subject_key, predicate_key,"
                " object_key) VALUES (?,?,?,?,?,?,?,?)",
                [(rel, n, r.subject, r.predicate, r.object, relation_key(r.subject), relation_key(r.predicate),
                  relation_key(r.object)) for n, r in enumerate(relations)],
            )
            if superseded_by:
                conn.execute("INSERT INTO superseded_files (file, target) VALUES (?, ?)", (rel, superseded_by))
            conn.execute("DELETE FROM skipped WHERE path = ?", (rel,))
        new_ids = {c.id for c in chunks}
        return [i for i in old_ids if i not in new_ids]

    def remove_file(self, rel: str) -> list[str]:
        """Drop a vanished file from the index; return its chunk ids for the vector store."""
        with self.transaction() as conn:
            ids = self._delete_file_rows(conn, rel)
            conn.execute("DELETE FROM files WHERE path = ?", (rel,))
            conn.execute("DELETE FROM skipped WHERE path = ?", (rel,))
        return ids

    @staticmethod
    def _delete_file_rows(conn: sqlite3.Connection, rel: str) -> list[str]:
        rows = conn.execute("SELECT rowid, id FROM documents WHERE file = ?", (rel,)).fetchall()
        if rows:
            rowids = [(r[0],) for r in rows]
            conn.executemany("DELETE FROM documents_fts WHERE rowid = ?", rowids)
            conn.executemany("DELETE FROM documents_tri WHERE rowid = ?", rowids)
            conn.executemany("DELETE FROM doc_concepts WHERE doc_id = ?", [(r[1],) for r in rows])
            conn.execute("DELETE FROM documents WHERE file = ?", (rel,))
        conn.execute("DELETE FROM relations WHERE file = ?", (rel,))
        conn.execute("DELETE FROM superseded_files WHERE file = ?", (rel,))
        return [r[1] for r in rows]

    def clear(self) -> None:
        """Forget every file and chunk (for --full); the embedding cache and logs survive."""
        with self.transaction() as conn:
            for table in ("documents", "documents_fts", "documents_tri", "doc_concepts", "files", "skipped",
                          "relations", "superseded_files"):
                conn.execute(f"DELETE FROM {table}")

    # -- skipped files ----------------------------------------------------------------------------
    def record_skip(self, rel: str, reason: str) -> list[str]:
        """A file that cannot be indexed: its reason is kept and any earlier chunks are removed."""
        ids = self.remove_file(rel)
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO skipped (path, reason, seen_at) VALUES (?,?,?) ON CONFLICT(path) DO UPDATE SET"
                " reason = excluded.reason, seen_at = excluded.seen_at",
                (rel, reason, time.time()),
            )
        return ids

    def skipped(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT path, reason FROM skipped ORDER BY path"))

    def forget_skips(self, present: Iterable[str]) -> None:
        keep = set(present)
        gone = [(p,) for p in self.skipped() if p not in keep]
        with self.transaction() as conn:
            conn.executemany("DELETE FROM skipped WHERE path = ?", gone)

    # -- embeddings -------------------------------------------------------------------------------
    def cached_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        import numpy as np

        out: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            marks = ",".join("?" * len(part))
            for key, blob in self.conn.execute(f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", part):
                out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def cache_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        import numpy as np

        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings (key, vector) VALUES (?, ?)",
                [(k, v.astype(np.float32).tobytes()) for k, v in vectors.items()],
            )

    def pending_vectors(self, limit: int | None = None) -> list[tuple[str, str, str, str, str | None]]:
        """(id, embed_key, type, file, project) of chunks not yet in the vector store."""
        sql = "SELECT id, embed_key, type, file, project FROM documents WHERE in_vector = 0 ORDER BY rowid"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return list(self.conn.execute(sql))

    def pending_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM documents WHERE in_vector = 0").fetchone()[0]

    def embed_texts(self, ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            sql = f"SELECT id, title, heading, content FROM documents WHERE id IN ({marks})"
            for cid, title, heading, content in self.conn.execute(sql, part):
                out[cid] = compose_embed_text(title, heading, content)
        return out

    def mark_in_vector(self, ids: Sequence[str], value: int = 1) -> None:
        with self.transaction() as conn:
            conn.executemany("UPDATE documents SET in_vector = ? WHERE id = ?", [(value, i) for i in ids])

    def mark_all_out_of_vector(self) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE documents SET in_vector = 0")

    # -- reads ------------------------------------------------------------------------------------
    def section_facts(self, ids: Sequence[str]) -> dict[str, "SectionFacts"]:
        """What ranking needs of each candidate (its note, kind, parent, hashes, size), without the text:
        a search groups and de-duplicates a pool of ~100 candidates but shows only a page of them."""
        out: dict[str, SectionFacts] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            sql = (
                "SELECT d.id, d.file, d.kind, d.parent_id, d.content_hash, f.body_hash, d.heading, d.line_start,"
                " d.line_end"
                f" FROM documents d LEFT JOIN files f ON f.path = d.file WHERE d.id IN ({marks})"
            )
            for row in self.conn.execute(sql, part):
                out[row[0]] = SectionFacts(*row)
        return out

    def documents_by_id(self, ids: Sequence[str]) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            for row in self.rows(f"SELECT rowid AS rowid, * FROM documents WHERE id IN ({marks})", part):
                row["concepts"] = json.loads(row["concepts"] or "[]")
                out[row["id"]] = row
        return out

    def rows(self, sql: str, args: Sequence = ()) -> list[dict]:
        """Rows as dicts through a plain execute. (sqlite-utils' `query` wraps reads in a SAVEPOINT, which
        on this shared connection collides with another thread's write transaction.)"""
        cursor = self.conn.execute(sql, list(args))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def has_thai(self) -> bool:
        """Whether any section holds Thai letters (a server then loads the Thai segmenter ahead of queries)."""
        return self.conn.execute("SELECT 1 FROM documents WHERE content GLOB '*[ก-๛]*' LIMIT 1").fetchone() is not None

    def chunk_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM documents").fetchone()[0]

    def counts(self) -> dict[str, int]:
        q = self.conn.execute
        return {
            "files": q("SELECT count(*) FROM files").fetchone()[0],
            "chunks": q("SELECT count(*) FROM documents").fetchone()[0],
            "embedded": q("SELECT count(*) FROM documents WHERE in_vector = 1").fetchone()[0],
            "cached_embeddings": q("SELECT count(*) FROM embeddings").fetchone()[0],
            "skipped": q("SELECT count(*) FROM skipped").fetchone()[0],
        }


def body_hash(title: str, chunks: Sequence[Chunk]) -> str:
    """Identity of a note's content, frontmatter aside: two notes with the same title and the same
    sections are the same note (a copy per locale, a learning saved twice), whatever their paths or dates."""
    digest = hashlib.sha256(title.encode("utf-8"))
    for chunk in chunks:
        digest.update(b"\x00" + chunk.content_hash.encode())
    return digest.hexdigest()


def _embed_key(chunk: Chunk) -> str:
    return text_key(chunk.embed_text())


@dataclass(frozen=True)
class Filters:
    """Search filters, rendered to SQL over `documents d`. Concepts match when a chunk has any of them."""

    type: str | None = None
    concepts: tuple[str, ...] = ()
    project: str | None = None
    date_from: str | None = None
    date_to: str | None = None

    @property
    def active(self) -> bool:
        return bool(self.type or self.concepts or self.project or self.date_from or self.date_to)

    def sql(self) -> tuple[str, list]:
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
        return (" AND ".join(clauses) or "1"), args


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
        pattern = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        sources.append(_Source(
            "documents d WHERE (d.content LIKE ? ESCAPE '\\' OR d.title LIKE ? ESCAPE '\\')",
            "0.5",
            [pattern, pattern],
            None,
        ))
    return sources


def _matching_rowids_sql(sources: list[_Source]) -> tuple[str, list]:
    """Every matching rowid. FTS5 tables answer alone: joining `documents` for each of tens of thousands
    of matches (a common word at 100k chunks) cost more than the MATCH itself."""
    union = " UNION ".join(
        f"SELECT rowid FROM {s.table} WHERE {s.table} MATCH ?" if s.table else f"SELECT d.rowid FROM {s.clause}"
        for s in sources
    )
    return union, [a for s in sources for a in s.args]


def _ranked_in_fts(store: Store, source: _Source, filters: Filters, limit: int) -> list[tuple[str, float]] | None:
    """The rows of `ORDER BY s DESC, d.id LIMIT limit` over the joined clause, but ranked inside FTS5 with
    only the top rows looked up in `documents`: a common word matches tens of thousands of chunks at 100k,
    and a join per match cost as much as bm25 itself. Filters become one set of rowids, checked per match
    (`+rowid` keeps SQLite from turning it into one FTS5 lookup per rowid). None when equal scores at the
    cut run past the extra rows fetched, as only the join can order those by id."""
    assert source.table is not None
    where, filter_args = filters.sql()
    restrict = f" AND +rowid IN (SELECT d.rowid FROM documents d WHERE {where})" if filters.active else ""
    fetch = limit + TIE_SLACK
    rows = store.conn.execute(
        f"SELECT rowid, {source.score} AS s FROM {source.table} WHERE {source.table} MATCH ?{restrict}"
        " ORDER BY s DESC LIMIT ?",
        [*source.args, *(filter_args if filters.active else []), fetch],
    ).fetchall()
    if len(rows) == fetch and rows[-1][1] >= rows[limit - 1][1]:
        return None
    marks = ",".join("?" * len(rows))
    ids = dict(store.conn.execute(f"SELECT rowid, id FROM documents WHERE rowid IN ({marks})", [r for r, _ in rows]))
    if len(ids) < len(rows):
        return None
    return sorted(((ids[r], s) for r, s in rows), key=lambda kv: (-kv[1], kv[0]))[:limit]


def keyword_search(
    store: Store,
    fts_match: str | None,
    trigram_match: str | None,
    like_terms: Sequence[str],
    filters: Filters,
    limit: int,
) -> tuple[list[tuple[str, float]], int]:
    """Top `limit` (id, score) by summed keyword score across sources, and the true number of matches."""
    sources = _keyword_sources(fts_match, trigram_match, like_terms)
    if not sources:
        return [], 0
    where, filter_args = filters.sql()
    scores: dict[str, float] = {}
    for source in sources:
        rows = _ranked_in_fts(store, source, filters, limit) if source.table else None
        if rows is None:
            rows = store.conn.execute(
                f"SELECT d.id, {source.score} AS s FROM {source.clause} AND {where} ORDER BY s DESC, d.id LIMIT ?",
                [*source.args, *filter_args, limit],
            ).fetchall()
        for doc_id, value in rows:
            scores[doc_id] = scores.get(doc_id, 0.0) + float(value)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    union, union_args = _matching_rowids_sql(sources)
    if filters.active:
        sql = f"SELECT count(*) FROM documents d WHERE d.rowid IN ({union}) AND {where}"
    else:
        sql = f"SELECT count(*) FROM ({union})"
    total = store.conn.execute(sql, [*union_args, *filter_args]).fetchone()[0]
    return ranked, int(total)


def keyword_matching_ids(
    store: Store,
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
    id_of = dict(store.conn.execute(f"SELECT rowid, id FROM documents WHERE id IN ({marks})", list(ids)))
    rowids = list(id_of)
    marks = ",".join("?" * len(rowids))
    found: set[str] = set()
    for s in sources:
        if s.table:
            sql = f"SELECT rowid FROM {s.table} WHERE {s.table} MATCH ? AND +rowid IN ({marks})"
        else:
            sql = f"SELECT d.rowid FROM {s.clause} AND d.rowid IN ({marks})"
        found.update(id_of[r] for (r,) in store.conn.execute(sql, [*s.args, *rowids]))
    return found


def terms_matched(store: Store, terms: Sequence[str], ids: Sequence[str]) -> dict[str, int]:
    """How many of `terms` (quoted FTS5 strings) each of `ids` contains in the word table: one MATCH per
    term, over the few ids asked about."""
    if not terms or not ids:
        return {}
    marks = ",".join("?" * len(ids))
    id_of = dict(store.conn.execute(f"SELECT rowid, id FROM documents WHERE id IN ({marks})", list(ids)))
    counts = dict.fromkeys(id_of.values(), 0)
    marks = ",".join("?" * len(id_of))
    sql = f"SELECT rowid FROM documents_fts WHERE documents_fts MATCH ? AND +rowid IN ({marks})"
    for term in terms:
        for (rowid,) in store.conn.execute(sql, [term, *id_of]):
            counts[id_of[rowid]] += 1
    return counts


def filtered_ids(store: Store, ids: Sequence[str], filters: Filters) -> set[str]:
    """Which of `ids` exist in the index and pass the filters (vector hits are checked here). The ids drive
    the lookup (CROSS JOIN fixes the order): left to itself SQLite walked every chunk of the filtered type
    or concept instead, 2-7 times slower at 100k chunks."""
    if not ids:
        return set()
    where, args = filters.sql()
    values = ",".join(["(?)"] * len(ids))
    rows = store.conn.execute(
        f"WITH v(id) AS (VALUES {values}) SELECT d.id FROM v CROSS JOIN documents d ON d.id = v.id WHERE {where}",
        [*ids, *args],
    )
    return {r[0] for r in rows}


def count_embedded(store: Store, filters: Filters) -> int:
    where, args = filters.sql()
    return store.conn.execute(f"SELECT count(*) FROM documents d WHERE d.in_vector = 1 AND {where}", args).fetchone()[0]
