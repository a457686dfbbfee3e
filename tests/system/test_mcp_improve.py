"""oracle_feedback, oracle_supersede, oracle_relations, oracle_read and oracle_verify through a REAL MCP
client session (the SDK's stdio client spawning `oracle serve`), and the same over real HTTP.

The knowledge base is a temp copy of the bundled knowledge plus notes with relations and a frontmatter
supersession, indexed once by the real `oracle index`.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from _corpus import BUNDLED, write
from _mcp import KB, Session, index_kb
from _procs import serve_http, stop_process
from oracle_server.services.capabilities.search import scoring

NOTES = {
    "learnings/2026-10-01_gecko-retry-fixed.md": (
        "---\ntitle: Gecko uploader retries on a fixed delay\n"
        "relations:\n  - [Gecko uploader, writes to, Object store]\n---\n\n"
        "# Gecko uploader retries on a fixed delay\n\nThe gecko uploader retries failed uploads after a fixed "
        "delay of two seconds. Gecko uploader retries, fixed delay, retries.\n"
    ),
    "learnings/2026-10-02_gecko-retry-backoff.md": (
        "---\ntitle: Gecko uploader backs off exponentially\n"
        "relations:\n  - subject: gecko uploader\n    predicate: reads from\n    object: Queue\n---\n\n"
        "# Gecko uploader backs off exponentially\n\nDouble the wait after each failed upload, with jitter.\n"
    ),
    "learnings/2026-10-03_axolotl-tank-old.md": (
        "---\ntitle: Axolotl tank water at 22 degrees\nsuperseded_by: 2026-10-04_axolotl-tank-new.md\n---\n\n"
        "# Axolotl tank water at 22 degrees\n\nKeep the axolotl tank water at 22 degrees.\n"
    ),
    "learnings/2026-10-04_axolotl-tank-new.md": (
        "---\ntitle: Axolotl tank water at 16 degrees\n---\n\n"
        "# Axolotl tank water at 16 degrees\n\nKeep the axolotl tank water at 16 to 18 degrees.\n"
    ),
}
FIXED = "learnings/2026-10-01_gecko-retry-fixed.md"
BACKOFF = "learnings/2026-10-02_gecko-retry-backoff.md"
AXO_OLD = "learnings/2026-10-03_axolotl-tank-old.md"
AXO_NEW = "learnings/2026-10-04_axolotl-tank-new.md"
GECKO_QUERY = "gecko uploader retries fixed delay"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, embedding_seed: Path) -> KB:
    base = tmp_path_factory.mktemp("mcp-improve")
    shutil.copytree(BUNDLED, base / "root")
    for rel, text in NOTES.items():
        write(base / "root" / rel, text)
    return index_kb(base, embedding_seed)[0]


@pytest.fixture(scope="module")
def mcp(kb: KB) -> Iterator[Session]:
    session = Session(kb)
    yield session
    session.close()


def search(mcp: Session, query: str, **args) -> list[dict]:
    return mcp.ok("oracle_search", {"query": query, "limit": 20, "detail": "full", **args})["hits"]


def files(hits: list[dict]) -> list[str]:
    return [h["source_file"] for h in hits]


# -- feedback ------------------------------------------------------------------------------------------
def test_feedback_tool_records_and_moves_ranking_within_the_bound(mcp: Session) -> None:
    before = search(mcp, GECKO_QUERY)
    target = before[0]
    for n in range(1, 4):
        result = mcp.ok("oracle_feedback", {"id": target["id"], "verdict": "misleading", "note": f"stale {n}"})
        assert result["misleading"] == n and result["source_file"] == target["source_file"]
    assert result["feedback_factor"] == round(scoring.feedback_factor(0, 3), 6)
    after = {h["id"]: h for h in search(mcp, GECKO_QUERY)}[target["id"]]
    assert after["breakdown"]["relevance"] == target["score"]
    assert after["score"] == round(target["score"] * scoring.feedback_factor(0, 3), 6)
    assert after["score"] >= target["score"] * (1 - scoring.FEEDBACK_BOUND)


@pytest.mark.parametrize(("args", "field"), [
    ({"id": "c_00000000000000000000", "verdict": "helpful"}, "no indexed chunk"),
    ({"id": "../../etc/passwd", "verdict": "helpful"}, "id"),
    ({"id": "c_00000000000000000000", "verdict": "great"}, "verdict"),
    ({"verdict": "helpful"}, "id"),
])
def test_feedback_tool_errors_name_the_problem(mcp: Session, args: dict, field: str) -> None:
    assert field in mcp.error("oracle_feedback", args)


# -- supersede -----------------------------------------------------------------------------------------
def test_supersede_tool_reorders_points_and_undoes(mcp: Session) -> None:
    before = search(mcp, GECKO_QUERY)
    assert files(before).index(FIXED) < files(before).index(BACKOFF)
    result = mcp.ok("oracle_supersede", {"old_id": FIXED, "new_id": BACKOFF, "reason": "backoff replaced it"})
    assert result["action"] == "supersede" and result["new"]["source_file"] == BACKOFF
    during = search(mcp, GECKO_QUERY)
    assert files(during).index(BACKOFF) < files(during).index(FIXED)
    old = next(h for h in during if h["source_file"] == FIXED)
    assert old["superseded_by"]["source_file"] == BACKOFF and old["superseded_by"]["reason"] == "backoff replaced it"
    assert old["breakdown"]["superseded_factor"] == scoring.SUPERSEDED_FACTOR
    text = mcp.call("oracle_search", {"query": GECKO_QUERY, "limit": 20}).content[0].text
    assert f"SUPERSEDED by {BACKOFF}" in text
    assert mcp.ok("oracle_supersede", {"old_id": FIXED, "undo": True})["action"] == "undo"
    assert files(search(mcp, GECKO_QUERY)) == files(before)


def test_frontmatter_supersession_shows_in_search_and_consult(mcp: Session) -> None:
    hits = search(mcp, "axolotl tank water degrees")
    assert files(hits).index(AXO_NEW) < files(hits).index(AXO_OLD)
    old = next(h for h in hits if h["source_file"] == AXO_OLD)
    assert old["superseded_by"]["via"] == "frontmatter" and old["superseded_by"]["source_file"] == AXO_NEW
    consult = mcp.ok("oracle_consult", {"decision": "What temperature for the axolotl tank water?"})
    sources = {s["source_file"]: s for s in consult["learnings"]}
    assert AXO_NEW in sources
    if AXO_OLD in sources:
        assert sources[AXO_OLD]["superseded_by"]["source_file"] == AXO_NEW
        assert f"superseded by {AXO_NEW}" in consult["guidance"]


@pytest.mark.parametrize(("args", "message"), [
    ({"old_id": FIXED, "new_id": FIXED}, "cannot supersede itself"),
    ({"old_id": "../../../etc/passwd.md", "new_id": BACKOFF}, "'..' is refused"),
    ({"old_id": FIXED}, "new_id is required"),
    ({"old_id": BACKOFF, "undo": True}, "no supersession"),
])
def test_supersede_tool_errors(mcp: Session, args: dict, message: str) -> None:
    assert message in mcp.error("oracle_supersede", args)


# -- relations -----------------------------------------------------------------------------------------
def test_relations_tool_and_search_from_a_triplet(mcp: Session) -> None:
    found = mcp.ok("oracle_relations", {"subject": "GECKO UPLOADER"})
    assert {(r["predicate"], r["object"]) for r in found["relations"]} == {("writes to", "Object store"),
                                                                           ("reads from", "Queue")}
    assert mcp.ok("oracle_relations", {"predicate": "reads from", "object": "queue"})["relations"][0]["source_file"] == BACKOFF
    hits = search(mcp, "axolotl tank", subject="gecko uploader", predicate="reads from")
    assert hits[0]["source_file"] == BACKOFF and hits[0]["found_by"][0] == "relation"
    assert hits[0]["relations"] == [{"subject": "gecko uploader", "predicate": "reads from", "object": "Queue"}]
    assert AXO_NEW in files(hits[1:])  # then text and vectors


def test_learn_tool_takes_relations(mcp: Session, kb: KB) -> None:
    learned = mcp.ok("oracle_learn", {
        "pattern": "The tapir cron job compacts the logs every Sunday.", "title": "Tapir log compaction",
        "relations": [{"subject": "Tapir cron", "predicate": "compacts", "object": "logs"}, ["Tapir cron", "runs", "Sunday"]],
    })
    assert "relations:" in (kb.root / learned["file"]).read_text(encoding="utf-8")
    found = mcp.ok("oracle_relations", {"subject": "tapir cron"})
    assert {r["object"] for r in found["relations"]} == {"logs", "Sunday"}
    bad = mcp.error("oracle_learn", {"pattern": "x", "relations": [["only", "two"]]})
    assert "relation" in bad.lower() or "three" in bad


# -- read ----------------------------------------------------------------------------------------------
def test_read_tool_by_id_by_file_and_section(mcp: Session, kb: KB) -> None:
    hit = search(mcp, "gecko uploader backs off exponentially jitter")[0]
    whole = mcp.ok("oracle_read", {"id": hit["id"]})
    assert whole["content"] == (kb.root / hit["source_file"]).read_text(encoding="utf-8")
    assert whole["focus_id"] == hit["id"] and hit["id"] in [s["id"] for s in whole["sections"]]
    by_file = mcp.ok("oracle_read", {"file": hit["source_file"]})
    assert by_file["content"] == whole["content"] and by_file["frontmatter"]["title"] == hit["title"]
    section = mcp.ok("oracle_read", {"id": hit["id"], "section": True})
    assert section["content_hash"] == hit["content_hash"]
    lines = whole["content"].split("\n")
    assert section["content"] == "\n".join(lines[hit["line_start"] - 1 : hit["line_end"]]).strip()


@pytest.mark.parametrize(("args", "message"), [
    ({"file": "../../etc/passwd.md"}, "'..' is refused"),
    ({"file": "/etc/passwd.md"}, "absolute"),
    ({"file": "learnings/nothing-here.md"}, "no knowledge file"),
    ({}, "exactly one of id"),
    ({"id": "c_00000000000000000000"}, "no indexed chunk"),
])
def test_read_tool_errors(mcp: Session, args: dict, message: str) -> None:
    assert message in mcp.error("oracle_read", args)


# -- verify --------------------------------------------------------------------------------------------
def test_verify_tool_sees_an_edit_made_on_disk(mcp: Session, kb: KB) -> None:
    rel = "learnings/2026-10-05_okapi-feeding.md"
    write(kb.root / rel, "# Okapi feeding\n\nOkapis eat leaves, buds and fruit from the okapi feeding station.\n")
    deadline = time.monotonic() + 30
    while not [h for h in search(mcp, "okapi feeding station leaves") if h["source_file"] == rel]:
        assert time.monotonic() < deadline, "the watcher never indexed the new note"
        time.sleep(0.3)
    hit = next(h for h in search(mcp, "okapi feeding station leaves") if h["source_file"] == rel)
    cite = [{"id": hit["id"], "content_hash": hit["content_hash"]}]
    assert mcp.ok("oracle_verify", {"citations": cite})["results"][0]["status"] == "unchanged"
    consult = mcp.ok("oracle_consult", {"decision": "What should the okapi feeding station offer?"})
    consult_cites = [{"id": s["id"], "content_hash": s["content_hash"]} for s in consult["learnings"] + consult["principles"]]
    assert mcp.ok("oracle_verify", {"citations": consult_cites})["unchanged"] == len(consult_cites)
    # Replaced in one rename, as editors save: a write in place is briefly an empty file, which the watcher
    # may catch and index as gone (seen once in a clean-clone run) before the text arrives.
    edited = kb.root / (rel + ".tmp")
    edited.write_text("# Okapi feeding\n\nOkapis eat leaves only; no fruit at the okapi feeding station.\n", encoding="utf-8")
    os.replace(edited, kb.root / rel)
    deadline = time.monotonic() + 30
    while (status := mcp.ok("oracle_verify", {"citations": cite})["results"][0])["status"] == "unchanged":
        assert time.monotonic() < deadline, "the edit never reached the index"
        time.sleep(0.3)
    assert status["status"] == "changed" and status["current_hash"] != hit["content_hash"]
    (kb.root / rel).unlink()
    deadline = time.monotonic() + 30
    while mcp.ok("oracle_verify", {"citations": cite})["results"][0]["status"] != "gone":
        assert time.monotonic() < deadline, "the deletion never reached the index"
        time.sleep(0.3)
    assert "citations" in mcp.error("oracle_verify", {"citations": []})


# -- the same over HTTP --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def http(kb: KB, mcp: Session) -> Iterator[str]:
    mcp.close()  # one writer process at a time keeps this module simple; the MCP session reopens on demand
    proc, url = serve_http(kb.env, kb.logs_dir, kb.logs_dir / "serve-http.stderr")
    try:
        yield url
    finally:
        stop_process(proc)


def test_http_routes_for_feedback_supersede_relations_read_verify(http: str) -> None:
    with httpx.Client(base_url=http, timeout=120) as client:
        hit = client.get("/api/search", params={"query": "axolotl tank water", "limit": 3}).json()["hits"][0]
        made = client.post("/api/feedback", json={"id": hit["id"], "verdict": "helpful", "note": "clear"})
        assert made.status_code == 201 and made.json()["helpful"] >= 1
        top = client.get("/api/feedback").json()
        assert hit["id"] in [row["id"] for row in top["helpful"]]
        assert client.post("/api/feedback", json={"id": "c_00000000000000000000", "verdict": "helpful"}).status_code == 404
        assert client.post("/api/feedback", json={"id": hit["id"], "verdict": "nope"}).status_code == 422
        done = client.post("/api/supersede", json={"old_id": FIXED, "new_id": BACKOFF})
        assert done.status_code == 201, done.text
        listed = client.get("/api/supersessions").json()["supersessions"]
        assert {(s["old"], s["via"]) for s in listed} >= {(FIXED, "tool"), (AXO_OLD, "frontmatter")}
        assert client.post("/api/supersede", json={"old_id": FIXED, "undo": True}).status_code == 201
        assert client.post("/api/supersede", json={"old_id": FIXED, "new_id": FIXED}).status_code == 400
        rel = client.get("/api/relations", params={"object": "queue"}).json()
        assert rel["total"] == 1 and rel["relations"][0]["source_file"] == BACKOFF
        read = client.get("/api/read", params={"id": hit["id"], "section": "true"})
        assert read.status_code == 200 and read.json()["content_hash"] == hit["content_hash"]
        assert client.get("/api/read", params={"file": "../x.md"}).status_code == 400
        assert client.get("/api/read").status_code == 422
        checked = client.post("/api/verify", json={"citations": [{"id": hit["id"], "content_hash": hit["content_hash"]}]})
        assert checked.status_code == 200 and checked.json()["unchanged"] == 1
        edges = client.get("/api/graph").json()["edges"]
        assert {"source": "entity:gecko uploader", "target": "entity:queue", "weight": 1, "kind": "relation",
                "label": "reads from"} in edges
