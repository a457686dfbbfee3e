"""`oracle init PATH` ends with the exact lines that connect an MCP client to that folder (issue 48 item 3): Claude
Code's one-liner and the mcp.json block, both naming this installation's `oracle` and the folder by absolute path."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from oracle_server.cli.commands import main


def test_init_prints_the_client_lines_for_the_folder(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "my notes"  # a space: the shell line must still name one folder
    (folder / "docs").mkdir(parents=True)
    (folder / "docs/a.md").write_text("# A\n\nhello\n", encoding="utf-8")
    assert main(["init", str(folder)]) == 0
    out = capsys.readouterr().out
    claude = next(line for line in out.splitlines() if "claude mcp add" in line)
    words = shlex.split(claude.split(":", 1)[1])
    assert words[:5] == ["claude", "mcp", "add", "oracle", "-e"]
    assert words[5] == f"ORACLE_ROOT={folder.resolve()}" and words[6] == "--" and words[-1] == "serve"
    assert os.access(words[7], os.X_OK)
    block = out[out.index("{", out.index("mcp.json")):]
    server = json.loads(block)["mcpServers"]["oracle"]
    assert server["env"]["ORACLE_ROOT"] == str(folder.resolve()) and server["args"] == ["serve"]
    assert server["command"] == words[7]
