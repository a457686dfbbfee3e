"""The PostgreSQL store, for a team (ORACLE_DATABASE_URL or oracle.toml's [database] url): notes, sections,
the keyword index (FTS5's bm25 over a postings table), vectors (pgvector, HNSW, cosine), relations,
supersessions, feedback and usage logs in one database that several engines share.

- db.py: the connection pool, URL checks, the `?` -> `%s` bridge for the SQLite store's reads;
- schema.py: versioned, forward-only migrations;   - store.py: PgStore (reads, writes, writer lock);
- keyword.py: bm25 in SQL;  - vectors.py: pgvector;  - logs.py: usage logs;  - multilingual.py: that cache.
psycopg is imported only when the store is used: an embedded Oracle never loads it.
"""
