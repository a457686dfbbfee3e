"""The store package: one tag normaliser for indexing and filtering, per-thread read connections, a clean
close. Real SQLite files, no mocks."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from _corpus import damage_table
from oracle_indexer.notes.concepts import MAX_TAG_CHARS, normalise_tags
from oracle_indexer.notes.parse import CHUNK_ID_RE, chunk_id, content_hash, parse_markdown
from oracle_indexer.store.sqlite import Store, keyword_search, note_keyword_scores
from oracle_indexer.store.rows import FileState, batched
from oracle_indexer.store.errors import StoreClosed
from oracle_indexer.store.types import Filters
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search.pipeline import filters_for

LONG_TAG = "a-very-long-tag-" + "x" * 54  # 70 characters, stored cut to MAX_TAG_CHARS


def _index(store: Store, rel: str, text: str) -> None:
    parsed = parse_markdown(text, rel, "learning")
    store.replace_file(rel, "learning", parsed.title, FileState(0, len(text), content_hash(text)), parsed.chunks, [])


@pytest.fixture
def store(tmp_path: Path):
    store = Store(tmp_path / "index.db")
    _index(store, "learnings/deploy.md",
           "---\ntitle: Blue green deploys\ntags: ops;deploy\n---\n\n# Blue green deploys\n\n## Why\n\n"
           "Switch the router only after the green pool passes its health checks.\n")
    _index(store, "learnings/long.md",
           f"---\ntitle: Quokka feeding\ntags: [{LONG_TAG}]\n---\n\n# Quokka feeding\n\n## Rule\n\n"
           "Never feed the quokka bread; the router of the park says so too.\n")
    yield store
    store.close()


def _files(store: Store, request: SearchRequest) -> set[str]:
    """Files a keyword search for `router` returns under the request's filters (the search path's own
    request -> Filters conversion, then the store's keyword leg)."""
    ranked, _ = keyword_search(store, '"router"', None, [], filters_for(request), 10)
    facts = store.section_facts([doc_id for doc_id, _ in ranked])
    return {f.file for f in facts.values()}


def test_a_filter_names_tags_as_the_indexer_stored_them(store: Store) -> None:
    """`tags: ops;deploy` is stored as two tags; the filter "ops;deploy" must mean the same two. A 70-char
    tag is stored cut to 64; the same 70-char filter must match it (before: neither filter matched)."""
    assert len(LONG_TAG) == 70
    stored = {c for s in store.sections_by_id(store.file_chunk_ids("learnings/deploy.md")).values() for c in s.concepts}
    assert {"ops", "deploy"} <= stored and "ops;deploy" not in stored
    assert _files(store, SearchRequest(query="router", concepts=["ops;deploy"])) == {"learnings/deploy.md"}
    assert _files(store, SearchRequest(query="router", concepts="deploy")) == {"learnings/deploy.md"}
    assert _files(store, SearchRequest(query="router", concepts=[LONG_TAG])) == {"learnings/long.md"}
    assert _files(store, SearchRequest(query="router", concepts=["no-such-tag"])) == set()


def test_one_normaliser_splits_list_items_and_strings_alike() -> None:
    assert normalise_tags("ops;deploy") == normalise_tags(["ops;deploy"]) == normalise_tags(["ops", "deploy"])
    assert normalise_tags(["#Ops , Deploy"]) == ["ops", "deploy"]
    assert normalise_tags([LONG_TAG]) == [LONG_TAG[:MAX_TAG_CHARS]]
    assert Filters(concepts=("OPS;deploy", LONG_TAG)).concepts == ("ops", "deploy", LONG_TAG[:MAX_TAG_CHARS])


def test_chunk_ids_match_the_one_pattern() -> None:
    assert CHUNK_ID_RE.match(chunk_id("learnings/a.md", "why"))
    assert not CHUNK_ID_RE.match("c_" + "0" * 19)


def test_batched_covers_every_item_once() -> None:
    items = list(range(1234))
    parts = list(batched(items, 500))
    assert [len(p) for p in parts] == [500, 500, 234] and [i for p in parts for i in p] == items
    assert list(batched([], 500)) == []


def test_each_thread_reads_on_its_own_connection_while_one_writes(store: Store) -> None:
    """Readers in many threads never fail and see each commit; each thread has its own connection."""
    errors: list[BaseException] = []
    connections: set[int] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                ranked, total = keyword_search(store, '"router"', None, [], Filters(), 10)
                assert total >= 2 and len(ranked) >= 2
                assert store.chunk_count() >= 2
                with store.reading() as conn, lock:
                    connections.add(id(conn))
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(12)]
    for t in threads:
        t.start()
    for n in range(20):  # the writer replaces a note over and over while the readers run
        _index(store, f"learnings/extra-{n % 3}.md", f"# Extra {n}\n\n## Note\n\nThe router restarts at {n}.\n")
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert len(connections) == 12
    # A commit by the writer is visible to a reader at once (a new snapshot per statement).
    _index(store, "learnings/fresh.md", "# Fresh\n\n## Note\n\nA wombat guards the router.\n")
    ranked, _ = keyword_search(store, '"wombat"', None, [], Filters(), 10)
    assert [f.file for f in store.section_facts([i for i, _ in ranked]).values()] == ["learnings/fresh.md"]


def test_close_waits_for_reads_in_flight_and_then_refuses_new_ones(tmp_path: Path) -> None:
    store = Store(tmp_path / "index.db")
    _index(store, "learnings/a.md", "# A\n\n## Note\n\nThe router.\n")
    inside, release, results = threading.Event(), threading.Event(), []

    def slow_read() -> None:
        with store.reading() as conn:
            inside.set()
            release.wait(5)
            results.append(conn.execute("SELECT count(*) FROM documents").fetchone()[0])

    t = threading.Thread(target=slow_read)
    t.start()
    inside.wait(5)
    closer = threading.Thread(target=store.close)
    closer.start()
    time.sleep(0.1)
    assert closer.is_alive(), "close() must wait for the read in flight"
    release.set()
    t.join(5)
    closer.join(5)
    assert results and results[0] >= 1  # the read finished on an open connection
    with pytest.raises(StoreClosed):
        store.chunk_count()
    with pytest.raises(StoreClosed):
        store.set_meta("k", "v")
    store.close()  # idempotent


def test_services_hold_no_sql() -> None:
    """Issue 12: the store owns every SQL statement; services and adapters under server/ receive typed rows.
    A statement, a raw connection or an untyped row read there fails this test."""
    import re

    server = Path(__file__).resolve().parents[2] / "server"
    pattern = re.compile(r"\.execute(many)?\(|\bstore\.(conn|rows|fetch|fetch_dicts|reading)\b|\bsqlite3\b|"
                         r"\b(SELECT|INSERT INTO|DELETE FROM)\s|\bUPDATE\s+\w+\s+SET\b")
    found = [f"{path.name}:{n}: {line.strip()}" for path in sorted(server.glob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if pattern.search(line)]
    assert not found, found


def test_whole_notes_follow_their_files(store: Store) -> None:
    """notes_fts holds each note whole: words of different sections match one note; an edit replaces its
    words and a removal drops it; a note of one section has no whole-note score (nothing beyond it)."""
    two = "# Canary releases\n\n## Why\n\nShift a tenth of the traffic first.\n\n## How\n\nWatch the error rate.\n"
    _index(store, "learnings/canary.md", two)
    spread = '"traffic" AND "error"'  # one word in each section
    assert note_keyword_scores(store, spread, ["learnings/canary.md", "learnings/deploy.md"]).keys() == {"learnings/canary.md"}
    assert keyword_search(store, spread, None, [], Filters(), 10)[0] == []  # no single section holds both
    _index(store, "learnings/canary.md", two.replace("traffic", "load"))
    assert note_keyword_scores(store, spread, ["learnings/canary.md"]) == {}
    assert note_keyword_scores(store, '"load" AND "error"', ["learnings/canary.md"]).keys() == {"learnings/canary.md"}
    assert note_keyword_scores(store, '"router"', ["learnings/deploy.md"]) == {}  # one section: no score
    count = store.fetch("SELECT count(*) FROM notes_fts")[0][0]
    store.remove_file("learnings/canary.md")
    assert note_keyword_scores(store, '"load"', ["learnings/canary.md"]) == {}
    assert store.fetch("SELECT count(*) FROM notes_fts")[0][0] == count - 1


# -- the integrity check, at open or later (Store(check=False) + verify: a server checks after its handshake) --
def test_a_damaged_index_is_set_aside_at_open_or_by_a_later_verify(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    store = Store(db)
    _index(store, "learnings/a.md", "# A\n\n## Note\n\nThe router.\n")
    store.close()
    damage_table(db)

    store = Store(db, check=False)  # opens: nothing on the way reads the damaged table
    try:
        assert store.recovered_from is None and not store.verified
        assert store.verify() is True
        assert store.recovered_from is not None and store.recovered_from.exists()
        assert store.chunk_count() == 0  # a new, empty index in its place, readable and writable
        _index(store, "learnings/b.md", "# B\n\n## Note\n\nA wombat guards the router.\n")
        ranked, _ = keyword_search(store, '"wombat"', None, [], Filters(), 10)
        assert [f.file for f in store.section_facts([i for i, _ in ranked]).values()] == ["learnings/b.md"]
        assert store.verify() is False  # checked once per process
    finally:
        store.close()

    damage_table(db)
    store = Store(db)  # the default (CLI commands): checked at open, set aside there
    try:
        assert store.recovered_from is not None and store.verified and store.chunk_count() == 0
    finally:
        store.close()
    assert len(list(tmp_path.glob("index.db.corrupt-*"))) >= 1


def test_verify_leaves_a_sound_index_alone(tmp_path: Path) -> None:
    fresh = Store(tmp_path / "new.db", check=False)
    assert fresh.verified  # made new in this process: nothing to check
    _index(fresh, "learnings/a.md", "# A\n\n## Note\n\nThe router.\n")
    fresh.close()
    store = Store(tmp_path / "new.db", check=False)
    try:
        assert not store.verified
        assert store.verify() is False and store.recovered_from is None and store.chunk_count() == 1
    finally:
        store.close()
    assert not list(tmp_path.glob("new.db.corrupt-*"))


def test_section_counts_are_remembered_until_the_word_table_changes(store: Store) -> None:
    """Query expansion's document frequencies: a count read once is given again without a MATCH while the word
    table is unchanged, and a write (a new section, a note removed) is seen at once."""
    terms = ['"router"', '"routers"', '"quokka"', '"nothing"', '"router"']
    assert store.section_counts(terms, 100) == {'"router"': 2, '"routers"': 2, '"quokka"': 1, '"nothing"': 0}
    assert store.section_counts(['"router"'], 0) == {'"router"': 1}  # cut at cap + 1, remembered per cap
    matches: list[str] = []
    fetch = store.fetch

    def counting(sql: str, args=()) -> list[tuple]:
        if "MATCH" in sql:
            matches.append(sql)
        return fetch(sql, args)

    store.fetch = counting  # type: ignore[method-assign]
    assert store.section_counts(terms, 100)['"router"'] == 2 and not matches
    _index(store, "learnings/third.md", "# Routers\n\nA third router note.\n")
    assert store.section_counts(['"router"', '"quokka"'], 100) == {'"router"': 3, '"quokka"': 1} and matches
    store.remove_file("learnings/long.md")
    assert store.section_counts(['"router"', '"quokka"'], 100) == {'"router"': 2, '"quokka"': 0}


def test_section_facts_are_read_from_their_index_alone(store: Store, tmp_path: Path) -> None:
    """A search reads ~100 candidates' facts; from the covering index it never touches the rows that hold the text
    (0.7 -> 0.3 ms for 100 sections on nat-brain). An index written before the index existed gains it at open."""
    ids = [doc_id for doc_id, _ in keyword_search(store, '"router"', None, [], Filters(), 10)[0]]
    facts = store.section_facts(ids)
    assert {f.file for f in facts.values()} == {"learnings/deploy.md", "learnings/long.md"}
    sql = ("SELECT d.id, d.file, d.kind, d.parent_id, d.content_hash, d.heading, d.line_start, d.line_end"
           " FROM documents d INDEXED BY documents_sections WHERE d.id IN (?, ?)")
    plan = " ".join(str(row[-1]) for row in store.fetch("EXPLAIN QUERY PLAN " + sql, ids))
    assert "COVERING INDEX documents_sections" in plan
    store.conn.execute("DROP INDEX documents_sections")
    store.close()
    again = Store(tmp_path / "index.db")
    try:
        assert again.section_facts(ids) == facts
    finally:
        again.close()
