"""The store: every SQL statement of the project lives below this folder, and only modules here import a database
driver (pyproject.toml's [tool.importlinter]); what others catch of a failed statement is `sqlite.schema.StoreError`.
`sqlite.schema.trace_statements` counts a request's trips to the store (tests/unit/test_statements.py).

- sqlite/: the embedded store (SQLite FTS5 + ChromaDB or the exact vector leg), usage logs in their own file;
- pg/: the same on PostgreSQL with pgvector, for a team;
- rows.py: the frozen row types both return; backends.py: which store a Settings opens;
- protocols.py: the contract both keep (index, vector store, usage logs, writer lock), which code above the store is
  typed against and mypy checks each backend's classes against.
"""
