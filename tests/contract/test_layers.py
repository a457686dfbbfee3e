"""The layers import only downward (server/__init__.py lists them): services never import an adapter, the
adapters never import one above them, and the indexer never imports the server. Every import counts: top-level,
inside a function (lazy) and under TYPE_CHECKING alike. Pure AST reading, no import is executed."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]

# What each package may import besides itself, the standard library and third-party packages: the layers below it
# in pyproject.toml's import contract (the one table; tests/contract/test_imports.py runs import-linter over it).
_LAYERS: list[str] = next(c["layers"] for c in tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
                          ["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
ALLOWED: dict[str, set[str]] = {layer: set(_LAYERS[n + 1:]) for n, layer in enumerate(_LAYERS)}
FOLDERS = {"oracle_indexer": "indexer", "oracle_server": "server"}  # import name -> the repository's folder
OURS = tuple(FOLDERS)
# The folders' own names are not importable once installed (pyproject.toml's package-dir): naming them is a bug.
UNINSTALLED = tuple(FOLDERS.values())


def layer_of(module: str) -> str | None:
    """The layer a dotted module name belongs to (`server` alone is the version, importable by everyone)."""
    if module == "oracle_server":
        return None
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if module == layer or module.startswith(layer + "."):
            return layer
    return module


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PROJECT).with_suffix("").parts)
    parts[0] = {folder: name for name, folder in FOLDERS.items()}[parts[0]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(path: Path) -> str:
    return module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]


def imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """Every module of ours an import statement names, with its line: `from server import x` names `server.x`
    when x is a module (a file or folder beside server/__init__.py), else `server`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                top, *rest = base.split(".")
                candidate = PROJECT.joinpath(FOLDERS.get(top, top), *rest, alias.name)
                is_module = candidate.with_suffix(".py").exists() or candidate.is_dir()
                found.append((node.lineno, f"{base}.{alias.name}" if is_module else base))
    return [(line, name) for line, name in found if name.split(".")[0] in OURS + UNINSTALLED]


def sources() -> list[Path]:
    return sorted(p for folder in FOLDERS.values() for p in (PROJECT / folder).rglob("*.py"))


def test_every_module_belongs_to_a_layer():
    loose = [module_name(p) for p in sources() if layer_of(module_name(p)) not in ALLOWED and module_name(p) != "oracle_server"]
    assert loose == [], f"modules outside the layers of server/__init__.py: {loose}"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_go_only_downward(layer: str):
    wrong = []
    for path in sources():
        mine = module_name(path)
        if layer_of(mine) != layer:
            continue
        for line, name in imported_modules(path.read_text(encoding="utf-8"), package_of(path)):
            theirs = layer_of(name)
            if theirs is not None and theirs != layer and theirs not in ALLOWED[layer]:
                wrong.append(f"{path.relative_to(PROJECT)}:{line} imports {name}")
    assert wrong == [], f"{layer} may import only {sorted(ALLOWED[layer]) or 'itself'}:\n" + "\n".join(wrong)


def test_the_check_sees_lazy_and_type_checking_imports():
    """A wrong import inside a function or under TYPE_CHECKING is seen too (a check that could not fail would
    prove nothing)."""
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from oracle_server.http.app import build_app\n"
              "def f():\n    from oracle_server import cli\n    from . import scoring\n")
    names = [name for _, name in imported_modules(source, "oracle_server.services.capabilities.search")]
    assert names == ["oracle_server.http.app", "oracle_server.cli", "oracle_server.services.capabilities.search.scoring"]
    assert [layer_of(n) for n in names] == ["oracle_server.http", "oracle_server.cli", "oracle_server.services"]


def test_the_folders_own_names_are_never_imported():
    """`server` and `indexer` are the repository's folders, not import names: installed, only `oracle_server` and
    `oracle_indexer` exist, so code that names a folder works in a checkout and breaks once installed."""
    wrong = [f"{path.relative_to(PROJECT)}:{line} imports {name}"
             for path in sources()
             for line, name in imported_modules(path.read_text(encoding="utf-8"), package_of(path))
             if name.split(".")[0] in UNINSTALLED]
    assert wrong == []
    assert imported_modules("import server.cli\nfrom indexer.notes import parse\n", "oracle_server") == [
        (1, "server.cli"), (2, "indexer.notes.parse")]


def test_the_installed_distribution_has_no_top_level_server_or_indexer():
    """Installed into an environment that has another `server` or `indexer` package, neither may be shadowed."""
    import importlib.metadata

    ours = sorted(name for name, dists in importlib.metadata.packages_distributions().items() if "oracle-memory" in dists)
    assert ours == ["oracle_indexer", "oracle_knowledge", "oracle_server"]
