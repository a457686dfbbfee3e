"""`oracle init [PATH]` in the terminal: what the written oracle.toml means, in a few lines. The survey, the
language choice and the file itself are the service's (server/services/support/init.py)."""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import Path

from oracle_indexer.notes.discover import Discovery
from oracle_indexer.rootconfig import CONFIG_NAME
from oracle_server.registry.render import printable, summary_lines
from oracle_server.services.support.init import InitError, Initialised
from oracle_server.services.support.init import init as write_config

__all__ = ["InitError", "describe", "init", "report"]
SHOWN_FOLDERS = 15  # folder lines printed; a vault of 200 folders is listed in oracle.toml, not on the terminal


def describe(found: Discovery) -> list[str]:
    """What `oracle index` will do with this layout, in a few lines."""
    by_type = Counter(f.type for f in found.files)
    kinds = ", ".join(f"{n} {t}" for t, n in sorted(by_type.items())) or "nothing"
    lines = [f"will index {len(found.files)} notes ({kinds})"]
    lines += summary_lines(found.unmapped, found.aliases, dict(found.excluded), found.skipped)
    lines += [f"warning: {w}" for w in found.warnings]
    return lines


def report(done: Initialised) -> list[str]:
    """The lines `oracle init` prints."""
    lines = [f"wrote {done.target}"]
    for c in done.languages:
        where = "" if c.parent == "." else f" in {c.parent}/"
        lines.append(f"languages{where}: indexing {', '.join(n + '/' for n in c.kept)}, {c.reason}; leaving out"
                     f" {len(c.left_out)} other language folders: delete a line of `exclude` in {CONFIG_NAME}"
                     " to add one")
    if done.changelogs:
        logs = ", ".join(f"{f}/ ({n})" for f, n in done.changelogs.items())
        lines.append(f"suggestion: release notes and changelogs ({logs}) crowd out answers; {CONFIG_NAME} has"
                     " a commented line to leave each out")
    for typed, effective in done.folders[:SHOWN_FOLDERS]:
        where = "files in the folder itself" if typed.folder == "." else f"{typed.folder}/"
        shown = effective or "not indexed (uncomment default_type to index them)"
        lines.append(f"type: {where} ({typed.files}) -> {shown}: {typed.kind.kind}, {typed.kind.reason}")
    if len(done.folders) > SHOWN_FOLDERS:
        rest = done.folders[SHOWN_FOLDERS:]
        lines.append(f"type: {len(rest)} more folders ({sum(t.files for t, _ in rest)} files): each one's type and"
                     f" why are in {CONFIG_NAME} under [types]")
    lines += describe(done.found)
    lines.append(f"next: oracle --root {done.root} index")
    return lines + client_lines(Path(done.root))


def client_lines(root: Path) -> list[str]:
    """How to serve this folder to an MCP client, with this installation's `oracle` and the folder by absolute path
    (issue 48: the README's `claude mcp add` set no ORACLE_ROOT, so every project searched the bundled demo notes)."""
    from oracle_server.mcp.client_config import config, oracle_command

    command, folder = oracle_command(), root.resolve()
    snippet = json.dumps(config(command, folder), indent=2)
    return ["", "then connect your MCP client to this folder:",
            "  Claude Code:  claude mcp add oracle -e " + shlex.quote(f"ORACLE_ROOT={folder}") + " -- "
            + shlex.quote(str(command)) + " serve",
            "  Claude Desktop (claude_desktop_config.json) or any client's mcp.json:",
            *("    " + line for line in snippet.splitlines())]


def init(path: Path, force: bool = False) -> tuple[Path, list[str]]:
    """Write PATH/oracle.toml (server/services/support/init.py); return it and the lines that say what it means."""
    done = write_config(path, force=force)
    return done.target, [printable(line) for line in report(done)]  # each a line: names in it cannot break it
