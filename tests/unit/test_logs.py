"""Search and consult logs are written off the request path, in batches, and nothing queued is lost."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from oracle_indexer.store.sqlite.logs import Logs
from oracle_indexer.store.timing import FLUSH_INTERVAL


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


def test_other_processes_see_rows_within_the_flush_interval(tmp_path: Path, make_oracle) -> None:
    """A started Oracle's maintenance worker writes the queue every FLUSH_INTERVAL (Logs has no thread)."""
    (tmp_path / "root").mkdir()
    oracle = make_oracle(tmp_path / "root", tmp_path / "data").start(sync=False)
    log_searches(oracle.logs, 5)
    deadline = time.monotonic() + FLUSH_INTERVAL + 10  # generous: a loaded machine delays the worker
    while rows(oracle.logs.path, "search_log") < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rows(oracle.logs.path, "search_log") == 5


def test_an_oracle_nobody_started_writes_its_queue_in_bounded_batches(tmp_path: Path) -> None:
    from oracle_indexer.store.sqlite.logs import MAX_QUEUED

    logs = Logs(tmp_path / "logs.db")
    try:
        log_searches(logs, MAX_QUEUED // 2 - 1)  # two queued batches a search: rows and document accesses
        assert rows(tmp_path / "logs.db", "search_log") == 0 and logs.queued()
        log_searches(logs, 1)
        assert rows(tmp_path / "logs.db", "search_log") == MAX_QUEUED // 2 and not logs.queued()
    finally:
        logs.close()


def test_per_hour_counts_the_last_two_days_by_utc_hour(tmp_path: Path) -> None:
    logs = Logs(tmp_path / "logs.db")
    try:
        log_searches(logs, 2)
        logs.flush()
        now = time.time()
        # Two rows an hour back, one three days back (outside the 48 hours, inside per_day's 30 days).
        for at in (now - 3600, now - 3600, now - 3 * 86400):
            logs.conn.execute("INSERT INTO search_log (at, client, tool, query, params, mode, total, results,"
                              " latency_ms, warnings) VALUES (?, 'test', 'search', 'q', '{}', 'fts', 0, '[]', 1, '[]')",
                              (at,))
        hours = logs.per_hour("search_log")
        hour = lambda t: time.strftime("%Y-%m-%dT%H", time.gmtime(t))  # noqa: E731
        assert sum(r["count"] for r in hours) == 4
        assert {"hour": hour(now - 3600), "count": 2} in hours
        assert hours == sorted(hours, key=lambda r: r["hour"]) and hours[-1]["hour"] == hour(now)
        assert sum(r["count"] for r in logs.per_day("search_log")) == 5
        assert set(logs.overview()["per_hour"]) == {"searches", "consultations", "learnings"}
    finally:
        logs.close()


def test_a_server_leaves_retention_to_its_worker(tmp_path: Path) -> None:
    """Retention scans whole logs (~0.1 s at 1M rows): `oracle serve` opens its logs with prune=False, before its
    handshake, and its worker's first tick applies it; a one-shot command (the default) prunes at open."""
    path = tmp_path / "logs.db"
    Logs(path).close()

    def add_old_searches(n: int) -> None:  # rows from 1970: far beyond any retention
        conn = sqlite3.connect(path)
        conn.executemany("INSERT INTO search_log (at, query) VALUES (0, ?)", [(f"old {i}",) for i in range(n)])
        conn.commit()
        conn.close()

    add_old_searches(3)
    served = Logs(path, retention_days=30, prune=False)
    try:
        assert rows(path, "search_log") == 3  # nothing deleted at open
        served.tick()
        assert rows(path, "search_log") == 0  # the first tick applied retention
    finally:
        served.close()
    add_old_searches(2)
    Logs(path, retention_days=30).close()
    assert rows(path, "search_log") == 0  # pruned at open
