"""The concept graph's top concepts on a REAL index: a concept in every note must not top it."""

from __future__ import annotations

from pathlib import Path

from _corpus import open_oracle, write
from oracle_server.services.capabilities.browse import graph

# Six notes all tagged "oracle" (as every note of a v2 brain mentions it); alpha in 3, beta in 2, gamma in 1.
TAGS = [["alpha", "beta"], ["alpha", "beta"], ["alpha"], ["gamma"], [], []]


def test_graph_discounts_a_concept_every_note_carries(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for n, tags in enumerate(TAGS):
        write(root / f"learnings/2026-01-0{n + 1}_note-{n}.md",
              f"---\ntitle: Note {n}\ntags: [oracle, {', '.join(tags)}]\n---\n\n# Note {n}\n\nPlain words here.\n")
    oracle = open_oracle(root, tmp_path / "data")
    try:
        oracle.indexer.sync()
        nodes = [n for n in graph(oracle, limit=3, documents=False).nodes if n.kind == "concept"]
        assert [(n.label, n.count) for n in nodes] == [("alpha", 3), ("beta", 2), ("gamma", 1)]
        everything = [n.label for n in graph(oracle, limit=100, documents=False).nodes if n.kind == "concept"]
        assert everything[-1] == "oracle" and len(everything) == 4
    finally:
        oracle.close()
