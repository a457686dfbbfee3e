"""Issue 26, should-fix: a full data dir. A verdict that cannot be recorded is a 507 (Insufficient Storage) with a
message, never a 500; stats (and every other read) still answer, with rows they could not write left queued; the
server stops cleanly, without a traceback.

Two real faults, no test double: a real `oracle serve --http` whose data dir is a small tmpfs filled to the last
block (needs root with CAP_SYS_ADMIN, else skipped with the reason), and, everywhere, SQLite's own limit on the logs
database's size (`PRAGMA max_page_count`), which makes SQLite answer SQLITE_FULL exactly as on a full disk.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from _corpus import two_note_oracle, write
from _procs import serve_http, stop_process

PROJECT = Path(__file__).resolve().parents[2]


def _fill(folder: Path) -> Path:
    """Take every free block of the file system under `folder` (a dotfile: never indexed, never served)."""
    filler = folder / ".filler"
    free = os.statvfs(folder)
    with open(filler, "wb") as handle:
        try:
            handle.write(b"\0" * (free.f_bavail * free.f_frsize))
        except OSError:
            pass  # full: what we wanted
    return filler


@pytest.fixture
def full_data_dir(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root with CAP_SYS_ADMIN; test_sqlite_full_* covers the same fault")
    data = tmp_path / "data"
    data.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(data)], capture_output=True,
                          text=True, timeout=30)
    if done.returncode:
        pytest.skip(f"mount -t tmpfs failed: {done.stderr.strip()}")
    try:
        yield data
    finally:
        if subprocess.run(["umount", str(data)], capture_output=True, timeout=30).returncode:
            subprocess.run(["umount", "-l", str(data)], capture_output=True, timeout=30)


def test_a_full_data_dir_gives_507_for_feedback_and_stats_still_answer(tmp_path: Path, full_data_dir: Path) -> None:
    root = tmp_path / "root"
    write(root / "principles/p.md", "# Care\n\n### Test first\n\n- Write the failing test before the fix.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(full_data_dir))
    log = tmp_path / "serve.log"
    proc, url = serve_http(env, PROJECT, log)
    try:
        deadline = time.monotonic() + 120
        while httpx.get(url + "/api/stats", timeout=60).json()["embeddings"]["coverage"] < 1.0:
            assert time.monotonic() < deadline, "the server never finished embedding"
            time.sleep(0.2)
        hit = httpx.get(url + "/api/search", params={"query": "failing test"}, timeout=60).json()["hits"][0]["id"]
        _fill(full_data_dir)
        time.sleep(1.0)  # the worker's next log write meets the full disk too
        for _ in range(3):  # searches whose log rows cannot be written: queued
            assert httpx.get(url + "/api/search", params={"query": "failing test"}, timeout=60).status_code == 200
        verdict = httpx.post(url + "/api/feedback", json={"id": hit, "verdict": "helpful", "note": "x"}, timeout=60)
        assert verdict.status_code == 507, verdict.text
        assert "disk is full" in verdict.json()["error"] and "free some space" in verdict.json()["error"]
        stats = httpx.get(url + "/api/stats", timeout=60)
        assert stats.status_code == 200, stats.text
        logs = httpx.get(url + "/api/logs", timeout=60)
        assert logs.status_code == 200, logs.text
    finally:
        stop_process(proc)
    assert proc.returncode == 0
    assert "Traceback" not in log.read_text(errors="replace"), log.read_text(errors="replace")[-3000:]


def test_sqlite_full_logs_give_507_and_reads_still_answer(tmp_path: Path) -> None:
    """The same fault without root: the logs database may not grow by a page, so SQLite refuses with SQLITE_FULL
    ("database or disk is full"), as it does on a full disk."""
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    oracle = two_note_oracle(tmp_path)
    try:
        with TestClient(build_app(oracle, token=None), base_url="http://127.0.0.1:37778") as client:
            hit = client.get("/api/search", params={"query": "quote", "mode": "fts"}).json()["hits"][0]["id"]
            oracle.logs.flush()
            pages = oracle.logs.conn.execute("PRAGMA page_count").fetchone()[0]
            oracle.logs.conn.execute(f"PRAGMA max_page_count = {pages}")
            for n in range(40):  # enough queued rows that writing them needs a new page
                assert client.get("/api/search", params={"query": f"quote {'x' * 300} {n}"}).status_code == 200
            for n in range(30):  # a page holds a few verdicts: one of these needs a page the limit refuses
                verdict = client.post("/api/feedback", json={
                    "id": hit, "verdict": ("helpful", "misleading")[n % 2], "note": "y" * 900})
                if verdict.status_code != 201:
                    break
            assert verdict.status_code == 507, verdict.text
            assert "disk is full" in verdict.json()["error"]
            assert oracle.logs.queued()  # the searches' rows wait
            stats = client.get("/api/stats")
            assert stats.status_code == 200, stats.text
            assert client.get("/api/logs").status_code == 200
            oracle.logs.conn.execute("PRAGMA max_page_count = 1073741823")  # space freed
            assert client.get("/api/stats").json()["usage"]["searches"] >= 41
            assert client.post("/api/feedback", json={"id": hit, "verdict": "helpful", "note": "z"}).status_code == 201
    finally:
        oracle.close()
