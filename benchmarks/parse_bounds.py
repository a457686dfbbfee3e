"""Parse time of pathological markdown: each case decoded and parsed as the indexer does, timed.

    .venv/bin/python benchmarks/parse_bounds.py [--runs 5] [--json]

The cases are the ones a hostile or broken knowledge base throws at the parser (issue 6): 10 MB of
prose, a 5 MB line, 10,000-level nested lists and blockquotes, 30,000-level YAML flow nesting, a YAML
alias bomb, 100,000 tags, relations, headings and bullets, a heading of 2 MB of spaces. Files over
ORACLE_MAX_FILE_BYTES (2 MB) are never parsed by the indexer; they are timed here anyway, as if the
limit were raised. Prints the median and the worst of --runs runs per case; tests/test_faults.py runs this
script once (--runs 1 --json) in a child process with a time limit, so a hang or a crash fails there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oracle_indexer.notes.parse import parse_markdown  # noqa: E402
from oracle_indexer.worker.sync import decode_markdown  # noqa: E402

ALIAS_BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip([None, *"abcdefgh"], "abcdefghi")
)  # 9^9 = 387 million nodes for a walk that does not notice the aliases

CASES: dict[str, Callable[[], str]] = {
    "10 MB of prose": lambda: "## A\n\n" + ("lorem ipsum dolor sit amet consectetur " * 20 + "\n\n") * 13_000,
    "5 MB single line": lambda: "## A\n\n" + "word " * 1_000_000 + "\n",
    "10,000-level nested list (one line)": lambda: "## A\n\n" + "- " * 10_000 + "deep\n",
    "1,000-level nested list (indented)": lambda: "## A\n\n" + "".join(" " * 2 * i + "- x\n" for i in range(1_000)),
    "10,000-level blockquote": lambda: "## A\n\n" + "> " * 10_000 + "deep\n",
    "30,000-level YAML flow sequence": lambda: "---\nx: " + "[" * 30_000 + "]" * 30_000 + "\n---\n## A\nbody\n",
    "30,000-level YAML flow mapping": lambda: "---\nx: " + "{" * 30_000 + "}" * 30_000 + "\n---\n## A\nbody\n",
    "15,000-level YAML flow mapping (150 KB)": lambda: "---\nx: " + "{a: " * 15_000 + "1" + "}" * 15_000
    + "\n---\n## A\nbody\n",
    "1,500-level YAML block mapping": lambda: "---\n" + "".join(" " * i + "k:\n" for i in range(1_500)) + "---\n## A\nbody\n",
    "YAML alias bomb (9^9 nodes)": lambda: "---\n" + ALIAS_BOMB + "---\n## A\nbody\n",
    "100,000 tags": lambda: "---\ntags: [" + ", ".join(f"t{i}" for i in range(100_000)) + "]\n---\n## A\nbody\n",
    "100,000 relations": lambda: "---\nrelations:\n" + "".join(f"  - [s{i}, p, o]\n" for i in range(100_000))
    + "---\n## A\nbody\n",
    "100,000 headings (100,000 chunks)": lambda: "".join(f"## Heading {i}\n\ntext {i}\n\n" for i in range(100_000)),
    "100,000 subheadings (1 chunk)": lambda: "## A\n\n" + "".join(f"### Heading {i}\n" for i in range(100_000)),
    "100,000 principle bullets": lambda: "### P\n\n" + "- rule\n" * 100_000,
    "2 MB of spaces in a heading": lambda: "# " + " " * 2_000_000 + "x\n",
    "unclosed fence over 100,000 lines": lambda: "## A\n```\n" + "## not a heading\n" * 100_000,
}


def measure(name: str, runs: int) -> dict:
    data = CASES[name]().encode()
    doc_type = "principle" if "principle" in name else "learning"
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        text, _ = decode_markdown(data, 1 << 30)
        parsed = parse_markdown(text or "", "learnings/x.md", doc_type)
        times.append(time.perf_counter() - start)
    return {"case": name, "mb": round(len(data) / 1e6, 2), "median_s": round(statistics.median(times), 3),
            "max_s": round(max(times), 3), "chunks": len(parsed.chunks), "warnings": parsed.warnings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="one JSON object per case, one per line")
    args = parser.parse_args()
    for name in CASES:
        result = measure(name, args.runs)
        if args.json:
            print(json.dumps(result), flush=True)
        else:
            print(f"{name:38s} {result['mb']:6.2f} MB  median {result['median_s']:6.3f} s  max {result['max_s']:6.3f} s"
                  f"  {result['chunks']:>7} chunks", flush=True)


if __name__ == "__main__":
    main()
