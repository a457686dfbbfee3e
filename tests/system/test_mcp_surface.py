"""The MCP surface beyond tools, through the official SDK client against real `oracle serve` processes.

Every item runs four ways: stdio and streamable HTTP, each in both protocol eras the SDK serves (the
2026-07-28 era, where change events arrive on `subscriptions/listen`, and the handshake era, where they
arrive after `resources/subscribe`). The knowledge base is a temp copy of the bundled one plus 120 small
notes (so `resources/list` needs two pages), a note whose name has Thai letters and a space, and
retrospectives in a format of their own (so the retrospective prompt must read the format, not assume it).

The fast tests at the end call the services in-process on the session's bundled index.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation, PromptReference, ResourceTemplateReference

from _mcp import KB, index_kb, legacy_subscribe, legacy_unsubscribe, run_oracle
from _procs import oracle_cmd, serve_http, stop_process

PROJECT = Path(__file__).resolve().parents[2]
BUNDLED = PROJECT / "knowledge"
# Handshake-era clients subscribe with `resources/subscribe` as they put it on the wire (tests/_mcp.py), current ones
# listen: nothing here may call an API the SDK deprecates (2026-07-28 removed resources/subscribe).
pytestmark = pytest.mark.filterwarnings("error::mcp.shared.exceptions.MCPDeprecationWarning")
THAI_NOTE = "learnings/2026-11-20_บันทึก ภาษาไทย.md"
THAI_TEXT = (
    "---\ntitle: Thai note about zephyr caches\ntags: [zephyr, caching]\nproject: zephyr-platform\ndate: 2026-11-20\n"
    "---\n\n# Thai note about zephyr caches\n\n## Context\n\nบันทึกนี้อธิบายการหมุนเวียนรหัสผ่านของ zephyr cache.\n\n"
    "## Lesson\n\nRotate the zephyr cache credentials only after the on-call handover has happened.\n"
)
BULK = 120  # with the bundled notes, more than one resources/list page (100)
RETRO_SECTIONS = ["Goal", "What happened", "Lessons", "Follow-ups"]
NEAR_DUPLICATE = (  # the bundled learning on mocked databases, retold (vector similarity 0.88 >= 0.85)
    "We switched the FTS5 table to the trigram tokenizer to support substring search. Every test still passed"
    " because the mock never looked at the schema. On a user's machine the index build failed at once with no"
    " such tokenizer: trigram, as their SQLite was older than 3.34."
)
# Each notification is waited for up to this long: a ceiling that only catches a hang, and well below the 300 s
# sweep, so a notification that comes is the watcher's. How soon it comes (about a second on a quiet machine) is a
# figure, written to LATENCY_LOG and printed, never asserted: at load 10-15 a new note took 4.4 s (issue 39).
NOTIFY_CEILING = 60.0
LATENCY_LOG = Path(__file__).resolve().parents[1] / ".notify-latency.jsonl"
# stdio: a standalone `oracle serve`; engine: `oracle serve` relaying to the shared engine (server/engine/relay.py), so
# that everything here also passes through the relay byte for byte.
PEERS = ["stdio-modern", "stdio-legacy", "engine-modern", "engine-legacy", "http-modern", "http-legacy"]


def _retro(n: int) -> str:
    body = "\n\n".join(f"## {h}\n\nRetro {n}, section {h.lower()}: what we learnt about releases." for h in RETRO_SECTIONS)
    return f"---\ntitle: Release retro {n}\ntags: [retrospective]\ndate: 2026-0{n}-15\n---\n\n# Release retro {n}\n\n{body}\n"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, embedding_seed: Path) -> KB:
    base = tmp_path_factory.mktemp("surface")
    root = base / "root"
    shutil.copytree(BUNDLED, root, ignore=shutil.ignore_patterns("retrospectives"))
    (root / THAI_NOTE).write_text(THAI_TEXT, encoding="utf-8")
    (root / "retrospectives").mkdir()
    for n in (1, 2, 3):
        (root / f"retrospectives/2026-0{n}-15_release-retro-{n}.md").write_text(_retro(n), encoding="utf-8")
    (root / "learnings/bulk").mkdir()
    for n in range(BULK):
        (root / f"learnings/bulk/2026-10-01_bulk-{n:03}.md").write_text(
            f"---\ntitle: Bulk note {n:03}\ntags: [bulk]\n---\n\nBulk note number {n} about batch item {n * 7}.\n",
            encoding="utf-8",
        )
    kb, report = index_kb(base, embedding_seed)
    assert report["added"] == len(list(root.rglob("*.md"))) - 1  # all but the unmapped README.md
    return kb


def indexed_paths(kb: KB) -> list[str]:
    return sorted(p.relative_to(kb.root).as_posix() for p in kb.root.rglob("*.md") if p.name != "README.md")


# -- one client connection, driven synchronously ------------------------------------------------------
class Peer:
    """An SDK client (stdio or streamable HTTP, one protocol era) that records every notification."""

    def __init__(self, kind: str, kb: KB, url: str | None) -> None:
        self.kind, self.kb = kind, kb
        self.transport, era = kind.split("-")
        self.legacy = era == "legacy"
        self.notes: list[tuple[float, Any]] = []
        self._stack = ExitStack()
        try:
            self.portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())
            if self.transport in ("stdio", "engine"):
                errlog = self._stack.enter_context(open(kb.logs_dir / f"{kind}.stderr", "a", encoding="utf-8"))
                mode = ["--standalone"] if self.transport == "stdio" else []
                params = StdioServerParameters(command=oracle_cmd()[0], args=[*oracle_cmd()[1:], "serve", *mode],
                                               env=kb.env, cwd=str(kb.logs_dir))
                target: Any = stdio_client(params, errlog=errlog)
            else:
                target = f"{url}/mcp"
            client = Client(target, mode="legacy" if self.legacy else "auto", message_handler=self._record,
                            client_info=Implementation(name="oracle-surface-tests", version="1.0"),
                            read_timeout_seconds=180)
            self.client: Client = self._stack.enter_context(self.portal.wrap_async_context_manager(client))
        except BaseException:
            self._stack.close()
            raise

    async def _record(self, message: Any) -> None:
        self.notes.append((time.monotonic(), message))

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        async def run() -> Any:
            return await fn(*args, **kwargs)

        return self.portal.call(run)

    def close(self) -> None:
        self._stack.close()


@pytest.fixture(scope="module")
def http_url(kb: KB) -> Iterator[str]:
    # its own server (--standalone): the engine peer below gets an engine of its own, stopped after its tests; one
    # engine serving both HTTP and stdio is tests/system/test_one_engine.py's
    proc, url = serve_http(kb.env, kb.logs_dir, kb.logs_dir / "serve-http.log", "--standalone")
    yield url
    stop_process(proc)


@pytest.fixture(scope="module", params=PEERS)
def peer(request: pytest.FixtureRequest, kb: KB, http_url: str) -> Iterator[Peer]:
    p = Peer(request.param, kb, http_url)
    yield p
    p.close()
    if p.transport == "engine":
        stopped = run_oracle(kb.env, "engine", "stop")
        assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stdout + stopped.stderr


def all_resources(peer: Peer) -> tuple[list[Any], int]:
    """Every listed resource, following cursors; and how many pages it took."""
    out, cursor, pages = [], None, 0
    while True:
        page = peer.call(peer.client.list_resources, cursor=cursor, cache_mode="bypass")
        out += page.resources
        pages += 1
        cursor = page.next_cursor
        if not cursor:
            return out, pages
        assert pages < 50, "pagination does not end"


# =====================================================================================================
# handshake: capabilities and live instructions
# =====================================================================================================
@pytest.mark.slow
def test_capabilities_and_live_instructions(peer: Peer, kb: KB) -> None:
    caps = peer.client.server_capabilities
    assert caps.resources and caps.resources.subscribe and caps.resources.list_changed
    assert caps.prompts is not None and caps.completions is not None
    instructions = peer.client.instructions or ""
    assert "oracle_consult" in instructions  # the static part is kept
    if peer.transport == "engine" and "engine for this knowledge base is starting" in instructions:
        # This session started the engine and was answered from the handshake cache before the engine was up
        # (server/engine/relay.py): the live part says so instead of the counts. Once the engine answers (a call through
        # this session waits for it), the next session gets the counts.
        assert not peer.call(peer.client.call_tool, "oracle_stats", {}).is_error
        p = Peer(peer.kind, kb, None)
        try:
            instructions = p.client.instructions or ""
        finally:
            p.close()
    found = re.search(r"Right now: (\d+) notes \(([^)]*)\), (\d+) sections", instructions)
    assert found, instructions
    assert int(found.group(1)) == len(indexed_paths(kb)), instructions
    assert "3 retrospectives" in found.group(2)
    assert "vector store ok" in instructions and "embeddings 100%" in instructions


# =====================================================================================================
# resources
# =====================================================================================================
@pytest.mark.slow
def test_resources_list_is_paginated_and_complete(peer: Peer, kb: KB) -> None:
    resources, pages = all_resources(peer)
    uris = [r.uri for r in resources]
    assert len(uris) == len(set(uris)), "a note was listed twice across pages"
    assert pages >= 2
    notes = sorted(r.name for r in resources if r.uri.startswith("oracle://note/"))
    assert notes == indexed_paths(kb)
    assert "oracle://stats" in uris
    thai = next(r for r in resources if r.name == THAI_NOTE)
    assert " " not in thai.uri and thai.uri.isascii()  # percent-encoded, a valid URI
    assert thai.title == "Thai note about zephyr caches" and thai.mime_type == "text/markdown"
    assert thai.size == len(THAI_TEXT.encode()) and thai.annotations and thai.annotations.last_modified
    with pytest.raises(MCPError) as err:
        peer.call(peer.client.list_resources, cursor="not-a-cursor", cache_mode="bypass")
    assert "cursor" in err.value.message


@pytest.mark.slow
def test_resource_templates(peer: Peer) -> None:
    templates = peer.call(peer.client.list_resource_templates, cache_mode="bypass").resource_templates
    assert {t.uri_template for t in templates} == {"oracle://note/{+path}", "oracle://chunk/{id}",
                                             "oracle://field/{name}/{value}"}


@pytest.mark.slow
def test_read_note_chunk_and_stats(peer: Peer, kb: KB) -> None:
    thai = next(r for r in all_resources(peer)[0] if r.name == THAI_NOTE)
    note = peer.call(peer.client.read_resource, thai.uri, cache_mode="bypass").contents[0]
    assert note.text == THAI_TEXT and note.mime_type == "text/markdown"
    meta = note.meta or {}
    assert meta["oracle/frontmatter"]["project"] == "zephyr-platform"
    assert meta["oracle/frontmatter"]["tags"] == ["zephyr", "caching"]
    assert meta["oracle/type"] == "learning" and meta["oracle/path"] == THAI_NOTE
    assert [s["heading"] for s in meta["oracle/sections"]] == ["Context", "Lesson"]
    lesson = meta["oracle/sections"][1]
    chunk = peer.call(peer.client.read_resource, lesson["uri"], cache_mode="bypass").contents[0]
    assert "on-call handover" in chunk.text
    cmeta = chunk.meta or {}
    assert cmeta["oracle/content_hash"] == lesson["content_hash"] and cmeta["oracle/note"] == thai.uri
    lines = THAI_TEXT.split("\n")[cmeta["oracle/line_start"] - 1 : cmeta["oracle/line_end"]]
    assert "on-call handover" in "\n".join(lines)  # the span points at the section in the file
    stats = json.loads(peer.call(peer.client.read_resource, "oracle://stats", cache_mode="bypass").contents[0].text)
    assert stats["files"]["total"] >= len(indexed_paths(kb)) - 1
    for bad in ("oracle://note/learnings/no-such-note.md", "oracle://chunk/c_nope", "oracle://note/../etc/passwd.md",
                "file:///etc/passwd"):
        with pytest.raises(MCPError) as err:
            peer.call(peer.client.read_resource, bad, cache_mode="bypass")
        assert err.value.code == -32002, (bad, err.value.message)


@pytest.mark.slow
def test_search_hits_carry_resource_links(peer: Peer) -> None:
    result = peer.call(peer.client.call_tool, "oracle_search", {"query": "zephyr cache credentials handover", "limit": 5,
                                                                 "detail": "full"})  # brief answers carry none
    assert not result.is_error
    hits = result.structured_content["hits"]
    links = [b for b in result.content if b.type == "resource_link"]
    assert [link.name for link in links] == list(dict.fromkeys(h["source_file"] for h in hits))
    assert links and links[0].name == THAI_NOTE
    read = peer.call(peer.client.read_resource, links[0].uri, cache_mode="bypass").contents[0]
    assert read.text == THAI_TEXT
    consult = peer.call(peer.client.call_tool, "oracle_consult", {"decision": "Should I mock the database in tests?"})
    sources = [s["source_file"] for key in ("principles", "learnings") for s in consult.structured_content[key]]
    assert [b.name for b in consult.content if b.type == "resource_link"] == list(dict.fromkeys(sources))


@pytest.mark.slow
def test_search_and_consult_ask_to_stay_loaded(peer: Peer) -> None:
    tools = peer.call(peer.client.list_tools).tools
    marked = {t.name for t in tools if (t.meta or {}).get("anthropic/alwaysLoad") is True}
    assert marked == {"oracle_search", "oracle_consult"}


# =====================================================================================================
# prompts
# =====================================================================================================
@pytest.mark.slow
def test_prompts_listed_with_arguments(peer: Peer) -> None:
    prompts = {p.name: p for p in peer.call(peer.client.list_prompts).prompts}
    assert set(prompts) == {"consult", "reflect", "retrospective", "learn-from-session"}
    required = {n: {a.name for a in p.arguments or [] if a.required} for n, p in prompts.items()}
    assert required == {"consult": {"decision"}, "reflect": set(), "retrospective": {"what_happened"},
                        "learn-from-session": {"notes"}}


def _text(result: Any) -> str:
    return result.messages[0].content.text


@pytest.mark.slow
def test_consult_and_reflect_prompts(peer: Peer) -> None:
    got = peer.call(peer.client.get_prompt, "consult", {"decision": "Should I mock the database in this test?"})
    text = _text(got)
    assert text.startswith("I am about to decide: Should I mock the database in this test?")
    assert "<<<ORACLE REFERENCE DATA" in text and "<<<END ORACLE REFERENCE DATA" in text
    links = [m.content for m in got.messages[1:]]
    assert links and all(link.type == "resource_link" for link in links)
    assert any("mock" in link.name for link in links)
    reflected = peer.call(peer.client.get_prompt, "reflect", {"type": "principle"})
    reflected_text = _text(reflected)  # the section inside the reference-data boundary (issue 26)
    assert "principle from our knowledge base:" in reflected_text and " file=principles/" in reflected_text
    assert reflected_text.count("<<<ORACLE REFERENCE DATA ") == 1 == reflected_text.count("<<<END ORACLE REFERENCE DATA ")
    with pytest.raises(MCPError) as err:
        peer.call(peer.client.get_prompt, "consult", {})
    assert "decision is required" in err.value.message
    with pytest.raises(MCPError):
        peer.call(peer.client.get_prompt, "reflect", {"type": "retro"})


@pytest.mark.slow
def test_retrospective_prompt_follows_the_knowledge_bases_format(peer: Peer) -> None:
    happened = "We moved the zephyr cache to a new cluster and lost an hour to a stale DNS record."
    text = _text(peer.call(peer.client.get_prompt, "retrospective",
                           {"what_happened": happened, "title": "Zephyr cache move", "project": "zephyr-platform"}))
    skeleton = text.split("```markdown\n", 1)[1].split("\n```", 1)[0]
    head, _, body = skeleton[4:].partition("\n---\n")
    meta = yaml.safe_load(head)
    assert meta["title"] == "Zephyr cache move" and meta["project"] == "zephyr-platform"
    assert "retrospective" in meta["tags"] and str(meta["date"]) == time.strftime("%Y-%m-%d")
    assert re.findall(r"^## (.+)$", body, flags=re.M) == RETRO_SECTIONS  # this KB's sections, not the default
    happened_section = body.split("## What happened\n", 1)[1].split("\n## ", 1)[0]
    assert happened in happened_section
    assert f"retrospectives/{time.strftime('%Y-%m-%d')}_zephyr-cache-move.md" in text
    assert "oracle_learn" in text


@pytest.mark.slow
def test_learn_from_session_checks_near_duplicates(peer: Peer) -> None:
    notes = (
        f"- {NEAR_DUPLICATE}\n"
        "- The billing export job needs its S3 bucket policy to allow the new reporting role, or it fails silently.\n"
        "- ok\n"
    )
    text = _text(peer.call(peer.client.get_prompt, "learn-from-session", {"notes": notes, "project": "oracle"}))
    items = re.findall(r"^(\d+)\. (.+)\n   -> (.+)$", text, flags=re.M)
    assert [i[0] for i in items] == ["1", "2"]  # "ok" is too short to be a learning
    assert items[0][2].startswith("NEAR-DUPLICATE of note [1] below")
    quoted = text.split("<<<ORACLE REFERENCE DATA ", 1)[1].split("<<<END ORACLE REFERENCE DATA ", 1)[0]
    assert "mocked-database-hid-missing-tokenizer" in quoted  # named inside the boundary (issue 26)
    assert items[1][2].startswith("NEW")
    assert 'project="oracle"' in text


# =====================================================================================================
# completions
# =====================================================================================================
@pytest.mark.slow
def test_completions_come_from_the_index(peer: Peer) -> None:
    def complete(ref: Any, name: str, value: str) -> Any:
        return peer.call(peer.client.complete, ref, {"name": name, "value": value}).completion

    concepts = complete(PromptReference(name="learn-from-session"), "concepts", "zeph")
    assert concepts.values and concepts.values[0] == "zephyr"
    listed = complete(PromptReference(name="learn-from-session"), "concepts", "testing, zeph")
    assert listed.values[0] == "testing, zephyr"
    assert complete(PromptReference(name="retrospective"), "project", "zeph").values == ["zephyr-platform"]
    assert complete(PromptReference(name="reflect"), "type", "pr").values == ["principle"]
    paths = complete(ResourceTemplateReference(uri="oracle://note/{+path}"), "path", "learnings/bulk/")
    assert paths.total == BULK and len(paths.values) == 100 and paths.has_more
    assert paths.values == sorted(paths.values)
    assert complete(ResourceTemplateReference(uri="oracle://note/{+path}"), "path", "บันทึก").values == [THAI_NOTE]
    chunk_ids = complete(ResourceTemplateReference(uri="oracle://chunk/{id}"), "id", "c_")
    assert chunk_ids.has_more and all(v.startswith("c_") for v in chunk_ids.values)
    assert complete(PromptReference(name="consult"), "decision", "sh").values == []  # free text


# =====================================================================================================
# notifications: subscribe, save a file, be told
# =====================================================================================================
def _wait_note(peer: Peer, since: int, match: Any, timeout: float = NOTIFY_CEILING) -> float:
    """Time (monotonic) of the first notification after index `since` that satisfies `match`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for at, message in peer.notes[since:]:
            if match(message):
                return at
        time.sleep(0.01)
    raise AssertionError(f"no matching notification within {timeout}s; got {[type(m).__name__ for _, m in peer.notes]}")


def _is_updated(uri: str) -> Any:
    return lambda m: getattr(m, "method", "") == "notifications/resources/updated" and m.params.uri == uri


def _is_list_changed(m: Any) -> bool:
    return getattr(m, "method", "") == "notifications/resources/list_changed"


def _log_latency(peer: Peer, what: str, seconds: float) -> None:
    with open(LATENCY_LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps({"peer": peer.kind, "what": what, "seconds": round(seconds, 3)}) + "\n")


@pytest.mark.slow
def test_subscribers_are_told_of_a_save(peer: Peer, kb: KB) -> None:
    rel = f"learnings/2026-11-21_notify-{peer.kind}.md"
    path = kb.root / rel
    uri = f"oracle://note/{rel}"
    other = "oracle://note/learnings/2026-01-14_quote-fts5-search-terms.md"  # subscribed by nobody
    text = f"---\ntitle: Notify {peer.kind}\n---\n\n# Notify {peer.kind}\n\n## Body\n\nFirst version.\n"
    if peer.legacy:
        peer.call(peer.client.list_resources, cache_mode="bypass")  # a lister hears list_changed
        peer.call(legacy_subscribe, peer.client, uri)
        measured = _legacy_round(peer, path, uri, text)
    else:
        measured = peer.call(_modern_round, peer, path, uri, text)
    for what, seconds in measured.items():
        _log_latency(peer, what, seconds)
    print(f"{peer.kind}: seconds from the file system to the notification:", measured)
    assert not any(getattr(getattr(m, "params", None), "uri", None) == other for _, m in peer.notes)
    listed = {r.name for r in all_resources(peer)[0]}
    assert rel not in listed  # the note was removed again at the end


def _legacy_round(peer: Peer, path: Path, uri: str, text: str) -> dict[str, float]:
    out = {}
    start, t0 = len(peer.notes), time.monotonic()
    path.write_text(text, encoding="utf-8")
    out["created: updated"] = _wait_note(peer, start, _is_updated(uri)) - t0
    out["created: list_changed"] = _wait_note(peer, start, _is_list_changed) - t0
    time.sleep(0.5)
    start, t0 = len(peer.notes), time.monotonic()
    path.write_text(text.replace("First version.", "Saved version."), encoding="utf-8")
    out["saved: updated"] = _wait_note(peer, start, _is_updated(uri)) - t0
    body = peer.call(peer.client.read_resource, uri, cache_mode="bypass").contents[0].text
    assert "Saved version." in body
    time.sleep(0.5)
    start, t0 = len(peer.notes), time.monotonic()
    path.unlink()
    out["deleted: updated"] = _wait_note(peer, start, _is_updated(uri)) - t0
    out["deleted: list_changed"] = _wait_note(peer, start, _is_list_changed) - t0
    peer.call(legacy_unsubscribe, peer.client, uri)
    return out


async def _modern_round(peer: Peer, path: Path, uri: str, text: str) -> dict[str, float]:
    from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

    out: dict[str, float] = {}

    async def until(sub: Any, want: Any) -> None:
        with anyio.fail_after(NOTIFY_CEILING):
            async for event in sub:
                if want(event):
                    return

    updated = lambda e: isinstance(e, ResourceUpdated) and e.uri == uri  # noqa: E731
    async with peer.client.listen(resource_subscriptions=[uri], resources_list_changed=True) as sub:
        t0 = time.monotonic()
        await anyio.to_thread.run_sync(lambda: path.write_text(text, encoding="utf-8"))
        await until(sub, updated)
        out["created: updated"] = time.monotonic() - t0
        await until(sub, lambda e: isinstance(e, ResourcesListChanged))
        out["created: list_changed"] = time.monotonic() - t0
        await anyio.sleep(0.5)
        t0 = time.monotonic()
        await anyio.to_thread.run_sync(
            lambda: path.write_text(text.replace("First version.", "Saved version."), encoding="utf-8"))
        await until(sub, updated)
        out["saved: updated"] = time.monotonic() - t0
        body = (await peer.client.read_resource(uri, cache_mode="bypass")).contents[0].text
        assert "Saved version." in body
        await anyio.sleep(0.5)
        t0 = time.monotonic()
        await anyio.to_thread.run_sync(path.unlink)
        await until(sub, updated)
        out["deleted: updated"] = time.monotonic() - t0
    return out


# =====================================================================================================
# fast: the services in-process on the bundled index (no server process)
# =====================================================================================================
def test_list_notes_pages_cover_every_note_once(bundled) -> None:
    from oracle_server.mcp.resources import BadCursor, list_notes

    oracle, _ = bundled
    seen, cursor = [], None
    while True:
        page = list_notes(oracle, cursor, page_size=4)
        assert len(page.notes) <= 4
        seen += [n.path for n in page.notes]
        cursor = page.next_cursor
        if cursor is None:
            break
    expected = sorted(p.relative_to(BUNDLED).as_posix() for p in BUNDLED.rglob("*.md") if p.name != "README.md")
    assert seen == expected and page.total == len(expected)
    with pytest.raises(BadCursor):
        list_notes(oracle, "Zm9v")  # base64 of "foo": not a cursor this server made


def test_uris_round_trip_any_file_name() -> None:
    from oracle_server.mcp.resources import UnknownResource, chunk_uri, note_uri, parse_uri

    for rel in ("learnings/x.md", THAI_NOTE, "learnings/100% sure #1?.md", "a/b/c d.md"):
        uri = note_uri(rel)
        assert uri.isascii() and " " not in uri
        assert parse_uri(uri) == ("note", rel)
    assert parse_uri(chunk_uri("c_0123")) == ("chunk", "c_0123")
    assert parse_uri("oracle://stats") == ("stats", "")
    for bad in ("oracle://chunk/a/b", "oracle://other/x", "http://x/y", "oracle://note/"):
        with pytest.raises(UnknownResource):
            parse_uri(bad)


def test_retro_sections_follow_the_bundled_retrospectives(bundled) -> None:
    from oracle_server.mcp.prompts import retro_sections

    oracle, _ = bundled
    files = list((BUNDLED / "retrospectives").glob("*.md"))
    per_file = [re.findall(r"^## (.+)$", f.read_text(encoding="utf-8"), flags=re.M) for f in files]
    common = [h for h in per_file[0] if sum(h in hs for hs in per_file) >= len(files) / 2]
    assert retro_sections(oracle) == common


def test_split_candidates() -> None:
    from oracle_server.mcp.prompts import split_candidates

    bullets = "# Session\n- First lesson that is long enough to keep.\n  continued on a second line\n- ok\n" \
              "* First lesson that is long enough to keep. continued on a second line\n1. A numbered lesson, also long enough.\n"
    assert split_candidates(bullets) == [
        "First lesson that is long enough to keep. continued on a second line",
        "A numbered lesson, also long enough.",
    ]
    paragraphs = "One paragraph that says something useful.\n\nAnother paragraph,\nwrapped, also useful."
    assert split_candidates(paragraphs) == ["One paragraph that says something useful.",
                                            "Another paragraph, wrapped, also useful."]


def test_completions_rank_prefix_before_substring(bundled) -> None:
    from oracle_server.services.support.suggestions import complete_concepts, complete_note_paths

    oracle, _ = bundled
    found = complete_concepts(oracle, "test")
    assert found.values and all(v.startswith("test") for v in found.values[:2])
    contains = [v for v in found.values if not v.startswith("test")]
    assert all("test" in v for v in contains)
    assert complete_note_paths(oracle, "%").values == []  # LIKE wildcards are literal
    assert complete_note_paths(oracle, "principles/").total == len(list((BUNDLED / "principles").glob("*.md")))
