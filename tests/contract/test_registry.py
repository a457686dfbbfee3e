"""The registry (server/registry/tools.py) is the one declaration of every tool: these tests loop over it and check
that MCP, HTTP and the CLI expose each tool with the same parameters, defaults and limits, refuse the same
unknown names, and map failures through one error model. Real parts: an MCP client connected in-process to
the real server object (the SDK's in-memory transport), the real FastAPI app through Starlette's TestClient,
the real argparse parser, all on a small real index.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import Field

from _corpus import open_oracle
from oracle_server.cli import spec as clispec
from oracle_server.services.vocabulary.errors import EXIT_CODE, HTTP_STATUS, classify, kind_of_status, unknown_argument
from oracle_server.services.support.slots import ServiceSlots
from oracle_server.registry.tools import BY_NAME, TOOLS, Caller, InvalidArguments, Tool, input_schema

BOUNDS = ("minimum", "maximum", "minLength", "maxLength", "enum", "pattern", "maxItems", "minItems")
MINIMAL = {  # the smallest valid arguments of each tool (for the unknown-name check)
    "oracle_search": {"query": "tests"}, "oracle_consult": {"decision": "mock the database?"},
    "oracle_learn": {"pattern": "a learning"}, "oracle_feedback": {"id": "c_" + "0" * 20, "verdict": "helpful"},
    "oracle_supersede": {"old_id": "learnings/x.md", "new_id": "learnings/y.md"},
    "oracle_read": {"file": "learnings/x.md"}, "oracle_verify": {"citations": [{"id": "c_1", "content_hash": "0" * 12}]},
    "oracle_edit": {"file": "learnings/x.md", "expected_hash": "0" * 12, "op": "append", "text": "more"},
    "oracle_archive": {"file": "learnings/x.md", "expected_hash": "0" * 12},
}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("kb")
    (root / "learnings").mkdir()
    (root / "principles").mkdir()
    (root / "learnings" / "2026-01-02_mocks.md").write_text(
        "---\ntitle: Mocks hide bugs\ntags: [testing]\n---\n# Mocks hide bugs\n\n## Why\nTests that mock the "
        "database passed while the migration broke production.\n", encoding="utf-8")
    (root / "principles" / "craft.md").write_text(
        "# Craft\n\n### Test with real parts\n- Real databases in tests, not mocks.\n", encoding="utf-8")
    o = open_oracle(root, tmp_path_factory.mktemp("data"))
    o.indexer.sync(vectors=False)
    yield o
    o.close()


@pytest.fixture(scope="module")
def openapi(oracle: Any) -> dict:
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    with TestClient(build_app(oracle), base_url="http://127.0.0.1:37778") as client:
        return client.get("/openapi.json").json()


def mcp_session(oracle: Any, work) -> Any:  # noqa: ANN001 - an async callable taking the client
    from mcp import Client

    from oracle_server.mcp.server import build_server

    async def run() -> Any:
        async with Client(build_server(oracle)) as client:
            return await work(client)

    return anyio.run(run)


def resolve(spec: dict, schema: dict) -> dict:
    return spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]] if "$ref" in schema else schema


def bounds(schema: dict) -> dict:
    """The limits a schema states, looking inside anyOf (optional fields are `T | null`)."""
    out = {k: schema[k] for k in BOUNDS if k in schema}
    for variant in schema.get("anyOf", []):
        out.update({k: variant[k] for k in BOUNDS if k in variant})
    return out


def http_params(openapi: dict, tool: Tool) -> tuple[dict[str, dict], set[str]]:
    """(parameter schemas by name, required names) of the tool's HTTP route, query string or JSON body."""
    op = openapi["paths"][tool.http.path][tool.http.method.lower()]
    if tool.http.method == "GET":
        params = {p["name"]: p for p in op.get("parameters", [])}
        assert all(p["in"] == "query" for p in params.values())
        return {n: p["schema"] for n, p in params.items()}, {n for n, p in params.items() if p["required"]}
    body = resolve(openapi, op["requestBody"]["content"]["application/json"]["schema"])
    return body["properties"], set(body.get("required", []))


def cli_parser(tools: tuple[Tool, ...] | None = None) -> argparse.ArgumentParser:
    from oracle_server.cli.commands import add_tool_command

    parser = argparse.ArgumentParser(prog="oracle", exit_on_error=False)
    sub = parser.add_subparsers(dest="command", required=True)
    for command, spec in clispec.derive(tools).items():
        add_tool_command(sub, command, spec)
    return parser


def cli_options(parser: argparse.ArgumentParser, command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {a.dest: a for a in sub._actions if a.dest not in ("help", "json")}


# -- parity: one loop over the registry -----------------------------------------------------------------
@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_tool_has_the_same_parameters_defaults_and_limits_everywhere(tool: Tool, oracle: Any,
                                                                           openapi: dict) -> None:
    fields = tool.request.model_fields
    model_schema = tool.request.model_json_schema()
    listed = mcp_session(oracle, lambda c: c.list_tools())
    mcp_tool = next(t for t in listed.tools if t.name == tool.name)
    mcp_props = mcp_tool.input_schema.get("properties", {})
    http_props, http_required = http_params(openapi, tool)

    assert list(mcp_props) == list(fields), "MCP arguments are the request model's fields, in order"
    assert set(http_props) == set(fields), "HTTP parameters are the request model's fields"
    required = {n for n, f in fields.items() if f.is_required()}
    assert set(mcp_tool.input_schema.get("required", [])) == required == http_required
    assert mcp_tool.input_schema.get("additionalProperties") is False  # unknown names are refused, and said so
    for name, field in fields.items():
        mine = model_schema["properties"][name]
        assert bounds(mcp_props[name]) == bounds(mine), (name, "MCP")
        assert bounds(resolve(openapi, http_props[name])) == bounds(resolve(openapi, mine) if "$ref" in mine else mine), (name, "HTTP")
        assert mcp_props[name].get("default") == mine.get("default") == http_props[name].get("default"), name
    assert mcp_tool.annotations == tool.annotations and mcp_tool.description == tool.description
    assert mcp_tool.output_schema is None  # issue 40: none in tools/list (server/mcp/server.py `register`)
    ok = next(code for code in openapi["paths"][tool.http.path][tool.http.method.lower()]["responses"] if code[0] == "2")
    assert int(ok) == tool.http.status

    if tool.cli is None:
        return
    options = cli_options(cli_parser(), tool.cli.command)
    words = {tool.cli.words} if tool.cli.words else set()
    assert set(options) | words == set(fields)
    for name, action in options.items():
        enum = bounds(model_schema["properties"][name]).get("enum")
        assert (list(action.choices) if action.choices else None) == enum, name
        assert action.default is None, f"--{name}: the model's default applies, not a restated one"
        schema = model_schema["properties"][name]
        if schema.get("type") == "integer":
            assert action.type is int, name
        if "maximum" in schema:
            assert f"{schema['minimum']}-{schema['maximum']}" in action.help, name


def test_mcp_search_has_the_filters_http_has(oracle: Any) -> None:
    """The drift this registry ended: oracle_search over MCP lacked date_from, date_to, fusion, group_by_file."""
    listed = mcp_session(oracle, lambda c: c.list_tools())
    search = next(t for t in listed.tools if t.name == "oracle_search").input_schema["properties"]
    assert {"date_from", "date_to", "fusion", "group_by_file", "subject", "predicate", "object"} <= set(search)
    assert search["limit"]["minimum"] == 1 and search["limit"]["maximum"] == 100
    assert search["offset"]["maximum"] == 10_000 and search["query"]["maxLength"] == 10_000
    assert search["mode"]["enum"] == ["hybrid", "fts", "vector"]
    assert {"type": "string"} in search["concepts"]["anyOf"]  # a comma string is accepted, and said to be


# -- unknown argument names ----------------------------------------------------------------------------
@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_an_unknown_argument_is_refused_everywhere_naming_the_accepted_ones(tool: Tool, oracle: Any) -> None:
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    args = {**MINIMAL.get(tool.name, {}), "limt": 5}
    result = mcp_session(oracle, lambda c: c.call_tool(tool.name, args))
    text = result.content[0].text
    assert result.is_error, text
    said = f"limt: {unknown_argument(tool.accepted)}"
    assert said in text and all(name in said for name in tool.accepted), text

    with TestClient(build_app(oracle), base_url="http://127.0.0.1:37778") as client:
        if tool.http.method == "GET":
            resp = client.get(tool.http.path, params=args)
        else:
            resp = client.post(tool.http.path, json=args)
    assert resp.status_code == 422, resp.text
    assert said in resp.json()["error"], resp.text

    if tool.cli is not None:
        with pytest.raises(SystemExit) as exited:  # argparse: exit 2 with usage, like any CLI typo
            argparse.ArgumentParser.parse_args(cli_parser(), [tool.cli.command, *(["x"] if tool.cli.words else []), "--limt", "5"])
        assert exited.value.code == 2


# -- adding a parameter is one edit in one model plus its service ---------------------------------------
def test_a_new_model_field_reaches_mcp_http_and_cli_with_its_limits(oracle: Any) -> None:
    """Add `depth` to the list request and have the service read it: nothing else is written, yet MCP, HTTP
    and the CLI all offer it with the model's bounds, refuse it out of bounds, and hand it to the service."""
    from fastapi import FastAPI
    from starlette.testclient import TestClient

    from oracle_server.http.app import _add_tool_route
    from oracle_server.mcp.server import OracleMCP
    from oracle_server.services.vocabulary.models import ListRequest, ListResult

    class DeeperList(ListRequest):
        depth: int = Field(default=3, ge=1, le=9, description="How deep to look.")

    def service(o: Any, request: DeeperList, caller: Caller) -> ListResult:
        return ListResult(items=[], total=request.depth, limit=request.limit, offset=request.offset)

    tool = dataclasses.replace(BY_NAME["oracle_list"], name="oracle_deeper", request=DeeperList, service=service,
                               cli=dataclasses.replace(BY_NAME["oracle_list"].cli, command="deeper"))
    # MCP: the generated schema, and a call.
    assert {"minimum": 1, "maximum": 9, "default": 3}.items() <= input_schema(tool)["properties"]["depth"].items()
    server = OracleMCP(oracle, ServiceSlots(), name="t")
    server.register(tool)

    async def mcp_calls(client: Any) -> tuple[Any, Any, Any]:
        listed = await client.list_tools()
        return listed, await client.call_tool("oracle_deeper", {"depth": 7}), await client.call_tool(
            "oracle_deeper", {"depth": 10})

    async def run() -> tuple[Any, Any, Any]:
        from mcp import Client

        async with Client(server) as client:
            return await mcp_calls(client)

    listed, good, bad = anyio.run(run)
    assert listed.tools[0].input_schema["properties"]["depth"]["maximum"] == 9
    assert good.structured_content["total"] == 7
    assert bad.is_error and "depth" in bad.content[0].text
    # HTTP: the generated route's query parameter, and a call.
    app = FastAPI()
    _add_tool_route(app, tool, Any, lambda request: "http", ServiceSlots())
    with TestClient(app) as client:
        params = {p["name"]: p for p in client.get("/openapi.json").json()["paths"]["/api/list"]["get"]["parameters"]}
        assert params["depth"]["schema"]["maximum"] == 9 and params["depth"]["schema"]["default"] == 3
    # CLI: the generated option, typed, and the request it builds reaches the service.
    from oracle_server.cli.commands import tool_values

    parser = cli_parser((tool,))
    options = cli_options(parser, "deeper")
    assert options["depth"].type is int and "1-9" in options["depth"].help
    args = parser.parse_args(["deeper", "--depth", "4"])
    request = tool.parse(tool_values(args, clispec.derive((tool,))["deeper"]))
    assert tool.service(oracle, request, Caller("cli", "cli")).total == 4
    with pytest.raises(InvalidArguments, match="depth"):
        tool.parse(tool_values(parser.parse_args(["deeper", "--depth", "0"]), clispec.derive((tool,))["deeper"]))


# -- one error model -----------------------------------------------------------------------------------
def test_service_failures_map_to_one_kind_each() -> None:
    from oracle_indexer.worker.sync import SyncRefused
    from oracle_server.services.capabilities.browse import NotFound
    from oracle_server.services.capabilities.learn import LearnError, LearnLost
    from oracle_server.services.capabilities.search.query import QueryError

    def learn_error(code: int) -> LearnError:
        try:
            raise LearnError("could not write the learning; nothing was saved") from OSError(code, "x")
        except LearnError as exc:
            return exc

    cases = [(learn_error(errno.ENOSPC), "storage_full", 507, 6), (learn_error(errno.EROFS), "unavailable", 503, 5),
             (LearnError("too many"), "invalid", 400, 2), (LearnLost("moved"), "conflict", 409, 4),
             (NotFound("none"), "not_found", 404, 3), (QueryError("bad"), "invalid", 400, 2),
             (SyncRefused("half"), "invalid", 400, 2)]
    for exc, kind, status, code in cases:
        error = classify(exc)
        assert error is not None and (error.kind, error.http_status, error.exit_code) == (kind, status, code), exc
        assert kind_of_status(status) == kind  # the CLI's remote path: status back to the same exit code
    assert classify(ZeroDivisionError()) is None  # a bug stays a bug (500 / crash), not a 400
    assert set(HTTP_STATUS) == set(EXIT_CODE)


def test_every_service_exception_names_a_kind_and_errors_imports_none() -> None:
    """Each service exception carries its kind (errors.ServiceError.error_kind), so the one error model needs no
    table of the services' classes: errors.py imports nothing of the project (it did: eight services, in a circle)."""
    import importlib
    import pkgutil

    import grimp

    import oracle_server.services as services
    from oracle_indexer.store.errors import DatabaseUnavailable
    from oracle_server.services.vocabulary.errors import ServiceError

    for module in pkgutil.walk_packages(services.__path__, "oracle_server.services."):
        importlib.import_module(module.name)
    pending, classes = [ServiceError], []
    while pending:
        pending += pending[0].__subclasses__()
        classes.append(pending.pop(0))
    assert len(classes) >= 12
    assert [c.__name__ for c in classes if c.error_kind not in HTTP_STATUS] == []
    error = classify(DatabaseUnavailable("cannot connect"))
    assert error is not None and (error.kind, error.http_status, error.exit_code) == ("unavailable", 503, 5)
    graph = grimp.build_graph("oracle_server", "oracle_indexer", cache_dir=None)
    assert graph.find_modules_directly_imported_by("oracle_server.services.vocabulary.errors") == set()


def test_a_not_found_is_a_tool_error_a_404_and_exit_3(oracle: Any, tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from oracle_server.cli.commands import run_tool
    from oracle_server.http.app import build_app

    args = {"id": "c_" + "f" * 20}
    result = mcp_session(oracle, lambda c: c.call_tool("oracle_read", args))
    assert result.is_error and "no indexed chunk" in result.content[0].text
    with TestClient(build_app(oracle), base_url="http://127.0.0.1:37778") as client:
        resp = client.get("/api/read", params=args)
    assert resp.status_code == 404 and "no indexed chunk" in resp.json()["error"]
    spec = clispec.derive()["read"]
    namespace = argparse.Namespace(command="read", json=False, id=args["id"], file=None, section=None, max_chars=None)
    with pytest.raises(Exception) as raised:
        run_tool(oracle, namespace, spec)
    error = classify(raised.value)
    assert error is not None and error.kind == "not_found" and error.exit_code == 3


def test_the_cli_spec_cache_follows_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is derived from the models, cached, and found again without importing them."""
    clispec.load.cache_clear()
    monkeypatch.setattr(clispec, "_cache_dirs", lambda: [tmp_path])
    first = clispec.load()
    assert first == clispec.derive() and len(list(tmp_path.glob("cli-spec-*.json"))) == 1
    clispec.load.cache_clear()
    monkeypatch.setattr(clispec, "derive", lambda tools=None: pytest.fail("a cache hit must not derive"))
    assert clispec.load() == first
    clispec.load.cache_clear()


def test_tools_list_stays_cheap_for_an_agents_context(oracle: Any) -> None:
    """Issue 27 §14: `tools/list` was 41.7 KB (pydantic titles, `"default": null`, an `anyOf` with null per
    optional field, output schemas with every field described) and the MCP Inspector flagged 27 type arrays.
    The figures are in benchmarks/HISTORY.md ("What Oracle costs an agent's context"; benchmarks/context.py)."""
    import json

    async def work(client: Any) -> dict:
        return (await client.list_tools()).model_dump(mode="json", by_alias=True, exclude_none=True)

    listed = mcp_session(oracle, work)
    text = json.dumps(listed, separators=(",", ":"))
    # 31,000 until archive's warnings (issue 36) and `variants` on search and consult (issue 37: "no larger than
    # today, 30-33 KB"), then oracle_history and oracle_restore (issue 38: ~2 KB together, descriptions kept short);
    # issue 40 took it under 16 KB (15,582): short descriptions (the rest in docs/tools.md), parts of a parameter
    # not described, the where filter's bounds only, no output schemas
    assert len(text.encode()) < 16_000, len(text.encode())
    assert '"type":[' not in text and '"title":"' not in text.replace('"title":"oracle', "")
    assert {t["name"] for t in listed["tools"]} == set(BY_NAME)
