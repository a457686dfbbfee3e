"""The MCP client configuration of this checkout, written by `make install`:

- `mcp.json`, to paste into Claude Desktop (`claude_desktop_config.json`) or any MCP client;
- `.mcp.json`, Claude Code's project file, which it offers to use when started in this folder.

Both name this checkout's `oracle` by its absolute path: a client starts servers from its own working folder,
so the relative `.venv/bin/oracle` the repository used to commit only worked when started from here. Generated
(and gitignored) because the path is this machine's. Idempotent: a file already saying the same is left alone.

    python -m oracle_server.mcp.client_config [FOLDER]     # default: the checkout this module is in
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
NAMES = ("mcp.json", ".mcp.json")


def config(command: Path) -> dict:
    return {"mcpServers": {"oracle": {"command": str(command), "args": ["serve"]}}}


def oracle_command() -> Path:
    """The `oracle` console script beside this interpreter (`.venv/bin/oracle` under `make install`)."""
    return Path(sys.executable).absolute().parent / "oracle"


def write(folder: Path, command: Path | None = None) -> list[Path]:
    """Write both files into `folder`; returns those that changed."""
    text = json.dumps(config(command or oracle_command()), indent=2) + "\n"
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
        print(f"oracle: wrote {path} (MCP client configuration: {oracle_command()} serve)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
