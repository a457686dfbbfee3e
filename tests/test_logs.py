"""Search and consult logs are written off the request path, in batches, and nothing queued is lost."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from server.logs import FLUSH_INTERVAL, Logs


def rows(path: Path, table: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


def log_searches(logs: Logs, n: int) -> None:
    for i in range(n):
        logs.log_search("test", "search", f"query {i}", {}, "fts", 1, [(f"c_{i}", 1.0)], 1.0, [])


def test_close_writes_every_queued_row(tmp_path: Path) -> None:
    logs = Logs(tmp_path / "logs.db")
    log_searches(logs, 200)
    logs.log_consult("test", "decide", None, [{"id": "c_1"}], "guidance", 10, 1.0)
    logs.close()
    assert rows(tmp_path / "logs.db", "search_log") == 200
    assert rows(tmp_path / "logs.db", "consult_log") == 1
    assert rows(tmp_path / "logs.db", "document_access") == 201


def test_this_process_reads_its_own_writes_at_once(tmp_path: Path) -> None:
    logs = Logs(tmp_path / "logs.db")
    try:
        log_searches(logs, 3)
        assert logs.counts()["search_log"] == 3 and len(logs.recent("search_log")) == 3
    finally:
        logs.close()


def test_other_processes_see_rows_within_the_flush_interval(tmp_path: Path) -> None:
    logs = Logs(tmp_path / "logs.db")
    try:
        log_searches(logs, 5)
        deadline = time.monotonic() + FLUSH_INTERVAL + 10  # generous: a loaded machine delays the writer
        while rows(tmp_path / "logs.db", "search_log") < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rows(tmp_path / "logs.db", "search_log") == 5
    finally:
        logs.close()
