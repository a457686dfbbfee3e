"""How this Oracle was installed, so that a message asking for an optional extra names the command that works here.

`pip install 'oracle-memory[postgres]'` is the wrong advice for most users (issue 40): under `uv tool install` or
`pipx install` there is no pip on the PATH for that environment, and a bare `pip` installs into some other Python.
Each installer leaves a mark in the environment it made, which is what is read here (no subprocess, no network):

- `uv tool install`: `uv-receipt.toml` in the environment (sys.prefix), naming what was installed (a name, or a
  folder for `uv tool install .`); uv replaces a tool's environment when it is installed again with other extras;
- `pipx install`: `pipx_metadata.json` there; `pipx inject` adds packages to that environment;
- `make install`: this checkout's `.venv` (its lock already has the extra: `make install` again repairs it);
- any other virtual environment: its own interpreter's pip; no environment at all: `python3 -m pip --user`.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

DISTRIBUTION = "oracle-memory"
# what each extra brings, for `pipx inject` (which takes packages, not a distribution's extras); pyproject.toml's
# [project.optional-dependencies] (tests/unit/test_installed.py checks they agree)
EXTRAS: dict[str, tuple[str, ...]] = {"postgres": ("psycopg[binary]>=3.2,<4", "psycopg-pool>=3.2,<4")}


def how_installed(prefix: str | None = None) -> str:
    """"uv-tool", "pipx", "checkout" (`make install`'s .venv), "venv" or "system"."""
    prefix = prefix or sys.prefix
    if os.path.isfile(os.path.join(prefix, "uv-receipt.toml")):
        return "uv-tool"
    if os.path.isfile(os.path.join(prefix, "pipx_metadata.json")):
        return "pipx"
    from oracle_indexer.locate import PROJECT

    if os.path.realpath(prefix) == os.path.realpath(os.path.join(PROJECT, ".venv")):
        return "checkout"
    if prefix != getattr(sys, "base_prefix", prefix):
        return "venv"
    return "system"


def _uv_source(prefix: str) -> str:
    """What `uv tool install` was given: the folder of a `uv tool install .`, else the distribution's name."""
    try:
        import tomllib

        with open(os.path.join(prefix, "uv-receipt.toml"), "rb") as handle:
            receipt = tomllib.load(handle)
        for requirement in receipt.get("tool", {}).get("requirements", []):
            if isinstance(requirement, dict) and requirement.get("name") == DISTRIBUTION:
                return str(requirement.get("directory") or requirement.get("path") or DISTRIBUTION)
    except (OSError, ValueError):
        pass
    return DISTRIBUTION


def _pipx_name(prefix: str) -> str:
    try:
        with open(os.path.join(prefix, "pipx_metadata.json"), encoding="utf-8") as handle:
            return str(json.load(handle)["main_package"]["package"])
    except (OSError, ValueError, KeyError, TypeError):
        return os.path.basename(os.path.normpath(prefix)) or DISTRIBUTION


def install_extra(extra: str, prefix: str | None = None) -> str:
    """The shell command that adds `extra` (e.g. "postgres") to the Oracle installed at `prefix` (this one's)."""
    prefix = prefix or sys.prefix
    kind = how_installed(prefix)
    if kind == "uv-tool":
        return f"uv tool install {shlex.quote(f'{_uv_source(prefix)}[{extra}]')}"
    if kind == "pipx":
        return f"pipx inject {shlex.quote(_pipx_name(prefix))} " + " ".join(shlex.quote(p) for p in EXTRAS[extra])
    if kind == "checkout":
        return "make install"
    python = os.path.join(prefix, "bin", "python") if kind == "venv" else "python3"
    user = " --user" if kind == "system" else ""
    return f"{shlex.quote(python)} -m pip install{user} {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"
