"""Issue 38, item 3, the parts below the engine: what an outage's mark says, and the team's named tokens in an
outage (the last table read answers; a real PostgreSQL server of the test's own, stopped for real). The engines
themselves: tests/system/test_offline_pg.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle_indexer.store.errors import DatabaseUnavailable
from oracle_indexer.serving.team import reason_of


def test_the_mark_gives_the_cause_in_one_line() -> None:
    at_start = DatabaseUnavailable(
        "cannot connect to the PostgreSQL store at postgresql://oracle:***@db.lan:5432/oracle (ORACLE_DATABASE_URL):"
        " connection refused. Is the server running and the URL right (user, password, host, port, database)?")
    running = DatabaseUnavailable(
        "the PostgreSQL store at postgresql://db.lan/oracle (ORACLE_DATABASE_URL) cannot be reached since"
        " 2026-12-01T08:41:00Z: terminating connection due to administrator command. Nothing was read or written;"
        " Oracle reconnects by itself once the database is back")
    assert reason_of(str(at_start)) == "connection refused"
    assert reason_of(str(running)) == "terminating connection due to administrator command"
    assert reason_of("no route to host\nsecond line") == "no route to host"


def test_named_tokens_answer_from_the_last_table_read_in_an_outage(tmp_path: Path, own_pg) -> None:
    from oracle_server.services.capabilities.team import OFFLINE_COPY, token_store

    url = own_pg.new_database()
    running = token_store(url, tmp_path / "a")
    try:
        alice = running.add("alice", "write")
        bob = running.add("bob", "read")
        assert running.identify(alice).name == "alice"  # read from the database: its copy kept (digests only)
        copy = (tmp_path / "a" / OFFLINE_COPY).read_text()
        assert "alice" in copy and alice not in copy and bob not in copy
        own_pg.stop()
        restarted = token_store(url, tmp_path / "a")  # an engine started in the outage, on the same data dir
        try:
            assert restarted.identify(alice).can_write and not restarted.identify(bob).can_write
            assert restarted.identify("oracle_" + "x" * 43) is None
        finally:
            restarted.close()
        import time

        time.sleep(1.1)  # past the table's trusted age: the running engine asks the stopped database, then its copy
        assert running.identify(bob).name == "bob"
        assert token_store(url, tmp_path / "never").entries() == ()  # never read the table: knows no tokens
        with pytest.raises(DatabaseUnavailable):
            token_store(url, tmp_path / "b").add("carol", "write")  # a new token needs the database itself
        own_pg.start()  # back: the table itself answers again (asked at most once a second meanwhile)
        later = token_store(url, tmp_path / "c")
        try:
            deadline = time.monotonic() + 60
            while {e.name for e in later.entries()} != {"alice", "bob"}:
                assert time.monotonic() < deadline, "the token table never answered again"
                time.sleep(0.2)
        finally:
            later.close()
    finally:
        running.close()
