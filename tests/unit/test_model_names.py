"""Issue 40 (also c): a mistyped model name was read as a folder path and failed later as a missing model.onnx.
Now `ORACLE_EMBEDDING_MODEL=multilingal` or `[embedding] model = "minlm"` stops at once with "unknown model NAME;
known: ...", while `minilm` and real folders (relative or absolute) keep working."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle_indexer.config import ConfigError, Settings
from oracle_indexer.models.embed import unknown_model
from oracle_indexer.rootconfig import load_layout


def test_the_rule(tmp_path: Path) -> None:
    (tmp_path / "models" / "e5").mkdir(parents=True)
    (tmp_path / "e5").mkdir()
    assert unknown_model("minilm", tmp_path) is None
    for folder in ("models/e5", "./anything", "~/models/x", "/abs/path", "e5"):  # paths, or a folder that exists
        assert unknown_model(folder, tmp_path) is None
    said = unknown_model("multilingal", tmp_path)
    assert said is not None and said.startswith("unknown model 'multilingal'; known: minilm")
    assert "ORACLE_MULTILINGUAL" in said
    assert "did you mean minilm?" in (unknown_model("minlm", tmp_path) or "")


def test_the_variable_and_the_config_key_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ORACLE_EMBEDDING_MODEL", "multilingal")
    with pytest.raises(ConfigError, match="ORACLE_EMBEDDING_MODEL: unknown model 'multilingal'; known: minilm"):
        Settings.from_env(root=tmp_path, data_dir=tmp_path / "d")
    monkeypatch.setenv("ORACLE_EMBEDDING_MODEL", "minilm")
    assert Settings.from_env(root=tmp_path, data_dir=tmp_path / "d").embedding.name == "minilm"
    monkeypatch.delenv("ORACLE_EMBEDDING_MODEL")
    (tmp_path / "oracle.toml").write_text('[embedding]\nmodel = "minlm"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"oracle.toml:2: unknown model 'minlm'; known: minilm.*did you mean minilm"):
        load_layout(tmp_path, env={})
    (tmp_path / "models" / "mine").mkdir(parents=True)
    (tmp_path / "oracle.toml").write_text('[embedding]\nmodel = "models/mine"\n', encoding="utf-8")
    assert load_layout(tmp_path, env={}).embedding_model == "models/mine"
