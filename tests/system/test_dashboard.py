"""The dashboard and the API docs page in a REAL headless Chromium against a REAL `oracle serve --http`.

Debian's /usr/bin/chromium is driven through Playwright's Python package (never `playwright install`:
no browser is downloaded). The server runs as a subprocess on a temp copy of the bundled knowledge plus
one hostile note full of markup, indexed first by `oracle index`. Every request the pages make is
recorded and must go to the server's own host:port; the console must stay free of errors. A screenshot
is saved to tests/artifacts/dashboard.png.

Browser tests skip only when /usr/bin/chromium is absent (`make test` installs it); the static checks
of the assets run regardless.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

PROJECT = Path(__file__).resolve().parents[2]
BUNDLED = PROJECT / "knowledge"
STATIC = PROJECT / "server" / "http" / "static"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
from _procs import oracle_cmd, serve_http, stop_process
from _seed import seed_data_dir
SCRIPT = Path(sys.executable).parent / "oracle"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FTS5_NOTE = "learnings/2026-01-14_quote-fts5-search-terms.md"
FTS5_TITLE = "Quote every search term before it reaches FTS5"
TIMEOUT_MS = 60_000

HOSTILE_TITLE = '<img src=x onerror="window.__pwned=1"> Zanzibar markup <b>bold</b>'
HOSTILE_NOTE = "learnings/2026-11-20_zanzibar-hostile-markup.md"
HOSTILE_TEXT = (
    "---\n"
    f"title: '{HOSTILE_TITLE}'\n"
    "tags: [zanzibar, markup]\n"
    "date: 2026-11-20\n"
    "---\n\n"
    f"# {HOSTILE_TITLE}\n\n"
    "The zanzibar quokka markup note: <script>window.__pwned = 2</script> and "
    "<iframe src=\"https://evil.example/\"></iframe> must show as text, never run.\n\n"
    "## Second section\n\n"
    "More zanzibar quokka markup text with <style>body{display:none}</style> inside.\n"
)
HOSTILE_DECISION = '<script>window.__pwned=3</script> Should zanzibar <img src=y onerror="window.__pwned=4"> ship?'

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="/usr/bin/chromium is absent: install Debian's chromium (apt-get install -y chromium); "
           "`make test` does this",
)


# =====================================================================================================
# static checks of the assets (no browser needed)
# =====================================================================================================
ASSETS = ["index.html", "app.js", "app.css", "docs.html", "docs.js"]
SVG_NS = "http://www.w3.org/2000/svg"


@pytest.mark.parametrize("name", ASSETS)
def test_assets_name_no_other_host(name: str) -> None:
    text = (STATIC / name).read_text(encoding="utf-8")
    urls = [u for u in re.findall(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s\"')]*", text) if u != SVG_NS]
    assert not urls, f"{name} names another host: {urls}"
    assert "@import" not in text and "@font-face" not in text, name
    if name.endswith(".html"):
        for ref in re.findall(r'(?:src|href)="([^"]+)"', text):
            assert ref.startswith(("/", "#", "data:")) and not ref.startswith("//"), (name, ref)
        assert "Content-Security-Policy" in text and "connect-src 'self'" in text, name
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), f"{name} has an inline script"
        assert not re.search(r"<[a-z][^>]*\son[a-z]+\s*=", text, flags=re.I), f"{name} has an inline event handler"
        assert "style=" not in text, f"{name} has an inline style (the CSP forbids it)"


@pytest.mark.parametrize("name", ["app.js", "docs.js"])
def test_scripts_never_parse_html(name: str) -> None:
    text = re.sub(r"/\*.*?\*/", "", (STATIC / name).read_text(encoding="utf-8"), flags=re.S)  # code, not comments
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                 "DOMParser", "createContextualFragment", "javascript:"):
        assert sink not in text, f"{name} uses {sink}"


# =====================================================================================================
# the server and the browser
# =====================================================================================================




PLATYPUS_OLD = "learnings/2026-10-10_platypus-feeding-old.md"
PLATYPUS_NEW = "learnings/2026-10-11_platypus-feeding-new.md"
SUPERSEDED_BY_TOOL = "learnings/2026-10-12_platypus-feeding-draft.md"
IMPROVE_NOTES = {
    PLATYPUS_OLD: "---\ntitle: Platypus feeding at dawn\nsuperseded_by: 2026-10-11_platypus-feeding-new.md\n"
                  "relations:\n  - [Platypus keeper, feeds, Platypus]\n---\n\n# Platypus feeding at dawn\n\n"
                  "Feed the platypus worms at dawn.\n",
    PLATYPUS_NEW: "---\ntitle: Platypus feeding at dusk\nrelations:\n  - [Platypus, eats, Worms]\n---\n\n"
                  "# Platypus feeding at dusk\n\nFeed the platypus worms and shrimp at dusk."
                  " It replaces [[2026-10-10_platypus-feeding-old]].\n",
    SUPERSEDED_BY_TOOL: "# Platypus feeding draft\n\nA draft about platypus feeding.\n",
}


@dataclass
class Server:
    url: str
    port: int
    root: Path
    proc: subprocess.Popen
    stderr_path: Path

    def api(self, path: str, **params: Any) -> Any:
        resp = httpx.get(self.url + path, params=params, timeout=180)
        assert resp.status_code == 200, resp.text[:300]
        return resp.json()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, embedding_seed: Path) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("dashboard")
    root, data = base / "root", seed_data_dir(embedding_seed, base / "data")
    shutil.copytree(BUNDLED, root)
    (root / HOSTILE_NOTE).write_text(HOSTILE_TEXT, encoding="utf-8")
    for rel, text in IMPROVE_NOTES.items():
        (root / rel).write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data), PYTHONIOENCODING="utf-8")
    done = subprocess.run([*oracle_cmd(), "index", "--json"], env=env, cwd=PROJECT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert not json.loads(done.stdout)["vector_failed"]
    # A lone CLI search loads the model for itself: a cold start, which the latency tile counts apart.
    cold = subprocess.run([*oracle_cmd(), "--local", "search", "mock the database"], env=env, cwd=PROJECT,
                          capture_output=True, text=True, timeout=600)
    assert cold.returncode == 0, cold.stderr
    stderr_path = base / "serve.stderr"
    proc, url = serve_http(env, base, stderr_path)
    srv = Server(url, int(url.rsplit(":", 1)[1]), root, proc, stderr_path)
    try:
        # Some usage for the charts: searches (latency series, per day) and consultations (one hostile).
        for query in ("mock the database", "rebase before review", "webhook signature clock skew", "offline install"):
            srv.api("/api/search", query=query)
        srv.api("/api/consult", decision="Should the search tests use a mocked database?")
        srv.api("/api/consult", decision=HOSTILE_DECISION)
        # Verdicts and a tool-made supersession for the feedback and supersession panels.
        hits = srv.api("/api/search", query="mock the database", limit=3)["hits"]
        for hit, verdict in ((hits[0], "helpful"), (hits[0], "helpful"), (hits[1], "misleading")):
            assert httpx.post(srv.url + "/api/feedback", json={"id": hit["id"], "verdict": verdict}).status_code == 201
        made = httpx.post(srv.url + "/api/supersede", json={"old_id": SUPERSEDED_BY_TOOL, "new_id": PLATYPUS_NEW,
                                                             "reason": "merged"})
        assert made.status_code == 201, made.text
        yield srv
    finally:
        stop_process(proc)


@dataclass
class Recorder:
    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    bad_status: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> None:
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("requestfailed", lambda r: self.failed.append(f"{r.url} {r.failure}"))
        page.on("response", lambda r: r.status >= 400 and self.bad_status.append(f"{r.status} {r.url}"))
        page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))


@dataclass
class Browser:
    page: Any
    rec: Recorder
    server: Server

    def open_dashboard(self) -> Any:
        self.page.goto(self.server.url + "/", wait_until="load")
        self.page.wait_for_selector("body[data-ready='1']", timeout=TIMEOUT_MS)
        return self.page


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is absent: install Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright  # pip install playwright (never `playwright install`)

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = chromium.new_context(viewport={"width": 1280, "height": 800}, service_workers="block")
        context.set_default_timeout(TIMEOUT_MS)
        page = context.new_page()
        rec = Recorder()
        rec.attach(page)
        b = Browser(page, rec, server)
        b.open_dashboard()
        try:
            yield b
        finally:
            context.close()
            chromium.close()


def stat_elements(page: Any) -> dict[str, tuple[str, str]]:
    rows = page.eval_on_selector_all(
        "[data-stat]", "els => els.map(e => [e.dataset.stat, e.textContent, e.getAttribute('data-value')])")
    out: dict[str, tuple[str, str]] = {}
    for key, text, value in rows:
        assert key not in out, f"data-stat {key} appears twice"
        out[key] = (text, value)
    return out


# =====================================================================================================
# the dashboard
# =====================================================================================================
@needs_chromium
def test_tiles_equal_api_stats(browser: Browser, server: Server) -> None:
    stats = server.api("/api/stats")
    tiles = stat_elements(browser.page)
    for key in ("documents.total", "files.total", "concepts"):
        obj: Any = stats
        for part in key.split("."):
            obj = obj[part]
        assert tiles[key][0] == str(obj) and tiles[key][1] == str(obj), (key, tiles[key], obj)
    for group in ("documents", "files"):
        shown = {k.split(".", 2)[2]: v for k, v in tiles.items() if k.startswith(f"{group}.by_type.")}
        assert set(shown) == set(stats[group]["by_type"]), group
        for doc_type, n in stats[group]["by_type"].items():
            assert shown[doc_type] == (str(n), str(n)), (group, doc_type)
    fresh = stats["freshness"]  # the stale-notes tile (issue 28)
    assert tiles["freshness.stale"] == (str(fresh["stale"]), str(fresh["stale"]))
    shown = {k.split(".", 2)[2]: v for k, v in tiles.items() if k.startswith("freshness.stale_by_type.")}
    assert shown == {t: (str(n), str(n)) for t, n in fresh["stale_by_type"].items()}
    coverage = stats["embeddings"]["coverage"]
    text, value = tiles["embeddings.coverage"]
    assert float(value) == coverage and text.endswith("%") and abs(float(text[:-1]) - coverage * 100) <= 0.051
    drift = stats["drift"]
    text, value = tiles["drift"]
    if drift["in_sync"]:
        assert (text, value) == ("in sync", "in_sync")
    else:
        assert value == "drift" and f"{drift['not_indexed_count']} not indexed" in text
    text, value = tiles["vector_store"]
    assert (text, value) == (("ok", "ok") if stats["vector_store"]["ok"] else ("down", "down"))
    assert browser.page.text_content("#vector-detail") == stats["vector_store"]["detail"]
    assert tiles["last_indexed"][1] == stats["last_indexed"] and tiles["last_indexed"][0]
    assert stats["drift"]["in_sync"] and stats["vector_store"]["ok"] and coverage == 1.0  # this index is healthy
    assert tiles["usage.searches"][1] == str(stats["usage"]["searches"])
    for key in ("search_p50_ms", "search_p95_ms"):
        assert float(tiles[f"usage.{key}"][1]) == stats["usage"][key], key


@needs_chromium
def test_charts_draw_the_logs(browser: Browser, server: Server) -> None:
    page = browser.page
    logs = server.api("/api/logs", limit=60, days=30)
    # All of this server's activity is from today: the chart draws hours (test_activity_* below).
    bars = page.eval_on_selector_all("#chart-activity svg rect.bar-searches",
                                     "els => els.map(e => [e.dataset.slot, e.querySelector('title').textContent])")
    assert {slot: title.split(": ")[1] for slot, title in bars} == {
        r["hour"]: f"{r['count']} search" + ("" if r["count"] == 1 else "es") for r in logs["per_hour"]["searches"]}
    assert page.locator("#chart-activity svg rect.bar-consultations").count() >= 1
    points = page.locator("#chart-latency svg circle.pt")
    assert points.count() == len([r for r in logs["searches"] if not r["cold"]]) >= 4
    assert page.locator("#chart-latency svg line.p50").count() == 1 and page.locator("#chart-latency svg line.p95").count() == 1
    concepts = server.api("/api/concepts", limit=12)["concepts"]
    shown = page.eval_on_selector_all("#chart-concepts [data-concept]", "els => els.map(e => e.dataset.concept)")
    assert shown == [c["concept"] for c in concepts]


@needs_chromium
def test_counts_say_notes_and_sections(browser: Browser, server: Server) -> None:
    """One word, one meaning (issue 27 item 3): the tile of files says Notes, the tile of chunks Sections, and a
    concept's bar counts the notes carrying it (before: "engineering: 138 chunks" in a base of ~40 notes)."""
    page = browser.page
    stats = server.api("/api/stats")
    assert page.text_content("#tile-files .label") == "Notes"
    assert page.text_content("#tile-documents .label") == "Sections"
    assert stats["documents"]["total"] > stats["files"]["total"]
    titles = page.eval_on_selector_all("#chart-concepts [data-concept] > title", "els => els.map(e => e.textContent)")
    counts = {c["concept"]: c["count"] for c in server.api("/api/concepts", limit=12)["concepts"]}
    assert titles and len(titles) == len(counts)
    for title in titles:
        concept, rest = title.split(": ", 1)
        assert rest.startswith(f"in {counts[concept]} note") and "chunk" not in rest, title
        assert counts[concept] <= stats["files"]["total"]
    assert "chunk" not in page.text_content("#embeddings-sub")


@needs_chromium
def test_latency_shows_warm_searches_and_cold_starts_apart(browser: Browser, server: Server) -> None:
    """Issue 27 item 13: each stdio session's (and each lone CLI search's) first search loads the model; mixed
    in, they made the tile say p50 963 ms for searches of 70-180 ms."""
    import statistics

    page = browser.open_dashboard()
    usage = server.api("/api/stats")["usage"]
    with sqlite3.connect(Path(server.root).parent / "data" / "logs.db") as db:
        rows = db.execute("SELECT latency_ms, cold FROM search_log").fetchall()
    warm = sorted(v for v, c in rows if not c)
    colds = [v for v, c in rows if c]
    assert colds and min(colds) > statistics.median(warm)  # the CLI search of the fixture, at least
    assert usage["search_cold_starts"] == len(colds)
    assert usage["search_p50_ms"] == round(statistics.median(warm), 2)
    assert usage["search_cold_p50_ms"] == round(statistics.median(colds), 2)
    text, value = stat_elements(page)["usage.search_cold_starts"]
    assert value == str(len(colds)) and text.startswith(f"{len(colds)} · p50 ")
    assert "warm p50" in page.text_content("#activity")


@needs_chromium
def test_activity_of_one_day_is_drawn_in_hours(browser: Browser, server: Server) -> None:
    """A day of use is one bar per day; so the chart shows the last 48 hours, hour by hour."""
    page = browser.page
    logs = server.api("/api/logs", limit=60, days=30)
    assert len(logs["per_day"]["searches"]) == 1  # the fixture's activity is all from today
    svg = page.locator("#chart-activity svg")
    assert svg.get_attribute("data-unit") == "hour"
    hours = {r["hour"]: r["count"] for r in logs["per_hour"]["consultations"]}
    drawn = page.eval_on_selector_all("#chart-activity svg rect.bar-consultations", "els => els.map(e => e.dataset.slot)")
    assert sorted(drawn) == sorted(hours) and all(len(h) == 13 and h[10] == "T" for h in drawn)
    total = sum(r["count"] for r in logs["per_hour"]["searches"])
    assert page.text_content("#activity-total").startswith(f"{total} searches") and "in 48 hours" in page.text_content("#activity-total")
    labels = page.eval_on_selector_all("#chart-activity svg > text", "els => els.map(e => e.textContent)")
    assert any(label.endswith("h") for label in labels), labels


@needs_chromium
def test_search_box_finds_the_fts5_learning(browser: Browser, server: Server) -> None:
    page = browser.page
    page.fill("#search-input", "quote fts5 terms")
    page.press("#search-input", "Enter")
    page.wait_for_selector("#results[data-state='done'] [data-id]")
    api = server.api("/api/search", query="quote fts5 terms", type="all", mode="hybrid", limit=10, offset=0)
    ids = page.eval_on_selector_all("#results [data-id]", "els => els.map(e => e.dataset.id)")
    assert ids == [h["id"] for h in api["hits"]]
    first = page.locator("#results [data-id]").first
    hit = api["hits"][0]
    assert hit["source_file"] == FTS5_NOTE
    assert first.locator(".title").text_content() == FTS5_TITLE
    assert first.locator(".badge").text_content() == "learning"
    assert first.locator(".loc").text_content() == f"{FTS5_NOTE}:{hit['line_start']}-{hit['line_end']}"
    assert first.locator(".snippet").text_content() == hit["snippet"]
    breakdown = first.locator(".breakdown").text_content()
    bd = hit["breakdown"]
    assert f"score {hit['score']:.4f}" in breakdown  # the note's score, the one that ranks it (issue 27)
    shown = page.eval_on_selector_all("#results [data-score] b", "els => els.map(e => e.textContent)")
    assert shown == [f"{h['score']:.4f}" for h in api["hits"]]
    assert f"bm25 #{bd['bm25_rank']} · {bd['bm25_score']:.2f}" in breakdown
    assert f"vector #{bd['vector_rank']} · {bd['vector_similarity']:.3f}" in breakdown
    assert "found by " + " + ".join(hit["found_by"]) in breakdown
    assert f"{api['total']} results" in page.text_content("#search-status")


@needs_chromium
def test_clicking_a_result_opens_the_viewer(browser: Browser, server: Server) -> None:
    page = browser.page
    first = page.locator("#results [data-id]").first
    hit = server.api("/api/search", query="quote fts5 terms", limit=1)["hits"][0]
    first.click()
    page.wait_for_selector("#viewer[data-state='done']")
    assert page.is_visible("#viewer")
    assert page.get_attribute("#viewer", "data-path") == FTS5_NOTE
    text = (server.root / FTS5_NOTE).read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    shown = page.eval_on_selector_all("#viewer-body .line .txt", "els => els.map(e => e.textContent)")
    assert [s if s != " " else "" for s in shown] == lines
    highlighted = page.eval_on_selector_all("#viewer-body .line.hl", "els => els.map(e => Number(e.dataset.line))")
    assert highlighted == list(range(hit["line_start"], hit["line_end"] + 1))
    assert FTS5_TITLE in page.text_content("#viewer-title")
    # The cited lines are scrolled into view.
    assert page.locator("#viewer-body .line.hl").first.is_visible()
    box = page.locator("#viewer-body .line.hl").first.bounding_box()
    assert box and 0 <= box["y"] < 800
    page.keyboard.press("Escape")
    page.wait_for_selector("#viewer", state="hidden")


@needs_chromium
def test_hostile_markup_is_shown_as_text(browser: Browser, server: Server) -> None:
    page = browser.page
    page.fill("#search-input", "zanzibar quokka markup")
    page.click("#search-form button[type=submit]")
    page.wait_for_function("() => document.querySelector('#results').dataset.state === 'done' && "
                           "[...document.querySelectorAll('#results .title')].some(e => e.textContent.includes('Zanzibar'))")
    hostile = page.locator("#results [data-id]", has_text="Zanzibar markup").first
    assert hostile.locator(".title").text_content() == HOSTILE_TITLE
    assert page.locator("#results img, #results script, #results iframe, #results style").count() == 0
    assert hostile.locator(".title").evaluate("e => e.childElementCount") == 0
    hostile.click()
    page.wait_for_selector("#viewer[data-state='done']")
    body = page.text_content("#viewer-body")
    assert "<script>window.__pwned = 2</script>" in body and '<iframe src="https://evil.example/">' in body
    assert page.locator("#viewer script, #viewer img, #viewer iframe, #viewer style").count() == 0
    page.keyboard.press("Escape")
    page.wait_for_selector("#viewer", state="hidden")
    # The consultation with markup in its decision: shown literally, guidance collapsible.
    summary = page.locator("#consultations details .decision", has_text="Should zanzibar").first
    assert summary.text_content() == HOSTILE_DECISION
    details = page.locator("#consultations details", has_text="Should zanzibar").first
    assert not details.locator("pre.guidance").is_visible()
    details.locator("summary").click()
    assert details.locator("pre.guidance").is_visible()
    assert "Guidance for the decision" in details.locator("pre.guidance").text_content()
    assert page.locator("#consultations script, #consultations img").count() == 0
    assert page.evaluate("window.__pwned") is None


@needs_chromium
def test_recent_consultations_match_the_logs(browser: Browser, server: Server) -> None:
    logs = server.api("/api/logs", limit=60, days=30)
    shown = browser.page.eval_on_selector_all("#consultations details .decision", "els => els.map(e => e.textContent)")
    assert shown == [c["decision"] for c in logs["consultations"]]


@needs_chromium
def test_concept_graph_renders_svg(browser: Browser, server: Server) -> None:
    page = browser.page
    page.wait_for_selector("#graph-svg[data-state='done']")
    graph = server.api("/api/graph", limit=40, documents="true")
    concepts = {n["id"]: n["count"] for n in graph["nodes"] if n["kind"] == "concept"}
    documents = {n["id"] for n in graph["nodes"] if n["kind"] == "document"}
    drawn = page.eval_on_selector_all(
        "#graph-svg g.node:not(.entity)", "els => els.map(e => [e.dataset.node, Number(e.querySelector('circle').getAttribute('r'))])")
    drawn_concepts = {node: r for node, r in drawn if node.startswith("concept:")}
    assert set(drawn_concepts) == set(concepts)
    assert {node for node, _ in drawn if node.startswith("file:")} == documents
    # Sized by count: a concept carried by more files is never drawn smaller.
    by_count = sorted(concepts, key=lambda c: concepts[c])
    radii = [drawn_concepts[c] for c in by_count]
    assert radii == sorted(radii) and radii[-1] > radii[0]
    edges = page.locator("#graph-svg line.edge")
    assert edges.count() > len(concepts)
    widths = page.eval_on_selector_all(
        "#graph-svg line.edge:not(.tagged):not(.relation)", "els => els.map(e => [Number(e.dataset.weight), Number(e.getAttribute('stroke-width'))])")
    assert widths and sorted(widths) == sorted(widths, key=lambda w: (w[1], w[0]))  # weight orders width
    # Every node sits inside the drawing.
    for node, _ in drawn:
        box = page.locator(f"#graph-svg g.node[data-node=\"{node}\"] circle").bounding_box()
        svg = page.locator("#graph-svg").bounding_box()
        assert box and svg["x"] - 1 <= box["x"] and box["x"] + box["width"] <= svg["x"] + svg["width"] + 1, node
    page.uncheck("#graph-documents")
    assert page.locator("#graph-svg g.node.document").count() == 0
    assert page.locator("#graph-svg g.node.concept").count() == len(concepts)
    page.check("#graph-documents")
    assert page.locator("#graph-svg g.node.document").count() == len(documents)


@needs_chromium
def test_graph_labels_do_not_overlap(browser: Browser) -> None:
    page = browser.page
    page.wait_for_selector("#graph-svg[data-state='done']")
    boxes = page.eval_on_selector_all(
        "#graph-svg g.node.concept text, #graph-svg g.node.entity text",
        "els => els.filter(e => e.getAttribute('visibility') !== 'hidden')"
        ".map(e => { const b = e.getBoundingClientRect(); return [e.textContent, b.x, b.y, b.width, b.height]; })")
    total = page.locator("#graph-svg g.node.concept, #graph-svg g.node.entity").count()
    assert len(boxes) >= total * 0.6, (len(boxes), total)  # most labels find a place
    for i, (a, ax, ay, aw, ah) in enumerate(boxes):
        for b, bx, by, bw, bh in boxes[i + 1:]:
            apart = ax + aw <= bx + 0.5 or bx + bw <= ax + 0.5 or ay + ah <= by + 0.5 or by + bh <= ay + 0.5
            assert apart, (a, b)


@needs_chromium
def test_clicking_a_concept_focuses_it_and_its_neighbours(browser: Browser, server: Server) -> None:
    page = browser.page
    page.wait_for_selector("#graph-svg[data-state='done']")
    graph = server.api("/api/graph", limit=40, documents="true")
    concept = next(n for n in graph["nodes"] if n["kind"] == "concept")["id"]
    lines = page.eval_on_selector_all("#graph-svg line.edge", "els => els.map(e => [e.dataset.source, e.dataset.target])")
    near = {concept} | {b for a, b in lines if a == concept} | {a for a, b in lines if b == concept}  # drawn edges
    drawn = set(page.eval_on_selector_all("#graph-svg g.node", "els => els.map(e => e.dataset.node)"))
    page.click(f"#graph-svg g.node[data-node=\"{concept}\"]")
    visible = page.eval_on_selector_all("#graph-svg g.node", "els => els.filter(e => e.getClientRects().length)"
                                        ".map(e => e.dataset.node)")
    assert set(visible) == near & drawn and len(visible) < len(drawn)
    assert page.is_visible("#graph-all") and page.is_visible("#graph-search")
    page.click("#graph-all")
    visible = page.eval_on_selector_all("#graph-svg g.node", "els => els.filter(e => e.getClientRects().length)"
                                        ".map(e => e.dataset.node)")
    assert set(visible) == drawn and not page.is_visible("#graph-all")


@needs_chromium
def test_graph_draws_relations_between_entities(browser: Browser, server: Server) -> None:
    page = browser.page
    page.wait_for_selector("#graph-svg[data-state='done']")
    graph = server.api("/api/graph", limit=40, documents="true")
    relations = {(e["source"], e["label"], e["target"]) for e in graph["edges"] if e["kind"] == "relation"}
    assert ("entity:platypus", "eats", "entity:worms") in relations
    drawn = page.eval_on_selector_all(
        "#graph-svg line.edge.relation", "els => els.map(e => [e.dataset.source, e.dataset.label, e.dataset.target])")
    assert {tuple(d) for d in drawn} == relations
    entities = {n["id"] for n in graph["nodes"] if n["kind"] == "entity"}
    assert set(page.eval_on_selector_all("#graph-svg g.node.entity", "els => els.map(e => e.dataset.node)")) == entities
    labels = page.eval_on_selector_all("#graph-svg text.edge-label", "els => els.map(e => e.textContent)")
    assert sorted(labels) == sorted(label for _, label, _ in relations)
    page.uncheck("#graph-relations")
    assert page.locator("#graph-svg g.node.entity").count() == 0
    assert page.locator("#graph-svg line.edge.relation").count() == 0
    page.check("#graph-relations")
    assert page.locator("#graph-svg g.node.entity").count() == len(entities)


@needs_chromium
def test_a_wikilinked_note_is_one_node(browser: Browser, server: Server) -> None:
    """Issue 40: `[[2026-10-10_platypus-feeding-old]]` in the dusk note drew the dawn note as a slug node beside its
    title, and the linking note as a title node beside its document: each note is one node, `file:PATH`."""
    graph = server.api("/api/graph", limit=40, documents="true")
    old, new = f"file:{PLATYPUS_OLD}", f"file:{PLATYPUS_NEW}"
    assert (new, "links_to", old) in {(e["source"], e["label"], e["target"]) for e in graph["edges"]
                                      if e["kind"] == "relation"}
    ids = [n["id"] for n in graph["nodes"]]
    labels = [n["label"] for n in graph["nodes"]]
    assert ids.count(old) == 1 and ids.count(new) == 1
    assert "2026-10-10_platypus-feeding-old" not in labels
    assert labels.count("Platypus feeding at dusk") == 1 and labels.count("Platypus feeding at dawn") == 1
    page = browser.open_dashboard()
    page.wait_for_selector("#graph-svg[data-state='done']")
    drawn = page.eval_on_selector_all("#graph-svg g.node", "els => els.map(e => e.dataset.node)")
    assert drawn.count(old) == 1 and drawn.count(new) == 1 and len(drawn) == len(set(drawn))
    page.locator(f"#graph-svg g.node[data-node='{old}']").dispatch_event("click")  # a note's node opens the note
    page.wait_for_function("() => (document.querySelector('#viewer-body') || {}).textContent"
                           "?.includes('Feed the platypus worms at dawn')")
    page.keyboard.press("Escape")


@needs_chromium
def test_recent_writes_name_notes_by_title(browser: Browser, server: Server) -> None:
    """Issue 40: verdicts were listed by bare section id (`c_ad18...`), supersessions by path."""
    page = browser.open_dashboard()
    logs = server.api("/api/logs", limit=20, days=30)
    verdicts = {r["doc_id"] for r in logs["feedback"]}
    assert verdicts and verdicts <= set(logs["titles"])
    text = page.inner_text("#writes")
    for ref in verdicts:
        assert ref not in text and logs["titles"][ref]["title"] in text
    assert "superseded Platypus feeding draft → Platypus feeding at dusk" in text, text


@needs_chromium
def test_stat_cards_sit_in_even_rows(browser: Browser) -> None:
    """Issue 40: 8 cards in a grid of 7 columns left one alone on a second row."""
    page = browser.open_dashboard()
    boxes = page.eval_on_selector_all(
        ".tiles > .tile", "els => els.filter(e => !e.hidden).map(e => { const b = e.getBoundingClientRect();"
        " return [Math.round(b.top), Math.round(b.width)]; })")
    rows: dict[int, list[int]] = {}
    for top, width in boxes:
        rows.setdefault(top, []).append(width)
    assert len(boxes) == 8 and [len(r) for r in rows.values()] == [4, 4], rows
    assert max(w for r in rows.values() for w in r) - min(w for r in rows.values() for w in r) <= 1


@needs_chromium
def test_feedback_and_supersession_panels_match_the_api(browser: Browser, server: Server) -> None:
    page = browser.open_dashboard()
    top = server.api("/api/feedback", limit=8)
    assert top["helpful"] and top["misleading"]
    for key, sel in (("helpful", "#most-helpful"), ("misleading", "#most-misleading")):
        shown = page.eval_on_selector_all(sel + " li.note", "els => els.map(e => e.dataset.id)")
        assert shown == [r["id"] for r in top[key]]
    supersessions = server.api("/api/supersessions")["supersessions"]
    shown = page.eval_on_selector_all("#superseded li.note", "els => els.map(e => e.dataset.old)")
    assert shown == [s["old"] for s in supersessions]
    assert {SUPERSEDED_BY_TOOL, PLATYPUS_OLD} <= set(shown)
    page.click(f"#superseded li.note[data-old=\"{PLATYPUS_OLD}\"]")
    page.wait_for_selector("#viewer[data-state='done']")
    assert "Platypus feeding at dawn" in page.inner_text("#viewer-body")
    page.click("#viewer-close")
    page.wait_for_selector("#viewer", state="hidden")


@needs_chromium
def test_search_results_mark_superseded_notes(browser: Browser, server: Server) -> None:
    page = browser.page
    page.fill("#search-input", "platypus feeding worms dawn")
    page.press("#search-input", "Enter")
    page.wait_for_selector("#results[data-state='done'] [data-id]")
    marked = page.eval_on_selector_all("#results .superseded", "els => els.map(e => e.dataset.supersededBy)")
    assert PLATYPUS_NEW in marked
    order = page.eval_on_selector_all("#results .result .loc", "els => els.map(e => e.textContent.split(':')[0])")
    assert order.index(PLATYPUS_NEW) < order.index(PLATYPUS_OLD)
    page.wait_for_timeout(800)  # let the debounced usage refresh finish before another test navigates away
    page.wait_for_load_state("networkidle")


@needs_chromium
def test_fits_1280x800(browser: Browser) -> None:
    page = browser.page
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    for sel in ("#tile-documents", "#tile-indexed", "#search-form", "#chart-activity"):
        box = page.locator(sel).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1280, sel


@needs_chromium
def test_api_docs_page_lists_every_operation(browser: Browser, server: Server) -> None:
    page = browser.page
    spec = server.api("/openapi.json")
    page.goto(server.url + "/docs")
    page.wait_for_selector("body[data-ready='1']")
    for path, item in spec["paths"].items():
        for method, op in item.items():
            section = page.locator(f"section.op[data-path=\"{path}\"][data-method=\"{method}\"]")
            assert section.count() == 1, (method, path)
            rows = section.locator("tr[data-param]")
            names = [rows.nth(i).get_attribute("data-param") for i in range(rows.count())]
            assert names == [p["name"] for p in op.get("parameters", [])], path
            for p in op.get("parameters", []):
                row = section.locator(f"tr[data-param=\"{p['name']}\"]")
                assert row.get_attribute("data-required") == ("true" if p.get("required") else "false")
            for status, resp in op["responses"].items():
                item_el = section.locator(f"li[data-status=\"{status}\"]")
                assert item_el.count() == 1, (path, status)
                ref = resp.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
                if ref:
                    assert ref.rsplit("/", 1)[-1] in item_el.text_content()
    search = page.locator('section.op[data-path="/api/search"]')
    limit = search.locator('tr[data-param="limit"]').text_content()
    assert "integer" in limit and "≥ 1" in limit and "≤ 100" in limit and "default 5" in limit
    assert "required" in search.locator('tr[data-param="query"]').text_content()
    assert "LearnRequest" in page.locator('section.op[data-path="/api/learn"] .request-body').text_content()
    for name in spec["components"]["schemas"]:
        assert page.locator(f"section.schema[data-schema=\"{name}\"]").count() == 1, name


@needs_chromium
def test_screenshot_requests_and_console(browser: Browser, server: Server) -> None:
    page = browser.open_dashboard()
    page.fill("#search-input", "quote fts5 terms")
    page.press("#search-input", "Enter")
    page.wait_for_selector("#results[data-state='done'] [data-id]")
    page.wait_for_timeout(800)  # the debounced usage refresh after a search
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000
    rec = browser.rec
    own = f"127.0.0.1:{server.port}"
    network = [u for u in rec.requests if urlsplit(u).scheme not in ("data", "blob")]
    assert network, "no request was recorded"
    foreign = [u for u in network if urlsplit(u).scheme != "http" or urlsplit(u).netloc != own]
    assert not foreign, f"requests to other hosts: {foreign}"
    paths = {urlsplit(u).path for u in network}
    assert {"/", "/static/app.js", "/static/app.css", "/api/stats", "/api/logs", "/api/concepts", "/api/graph",
            "/api/search", "/api/file", "/docs", "/static/docs.js", "/openapi.json"} <= paths, paths
    assert not rec.failed, rec.failed
    assert not rec.bad_status, rec.bad_status
    assert not rec.page_errors, rec.page_errors
    assert not rec.console_errors, rec.console_errors


@needs_chromium
def test_activity_over_more_days_is_drawn_in_days(browser: Browser, server: Server) -> None:
    """Once the logs reach back further than yesterday, the chart is per day again. Runs last: it adds a
    consultation five days old to the server's log (real SQLite, as an older session would have)."""
    with sqlite3.connect(server.root.parent / "data" / "logs.db") as conn:
        conn.execute("INSERT INTO consult_log (at, client, decision, found, guidance, tokens, latency_ms)"
                     " VALUES (?, 'test', 'An old decision', '[]', 'old guidance', 1, 1.0)", (time.time() - 5 * 86400,))
    page = browser.open_dashboard()
    page.wait_for_selector("#chart-activity svg[data-unit='day']")
    logs = server.api("/api/logs", limit=60, days=30)
    days = {r["day"] for r in logs["per_day"]["consultations"]}
    assert len(days) == 2
    drawn = page.eval_on_selector_all("#chart-activity svg rect.bar-consultations", "els => els.map(e => e.dataset.slot)")
    assert set(drawn) == days
    assert "in 30 days" in page.text_content("#activity-total")


@needs_chromium
def test_a_search_with_another_phrasing_shows_which_phrasing_found_each_note(browser: Browser, server: Server) -> None:
    """Issue 37: "add a phrasing" sends the extra words as `variants`; the page is the API's fused page, and each
    hit says which phrasings found it. Runs last: it leaves the phrasing box empty again."""
    page = browser.page
    page.fill("#search-input", "zanzibar quokka markup")
    page.click("#add-phrasing")
    page.fill("#phrasings input.phrasing", "quote fts5 terms")
    page.press("#phrasings input.phrasing", "Enter")
    page.wait_for_selector("#results[data-state='done'] [data-phrasings]")
    api = server.api("/api/search", query="zanzibar quokka markup", variants="quote fts5 terms", type="all",
                     mode="hybrid", limit=10, offset=0)
    ids = page.eval_on_selector_all("#results [data-id]", "els => els.map(e => e.dataset.id)")
    assert ids == [h["id"] for h in api["hits"]] and api["meta"]["phrasings"] == 2
    shown = page.eval_on_selector_all("#results [data-phrasings]", "els => els.map(e => e.dataset.phrasings)")
    assert shown == [",".join(map(str, h["phrasings"])) for h in api["hits"]]
    fts5 = next(h for h in api["hits"] if h["source_file"] == FTS5_NOTE)
    assert 1 in fts5["phrasings"]  # only the added phrasing's words reach the FTS5 learning
    for _ in range(3):
        page.click("#add-phrasing") if page.is_visible("#add-phrasing") else None
    assert page.locator("#phrasings input.phrasing").count() == 4 and not page.is_visible("#add-phrasing")
    page.evaluate("document.querySelectorAll('#phrasings input.phrasing').forEach(e => e.remove())")
