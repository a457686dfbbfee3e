"""The team's named tokens in the PostgreSQL store (schema 3, `named_tokens`), so `oracle token add` on one machine
works on every engine and a revocation reaches them all (server/services/capabilities/team.py decides; this holds the
SQL). Rows are what tokens.json held: a name, its access, a random salt and HMAC-SHA256(salt, token); never a token."""

from __future__ import annotations

from collections.abc import Sequence

from oracle_indexer.store.pg.db import Database, _safe, database
from oracle_indexer.store.pg.schema import migrate

Row = tuple[str, str, str, str, str]  # name, access, salt (hex), digest (hex), created (ISO)


class PgTokenTable:
    """The `named_tokens` table of one team database (the TokenTable contract, indexer/store/protocols.py): opened
    with the schema migrated; DatabaseUnavailable when the server cannot be reached."""

    def __init__(self, url: str) -> None:
        self.db = database(url)
        try:
            migrate(self.db)
        except BaseException:
            self.db.release()
            raise
        self.where = f"the team store {_safe(url)} (table named_tokens)"

    def rows(self) -> list[Row]:
        return rows(self.db)

    def insert(self, row: Row) -> bool:
        return insert(self.db, row)

    def insert_missing(self, entries: Sequence[Row]) -> int:
        return insert_missing(self.db, entries)

    def delete(self, name: str) -> Row | None:
        return delete(self.db, name)

    def release(self) -> None:
        self.db.release()


def rows(db: Database) -> list[Row]:
    return [tuple(r) for r in db.run("SELECT name, access, salt, digest, created FROM named_tokens ORDER BY name")]


def insert(db: Database, row: Row) -> bool:
    """Add a token; False when the name is taken (nothing written)."""
    with db.connection() as conn:
        done = conn.execute("INSERT INTO named_tokens (name, access, salt, digest, created) VALUES (%s,%s,%s,%s,%s)"
                            " ON CONFLICT (name) DO NOTHING", list(row))
        return done.rowcount == 1


def insert_missing(db: Database, entries: Sequence[Row]) -> int:
    """Add the entries whose names the table lacks (tokens.json brought in once); how many were added."""
    added = 0
    for row in entries:
        added += insert(db, row)
    return added


def delete(db: Database, name: str) -> Row | None:
    """Remove the token named `name`; its row, or None when there was none."""
    with db.connection() as conn:
        row = conn.execute("DELETE FROM named_tokens WHERE name = %s RETURNING name, access, salt, digest, created",
                           [name]).fetchone()
    return (row[0], row[1], row[2], row[3], row[4]) if row else None
