"""What a cold one-shot command says it waits for (server/cli/waiting.py, issue 40): nothing when it is quick, the
current stage once it has waited, each new stage after that, and the embedding model's load through the embedder's
own hook (oracle_indexer.models.embed.LOADING, called by a real load)."""

from __future__ import annotations

import io
import subprocess
import sys
import time

from oracle_indexer.models import embed
from oracle_server.cli.waiting import Waiting


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_a_quick_command_says_nothing() -> None:
    out = io.StringIO()
    with Waiting("opening the index", stream=out, delay=5.0) as waiting:
        waiting.set("loading the embedding model (minilm)")
    assert out.getvalue() == ""
    assert waiting.loading not in embed.LOADING  # the hook goes with the command


def test_a_slow_command_says_its_stage_then_each_new_one() -> None:
    out = io.StringIO()
    with Waiting("opening the index", stream=out, delay=0.05) as waiting:
        deadline = time.monotonic() + 30
        while not out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        waiting.progress("keyword", 3, 57)
        waiting.progress("keyword", 9, 57)  # the same stage: said once
        waiting.progress("files", 10, 57)  # checking files is quick: not a stage
    assert lines(out) == ["oracle: opening the index…", "oracle: indexing 57 files…"]


def test_a_real_model_load_is_announced() -> None:
    """In a process of its own: this one shares one loaded model between tests (tests/conftest.py), so an embedder
    here would not load anything."""
    script = ("import io, sys, time\n"
              "from oracle_indexer.models import embed\n"
              "from oracle_server.cli.waiting import Waiting\n"
              "out = io.StringIO()\n"
              "with Waiting('opening the index', stream=out, delay=0.0):\n"
              "    time.sleep(0.05)\n"
              "    assert embed.Embedder().embed_query('retry with backoff').shape[-1] == embed.DIMENSIONS\n"
              "sys.stdout.write(out.getvalue())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "oracle: loading the embedding model (minilm)…"
