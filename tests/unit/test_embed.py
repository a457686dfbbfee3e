"""The embedder's speed work: the rewritten graph (indexer/models/model_graph.py) gives the packaged model's vectors
on real texts and gives way to the packaged model whenever the rewrite cannot apply; batches are dealt so that
the sessions finish together (indexer/models/embed.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _corpus import BUNDLED
from oracle_indexer.notes.discover import discover
from oracle_indexer.models.embed import Embedder, balanced_shards, model_files
from oracle_indexer.models.model_graph import SOURCE_SHA256, GraphMismatch, derive, session_model
from oracle_indexer.notes.parse import compose_embed_text, parse_markdown
from oracle_indexer.rootconfig import Layout

REPO = Path(__file__).resolve().parents[2]
# Thai (the model does not read it, but it must not break it), an empty text, one past the 256-token cap,
# and very short ones, batched with long ones so that padding and the mask are exercised.
EDGE_TEXTS = ["", ".", "ok", "การทดสอบภาษาไทยในบันทึก", "word " * 600, "Title — Heading\n- [link](x.md)"]


def bundled_texts() -> list[str]:
    """What the indexer embeds for the bundled knowledge: every section's title, heading and content."""
    texts = []
    for found in discover(BUNDLED, Layout()).files:
        parsed = parse_markdown(found.path.read_text(encoding="utf-8"), found.rel, found.type)
        texts += [compose_embed_text(parsed.title, c.heading, c.content) for c in parsed.chunks]
    return list(dict.fromkeys(texts))


def test_the_rewritten_graph_gives_the_packaged_models_vectors() -> None:
    texts = bundled_texts()[::3] + EDGE_TEXTS
    assert len(texts) > 100
    rewritten, packaged = Embedder("minilm"), Embedder("minilm", rewrite=False)
    fast, slow = rewritten.embed(texts), packaged.embed(texts)
    assert rewritten.graph.startswith("rewritten graph"), rewritten.graph
    assert packaged.graph == "packaged graph"
    assert np.abs(fast - slow).max() < 1e-5
    assert (fast * slow).sum(axis=1).min() > 0.99999


def test_the_rewrite_is_checked_on_the_pinned_file_only(tmp_path: Path) -> None:
    model, _ = model_files()
    assert session_model(model)[1].startswith("rewritten graph")  # the installed file is the checked one
    copy = tmp_path / "model.onnx"
    copy.write_bytes(model.read_bytes() + b"\0")  # any other bytes: the file is used as it is
    source, note = session_model(copy, checked_sha256=SOURCE_SHA256)
    assert source == str(copy) and "not the file the rewrite was checked on" in note


def test_a_graph_without_the_patterns_falls_back_to_the_packaged_file(tmp_path: Path) -> None:
    import hashlib

    model, _ = model_files()
    rewritten = tmp_path / "rewritten.onnx"
    rewritten.write_bytes(derive(model.read_bytes()))
    with pytest.raises(GraphMismatch):  # no attention block left to rewrite
        derive(rewritten.read_bytes())
    digest = hashlib.sha256(rewritten.read_bytes()).hexdigest()
    source, note = session_model(rewritten, checked_sha256=digest)
    assert source == str(rewritten) and "rewrite failed: GraphMismatch" in note
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    source, note = session_model(broken, checked_sha256=hashlib.sha256(b"not a model").hexdigest())
    assert source == str(broken) and "rewrite failed" in note


def test_without_the_onnx_package_the_packaged_graph_runs() -> None:
    """A real process in which `import onnx` fails: the model still loads and gives the same vectors."""
    code = (
        "import sys, json; sys.modules['onnx'] = None\n"
        "from oracle_indexer.models.embed import Embedder\n"
        "e = Embedder('minilm', workers=1); v = e.embed(['a note about postgres'])[0]\n"
        "print(json.dumps({'graph': e.graph, 'vector': v.tolist()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "`onnx` package is not installed" in out["graph"]
    here = Embedder("minilm", rewrite=False).embed(["a note about postgres"])[0]
    assert np.abs(np.array(out["vector"], dtype=np.float32) - here).max() < 1e-6


def test_batches_are_dealt_longest_first_to_the_least_loaded_session() -> None:
    batches = [[i] for i in range(12)]
    costs = [8 * width for width in (20, 40, 60, 80, 100, 120, 140, 160, 180, 200, 230, 256)]  # sorted by length
    shards = balanced_shards(batches, costs, 2)
    assert sorted(b for shard in shards for b in shard) == batches  # each batch once
    loads = [sum(costs[b[0]] for b in shard) for shard in shards]
    round_robin = [sum(costs[0::2]), sum(costs[1::2])]
    assert abs(loads[0] - loads[1]) <= min(costs) < abs(round_robin[0] - round_robin[1])
    assert balanced_shards(batches[:1], costs[:1], 2) == [[[0]], []]


def test_the_question_session_runs_on_two_threads_and_gives_the_same_vectors() -> None:
    """The first session (every question's) spreads its ops over QUERY_THREADS threads that sleep between ops;
    the indexer's others stay single-threaded. Each output is computed by one thread either way, so the vectors
    are the same bit for bit, questions and batches alike."""
    one, two = Embedder("minilm", workers=2, query_threads=1), Embedder("minilm", workers=2, query_threads=2)
    two.warm()
    options = [s.get_session_options() for s in two._sessions]
    assert [o.intra_op_num_threads for o in options] == [2, 1]
    assert options[0].get_session_config_entry("session.intra_op.allow_spinning") == "0"
    one.warm()
    assert [s.get_session_options().intra_op_num_threads for s in one._sessions] == [1, 1]
    questions = ["is it safe to amend a commit when several agents share the repo?", "quokka", "ก", "",
                 "how do I hold off until the person stops typing " * 20]
    for question in questions:
        assert np.array_equal(one.embed_query(question), two.embed_query(question)), question
        # hybrid search embeds beside its keyword leg on the single-threaded session: the same vector
        assert np.array_equal(two.embed_query(question, beside=True), two.embed_query(question)), question
    texts = bundled_texts()[::7] + EDGE_TEXTS  # _encode: embed() is memoised per model in tests (conftest.py)
    assert np.array_equal(one._encode(texts, ""), two._encode(texts, ""))


def test_many_batch_calls_run_on_the_single_threaded_sessions(monkeypatch) -> None:
    """Indexing's calls of many batches keep off the two-threaded question session (three threads on two cores
    made indexing 1.2-1.3x slower): as many workers as sessions, on the single-threaded ones, two runs at once on
    one session if need be. A call of one batch (a question, a small note) runs on the question session."""
    two = Embedder("minilm", workers=2, query_threads=2)
    two.warm()
    question, single = two._sessions
    assert two._bulk_sessions() == [single, single]
    used: list = []
    run_batches = two._run_batches

    def recording(session, batches, encodings, out):
        used.append(session)
        return run_batches(session, batches, encodings, out)

    monkeypatch.setattr(two, "_run_batches", recording)
    texts = bundled_texts()[:40]
    vectors = two._encode(texts, "")
    assert len(used) == 2 and all(s is single for s in used)
    used.clear()
    two._encode(texts[:3], "")
    assert used == [question]
    used.clear()
    two.embed_query("quokka", beside=True)  # hybrid search's question, beside its keyword leg
    assert used == [single]
    one = Embedder("minilm", workers=2, query_threads=1)
    one.warm()
    assert np.array_equal(vectors, one._encode(texts, ""))
    assert one._bulk_sessions() == one._sessions
