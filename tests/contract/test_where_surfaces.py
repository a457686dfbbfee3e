"""`where` filters, their completions and context-aware consult budgets through the generated surfaces: a
real MCP client on the real server object (in-memory transport), the real FastAPI app through Starlette's
TestClient, and the CLI's parser and request building, all on one small real index. The same filter gives the
same notes everywhere; a hostile one gets the same message everywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from _corpus import indexed_oracle
from oracle_server.cli import spec as clispec
from oracle_server.registry.tools import BY_NAME, Caller

NOTES = {
    "learnings/2026-02-01_ledger.md": "---\nindustries: [Finance]\nstatus: draft\n---\n# Ledger locks\n\n## Lesson\n"
                                      "Lock the ledger row before the payment queue settles it.\n",
    "learnings/2026-02-02_any.md": "---\nindustries: ['*']\nstatus: final\n---\n# Queues for all\n\n## Lesson\n"
                                   "Every payment queue gets a dead letter queue.\n",
    "learnings/2026-02-03_till.md": "---\nindustries: [retail]\n---\n# Till queue\n\n## Lesson\n"
                                    "The till's payment queue survives a power cut.\n",
    "principles/craft.md": "# Craft\n\n### Test with real parts\n- Real payment queues in tests, not mocks.\n",
}
FINANCE = ["learnings/2026-02-01_ledger.md"]  # the note holding `*` is not kept: its star is a literal
HOSTILE = {"industries": {"like": "fin%"}}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    o = indexed_oracle(tmp_path_factory, "where-surfaces", NOTES)
    yield o
    o.close()


def mcp(oracle: Any, work: Any) -> Any:
    from mcp import Client

    from oracle_server.mcp.server import build_server

    async def run() -> Any:
        async with Client(build_server(oracle)) as client:
            return await work(client)

    return anyio.run(run)


def http(oracle: Any, path: str, params: dict) -> Any:
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    with TestClient(build_app(oracle), base_url="http://127.0.0.1:37778") as client:
        return client.get(path, params=params)


def cli(oracle: Any, *argv: str) -> Any:
    """The CLI's own parse -> request -> service path (the system test runs the real command)."""
    from oracle_server.cli.commands import tool_values

    from tests.contract.test_registry import cli_parser

    spec = clispec.derive()
    args = cli_parser().parse_args(list(argv))
    tool = BY_NAME[spec[argv[0]]["tool"]]
    return tool.run(oracle, tool.parse(tool_values(args, spec[argv[0]])), Caller("cli", "cli"))


def files(hits: list) -> list[str]:
    return sorted(h["source_file"] if isinstance(h, dict) else h.source_file for h in hits)


def test_the_same_filter_keeps_the_same_notes_over_mcp_http_and_cli(oracle: Any) -> None:
    where = {"industries": "finance"}
    over_mcp = mcp(oracle, lambda c: c.call_tool("oracle_search", {"query": "payment queue", "where": where}))
    assert not over_mcp.is_error and files(over_mcp.structured_content["hits"]) == FINANCE
    over_http = http(oracle, "/api/search", {"query": "payment queue", "where": json.dumps(where)})
    assert over_http.status_code == 200 and files(over_http.json()["hits"]) == FINANCE
    over_cli = cli(oracle, "search", "payment", "queue", "--where", json.dumps(where))
    assert files(over_cli.hits) == FINANCE
    assert over_mcp.structured_content["total"] == over_http.json()["total"] == over_cli.total == 1


def test_operators_and_text_over_mcp(oracle: Any) -> None:
    async def calls(c: Any) -> tuple[Any, Any]:
        missing = await c.call_tool("oracle_search", {"query": "payment queue", "where": {"status": {"exists": False}}})
        either = await c.call_tool("oracle_search", {"query": "payment queue", "mode": "fts",
                                                     "where": '{"industries": ["retail", "health"]}'})
        return missing, either

    missing, either = mcp(oracle, calls)
    assert files(missing.structured_content["hits"]) == ["learnings/2026-02-03_till.md", "principles/craft.md"]
    assert files(either.structured_content["hits"]) == ["learnings/2026-02-03_till.md"]


def test_a_hostile_filter_is_refused_with_one_message_everywhere(oracle: Any) -> None:
    said = "unknown operator 'like'; operators: eq, in, exists, before, after"
    over_mcp = mcp(oracle, lambda c: c.call_tool("oracle_search", {"query": "q", "where": HOSTILE}))
    assert over_mcp.is_error and said in over_mcp.content[0].text
    over_http = http(oracle, "/api/search", {"query": "q", "where": json.dumps(HOSTILE)})
    assert over_http.status_code == 422 and said in over_http.json()["error"]
    from oracle_server.registry.tools import InvalidArguments

    with pytest.raises(InvalidArguments, match="unknown operator 'like'"):
        cli(oracle, "search", "q", "--where", json.dumps(HOSTILE))
    deep: Any = "x"
    for _ in range(40):  # nesting far beyond field -> operator -> values
        deep = {"in": [deep]} if isinstance(deep, dict) else {"a": deep}
    over_mcp = mcp(oracle, lambda c: c.call_tool("oracle_search", {"query": "q", "where": {"f": deep}}))
    assert over_mcp.is_error and "where" in over_mcp.content[0].text
    big = http(oracle, "/api/search", {"query": "q", "where": json.dumps({f"f{i}": "x" for i in range(500)})})
    assert big.status_code == 422 and "at most 20 fields" in big.json()["error"]


def test_the_input_schema_describes_the_filter(oracle: Any) -> None:
    listed = mcp(oracle, lambda c: c.list_tools())
    for name in ("oracle_search", "oracle_consult"):
        where = next(t for t in listed.tools if t.name == name).input_schema["properties"]["where"]
        shapes = {v.get("type") for v in where["anyOf"]}
        # consult's points at search's (issue 40: tools/list under 16 KB), which says the whole grammar
        assert {"object", "string"} <= shapes and ("exists" if name == "oracle_search" else "oracle_search") \
            in where["description"]


def test_completions_name_fields_then_their_values(oracle: Any) -> None:
    from mcp_types import ResourceTemplateReference

    ref = ResourceTemplateReference(type="ref/resource", uri="oracle://field/{name}/{value}")

    async def calls(c: Any) -> tuple[Any, ...]:
        templates = await c.list_resource_templates()
        names = await c.complete(ref, {"name": "name", "value": "ind"})
        values = await c.complete(ref, {"name": "value", "value": "re"}, context_arguments={"name": "industries"})
        blind = await c.complete(ref, {"name": "value", "value": "re"})
        read = await c.read_resource("oracle://field/industries/finance")
        return templates, names, values, blind, read

    templates, names, values, blind, read = mcp(oracle, calls)
    assert "oracle://field/{name}/{value}" in {t.uri_template for t in templates.resource_templates}
    assert names.completion.values == ["industries"]
    assert values.completion.values == ["retail"]
    assert blind.completion.values == []  # no field chosen yet: nothing to offer
    assert [n["path"] for n in json.loads(read.contents[0].text)["notes"]] == FINANCE


def test_consult_takes_the_context_window_everywhere(oracle: Any) -> None:
    args = {"decision": "Should tests use a real payment queue?", "context_window": 16000}
    over_mcp = mcp(oracle, lambda c: c.call_tool("oracle_consult", args))
    assert not over_mcp.is_error
    got = over_mcp.structured_content
    assert (got["budget_tokens"], got["budget_from"], got["mode"]) == (2400, "context_window", "core")
    assert got["learnings"] == [] and "mode: core" in over_mcp.content[0].text
    over_http = http(oracle, "/api/consult", args).json()
    assert (over_http["budget_tokens"], over_http["mode"]) == (2400, "core")
    over_cli = cli(oracle, "consult", "Should", "tests", "use", "a", "real", "payment", "queue?",
                   "--context-window", "200000")
    assert (over_cli.budget_tokens, over_cli.budget_from, over_cli.mode) == (8000, "context_window", "full")
    refused = http(oracle, "/api/consult", {**args, "context_window": 10})
    assert refused.status_code == 422 and "context_window" in refused.json()["error"]
