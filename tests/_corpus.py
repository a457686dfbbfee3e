"""Test data shared by several modules: the hostile queries, the synthetic search corpus, a damaged index."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
BUNDLED = PROJECT / "knowledge"

def open_oracle(root: Path, data_dir: Path, **overrides: object):
    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle

    return Oracle.open(Settings.from_env(root=root, data_dir=data_dir, **overrides))


def indexed_oracle(tmp_path_factory, name: str, notes: dict[str, str], **overrides: object):
    """A new root holding `notes` ({relative path: text}), indexed into its own data dir; the caller closes it."""
    root = tmp_path_factory.mktemp(name)
    for rel, text in notes.items():
        write(Path(root) / rel, text)
    oracle = open_oracle(root, tmp_path_factory.mktemp("data"), **overrides)
    oracle.indexer.sync()
    return oracle


def damage_table(db: Path, table: str = "documents") -> None:
    """Overwrite the root page of `table`: the header and the schema stay sound, so the file opens; only an
    integrity check (or a read of that table) finds the damage."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\xff" * size)


# -- hostile queries (the list plus extras) -------------------------------------------------
TEN_KB_QUERY = ("how do I quote fts5 terms, e.g. col:value -x NEAR(a b) \"unbalanced [x] {y} 100% " * 200)[:10_000]
HOSTILE_QUERIES: dict[str, str] = {
    "comma": "hello, world",
    "c-sharp": "c# code",
    "at": "foo@bar",
    "percent": "100%",
    "equals": "a=b",
    "ampersand": "x & y",
    "slash": "path/to",
    "brackets": "[x]",
    "braces": "{y}",
    "NOT": "NOT",
    "AND-OR": "AND OR",
    "unbalanced-quote": '"unbalanced',
    "star": "*",
    "emoji": "🎉🔥🚀",
    "ten-kb": TEN_KB_QUERY,
    "NEAR": "NEAR(a b)",
    "column": "col:term",
    "minus": "-x",
    "caret": "^start",
    "quotes-inside": 'say "hi" to "them',
    "operators-only": "AND OR NOT NEAR",
    "parens": "((( )))",
    "mixed-scripts": "APIの使い方 ψ-memory ตลาด",
}

# Queries in which no character is a letter, mark or digit: nothing for the keyword leg.
NO_TERMS = {"star", "emoji", "parens"}


def bump_mtime(path: Path, step_ns: int = 1_000_000_000) -> None:
    """Move a file's mtime forward by a whole second so the sync's stat check cannot miss a write made
    within the file system's timestamp granularity (the test is about counts, not about clocks)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + step_ns))


def write(path: Path, text: str) -> Path:
    existed = path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if existed:
        bump_mtime(path)
    return path


# -- the synthetic part of the search corpus ---------------------------------------------------------
HEAVY_FILE = "learnings/2026-05-01_zanzibar-heavy.md"
LIGHT_FILE = "learnings/2026-05-02_ferry-light.md"
THAI_FILE = "learnings/2026-05-03_thai-market.md"
QUOKKA_PRINCIPLE = "principles/marsupial-care.md"
QUOKKA_RETRO = "retrospectives/2026-07-01_island-retro.md"
QUOKKA_LOGS = [f"learnings/2026-06-{n:02d}_quokka-{n}.md" for n in range(1, 13)]

# By construction (see write_search_corpus): 12 logs x 2 sections + principle section and its 2 bullets
# + 1 retro section. test_search also recounts this from the parsed files.
QUOKKA_CHUNKS = 12 * 2 + 3 + 1
QUOKKA_FILES = 12 + 1 + 1

FILLER = [
    "The colony was counted at dawn near the western cliffs.",
    "Rangers logged weather, water levels and the number of visitors on the boardwalk.",
    "A short survey after the heat wave, with fewer animals out in the open and more in the scrub.",
    "Volunteers repaired the fence along the salt lake and replanted the dunes.",
]


def quokka_log(n: int) -> str:
    project = "alpha" if n % 2 else "beta"
    tag = "marsupial" if n % 3 == 0 else "island"
    filler = " ".join(FILLER[: 1 + n % 4])
    return (
        f"---\ntitle: Field log {n}\ntags: [{tag}]\nproject: {project}\n---\n"
        f"# Field log {n}\n\n"
        f"## Morning count\n\nThe quokka count for day {n}. {filler}\n\n"
        f"## Evening notes\n\n{filler} One quokka {'quokka ' * (n % 3)}near the jetty.\n"
    )


def write_search_corpus(root: Path) -> None:
    write(root / HEAVY_FILE, (
        "---\ntitle: Zanzibar zanzibar field notes\ntags: [ranking-test]\nproject: alpha\n---\n"
        "# Zanzibar zanzibar field notes\n\n## Zanzibar\n\n"
        "Zanzibar zanzibar. The zanzibar archipelago; zanzibar spice; zanzibar ferries; zanzibar.\n"
    ))
    write(root / LIGHT_FILE, (
        "---\ntitle: Ferry timetables\ntags: [ranking-test]\nproject: beta\n---\n"
        "# Ferry timetables\n\n## Timetables\n\n"
        "Ferries leave the harbour every morning at seven, and the crossing takes about two hours in calm"
        " weather; the route passes zanzibar once before turning south towards the mainland port where"
        " the buses wait for the passengers and their luggage.\n"
    ))
    write(root / THAI_FILE, (
        "---\ntitle: ตลาดนัดวันเสาร์\ntags: [thai]\n---\n"
        "# ตลาดนัดวันเสาร์\n\n## บันทึก\n\n"
        "วันนี้ฉันไปตลาดนัดกับแมวของฉันแล้วซื้อมะม่วงสุกมาสามลูก\n"
    ))
    for n, rel in enumerate(QUOKKA_LOGS, start=1):
        write(root / rel, quokka_log(n))
    write(root / QUOKKA_PRINCIPLE, (
        "---\ntitle: Marsupial care\ntags: [animals]\n---\n"
        "# Marsupial care\n\nSome general notes on small animals.\n\n"
        "### Quokka care\n\nHow to look after them.\n\n"
        "- Never feed a quokka bread.\n- Keep a quokka in the shade at noon.\n"
    ))
    write(root / QUOKKA_RETRO, (
        "---\ntitle: Island season retrospective\ntags: [retro]\n---\n"
        "# Island season retrospective\n\n## What happened\n\nWe met our first quokka on the third day.\n"
    ))


def two_note_oracle(base: Path):
    """An Oracle over two bundled learnings in `base/root`, indexed into `base/data` (vectors included): the small
    index the HTTP hardening tests serve."""
    root = base / "root"
    (root / "learnings").mkdir(parents=True)
    for name in ("2026-01-14_quote-fts5-search-terms.md", "2026-06-02_sort-before-you-serialise.md"):
        shutil.copy(BUNDLED / "learnings" / name, root / "learnings" / name)
    oracle = open_oracle(root, base / "data")
    report = oracle.indexer.sync()
    assert not report.vector_failed, report.warnings
    return oracle
