"""Issue 26, should-fix: `--json` CLI output carries no raw C1 control (U+0080-U+009F: U+009B is a terminal's
CSI, as ESC [ is), DEL or bidi override from a note: each is a \\uXXXX escape, the same character to a JSON reader.
A real `oracle index` and `oracle search --json` / `oracle read --json`."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from _corpus import write
from _procs import oracle_cmd

HOSTILE = "Zebra\x9b2J\x9d0;owned\x9c\x85\x7f\u202eevil\u2066"


def test_json_output_escapes_c1_controls(tmp_path: Path) -> None:
    write(tmp_path / "root/learnings/z.md", f"---\ntitle: \"{HOSTILE}\"\n---\n# Zebra\n\n## Stripes\n\nZebra {HOSTILE}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / "data"), PYTHONIOENCODING="utf-8")
    subprocess.run([*oracle_cmd(), "index"], env=env, check=True, capture_output=True, timeout=300)
    for args in (["search", "zebra", "--json", "--mode", "fts", "--local"], ["read", "learnings/z.md", "--json", "--local"]):
        done = subprocess.run([*oracle_cmd(), *args], env=env, capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        out = done.stdout.decode("utf-8")
        raw = re.findall(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out)
        assert not raw, (args, raw)
        assert "\\u009b" in out and "\\u202e" in out, out[:500]
        assert HOSTILE in json.dumps(json.loads(out), ensure_ascii=False)  # the same text to a JSON reader
