"""What the README says survives, survives: the notes are the source of truth and the index is rebuilt from them;
what use adds beside the notes (verdicts, supersessions made with `oracle_supersede`) lives in `logs.db` in the data
dir, so a rebuild (`oracle index --full`, a deleted or corrupt index) keeps it and a lost data dir loses it, while a
`superseded_by:` in a note's frontmatter travels with the note. Real files, a real index, rebuilt three ways."""

from __future__ import annotations

import shutil
from pathlib import Path

from _corpus import open_oracle, write
from oracle_server.services.capabilities.feedback import record_feedback
from oracle_server.services.vocabulary.models import FeedbackRequest, SearchRequest, SupersedeRequest
from oracle_server.services.capabilities.search.pipeline import run_search
from oracle_server.services.capabilities.supersede import supersede

NOTES = {
    "learnings/heron-cache-timeout.md": ("---\ntitle: Heron cache expires by timeout\n---\n\n# Heron cache expires by"
                                         " timeout\n\nHeron cache entries expire sixty seconds after they are written.\n"),
    "learnings/heron-cache-events.md": ("---\ntitle: Heron cache expires on change events\n---\n\n# Heron cache"
                                        " expires on change events\n\nHeron cache entries are dropped on change events.\n"),
    "learnings/ibis-deploy-blue-green.md": ("---\ntitle: Ibis deploys blue green\nsuperseded_by: ibis-deploy-canary.md\n"
                                            "---\n\n# Ibis deploys blue green\n\nThe ibis deploy switches all traffic.\n"),
    "learnings/ibis-deploy-canary.md": ("---\ntitle: Ibis deploys by canary\n---\n\n# Ibis deploys by canary\n\n"
                                        "The ibis deploy sends five percent of traffic to the canary.\n"),
    "learnings/okapi-feeding.md": "---\ntitle: Okapi feeding\n---\n\n# Okapi feeding\n\nOkapis eat leaves at dawn.\n",
}


def _forget_chroma() -> None:
    """What a new process would not have: chromadb's per-path client cache, which still points at deleted files
    (a write through it meets "attempt to write a readonly database")."""
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()


def _what_search_says(root: Path, data: Path, *, full: bool = False) -> dict[str, object]:
    """Index (fully when asked) and read back what the promises are about: each note's sections, and what use
    added: the okapi note's verdicts, who supersedes the heron and the ibis notes, and by which way."""
    _forget_chroma()
    oracle = open_oracle(root, data)
    try:
        oracle.indexer.sync(full=full)
        sections = sorted((s.file, s.id, s.content_hash) for rel in NOTES for s in oracle.store.file_sections(rel))
        hits = {hit.source_file: hit for query in ("heron cache", "ibis deploy", "okapi leaves")
                for hit in run_search(oracle, SearchRequest(query=query, mode="fts", limit=5)).hits}
        okapi = hits["learnings/okapi-feeding.md"].breakdown
        superseded = {file: (hit.superseded_by.source_file, hit.superseded_by.via) if hit.superseded_by else None
                      for file, hit in hits.items() if file.endswith(("timeout.md", "blue-green.md"))}
        return {"sections": sections, "okapi": (okapi.helpful, okapi.misleading), "superseded": superseded}
    finally:
        oracle.close()


def test_a_rebuild_keeps_what_use_added_and_a_lost_data_dir_keeps_only_the_notes(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    for rel, text in NOTES.items():
        write(root / rel, text)
    oracle = open_oracle(root, data)
    try:
        oracle.indexer.sync()
        okapi = oracle.store.file_sections("learnings/okapi-feeding.md")[0].id
        record_feedback(oracle, FeedbackRequest(id=okapi, verdict="helpful"))
        supersede(oracle, SupersedeRequest(old_id="learnings/heron-cache-timeout.md",
                                           new_id="learnings/heron-cache-events.md", reason="events now"))
    finally:
        oracle.close()
    used = _what_search_says(root, data)
    assert used["okapi"] == (1, 0)
    assert used["superseded"] == {"learnings/heron-cache-timeout.md": ("learnings/heron-cache-events.md", "tool"),
                                  "learnings/ibis-deploy-blue-green.md": ("learnings/ibis-deploy-canary.md", "frontmatter")}

    # `oracle index --full`: the index rebuilt from the notes, logs.db untouched
    assert _what_search_says(root, data, full=True) == used

    # the index lost (everything in the data dir but logs.db): rebuilt, the same ids, so the same verdicts apply
    for path in data.iterdir():
        if not path.name.startswith("logs.db"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert _what_search_says(root, data) == used

    # the data dir lost: the notes, their sections and the frontmatter's supersession come back; what only
    # logs.db held (the verdict, the tool's supersession) is gone, as the README says
    shutil.rmtree(data)
    lost = _what_search_says(root, data)
    assert lost["sections"] == used["sections"]
    assert lost["okapi"] == (0, 0)
    assert lost["superseded"] == {"learnings/heron-cache-timeout.md": None,
                                  "learnings/ibis-deploy-blue-green.md": ("learnings/ibis-deploy-canary.md", "frontmatter")}


def test_the_vector_store_says_what_it_lost_and_sync_puts_it_back(tmp_path: Path) -> None:
    """The embedded Chroma folder deleted while no Oracle ran: every chunk is re-added from the embedding cache,
    nothing embedded again. The vector store says so (`lost_while_closed`), not the sync reading the settings."""
    from oracle_indexer.store.sqlite.vectors import StoreHealth, VectorStore

    assert VectorStore(tmp_path / "none", url="http://127.0.0.1:8000").lost_while_closed() == "some"
    assert VectorStore(tmp_path / "none").lost_while_closed() == "all"
    assert StoreHealth().lost_while_closed() is None  # pgvector: the vectors are in the database with the index
    root, data = tmp_path / "root", tmp_path / "data"
    for rel, text in NOTES.items():
        write(root / rel, text)
    oracle = open_oracle(root, data)
    try:
        first = oracle.indexer.sync()
        chroma = oracle.settings.chroma_path
    finally:
        oracle.close()
    assert first.embedded and chroma.exists()
    shutil.rmtree(chroma)
    _forget_chroma()
    oracle = open_oracle(root, data)
    try:
        assert oracle.vectors.lost_while_closed() == "all"
        again = oracle.indexer.sync()
        assert not again.vector_failed, again.warnings
        assert (again.embedded, again.embeddings_cached) == (0, first.embedded + first.embeddings_cached)
        assert oracle.vectors.count() == oracle.store.counts()["embedded"] == len(NOTES)
        assert oracle.vectors.lost_while_closed() is None
    finally:
        oracle.close()
