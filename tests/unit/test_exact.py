"""The exact vector leg of small SQLite bases (indexer/store/sqlite/exact.py): every embedded section's similarity computed,
ties by id, the same answer in every Oracle that opens the index; above ORACLE_EXACT_LIMIT, Chroma as before."""

from __future__ import annotations

import numpy as np
import pytest

from _corpus import write
from oracle_indexer.store.sqlite.exact import top
from oracle_indexer.store.sqlite.multilingual import MultilingualIndex
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search import legs, pipeline

QUESTIONS = ("how do agents share a repository safely", "quote fts5 search terms", "what do quokkas eat",
             "feeding wild animals bread", "a note about nothing in particular")
NOTES = {
    "learnings/bicycle.md": "# Bicycle repair\n\n## Flat tyre\n\nTo fix a flat bicycle tyre, take the wheel off,"
                            " find the puncture in the inner tube and glue a patch over it.\n",
    "learnings/rice.md": "# Cooking rice\n\n## Method\n\nRinse the rice three times, add one and a half cups of"
                         " water per cup and simmer for fifteen minutes with the lid on.\n",
    "retrospectives/taxes.md": "# Tax return\n\n## Deadline\n\nFile the yearly tax return before the end of April"
                               " and keep every receipt for five years.\n",
}
# The same title and text in three files: three sections with one vector, equal similarities to any question.
TWIN = "# Quokka diet\n\n## Food\n\nQuokkas eat grasses, leaves and stems; bread makes them ill.\n"
TWINS = ("learnings/quokka-c.md", "learnings/quokka-a.md", "learnings/quokka-b.md")


def reference(oracle, vector: np.ndarray, n: int, ids: set[str] | None = None) -> list[tuple[str, float]]:
    """Brute force in float64 over the embedded sections' cached vectors, best first, ties by id."""
    rows = oracle.store.conn.execute("SELECT d.id, e.vector FROM documents d JOIN embeddings e ON e.key = d.embed_key"
                                     " WHERE d.in_vector = 1").fetchall()
    scored = [(i, float(np.frombuffer(b, dtype=np.float32).astype(np.float64) @ vector.astype(np.float64)))
              for i, b in rows if ids is None or i in ids]
    return sorted(scored, key=lambda p: (-p[1], p[0]))[:n]


def leg(oracle, query: str, pool: int = 20, **request) -> list[tuple[str, float]]:
    filters = pipeline.filters_for(SearchRequest(query=query, **request))
    return [(h.id, h.score) for h in legs._vector_leg(oracle, query, filters, pool)]


def same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    """The same sections in the same order, similarities equal up to float32 rounding (a pair closer than that
    may be in either order: none is, in these corpora, except exact ties, which go by id)."""
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=2e-6)


@pytest.fixture
def small_base(tmp_path, make_oracle):
    for rel, text in NOTES.items():
        write(tmp_path / "root" / rel, text)
    for rel in TWINS:
        write(tmp_path / "root" / rel, TWIN)
    oracle = make_oracle(tmp_path / "root", tmp_path / "data")
    report = oracle.indexer.sync()
    assert not report.vector_failed, report.warnings
    return oracle


def test_the_vector_leg_is_exact(search_index):
    if search_index.settings.database_url:
        pytest.skip("the PostgreSQL store ranks with pgvector (tests/unit/test_pg_store.py)")
    for query in QUESTIONS:
        vector = search_index.embedder.embed_query(query)
        same_ranking(leg(search_index, query, pool=30), reference(search_index, vector, 30))


def test_equal_vectors_rank_by_id_and_every_open_agrees(small_base, make_oracle, tmp_path):
    ids = {s.file: s.id for s in small_base.store.sections_by_id(
        [r[0] for r in small_base.store.conn.execute("SELECT id FROM documents")]).values()}
    hits = leg(small_base, "what do quokkas eat", pool=3)
    assert [i for i, _ in hits] == sorted(ids[rel] for rel in TWINS)  # one vector, three sections: by id
    assert hits[0][1] == hits[1][1] == hits[2][1]
    # A second Oracle on the same index (as another process would) answers with the same bytes.
    first = {q: leg(small_base, q, pool=10) for q in QUESTIONS}
    other = make_oracle(tmp_path / "root", tmp_path / "data")
    assert {q: leg(other, q, pool=10) for q in QUESTIONS} == first


def test_filters_rank_exactly_within_the_filtered_sections(small_base):
    query = "what do quokkas eat"
    vector = small_base.embedder.embed_query(query)
    retros = {r[0] for r in small_base.store.conn.execute("SELECT id FROM documents WHERE type = 'retro'")}
    assert retros
    same_ranking(leg(small_base, query, pool=5, type="retro"), reference(small_base, vector, 5, retros))


def test_only_embedded_sections_rank_and_a_write_is_seen_at_once(small_base, tmp_path):
    query = "when is the tax return due"
    taxes = leg(small_base, query, pool=1)[0][0]
    small_base.store.mark_in_vector([taxes], 0)  # as if Chroma had not taken it yet
    assert taxes not in [i for i, _ in leg(small_base, query, pool=10)]
    small_base.store.mark_in_vector([taxes], 1)
    assert leg(small_base, query, pool=1)[0][0] == taxes
    write(tmp_path / "root/learnings/kayak.md", "# Kayak\n\n## Rolling\n\nAn eskimo roll rights a capsized kayak.\n")
    small_base.indexer.sync_paths(["learnings/kayak.md"])
    new = leg(small_base, "how to right a capsized kayak", pool=1)[0][0]
    assert small_base.store.sections_by_id([new])[new].file == "learnings/kayak.md"


def test_above_the_limit_chroma_answers(small_base, tmp_path, make_oracle, monkeypatch):
    asked: list[int] = []
    chroma_query = type(small_base.vectors).query

    def counting(self, vector, n, where=None):
        asked.append(n)
        return chroma_query(self, vector, n, where)

    monkeypatch.setattr(type(small_base.vectors), "query", counting)
    leg(small_base, "what do quokkas eat")
    assert asked == []  # 6 sections: exact
    embedded = small_base.store.conn.execute("SELECT count(*) FROM documents WHERE in_vector = 1").fetchone()[0]
    at_limit = make_oracle(tmp_path / "root", tmp_path / "data", exact_limit=embedded)
    leg(at_limit, "what do quokkas eat")
    assert asked == []
    above = make_oracle(tmp_path / "root", tmp_path / "data", exact_limit=embedded - 1)
    assert above.indexer.exact.nearest(above.embedder.embed_query("rice"), 3) is None
    hits = leg(above, "what do quokkas eat", pool=3)
    assert asked == [3] and {i for i, _ in hits} == {i for i, _ in leg(at_limit, "what do quokkas eat", pool=3)}


def test_top_considers_every_tie_at_the_cut():
    sims = np.array([0.5, 0.9, 0.5, 0.7, 0.5, 0.5], dtype=np.float32)
    assert top(sims, 3).tolist() == [1, 3, 0]
    assert top(sims, 4).tolist() == [1, 3, 0, 2]
    assert top(sims, 10).tolist() == [1, 3, 0, 2, 4, 5]


def test_the_multilingual_index_shares_the_main_matrix(tmp_path, make_oracle):
    write(tmp_path / "root/learnings/thai.md", "# ตลาดนัด\n\n## บันทึก\n\nวันนี้ไปตลาดนัดซื้อมะม่วงสุกสามลูก\n")
    for rel, text in NOTES.items():
        write(tmp_path / "root" / rel, text)
    oracle = make_oracle(tmp_path / "root", tmp_path / "data")
    oracle.indexer.sync()
    oracle.indexer.flush_vectors()
    shared = oracle.indexer.multilingual
    assert shared.exact is oracle.indexer.exact
    own = MultilingualIndex(oracle.settings.db_path, "auto", shared.embedder)
    try:
        query = "ซ่อม bicycle tyre ที่รั่ว"
        main = oracle.embedder.embed_query(query)
        got = shared.nearest(query, 4, main, 0.4)
        assert shared._matrix[3] is None  # no second copy of the main model's rows
        want = own.nearest(query, 4, main, 0.4)
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
    finally:
        own.close()


def test_a_reload_after_writes_equals_a_fresh_load(small_base, tmp_path):
    """After a commit only new texts' vectors are read; the rest are copied from the previous matrix. The result
    must be the matrix a fresh load makes: new, removed and re-flagged sections alike."""
    exact = small_base.indexer.exact
    before = exact.matrix()
    write(tmp_path / "root/learnings/kayak.md", "# Kayak\n\n## Rolling\n\nAn eskimo roll rights a capsized kayak.\n")
    (tmp_path / "root/learnings/rice.md").unlink()
    small_base.indexer.sync_paths(["learnings/kayak.md", "learnings/rice.md"])
    small_base.store.mark_in_vector([before.ids[0]], 0)
    after = exact.matrix()
    assert after is not before and after.version != before.version
    conn = small_base.store.conn
    fresh = exact._load(conn, after.version, None)
    assert after.ids == fresh.ids and len(after.ids) == len(before.ids)  # one note in, one out, one section each
    assert np.array_equal(after.vectors, fresh.vectors) and np.array_equal(after.embedded, fresh.embedded)
    assert after.count == fresh.count == len(after.ids) - 1 and after.key_row == fresh.key_row


def test_a_commit_that_changes_no_section_keeps_the_matrix(small_base, tmp_path):
    """Every commit changes `data_version`, and the first search after it re-read the section list and rebuilt
    the matrix (45-75 ms on nat-brain). A commit that leaves the embedded sections as they were (a meta row, the
    word tables' merge, another process's note fields) keeps the matrix; one that changes a section does not."""
    import sqlite3

    exact = small_base.indexer.exact
    before = exact.matrix()
    assert before.sections is not None  # every text had its vector: the list can be compared
    with sqlite3.connect(small_base.store.path) as other:  # another process's commit
        other.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('unrelated', '1')")
    kept = exact.matrix()
    assert kept.version != before.version and kept.vectors is before.vectors and kept.ids == before.ids
    with sqlite3.connect(small_base.store.path) as other:
        other.execute("UPDATE documents SET in_vector = 0 WHERE id = ?", (before.ids[0],))
    changed = exact.matrix()
    assert changed.vectors is not before.vectors and changed.count == before.count - 1
    assert not changed.embedded[changed.row[before.ids[0]]]


def test_a_learn_or_save_leaves_the_matrix_up_to_date_for_the_next_search(small_base, tmp_path):
    """The writer brings the matrix up to date after re-indexing files (sync_paths: the learn tool, the watcher),
    so the next search does not pay for the rebuild (20-50 ms on nat-brain)."""
    exact = small_base.indexer.exact
    before = exact.matrix()
    write(tmp_path / "root/learnings/kayak.md", "# Kayak\n\n## Rolling\n\nAn eskimo roll rights a capsized kayak.\n")
    small_base.indexer.sync_paths(["learnings/kayak.md"])
    ready = exact._matrix
    assert ready is not None and ready is not before and len(ready.ids) == len(before.ids) + 1
    assert exact.matrix() is ready  # nothing left for the search to do
