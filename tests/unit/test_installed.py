"""The command a message gives for a missing extra names the installer Oracle came with (issue 40: the PostgreSQL
message said `pip install 'oracle-memory[postgres]'` to a `uv tool install` user, whose tool has no pip)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

from oracle_indexer.installed import DISTRIBUTION, EXTRAS, how_installed, install_extra
from oracle_indexer.locate import PROJECT


def test_a_uv_tool_reinstalls_with_the_extra_from_where_it_came(tmp_path: Path) -> None:
    by_name, by_folder = tmp_path / "uv-name", tmp_path / "uv-folder"
    by_name.mkdir(), by_folder.mkdir()
    # what uv writes into a tool's environment (uv tool install oracle-memory / uv tool install .)
    (by_name / "uv-receipt.toml").write_text('[tool]\nrequirements = [{ name = "oracle-memory" }]\n')
    (by_folder / "uv-receipt.toml").write_text(
        '[tool]\nrequirements = [{ name = "oracle-memory", directory = "/home/a/src/oracle" }]\n'
        'entrypoints = [{ name = "oracle", install-path = "/home/a/.local/bin/oracle" }]\n')
    assert how_installed(str(by_name)) == "uv-tool"
    assert install_extra("postgres", str(by_name)) == "uv tool install 'oracle-memory[postgres]'"
    assert install_extra("postgres", str(by_folder)) == "uv tool install '/home/a/src/oracle[postgres]'"


def test_pipx_injects_the_extras_packages(tmp_path: Path) -> None:
    venv = tmp_path / "oracle-memory"
    venv.mkdir()
    (venv / "pipx_metadata.json").write_text(json.dumps({"main_package": {"package": "oracle-memory"}}))
    assert how_installed(str(venv)) == "pipx"
    assert install_extra("postgres", str(venv)) == "pipx inject oracle-memory 'psycopg[binary]>=3.2,<4' 'psycopg-pool>=3.2,<4'"


def test_a_checkout_a_venv_and_a_bare_python(tmp_path: Path) -> None:
    assert install_extra("postgres", str(Path(PROJECT) / ".venv")) == "make install"
    venv = tmp_path / "env"
    venv.mkdir()
    if sys.prefix != sys.base_prefix:  # this test runs in a venv: another venv is one too
        assert install_extra("postgres", str(venv)) == f"{venv}/bin/python -m pip install 'oracle-memory[postgres]'"
    assert how_installed(sys.base_prefix) == "system"
    assert install_extra("postgres", sys.base_prefix) == "python3 -m pip install --user 'oracle-memory[postgres]'"


def test_the_extras_are_pyproject_s() -> None:
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    for extra, packages in EXTRAS.items():
        assert tuple(project["optional-dependencies"][extra]) == packages
