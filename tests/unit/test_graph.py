"""The concept graph's data (issue 27 §12): the vault's own concepts (its tags, and in a vault with few tags the
words its titles share), never Oracle's built-in engineering keywords; at most GRAPH_DOCUMENTS notes drawn (those
carrying most of the drawn concepts) with the total said; and `[[Note\\|alias]]` inside a table links to Note.
Real files, a real index (keyword only); the drawing itself is tested in the browser (tests/system)."""

from __future__ import annotations

from pathlib import Path

from _corpus import write
from oracle_server.services.capabilities.browse import GRAPH_DOCUMENTS, graph
from oracle_server.services.vocabulary.models import RelationsRequest
from oracle_server.services.capabilities.relations import find_relations


def tagged_vault(root: Path, notes: int) -> None:
    """Notes about birds, tagged by the vault's own words, whose text is full of Oracle's built-in keywords."""
    tags = ["seabirds", "waders", "raptors", "migration-routes", "nesting", "estuary", "ringing", "moult",
            "cliffs", "saltmarsh", "plumage", "census", "gulls", "terns"]
    for i in range(notes):
        mine = [tags[i % len(tags)], tags[(i * 3 + 1) % len(tags)]]
        write(root / f"birds/note-{i:03d}.md",
              f"---\ntags: [{', '.join(mine)}]\n---\n# Field note {i}\n\nThe agent tested the python api, the git "
              f"commit and the database schema while counting {mine[0]} (test, memory, session, search).\n")


def test_the_graph_shows_the_vaults_tags_not_built_in_keywords(tmp_path, make_oracle):
    root = tmp_path / "vault"
    tagged_vault(root, 20)
    write(root / "oracle.toml", '[index]\ndefault_type = "learning"\n')
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    g = graph(oracle, limit=40)
    concepts = {n.label for n in g.nodes if n.kind == "concept"}
    assert g.concepts_from == "tags"
    assert concepts <= {"seabirds", "waders", "raptors", "migration-routes", "nesting", "estuary", "ringing", "moult",
                        "cliffs", "saltmarsh", "plumage", "census", "gulls", "terns"} and len(concepts) == 14
    assert not concepts & {"agent", "python", "api", "git", "commit", "database", "schema", "test", "memory"}
    # the built-in keywords are still concepts for search filters and oracle_concepts, just not the graph's
    assert "python" in {c for _, c in oracle.store.note_concepts()}


def test_a_vault_without_tags_gets_the_words_its_titles_share(tmp_path, make_oracle):
    root = tmp_path / "vault"
    for i, title in enumerate(["Kelp forest survey", "Kelp forest restoration", "Otter diet in kelp",
                               "Otter census north", "Otter census south", "Urchin barrens", "The urchin problem"]):
        write(root / f"notes/{i}.md", f"# {title}\n\nSome text about the python api and git.\n")
    write(root / "oracle.toml", '[index]\ndefault_type = "learning"\n')
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    g = graph(oracle)
    concepts = {n.label: n.count for n in g.nodes if n.kind == "concept"}
    assert g.concepts_from == "title terms"
    assert concepts == {"kelp": 3, "otter": 3, "forest": 2, "census": 2, "urchin": 2}


def test_the_graph_draws_at_most_the_notes_that_carry_most_concepts(tmp_path, make_oracle):
    root = tmp_path / "vault"
    tagged_vault(root, GRAPH_DOCUMENTS + 30)
    write(root / "birds/hub.md", "---\ntags: [seabirds, waders, raptors, nesting, estuary, gulls]\n---\n# Hub\n\nAll.\n")
    write(root / "oracle.toml", '[index]\ndefault_type = "learning"\n')
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    g = graph(oracle)
    drawn = [n for n in g.nodes if n.kind == "document"]
    assert len(drawn) == GRAPH_DOCUMENTS and g.documents_total == GRAPH_DOCUMENTS + 31
    assert "file:birds/hub.md" in {n.id for n in drawn}  # the note carrying most of the drawn concepts
    tagged = {e.source for e in g.edges if e.kind == "tagged"}
    assert tagged == {n.id for n in drawn}


def test_an_escaped_pipe_in_a_table_leaves_no_backslash_in_the_relation(tmp_path, make_oracle):
    root = tmp_path / "vault"
    write(root / "Puffins.md", "# Puffins\n\nSee the table.\n")
    write(root / "Index.md", "# Index\n\n| note | why |\n| --- | --- |\n| [[Puffins\\|the puffin note]] | birds |\n"
          "| [[Gannets#Diving\\|gannets]] | more |\n\nAnd [[Terns|terns]] outside the table.\n")
    write(root / "oracle.toml", '[index]\ndefault_type = "learning"\n')
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    found = find_relations(oracle, RelationsRequest(subject="Index", predicate="links_to"))
    objects = sorted(r.object for r in found.relations)
    assert objects == ["Gannets", "Puffins", "Terns"]
