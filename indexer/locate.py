"""Where the knowledge root and the data dir are, from arguments and the environment: strings and `os.path`
only, so the CLI's fast path (server/cli/remote.py) can find a running server before importing anything heavy.
indexer/config.py builds its Settings on the same functions, so both always agree."""

from __future__ import annotations

import os

from oracle_indexer.digest import sha256

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKOUT_KNOWLEDGE = os.path.join(PROJECT, "knowledge")


def data_home() -> str:
    return os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share"),
                        "oracle")


def cache_home() -> str | None:
    """Oracle's cache folder (derived files any process may rebuild: the MCP handshake answers, the CLI's option
    table): ORACLE_CACHE_DIR, else $XDG_CACHE_HOME/oracle, else ~/.cache/oracle; None without a home."""
    given = os.environ.get("ORACLE_CACHE_DIR", "").strip()
    if given:
        return os.path.expanduser(given)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "oracle")
    home = os.path.expanduser("~")
    return os.path.join(home, ".cache", "oracle") if os.path.isabs(home) else None


def in_checkout() -> bool:
    """Running with the starter knowledge/ beside the packages (a source checkout, or the MCP bundle's lib/),
    not from an installed wheel: there the packages sit in site-packages, where a `knowledge` folder would be
    some other distribution's."""
    return os.path.isdir(CHECKOUT_KNOWLEDGE) and os.path.basename(PROJECT) not in ("site-packages", "dist-packages")


def default_root() -> str:
    """The starter knowledge: the checkout's knowledge/, else the user copy an installed wheel makes."""
    return CHECKOUT_KNOWLEDGE if in_checkout() else os.path.join(data_home(), "knowledge")


def resolve_root(given: str | None) -> str:
    """The root as Settings sees it: --root, else ORACLE_ROOT, else the default; absolute, symlinks resolved."""
    given = given or os.environ.get("ORACLE_ROOT")
    return os.path.realpath(os.path.expanduser(given)) if given else default_root()


def default_data_dir(root: str) -> str:
    """One index per knowledge root, so pointing ORACLE_ROOT elsewhere never mixes two bases."""
    digest = sha256(root.encode()).hexdigest()[:10]
    return os.path.join(data_home(), f"{os.path.basename(root) or 'root'}-{digest}")


def resolve_data_dir(given: str | None, root: str) -> str:
    given = given or os.environ.get("ORACLE_DATA_DIR")
    return os.path.realpath(os.path.expanduser(given)) if given else default_data_dir(root)
