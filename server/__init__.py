"""Knowledge out: one service layer and thin adapters over it.

The packages, each importing only the ones above it in this list (tests/contract/test_layers.py checks it):

- `services/`  the one service layer: search, consult, learn, read, edit, stats, ... over the indexer's store.
- `registry/`  every capability declared once (tools.py), with its text and schemas, over the services.
- `mcp/`       the MCP adapter: tools, resources, prompts, completions, notifications, the stdio front.
- `engine/`    one shared engine process per knowledge root, its private channel and the stdio relay to it.
- `http/`      the REST API, the dashboard and MCP over streamable HTTP.
- `cli/`       the `oracle` command, which starts any of the above.
"""

import os

__version__ = "0.1.0"


def import_root() -> str | None:
    """The folder that makes this very copy of Oracle importable in a child process: the parent of the
    `oracle_server` package folder (a wheel's site-packages, or a benchmark's folder of symlinks). None for an
    editable install, where the folder is `server/` and the install's import finder maps the name: the child,
    started with the same interpreter, finds it the same way."""
    package = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(package) if os.path.basename(package) == "oracle_server" else None


def child_pythonpath(current: str | None) -> str:
    """PYTHONPATH for a child process that must run this copy of Oracle: the import root, then what was set."""
    return os.pathsep.join(filter(None, [import_root(), current]))
