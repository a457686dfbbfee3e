"""A NUL in any text parameter is refused at the edge (issue 45, item 9), by the one check every request model has
(server/services/vocabulary/models/base.py `Request`), so every tool refuses it alike over MCP (a tool error), HTTP (422) and the
CLI (exit 2), naming the field. Before, each field did as it happened to: PostgreSQL cannot store a NUL in text, so a
NUL in search's `project` or `concepts`, or in history's or restore's `file`, was a bare 500 on the team store, and a
consult whose text held one answered but never reached the shared log. Real parts: the HTTP app (Starlette's
TestClient) and an in-process MCP client on an Oracle over a real PostgreSQL (tests/_pg.py), and the CLI's `main`."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import anyio
import pytest

import _pg
from _corpus import BUNDLED, open_oracle, write
from _procs import free_port

NUL = "a\x00b"


def _string_arguments(tool) -> list[tuple[str, object]]:
    """(field, a value holding a NUL) for each of a tool's fields, in the shape the field takes."""
    out: list[tuple[str, object]] = []
    for name, field in tool.request.model_fields.items():
        shape = str(field.annotation)
        value: object = [NUL] if "list" in shape else {"status": NUL} if name == "where" else NUL
        out.append((name, value))
    return out


def _cases() -> list[tuple[str, str, object]]:
    from oracle_server.registry.tools import TOOLS

    return [(tool.name, name, value) for tool in TOOLS for name, value in _string_arguments(tool)]


@pytest.mark.parametrize(("tool", "field", "value"), _cases(), ids=[f"{t}-{f}" for t, f, _ in _cases()])
def test_every_tool_refuses_a_nul_in_every_field_naming_it(tool: str, field: str, value: object) -> None:
    from oracle_server.registry.tools import BY_NAME, InvalidArguments

    with pytest.raises(InvalidArguments) as refused:
        BY_NAME[tool].parse({field: value})
    message = str(refused.value)
    assert "NUL" in message and field in message, message


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("oracle_search", {"query": "okapi", "where": {"status": ["ok", NUL]}}, "where.status.1"),
    ("oracle_search", {"query": "okapi", "concepts": "okapi,a\x00b"}, "concepts"),
    ("oracle_learn", {"pattern": "okapis", "relations": [["okapi", "eats", NUL]]}, "relations.0"),
    ("oracle_verify", {"citations": [{"id": "c_" + "0" * 20, "content_hash": "a" * 12}], "mark_verified": [NUL]},
     "mark_verified.0"),
])
def test_a_nul_inside_a_field_is_refused_naming_where(tool: str, arguments: dict, field: str) -> None:
    from oracle_server.registry.tools import BY_NAME, InvalidArguments

    with pytest.raises(InvalidArguments) as refused:
        BY_NAME[tool].parse(arguments)
    assert "NUL" in str(refused.value) and field in str(refused.value), str(refused.value)


# -- the team store (PostgreSQL), through HTTP and MCP ----------------------------------------------------------
@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("nul-inputs")
    write(base / "root/learnings/okapi.md", "# Okapi\n\n## Lesson\n\nOkapis dig for salt at night.\n")
    oracle = open_oracle(base / "root", base / "data", database_url=_pg.new_database())
    oracle.indexer.sync(vectors=False)
    yield oracle
    oracle.close()


def _client(oracle):
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    port = free_port()
    return TestClient(build_app(oracle, host="127.0.0.1", port=port, token=None), base_url=f"http://127.0.0.1:{port}")


@pytest.mark.parametrize(("method", "path", "arguments", "field"), [
    ("GET", "/api/search", {"query": "okapi", "project": NUL}, "project"),
    ("GET", "/api/search", {"query": "okapi", "concepts": NUL}, "concepts"),
    ("GET", "/api/history", {"file": f"learnings/{NUL}.md"}, "file"),
    ("POST", "/api/restore", {"file": f"learnings/{NUL}.md", "revision": 1}, "file"),
    ("GET", "/api/consult", {"decision": f"Should okapis dig? {NUL}"}, "decision"),
    ("GET", "/api/consult", {"decision": "Should okapis dig?", "context": NUL}, "context"),
])
def test_a_nul_over_http_on_the_team_store_is_a_422_naming_the_field(team, method: str, path: str, arguments: dict,
                                                                      field: str) -> None:
    with _client(team) as client:
        if method == "GET":
            answer = client.get(path, params=arguments)
        else:
            answer = client.post(path, json=arguments)
        assert answer.status_code == 422, (answer.status_code, answer.text[:300])  # before: 500 (or 200 unlogged)
        assert "NUL" in answer.json()["error"] and field in answer.json()["error"], answer.text
        team.logs.tick()
        assert client.get("/api/consult", params={"decision": "Should okapis dig?"}).status_code == 200
        team.logs.tick()
        assert client.get("/api/logs").status_code == 200


def test_a_nul_over_mcp_is_a_tool_error_and_a_prompt_error(team) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from oracle_server.mcp.server import build_server

    async def run():
        async with Client(build_server(team)) as client:
            search = await client.call_tool("oracle_search", {"query": "okapi", "project": NUL})
            history = await client.call_tool("oracle_history", {"file": f"learnings/{NUL}.md"})
            try:
                await client.get_prompt("consult", {"decision": f"Should okapis dig? {NUL}"})
                prompt = ""
            except MCPError as exc:
                prompt = str(exc)
            return search, history, prompt

    search, history, prompt = anyio.run(run)
    for result, field in ((search, "project"), (history, "file")):
        text = result.content[0].text
        assert result.is_error and "NUL" in text and field in text, text
    assert "NUL" in prompt and "decision" in prompt, prompt


def test_a_nul_on_the_cli_is_exit_2_before_anything_is_written(tmp_path: Path, monkeypatch, capsys) -> None:
    from oracle_server.cli.commands import main

    root = tmp_path / "root"
    (root / "learnings").mkdir(parents=True)
    (root / "learnings" / "x.md").write_text((BUNDLED / "learnings" / "2026-01-14_quote-fts5-search-terms.md")
                                             .read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"okapis dig {NUL}\n"))  # the learning, piped in
    code = main(["--root", str(root), "--data-dir", str(tmp_path / "data"), "learn", "-", "--local"])
    assert code == 2 and "NUL" in capsys.readouterr().err
    code = main(["--root", str(root), "--data-dir", str(tmp_path / "data"), "search", "okapi", "--project", NUL,
                 "--local"])
    err = capsys.readouterr().err
    assert code == 2 and "NUL" in err and "project" in err, err
    assert sorted(p.name for p in (root / "learnings").iterdir()) == ["x.md"]
