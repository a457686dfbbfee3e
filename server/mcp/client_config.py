"""The MCP client configuration of this checkout, written by `make install`:

- `mcp.json`, to paste into Claude Desktop (`claude_desktop_config.json`) or any MCP client;
- `.mcp.json`, Claude Code's project file, which it offers to use when started in this folder.

Both name this checkout's `oracle` by its absolute path: a client starts servers from its own working folder,
so the relative `.venv/bin/oracle` the repository used to commit only worked when started from here. Both set
`ORACLE_ROOT`, the folder of markdown the server serves, by its absolute path too: the ORACLE_ROOT `make install`
ran with, else this checkout's bundled `knowledge/` (issue 40: a file without it left the reader guessing which
folder it served). JSON has no comments, so `make install` says which folder it wrote, and README.md how to point
it at your own notes. Generated (and gitignored) because the paths are this machine's. Idempotent: a file
already saying the same is left alone.

    python -m oracle_server.mcp.client_config [FOLDER]     # default: the checkout this module is in
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
NAMES = ("mcp.json", ".mcp.json")


def config(command: Path, root: Path) -> dict:
    return {"mcpServers": {"oracle": {"command": str(command), "args": ["serve"], "env": {"ORACLE_ROOT": str(root)}}}}


def served_root() -> Path:
    """The folder the written configuration serves: ORACLE_ROOT as `make install` ran, else the bundled knowledge."""
    given = os.environ.get("ORACLE_ROOT")
    return Path(given).expanduser().resolve() if given else PROJECT / "knowledge"


def oracle_command() -> Path:
    """The `oracle` console script beside this interpreter (`.venv/bin/oracle` under `make install`)."""
    return Path(sys.executable).absolute().parent / "oracle"


def write(folder: Path, command: Path | None = None, root: Path | None = None) -> list[Path]:
    """Write both files into `folder`; returns those that changed."""
    text = json.dumps(config(command or oracle_command(), root or served_root()), indent=2) + "\n"
    changed = []
    for name in NAMES:
        path = folder / name
        try:
            if path.read_text(encoding="utf-8") == text:
                continue
        except OSError:
            pass
        path.write_text(text, encoding="utf-8")
        changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else PROJECT
    for path in write(folder):
        print(f"oracle: wrote {path} (MCP client configuration: {oracle_command()} serve, serving"
              f" ORACLE_ROOT={served_root()}; edit ORACLE_ROOT there, or run `ORACLE_ROOT=~/notes make install`,"
              " for your own notes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
