"""Make a source tree importable by its package names, for a benchmark that runs two trees side by side or a git
worktree that shares the main checkout's venv.

The repository keeps the design's folders (`server/`, `indexer/`, `knowledge/`) and installs them as
`oracle_server`, `oracle_indexer`, `oracle_knowledge` (pyproject.toml's package-dir), so a tree on PYTHONPATH is
not importable by those names, and the venv's editable install maps them to the checkout it was made from. This
makes `<tree>/.oracle-import/` with one symlink per name (and the folders' own names, for trees older than the
rename) and prints or returns it: put it first on PYTHONPATH and that tree's code runs.

    PYTHONPATH=$(python benchmarks/trees.py /path/to/worktree) .venv/bin/python -m pytest ...
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

NAMES = {"oracle_server": "server", "oracle_indexer": "indexer", "oracle_knowledge": "knowledge",
         "server": "server", "indexer": "indexer"}
# A launch line for `python -c` that runs the CLI of whichever tree is on PYTHONPATH, renamed or not.
LAUNCH = ("import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
          "try:\n    from oracle_server.cli.commands import main\n"
          "except ImportError:\n    from server.cli.commands import main\n"
          "sys.exit(main())")


def importable(tree: Path | str) -> str:
    """The folder to put first on PYTHONPATH so that `tree`'s code is what `import oracle_server` finds."""
    tree = Path(tree).resolve()
    shim = tree / ".oracle-import"
    shim.mkdir(exist_ok=True)
    for name, folder in NAMES.items():
        link, target = shim / name, tree / folder
        if target.is_dir() and not link.is_symlink():
            os.symlink(target, link)
    return str(shim)


if __name__ == "__main__":
    print(importable(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent))
