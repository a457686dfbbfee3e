"""oracle.toml edited while `oracle serve --http` runs (issue 40, item 3), through a real server process: an
exclude added takes the folder's notes out of the index without a restart, a freshness window applies at once, an
embedding model change is named in stats and the log as waiting for a restart, and a broken file keeps the
previous settings and says why."""

from __future__ import annotations

import datetime
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from _procs import oracle_cmd, serve_http, stop_process

pytestmark = pytest.mark.slow
CEILING = 120.0  # only catches a hang: a loaded 2-core machine takes seconds for what takes a second idle

CONFIG = '[index]\ndefault_type = "learning"\n'
# checked 120 days ago: fresh under the default window (365 days), stale under `[freshness] days = 30`
VERIFIED = (datetime.date.today() - datetime.timedelta(days=120)).isoformat()
NOTE = "---\ntitle: {title}\nlast_verified: " + VERIFIED + "\n---\n\n# {title}\n\n## Body\n\n{body}\n"


def _wait(what: str, probe: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + CEILING
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what}: not within {CEILING}s")


def _files(url: str) -> set[str]:
    listing = httpx.get(url + "/api/list", params={"limit": 100}, timeout=60).json()
    return {d["source_file"] for d in listing["items"]}


def _stats(url: str) -> dict:
    return httpx.get(url + "/api/stats", timeout=60).json()


def _notices(url: str) -> list[str]:
    """What stats says of oracle.toml beside its keys' warnings (drift.config_warnings)."""
    return [w for w in _stats(url)["drift"]["config_warnings"] if "oracle.toml" in w]


def _cli_stats(env: dict[str, str]) -> str:
    done = subprocess.run([*oracle_cmd(), "stats"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_a_running_server_takes_up_oracle_toml_edits(tmp_path: Path) -> None:
    root, data = tmp_path / "notes", tmp_path / "data"
    for rel, title, body in [
        ("learnings/keep-the-pool.md", "Keep the pool small", "Connection pools above twenty hurt the database."),
        ("drafts/half-an-idea.md", "Half an idea", "An unfinished thought about quokka caches."),
        ("runbooks/restart-the-queue.md", "Restart the queue", "Drain first, then restart the broker."),
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(NOTE.format(title=title, body=body), encoding="utf-8")
    (root / "oracle.toml").write_text(CONFIG, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data))
    log = tmp_path / "serve.log"
    proc, url = serve_http(env, tmp_path, log, timeout=CEILING * 2)
    try:
        _wait("the initial sync", lambda: _files(url) == {"learnings/keep-the-pool.md", "drafts/half-an-idea.md",
                                                          "runbooks/restart-the-queue.md"})
        assert not _notices(url)  # nothing changed since start
        assert _stats(url)["freshness"]["stale"] == 0

        # live: an exclude and a freshness window, taken up without a restart
        (root / "oracle.toml").write_text(CONFIG + 'exclude = ["drafts/"]\n\n[freshness]\ndays = 30\n',
                                          encoding="utf-8")
        _wait("drafts/ to leave the index", lambda: "drafts/half-an-idea.md" not in _files(url))
        stats = _stats(url)
        assert not _notices(url)  # all of it applied: nothing waits for a restart
        assert stats["freshness"]["window_days"]["learning"] == 30 and stats["freshness"]["stale"] == 2
        hits = httpx.get(url + "/api/search", params={"query": "quokka caches", "mode": "fts"}, timeout=60).json()
        assert hits["total"] == 0
        assert "oracle.toml reloaded: [index] exclude, [freshness] applied" in log.read_text()

        # restart-only: the embedding model; the server keeps its own and says so, in stats and in the log
        (root / "oracle.toml").write_text(CONFIG + 'exclude = ["drafts/"]\n\n[freshness]\ndays = 30\n\n'
                                          '[embedding]\nmodel = "minilm"\nquery_prefix = "query: "\n', encoding="utf-8")
        notices = _wait("the restart notice", lambda: _notices(url))
        assert len(notices) == 1 and notices[0].startswith("oracle.toml changed since start: restart to apply"
                                                           " [embedding] (re-read "), notices
        assert "oracle.toml changed since start: restart to apply [embedding]" in log.read_text()
        assert "warning: oracle.toml changed since start" in _cli_stats(env)  # the CLI asks the running server
        assert "drafts/half-an-idea.md" not in _files(url)  # the live settings stay as they were

        # a broken file: the previous settings stay, and stats says why
        (root / "oracle.toml").write_text("[index\n", encoding="utf-8")
        notices = _wait("the error", lambda: [n for n in _notices(url) if "cannot be read" in n])
        assert "the previous settings stay in force" in notices[0]
        assert "drafts/half-an-idea.md" not in _files(url)

        # the edit undone: the restart notice goes, the draft comes back
        (root / "oracle.toml").write_text(CONFIG, encoding="utf-8")
        _wait("drafts/ to come back", lambda: "drafts/half-an-idea.md" in _files(url))
        assert not _notices(url)
    finally:
        stop_process(proc)
