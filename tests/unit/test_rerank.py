"""The optional reranker ([rerank] in oracle.toml, indexer/models/rerank.py): configuration, the blend, a real ONNX
cross-encoder graph run by onnxruntime, and a search reordered by it.

No package ships a cross-encoder's weights without PyTorch or a download (benchmarks/HISTORY.md), so the model
here is built by the test: a real ONNX graph with the inputs and output a BERT cross-encoder has, scoring a
(question, passage) pair by how often the passage holds the word "zebra". It is a stand-in for weights we
cannot obtain, not for our code: the tokenizer (MiniLM's, shipped in indexer/models/minilm/), onnxruntime and the
search path are the real ones, and the order the model must produce is known exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from oracle_indexer.config import ConfigError, Settings
from oracle_indexer.models.embed import MINILM_TOKENIZER
from oracle_indexer.models.rerank import CrossEncoder, RerankPolicy, RerankSpec, RerankUnavailable, pair_logits
from oracle_server.registry.text import search_text
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.capabilities.search.pipeline import search

WORD = "zebra"


def counting_model(folder: Path, outputs: int = 1, with_mask: bool = True) -> Path:
    """model.onnx + tokenizer.json: logit = occurrences of WORD's token in the passage (type id 1) segment;
    `outputs` 2 gives [n, 2] class logits (0, count), 0 gives [n]."""
    import onnx
    from onnx import TensorProto, helper

    vocab = json.loads(MINILM_TOKENIZER.read_text("utf-8"))["model"]["vocab"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(MINILM_TOKENIZER.read_text("utf-8"), "utf-8")
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["n", "t"])
    types = helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["n", "t"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["n", "t"])
    shape = {0: ["n"], 1: ["n", 1], 2: ["n", 2]}[outputs]
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, shape)
    nodes = [
        helper.make_node("Constant", [], ["word"], value=helper.make_tensor("w", TensorProto.INT64, [], [vocab[WORD]])),
        helper.make_node("Equal", ["input_ids", "word"], ["is_word"]),
        helper.make_node("Cast", ["is_word"], ["is_word_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["passage"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["is_word_f", "passage"], ["hits"]),
        helper.make_node("Constant", [], ["axis"], value=helper.make_tensor("a", TensorProto.INT64, [1], [1])),
        helper.make_node("ReduceSum", ["hits", "axis"], ["count"], keepdims=1),
    ]
    if outputs == 0:
        nodes.append(helper.make_node("Squeeze", ["count", "axis"], ["logits"]))
    elif outputs == 1:
        nodes.append(helper.make_node("Identity", ["count"], ["logits"]))
    else:
        nodes += [helper.make_node("Sub", ["count", "count"], ["zero"]),
                  helper.make_node("Concat", ["zero", "count"], ["logits"], axis=1)]
    inputs = [ids, types] + ([mask] if with_mask else [])
    graph = helper.make_graph(nodes, "count_word", inputs, [logits])
    if with_mask:  # declared as a BERT cross-encoder declares it; the count does not need it
        graph.node.append(helper.make_node("Identity", ["attention_mask"], ["unused"]))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    return folder


# -- configuration --------------------------------------------------------------------------------------------
def test_policy_parse_checks_every_key() -> None:
    assert RerankPolicy.parse({}, "oracle.toml") == RerankPolicy(None, 20, 0.5)
    assert RerankPolicy.parse({"model": " m ", "top": 5, "weight": 1}, "x") == RerankPolicy("m", 5, 1.0)
    for table, message in (({"modle": "m"}, "unknown key 'modle'"), ({"model": ""}, "model must be a folder"),
                           ({"top": 1}, "top must be a whole number from 2 to 100"), ({"top": True}, "top must"),
                           ({"weight": 0}, "weight must be a number above 0"), ({"weight": "1"}, "weight must")):
        with pytest.raises(ValueError, match=message):
            RerankPolicy.parse(table, "x")
    with pytest.raises(ValueError, match="must be a table"):
        RerankPolicy.parse("models/r", "x")


def test_oracle_toml_and_the_environment_choose_the_reranker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORACLE_RERANK_MODEL", raising=False)
    root = tmp_path / "notes"
    root.mkdir()
    assert Settings.from_env(root=root, data_dir=tmp_path / "d").rerank is None  # off by default
    (root / "oracle.toml").write_text('[rerank]\nmodel = "models/ce"\ntop = 8\nweight = 0.7\n')
    assert Settings.from_env(root=root, data_dir=tmp_path / "d").rerank == RerankSpec(root / "models" / "ce", 8, 0.7)
    monkeypatch.setenv("ORACLE_RERANK_MODEL", "off")  # the environment turns a configured one off
    assert Settings.from_env(root=root, data_dir=tmp_path / "d").rerank is None
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ORACLE_RERANK_MODEL", "elsewhere")  # a relative folder: from the working directory
    assert Settings.from_env(root=root, data_dir=tmp_path / "d").rerank.folder == tmp_path / "elsewhere"
    (root / "oracle.toml").write_text('[rerank]\ntop = 500\n')
    with pytest.raises(ConfigError, match=r"oracle.toml.*top must be a whole number"):
        Settings.from_env(root=root, data_dir=tmp_path / "d")


# -- the blend (pure) -----------------------------------------------------------------------------------------
def test_blend_keeps_the_page_sorted_and_within_the_fused_range() -> None:
    fused, model = [0.9, 0.8, 0.5, 0.4], [0.0, 3.0, 1.0, 3.0]
    order = scoring.blend_rerank(fused, model, 1.0)
    assert [i for i, _ in order] == [1, 3, 2, 0]  # the model's order; its tie (1, 3) keeps the fused order
    assert [s for _, s in order] == [0.9, 0.9, 0.566667, 0.4]
    half = scoring.blend_rerank(fused, model, 0.5)
    assert [i for i, _ in half] == [1, 0, 3, 2]
    scores = [s for _, s in half]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 0.4 and max(scores) <= 0.9
    assert scoring.blend_rerank([0.7, 0.7], [1.0, 1.0], 0.5) == [(0, 0.7), (1, 0.7)]  # nothing to tell apart
    assert scoring.blend_rerank([], [], 0.5) == []


@pytest.mark.parametrize("shape", [(3,), (3, 1), (3, 2)])
def test_pair_logits_reads_each_output_shape(shape) -> None:
    out = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    expected = {(3,): [0, 1, 2], (3, 1): [0, 1, 2], (3, 2): [1, 1, 1]}[shape]
    assert pair_logits(out, 3) == expected
    with pytest.raises(RerankUnavailable, match=r"shape \[3, 3\]"):
        pair_logits(np.zeros((3, 3)), 3)


# -- the model --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("outputs", [0, 1, 2])
def test_a_cross_encoder_folder_scores_pairs(tmp_path: Path, outputs: int) -> None:
    encoder = CrossEncoder(RerankSpec(counting_model(tmp_path / "ce", outputs)))
    passages = ["no such animal here", f"a {WORD}", f"{WORD} and {WORD} " * 3, ""] * 5  # 20: more than a batch
    assert encoder.score(f"where is the {WORD}?", passages) == [0.0, 1.0, 6.0, 0.0] * 5  # the question's own is not counted
    assert encoder.model_id.startswith("ce-") and len(encoder.model_id) == 15


def test_a_reranker_folder_that_cannot_work_says_why(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(RerankUnavailable, match="needs model.onnx and tokenizer.json; model.onnx is missing"):
        CrossEncoder(RerankSpec(tmp_path / "empty")).score("q", ["p"])
    bad = counting_model(tmp_path / "nomask", with_mask=False)
    with pytest.raises(RerankUnavailable, match=r"lacks the inputs \['attention_mask'\]"):
        CrossEncoder(RerankSpec(bad)).score("q", ["p"])
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "model.onnx").write_bytes(b"not a model")
    (tmp_path / "garbage" / "tokenizer.json").write_text(MINILM_TOKENIZER.read_text("utf-8"))
    with pytest.raises(RerankUnavailable, match="could not load the reranker"):
        CrossEncoder(RerankSpec(tmp_path / "garbage")).score("q", ["p"])


# -- a search reordered by it ----------------------------------------------------------------------------------
NOTES = {
    "learnings/stripes-guide.md": "# Stripes on animals\n\nStripes on animals: why stripes, which animals have stripes."
                                  "\n\nStripes confuse flies; animals with stripes stay cooler.\n",
    "learnings/savanna.md": f"# Savanna notes\n\nThe {WORD} grazes on the savanna. A {WORD} herd moves at dawn; "
                            f"every {WORD} has its own pattern of stripes.\n",
    "learnings/flags.md": "# Flags\n\nSome flags have stripes: the animals on flags are lions, not horses.\n",
    "learnings/rice.md": "# Cooking rice\n\nRinse the rice three times and simmer it with the lid on.\n",
}


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    counting_model(root / "models" / "ce")
    return root


def ranked(oracle, query: str = "animals with stripes", **kw) -> list[str]:
    return [h.source_file for h in search(oracle, SearchRequest(query=query, **kw)).hits]


@pytest.mark.parametrize("mode", ["fts", "hybrid"])
def test_the_reranker_reorders_the_first_results(base: Path, tmp_path: Path, make_oracle, mode: str) -> None:
    plain = make_oracle(base, tmp_path / "plain")
    plain.indexer.sync()
    before = search(plain, SearchRequest(query="animals with stripes", mode=mode))
    assert before.meta.reranked_by is None and before.hits[0].source_file != "learnings/savanna.md"
    assert all(h.breakdown.rerank_score is None for h in before.hits)

    (base / "oracle.toml").write_text('[rerank]\nmodel = "models/ce"\nweight = 1.0\n')
    oracle = make_oracle(base, tmp_path / "data")
    oracle.indexer.sync()
    after = search(oracle, SearchRequest(query="animals with stripes", mode=mode))
    assert after.meta.reranked_by and after.meta.reranked_by.startswith("ce-")
    assert after.hits[0].source_file == "learnings/savanna.md"  # the only passage holding the model's word
    assert after.hits[0].breakdown.rerank_score == 3.0
    assert f"({mode}, reranked by {after.meta.reranked_by}, " in search_text(None, after).splitlines()[0]  # MCP text, CLI
    assert {h.source_file for h in after.hits} == {h.source_file for h in before.hits}  # reordered, not refiltered
    scores = [h.score for h in after.hits]
    assert scores == sorted(scores, reverse=True) and max(scores) == max(h.score for h in before.hits)
    # pages stay consistent: the reordering does not depend on the offset
    full = ranked(oracle, mode=mode, limit=4)
    assert ranked(oracle, mode=mode, limit=2) + ranked(oracle, mode=mode, limit=2, offset=2) == full
    first = search(oracle, SearchRequest(query="animals with stripes", mode=mode)).model_dump(exclude={"meta": {"took_ms"}})
    again = search(oracle, SearchRequest(query="animals with stripes", mode=mode)).model_dump(exclude={"meta": {"took_ms"}})
    assert first == again  # deterministic


def test_a_broken_reranker_keeps_the_fused_order_with_a_warning(base: Path, tmp_path: Path, make_oracle) -> None:
    plain = make_oracle(base, tmp_path / "plain")
    plain.indexer.sync()
    (base / "oracle.toml").write_text('[rerank]\nmodel = "models/missing"\n')
    oracle = make_oracle(base, tmp_path / "data")
    oracle.indexer.sync()
    result = search(oracle, SearchRequest(query="animals with stripes"))
    assert result.meta.reranked_by is None
    assert any("reranker unavailable, results keep the fused order" in w and "models/missing" in w
               for w in result.meta.warnings)
    assert ranked(oracle) == ranked(plain)
