"""The dashboard in token mode, in a real browser (Debian's Chromium through Playwright): it asks for the
token once, keeps it for the tab, asks again when a wrong one is refused, and then shows the same data as
the API gives a client that sends the token."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from _corpus import BUNDLED
from _procs import oracle_cmd, serve_http, stop_process
from _seed import seed_data_dir
from test_dashboard import CHROMIUM, CHROMIUM_ARGS, PROJECT, TIMEOUT_MS

TOKEN = "dashboard-test-token-0123456789"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (apt-get install -y chromium)"),
]


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory, embedding_seed: Path) -> Iterator[str]:
    base = tmp_path_factory.mktemp("dashboard-token")
    root, data = base / "root", seed_data_dir(embedding_seed, base / "data")
    shutil.copytree(BUNDLED, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data), ORACLE_TOKEN=TOKEN, PYTHONIOENCODING="utf-8")
    done = subprocess.run([*oracle_cmd(), "index", "--json"], env=env, cwd=PROJECT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    proc, url = serve_http(env, base, base / "serve.stderr")
    try:
        yield url
    finally:
        stop_process(proc)


def test_the_dashboard_asks_for_the_token_once_and_then_shows_the_data(token_server: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    assert httpx.get(token_server + "/api/stats", timeout=60).status_code == 401
    stats = httpx.get(token_server + "/api/stats", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60).json()
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = chromium.new_context(viewport={"width": 1280, "height": 800}, service_workers="block")
            context.set_default_timeout(TIMEOUT_MS)
            page = context.new_page()
            page.goto(token_server + "/", wait_until="load")
            box = page.locator("#token-box")
            box.wait_for(state="visible")
            assert "needs its access token" in page.inner_text("#token-note")
            page.fill("#token-input", "not-the-token-at-all")
            page.press("#token-input", "Enter")
            # A locator wait, not wait_for_function: a string predicate is run with eval, which the page's
            # Content-Security-Policy (script-src 'self') refuses once the first check has to poll.
            expect(page.locator("#token-note")).to_contain_text("refused", timeout=TIMEOUT_MS)
            assert box.is_visible()
            page.fill("#token-input", TOKEN)
            page.press("#token-input", "Enter")
            page.wait_for_selector("body[data-ready='1']")
            assert not box.is_visible()
            assert page.inner_text("[data-stat='files.total']") == str(stats["files"]["total"])
            assert page.inner_text("[data-stat='documents.total']") == str(stats["documents"]["total"])
            assert page.evaluate("sessionStorage.getItem('oracle-token')") == TOKEN
            page.reload(wait_until="load")  # the same tab keeps the token: no second question
            page.wait_for_selector("body[data-ready='1']")
            assert not box.is_visible()
        finally:
            chromium.close()


def test_the_docs_page_says_what_token_mode_protects(token_server: str) -> None:
    """Issue 27 item 8: /docs said "Reads are open" in token mode, where a read without the token is a 401."""
    from playwright.sync_api import sync_playwright

    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/api/stats", "/api/search?query=mock", "/openapi.json"):
        assert httpx.get(token_server + path, timeout=60).status_code == 401, path
        assert httpx.get(token_server + path, headers=auth, timeout=60).status_code == 200, path
    assert httpx.get(token_server + "/docs", timeout=60).status_code == 200
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = chromium.new_context(service_workers="block").new_page()
            page.goto(token_server + "/docs", wait_until="load")
            text = page.inner_text("main")
            assert "Reads are open" not in text
            note = page.inner_text("#auth-note")
            assert "reads included" in note and "/openapi.json" in note and "/health" in note
        finally:
            chromium.close()
