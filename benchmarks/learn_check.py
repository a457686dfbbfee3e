"""What the duplicate check costs a learn (issue 40): the same learns with the check (the default) and without it
(`allow_duplicate=true` skips it), in one process over a copy of tests/fixtures/team-notes, median of N each,
alternating so that load on the machine falls on both alike. Each learn writes a new, distinct note.

    .venv/bin/python benchmarks/learn_check.py [--n 15]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=15)
    args = parser.parse_args()
    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.capabilities.learn import learn
    from oracle_server.services.vocabulary.models import LearnRequest

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "notes"
        shutil.copytree(REPO / "tests" / "fixtures" / "team-notes", root)
        oracle = Oracle.open(Settings.from_env(root=root, data_dir=Path(tmp) / "data"))
        try:
            oracle.indexer.sync()
            learn(oracle, LearnRequest(pattern="Warm-up learn: load the model.", title="warm up"))
            times: dict[bool, list[float]] = {True: [], False: []}
            for i in range(args.n * 2):
                skip = bool(i % 2)
                pattern = f"Learning number {i}: the pool of worker {i} drains after {i * 7} seconds of idle time."
                started = time.perf_counter()
                learn(oracle, LearnRequest(pattern=pattern, title=f"Pool drain {i}", allow_duplicate=skip))
                times[skip].append((time.perf_counter() - started) * 1000)
        finally:
            oracle.close()
    checked, unchecked = statistics.median(times[False]), statistics.median(times[True])
    print(f"learn, median of {args.n}: with the duplicate check {checked:.1f} ms, without (allow_duplicate)"
          f" {unchecked:.1f} ms; the check costs {checked - unchecked:.1f} ms ({checked / unchecked:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
