"""Folders as working copies of one PostgreSQL store (issue 38, indexer/worker/workcopy.py): real folders, a real
PostgreSQL 18 + pgvector started by the tests (tests/_pg.py), engines opened in this process (the CLI and the
running-engine cases are in tests/system/test_team_procs.py). What must hold: every copy converges, and nothing
anyone wrote is lost (a note, a conflict copy or the history holds every text)."""

from __future__ import annotations

from pathlib import Path

import pytest

import _pg
from _corpus import open_oracle
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search.pipeline import search

ALICE = "# Alice\n\nThe flamingo migration happens every spring along the salt lakes.\n"
BOB = "# Bob\n\nThe quokka colony lives on the island and smiles for the cameras.\n"
SHARED = "# Shared\n\nOur team agreed that deploys happen on Tuesdays.\n"


def copy(tmp: Path, name: str, url: str, notes: dict[str, str], **extra: object):
    root = tmp / name
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "learnings").mkdir(parents=True, exist_ok=True)
    return open_oracle(root, tmp / f"{name}-data", database_url=url, author=name, **extra)


def files(oracle) -> dict[str, str]:
    root = oracle.settings.root
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*.md")) if ".archive" not in p.parts}


def titles(oracle, query: str) -> set[str]:
    return {h.title for h in search(oracle, SearchRequest(query=query, mode="fts", limit=20)).hits}


@pytest.fixture()
def pair(tmp_path: Path):
    url = _pg.new_database()
    a = copy(tmp_path, "alice", url, {"learnings/alice.md": ALICE, "learnings/shared.md": SHARED})
    b = copy(tmp_path, "bob", url, {"learnings/bob.md": BOB, "learnings/shared.md": SHARED})
    yield a, b
    a.close()
    b.close()


def sync(oracle):
    return oracle.indexer.sync(vectors=False)


def test_the_second_folder_no_longer_erases_the_first_ones_notes(pair) -> None:
    a, b = pair
    first = sync(a)
    assert first.pushed == 2 and first.removed == 0
    second = sync(b)
    assert second.removed == 0, second.summary()  # before issue 38: "1 removed", Alice's note gone
    assert second.pulled == 1 and second.pushed == 1  # alice.md came down, bob.md went up
    third = sync(a)
    assert third.pulled == 1 and third.removed == 0
    assert files(a) == files(b) == {"learnings/alice.md": ALICE, "learnings/bob.md": BOB,
                                    "learnings/shared.md": SHARED}
    for oracle in (a, b):
        assert "Alice" in titles(oracle, "flamingo migration")
        assert "Bob" in titles(oracle, "quokka colony")
    again = sync(b)  # nothing to do: no revision, no file written, no note re-indexed
    assert (again.pulled, again.pushed, again.added, again.changed, again.removed) == (0, 0, 0, 0, 0)


def test_a_deletion_propagates_and_a_note_never_had_is_not_one(pair) -> None:
    a, b = pair
    sync(a), sync(b), sync(a)
    (a.settings.root / "learnings/alice.md").unlink()
    done = sync(a)
    assert done.tombstoned == 1 and done.removed == 1
    later = sync(b)
    assert later.deleted_here == 1 and not (b.settings.root / "learnings/alice.md").exists()
    assert "Alice" not in titles(b, "flamingo migration")
    history = a.indexer.copy.revisions.history("learnings/alice.md")
    assert [r.deleted for r in history] == [False, True]
    assert a.indexer.copy.revisions.revision_content("learnings/alice.md", 1) == ALICE.encode()
    # restored (a new revision), it comes back to both folders and both searches
    a.indexer.restore("learnings/alice.md", 1, author="carol")
    assert (a.settings.root / "learnings/alice.md").read_text(encoding="utf-8") == ALICE
    sync(b)
    assert (b.settings.root / "learnings/alice.md").read_text(encoding="utf-8") == ALICE
    assert "Alice" in titles(b, "flamingo migration")
    assert [(r.revision, r.deleted, r.author) for r in a.indexer.copy.revisions.history("learnings/alice.md")] == [
        (1, False, "alice"), (2, True, "alice"), (3, False, "carol")]


def test_an_edit_on_both_sides_gives_one_winner_and_a_conflict_copy(pair) -> None:
    a, b = pair
    sync(a), sync(b), sync(a)
    (a.settings.root / "learnings/shared.md").write_text(SHARED + "\nAlice: the pelican rule applies.\n")
    (b.settings.root / "learnings/shared.md").write_text(SHARED + "\nBob: the walrus rule applies.\n")
    assert sync(a).pushed == 1
    report = sync(b)
    assert len(report.conflicts) == 1, report.summary()
    rel, copy_rel = report.conflicts[0].split(" -> ")
    assert rel == "learnings/shared.md"
    assert copy_rel.startswith("learnings/shared (conflict from bob ") and copy_rel.endswith(").md")
    assert "conflict:" in report.summary()
    sync(a)
    assert files(a) == files(b)
    texts = files(a)
    assert "pelican" in texts["learnings/shared.md"] and "walrus" in texts[copy_rel]
    for oracle in (a, b):
        assert titles(oracle, "pelican rule") and titles(oracle, "walrus rule")
    total, recent = a.indexer.copy.revisions.conflicts()
    assert total == 1 and recent[0]["copy"] == copy_rel and recent[0]["author"] == "bob"


def test_an_edit_wins_over_a_deletion_elsewhere(pair) -> None:
    a, b = pair
    sync(a), sync(b), sync(a)
    (a.settings.root / "learnings/shared.md").unlink()
    (b.settings.root / "learnings/shared.md").write_text(SHARED + "\nStill true: the heron rule.\n")
    sync(a)  # tombstone
    sync(b)  # the edit brings the note back
    sync(a)
    assert files(a) == files(b) and "heron" in files(a)["learnings/shared.md"]


def test_a_machine_can_keep_a_folder_out_of_its_copy(tmp_path: Path) -> None:
    url = _pg.new_database()
    a = copy(tmp_path, "alice", url, {"learnings/alice.md": ALICE, "drafts/wip.md": "# WIP\n\nOtter notes.\n",
                                      "oracle.toml": '[types]\n"drafts" = "learning"\n'})
    b = copy(tmp_path, "bob", url, {"learnings/bob.md": BOB,
                                    "oracle.toml": '[index]\nexclude = ["drafts/"]\n\n[types]\n"drafts" = "learning"\n'})
    try:
        sync(a), sync(b)
        assert not (b.settings.root / "drafts/wip.md").exists()  # kept out of Bob's folder
        assert (b.settings.root / "learnings/alice.md").exists()
        assert "WIP" in titles(b, "otter notes")  # and still in the team's index: Bob's sync did not remove it
    finally:
        a.close()
        b.close()


def test_a_mis_mounted_root_does_not_delete_the_teams_notes(pair, tmp_path: Path) -> None:
    from oracle_indexer.worker.sync import SyncRefused

    a, b = pair
    sync(a), sync(b), sync(a)
    for p in (a.settings.root / "learnings").glob("*.md"):
        p.unlink()
    with pytest.raises(SyncRefused, match="refusing to delete 3 of 3"):
        sync(a)
    assert len(files(b)) == 3 and sync(b).deleted_here == 0


# -- the property: any sequence of writes and syncs across copies converges and loses no text -----------------
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NAMES = ("learnings/a.md", "learnings/b.md", "learnings/c.md")
OPS = st.lists(st.tuples(st.sampled_from(["create", "edit", "delete", "rename", "save", "sync"]),
                         st.integers(0, 2), st.integers(0, len(NAMES) - 1)), min_size=1, max_size=14)


def _tokens(text: str) -> set[str]:
    return {w for w in text.split() if w.startswith("tok")}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, copies=st.integers(2, 3))
# a save reads only its own file: a note created, never synced and deleted again was no text a sync had seen
@example(ops=[("create", 0, 2), ("save", 0, 0), ("delete", 0, 2)], copies=2)
def test_any_sequence_converges_and_loses_no_text(tmp_path_factory: pytest.TempPathFactory, ops, copies) -> None:
    """Random create / edit / delete / rename / save (a file event: sync_paths) / sync across 2-3 working copies,
    then every copy synced until quiet: every folder holds the same notes, the database's live heads are those
    notes and the index holds exactly them, and every text that a sync ever saw (each write carries a unique
    token) is in a note, a conflict copy or the history. (A process killed mid-sync is tests/system's: here every
    step completes.)"""
    from oracle_indexer.worker import workcopy

    tmp = tmp_path_factory.mktemp("prop")
    url = _pg.new_database()
    oracles = [copy(tmp, f"m{i}", url, {}) for i in range(copies)]
    guard = pytest.MonkeyPatch()  # deletions here are deliberate: the time-window guard is tested on its own
    guard.setattr(workcopy, "deletion_cap", lambda synced: 1_000_000)
    counter = iter(range(10_000))
    seen: set[str] = set()  # tokens some sync had the chance to read

    def observe(o, only: str | None = None) -> None:  # `only`: a save reads that one file, not the folder
        for rel, text in files(o).items():
            if only is None or rel == only:
                seen.update(_tokens(text))

    try:
        for op, who, name in ops:
            o = oracles[who % copies]
            root = o.settings.root
            path = root / NAMES[name]
            if op == "create" and not path.exists():
                path.write_text(f"# Note {name}\n\ntok{next(counter)} written by m{who}\n", encoding="utf-8")
            elif op == "edit" and path.exists():
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(f"\nmore tok{next(counter)} by m{who}\n")
            elif op == "delete" and path.exists():
                path.unlink()
            elif op == "rename" and path.exists():
                path.rename(root / NAMES[(name + 1) % len(NAMES)].replace(".md", f" r{next(counter)}.md"))
            elif op == "save":
                observe(o, NAMES[name])
                o.indexer.sync_paths([NAMES[name]], embed_limit=0)
            elif op == "sync":
                observe(o)
                o.indexer.sync(vectors=False)
        for _ in range(3):  # round-robin until quiet: each pass carries every change one hop further
            for o in oracles:
                observe(o)
                o.indexer.sync(vectors=False)
        reference = files(oracles[0])
        for o in oracles[1:]:
            assert files(o) == reference
        revisions = oracles[0].indexer.copy.revisions
        heads = {p: h for p, h in revisions.heads().items() if not h.deleted}
        assert set(heads) == set(reference)
        assert set(oracles[0].store.file_states()) == set(reference)
        kept = set().union(*(_tokens(t) for t in reference.values())) if reference else set()
        for path in {p for p in revisions.heads()}:
            for r in revisions.history(path):
                text = revisions.revision_content(path, r.revision)
                if text is not None:
                    kept |= _tokens(text.decode("utf-8"))
        assert seen <= kept, seen - kept
    finally:
        guard.undo()
        for o in oracles:
            o.close()


# -- named tokens in the team store (item 4) ------------------------------------------------------------------
def test_named_tokens_live_in_the_database_and_every_engine_sees_them(tmp_path: Path) -> None:
    import time

    from oracle_server.services.capabilities.team import DB_TOKENS_SECONDS, TokenMissing, TokenStore, token_store

    url = _pg.new_database()
    old = TokenStore(tmp_path / "a")  # a data dir from before: its tokens.json is brought into the database once
    carol = old.add("carol", "read")
    a, b = token_store(url, tmp_path / "a"), token_store(url, tmp_path / "b")
    try:
        assert {e.name for e in a.entries()} == {"carol"}  # brought in at the first read
        assert not (tmp_path / "a" / "tokens.json").exists()
        alice = a.add("alice", "write")  # on machine A ...
        assert b.identify(alice).name == "alice" and b.identify(alice).can_write  # ... works on B
        assert b.identify(carol).name == "carol" and not b.identify(carol).can_write
        assert {e.name for e in b.entries()} == {"alice", "carol"}
        b.revoke("alice")  # revoked on B: A refuses it within DB_TOKENS_SECONDS
        deadline = time.monotonic() + DB_TOKENS_SECONDS + 5
        while a.identify(alice) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert a.identify(alice) is None
        with pytest.raises(TokenMissing):
            a.revoke("alice")
        again = token_store(url, tmp_path / "a")  # the renamed file does not bring a revoked token back
        assert {e.name for e in again.entries()} == {"carol"}
        again.close()
    finally:
        a.close()
        b.close()


def test_a_second_conflict_on_the_same_day_gets_a_name_of_its_own(pair) -> None:
    """Two conflicts on one note on one day, the second found by a file event (sync_paths, which looks at one
    path): the first conflict copy is never overwritten."""
    a, b = pair
    sync(a), sync(b), sync(a)
    copies = []
    for round_ in ("one", "two"):
        (a.settings.root / "learnings/shared.md").write_text(SHARED + f"\nAlice {round_}: toucan{round_}.\n")
        (b.settings.root / "learnings/shared.md").write_text(SHARED + f"\nBob {round_}: ibis{round_}.\n")
        a.indexer.sync_paths(["learnings/shared.md"], embed_limit=0)
        report = b.indexer.sync_paths(["learnings/shared.md"], embed_limit=0)
        assert len(report.conflicts) == 1
        copies.append(report.conflicts[0].split(" -> ")[1])
    assert copies[0] != copies[1] and copies[1].endswith(" 2).md")
    texts = files(b)
    assert "ibisone" in texts[copies[0]] and "ibistwo" in texts[copies[1]]
    sync(a)
    assert files(a) == files(b)
