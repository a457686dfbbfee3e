"""An optional reranker: a cross-encoder the user supplies as a model folder, off by default.

A cross-encoder reads the question and a passage together and scores the pair, which ranks better than
comparing two separately made vectors but costs one model run per candidate. No package on PyPI, npm or
Debian ships such weights without PyTorch or a download at run time (benchmarks/HISTORY.md, "Choosing the
embedding model"), so none is built in: a user with one on disk (say ms-marco-MiniLM-L-6-v2 or
bge-reranker-base exported to ONNX) points `[rerank] model` in oracle.toml (or ORACLE_RERANK_MODEL) at a
folder holding `model.onnx` + `tokenizer.json`. The search then asks it about its first `top` results and
blends its order with the fused one (`weight`: the reranker's share; server/services/capabilities/search/scoring.py
`blend_rerank`). Nothing about the index changes: turning it on or off needs no re-index.

The graph takes input_ids and attention_mask (token_type_ids if it declares them) for the pair and returns one
logit per pair ([n], [n, 1]), or two class logits ([n, 2]: the second minus the first is used).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenizers import Tokenizer

DEFAULT_TOP = 20  # results the reranker reads: one model run per result is what it costs
MAX_TOP = 100
DEFAULT_WEIGHT = 0.5  # the reranker's share of the blended order; the fused order keeps the rest
MAX_TOKENS = 512  # question + passage, as cross-encoders of the BERT family read them
BATCH = 16
RERANK_KEYS = ("model", "top", "weight")

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # as indexer/models/embed.py: nothing written outside the data dir


class RerankUnavailable(RuntimeError):
    """The reranker's files are missing or its runtime failed; the search keeps the fused order."""


@dataclass(frozen=True)
class RerankPolicy:
    """`[rerank]` of oracle.toml: the model folder (None: no reranker), how many results, its share."""

    model: str | None = None
    top: int = DEFAULT_TOP
    weight: float = DEFAULT_WEIGHT

    @classmethod
    def parse(cls, value: object, where: str) -> "RerankPolicy":
        """From `[rerank]`: {"model": "folder", "top": N, "weight": W}. ValueError names the problem."""
        if not isinstance(value, dict):
            raise ValueError(f"{where}: `rerank` must be a table ([rerank])")
        unknown = sorted(set(value) - set(RERANK_KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r} in [rerank]; known keys: {', '.join(RERANK_KEYS)}")
        model = value.get("model")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ValueError(f"{where}: [rerank] model must be a folder holding model.onnx and tokenizer.json")
        top = value.get("top", DEFAULT_TOP)
        if isinstance(top, bool) or not isinstance(top, int) or not 2 <= top <= MAX_TOP:
            raise ValueError(f"{where}: [rerank] top must be a whole number from 2 to {MAX_TOP} (results reread)")
        weight = value.get("weight", DEFAULT_WEIGHT)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight <= 1:
            raise ValueError(f"{where}: [rerank] weight must be a number above 0 and at most 1 (the reranker's"
                             " share of the order; 1: its order alone)")
        return cls(model.strip() if model else None, top, float(weight))


@dataclass(frozen=True)
class RerankSpec:
    """A configured reranker: its folder (resolved) and the policy's numbers."""

    folder: Path
    top: int = DEFAULT_TOP
    weight: float = DEFAULT_WEIGHT


def rerank_spec(model: str | None, root: Path, policy: RerankPolicy) -> RerankSpec | None:
    """The reranker to use: ORACLE_RERANK_MODEL (`model`) over the policy's folder; None when neither names one
    or the value is `off`. A relative folder is read from the knowledge root."""
    value = (model or policy.model or "").strip()
    if not value or value == "off":
        return None
    folder = Path(value).expanduser()
    return RerankSpec(folder if folder.is_absolute() else root / folder, policy.top, policy.weight)


def pair_logits(outputs, n: int) -> list[float]:  # noqa: ANN001 - a numpy array
    """One score per pair from the graph's first output: [n], [n, 1], or [n, 2] class logits (second minus
    first, which orders pairs as the second class's probability does)."""
    shape = tuple(outputs.shape)
    if shape == (n,):
        return [float(x) for x in outputs]
    if len(shape) == 2 and shape[0] == n and shape[1] in (1, 2):
        column = outputs[:, -1] - outputs[:, 0] if shape[1] == 2 else outputs[:, 0]
        return [float(x) for x in column]
    raise RerankUnavailable(f"the reranker's output has shape {list(shape)}; expected one logit per pair ([{n}],"
                            f" [{n}, 1]) or two class logits ([{n}, 2])")


class CrossEncoder:
    """Loads on first use; safe to share between threads (one session, two intra-op threads: it runs while
    the asker waits, on at most `top` pairs)."""

    def __init__(self, spec: RerankSpec) -> None:
        self.spec = spec
        self._lock = threading.Lock()
        self._session: Any = None  # an onnxruntime.InferenceSession (a package without types)
        self._tokenizer: Tokenizer | None = None
        self._inputs: tuple[str, ...] = ()
        self._id: str | None = None

    @property
    def model_id(self) -> str:
        """The folder's name and a digest of its two files (what a search's meta names)."""
        if self._id is None:
            model, tokenizer = self._files()
            digest = hashlib.sha256()
            for path in (model, tokenizer):
                with path.open("rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
            self._id = f"{self.spec.folder.name}-{digest.hexdigest()[:12]}"
        return self._id

    def _files(self) -> tuple[Path, Path]:
        model, tokenizer = self.spec.folder / "model.onnx", self.spec.folder / "tokenizer.json"
        for path in (model, tokenizer):
            if not path.is_file():
                raise RerankUnavailable(f"reranker folder {self.spec.folder} needs model.onnx and tokenizer.json;"
                                        f" {path.name} is missing ([rerank] model in oracle.toml, or"
                                        " ORACLE_RERANK_MODEL)")
        return model, tokenizer

    @property
    def loaded(self) -> bool:
        """The cross-encoder's session is open (server/services/support/loading.py)."""
        return self._session is not None

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            model, tokenizer_path = self._files()
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(tokenizer_path))
                tokenizer.enable_truncation(MAX_TOKENS, strategy="longest_first")
                pad = tokenizer.token_to_id("[PAD]")
                pad = tokenizer.token_to_id("<pad>") if pad is None else pad
                tokenizer.enable_padding(pad_id=pad or 0)
                options = ort.SessionOptions()
                options.intra_op_num_threads = min(2, os.cpu_count() or 1)
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime and tokenizers raise their own types
                raise RerankUnavailable(f"could not load the reranker in {self.spec.folder}: {exc}") from exc
            self._inputs = tuple(i.name for i in session.get_inputs())
            missing = {"input_ids", "attention_mask"} - set(self._inputs)
            if missing:
                raise RerankUnavailable(f"the reranker's graph in {self.spec.folder} lacks the inputs"
                                        f" {sorted(missing)} (it has {list(self._inputs)})")
            self._tokenizer, self._session = tokenizer, session

    def score(self, query: str, passages: list[str]) -> list[float]:
        """One relevance score per passage for this question (higher is better), in the order given."""
        self._load()
        import numpy as np

        assert self._tokenizer is not None  # _load raised otherwise
        scores: list[float] = []
        for start in range(0, len(passages), BATCH):
            batch = passages[start : start + BATCH]
            encodings = self._tokenizer.encode_batch([(query, p) for p in batch])
            feed = {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64)}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            try:
                outputs = self._session.run(None, feed)[0]
            except Exception as exc:
                raise RerankUnavailable(f"the reranker failed: {exc}") from exc
            scores += pair_logits(np.asarray(outputs, dtype=np.float64), len(batch))
        return scores
