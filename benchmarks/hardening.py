"""Figures behind issue 13's performance items, printed, never asserted (the machine is shared).

    .venv/bin/python benchmarks/hardening.py [supersede] [bignote]

supersede: a knowledge base where one query matches ~12,600 chunks, one of them a note of 2,487 sections
  that is then superseded. Times an fts search at offset=10000 before and after the supersession, the
  re-rank alone (oracle_server.services.capabilities.search.scoring.below_successors) on the same candidates, and the median latency of an
  unrelated search while 8 threads run the offset=10000 search.
bignote: a principle of 20,000 bullets saved beside a running watcher; how long until a small note saved
  just after it is searchable by keyword and by vector, and how long a learn takes meanwhile.
Everything is generated under a temporary folder and removed afterwards.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for extra in (REPO, REPO / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from _corpus import open_oracle, write  # noqa: E402

from oracle_server.services.capabilities.search import scoring  # noqa: E402
from oracle_server.services.vocabulary.models import LearnRequest, SearchRequest, SupersedeRequest  # noqa: E402
from oracle_server.services.capabilities.search.pipeline import run_search  # noqa: E402

OLD_SECTIONS = 2_487
FILLER_FILES = 200
FILLER_SECTIONS = 50  # 200 x 50 = 10,000 filler chunks
BIG_BULLETS = 20_000


def _timed(fn, repeat: int = 3) -> float:
    """Best of `repeat`, in ms."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def supersede_bench(base: Path) -> None:
    from oracle_server.services.capabilities.supersede import supersede

    root = base / "root"
    old = "learnings/2026-01-01_heron-old.md"
    write(root / old, "---\ntitle: Heron old\n---\n# Heron old\n\n" + "".join(
        f"## Heron section {n}\n\nHeron wading note number {n}.\n\n" for n in range(OLD_SECTIONS)))
    write(root / "learnings/2026-01-02_heron-new.md", "---\ntitle: Heron new\n---\n# Heron new\n\n## Now\n\nHeron wading, the new way.\n")
    for f in range(FILLER_FILES):
        write(root / f"learnings/2026-02-01_filler-{f}.md", f"---\ntitle: Filler {f}\n---\n# Filler {f}\n\n" + "".join(
            f"## Part {n}\n\nA heron passed by filler {f} part {n}.\n\n" for n in range(FILLER_SECTIONS)))
    oracle = open_oracle(root, base / "data")
    try:
        started = time.perf_counter()
        oracle.indexer.sync(vectors=False)
        print(f"supersede: indexed {oracle.store.counts()['chunks']} chunks (keyword only) in {time.perf_counter() - started:.1f} s")
        deep = SearchRequest(query="heron", mode="fts", limit=10, offset=10_000)
        other = SearchRequest(query="wading new way", mode="fts", limit=5)
        before = _timed(lambda: run_search(oracle, deep))
        supersede(oracle, SupersedeRequest(old_id=old, new_id="learnings/2026-01-02_heron-new.md"))
        after = _timed(lambda: run_search(oracle, deep))
        print(f"supersede: search offset=10000: {before:.0f} ms before superseding, {after:.0f} ms after")

        from oracle_server.services.capabilities.supersede import successors_for

        result = run_search(oracle, SearchRequest(query="heron", mode="fts", limit=1))
        ids = [row["id"] for row in oracle.store.rows("SELECT id FROM documents ORDER BY id")]
        docs = oracle.store.documents_by_id(ids)
        successors, _ = successors_for(oracle, docs)
        fused = [scoring.Fused(i, 1.0 / (n + 1)) for n, i in enumerate(ids)]
        rerank = _timed(lambda: scoring.below_successors(list(fused), successors))
        resolve = _timed(lambda: successors_for(oracle, docs))
        print(f"supersede: re-rank alone over {len(fused)} candidates ({len(successors)} superseded): {rerank:.0f} ms;"
              f" resolving the supersessions of all of them: {resolve:.0f} ms (total hits {result.total})")

        stop = threading.Event()

        def hammer() -> None:
            while not stop.is_set():
                run_search(oracle, deep)

        threads = [threading.Thread(target=hammer) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(1)
        samples = []
        for _ in range(15):
            started = time.perf_counter()
            run_search(oracle, other)
            samples.append((time.perf_counter() - started) * 1000)
        stop.set()
        for t in threads:
            t.join()
        quiet = [_timed(lambda: run_search(oracle, other), 1) for _ in range(15)]
        print(f"supersede: unrelated search median {statistics.median(quiet):.0f} ms alone,"
              f" {statistics.median(samples):.0f} ms beside 8 threads searching at offset=10000")
    finally:
        oracle.close()


def bignote_bench(base: Path) -> None:
    from oracle_server.services.capabilities.learn import learn

    root = base / "root"
    write(root / "learnings/2026-01-01_seed.md", "---\ntitle: Seed\n---\n# Seed\n\nSeed note.\n")
    oracle = open_oracle(root, base / "data")
    try:
        oracle.indexer.sync()
        oracle.start(watch=True, sync=False)
        try:
            big = "---\ntitle: Big principle\n---\n# Big principle\n\n" + "".join(
                f"### Rule {n}\n\n- keep bullet {n} short and specific.\n\n" for n in range(BIG_BULLETS))
            write(root / "principles/big.md", big)
            print(f"bignote: wrote principles/big.md ({len(big.encode()) // 1024} KB, {BIG_BULLETS} bullets)")
            time.sleep(1.5)  # the watcher has taken the big note
            saved = time.perf_counter()
            write(root / "learnings/2026-01-02_pelican.md", "---\ntitle: Pelican\n---\n# Pelican\n\nPelicans glide over the zebrafish pond.\n")
            keyword = vector = None
            learned = None

            def do_learn() -> None:
                nonlocal learned
                started = time.perf_counter()
                learn(oracle, LearnRequest(pattern="Cormorants dry their wings on the jetty.", title="Cormorant"))
                learned = time.perf_counter() - started

            learner = threading.Thread(target=do_learn)
            learner.start()
            deadline = saved + 900
            while time.perf_counter() < deadline and (keyword is None or vector is None):
                if keyword is None and run_search(oracle, SearchRequest(query="zebrafish", mode="fts")).hits:
                    keyword = time.perf_counter() - saved
                if vector is None and any(h.source_file.endswith("pelican.md") for h in run_search(
                        oracle, SearchRequest(query="pelicans glide over a pond", mode="vector")).hits):
                    vector = time.perf_counter() - saved
                time.sleep(0.2)
            learner.join(timeout=900)
            print(f"bignote: small note searchable by keyword after {keyword:.1f} s, by vector after {vector:.1f} s;"
                  f" a learn meanwhile took {learned:.1f} s" if keyword and vector and learned
                  else f"bignote: keyword {keyword}, vector {vector}, learn {learned} (None: not within 900 s)")
            started = time.perf_counter()
            while oracle.store.pending_count() and time.perf_counter() - started < 900:
                time.sleep(1)
            states = oracle.store.file_states()
            chunks = len(oracle.store.file_chunk_ids("principles/big.md")) if "principles/big.md" in states else 0
            print(f"bignote: big note indexed with {chunks} chunks; vector backlog drained"
                  f" {time.perf_counter() - saved:.0f} s after the small note was saved")
        finally:
            oracle.stop()
    finally:
        oracle.close()


def main(argv: list[str]) -> int:
    which = argv or ["supersede", "bignote"]
    for name in which:
        with tempfile.TemporaryDirectory(prefix=f"oracle-hardening-{name}-") as tmp:
            {"supersede": supersede_bench, "bignote": bignote_bench}[name](Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
