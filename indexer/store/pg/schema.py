"""The PostgreSQL store's tables, created and brought up to date by versioned, forward-only migrations.

Each migration runs once, in its own transaction, under a transaction-level advisory lock, so engines that
start together against an empty database do not race: the second waits, then finds the version applied.
`oracle_migrations` records what ran and when. A migration is never edited once released; a change of
schema is a new entry at the end of MIGRATIONS.

Text columns use the "C" collation: ORDER BY on ids, paths and dates then compares code points, as SQLite's
BINARY does, so both stores page and break ties identically (a database created with a locale collation
would sort "B" after "a").

The keyword index (`postings`, `fts_docs`, `fts_stats`) is FTS5's, spelt out: one row per (table, term,
section) with the term's count in each column and its positions, each section's length in tokens, and each
table's row and token totals; indexer/store/pg/keyword.py computes FTS5's bm25 from them. Table 0 is the
section word table (documents_fts), 1 the whole-note table (notes_fts). Vectors live in `chunk_vectors`,
which indexer/store/pg/vectors.py creates with the embedding model's dimension.
"""

from __future__ import annotations

from oracle_indexer.store.errors import DatabaseUnavailable
from oracle_indexer.store.pg.db import Database

MIGRATE_LOCK = "oracle:migrate"
WRITER_LOCK = "oracle:writer"

_V1 = """
CREATE TABLE meta (key text COLLATE "C" PRIMARY KEY, value text);
CREATE TABLE files (
    rowid bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    path text COLLATE "C" PRIMARY KEY, type text COLLATE "C" NOT NULL, title text COLLATE "C", mtime_ns bigint,
    size bigint, file_hash text COLLATE "C", chunk_count integer, warnings text, indexed_at double precision,
    body_hash text COLLATE "C", lang text COLLATE "C", lang_from text COLLATE "C", translation_key text COLLATE "C",
    last_verified text COLLATE "C", review_after text COLLATE "C"
);
CREATE INDEX files_lang ON files(lang_from, lang);
CREATE TABLE documents (
    rowid bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id text COLLATE "C" PRIMARY KEY, file text COLLATE "C" NOT NULL, type text COLLATE "C" NOT NULL,
    kind text COLLATE "C" NOT NULL, title text COLLATE "C", heading text COLLATE "C", content text COLLATE "C",
    line_start integer, line_end integer, content_hash text COLLATE "C", embed_key text COLLATE "C",
    concepts text COLLATE "C", project text COLLATE "C", date text COLLATE "C", parent_id text COLLATE "C",
    position integer, in_vector integer NOT NULL DEFAULT 0, timestamp text COLLATE "C"
);
CREATE INDEX documents_file ON documents(file);
CREATE INDEX documents_type ON documents(type);
CREATE INDEX documents_in_vector ON documents(in_vector);
CREATE INDEX documents_content_hash ON documents(content_hash);
CREATE INDEX documents_parent ON documents(parent_id);
CREATE TABLE doc_concepts (
    doc_id text COLLATE "C" NOT NULL, concept text COLLATE "C" NOT NULL, PRIMARY KEY (concept, doc_id)
);
CREATE INDEX doc_concepts_doc ON doc_concepts(doc_id);
CREATE TABLE postings (
    tbl smallint NOT NULL, term text COLLATE "C" NOT NULL, doc bigint NOT NULL, tf integer[] NOT NULL,
    pos integer[] NOT NULL, PRIMARY KEY (tbl, term, doc)
);
CREATE INDEX postings_doc ON postings(tbl, doc);
CREATE TABLE fts_docs (tbl smallint NOT NULL, doc bigint NOT NULL, len integer NOT NULL, PRIMARY KEY (tbl, doc));
CREATE TABLE fts_stats (tbl smallint PRIMARY KEY, n bigint NOT NULL, tokens bigint NOT NULL);
INSERT INTO fts_stats VALUES (0, 0, 0), (1, 0, 0);
CREATE TABLE embeddings (key text COLLATE "C" PRIMARY KEY, vector bytea NOT NULL);
CREATE TABLE ml_vectors (key text COLLATE "C" PRIMARY KEY, vector bytea NOT NULL);
CREATE TABLE skipped (path text COLLATE "C" PRIMARY KEY, reason text NOT NULL, seen_at double precision);
CREATE TABLE relations (
    file text COLLATE "C" NOT NULL, position integer NOT NULL, subject text COLLATE "C" NOT NULL,
    predicate text COLLATE "C" NOT NULL, object text COLLATE "C" NOT NULL, subject_key text COLLATE "C" NOT NULL,
    predicate_key text COLLATE "C" NOT NULL, object_key text COLLATE "C" NOT NULL, PRIMARY KEY (file, position)
);
CREATE INDEX relations_subject ON relations(subject_key);
CREATE INDEX relations_predicate ON relations(predicate_key);
CREATE INDEX relations_object ON relations(object_key);
CREATE TABLE superseded_files (file text COLLATE "C" PRIMARY KEY, target text COLLATE "C" NOT NULL);

CREATE FUNCTION oracle_append_only() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$;
CREATE TABLE search_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at double precision NOT NULL, client text, tool text,
    query text, params text, mode text, total integer, results text, latency_ms double precision, warnings text,
    cold integer
);
CREATE TABLE consult_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at double precision NOT NULL, client text, decision text,
    context text, found text, guidance text, tokens integer, latency_ms double precision, working_set_id text,
    working_set text
);
CREATE TABLE learn_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at double precision NOT NULL, client text, file text,
    title text, concepts text, project text, source text, chunk_ids text, embedded integer
);
CREATE TABLE document_access (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at double precision NOT NULL, client text, tool text,
    doc_id text, rank integer
);
CREATE TABLE feedback_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at double precision NOT NULL, client text,
    doc_id text NOT NULL, verdict text NOT NULL, note text, content_hash text
);
CREATE INDEX feedback_log_doc ON feedback_log(doc_id);
CREATE TABLE supersede_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at double precision NOT NULL, client text,
    old_ref text NOT NULL, new_ref text, reason text, action text NOT NULL
);
CREATE TABLE learn_keys (key text PRIMARY KEY, fingerprint text NOT NULL, file text, at double precision NOT NULL);
CREATE INDEX document_access_doc ON document_access(doc_id);
CREATE INDEX search_log_at ON search_log(at);
CREATE INDEX consult_log_at ON consult_log(at);
CREATE INDEX consult_log_working_set ON consult_log(working_set_id);
CREATE TRIGGER search_log_append_only BEFORE UPDATE ON search_log FOR EACH ROW EXECUTE FUNCTION oracle_append_only();
CREATE TRIGGER consult_log_append_only BEFORE UPDATE ON consult_log FOR EACH ROW EXECUTE FUNCTION oracle_append_only();
CREATE TRIGGER learn_log_append_only BEFORE UPDATE ON learn_log FOR EACH ROW EXECUTE FUNCTION oracle_append_only();
CREATE TRIGGER document_access_append_only BEFORE UPDATE ON document_access
    FOR EACH ROW EXECUTE FUNCTION oracle_append_only();
CREATE TRIGGER feedback_log_append_only BEFORE UPDATE ON feedback_log
    FOR EACH ROW EXECUTE FUNCTION oracle_append_only();
CREATE TRIGGER supersede_log_append_only BEFORE UPDATE ON supersede_log
    FOR EACH ROW EXECUTE FUNCTION oracle_append_only();
"""

# The SQLite store's schema 9 (metadata filters, indexer/notes/fields.py) and team mode
# (server/services/capabilities/team.py, server/services/capabilities/edit.py):
# every frontmatter value of every note, who (which named token) learnt, judged or superseded, and the log of
# edits and archives of existing notes. A note's fields are derived like its sections: the next sync writes them
# (a store from before this version has none, so every note is re-parsed once: files' stat and hash forgotten).
_V2 = """
CREATE TABLE note_fields (
    file text COLLATE "C" NOT NULL, field text COLLATE "C" NOT NULL, position integer NOT NULL,
    value text COLLATE "C" NOT NULL, value_key text COLLATE "C" NOT NULL, is_list integer NOT NULL,
    PRIMARY KEY (file, field, position)
);
CREATE INDEX note_fields_field ON note_fields(field, value_key);
UPDATE files SET mtime_ns = 0, file_hash = '';
ALTER TABLE learn_log ADD COLUMN author text;
ALTER TABLE feedback_log ADD COLUMN author text;
ALTER TABLE supersede_log ADD COLUMN author text;
CREATE TABLE edit_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at double precision NOT NULL, client text, author text,
    action text NOT NULL, file text NOT NULL, old_hash text, new_hash text, moved_to text, reason text
);
CREATE TRIGGER edit_log_append_only BEFORE UPDATE ON edit_log FOR EACH ROW EXECUTE FUNCTION oracle_append_only();
"""

# Working copies (issue 38, indexer/worker/workcopy.py): the database is the team's memory and every folder a
# working copy of it. `note_revisions` is each note's history, append-only (a tombstone is a revision with no
# content: the text before it stays in the history, restorable); `note_heads` the current revision of each path,
# which a sync compares with the folder; `note_conflicts` the conflict copies syncs wrote (stats reports them);
# `named_tokens` the team's named tokens (server/services/capabilities/team.py: salted HMACs, never a token in
# clear), so a token added on one machine works on all.
# `seq` orders every revision of every note: an engine that heard a NOTIFY asks for the heads above the last
# one it saw.
_V3 = """
CREATE TABLE note_revisions (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, path text COLLATE "C" NOT NULL, revision integer NOT NULL,
    hash text COLLATE "C", base text COLLATE "C", content bytea, deleted boolean NOT NULL DEFAULT false,
    author text, machine text, at double precision NOT NULL, UNIQUE (path, revision)
);
CREATE TABLE note_heads (
    path text COLLATE "C" PRIMARY KEY, revision integer NOT NULL, seq bigint NOT NULL, hash text COLLATE "C",
    deleted boolean NOT NULL DEFAULT false, author text, at double precision NOT NULL
);
CREATE INDEX note_heads_seq ON note_heads(seq);
CREATE TABLE note_conflicts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at double precision NOT NULL, path text NOT NULL,
    copy text NOT NULL, author text, machine text, kept_hash text, copy_hash text
);
CREATE TRIGGER note_revisions_append_only BEFORE UPDATE ON note_revisions
    FOR EACH ROW EXECUTE FUNCTION oracle_append_only();
CREATE TABLE named_tokens (
    name text COLLATE "C" PRIMARY KEY, access text NOT NULL, salt text NOT NULL, digest text NOT NULL,
    created text NOT NULL
);
"""

# The keyword leg's reads (issue 38, "speed at team size"): every posting of a query word was a heap fetch, rows being
# wide (positions) and a word's rows spread over the table as notes came in: at 100,000 sections ~1,600 random heap
# pages for a common word. The postings' key with their per-column counts as INCLUDE columns (and the sections'
# lengths beside their key) lets bm25 read the index alone (index-only scans); the old keys are dropped, the new
# unique indexes keep their uniqueness. Index-only scans need the visibility map current, so autovacuum visits the
# two tables after 1% of new rows instead of 20% (a first index of 100,000 sections left ~20% of postings unvacuumed).
_V4 = """
CREATE UNIQUE INDEX IF NOT EXISTS postings_cover ON postings (tbl, term, doc) INCLUDE (tf);
ALTER TABLE postings DROP CONSTRAINT IF EXISTS postings_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS fts_docs_cover ON fts_docs (tbl, doc) INCLUDE (len);
ALTER TABLE fts_docs DROP CONSTRAINT IF EXISTS fts_docs_pkey;
ALTER TABLE postings SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE fts_docs SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_scale_factor = 0.02);
"""

# Whether the working copy's own index holds what the database holds (issue 38, speed at team size: the keyword leg is
# then read from it, indexer/store/pg/local_words.py): one row, the XOR of every note's mark (rows.note_mark: the
# first 8 bytes of md5(path, 0x1F, file hash), signed), kept by a trigger on `files` whatever writes it, so the
# question costs one read of one row. The trigger's UPDATE serialises note writes on that row; they already are
# serialised (the writer lock).
_V5 = """
CREATE TABLE IF NOT EXISTS content_state (one boolean PRIMARY KEY DEFAULT true CHECK (one), state bigint NOT NULL);
CREATE OR REPLACE FUNCTION oracle_note_mark(p text, h text) RETURNS bigint LANGUAGE sql IMMUTABLE AS
    $$ SELECT ('x' || left(md5(p || chr(31) || coalesce(h, '')), 16))::bit(64)::bigint $$;
CREATE OR REPLACE FUNCTION oracle_content_state() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE change bigint := 0;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN change := change # oracle_note_mark(OLD.path, OLD.file_hash); END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN change := change # oracle_note_mark(NEW.path, NEW.file_hash); END IF;
    IF change <> 0 THEN UPDATE content_state SET state = state # change; END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER files_content_state AFTER INSERT OR DELETE OR UPDATE OF path, file_hash ON files
    FOR EACH ROW EXECUTE FUNCTION oracle_content_state();
INSERT INTO content_state (state) SELECT coalesce(bit_xor(oracle_note_mark(path, file_hash)), 0) FROM files;
"""

# (version, what it does, SQL). Append only; never edit a released entry.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "the store: notes, sections, BM25 postings, caches, relations, usage logs", _V1),
    (2, "frontmatter fields for where filters (note_fields); authors of learnings, verdicts and supersessions;"
        " edit_log", _V2),
    (3, "working copies: every note's revisions (history, tombstones), current heads, conflict copies;"
        " named tokens in the database", _V3),
    (4, "the keyword index read from its indexes alone: covering keys for postings and section lengths,"
        " autovacuum after 1% new rows", _V4),
    (5, "the content state: one row, the XOR of every note's (path, file hash) mark, kept by a trigger", _V5),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


def applied_versions(db: Database) -> list[int]:
    """The migrations this database has run, in order (none for a new database)."""
    exists = db.run("SELECT to_regclass('oracle_migrations') IS NOT NULL")[0][0]
    if not exists:
        return []
    return [v for (v,) in db.run("SELECT version FROM oracle_migrations ORDER BY version")]


def migrate(db: Database) -> list[int]:
    """Bring the database up to SCHEMA_VERSION; returns the versions applied now (none when up to date).

    A database written by a newer Oracle (a version this code does not know) is refused: running older code
    over a newer schema could corrupt it."""
    done: list[int] = []
    with db.transaction() as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (MIGRATE_LOCK,))
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception as exc:
            raise DatabaseUnavailable(
                f"the PostgreSQL store needs the pgvector extension ({exc}); install it on the server"
                " (Debian: postgresql-NN-pgvector) or have a superuser run CREATE EXTENSION vector in this"
                " database") from exc
        conn.execute(
            "CREATE TABLE IF NOT EXISTS oracle_migrations (version integer PRIMARY KEY, description text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())")
        have = {v for (v,) in conn.execute("SELECT version FROM oracle_migrations").fetchall()}
        newer = sorted(v for v in have if v > SCHEMA_VERSION)
        if newer:
            raise DatabaseUnavailable(
                f"the PostgreSQL store is at schema version {max(newer)}, newer than this Oracle knows"
                f" ({SCHEMA_VERSION}): upgrade Oracle on this machine")
        for version, description, sql in MIGRATIONS:
            if version in have:
                continue
            conn.execute(sql)
            conn.execute("INSERT INTO oracle_migrations (version, description) VALUES (%s, %s)",
                         (version, description))
            done.append(version)
    return done
