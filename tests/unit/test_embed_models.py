"""The embedding model is configurable (indexer/models/embed.py): the built-in MiniLM or a user's model folder (an ONNX
file and its tokenizer.json), with the prefixes the model expects; a change of model re-embeds the index while
keyword search keeps answering (indexer/worker/sync.py adopt_model). Real models throughout: the folder holds MiniLM's
own files, so its vectors can be checked against the built-in model's."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from oracle_indexer.config import Settings
from oracle_indexer.models.embed import MINILM, MODEL_ID, Embedder, EmbeddingUnavailable, model_files, model_id, model_spec
from oracle_indexer.rootconfig import ConfigError
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search.pipeline import run_search


def minilm_folder(tmp_path: Path, name: str = "my-model") -> Path:
    """A user's model folder: MiniLM's ONNX file and tokenizer copied side by side."""
    model, tokenizer = model_files()
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(model, folder / "model.onnx")
    shutil.copy(tokenizer, folder / "tokenizer.json")
    return folder


def test_a_model_folder_runs_its_onnx_file_with_its_tokenizer(tmp_path: Path) -> None:
    folder = minilm_folder(tmp_path)
    mine = Embedder(model_spec(str(folder)))
    texts = ["a note about postgres", "การทดสอบ", "word " * 400, ""]
    packaged = Embedder(MINILM, rewrite=False).embed(texts)
    assert np.abs(mine.embed(texts) - packaged).max() < 1e-5
    assert mine.dimensions == 384 and not mine.multilingual and mine.graph == f"model folder {folder}"
    assert mine.model_id.startswith("folder-") and mine.model_id == model_id(model_spec(str(folder)))
    # another file in the folder is another model: its vectors are embedded again
    (folder / "tokenizer.json").write_text((folder / "tokenizer.json").read_text() + "\n")
    assert model_id(model_spec(str(folder))) != mine.model_id


def test_queries_and_passages_take_the_configured_prefixes(tmp_path: Path) -> None:
    folder = minilm_folder(tmp_path)
    plain = Embedder(model_spec(str(folder)))
    prefixed = Embedder(model_spec(str(folder), query_prefix="query: ", passage_prefix="passage: "))
    text = "how do we quote fts5 terms"
    assert np.abs(prefixed.embed_query(text) - plain.embed(["query: " + text])[0]).max() < 1e-5
    assert np.abs(prefixed.embed([text])[0] - plain.embed(["passage: " + text])[0]).max() < 1e-5
    assert np.abs(plain.embed_query(text) - plain.embed([text])[0]).max() < 1e-6  # no prefix: the same vector
    # prefixes change the vectors, so they enter the id
    assert prefixed.model_id != plain.model_id and prefixed.model_id.startswith(plain.model_id + "+")
    assert model_id(MINILM) == MODEL_ID


def test_a_folder_without_its_files_says_what_it_needs(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmbeddingUnavailable, match="model.onnx and tokenizer.json"):
        Embedder(model_spec(str(tmp_path / "empty"))).embed(["x"])


def test_oracle_toml_and_the_environment_choose_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORACLE_EMBEDDING_MODEL", raising=False)
    root = tmp_path / "notes"
    root.mkdir()
    assert Settings.from_env(root=root, data_dir=tmp_path / "d").embedding == MINILM  # the default
    (root / "oracle.toml").write_text('[embedding]\nmodel = "models/mine"\nquery_prefix = "query: "\n')
    spec = Settings.from_env(root=root, data_dir=tmp_path / "d").embedding
    assert spec.folder == root / "models" / "mine" and spec.query_prefix == "query: " and spec.passage_prefix == ""
    monkeypatch.setenv("ORACLE_EMBEDDING_MODEL", "minilm")  # the environment wins
    assert Settings.from_env(root=root, data_dir=tmp_path / "d").embedding.name == "minilm"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ORACLE_EMBEDDING_MODEL", "elsewhere")  # a relative folder: from the working directory
    with pytest.raises(ConfigError, match="unknown model 'elsewhere'"):  # a name that is no folder: a typo
        Settings.from_env(root=root, data_dir=tmp_path / "d")
    (tmp_path / "elsewhere").mkdir()
    assert Settings.from_env(root=root, data_dir=tmp_path / "d").embedding.folder == tmp_path / "elsewhere"
    (root / "oracle.toml").write_text('[embedding]\nmodle = "minilm"\n')
    with pytest.raises(ConfigError, match="unknown key 'modle' in \\[embedding\\]"):
        Settings.from_env(root=root, data_dir=tmp_path / "d")
    (root / "oracle.toml").write_text('[embedding]\nmodel = 3\n')
    with pytest.raises(ConfigError, match="model must be a string"):
        Settings.from_env(root=root, data_dir=tmp_path / "d")


# -- a change of model re-embeds; keyword search answers meanwhile ------------------------------------------
NOTES = {
    "learnings/pool.md": "# Size the connection pool\n\nPostgres pools must stay below max_connections.\n",
    "learnings/debounce.md": "# Debounce autocomplete\n\nWait until the user stops typing before asking the server.\n",
    "learnings/rice.md": "# Cooking rice\n\nRinse the rice three times and simmer it with the lid on.\n",
}


def write_root(root: Path) -> None:
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def search(oracle, query: str, mode: str = "hybrid"):
    return run_search(oracle, SearchRequest(query=query, limit=3, mode=mode))


def test_changing_the_model_re_embeds_and_keyword_search_answers_meanwhile(tmp_path: Path, make_oracle) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    write_root(root)
    first = make_oracle(root, data)
    report = first.indexer.sync()
    assert report.embedded == 3 and first.store.get_meta("embedding_model") == MODEL_ID
    first.close()

    folder = minilm_folder(tmp_path)
    spec = model_spec(str(folder), query_prefix="query: ", passage_prefix="passage: ")
    new_id = model_id(spec)
    (root / "oracle.toml").write_text(
        f'[embedding]\nmodel = "{folder}"\nquery_prefix = "query: "\npassage_prefix = "passage: "\n')
    second = make_oracle(root, data)
    assert second.embedder.model_id == new_id
    # before any write: the index still holds MiniLM's vectors, so the vector leg stays out and keywords answer
    result = search(second, "connection pool")
    assert result.hits and result.hits[0].source_file == "learnings/pool.md" and result.meta.mode == "fts"
    assert any("re-embeds" in w for w in result.meta.warnings), result.meta.warnings
    # the keyword half of a sync re-keys every section: vectors pending, the vector store empty, keywords answer
    second.indexer.sync(vectors=False)
    assert second.store.get_meta("embedding_model") == new_id and second.indexer.model_change
    assert second.store.pending_count() == 3 and second.vectors.count() == 0
    assert search(second, "connection pool").hits[0].source_file == "learnings/pool.md"
    # the backlog embeds them with the new model ("passage: " + text); questions take "query: "
    report = second.indexer.sync()
    assert report.embedded == 3 and second.store.pending_count() == 0 and second.vectors.count() == 3
    ids = [r[0] for r in second.store.fetch("SELECT id FROM documents WHERE file = 'learnings/pool.md'")]
    stored = second.store.embed_texts(ids)[ids[0]]
    top = second.vectors.query(Embedder(MINILM, rewrite=False).embed(["passage: " + stored])[0], 1)[0]
    assert top.id == ids[0] and top.similarity > 0.999
    result = search(second, "how big may the postgres pool get", mode="vector")
    assert result.hits[0].source_file == "learnings/pool.md" and result.meta.semantic_model == new_id
    second.close()

    # back to MiniLM: its vectors come from the embedding cache, nothing is embedded again
    (root / "oracle.toml").unlink()
    third = make_oracle(root, data)
    report = third.indexer.sync()
    assert report.embedded == 0 and third.store.pending_count() == 0 and third.vectors.count() == 3
    assert third.store.get_meta("embedding_model") == MODEL_ID
    assert search(third, "connection pool", mode="vector").hits[0].source_file == "learnings/pool.md"


def test_an_index_from_before_the_setting_counts_as_minilms(tmp_path: Path, make_oracle) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    write_root(root)
    old = make_oracle(root, data)
    old.indexer.sync()
    with old.store.transaction() as conn:  # as an index built before the model was recorded
        conn.execute("DELETE FROM meta WHERE key = 'embedding_model'")
    old.close()
    again = make_oracle(root, data)
    assert search(again, "connection pool", mode="vector").hits  # no re-embed needed to search
    report = again.indexer.sync()
    assert report.embedded == 0 and again.store.pending_count() == 0 and again.indexer.model_change is None
    assert again.store.get_meta("embedding_model") == MODEL_ID


def test_a_missing_model_folder_leaves_the_index_as_it_is(tmp_path: Path, make_oracle) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    write_root(root)
    built = make_oracle(root, data)
    built.indexer.sync()
    built.close()
    gone = make_oracle(root, data, embedding_model=str(tmp_path / "no-such-folder"))
    report = gone.indexer.sync()
    assert gone.store.get_meta("embedding_model") == MODEL_ID and gone.vectors.count() == 3
    assert report.embedded == 0 and gone.store.pending_count() == 0
    result = search(gone, "connection pool")
    assert result.hits[0].source_file == "learnings/pool.md"
    assert any("vector search unavailable" in w for w in result.meta.warnings)
