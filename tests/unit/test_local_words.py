"""Issue 38 item 5: the PostgreSQL store reads its keyword leg from the working copy's own SQLite index while that index
holds what the database holds (indexer/store/pg/local_words.py), and from its SQL otherwise. On a real PostgreSQL
(tests/_pg.py) and real SQLite FTS5 indexes of the same folder:

- the content state (XOR of every note's path and file hash, and the section count) is the same number in both
  stores, computed by PostgreSQL's trigger and by Python, after writes, removals and a re-parse;
- in step, every keyword read is the local index's (shown with an index that lies about its state) and equal to the
  SQL's; a write of this process, or of another engine, sends the reads back to the SQL at once;
- the link's follow brings the local index to the database's notes and says so in stats.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import _pg
from _corpus import open_oracle
from _pg import write_root
from oracle_indexer.notes.parse import PARSER_VERSION
from oracle_indexer.store.pg.local_words import LocalWords
from oracle_indexer.store.pg.store import PgStore
from oracle_indexer.store.rows import content_state, note_mark
from oracle_indexer.store.types import Filters
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search.pipeline import search

MATCHES = ['"router"', '"deploy" OR "rollback"', '"ค้นหา" OR "ข้อมูล"', '"canary" OR "error" OR "rate"']
EXTRA = "---\ntype: learning\n---\n# Zebra crossings\n\nThe zebrafish protocol stops routers at the crossing.\n"


def test_content_state_is_an_order_free_xor_of_note_marks() -> None:
    notes = [("learnings/a.md", "h1"), ("ψ/บันทึก.md", "h2"), ("c.md", None)]
    assert content_state(notes) == content_state(reversed(notes))
    assert content_state(notes) ^ note_mark("c.md", None) == content_state(notes[:2])
    assert content_state([]) == 0
    assert note_mark("a.md", "x") != note_mark("a.md", "y") and -2**63 <= note_mark("a.md", "x") < 2**63


@pytest.fixture
def pair(tmp_path: Path):
    """One folder indexed (keyword phase) into PostgreSQL and into an SQLite index of its own."""
    root = write_root(tmp_path / "root")
    pg = open_oracle(root, tmp_path / "pg-data", database_url=_pg.new_database())
    local = open_oracle(root, tmp_path / "local-data")
    for oracle in (pg, local):
        oracle.indexer.sync(vectors=False)
    yield root, pg, local
    pg.close()
    local.close()


def test_postgresql_and_sqlite_compute_the_same_content_state(pair) -> None:
    root, pg, local = pair
    assert isinstance(pg.store, PgStore)
    assert pg.store.content_state() == local.store.content_state() != (0, 0)
    for path, file_hash in local.store.fetch("SELECT path, file_hash FROM files"):  # the trigger's function itself
        assert pg.store.db.run("SELECT oracle_note_mark(%s, %s)", [path, file_hash])[0][0] == note_mark(path, file_hash)
    (root / "learnings/xray.md").unlink()
    (root / "learnings/zebra.md").write_text(EXTRA, encoding="utf-8")
    for oracle in (pg, local):
        oracle.indexer.sync(vectors=False)
    assert pg.store.content_state() == local.store.content_state()
    kept = pg.store.db.run("SELECT state FROM content_state")[0][0]
    assert kept == pg.store.db.run("SELECT coalesce(bit_xor(oracle_note_mark(path, file_hash)), 0) FROM files")[0][0]
    pg.store.forget_file_states()  # every file hash blanked: the state moves with them
    assert pg.store.content_state() != local.store.content_state()
    pg.indexer.sync(vectors=False)
    assert pg.store.content_state() == local.store.content_state()
    pg.store.clear()
    assert pg.store.content_state() == (0, 0, PARSER_VERSION)  # the parser version is meta: it stays


def test_an_index_parsed_by_an_older_parser_parses_its_notes_again_once(pair) -> None:
    """An upgrade whose parser changed re-parses every note on the next sync (not only at `index --full`); the
    version is part of the content state, so a working copy's index parsed otherwise is not read for the database's.
    A database that a newer engine re-parsed is not parsed back by an older one."""
    _, pg, local = pair
    notes = pg.store.note_count()
    for oracle in (pg, local):
        assert oracle.store.get_meta("parser_version") == str(PARSER_VERSION)
        assert oracle.indexer.sync(vectors=False).changed == 0
    local.store.set_meta("parser_version", str(PARSER_VERSION - 1))
    assert local.store.content_state()[2] == PARSER_VERSION - 1 != pg.store.content_state()[2]
    report = local.indexer.sync(vectors=False)
    assert report.changed + report.added == notes and local.store.get_meta("parser_version") == str(PARSER_VERSION)
    assert local.indexer.sync(vectors=False).changed == 0
    assert local.store.content_state() == pg.store.content_state()
    pg.store.set_meta("parser_version", str(PARSER_VERSION + 1))  # a newer engine's
    assert pg.indexer.sync(vectors=False).changed == 0
    assert pg.store.get_meta("parser_version") == str(PARSER_VERSION + 1)
    assert isinstance(pg.store, PgStore)
    pg.store.local_words = LocalWords(local.store, local.store.content_state())
    assert pg.store.keyword_source() == "database"


def test_in_step_the_keyword_leg_reads_the_local_index(pair) -> None:
    _, pg, local = pair
    store = pg.store
    assert isinstance(store, PgStore) and store.keyword_source() == "database"
    sql = {m: store.keyword_search(m, None, [], Filters(), 10) for m in MATCHES}
    store.local_words = LocalWords(local.store, local.store.content_state())
    assert store.keyword_source() == "working copy"
    every = [r[0] for r in local.store.fetch("SELECT id FROM documents ORDER BY id")]
    for m in MATCHES:
        ranked, total = store.keyword_search(m, None, [], Filters(type="learning"), 10)
        assert (ranked, total) == local.store.keyword_search(m, None, [], Filters(type="learning"), 10)
        ranked, total = store.keyword_search(m, None, [], Filters(), 10)
        assert [i for i, _ in ranked] == [i for i, _ in sql[m][0]] and total == sql[m][1]
        assert [s for _, s in ranked] == pytest.approx([s for _, s in sql[m][0]], rel=1e-9)
        assert store.keyword_matching_ids(m, None, [], every) == local.store.keyword_matching_ids(m, None, [], every)
        assert store.note_keyword_scores(m, None) == local.store.note_keyword_scores(m, None)
    quoted = ['"router"', '"rollback"']
    assert store.section_counts(quoted, 5) == local.store.section_counts(quoted, 5)
    assert store.terms_matched(quoted, every) == local.store.terms_matched(quoted, every)
    a = search(pg, SearchRequest(query="router rollback", mode="fts", limit=10))
    store.local_words = None
    b = search(pg, SearchRequest(query="router rollback", mode="fts", limit=10))
    assert [(h.id, h.score) for h in a.hits] == [(h.id, h.score) for h in b.hits] and a.total == b.total


def test_the_reads_go_to_the_local_index_only_while_it_holds_what_the_database_holds(pair, tmp_path: Path) -> None:
    root, pg, local = pair
    store = pg.store
    assert isinstance(store, PgStore)
    # An index of other notes that claims the database's state: its answers prove where the reads go.
    other = write_root(tmp_path / "other")
    (other / "learnings/zebra.md").write_text(EXTRA, encoding="utf-8")
    liar = open_oracle(other, tmp_path / "liar-data")
    try:
        liar.indexer.sync(vectors=False)
        store.local_words = LocalWords(liar.store, store.content_state())
        assert store.keyword_search('"zebrafish"', None, [], Filters(), 10)[1] == 1  # the liar's note
        # a write of this process: the next read asks the database's state again, and it moved
        (root / "learnings/zebra2.md").write_text(EXTRA.replace("Zebra", "Okapi"), encoding="utf-8")
        pg.indexer.sync_paths(["learnings/zebra2.md"], vectors=False)
        assert store.keyword_source() == "database"
        assert store.keyword_search('"zebrafish"', None, [], Filters(), 10)[1] == 1  # the database's own note now
        assert store.keyword_search('"okapi"', None, [], Filters(), 10)[1] == 1
        # another engine's write (another store on the same database): seen at the next reading of the state
        store.local_words = LocalWords(local.store, store.content_state())
        assert store.keyword_source() == "working copy"
        another = PgStore(store.url)
        try:
            another.remove_file("learnings/zebra2.md")
        finally:
            another.close()
        store.content_state()  # a search's first round trip reads it (PgStore.chunk_count)
        assert store.keyword_source() == "database"
        assert store.keyword_search('"okapi"', None, [], Filters(), 10)[1] == 0
    finally:
        liar.close()


def test_the_link_makes_the_working_copys_index_follow_the_database(tmp_path: Path) -> None:
    """An engine with the team store (offline_ok: a TeamBackend): its working copy's own index is built, then
    follows a note another engine wrote; stats say where the keyword leg reads."""
    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.capabilities.stats import stats

    url = _pg.new_database()
    root = write_root(tmp_path / "a")
    a = Oracle.open(Settings.from_env(root=root, data_dir=tmp_path / "a-data", database_url=url), offline_ok=True)
    b_root = tmp_path / "b"
    shutil.copytree(root, b_root)
    b = open_oracle(b_root, tmp_path / "b-data", database_url=url)
    try:
        a.indexer.sync(vectors=False)
        assert a.backend is not None and isinstance(a.store, PgStore)
        a.backend.prepare_now()
        assert a.store.keyword_source() == "working copy"
        assert stats(a).team_link["keyword_index"]["from"] == "working copy"
        before = search(a, SearchRequest(query="okapi crossings", mode="fts", limit=10))
        assert before.total == 0
        (b_root / "learnings/okapi.md").write_text(EXTRA.replace("Zebra", "Okapi"), encoding="utf-8")
        b.indexer.sync_paths(["learnings/okapi.md"], vectors=False)  # B pushes it to the database
        a.store.content_state()
        assert a.store.keyword_source() == "database"  # behind: the SQL answers, and finds it
        assert search(a, SearchRequest(query="okapi crossings", mode="fts", limit=10)).total == 1
        a.indexer.pull()  # the file reaches A's folder (the worker does this on NOTIFY)
        a.backend.follow()
        assert a.backend.followed is not None and a.backend.followed["in_step"] and a.backend.followed["notes"] == 1
        assert a.store.keyword_source() == "working copy"
        found = search(a, SearchRequest(query="okapi crossings", mode="fts", limit=10))
        assert [h.source_file for h in found.hits][:1] == ["learnings/okapi.md"] and found.total == 1
        # a folder this machine cannot follow (the database holds a note A's folder lacks): the SQL stays
        (b_root / "learnings/lynx.md").write_text(EXTRA.replace("Zebra", "Lynx"), encoding="utf-8")
        b.indexer.sync_paths(["learnings/lynx.md"], vectors=False)
        a.backend.follow()
        assert a.backend.followed["in_step"] is False and a.store.keyword_source() == "database"
        found = search(a, SearchRequest(query="lynx crossings", mode="fts", limit=10))
        assert [h.source_file for h in found.hits][:1] == ["learnings/lynx.md"]
        # oracle.toml edited under the running engine: the working copy's index takes up the team side's rules
        (root / "oracle.toml").write_text('[index]\nexclude = ["principles/"]\n', encoding="utf-8")
        assert a.indexer.reload_config().error is None
        assert a.backend.local is not None and a.backend.local.indexer.settings.layout != a.indexer.settings.layout
        a.backend.follow()
        assert a.backend.local.indexer.settings.layout == a.indexer.settings.layout
        assert not a.backend.local.store.fetch("SELECT 1 FROM files WHERE path LIKE 'principles/%'")
    finally:
        b.close()
        a.close()


def test_a_new_index_written_note_by_note_is_not_taken_for_an_old_parse(tmp_path: Path) -> None:
    """A learn into an empty index records the parser version at once: the next whole sync re-parses nothing."""
    root = write_root(tmp_path / "root")
    oracle = open_oracle(root, tmp_path / "data")
    try:
        assert oracle.store.get_meta("parser_version") is None
        oracle.indexer.sync_paths(["learnings/deploy.md"], vectors=False)
        assert oracle.store.get_meta("parser_version") == str(PARSER_VERSION)
        report = oracle.indexer.sync(vectors=False)
        assert report.changed == 0 and report.unchanged == 1 and report.added == oracle.store.note_count() - 1
    finally:
        oracle.close()
