"""What the store raises, by one name whichever backend raised it, so code above the store catches errors without
importing a backend or a driver (pyproject.toml [tool.importlinter])."""

from __future__ import annotations

import sqlite3

# What a failed SQLite statement raises (a write lock held past the busy timeout, a read-only file): the worker
# catches it by this name, so nothing outside the store imports the driver.
StoreError = sqlite3.Error


class StoreClosed(RuntimeError):
    """The store (or the logs) was closed: the process is shutting down. Raised instead of sqlite3's
    "Cannot operate on a closed database" from a connection closed under a running request."""


class VectorStoreUnavailable(RuntimeError):
    """The vector store (ChromaDB, pgvector) could not be opened or answered with an error: callers fall back to
    the keyword leg with a warning."""


class DatabaseUnavailable(RuntimeError):
    """ORACLE_DATABASE_URL is wrong, the server cannot be reached, or a package is missing; the message says
    what to do."""

    error_kind = "unavailable"  # what it means to a caller (server/services/vocabulary/errors.py: classify)


class Conflict(Exception):
    """The head moved since the caller read it (another engine committed first): read again and decide again."""
