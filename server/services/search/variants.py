"""Other phrasings of one need, fused in one call (`variants` on search and consult): the pure part.

The agent that calls Oracle is usually the strongest model in the loop: it can say the same need in the notes'
words, in their language, as a heading. Each phrasing is ranked by the whole search (both legs, expansion,
adjustments, notes; server/services/search/pipeline.py), the phrasings' questions embedded in one batch, and the
rankings are fused per note here: each phrasing's scores divided by its best score, summed over the phrasings
(CombSUM of max-normalised scores). A note that several phrasings find ranks above one a single phrasing ranks
high, and a phrasing's confidence counts, not only its order (measured against reciprocal-rank fusion:
benchmarks/variants.py, BENCHMARKS.md). Only the fused page is then read and shown, once. Variants are query text,
never instructions: they only ever reach the keyword expression builder and the embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Measured on the natural and judged nat-brain sets with blind variants (benchmarks/variants.py, BENCHMARKS.md):
QUERY_WEIGHT = 1.0  # the question as asked; 1.5 / 2 lost 0.016 / 0.031 on the natural set (Thai 0.045 / 0.087)
VARIANT_WEIGHT = 1.0  # each other phrasing
DEPTH = 20  # results read from each phrasing's ranking (at least offset + limit); 10 / 30 lost 0.003 / 0.006
EXPAND = True  # each phrasing's own query expansion: without it natural 0.792 -> 0.752 (reciprocal-rank fusion)
WORKERS = 2  # phrasings ranked at once (each ranking's legs release the GIL in SQLite and the model)


@dataclass(frozen=True)
class FusedKey:
    """One note (or section) of the fused ranking: its fused score, best rank anywhere, and the phrasings
    (0 = the query, 1.. = the variants in order) whose rankings hold it."""

    key: str
    score: float
    best_rank: int
    phrasings: tuple[int, ...]


def fuse(rankings: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]) -> list[FusedKey]:
    """Weighted sum of max-normalised scores over several rankings of (key, score), best first. A ranking whose
    best score is not positive adds nothing but still says it found its keys. Ties break on the best rank any
    phrasing gave, then on the earliest phrasing that found it, then on the key: the same rankings always give the
    same order."""
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    found: dict[str, list[int]] = {}
    for index, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        top = max((score for _, score in ranking), default=0.0)
        for rank, (key, score) in enumerate(ranking):
            if index in found.get(key, ()):
                continue  # a key twice in one ranking counts once, at its better rank
            scores[key] = scores.get(key, 0.0) + (weight * score / top if top > 0 else 0.0)
            best[key] = min(best.get(key, rank), rank)
            found.setdefault(key, []).append(index)
    fused = [FusedKey(key, scores[key], best[key], tuple(found[key])) for key in scores]
    fused.sort(key=lambda f: (-f.score, f.best_rank, f.phrasings[0], f.key))
    return fused


def weights(phrasings: int) -> list[float]:
    """The query's weight, then each variant's."""
    return [QUERY_WEIGHT] + [VARIANT_WEIGHT] * (phrasings - 1)


def distinct_phrasings(query: str, variants: Sequence[str]) -> list[str]:
    """The query, then each variant that says something else (case and spacing ignored), in the order given."""
    seen: set[str] = set()
    out: list[str] = []
    for text in (query, *variants):
        norm = " ".join(text.casefold().split())
        if norm and norm not in seen:
            seen.add(norm)
            out.append(text.strip())
    return out


def depth(offset: int, limit: int) -> int:
    """How many results each phrasing ranks for a page at `offset`, `limit`."""
    return max(DEPTH, offset + limit)
