"""Other phrasings of one need, fused in one call (`variants` on search and consult).

The agent that calls Oracle is usually the strongest model in the loop: it can say the same need in the notes'
words, in their language, as a heading. Each phrasing runs the whole search (both legs, expansion, notes), and
the pages are fused per note by reciprocal rank, the way a client fusing several `oracle_search` calls would,
but in one call: the phrasings' questions are embedded in one batch, and a note that several phrasings find
ranks above one that a single phrasing ranks high. The original query keeps a little more weight than a variant
(measured: benchmarks/variants.py). Variants are query text, never instructions: they only ever reach the
keyword expression builder and the embedder.

The fusion itself is pure (`fuse`), tested without a database; `run_with_variants` runs the phrasings.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from oracle_server.services.search.vocabulary import TRY_PHRASES, TRY_WORDS
from oracle_server.services.models import Hit, SearchMeta, SearchRequest, SearchResult

# Measured on the natural and judged nat-brain sets with blind variants (benchmarks/variants.py, BENCHMARKS.md):
RRF_K = 60.0  # reciprocal-rank constant: 10, 20, 40 and 60 within 0.004 of each other on both sets
QUERY_WEIGHT = 1.0  # the question as asked; 1.5-2 lost 0.02-0.06 on the natural set, gained 0.002 on the judged
VARIANT_WEIGHT = 1.0  # each other phrasing
DEPTH = 10  # notes read from each phrasing's ranking (at least offset + limit); 20 lost 0.044 / 0.005
EXPAND = True  # each phrasing's own query expansion: without it 0.792 -> 0.752 (natural), 0.867 -> 0.855 (judged)
WORKERS = 2  # phrasings searched at once (each search's legs release the GIL in SQLite and the model)


# Shared by every search with variants; a phrasing never waits on this pool (its legs use the pipeline's).
_PHRASINGS = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="oracle-phrasing")


@dataclass(frozen=True)
class FusedKey:
    """One note (or section) of the fused ranking: its fused score, best rank anywhere, and the phrasings
    (0 = the query, 1.. = the variants in order) whose pages hold it."""

    key: str
    score: float
    best_rank: int
    phrasings: tuple[int, ...]


def fuse(rankings: Sequence[Sequence[str]], weights: Sequence[float], k: float | None = None) -> list[FusedKey]:
    """Weighted reciprocal-rank fusion of several rankings of keys (best first; k: RRF_K). Ties break on the best
    rank any phrasing gave, then on the earliest phrasing that found it, then on the key: the same rankings always
    give the same order."""
    k = RRF_K if k is None else k
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    found: dict[str, list[int]] = {}
    for index, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        for rank, key in enumerate(ranking):
            if index in found.get(key, ()):
                continue  # a key twice in one ranking counts once, at its better rank
            scores[key] = scores.get(key, 0.0) + weight / (k + rank + 1)
            best[key] = min(best.get(key, rank), rank)
            found.setdefault(key, []).append(index)
    fused = [FusedKey(key, scores[key], best[key], tuple(found[key])) for key in scores]
    fused.sort(key=lambda f: (-f.score, f.best_rank, f.phrasings[0], f.key))
    return fused


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


def _key(hit: Hit, by_note: bool) -> str:
    return hit.source_file if by_note else hit.id


def fused_result(request: SearchRequest, phrasings: Sequence[str], results: Sequence[SearchResult],
                 took_ms: float) -> SearchResult:
    """One page from the phrasings' pages: hits in fused order, each shown as the phrasing that ranked it best
    showed it (its best section, snippet and breakdown), with `phrasings` and the fused score."""
    by_note = request.by_note
    rankings = [[_key(h, by_note) for h in r.hits] for r in results]
    weights = [QUERY_WEIGHT] + [VARIANT_WEIGHT] * (len(results) - 1)
    fused = fuse(rankings, weights)
    weak: dict[str, bool] = {}
    for r in results:
        for h in r.hits:
            key = _key(h, by_note)
            weak[key] = weak.get(key, True) and h.weak
    page = []
    for f in fused[request.offset: request.offset + request.limit]:
        # shown as the phrasing that ranked it best, the earliest on a tie (f.phrasings is in phrasing order)
        index = next(p for p in f.phrasings if rankings[p].index(f.key) == f.best_rank)
        hit = results[index].hits[f.best_rank]
        page.append(hit.model_copy(update={"score": round(f.score, 6), "phrasings": list(f.phrasings),
                                           "weak": weak[f.key]}))
    first = results[0].meta
    warnings: list[str] = []
    for r in results:
        warnings += [w for w in r.meta.warnings if w not in warnings]
    meta = first.model_copy(update={
        "took_ms": took_ms,
        "fts_matches": max(r.meta.fts_matches for r in results),
        "vector_matches": max(r.meta.vector_matches for r in results),
        "weak": not page or all(h.weak for h in page),
        "warnings": warnings,
        "phrasings": len(results),
    })
    total = max(len(fused), *(r.total for r in results))
    return SearchResult(query=results[0].query, hits=page, total=total, limit=request.limit,
                        offset=request.offset, meta=meta, try_=_words_to_try(results) if meta.weak else [])


def _words_to_try(results: Sequence[SearchResult]) -> list[str]:
    """A weak fused page's `try`: the phrasings' own, the query's first, each word once, as many as one page's."""
    words: dict[str, str] = {}
    for r in results:
        for w in r.try_:
            words.setdefault(w.casefold(), w)
    return list(words.values())[: TRY_WORDS + TRY_PHRASES]


def run_with_variants(request: SearchRequest, run: Callable[[SearchRequest], SearchResult],
                      prime: Callable[[list[str]], AbstractContextManager[object]] | None = None) -> SearchResult:
    """Run the query and each distinct variant as its own search (`run`: the pipeline without variants), deep
    enough for the page asked, and fuse them. `prime` embeds every phrasing in one batch first (hybrid and
    vector modes), so each search finds its question's vector ready."""
    started = time.perf_counter()
    phrasings = distinct_phrasings(request.query, request.variants)
    if len(phrasings) == 1:  # every variant repeats the query: the search without variants, byte for byte
        return run(request.model_copy(update={"variants": []}))
    depth = max(DEPTH, request.offset + request.limit)
    asks = [request.model_copy(update={"query": p, "variants": [], "limit": depth, "offset": 0}) for p in phrasings]
    with prime(phrasings) if prime is not None and request.mode != "fts" else nullcontext():
        if WORKERS > 1:
            futures = [_PHRASINGS.submit(contextvars.copy_context().run, run, ask) for ask in asks]
            results = [f.result() for f in futures]
        else:
            results = [run(ask) for ask in asks]
    return fused_result(request, phrasings, results, round((time.perf_counter() - started) * 1000, 2))

