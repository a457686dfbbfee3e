"""The import contracts hold, checked by tools rather than by review: import-linter over pyproject.toml's
`[tool.importlinter]` (the layers, nothing but the store imports a database driver, adapters reach the store only
through services, parsing and the models never reach the store), and no module imports itself through others
(grimp's graph, every strongly connected component). Both are shown to fail on a small package that breaks them:
a check that cannot fail proves nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import grimp
import pytest

PROJECT = Path(__file__).resolve().parents[2]
ROOTS = ("oracle_server", "oracle_indexer")


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every import circle: the strongly connected components of more than one module (Tarjan's algorithm,
    iterative), each sorted, in sorted order, so a failure names the same modules every run."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def lint_imports(config: Path, extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    """import-linter's own command over `config`, in a fresh interpreter (its graph is built from the files
    as they are now; no cache)."""
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(extra_path), env.get("PYTHONPATH", "")) if p)
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")
    return subprocess.run([sys.executable, "-c", code, str(config)], capture_output=True, text=True, env=env,
                          cwd=config.parent, timeout=240)


def test_the_import_contracts_hold():
    result = lint_imports(PROJECT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_contracts_cover_every_layer_of_the_server():
    """The layers contract names every package of server/ that holds code, in server/__init__.py's order."""
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = next(c["layers"] for c in config["contracts"] if c["type"] == "layers")
    packages = {f"oracle_server.{p.parent.name}" for p in (PROJECT / "server").glob("*/__init__.py")}
    assert set(layers) == packages | {"oracle_indexer"}
    assert layers[-1] == "oracle_indexer"


def test_no_module_imports_itself_through_others():
    """Zero circles: a circle makes the import order matter (a name used before its module finished) and ties the
    modules in it into one that cannot be understood or tested alone. Every import counts, lazy ones and those under
    TYPE_CHECKING too (a type-only circle is one the type checker and the reader still have to follow)."""
    graph = grimp.build_graph(*ROOTS, cache_dir=None)
    assert circles(graph) == []


# -- the checks can fail ----------------------------------------------------------------------------------
def _package(root: Path, files: dict[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")


def test_an_upward_import_and_a_driver_outside_the_store_are_reported(tmp_path: Path):
    """The same kinds of contract over a small package that breaks each: a lower layer importing a higher one
    (lazily, inside a function) and a service importing sqlite3."""
    _package(tmp_path, {
        "demo/__init__.py": "",
        "demo/adapters/__init__.py": "",
        "demo/adapters/http.py": "from demo.services import search\n",
        "demo/services/__init__.py": "",
        "demo/services/search.py": """
            import sqlite3

            def run():
                from demo.adapters import http  # upward, and lazy
            """,
        "demo/store/__init__.py": "",
        "demo/store/db.py": "import sqlite3\n",
    })
    (tmp_path / "setup.toml").write_text(textwrap.dedent("""
        [tool.importlinter]
        root_packages = ["demo"]
        include_external_packages = true

        [[tool.importlinter.contracts]]
        name = "layers"
        type = "layers"
        layers = ["demo.adapters", "demo.services", "demo.store"]

        [[tool.importlinter.contracts]]
        name = "sql"
        type = "forbidden"
        source_modules = ["demo"]
        forbidden_modules = ["sqlite3"]
        allow_indirect_imports = true
        ignore_imports = ["demo.store.** -> sqlite3"]
        """), encoding="utf-8")
    result = lint_imports(tmp_path / "setup.toml", extra_path=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "demo.services.search -> demo.adapters.http" in result.stdout
    assert "demo.services.search -> sqlite3" in result.stdout
    assert "2 broken" in result.stdout


def test_a_circle_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _package(tmp_path, {
        "circled/__init__.py": "",
        "circled/a.py": "from circled import b\n",
        "circled/b.py": "def f():\n    from circled import c\n",
        "circled/c.py": "import circled.a\n",
        "circled/d.py": "from circled import a\n",
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circled", cache_dir=None)
    assert circles(graph) == [["circled.a", "circled.b", "circled.c"]]


def test_a_service_or_the_worker_naming_a_backend_is_reported(tmp_path: Path):
    """The backend contract as pyproject.toml states it, over a copy of the project's shape in which a service and
    the worker import SQLite's and PostgreSQL's modules directly (the 23 imports issue 46 found), while the one
    place that chooses (store/backends.py) and the serving layer may."""
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if "backends are chosen once" in c["name"])
    _package(tmp_path, {
        "oracle_server/__init__.py": "", "oracle_server/services/__init__.py": "",
        "oracle_server/services/lookup.py": "from oracle_indexer.store.sqlite.keyword import Filters\n",
        "oracle_indexer/__init__.py": "", "oracle_indexer/worker/__init__.py": "",
        "oracle_indexer/worker/sync.py": "def f():\n    from oracle_indexer.store.pg import revisions\n",
        "oracle_indexer/store/__init__.py": "", "oracle_indexer/store/sqlite/__init__.py": "",
        "oracle_indexer/store/sqlite/keyword.py": "Filters = 1\n",
        "oracle_indexer/store/pg/__init__.py": "", "oracle_indexer/store/pg/revisions.py": "",
        "oracle_indexer/store/backends.py": "from oracle_indexer.store.sqlite import keyword\n",
        "oracle_indexer/serving/__init__.py": "",
        "oracle_indexer/serving/team.py": "from oracle_indexer.store.pg import revisions\n",
    })
    lines = ["[tool.importlinter]", 'root_packages = ["oracle_server", "oracle_indexer"]', "",
             "[[tool.importlinter.contracts]]"]
    lines += [f"{key} = {value!r}".replace("'", '"') if isinstance(value, str) else f"{key} = {str(value).lower()}"
              if isinstance(value, bool) else f"{key} = {value!r}".replace("'", '"') for key, value in contract.items()]
    (tmp_path / "setup.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = lint_imports(tmp_path / "setup.toml", extra_path=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "oracle_server.services.lookup -> oracle_indexer.store.sqlite.keyword" in result.stdout
    assert "oracle_indexer.worker.sync -> oracle_indexer.store.pg.revisions" in result.stdout
    assert "serving" not in result.stdout.split("Broken contracts")[-1] and "backends ->" not in result.stdout
