"""Adapters (CLI, HTTP, engine, MCP, registry) reach the knowledge base only through services: none of them touches
the store, the vector store, the usage logs or the indexer an Oracle serves from (issue 46). The import contracts
see imports only; an adapter calling `oracle.store.fetch(...)` imports nothing new, so this check reads the code.
Shown to fail on a small adapter that does."""

from __future__ import annotations

import ast
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
ADAPTERS = ("cli", "http", "engine", "mcp", "registry")
SERVED = {"store", "vectors", "logs", "indexer"}  # what an Oracle's backend view holds (indexer/serving/parts.py)


def reaches(source: str, filename: str = "<adapter>") -> list[str]:
    """Each `x.store`, `x.vectors`, `x.logs` or `x.indexer` in `source` (file:line: the expression)."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Attribute) and node.attr in SERVED:
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_adapter_touches_what_the_oracle_serves_from():
    found = []
    for folder in ADAPTERS:
        for path in sorted((PROJECT / "server" / folder).rglob("*.py")):
            found += reaches(path.read_text(encoding="utf-8"), str(path.relative_to(PROJECT)))
    assert found == [], "adapters call services, never the store: " + "; ".join(found)


def test_the_check_finds_an_adapter_that_does():
    source = "def route(oracle):\n    rows = oracle.store.fetch('SELECT 1')\n    oracle.indexer.sync()\n"
    assert reaches(source) == ["<adapter>:2: oracle.store", "<adapter>:3: oracle.indexer"]
