"""The rewritten embedding graph (indexer/model_graph.py): the same vectors as the packaged model, on real
texts, and the packaged model whenever the rewrite cannot apply."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _corpus import BUNDLED
from indexer.discover import discover
from indexer.embed import Embedder, model_files
from indexer.model_graph import SOURCE_SHA256, GraphMismatch, derive, session_model
from indexer.parse import compose_embed_text, parse_markdown
from indexer.rootconfig import Layout

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
    rewritten, packaged = Embedder(), Embedder(rewrite=False)
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
        "from indexer.embed import Embedder\n"
        "e = Embedder(workers=1); v = e.embed(['a note about postgres'])[0]\n"
        "print(json.dumps({'graph': e.graph, 'vector': v.tolist()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "`onnx` package is not installed" in out["graph"]
    here = Embedder(rewrite=False).embed(["a note about postgres"])[0]
    assert np.abs(np.array(out["vector"], dtype=np.float32) - here).max() < 1e-6
