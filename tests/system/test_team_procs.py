"""Team mode end to end, with real processes: tokens made by the real `oracle token` command, a real
`oracle serve --http`, MCP clients over streamable HTTP sending each person's token, the REST API, and the
CLI answering through the server with a named token. Who wrote what ends up in the notes and the logs; a
read-only token is refused on writes over MCP and HTTP alike; edits are revision-safe over MCP.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

from _procs import oracle_cmd, serve_http, stop_process
from test_dashboard import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS

PROJECT = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", ORACLE_ENGINE="0", **extra)
    return env


def oracle(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*oracle_cmd(), *args], env=env, cwd=PROJECT, capture_output=True, text=True, timeout=300)


def mcp_calls(url: str, token: str, calls: list[tuple[str, dict]]) -> list[Any]:
    """The tool calls over one MCP session over streamable HTTP that sends `token` as its bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import Implementation

    async def session() -> list[Any]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT) as http:
            transport = streamable_http_client(url + "/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=TIMEOUT,
                              client_info=Implementation(name="team-test", version="1.0")) as client:
                return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(session)


def recent_writes_on_dashboard(url: str, token: str) -> list[str]:
    """The titles of the dashboard's *Recent writes* rows, in a real Chromium given `token`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = chromium.new_context(viewport={"width": 1280, "height": 800}, service_workers="block").new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url + "/", wait_until="load")
            page.fill("#token-input", token)
            page.press("#token-input", "Enter")
            page.wait_for_selector("body[data-ready='1']")
            page.wait_for_selector("#writes li.note")
            return page.eval_on_selector_all("#writes li.note .title", "els => els.map(e => e.textContent)")
        finally:
            chromium.close()


def team_tile_on_dashboard(url: str, token: str) -> str:
    """The dashboard's *Team store* tile (conflict copies) in a real Chromium given `token`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = chromium.new_context(viewport={"width": 1280, "height": 800}, service_workers="block").new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url + "/", wait_until="load")
            page.fill("#token-input", token)
            page.press("#token-input", "Enter")
            page.wait_for_selector("body[data-ready='1']")
            page.wait_for_selector("#tile-team:not([hidden])")
            return page.text_content("[data-stat='working_copy.conflicts']") or ""
        finally:
            chromium.close()


def test_a_team_server_with_named_tokens(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    (root / "learnings").mkdir(parents=True)
    note = "learnings/2026-02-01_numbat-diet.md"
    (root / note).write_text("---\ntitle: Numbat diet\ntags: [numbats]\n---\n# Numbat diet\n\n## Food\nTermites only.\n",
                             encoding="utf-8")
    env = clean_env(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data))
    made = {}
    for name, access in (("alice", "--write"), ("bob", "--read-only")):
        done = oracle(env, "token", "add", name, access)
        assert done.returncode == 0, done.stderr
        made[name] = done.stdout.strip()
        assert "shown only this once" in done.stderr
    listed = oracle(env, "token", "list", "--json")
    assert [t["name"] for t in json.loads(listed.stdout)["tokens"]] == ["alice", "bob"]
    assert made["alice"] not in (data / "tokens.json").read_text()

    proc, url = serve_http(env, tmp_path, tmp_path / "serve.log", timeout=TIMEOUT)
    try:
        alice, bob = made["alice"], made["bob"]
        assert httpx.get(url + "/api/stats", timeout=TIMEOUT).status_code == 401

        learned, read = mcp_calls(url, alice, [
            ("oracle_learn", {"pattern": "Numbats eat up to 20,000 termites a day.", "title": "Numbat appetite"}),
            ("oracle_read", {"file": note}),
        ])
        assert not learned.is_error, learned.content[0].text
        assert learned.structured_content["author"] == "alice" and "by alice" in learned.content[0].text
        front = (root / learned.structured_content["file"]).read_text(encoding="utf-8").split("\n---\n")[0]
        assert "\nauthor: alice" in front
        h = read.structured_content["file_hash"]

        edited, stale = mcp_calls(url, alice, [
            ("oracle_edit", {"file": note, "expected_hash": h, "op": "append", "text": "## Water\nFrom termites."}),
            ("oracle_edit", {"file": note, "expected_hash": h, "op": "append", "text": "## Late\nlost update"}),
        ])
        assert not edited.is_error and edited.structured_content["author"] == "alice", edited.content[0].text
        assert stale.is_error and "conflict" in stale.content[0].text and "changed since you read it" in stale.content[0].text
        assert "lost update" not in (root / note).read_text(encoding="utf-8")

        found, learn, edit, feedback = mcp_calls(url, bob, [
            ("oracle_search", {"query": "numbat termites", "mode": "fts"}),
            ("oracle_learn", {"pattern": "Bob's learning."}),
            ("oracle_edit", {"file": note, "expected_hash": edited.structured_content["file_hash"], "op": "append",
                             "text": "bob"}),
            ("oracle_feedback", {"id": edited.structured_content["chunk_ids"][0], "verdict": "misleading"}),
        ])
        assert not found.is_error and found.structured_content["total"] >= 1
        for refused in (learn, edit, feedback):
            assert refused.is_error and "'bob' is read-only" in refused.content[0].text, refused.content[0].text
        assert "bob" not in (root / note).read_text(encoding="utf-8")

        current = edited.structured_content["file_hash"]
        as_bob = httpx.post(url + "/api/archive", json={"file": note, "expected_hash": current},
                            headers={"Authorization": f"Bearer {bob}"}, timeout=TIMEOUT)
        assert as_bob.status_code == 403, as_bob.text

        # the CLI answers through the server with the named token in ORACLE_TOKEN: bob is refused (exit 7, not
        # a local write behind the server's back), alice's archive is attributed to her
        refused = oracle({**env, "ORACLE_TOKEN": bob}, "archive", note, "--expected-hash", current)
        assert refused.returncode == 7 and "read-only" in refused.stderr, (refused.returncode, refused.stderr)
        assert (root / note).exists()
        via_cli = oracle({**env, "ORACLE_TOKEN": alice}, "archive", note, "--expected-hash", current, "--json")
        assert via_cli.returncode == 0, via_cli.stderr
        assert json.loads(via_cli.stdout)["author"] == "alice"
        assert (root / ".archive" / note).is_file() and not (root / note).exists()
        gone = httpx.get(url + "/api/search", params={"query": "numbat diet termites", "mode": "fts"},
                         headers={"Authorization": f"Bearer {alice}"}, timeout=TIMEOUT).json()
        assert note not in [hit["source_file"] for hit in gone["hits"]]

        logs = httpx.get(url + "/api/logs", headers={"Authorization": f"Bearer {alice}"}, timeout=TIMEOUT).json()
        assert [(e["action"], e["author"]) for e in logs["edits"]] == [("archive", "alice"), ("edit:append", "alice")]
        assert logs["learnings"][0]["author"] == "alice"

        if CHROMIUM.exists():  # the dashboard says who wrote what
            assert recent_writes_on_dashboard(url, alice)[:3] == [
                f"alice archived {note} → .archive/{note}", f"alice edited (append) {note}",
                f"alice learned {learned.structured_content['title']}"]

        assert oracle(env, "token", "revoke", "bob").returncode == 0
        assert httpx.get(url + "/api/stats", headers={"Authorization": f"Bearer {bob}"},
                         timeout=TIMEOUT).status_code == 401
    finally:
        stop_process(proc)
    assert "Traceback" not in (tmp_path / "serve.log").read_text(encoding="utf-8", errors="replace")


def test_named_tokens_in_the_team_store_work_on_every_engine(tmp_path: Path) -> None:
    """Issue 38 item 4: with ORACLE_DATABASE_URL the tokens are the database's. `oracle token add` on machine A's
    folder gives a token that machine B's engine accepts; a learning through B with it reaches A's folder with the
    token's name in its history; `oracle token revoke` on B is refused by A's running engine within seconds."""
    import _pg

    url = _pg.new_database()
    envs = {}
    for who in ("a", "b"):
        (tmp_path / who / "learnings").mkdir(parents=True)
        envs[who] = clean_env(ORACLE_ROOT=str(tmp_path / who), ORACLE_DATA_DIR=str(tmp_path / f"{who}-data"),
                              ORACLE_DATABASE_URL=url)
    (tmp_path / "a" / "learnings" / "numbat.md").write_text("# Numbat diet\n\nTermites only.\n", encoding="utf-8")
    done = oracle(envs["a"], "token", "add", "alice", "--write")
    assert done.returncode == 0, done.stderr
    alice = done.stdout.strip()
    assert oracle(envs["b"], "token", "add", "bob", "--read-only").returncode == 0  # (the last token revoked
    # would turn team mode off on a loopback server: bob keeps it on)
    listed = json.loads(oracle(envs["a"], "token", "list", "--json").stdout)
    assert [t["name"] for t in listed["tokens"]] == ["alice", "bob"] and "named_tokens" in listed["kept_in"]
    # a conflict first (both folders edit the note between syncs): the dashboard's team tile reports it
    numbat = "learnings/numbat.md"
    for who in ("a", "b"):
        assert oracle(envs[who], "index").returncode == 0
    for who in ("a", "b"):
        with open(tmp_path / who / numbat, "a", encoding="utf-8") as handle:
            handle.write(f"\nEdited on {who}.\n")
    assert oracle(envs["a"], "index").returncode == 0
    assert "1 conflicts" in oracle(envs["b"], "index").stdout
    procs = []
    try:
        pa, a_url = serve_http(envs["a"], tmp_path, tmp_path / "a.log", timeout=TIMEOUT)
        procs.append(pa)
        pb, b_url = serve_http(envs["b"], tmp_path, tmp_path / "b.log", timeout=TIMEOUT)
        procs.append(pb)
        auth = {"Authorization": f"Bearer {alice}"}
        assert httpx.get(b_url + "/api/stats", timeout=TIMEOUT).status_code == 401  # team mode on B too
        saved = httpx.post(b_url + "/api/learn", json={"pattern": "Numbats have 50 teeth.", "title": "Numbat teeth"},
                           headers=auth, timeout=TIMEOUT)
        assert saved.status_code == 201, saved.text
        rel = saved.json()["file"]
        deadline = time.monotonic() + 30
        while not (tmp_path / "a" / rel).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "a" / rel).exists()
        history = httpx.get(a_url + "/api/history", params={"file": rel}, headers=auth, timeout=TIMEOUT).json()
        assert [r["author"] for r in history["revisions"]] == ["alice"]
        assert (tmp_path / "b" / "learnings" / "numbat.md").exists()  # A's note in B's folder
        if CHROMIUM.exists():
            assert team_tile_on_dashboard(a_url, alice).startswith("1 conflict")
        assert oracle(envs["b"], "token", "revoke", "alice").returncode == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if httpx.get(a_url + "/api/stats", headers=auth, timeout=TIMEOUT).status_code == 401:
                break
            time.sleep(0.2)
        assert httpx.get(a_url + "/api/stats", headers=auth, timeout=TIMEOUT).status_code == 401
    finally:
        for proc in procs:
            stop_process(proc)
