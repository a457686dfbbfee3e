"""indexer/database_choice.py and `oracle database`: a folder's oracle.toml never chooses where its notes go
(issue 45 item 2); the user allows a named database once per root and URL, and every surface names the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle_indexer.database_choice import where
from oracle_server.cli.commands import main
from oracle_server.mcp.instructions import compose
from oracle_server.services.support.guide import Health, Profile

NAMED = "postgresql://team:s3cret@db.example:5433/memory"


@pytest.mark.parametrize(("url", "shown"), [
    (NAMED, "db.example:5433/memory"), ("postgresql:///oracle?host=/tmp/pg", "localhost/oracle?host=/tmp/pg"),
    ("postgres://u@h", "h/(default database)"), ("postgresql://[::1/x", "an unreadable URL")])
def test_where_names_the_host_never_the_password(url: str, shown: str) -> None:
    assert where(url) == shown


def test_oracle_database_status_then_allow(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("ORACLE_DATABASE_URL", raising=False)
    root = tmp_path / "cloned"
    (root / "learnings").mkdir(parents=True)
    (root / "oracle.toml").write_text(f'[database]\nurl = "{NAMED}"\n', encoding="utf-8")
    where_args = ["--root", str(root), "--data-dir", str(tmp_path / "data")]
    assert main([*where_args, "database", "status"]) == 0
    out = capsys.readouterr().out
    assert "embedded store" in out and "db.example:5433/memory" in out and "oracle database allow" in out
    assert "s3cret" not in out
    assert main([*where_args, "database", "allow"]) == 0
    assert "now go to the team database db.example:5433/memory" in capsys.readouterr().out
    assert main([*where_args, "database", "status"]) == 0
    assert "team database db.example:5433/memory (from oracle.toml (allowed))" in capsys.readouterr().out


def test_allow_without_a_named_database_says_how(tmp_path: Path, capsys) -> None:
    (tmp_path / "root").mkdir()
    assert main(["--root", str(tmp_path / "root"), "--data-dir", str(tmp_path / "d"), "database", "allow"]) == 2
    assert "names no [database] url" in capsys.readouterr().err


def test_the_mcp_instructions_name_the_team_database() -> None:
    state = Health(notes=1, types={"learning": 1}, sections=1, coverage=1.0, vector_down=None, indexing=False,
                   last_indexed=None, database="team database db.example:5433/memory (from ORACLE_DATABASE_URL)")
    text = compose("base", state, Profile(1, 1, {}, {}, {}, {}))
    assert "shared through the team database db.example:5433/memory" in text
    alone = compose("base", Health(notes=1, types={}, sections=1, coverage=1.0, vector_down=None, indexing=False,
                                   last_indexed=None), Profile(1, 1, {}, {}, {}, {}))
    assert "team database" not in alone
