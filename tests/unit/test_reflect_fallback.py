"""reflect on a base without principles or learnings (issue 48 item 5): it reflects on the notes there are, and when
there is nothing to reflect on says what is true (not "run oracle index" with 648 notes indexed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _corpus import open_oracle
from oracle_server.services.capabilities.browse import reflect
from oracle_server.services.vocabulary.errors import ServiceError
from oracle_server.services.vocabulary.models import ReflectRequest


def test_a_base_of_generic_notes_reflects_on_them(tmp_path: Path) -> None:
    root = tmp_path / "rfcs"
    (root / "text").mkdir(parents=True)
    (root / "text/0001-x.md").write_text("# Summary\n\nCallers can be tracked through panics.\n", encoding="utf-8")
    (root / "oracle.toml").write_text('[index]\ndefault_type = "note"\n', encoding="utf-8")
    oracle = open_oracle(root, tmp_path / "data")
    try:
        oracle.indexer.sync(vectors=False)
        assert reflect(oracle, ReflectRequest()).source_file == "text/0001-x.md"
        with pytest.raises(ServiceError, match=r"none of the 1 indexed notes \(1 note\) is a principle"):
            reflect(oracle, ReflectRequest(type="principle"))
    finally:
        oracle.close()


def test_an_empty_index_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    oracle = open_oracle(tmp_path / "empty", tmp_path / "data")
    try:
        with pytest.raises(ServiceError, match="the index is empty"):
            reflect(oracle, ReflectRequest())
    finally:
        oracle.close()
