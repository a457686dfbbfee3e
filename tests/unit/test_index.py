"""Indexing with the real store: SQLite FTS5, embedded ChromaDB and the ONNX model, in temp dirs."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from _corpus import BUNDLED, bump_mtime, write
from oracle_indexer.notes.parse import parse_markdown
from oracle_indexer.worker.sync import SyncRefused
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search.pipeline import search

LAYOUT_TYPES = {"principles": "principle", "learnings": "learning", "retrospectives": "retro"}


# -- helpers ---------------------------------------------------------------------------------------------
def doc_ids(oracle) -> set[str]:
    return {r[0] for r in oracle.store.conn.execute("SELECT id FROM documents")}


def snapshot(oracle) -> list[tuple]:
    return list(oracle.store.conn.execute(
        "SELECT id, file, type, kind, heading, line_start, line_end, content_hash, parent_id, embed_key"
        " FROM documents ORDER BY id"
    ))


def ids_of(oracle, rel: str) -> list[str]:
    return oracle.store.file_chunk_ids(rel)


def assert_in_step(oracle) -> None:
    """Every chunk is in Chroma and Chroma holds nothing else."""
    assert oracle.vectors.all_ids() == doc_ids(oracle)
    assert oracle.store.counts()["embedded"] == oracle.store.counts()["chunks"]


def fts_search(oracle, query: str, **kw):
    """Section results: these tests count what the index holds, section by section."""
    return search(oracle, SearchRequest(query=query, mode="fts", limit=100, unit="section", **kw))


def vector_search(oracle, query: str, **kw):
    return search(oracle, SearchRequest(query=query, mode="vector", limit=10, unit="section", **kw))


def learning(title: str, *sections: tuple[str, str]) -> str:
    body = "".join(f"## {h}\n\n{text}\n\n" for h, text in sections)
    return f"---\ntitle: {title}\ntags: [test]\n---\n# {title}\n\n{body}"


# -- the bundled knowledge ------------------------------------------------------------------------------
def test_bundled_knowledge_indexes_completely(bundled):
    oracle, report = bundled
    files = sorted(p for p in BUNDLED.rglob("*.md") if p.parent.name in LAYOUT_TYPES)
    parsed = [parse_markdown(p.read_text("utf-8"), p.relative_to(BUNDLED).as_posix(), LAYOUT_TYPES[p.parent.name])
              for p in files]
    chunks = [c for pf in parsed for c in pf.chunks]
    assert (report.added, report.changed, report.removed, report.unchanged) == (33, 0, 0, 0)
    assert report.skipped == {} and report.warnings == [] and not report.vector_failed
    # knowledge/README.md is left out by the folder's own oracle.toml, so nothing asks the user to map it
    # (issue 27: a new user's first `oracle index` printed "not indexed (no type): 1 file: (root) 1").
    assert report.unmapped == {} and report.excluded == {"exclude": 1}
    assert report.chunks_written == len(chunks) == oracle.store.counts()["chunks"]
    assert report.embedded == len({c.embed_text() for c in chunks})
    assert doc_ids(oracle) == {c.id for c in chunks}
    assert_in_step(oracle)
    by_type = dict(oracle.store.conn.execute("SELECT type, count(*) FROM files GROUP BY type"))
    assert by_type == {"principle": 15, "learning": 14, "retro": 4}


def test_bundled_rerun_is_a_no_op(bundled):
    oracle, _ = bundled
    before = snapshot(oracle)
    report = oracle.indexer.sync()
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 0, 0, 33)
    assert (report.chunks_written, report.embedded, report.embeddings_cached) == (0, 0, 0)
    assert snapshot(oracle) == before


# -- both layouts, unmapped folders, non-ASCII names ----------------------------------------------------
NFD_CAFE = unicodedata.normalize("NFD", "café")


def build_two_layouts(root: Path) -> None:
    write(root / "knowledge/principles/be-kind.md", "# Be kind\n\n### Kindness\n\nSay thanks.\n\n- Always thank reviewers.\n")
    write(root / "knowledge/learnings/2026-01-01_lesson.md", learning("A lesson", ("Context", "alpha lesson text")))
    write(root / "knowledge/retrospectives/2026-01-02_retro.md", learning("A retro", ("What happened", "retro text")))
    write(root / "ψ/memory/resonance/หลักการ.md", "# หลักการ ψ\n\n### Resonance rule\n\nresonating quasar words\n\n- quasar bullet\n")
    write(root / "ψ/memory/learnings/บันทึก/2026-02-01_deep.md", learning("Deep", ("Context", "nebula thoughts")))
    write(root / f"ψ/memory/learnings/{NFD_CAFE}/2026-03-01_cafe.md", learning("Cafe", ("Context", "espresso notes")))
    write(root / "ψ/memory/retrospectives/2026-02-02_r2.md", learning("Second retro", ("What went well", "pulsar")))
    # not indexed: no typed folder on the path
    write(root / "README.md", "# readme\n")
    write(root / "drafts/todo.md", "# todo\n")
    write(root / "ψ/inbox/idea.md", "# idea\n")
    write(root / "ψ/memory/notes/a.md", "# a\n")
    write(root / "ψ/memory/notes/b.markdown", "# b\n")
    # ignored: dotfiles, editor temporaries, non-markdown
    write(root / "knowledge/learnings/.hidden.md", "# hidden\n")
    write(root / "knowledge/learnings/#autosave.md#", "# autosave\n")
    write(root / "knowledge/learnings/notes.md~", "# backup\n")
    write(root / "knowledge/learnings/data.txt", "not markdown\n")


def test_both_layouts_and_unmapped_folders(tmp_path, make_oracle):
    root = tmp_path / "root"
    build_two_layouts(root)
    oracle = make_oracle(root, tmp_path / "data")
    report = oracle.indexer.sync()
    assert report.added == 7 and report.skipped == {} and not report.vector_failed
    assert report.unmapped == {".": 1, "drafts": 1, "ψ": 3}  # by top-level folder: a short report
    files = dict(oracle.store.conn.execute("SELECT path, type FROM files"))
    assert files == {
        "knowledge/principles/be-kind.md": "principle",
        "knowledge/learnings/2026-01-01_lesson.md": "learning",
        "knowledge/retrospectives/2026-01-02_retro.md": "retro",
        "ψ/memory/resonance/หลักการ.md": "principle",
        "ψ/memory/learnings/บันทึก/2026-02-01_deep.md": "learning",
        "ψ/memory/learnings/café/2026-03-01_cafe.md": "learning",  # NFC, whatever the disk says
        "ψ/memory/retrospectives/2026-02-02_r2.md": "retro",
    }
    assert all(unicodedata.is_normalized("NFC", p) for p in files)
    assert_in_step(oracle)
    # resonance/ is split like principles/: section + bullet
    kinds = [r[0] for r in oracle.store.conn.execute(
        "SELECT kind FROM documents WHERE file = ? ORDER BY position", ("ψ/memory/resonance/หลักการ.md",))]
    assert kinds == ["section", "bullet"]
    result = fts_search(oracle, "quasar")
    assert result.total == 2 and {h.source_file for h in result.hits} == {"ψ/memory/resonance/หลักการ.md"}
    assert result.hits[0].title == "หลักการ ψ"
    nebula = fts_search(oracle, "nebula")
    assert [h.source_file for h in nebula.hits] == ["ψ/memory/learnings/บันทึก/2026-02-01_deep.md"]
    assert nebula.hits[0].date == "2026-02-01"
    # the NFD folder name does not make the file look new on every run
    again = oracle.indexer.sync()
    assert (again.added, again.changed, again.removed, again.unchanged) == (0, 0, 0, 7)


# -- files that cannot be indexed -----------------------------------------------------------------------
def test_empty_binary_huge_and_undecodable_files_are_skipped(tmp_path, make_oracle):
    root = tmp_path / "root"
    write(root / "learnings/good.md", learning("Good", ("Context", "perfectly normal zebra text")))
    (root / "learnings/empty.md").write_bytes(b"")
    (root / "learnings/blank.md").write_bytes(b"  \n\n\t\n")
    (root / "learnings/binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "learnings/huge.md").write_bytes(b"# Huge\n\n## A\n\n" + b"lorem ipsum dolor " * (5 * 1024 * 1024 // 18))
    (root / "learnings/latin1.md").write_bytes(b"# caf\xe9\n")
    assert (root / "learnings/huge.md").stat().st_size > 5_000_000
    oracle = make_oracle(root, tmp_path / "data")
    report = oracle.indexer.sync()
    expected = {
        "learnings/binary.md": "binary file (NUL bytes)",
        "learnings/blank.md": "empty file",
        "learnings/empty.md": "empty file",
        "learnings/huge.md": "file too large (5.0 MB > 2.0 MB limit, ORACLE_MAX_FILE_BYTES)",
        "learnings/latin1.md": "not UTF-8 text (byte 5)",
    }
    assert report.skipped == expected
    assert oracle.store.skipped() == expected
    assert report.added == 1
    assert [r[0] for r in oracle.store.conn.execute("SELECT path FROM files")] == ["learnings/good.md"]
    assert fts_search(oracle, "zebra").total == 1
    assert fts_search(oracle, "lorem").total == 0
    assert_in_step(oracle)
    # a second run neither crashes nor forgets why
    again = oracle.indexer.sync()
    assert again.skipped == expected and again.unchanged == 1 and again.added == 0
    # fixing a file brings it in; deleting a skipped file forgets its skip
    write(root / "learnings/empty.md", learning("Now full", ("Context", "giraffe")))
    (root / "learnings/binary.md").unlink()
    fixed = oracle.indexer.sync()
    assert fixed.added == 1
    assert "learnings/empty.md" not in oracle.store.skipped()
    assert "learnings/binary.md" not in oracle.store.skipped()
    assert set(oracle.store.skipped()) == {"learnings/blank.md", "learnings/huge.md", "learnings/latin1.md"}
    assert fts_search(oracle, "giraffe").total == 1


# -- id stability -------------------------------------------------------------------------------------
def test_ids_stable_across_full_runs_and_fresh_data_dirs(tmp_path, make_oracle):
    root = tmp_path / "root"
    build_two_layouts(root)
    first = make_oracle(root, tmp_path / "data1")
    first_report = first.indexer.sync()
    before = snapshot(first)
    chunks = len(before)
    assert chunks == first_report.chunks_written > 0
    for _ in range(2):
        report = first.indexer.sync(full=True)
        assert report.added == 7 and report.chunks_written == chunks
        assert report.embedded == 0  # every text is in the embedding cache
        assert report.embeddings_cached == chunks
        assert snapshot(first) == before
        assert_in_step(first)
    fresh = make_oracle(root, tmp_path / "data2")
    fresh_report = fresh.indexer.sync()
    assert fresh_report.embedded == first_report.embedded  # a new data dir has no cache
    assert snapshot(fresh) == before
    assert fresh.vectors.all_ids() == first.vectors.all_ids()


# -- incremental sync -----------------------------------------------------------------------------------
BASE = {
    "learnings/2026-01-01_one.md": learning("Note one", ("Context", "aardvark burrows"), ("Lesson", "anteater diet")),
    "learnings/2026-01-02_two.md": learning(
        "Note two", ("Context", "badger setts"), ("What happened", "beaver dams"), ("Lesson", "bison herds")
    ),
    "learnings/2026-01-03_three.md": learning("Note three", ("Context", "caracal ears")),
    "retrospectives/2026-01-04_four.md": learning("Retro four", ("What happened", "dingo tracks")),
    "principles/five.md": "# Five\n\n### Rule\n\nechidna spines\n\n- echidna bullet one\n- echidna bullet two\n",
}


@pytest.fixture
def inc(tmp_path, make_oracle):
    root = tmp_path / "root"
    for rel, text in BASE.items():
        write(root / rel, text)
    oracle = make_oracle(root, tmp_path / "data")
    report = oracle.indexer.sync()
    assert report.added == 5 and not report.vector_failed
    assert_in_step(oracle)
    return oracle, root


def test_unchanged_rerun_computes_no_embeddings(inc):
    oracle, root = inc
    before = snapshot(oracle)
    report = oracle.indexer.sync()
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 0, 0, 5)
    assert (report.chunks_written, report.embedded, report.embeddings_cached) == (0, 0, 0)
    assert snapshot(oracle) == before
    # a touch (mtime moves, content does not) is still unchanged
    bump_mtime(root / "learnings/2026-01-03_three.md")
    touched = oracle.indexer.sync()
    assert (touched.changed, touched.unchanged, touched.embedded, touched.chunks_written) == (0, 5, 0, 0)
    assert oracle.indexer.sync().unchanged == 5  # and the new mtime was remembered


def test_added_file_is_searchable_in_both_modes(inc):
    oracle, root = inc
    rel = "learnings/2026-02-01_new.md"
    write(root / rel, learning("New note", ("Context", "xylophonic marimba practice schedule")))
    report = oracle.indexer.sync()
    assert (report.added, report.changed, report.removed, report.unchanged) == (1, 0, 0, 5)
    assert report.chunks_written == 1 and report.embedded == 1
    (new_id,) = ids_of(oracle, rel)
    hits = fts_search(oracle, "xylophonic").hits
    assert [h.id for h in hits] == [new_id]
    text = oracle.store.embed_texts([new_id])[new_id]
    assert vector_search(oracle, text).hits[0].id == new_id
    # the vector store holds the section's own (passage) vector; a question is embedded with another prefix
    top = oracle.vectors.query(oracle.embedder.embed([text])[0], 1)[0]
    assert top.id == new_id and top.similarity > 0.99
    assert_in_step(oracle)


def test_changed_file_reembeds_only_changed_chunks(inc):
    oracle, root = inc
    rel = "learnings/2026-01-02_two.md"
    old_ids = ids_of(oracle, rel)
    old_parsed = parse_markdown((root / rel).read_text("utf-8"), rel, "learning")
    new_text = learning(
        "Note two",
        ("Context", "badger setts"),  # unchanged
        ("What happened", "capybara pools"),  # changed
        ("Lesson", "bison herds"),  # unchanged
        ("Follow-up", "manatee seagrass"),  # new
    )
    write(root / rel, new_text)
    new_parsed = parse_markdown(new_text, rel, "learning")
    new_texts = {c.embed_text() for c in new_parsed.chunks} - {c.embed_text() for c in old_parsed.chunks}
    report = oracle.indexer.sync()
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 1, 0, 4)
    assert report.chunks_written == 4
    assert report.embedded == len(new_texts) == 2
    assert report.embeddings_cached == 0  # the unchanged sections keep their vectors: nothing re-upserted
    new_ids = ids_of(oracle, rel)
    assert new_ids[:3] == old_ids  # ids follow the sections, not the text
    assert fts_search(oracle, "beaver").total == 0
    assert [h.id for h in fts_search(oracle, "capybara").hits] == [old_ids[1]]
    assert [h.id for h in fts_search(oracle, "manatee").hits] == [new_ids[3]]
    changed_id = old_ids[1]
    text = oracle.store.embed_texts([changed_id])[changed_id]
    assert vector_search(oracle, text).hits[0].id == changed_id
    top = oracle.vectors.query(oracle.embedder.embed([text])[0], 1)[0]
    assert top.id == changed_id and top.similarity > 0.99
    old_text = next(c.embed_text() for c in old_parsed.chunks if c.id == changed_id)
    stale = {h.id: h.similarity for h in oracle.vectors.query(oracle.embedder.embed([old_text])[0], 5)}
    assert stale.get(changed_id, 0.0) < 0.99  # the old vector was replaced
    assert_in_step(oracle)


def test_removed_section_loses_its_vector(inc):
    oracle, root = inc
    rel = "learnings/2026-01-01_one.md"
    old_ids = ids_of(oracle, rel)
    write(root / rel, learning("Note one", ("Context", "aardvark burrows")))
    report = oracle.indexer.sync()
    assert report.changed == 1 and report.embedded == 0
    assert ids_of(oracle, rel) == old_ids[:1]
    assert old_ids[1] not in oracle.vectors.all_ids()
    assert fts_search(oracle, "anteater").total == 0
    assert_in_step(oracle)


def test_deleted_file_disappears_everywhere(inc):
    oracle, root = inc
    rel = "learnings/2026-01-03_three.md"
    gone = set(ids_of(oracle, rel))
    (root / rel).unlink()
    report = oracle.indexer.sync()
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 0, 1, 4)
    assert ids_of(oracle, rel) == []
    assert gone.isdisjoint(oracle.vectors.all_ids())
    assert fts_search(oracle, "caracal").total == 0
    assert gone.isdisjoint(h.id for h in vector_search(oracle, "Note three — Context\ncaracal ears").hits)
    assert rel not in oracle.store.file_states()
    assert_in_step(oracle)


def test_renamed_file_moves_without_reembedding(inc):
    oracle, root = inc
    old_rel, new_rel = "learnings/2026-01-01_one.md", "learnings/2026-01-05_one-renamed.md"
    old_ids = set(ids_of(oracle, old_rel))
    (root / old_rel).rename(root / new_rel)
    report = oracle.indexer.sync()
    assert (report.added, report.changed, report.removed, report.unchanged) == (1, 0, 1, 4)
    assert report.embedded == 0 and report.embeddings_cached == 2  # same texts: from the cache
    new_ids = set(ids_of(oracle, new_rel))
    assert len(new_ids) == 2 and new_ids.isdisjoint(old_ids)
    vector_ids = oracle.vectors.all_ids()
    assert old_ids.isdisjoint(vector_ids) and new_ids <= vector_ids
    hits = fts_search(oracle, "aardvark").hits
    assert [h.source_file for h in hits] == [new_rel]
    assert hits[0].date == "2026-01-05"
    assert_in_step(oracle)


def test_file_that_becomes_empty_leaves_the_keyword_index(inc):
    oracle, root = inc
    rel = "retrospectives/2026-01-04_four.md"
    (root / rel).write_bytes(b"")
    bump_mtime(root / rel)
    report = oracle.indexer.sync()
    assert report.skipped == {rel: "empty file"}
    assert ids_of(oracle, rel) == [] and rel not in oracle.store.file_states()
    assert fts_search(oracle, "dingo").total == 0
    assert vector_search(oracle, "Retro four — What happened\ndingo tracks").hits[0].source_file != rel


def test_file_that_becomes_empty_leaves_the_vector_store(inc):
    oracle, root = inc
    rel = "retrospectives/2026-01-04_four.md"
    gone = set(ids_of(oracle, rel))
    (root / rel).write_bytes(b"\x00binary now")
    bump_mtime(root / rel)
    oracle.indexer.sync()
    assert gone.isdisjoint(oracle.vectors.all_ids())


# -- deletion guard -------------------------------------------------------------------------------------
def guard_root(tmp_path: Path, n: int) -> Path:
    root = tmp_path / "root"
    for i in range(n):
        write(root / f"learnings/2026-01-{i + 1:02d}_n{i}.md", learning(f"Note {i}", ("Context", f"guard text {i}")))
    return root


def test_removing_more_than_half_is_refused_unless_forced(tmp_path, make_oracle):
    root = guard_root(tmp_path, 4)
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync()
    for i in range(3):
        (root / f"learnings/2026-01-{i + 1:02d}_n{i}.md").unlink()
    with pytest.raises(SyncRefused, match=r"refusing to remove 3 of 4 indexed files.*--force"):
        oracle.indexer.sync()
    assert len(oracle.store.file_states()) == 4  # nothing was removed
    assert fts_search(oracle, "guard").total == 4
    report = oracle.indexer.sync(force=True)
    assert (report.removed, report.unchanged) == (3, 1)
    assert list(oracle.store.file_states()) == ["learnings/2026-01-04_n3.md"]
    assert_in_step(oracle)


@pytest.mark.parametrize("total, remove", [(6, 3), (2, 2), (5, 2)])
def test_guard_allows_half_or_fewer_than_three(tmp_path, make_oracle, total, remove):
    root = guard_root(tmp_path, total)
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync()
    for i in range(remove):
        (root / f"learnings/2026-01-{i + 1:02d}_n{i}.md").unlink()
    report = oracle.indexer.sync()
    assert report.removed == remove
    assert len(oracle.store.file_states()) == total - remove


def test_full_rebuild_is_guarded_too(tmp_path, make_oracle):
    root = guard_root(tmp_path, 4)
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync()
    for i in range(3):
        (root / f"learnings/2026-01-{i + 1:02d}_n{i}.md").unlink()
    with pytest.raises(SyncRefused):
        oracle.indexer.sync(full=True)
    assert len(oracle.store.file_states()) == 4


# -- symlinks ---------------------------------------------------------------------------------------------
def test_symlinks_leading_outside_the_root_are_not_indexed(tmp_path, make_oracle):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write(root / "learnings/inside.md", learning("Inside", ("Context", "harmless okapi")))
    write(outside / "secret.md", learning("Secret", ("Context", "exfiltrated credentials")))
    os.symlink(outside / "secret.md", root / "learnings/link.md")
    os.symlink(outside, root / "learnings/extdir", target_is_directory=True)
    os.symlink(root / "learnings/inside.md", root / "learnings/alias.md")  # inside the root: fine
    oracle = make_oracle(root, tmp_path / "data")
    report = oracle.indexer.sync()
    assert report.skipped == {
        "learnings/extdir": "folder symlink points outside the knowledge root: not followed",
        "learnings/link.md": "symlink points outside the knowledge root",
    }
    assert set(oracle.store.file_states()) == {"learnings/inside.md"}
    assert report.aliases == {"learnings/alias.md": "learnings/inside.md"}
    assert fts_search(oracle, "exfiltrated").total == 0
    assert fts_search(oracle, "credentials secret").total == 0
    assert fts_search(oracle, "okapi").total == 1
    assert_in_step(oracle)


def test_a_huge_chunk_embeds_like_its_head(bundled):
    """Only the first MAX_TOKENS tokens reach the model, so cutting the text before tokenizing (to spare
    seconds on a megabyte chunk) must not change the vector of long prose or of unspaced Thai."""
    import numpy as np

    oracle, _ = bundled
    prose = "Quokkas live on Rottnest Island and rest in the shade during the hottest hours. " * 40
    thai = "ตลาด น้ำ อัมพวา เปิด ตอน เย็น และ ขาย อาหาร ทะเล " * 60  # spaced: the head alone fills 256 tokens
    for head in (prose, thai):
        short, huge = oracle.embedder.embed([head, head + " tail" * 400_000])
        assert np.allclose(short, huge, atol=1e-6)
