"""The HTTP API (`oracle serve --http`) over a REAL server and a real index.

Most tests talk to one `oracle serve --http --port <free>` subprocess on a temp copy of the bundled
knowledge (indexed first by the real `oracle index`), with a file and a folder symlinked to a secret
outside the root. Configurations a running server cannot switch to (another host, a token, CORS origins
from the environment) are built in-process with `oracle_server.http.app.build_app` on a small real index and driven
with Starlette's TestClient, which runs the app's lifespan (MCP session manager) like uvicorn does.

Regression tests for fixed bugs (symlink loops, overlong names, JSON errors for unknown routes) are at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

import _corpus
from _corpus import open_oracle

PROJECT = Path(__file__).resolve().parents[2]
BUNDLED = PROJECT / "knowledge"
from _procs import free_port, oracle_cmd, serve_http, stop_process
from _seed import seed_data_dir
SCRIPT = Path(sys.executable).parent / "oracle"
FTS5_NOTE = "learnings/2026-01-14_quote-fts5-search-terms.md"
FTS5_QUERY = "quote fts5 terms"
SECRET = "SECRET-OUTSIDE-THE-KNOWLEDGE-ROOT-7f3a"
START_TIMEOUT = 120.0
CALL_TIMEOUT = 180.0

API_PATHS = {
    "/health": "get", "/api/search": "get", "/api/consult": "get", "/api/reflect": "get", "/api/list": "get",
    "/api/stats": "get", "/api/concepts": "get", "/api/learn": "post", "/api/graph": "get", "/api/file": "get",
    "/api/logs": "get", "/api/read": "get", "/api/relations": "get", "/api/feedback": "post",
    "/api/supersede": "post", "/api/supersessions": "get", "/api/verify": "post", "/api/edit": "post",
    "/api/archive": "post", "/api/history": "get", "/api/restore": "post",
}
SECOND_METHODS = {"/api/feedback": "get"}  # POST records a verdict, GET lists the most helpful and misleading
# MCP tool -> (HTTP method, path, response model name in the OpenAPI schema)
TOOL_ROUTES = {
    "oracle_search": ("get", "/api/search", "SearchResult"),
    "oracle_consult": ("get", "/api/consult", "ConsultResult"),
    "oracle_reflect": ("get", "/api/reflect", "Document"),
    "oracle_list": ("get", "/api/list", "ListResult"),
    "oracle_stats": ("get", "/api/stats", "Stats"),
    "oracle_concepts": ("get", "/api/concepts", "ConceptsResult"),
    "oracle_learn": ("post", "/api/learn", "LearnResult"),
    "oracle_feedback": ("post", "/api/feedback", "FeedbackResult"),
    "oracle_supersede": ("post", "/api/supersede", "SupersedeResult"),
    "oracle_relations": ("get", "/api/relations", "RelationsResult"),
    "oracle_read": ("get", "/api/read", "ReadResult"),
    "oracle_verify": ("post", "/api/verify", "VerifyResult"),
    "oracle_edit": ("post", "/api/edit", "EditResult"),
    "oracle_archive": ("post", "/api/archive", "ArchiveResult"),
    "oracle_history": ("get", "/api/history", "HistoryResult"),
    "oracle_restore": ("post", "/api/restore", "RestoreResult"),
}


# -- helpers ------------------------------------------------------------------------------------------




def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", **extra)
    return env


def error_of(resp: httpx.Response) -> str:
    """The response is a JSON object with a non-empty 'error' message; return it."""
    assert resp.headers.get("content-type", "").startswith("application/json"), (resp.status_code, resp.text[:300])
    body = resp.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"].strip(), body
    return body["error"]


@dataclass
class Server:
    url: str
    port: int
    root: Path
    data: Path
    outside: Path
    env: dict[str, str]
    stderr_path: Path
    proc: subprocess.Popen

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.get(self.url + path, timeout=CALL_TIMEOUT, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.post(self.url + path, timeout=CALL_TIMEOUT, **kw)

    def raw_get(self, raw_path_and_query: str, headers: dict[str, str] | None = None) -> httpx.Response:
        """GET with the target sent byte for byte (no re-encoding by the client)."""
        with httpx.Client(timeout=CALL_TIMEOUT) as client:
            request = client.build_request("GET", self.url + "/", headers=headers)
            request.url = request.url.copy_with(raw_path=raw_path_and_query.encode("ascii"))
            return client.send(request)

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, embedding_seed: Path) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("http")
    root, data, outside = base / "root", base / "data", base / "outside"
    shutil.copytree(BUNDLED, root)
    outside.mkdir()
    seed_data_dir(embedding_seed, data)
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    # A file symlink and a folder symlink inside the root, both leading out of it.
    (root / "learnings" / "escape.md").symlink_to(outside / "secret.md")
    (root / "escape-dir").symlink_to(outside, target_is_directory=True)
    # A non-markdown file inside the root.
    (root / "learnings" / "notes.txt").write_text(SECRET, encoding="utf-8")
    env = clean_env(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data))
    done = subprocess.run([*oracle_cmd(), "index", "--json"], env=env, cwd=PROJECT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert not json.loads(done.stdout)["vector_failed"], done.stdout
    stderr_path = base / "serve.stderr"
    proc, url = serve_http(env, base, stderr_path, timeout=START_TIMEOUT)
    srv = Server(url, int(url.rsplit(":", 1)[1]), root, data, outside, env, stderr_path, proc)
    try:
        yield srv
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def openapi(server: Server) -> dict:
    resp = server.get("/openapi.json")
    assert resp.status_code == 200
    return resp.json()


def component(spec: dict, name: str) -> dict:
    return spec["components"]["schemas"][name]


def response_model_name(spec: dict, path: str, method: str) -> str:
    op = spec["paths"][path][method]
    ok = next(code for code in op["responses"] if code.startswith("2"))
    schema = op["responses"][ok]["content"]["application/json"]["schema"]
    if "anyOf" in schema:  # a route that answers `detail=brief` too: the full shape (the default) first
        schema = schema["anyOf"][0]
    return schema["$ref"].rsplit("/", 1)[-1]


def call_mcp(url: str, calls: list[tuple[str, dict]]) -> tuple[list, list]:
    """tools/list and the given tool calls over one streamable-HTTP MCP session."""
    from mcp import Client
    from mcp_types import Implementation

    async def session() -> tuple[list, list]:
        async with Client(url + "/mcp", read_timeout_seconds=CALL_TIMEOUT,
                          client_info=Implementation(name="http-parity", version="1.0")) as client:
            tools = (await client.list_tools()).tools
            results = [await client.call_tool(name, args) for name, args in calls]
            return tools, results

    return anyio.run(session)


# =====================================================================================================
# every route: 200 and the documented shape
# =====================================================================================================
def _models() -> dict[str, type[BaseModel]]:
    from oracle_server.services.capabilities.browse import Graph
    from oracle_server.services.capabilities.files import FileContent
    from oracle_server.http.app import Health, LogsResult
    from oracle_server.services.vocabulary.models import ConceptsResult, ConsultResult, Document, ListResult, SearchResult
    from oracle_server.services.capabilities.stats import Stats

    return {"Health": Health, "SearchResult": SearchResult, "ConsultResult": ConsultResult, "Document": Document,
            "ListResult": ListResult, "Stats": Stats, "ConceptsResult": ConceptsResult, "Graph": Graph,
            "FileContent": FileContent, "LogsResult": LogsResult}


GET_ROUTES = [
    ("/health", {}),
    ("/api/search", {"query": FTS5_QUERY}),
    ("/api/consult", {"decision": "Should the search layer use a mocked database in its tests?"}),
    ("/api/reflect", {}),
    ("/api/list", {}),
    ("/api/stats", {}),
    ("/api/concepts", {}),
    ("/api/graph", {}),
    ("/api/file", {"path": FTS5_NOTE}),
    ("/api/logs", {}),
]


@pytest.mark.parametrize(("path", "params"), GET_ROUTES, ids=[p for p, _ in GET_ROUTES])
def test_get_route_returns_documented_shape(server: Server, openapi: dict, path: str, params: dict) -> None:
    resp = server.get(path, params=params)
    assert resp.status_code == 200, resp.text[:500]
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    name = response_model_name(openapi, path, "get")
    schema = component(openapi, name)
    # Exactly the documented fields, every required one present, and the values of the right types.
    assert set(body) == set(schema["properties"]), (name, sorted(body))
    assert set(schema.get("required", [])) <= set(body)
    _models()[name].model_validate(body)


def test_route_values_are_real(server: Server) -> None:
    health = server.get("/health").json()
    assert health["status"] == "ok" and health["files"] == 33 and health["chunks"] > 300
    search = server.get("/api/search", params={"query": FTS5_QUERY}).json()
    assert search["hits"][0]["source_file"] == FTS5_NOTE
    assert search["limit"] == 5 and len(search["hits"]) == 5 and search["total"] >= 5
    assert search["meta"]["mode"] == "hybrid" and search["meta"]["vector_matches"] > 0
    stats = server.get("/api/stats").json()
    assert stats["documents"]["total"] == health["chunks"] and stats["files"]["total"] == health["files"]
    assert stats["vector_store"]["ok"] and stats["embeddings"]["coverage"] == 1.0 and stats["drift"]["in_sync"]
    assert sum(stats["documents"]["by_type"].values()) == stats["documents"]["total"]
    assert set(stats["documents"]["by_type"]) == {"principle", "learning", "retro"}
    concepts = server.get("/api/concepts", params={"limit": 5}).json()
    assert len(concepts["concepts"]) == 5 and concepts["total"] == stats["concepts"]
    counts = [c["count"] for c in concepts["concepts"]]
    assert counts == sorted(counts, reverse=True)
    graph = server.get("/api/graph", params={"limit": 10}).json()
    concept_nodes = [n for n in graph["nodes"] if n["kind"] == "concept"]
    assert len(concept_nodes) == 10
    ids = {n["id"] for n in graph["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in graph["edges"])
    no_docs = server.get("/api/graph", params={"limit": 10, "documents": "false"}).json()
    assert {n["kind"] for n in no_docs["nodes"]} == {"concept"}
    file = server.get("/api/file", params={"path": FTS5_NOTE}).json()
    text = (server.root / FTS5_NOTE).read_text(encoding="utf-8")
    assert file["path"] == FTS5_NOTE and file["text"] == text and file["size"] == len(text.encode())
    fts5_ids = {h["id"] for h in server.get("/api/search", params={"query": FTS5_QUERY, "limit": 100}).json()["hits"]
                if h["source_file"] == FTS5_NOTE}
    assert fts5_ids and fts5_ids <= set(file["chunk_ids"])
    logs = server.get("/api/logs", params={"limit": 1}).json()
    assert len(logs["searches"]) == 1 and logs["searches"][0]["client"] == "http"
    assert set(logs["per_day"]) == {"searches", "consultations", "learnings"}
    assert logs["per_day"]["searches"] and logs["per_day"]["searches"][-1]["count"] >= 2


def test_search_parameters(server: Server) -> None:
    q = "tests that mock the database"
    for doc_type in ("principle", "learning", "retro"):
        hits = server.get("/api/search", params={"query": q, "type": doc_type, "limit": 10}).json()["hits"]
        assert hits and {h["type"] for h in hits} == {doc_type}
    first = server.get("/api/search", params={"query": q, "limit": 8}).json()
    paged = server.get("/api/search", params={"query": q, "limit": 3, "offset": 2}).json()
    assert [h["id"] for h in paged["hits"]] == [h["id"] for h in first["hits"]][2:5]
    fts = server.get("/api/search", params={"query": q, "mode": "fts", "limit": 10}).json()
    assert fts["meta"]["mode"] == "fts" and all(h["found_by"] == ["fts"] for h in fts["hits"])
    vec = server.get("/api/search", params={"query": q, "mode": "vector", "limit": 10}).json()
    assert vec["meta"]["mode"] == "vector" and all(h["found_by"] == ["vector"] for h in vec["hits"])
    grouped = server.get("/api/search", params={"query": q, "limit": 10, "group_by_file": "true"}).json()
    files = [h["source_file"] for h in grouped["hits"]]
    assert len(files) == len(set(files))
    # ?concepts=a,b and ?concepts=a&concepts=b mean the same.
    a = server.get("/api/search", params={"query": "search", "concepts": "fts5,sqlite", "limit": 20}).json()
    b = server.get("/api/search", params=[("query", "search"), ("concepts", "fts5"), ("concepts", "sqlite"),
                                          ("limit", "20")]).json()
    assert [h["id"] for h in a["hits"]] == [h["id"] for h in b["hits"]] and a["hits"]
    assert all({"fts5", "sqlite"} & set(h["concepts"]) for h in a["hits"])
    weighted = server.get("/api/search", params={"query": q, "fusion": "weighted"}).json()
    assert weighted["meta"]["fusion"] == "weighted"


@pytest.mark.parametrize("name", sorted(_corpus.HOSTILE_QUERIES))
def test_hostile_queries_never_fail(server: Server, name: str) -> None:
    resp = server.get("/api/search", params={"query": _corpus.HOSTILE_QUERIES[name]})
    assert resp.status_code == 200, resp.text[:300]
    assert isinstance(resp.json()["hits"], list)


# =====================================================================================================
# the OpenAPI schema and the docs page
# =====================================================================================================
def test_openapi_lists_every_route(openapi: dict) -> None:
    assert openapi["openapi"].startswith("3.")
    documented = {path: set(item) for path, item in openapi["paths"].items()}
    assert documented == {path: {method, SECOND_METHODS.get(path, method)} for path, method in API_PATHS.items()}
    expected_models = {
        "/health": "Health", "/api/search": "SearchResult", "/api/consult": "ConsultResult", "/api/reflect": "Document",
        "/api/list": "ListResult", "/api/stats": "Stats", "/api/concepts": "ConceptsResult", "/api/learn": "LearnResult",
        "/api/graph": "Graph", "/api/file": "FileContent", "/api/logs": "LogsResult", "/api/read": "ReadResult",
        "/api/relations": "RelationsResult", "/api/feedback": "FeedbackResult", "/api/supersede": "SupersedeResult",
        "/api/supersessions": "Supersessions", "/api/verify": "VerifyResult", "/api/edit": "EditResult",
        "/api/archive": "ArchiveResult",
    }
    for path, model in expected_models.items():
        assert response_model_name(openapi, path, API_PATHS[path]) == model, path
    shapes = openapi["paths"]["/api/search"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert [s["$ref"].rsplit("/", 1)[-1] for s in shapes["anyOf"]] == ["SearchResult", "BriefSearchResult"]
    learn = openapi["paths"]["/api/learn"]["post"]
    assert learn["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/LearnRequest")
    assert "201" in learn["responses"]
    # Query parameters are the shared request models' fields, with their bounds.
    from oracle_server.services.vocabulary.models import ConceptsRequest, ConsultRequest, ListRequest, ReflectRequest, SearchRequest

    for path, model in [("/api/search", SearchRequest), ("/api/consult", ConsultRequest), ("/api/list", ListRequest),
                        ("/api/reflect", ReflectRequest), ("/api/concepts", ConceptsRequest)]:
        params = {p["name"]: p for p in openapi["paths"][path]["get"]["parameters"]}
        assert set(params) == set(model.model_fields), path
        assert all(p["in"] == "query" for p in params.values())
        for name, field in model.model_fields.items():
            assert params[name]["required"] == field.is_required(), (path, name)
    search = {p["name"]: p["schema"] for p in openapi["paths"]["/api/search"]["get"]["parameters"]}
    assert search["limit"]["minimum"] == 1 and search["limit"]["maximum"] == 100
    assert search["mode"]["enum"] == ["hybrid", "fts", "vector"]
    assert search["query"]["minLength"] == 1
    file_params = {p["name"]: p for p in openapi["paths"]["/api/file"]["get"]["parameters"]}
    assert file_params["path"]["required"] is True and file_params["path"]["schema"]["maxLength"] == 1000


def test_docs_and_dashboard_are_served(server: Server) -> None:
    docs = server.get("/docs")
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert "/static/docs.js" in docs.text
    index = server.get("/")
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    assert 'id="search-form"' in index.text and "/static/app.js" in index.text
    for asset, kind in [("app.js", "javascript"), ("app.css", "css"), ("docs.js", "javascript")]:
        resp = server.get(f"/static/{asset}")
        assert resp.status_code == 200 and kind in resp.headers["content-type"], asset
    assert server.get("/static/../http.py").status_code == 404  # no way out of static/


# =====================================================================================================
# parameters and results match the MCP tools
# =====================================================================================================
def test_http_matches_mcp_tools(server: Server, openapi: dict) -> None:
    # full detail: MCP's default is brief (issue 40), HTTP's full; with the same detail both answer the same
    search_args = {"query": "tests that mock the database", "type": "learning", "limit": 7, "offset": 1, "mode": "hybrid",
                   "detail": "full"}
    consult_args = {"decision": "Should the search layer use a mocked database in its tests?", "budget_tokens": 900}
    calls = [
        ("oracle_search", search_args),
        ("oracle_consult", consult_args),
        ("oracle_list", {"type": "principle", "limit": 4, "offset": 2, "group_by_file": True}),
        ("oracle_concepts", {"limit": 9, "type": "retro"}),
        ("oracle_stats", {}),
        ("oracle_reflect", {"type": "principle"}),
        ("oracle_search", {"query": "x", "limit": 0}),
    ]
    tools, results = call_mcp(server.url, calls)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == set(TOOL_ROUTES)
    for name, (method, path, model) in TOOL_ROUTES.items():
        tool = by_name[name]
        op = openapi["paths"][path][method]
        if method == "get":
            http_params = {p["name"]: p for p in op.get("parameters", [])}
            http_required = {n for n, p in http_params.items() if p["required"]}
        else:
            ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            body = component(openapi, ref.rsplit("/", 1)[-1])
            http_params, http_required = body["properties"], set(body.get("required", []))
        mcp_props = tool.input_schema.get("properties", {})
        # Every MCP argument exists over HTTP (HTTP may offer more filters), and the same ones are required.
        assert set(mcp_props) <= set(http_params), (name, set(mcp_props) - set(http_params))
        assert set(tool.input_schema.get("required", [])) == http_required, name
        assert tool.output_schema is None, name  # issue 40: no output schemas in tools/list; OpenAPI keeps them

    mcp_search, mcp_consult, mcp_list, mcp_concepts, mcp_stats, mcp_reflect, mcp_bad = results
    for result in results[:-1]:
        assert not result.is_error, result.content[0].text
    http_search = server.get("/api/search", params=search_args).json()
    strip = lambda r: {k: v for k, v in r.items() if k != "meta"}  # noqa: E731 - took_ms differs
    assert strip(http_search) == strip(mcp_search.structured_content)
    assert http_search["meta"]["mode"] == mcp_search.structured_content["meta"]["mode"]

    http_consult = server.get("/api/consult", params=consult_args).json()
    for key in ("principles", "learnings"):
        assert [s["id"] for s in http_consult[key]] == [s["id"] for s in mcp_consult.structured_content[key]]
        assert [s["content_hash"] for s in http_consult[key]] == [s["content_hash"] for s in mcp_consult.structured_content[key]]
    assert http_consult["budget_tokens"] == mcp_consult.structured_content["budget_tokens"] == 900
    assert http_consult["decision"] == mcp_consult.structured_content["decision"]

    http_list = server.get("/api/list", params={"type": "principle", "limit": 4, "offset": 2, "group_by_file": "true"})
    assert http_list.json() == mcp_list.structured_content
    assert server.get("/api/concepts", params={"limit": 9, "type": "retro"}).json() == mcp_concepts.structured_content
    http_stats = server.get("/api/stats").json()
    for key in ("documents", "files", "concepts", "embeddings", "vector_store", "drift", "root", "version"):
        assert http_stats[key] == mcp_stats.structured_content[key], key
    assert http_stats["usage"]["searches"] >= mcp_stats.structured_content["usage"]["searches"]
    http_reflect = server.get("/api/reflect", params={"type": "principle"}).json()
    assert set(http_reflect) == set(mcp_reflect.structured_content)
    assert http_reflect["type"] == mcp_reflect.structured_content["type"] == "principle"

    # The same bad argument is refused by both, naming the field.
    assert mcp_bad.is_error and "limit" in mcp_bad.content[0].text
    assert "limit" in error_of(server.get("/api/search", params={"query": "x", "limit": 0}))


# =====================================================================================================
# invalid input: 4xx with an error message, never 500
# =====================================================================================================
BAD_GETS = [
    ("/api/search", {"query": "x", "limit": "0"}, "limit"),
    ("/api/search", {"query": "x", "limit": "101"}, "limit"),
    ("/api/search", {"query": "x", "limit": "abc"}, "limit"),
    ("/api/search", {"query": "x", "offset": "-1"}, "offset"),
    ("/api/search", {"query": "x", "mode": "bogus"}, "mode"),
    ("/api/search", {"query": "x", "type": "bogus"}, "type"),
    ("/api/search", {"query": "x", "fusion": "bogus"}, "fusion"),
    ("/api/search", {"query": "x", "date_from": "yesterday"}, "date_from"),
    ("/api/search", {"query": "x", "group_by_file": "maybe"}, "group_by_file"),
    ("/api/search", {"query": "x", "project": "p" * 201}, "project"),
    ("/api/search", {"query": "x", "nonsense": "1"}, "nonsense"),
    ("/api/search", {"query": ""}, "query"),
    ("/api/search", {"query": "   "}, "empty"),
    ("/api/search", {"query": "\x00"}, "NUL"),
    ("/api/search", {"query": "x" * 10_001}, "query"),
    ("/api/search", {}, "query"),
    ("/api/consult", {}, "decision"),
    ("/api/consult", {"decision": " "}, "empty"),
    ("/api/consult", {"decision": "x", "budget_tokens": "99"}, "budget_tokens"),
    ("/api/consult", {"decision": "x", "budget_tokens": "8001"}, "budget_tokens"),
    ("/api/consult", {"decision": "x" * 2001}, "decision"),
    ("/api/reflect", {"type": "retro"}, "type"),
    ("/api/list", {"limit": "0"}, "limit"),
    ("/api/list", {"limit": "101"}, "limit"),
    ("/api/list", {"offset": "-1"}, "offset"),
    ("/api/concepts", {"limit": "0"}, "limit"),
    ("/api/concepts", {"limit": "501"}, "limit"),
    ("/api/graph", {"limit": "0"}, "limit"),
    ("/api/graph", {"limit": "201"}, "limit"),
    ("/api/graph", {"documents": "perhaps"}, "documents"),
    ("/api/logs", {"limit": "0"}, "limit"),
    ("/api/logs", {"days": "366"}, "days"),
    ("/api/file", {}, "path"),
    ("/api/file", {"path": "a" * 1001}, "path"),
]


@pytest.mark.parametrize(("path", "params", "names"), BAD_GETS,
                         ids=[f"{p}-{'&'.join(f'{k}={v[:12]!r}' for k, v in q.items()) or 'none'}" for p, q, _ in BAD_GETS])
def test_invalid_get_is_4xx_with_error(server: Server, path: str, params: dict, names: str) -> None:
    resp = server.get(path, params=params)
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:300])
    assert names in error_of(resp)


def _learn_files(server: Server) -> list[str]:
    return sorted(p.name for p in (server.root / "learnings").iterdir())


BAD_LEARNS = [
    ("bad-json", {"content": b'{"pattern": "x",', "headers": {"content-type": "application/json"}}, "JSON"),
    ("not-an-object", {"json": ["pattern", "x"]}, "body"),
    ("empty-body", {"content": b"", "headers": {"content-type": "application/json"}}, ""),
    ("form-encoded", {"data": {"pattern": "x"}}, ""),
    ("missing-pattern", {"json": {"title": "t"}}, "pattern"),
    ("blank-pattern", {"json": {"pattern": "  \n "}}, "pattern"),
    ("nul-pattern", {"json": {"pattern": "a\x00b"}}, "NUL"),
    ("oversized", {"json": {"pattern": "x" * 50_001}}, "pattern"),
    ("title-too-long", {"json": {"pattern": "x", "title": "t" * 201}}, "title"),
    ("long-concept", {"json": {"pattern": "x", "concepts": ["c" * 65]}}, "concept"),
    ("too-many-concepts", {"json": {"pattern": "x", "concepts": [f"c{i}" for i in range(21)]}}, "concepts"),
    ("concepts-not-strings", {"json": {"pattern": "x", "concepts": [1, 2]}}, "concept"),
    ("unknown-field", {"json": {"pattern": "x", "evil": True}}, "evil"),
    ("pattern-not-string", {"json": {"pattern": {"a": 1}}}, "pattern"),
]


@pytest.mark.parametrize(("case", "kwargs", "names"), BAD_LEARNS, ids=[c for c, _, _ in BAD_LEARNS])
def test_invalid_learn_is_4xx_and_writes_nothing(server: Server, case: str, kwargs: dict, names: str) -> None:
    before = _learn_files(server)
    resp = server.post("/api/learn", **kwargs)
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:300])
    assert names in error_of(resp)
    assert _learn_files(server) == before


def test_learn_over_http(server: Server) -> None:
    pattern = ("Platypus ledgers need a lock per account: two writers on one ledger lost an entry.\n\n"
               "<script>alert('not executed')</script>")
    resp = server.post("/api/learn", json={"pattern": pattern, "title": "Platypus ledger locking",
                                           "concepts": "ledger, locking", "source": "test_http"})
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert body["file"].startswith("learnings/") and body["title"] == "Platypus ledger locking"
    assert body["concepts"] == ["ledger", "locking"] and body["embedded"] is True and body["chunk_ids"]
    written = (server.root / body["file"]).read_text(encoding="utf-8")
    assert "Platypus ledgers need a lock per account" in written
    hits = server.get("/api/search", params={"query": "platypus ledger lock"}).json()["hits"]
    assert hits and hits[0]["source_file"] == body["file"]
    assert server.get("/api/file", params={"path": body["file"]}).json()["text"] == written
    logs = server.get("/api/logs").json()
    assert any(row["file"] == body["file"] and row["client"] == "http" for row in logs["learnings"])


# =====================================================================================================
# /api/file never leaves the root
# =====================================================================================================
def _assert_refused(server: Server, resp: httpx.Response) -> None:
    assert resp.status_code in (400, 404), (resp.status_code, resp.text[:300])
    error_of(resp)
    assert SECRET not in resp.text and "root:x:" not in resp.text


FILE_PARAMS = [
    "/etc/passwd",
    "/etc/hostname.md",
    "//etc/passwd.md",
    "~/secret.md",
    "C:\\Windows\\win.ini.md",
    "../outside/secret.md",
    "learnings/../../outside/secret.md",
    "learnings/../../../../../../etc/passwd",
    "..\\outside\\secret.md",
    "learnings\\..\\..\\outside\\secret.md",
    "%2e%2e/outside/secret.md",
    "%252e%252e%252foutside%252fsecret.md",
    "learnings/x.md\x00.txt",
    "learnings/escape.md\x00",
    "learnings/notes.txt",
    "README",
    "learnings",
    "learnings/escape.md",
    "escape-dir/secret.md",
    "escape-dir/secret.txt",
    "learnings/does-not-exist.md",
    "",
    " ",
]


@pytest.mark.parametrize("raw", FILE_PARAMS, ids=[repr(p) for p in FILE_PARAMS])
def test_file_refuses_paths_outside_the_root(server: Server, raw: str) -> None:
    _assert_refused(server, server.get("/api/file", params={"path": raw}))


def test_file_refuses_absolute_path_to_the_outside_file(server: Server) -> None:
    _assert_refused(server, server.get("/api/file", params={"path": str(server.outside / "secret.md")}))
    _assert_refused(server, server.get("/api/file", params={"path": str(server.root / "learnings" / "escape.md")}))


RAW_TARGETS = [
    "/api/file?path=..%2Foutside%2Fsecret.md",
    "/api/file?path=%2e%2e%2foutside%2fsecret.md",
    "/api/file?path=%252e%252e%252foutside%252fsecret.md",
    "/api/file?path=%25252e%25252e%25252foutside%25252fsecret.md",
    "/api/file?path=..%5Coutside%5Csecret.md",
    "/api/file?path=..%255Coutside%255Csecret.md",
    "/api/file?path=learnings%2Fescape.md%00",
    "/api/file?path=%00",
    "/api/file?path=%2Fetc%2Fpasswd",
    "/api/file?path=%C0%AE%C0%AE%2Foutside%2Fsecret.md",  # overlong UTF-8 dots
    "/api/file?path=%EF%BC%8E%EF%BC%8E%2Foutside%2Fsecret.md",  # fullwidth dots
    "/api/file?path=..%2F..%2F..%2F..%2Fetc%2Fpasswd&path=" + "learnings%2Fx.md",
]


@pytest.mark.parametrize("target", RAW_TARGETS)
def test_file_refuses_encoded_traversal(server: Server, target: str) -> None:
    _assert_refused(server, server.raw_get(target))


def test_file_reads_a_note_inside_the_root(server: Server) -> None:
    resp = server.get("/api/file", params={"path": "./learnings//" + FTS5_NOTE.split("/", 1)[1]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["path"] == FTS5_NOTE


# =====================================================================================================
# Host header, CORS
# =====================================================================================================
@pytest.mark.parametrize("method_path", ["GET /api/stats", "GET /", "GET /docs", "POST /api/learn", "POST /mcp",
                                         "GET /openapi.json", "OPTIONS /api/search"])
@pytest.mark.parametrize("host", ["evil.com", "evil.com:{port}", "127.0.0.1:1", "localhost.evil.com:{port}"])
def test_foreign_host_header_is_421(server: Server, method_path: str, host: str) -> None:
    method, path = method_path.split()
    resp = httpx.request(method, server.url + path, headers={"Host": host.format(port=server.port)},
                         json={"pattern": "should never be written"} if method == "POST" else None, timeout=30)
    assert resp.status_code == 421
    assert "not served here" in error_of(resp)


def test_own_host_names_are_served(server: Server) -> None:
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"LOCALHOST:{server.port}"):
        assert server.get("/health", headers={"Host": host}).status_code == 200, host


def _preflight(server_url: str, origin: str, method: str = "GET", path: str = "/api/search",
               headers: str | None = None, client: Any = None) -> httpx.Response:
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        h["Access-Control-Request-Headers"] = headers
    if client is not None:
        return client.options(path, headers=h)
    return httpx.options(server_url + path, headers=h, timeout=30)


def test_cors_allow_list(server: Server) -> None:
    for origin in (f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"):
        resp = _preflight(server.url, origin)
        assert resp.status_code == 200
        assert resp.headers.get("access-control-allow-origin") == origin
        post = _preflight(server.url, origin, "POST", "/api/learn", "authorization,content-type")
        assert post.status_code == 200 and post.headers.get("access-control-allow-origin") == origin
        simple = server.get("/api/stats", headers={"Origin": origin})
        assert simple.headers.get("access-control-allow-origin") == origin
    for origin in ("http://evil.com", "null", f"http://127.0.0.1:{server.port}.evil.com", "*",
                   f"https://127.0.0.1:{server.port}", f"http://127.0.0.1:{server.port + 1}"):
        resp = _preflight(server.url, origin)
        assert "access-control-allow-origin" not in resp.headers, origin
        assert resp.status_code >= 400, origin
        simple = server.get("/api/stats", headers={"Origin": origin})
        assert simple.status_code == 200 and "access-control-allow-origin" not in simple.headers, origin
    assert "access-control-allow-origin" not in server.get("/api/stats").headers


# =====================================================================================================
# configurations built in-process: non-loopback host, token, CORS origins from the environment
# =====================================================================================================
@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory):
    """A small real index (three bundled learnings) for in-process apps. Tests may write learnings to it."""
    base = tmp_path_factory.mktemp("http-small")
    root = base / "root"
    (root / "learnings").mkdir(parents=True)
    for name in ("2026-01-14_quote-fts5-search-terms.md", "2026-03-05_webhook-signatures-and-clock-skew.md",
                 "2026-06-02_sort-before-you-serialise.md"):
        shutil.copy(BUNDLED / "learnings" / name, root / "learnings" / name)
    oracle = open_oracle(root, base / "data")
    report = oracle.indexer.sync()
    assert report.added == 3 and not report.vector_failed, report.warnings
    yield oracle
    oracle.close()


def _client(app: Any, port: int, raise_server_exceptions: bool = True):
    from starlette.testclient import TestClient

    return TestClient(app, base_url=f"http://127.0.0.1:{port}", raise_server_exceptions=raise_server_exceptions)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.5", "example.com", ""])
def test_non_loopback_without_token_refuses_to_start(small, host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle_server.services.runtime.app import ServerConfigError
    from oracle_server.http.app import build_app

    monkeypatch.delenv("ORACLE_TOKEN", raising=False)
    with pytest.raises(ServerConfigError, match="ORACLE_TOKEN"):
        build_app(small, host=host, port=free_port())
    monkeypatch.setenv("ORACLE_TOKEN", "")  # an empty token is no token
    with pytest.raises(ServerConfigError):
        build_app(small, host=host, port=free_port())


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_starts_without_token(small, host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle_server.http.app import build_app

    monkeypatch.delenv("ORACLE_TOKEN", raising=False)
    build_app(small, host=host, port=free_port())


def test_cli_refuses_public_host_without_token(tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / "data"))
    (tmp_path / "root").mkdir()
    done = subprocess.run([*oracle_cmd(), "serve", "--http", "--host", "0.0.0.0", "--port", str(port), "--no-index"],
                          env=env, cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "ORACLE_TOKEN" in done.stderr
    with socket.socket() as sock:  # nothing listens
        assert sock.connect_ex(("127.0.0.1", port)) != 0


MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "token-test", "version": "1.0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_token_guards_writes_and_mcp(small) -> None:
    from oracle_server.http.app import build_app

    port = free_port()
    app = build_app(small, host="0.0.0.0", port=port, token="s3cret-Tq7-w9Zk-LpX")
    learnings = small.settings.root / "learnings"
    before = sorted(p.name for p in learnings.iterdir())
    learn = {"pattern": "Wombat burrows need two exits.", "title": "Wombat burrow exits"}
    wrong = [None, "", "Bearer", "Bearer nope", "Bearer s3cret-Tq7-w9Zk-Lp", "Bearer s3cret-Tq7-w9Zk-LpX2",
             "Basic s3cret-Tq7-w9Zk-LpX", "s3cret-Tq7-w9Zk-LpX", "Bearers3cret-Tq7-w9Zk-LpX",
             "Bearer S3CRET-TQ7-W9ZK-LPX"]
    with _client(app, port) as client:
        for auth in wrong:
            headers = {"Authorization": auth} if auth else {}
            resp = client.post("/api/learn", json=learn, headers=headers)
            assert resp.status_code == 401, (auth, resp.status_code)
            assert "token" in error_of(resp)
            # The token is checked before the body is even parsed.
            assert client.post("/api/learn", content=b"{bad", headers=headers).status_code == 401
            resp = client.post("/mcp", json=MCP_INIT, headers={**MCP_HEADERS, **headers})
            assert resp.status_code == 401, (auth, resp.status_code)
            assert client.get("/mcp", headers=headers).status_code == 401
        assert sorted(p.name for p in learnings.iterdir()) == before  # nothing was written

        # Reads need the token too (issue 13); the dashboard's static shell does not.
        assert client.get("/api/stats").status_code == 401
        assert client.get("/api/search", params={"query": FTS5_QUERY}).status_code == 401
        assert client.get("/").status_code == 200
        # With the token: the write works and MCP answers.
        good = {"Authorization": "Bearer s3cret-Tq7-w9Zk-LpX"}
        resp = client.post("/api/learn", json=learn, headers=good)
        assert resp.status_code == 201, resp.text
        assert (small.settings.root / resp.json()["file"]).is_file()
        resp = client.post("/mcp", json=MCP_INIT, headers={**MCP_HEADERS, **good})
        assert resp.status_code == 200, resp.text
        assert '"serverInfo"' in resp.text and '"oracle"' in resp.text
        # The bind address itself is a served Host name; others are not.
        assert client.get("/health", headers={"Host": f"0.0.0.0:{port}"}).status_code == 200
        assert client.get("/health", headers={"Host": "evil.com"}).status_code == 421


def test_token_from_environment(small, monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle_server.http.app import build_app

    monkeypatch.setenv("ORACLE_TOKEN", "from-env-Hq4-zV8m-Rt2")
    port = free_port()
    app = build_app(small, host="0.0.0.0", port=port)
    good = {"Authorization": "Bearer from-env-Hq4-zV8m-Rt2"}
    with _client(app, port) as client:
        assert client.post("/api/learn", json={"pattern": "x"}).status_code == 401
        assert client.post("/api/learn", json={"pattern": " "}, headers=good).status_code == 422
        assert client.get("/api/stats", headers=good).status_code == 200


def test_loopback_with_token_still_guards_writes(small) -> None:
    from oracle_server.http.app import build_app

    port = free_port()
    with _client(build_app(small, port=port, token="t0k-Jw5-pB7x-Nc3"), port) as client:
        assert client.post("/api/learn", json={"pattern": "x"}).status_code == 401
        assert client.post("/mcp", json=MCP_INIT, headers=MCP_HEADERS).status_code == 401
        assert client.get("/api/list").status_code == 401
        assert client.get("/api/list", headers={"Authorization": "Bearer t0k-Jw5-pB7x-Nc3"}).status_code == 200


def test_cors_origins_from_environment_never_wildcard(small, monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle_server.http.app import build_app

    monkeypatch.setenv("ORACLE_CORS_ORIGINS", "https://app.example, *, http://tools.example:8080")
    port = free_port()
    with _client(build_app(small, port=port), port) as client:
        for origin in ("https://app.example", "http://tools.example:8080"):
            resp = _preflight("", origin, client=client)
            assert resp.status_code == 200 and resp.headers.get("access-control-allow-origin") == origin
        for origin in ("http://evil.com", "https://app.example.evil.com", f"http://127.0.0.1:{port}", "*"):
            resp = _preflight("", origin, client=client)
            assert "access-control-allow-origin" not in resp.headers, origin
            get = client.get("/api/stats", headers={"Origin": origin})
            assert get.headers.get("access-control-allow-origin") in (None,), origin
    monkeypatch.setenv("ORACLE_CORS_ORIGINS", "*")  # only a wildcard: fall back to the server's own origins
    with _client(build_app(small, port=port), port) as client:
        resp = _preflight("", "http://evil.com", client=client)
        assert "access-control-allow-origin" not in resp.headers
        own = f"http://127.0.0.1:{port}"
        assert _preflight("", own, client=client).headers.get("access-control-allow-origin") == own


# =====================================================================================================
# the server stayed healthy: no request above produced a 500 or a traceback
# =====================================================================================================
def test_server_logged_no_exceptions(server: Server) -> None:
    assert server.proc.poll() is None, "the server died"
    log = server.stderr()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-4000:]


# =====================================================================================================
# regressions: bugs found by these tests and fixed
# =====================================================================================================
OLD_PATHLIB = sys.version_info < (3, 13)  # 3.13 changed Path.resolve/is_file error handling


def test_file_symlink_loop_is_refused_not_500(tmp_path: Path) -> None:
    from oracle_server.http.app import build_app

    root = tmp_path / "root"
    (root / "learnings").mkdir(parents=True)
    (root / "learnings" / "loop-a.md").symlink_to("loop-b.md")
    (root / "learnings" / "loop-b.md").symlink_to("loop-a.md")
    oracle = open_oracle(root, tmp_path / "data")
    try:
        port = free_port()
        with _client(build_app(oracle, port=port), port, raise_server_exceptions=False) as client:
            resp = client.get("/api/file", params={"path": "learnings/loop-a.md"})
            assert resp.status_code in (400, 404), resp.status_code
    finally:
        oracle.close()


def test_file_overlong_name_is_refused_not_500(small) -> None:
    from oracle_server.http.app import build_app

    port = free_port()
    with _client(build_app(small, port=port), port, raise_server_exceptions=False) as client:
        for path in ("a" * 300 + ".md", "learnings/" + "b" * 300 + "/x.md"):
            resp = client.get("/api/file", params={"path": path})
            assert resp.status_code in (400, 404), (path[:20], resp.status_code)


def test_stats_survive_a_symlink_loop_in_the_root(tmp_path: Path) -> None:
    from oracle_server.http.app import build_app

    root = tmp_path / "root"
    (root / "learnings").mkdir(parents=True)
    shutil.copy(BUNDLED / FTS5_NOTE, root / FTS5_NOTE)
    (root / "learnings" / "loop-a.md").symlink_to("loop-b.md")
    (root / "learnings" / "loop-b.md").symlink_to("loop-a.md")
    oracle = open_oracle(root, tmp_path / "data")
    try:
        port = free_port()
        with _client(build_app(oracle, port=port), port, raise_server_exceptions=False) as client:
            resp = client.get("/api/stats")
            assert resp.status_code == 200, resp.status_code
    finally:
        oracle.close()


def test_unknown_route_and_wrong_method_answer_json_errors(server: Server) -> None:
    unknown = server.get("/api/nope")
    assert unknown.status_code == 404
    error_of(unknown)
    wrong = server.post("/api/search", json={"query": "x"})
    assert wrong.status_code == 405
    error_of(wrong)
