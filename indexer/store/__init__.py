"""The store: every SQL statement of the project lives below this folder.

- sqlite/: the embedded store (SQLite FTS5 + ChromaDB or the exact vector leg), usage logs in their own file;
- pg/: the same on PostgreSQL with pgvector, for a team;
- rows.py: the frozen row types both return; backends.py: which store a Settings opens.
"""
