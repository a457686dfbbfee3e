"""The index's tables, how a connection is opened, and how an older index is brought up to date.

Names: a row of `documents` is a *section* (a heading's text, or a principle's bullet) of a *note* (a
markdown file, a row of `files`). The table keeps its historical name `documents`; code says section.

- `documents_fts` (porter + unicode61) ranks words in spaced scripts with stemming;
- `documents_tri` (trigram) finds a word inside unsegmented text (Thai, Chinese, Japanese), where
  unicode61 sees a whole sentence as one token.
Both are keyed by the rowid of `documents`. `notes_fts` holds each note whole (title, and the text of its
sections without the principle bullets that repeat them), keyed by the rowid of `files`: search reads it
for the keyword evidence of a note as a whole (server/services/capabilities/search/pipeline.py,
scoring.with_note_evidence). WAL mode and a busy timeout let readers in other processes (and this process's
per-thread readers) carry on while one connection writes.

Why the DDL is hand-written and sqlite-utils does column migrations only: the two FTS5
tables hold *segmented* text (Thai split into words, aliases folded into the title), not a copy of
`documents`' columns, so sqlite-utils' `enable_fts` (an external-content table kept by triggers) cannot
express them; and one script of `CREATE ... IF NOT EXISTS` is the whole schema in one place, readable next
to the queries that depend on it. sqlite-utils adds the columns older indexes lack (`add_column`); it is
imported only then, because it imports numpy (~0.2 s under load), and every `oracle serve` opens its index
before it answers the MCP handshake. "Which columns does this table have" is one `PRAGMA table_info`.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from oracle_indexer.notes.segment import THAI_MARKS
from oracle_indexer.safe_write import private_file
from oracle_indexer.store.errors import StoreClosed

# 2: relations and superseded_by from frontmatter (an index of version 1 re-parses every file once).
# 3: Thai segmented into words in documents_fts, whose tokenizer keeps Thai marks inside words (the
#    table is rebuilt), and metadata-only blocks folded into their neighbouring section.
# 4: one tag normaliser: a list item "ops;deploy" is two tags, as the same string was (re-parse only).
# 5: notes_fts, a word table of whole notes (the re-parse fills it).
# 6: each note's language, where it came from and its translations' key (files.lang, lang_from, translation_key).
# 7: Chinese and Japanese runs indexed as overlapping character pairs in the word tables (re-parse only).
# 8: each note's last_verified and review_after from frontmatter (files; indexer/notes/freshness.py; re-parse only).
# 9: every frontmatter value in note_fields, for `where` filters (indexer/notes/fields.py; re-parse only).
# 10: `[[Note\|alias]]` in a table links to Note, not `Note\` (relations; re-parse only).
SCHEMA_VERSION = "10"
# Tables whose definition changed at a schema version: dropped and rebuilt from the markdown.
_REBUILT_AT = {"3": ("documents_fts",)}
BUSY_TIMEOUT_MS = 10_000
# The word tables' tokenizer; indexer/store/pg/tokens.py tokenises with this very string for the PostgreSQL store.
WORD_TOKENIZE = f"porter unicode61 remove_diacritics 2 tokenchars '{THAI_MARKS}'"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, type TEXT NOT NULL, title TEXT, mtime_ns INTEGER, size INTEGER,
    file_hash TEXT, chunk_count INTEGER, warnings TEXT, indexed_at REAL, body_hash TEXT,
    lang TEXT, lang_from TEXT, translation_key TEXT, last_verified TEXT, review_after TEXT
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
-- What a search reads of sections without their text, which the table's rows hold: each candidate's facts
-- (store.section_facts: 100 random sections 0.7 -> 0.3 ms on nat-brain) and, after every commit, the list of
-- embedded sections the exact vector leg ranks (indexer/store/sqlite/exact.py: 14 -> 9 ms). documents_facts was
-- its first form.
DROP INDEX IF EXISTS documents_facts;
CREATE INDEX IF NOT EXISTS documents_sections ON documents(id, in_vector, embed_key, file, kind, parent_id,
    content_hash, heading, line_start, line_end);
CREATE TABLE IF NOT EXISTS doc_concepts (doc_id TEXT NOT NULL, concept TEXT NOT NULL, PRIMARY KEY (concept, doc_id));
CREATE INDEX IF NOT EXISTS doc_concepts_doc ON doc_concepts(doc_id);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
    id UNINDEXED, title, heading, content, concepts,
    tokenize = "{word_tokenize}"
);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_tri USING fts5(title, content, tokenize = 'trigram');
CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(
    title, body,
    tokenize = "{word_tokenize}"
);
CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL);
-- multilingual vectors (indexer/store/sqlite/multilingual.py), keyed like embeddings by the embedded text's hash
CREATE TABLE IF NOT EXISTS ml_vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL);
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
-- one row per frontmatter value (indexer/notes/fields.py): `where` filters read these, never the files
CREATE TABLE IF NOT EXISTS note_fields (
    file TEXT NOT NULL, field TEXT NOT NULL, position INTEGER NOT NULL, value TEXT NOT NULL,
    value_key TEXT NOT NULL, is_list INTEGER NOT NULL, PRIMARY KEY (file, field, position)
);
CREATE INDEX IF NOT EXISTS note_fields_field ON note_fields(field, value_key);
""".replace("{word_tokenize}", WORD_TOKENIZE)

# Every table that holds what the markdown says (for --full): the embedding cache and meta survive.
CONTENT_TABLES = ("documents", "documents_fts", "documents_tri", "notes_fts", "doc_concepts", "files", "skipped",
                  "relations", "superseded_files", "note_fields")


def set_aside(path: Path, reason: Exception) -> Path:
    """Rename a database that cannot be opened (and its WAL files) out of the way; return the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.rename(Path(f"{target}{suffix}"))
    print(f"oracle: {path} could not be opened ({reason}); moved to {target.name} and rebuilding", file=sys.stderr)
    return target


# -- the statement trace -----------------------------------------------------------------------------------
class Connection(sqlite3.Connection):
    """sqlite3's connection, weakly referable (the C type is not), so the statement trace finds every open one."""


_OPEN: weakref.WeakSet[Connection] = weakref.WeakSet()
_TRACES: list[tuple[list[str], bool]] = []  # (statements, with nested ones)
_TRACE_LOCK = threading.Lock()


def _record(sql: str) -> None:
    nested = sql.startswith("--")  # run by SQLite itself for a statement (FTS5's reads of its tables, a trigger)
    for statements, with_nested in tuple(_TRACES):
        if with_nested or not nested:
            statements.append(sql)  # list.append holds the GIL: safe from every thread


def _set_trace(conn: sqlite3.Connection, on: bool) -> None:
    try:
        conn.set_trace_callback(_record if on else None)
    except sqlite3.ProgrammingError:  # closed meanwhile
        pass


def opened(conn: Connection) -> Connection:
    """Register a new connection of the store (index, logs, exact and multilingual readers) with the trace."""
    with _TRACE_LOCK:
        _OPEN.add(conn)
        if _TRACES:
            _set_trace(conn, True)
    return conn


@contextmanager
def trace_statements(nested: bool = False) -> Iterator[list[str]]:
    """Every SQL statement the store's SQLite connections run, on any thread, while the block lasts, in order:
    how many trips a request makes to the store (benchmarks/statements.py; tests/unit/test_statements.py caps a
    search's). sqlite3's `set_trace_callback`, as sqlite-utils and datasette trace; installed only while a trace
    is open, so no request pays for it otherwise. `nested`: the statements SQLite runs inside one of ours too
    (FTS5 reading its own tables, `-- `-prefixed), which are not trips to the store but its work."""
    statements: list[str] = []
    entry = (statements, nested)
    with _TRACE_LOCK:
        _TRACES.append(entry)
        if len(_TRACES) == 1:
            for conn in list(_OPEN):
                _set_trace(conn, True)
    try:
        yield statements
    finally:
        with _TRACE_LOCK:
            _TRACES.remove(entry)
            if not _TRACES:
                for conn in list(_OPEN):
                    _set_trace(conn, False)


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit BEGIN IMMEDIATE), WAL, busy timeout; the file
    (and its -wal and -shm) readable by its owner alone."""
    private_file(path)
    conn = opened(sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                  check_same_thread=False, factory=Connection))
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def connect_reader(path: Path) -> sqlite3.Connection:
    """A read connection for one thread: WAL lets it read while another connection writes, and
    `query_only` makes a write through it an error instead of a second, unserialised writer."""
    conn = opened(sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                  check_same_thread=False, factory=Connection))
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = 1")
    except BaseException:
        conn.close()
        raise
    return conn


CLOSE_WAIT_SECONDS = 5.0  # how long close() lets reads in flight finish before closing their connections


class ThreadReaders:
    """One `query_only` WAL read connection per thread for one database file (the index, the logs).

    A connection shared by threads serialised every read on its mutex and let one thread's unfinished
    statement hold a snapshot that another thread's BEGIN IMMEDIATE then failed on. Readers of threads that
    ended are closed when the next reader opens; `close()` waits for reads in flight, then refuses new ones
    with StoreClosed instead of letting them meet "Cannot operate on a closed database".
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._gate = threading.Condition()
        self._active = 0
        self._closed = False
        self._local = threading.local()
        self._open: list[tuple[threading.Thread, sqlite3.Connection]] = []

    @property
    def closed(self) -> bool:
        return self._closed

    def _mine(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect_reader(self.path)
            self._local.conn = conn
            with self._gate:
                dead = [c for t, c in self._open if not t.is_alive()]
                self._open = [(t, c) for t, c in self._open if t.is_alive()]
                self._open.append((threading.current_thread(), conn))
            for c in dead:  # their threads are gone, and with them the only code that used them
                c.close()
        return conn

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """This thread's read connection, counted as in flight until the block ends."""
        with self._gate:
            if self._closed:
                raise StoreClosed(f"{self.path.name} is closed: this process is shutting down")
            self._active += 1
        try:
            yield self._mine()
        finally:
            with self._gate:
                self._active -= 1
                if not self._active:
                    self._gate.notify_all()

    def fetch(self, sql: str, args: Sequence = ()) -> list[tuple]:
        """Every row of one read. Fetching all rows ends the statement, so the connection never keeps an
        old snapshot open between calls."""
        with self.reading() as conn:
            return conn.execute(sql, list(args)).fetchall()

    def fetch_dicts(self, sql: str, args: Sequence = ()) -> list[dict]:
        with self.reading() as conn:
            cursor = conn.execute(sql, list(args))
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def close(self) -> None:
        """Refuse new reads, let those in flight finish (up to CLOSE_WAIT_SECONDS), close every reader."""
        with self._gate:
            self._closed = True
            self._gate.wait_for(lambda: self._active == 0, timeout=CLOSE_WAIT_SECONDS)
            readers, self._open = self._open, []
        for _, conn in readers:
            conn.close()


def _drop_changed_tables(conn: sqlite3.Connection) -> None:
    """Drop the tables whose definition changed since this index's schema version; the re-parse that
    a version change triggers (see `create_or_migrate`) fills them again."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    previous = row[0] if row else "0"
    for version, tables in _REBUILT_AT.items():
        if previous.isdigit() and int(previous) < int(version):
            for table in tables:
                conn.execute(f"DROP TABLE IF EXISTS {table}")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The table's column names (none when the table does not exist)."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _add_column(conn: sqlite3.Connection, table: str, column: str) -> None:
    """A text column an older index lacks."""
    import sqlite_utils

    sqlite_utils.Database(conn)[table].add_column(column, str)  # type: ignore[union-attr]


def create_or_migrate(conn: sqlite3.Connection) -> tuple[bool, bool]:
    """Check the file, create what is missing, add columns older indexes lack.

    Returns (fresh, reparse): `fresh` when the index was empty (it then knows nothing of the vectors
    already stored), `reparse` when parsing gained fields since this index was written, so every file's
    stat and hash must be forgotten and the next sync re-parses it (the embedding cache makes that cheap;
    section ids do not change). Raises sqlite3.DatabaseError for a file that is not a database; the page-level
    integrity check is the Store's (`Store._check`, at open or deferred to `Store.verify`).
    """
    fresh = not _columns(conn, "documents")
    if not fresh:
        _drop_changed_tables(conn)
    conn.executescript(SCHEMA)
    reparse = False
    if "body_hash" not in _columns(conn, "files"):  # an index from before schema version 3
        _add_column(conn, "files", "body_hash")
    # lang...: before schema version 6; last_verified, review_after: before 8 (the re-parse fills them)
    for column in ("lang", "lang_from", "translation_key", "last_verified", "review_after"):
        if column not in _columns(conn, "files"):
            _add_column(conn, "files", column)
    conn.execute("CREATE INDEX IF NOT EXISTS files_lang ON files(lang_from, lang)")  # after the columns exist
    if "timestamp" not in _columns(conn, "documents"):  # an index from before note timestamps
        _add_column(conn, "documents", "timestamp")
        reparse = True
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if not fresh and (row[0] if row else None) != SCHEMA_VERSION:
        reparse = True
    return fresh, reparse
