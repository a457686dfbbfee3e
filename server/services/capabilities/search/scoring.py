"""Fusion of the keyword and vector legs. Pure functions over ranked lists.

Conventions, so no leg is ever read backwards:
- keyword score = -bm25 (SQLite's bm25() is more negative for better matches, so this is higher-better);
- vector similarity = 1 - cosine distance (higher-better, 1 = same direction).

Two fusion modes:
- "rrf": Reciprocal Rank Fusion, sum over legs of weight / (k + rank), rank starting at 1;
- "weighted": a convex mix of the keyword score scaled by the best keyword score of this query, and the
  vector similarity scaled into [0, 1] by the pool's min and max.
The default and its parameters were chosen on the SciFact training split (benchmarks/quality.py).

After fusion, use adjusts the fused relevance (`adjust`), bounded so that relevance still dominates:
- feedback: score x f, f = 1 + FEEDBACK_BOUND * (helpful - misleading) / (helpful + misleading + FEEDBACK_PRIOR),
  so f lies strictly between 0.8 and 1.2 however many verdicts there are, and one verdict moves it by 1/15;
- supersession: score x SUPERSEDED_FACTOR, and the superseded hit is placed right after its successor when
  both are in the candidates (also when it already ranked below it, with other hits between).
With no verdicts and no supersessions nothing changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Chosen on the SciFact training split (809 queries; benchmarks/quality.py --sweep, benchmarks/HISTORY.md):
# weighted w=0.3 gave nDCG@10 0.741 against 0.733 for the best RRF (k=5, w=0.4) and 0.715 for RRF k=60.
DEFAULT_FUSION = "weighted"
WEIGHTED_SEMANTIC_WEIGHT = 0.3
RRF_K = 5
RRF_SEMANTIC_WEIGHT = 0.4
SCORE_DECIMALS = 6
FEEDBACK_BOUND = 0.2
FEEDBACK_PRIOR = 2
SUPERSEDED_FACTOR = 0.5
# When the keyword leg is not to be trusted more than the vector leg, they weigh the same:
# - a query mostly in scripts the English model does not read ranks its vector leg with the multilingual model
#   (indexer/models/multilingual.py), and its keyword words come from a segmenter (nat-brain's 10 Thai questions,
#   multilingual vector weight 0.3 / 0.5 / 0.7: 0.604 / 0.672 / 0.626);
# - the keyword leg's best hit is itself weak (bm25 below weak_bm25): few or common query words matched
#   (SciFact train 4 wins / 1 loss of 809, 0.7407 -> 0.7410; nat-brain English 2 wins / 0 losses, 0.830 -> 0.835).
EQUAL_SEMANTIC_WEIGHT = 0.5
# How much a note's keyword evidence beyond its best section counts in hybrid mode (with_note_evidence).
NOTE_EVIDENCE_WEIGHT = 0.3
# Below both, a hit is marked weak (see is_weak; calibrated in benchmarks/notes.py).
WEAK_SIMILARITY = 0.45
# The multilingual model's similarities run lower: on nat-brain the best section for each of 6 Thai off-topic
# questions scores 0.18-0.22, for each of the 10 judged Thai questions 0.32-0.69.
WEAK_SIMILARITY_MULTILINGUAL = 0.30
WEAK_BM25 = 14.0
CALIBRATION_CHUNKS = 7_282  # sections in the nat-brain index the thresholds were calibrated on
COVERAGE = 2 / 3
# A note in another language than the query's, in a base translated into several (prefer_languages): its score
# is multiplied by this.
OTHER_LANGUAGE_FACTOR = 0.5
# In weighted fusion keyword scores scale by max(the query's best bm25, KEYWORD_FLOOR x weak_bm25): see keyword_floor.
KEYWORD_FLOOR = 1.5


@dataclass(frozen=True)
class LegHit:
    id: str
    score: float  # higher-better within its leg


@dataclass
class Fused:
    id: str
    score: float
    fts_rank: int | None = None
    fts_score: float | None = None
    vector_rank: int | None = None
    vector_similarity: float | None = None
    found_by: list[str] = field(default_factory=list)
    relevance: float | None = None  # the fused score before `adjust`
    feedback_factor: float = 1.0
    superseded_factor: float = 1.0
    language_factor: float = 1.0
    expansion_score: float | None = None  # its keyword score for the expanded query (with_expansion)


def rank_order(hits: list[LegHit]) -> list[LegHit]:
    """Best first; equal scores break by id so the order never depends on the engine's whim."""
    return sorted(hits, key=lambda h: (-h.score, h.id))


def _merge(fts: list[LegHit], vector: list[LegHit]) -> dict[str, Fused]:
    merged: dict[str, Fused] = {}
    for rank, hit in enumerate(rank_order(fts), start=1):
        merged[hit.id] = Fused(hit.id, 0.0, fts_rank=rank, fts_score=hit.score, found_by=["fts"])
    for rank, hit in enumerate(rank_order(vector), start=1):
        item = merged.setdefault(hit.id, Fused(hit.id, 0.0))
        item.vector_rank = rank
        item.vector_similarity = hit.score
        item.found_by.append("vector")
    return merged


def rrf(fts: list[LegHit], vector: list[LegHit], k: int = RRF_K,
        semantic_weight: float = RRF_SEMANTIC_WEIGHT) -> list[Fused]:
    merged = _merge(fts, vector)
    for item in merged.values():
        score = 0.0
        if item.fts_rank is not None:
            score += (1.0 - semantic_weight) / (k + item.fts_rank)
        if item.vector_rank is not None:
            score += semantic_weight / (k + item.vector_rank)
        item.score = score
    return finish(merged.values())


def weighted(fts: list[LegHit], vector: list[LegHit], semantic_weight: float = WEIGHTED_SEMANTIC_WEIGHT,
             keyword_floor: float = 0.0) -> list[Fused]:
    """Keyword scores are scaled by the best of this query, or by `keyword_floor` when the best is below it (see
    keyword_floor): a weak best keyword match does not count as a perfect one."""
    merged = _merge(fts, vector)
    best_fts = max(max((h.score for h in fts), default=0.0), keyword_floor)
    sims = [h.score for h in vector]
    lo, hi = (min(sims), max(sims)) if sims else (0.0, 0.0)
    for item in merged.values():
        keyword = (item.fts_score / best_fts) if item.fts_score is not None and best_fts > 0 else 0.0
        if item.vector_similarity is None:
            semantic = 0.0
        elif hi > lo:
            semantic = (item.vector_similarity - lo) / (hi - lo)
        else:
            semantic = 1.0
        item.score = (1.0 - semantic_weight) * keyword + semantic_weight * semantic
    return finish(merged.values())


def single_leg(hits: list[LegHit], leg: str) -> list[Fused]:
    """One leg alone: its own score is the fused score."""
    if leg == "fts":
        return finish(Fused(h.id, h.score, fts_rank=r, fts_score=h.score, found_by=["fts"])
                      for r, h in enumerate(rank_order(hits), start=1))
    return finish(Fused(h.id, h.score, vector_rank=r, vector_similarity=h.score, found_by=["vector"])
                  for r, h in enumerate(rank_order(hits), start=1))


def finish(items) -> list[Fused]:
    """Round scores (float noise must not reorder equal hits) and sort: score desc, then id."""
    out = list(items)
    for item in out:
        item.score = round(item.score, SCORE_DECIMALS)
        if item.fts_score is not None:
            item.fts_score = round(item.fts_score, SCORE_DECIMALS)
        if item.vector_similarity is not None:
            item.vector_similarity = round(item.vector_similarity, SCORE_DECIMALS)
    out.sort(key=lambda f: (-f.score, f.id))
    return out


def fuse(
    fts: list[LegHit],
    vector: list[LegHit],
    method: str = DEFAULT_FUSION,
    k: int = RRF_K,
    semantic_weight: float | None = None,
    keyword_floor: float = 0.0,
) -> list[Fused]:
    """Fuse with the given method; semantic_weight defaults to the tuned value of that method; keyword_floor
    applies to weighted fusion (RRF reads ranks only)."""
    weight = base_semantic_weight(method) if semantic_weight is None else semantic_weight
    if method == "rrf":
        return rrf(fts, vector, k=k, semantic_weight=weight)
    if method == "weighted":
        return weighted(fts, vector, weight, keyword_floor)
    raise ValueError(f"unknown fusion {method!r}: use 'rrf' or 'weighted'")


def keyword_floor(bm25_bar: float) -> float:
    """The bm25 below which the best keyword match of a query no longer scales to a full keyword score in
    weighted fusion: KEYWORD_FLOOR x the weak-match bar of this index (weak_bm25). A question in everyday words
    ("how do I get back the text it had before") matches common words somewhere; scaled by its own best, that
    chance match scored as much as an exact title match and outranked the vector leg's answer.
    Measured (benchmarks/sets.py): natural questions 0.546 -> 0.570 (12 wins, 8 losses of 67), judged nat-brain
    0.821 -> 0.827 (Thai 0.700 -> 0.733; 2 wins, 2 losses), SciFact train 0.741 -> 0.740 (9 wins, 11 losses of
    809); a floor of 1.0 x the bar gave 0.566 / 0.827, 2.0 x gave 0.565 / 0.821 with 8 judged losses."""
    return KEYWORD_FLOOR * bm25_bar


def with_expansion(fused: list[Fused], expansion: list[LegHit], semantic_weight: float,
                   share: float = 0.5) -> list[Fused]:
    """Mix the expanded query's keyword ranking (server/services/capabilities/search/expansion.py) into the fused
    scores: `share` of the keyword part (1 - semantic_weight) goes to the expansion score scaled by its best; a section
    only the expansion found joins with that part alone. With no expansion hits the list is returned untouched."""
    best = max((h.score for h in expansion), default=0.0)
    if best <= 0:
        return fused
    part = share * (1.0 - semantic_weight)
    by_id = {item.id: item for item in fused}
    for hit in expansion:
        item = by_id.setdefault(hit.id, Fused(hit.id, 0.0))
        item.expansion_score = hit.score
        item.found_by.insert(0, "expansion")  # the legs keep their order after it
    for item in by_id.values():
        scaled_expansion = (item.expansion_score or 0.0) / best
        item.score = (1.0 - part) * item.score + part * scaled_expansion
    return finish(by_id.values())


def with_note_evidence(fused: list[Fused], note_of: dict[str, str], note_scores: dict[str, float],
                       weight: float = NOTE_EVIDENCE_WEIGHT) -> list[Fused]:
    """Credit each note with the keyword evidence it holds beyond its best section.

    Both legs rank sections, and a note scores as its best section. A note whose sections share the query's
    words between them (the title one word, one section another, a third the rest) was so scored on one
    part of its evidence, and the plain whole-file bm25 baseline beat hybrid on such questions. Here a
    note's whole-text bm25 (scaled by the best note of the query) minus its best section's keyword score
    (scaled by the best section) is that missing part. A note of one section (a SciFact abstract) has
    none, and the store gives no score for it, so such notes rank exactly as before. It is added to each of
    the note's sections in units of the best fused score (so it means the same under weighted and RRF
    fusion), and the sum is divided by 1 + weight to stay in the fused score's range.
    Measured on nat-brain's 60 judged questions (hybrid nDCG@10 0.8125 without it): weight 0.3 -> 0.8213
    (15 wins, 6 losses), 0.5 -> 0.8205, 0.7 -> 0.819, 1.0 -> 0.805; 0.3 is the low end of the plateau, with
    the fewest losses. SciFact train is unchanged query for query (benchmarks/HISTORY.md)."""
    best_note = max(note_scores.values(), default=0.0)
    if best_note <= 0 or not fused:
        return fused
    top = max(item.score for item in fused)
    best_section = max((item.fts_score or 0.0 for item in fused), default=0.0) or 1.0
    section_evidence: dict[str, float] = {}
    for item in fused:
        note = note_of[item.id]
        section_evidence[note] = max(section_evidence.get(note, 0.0), (item.fts_score or 0.0) / best_section)
    for item in fused:
        note = note_of[item.id]
        beyond = max(0.0, note_scores.get(note, 0.0) / best_note - section_evidence[note])
        item.score = (item.score + weight * top * beyond) / (1.0 + weight)
    return finish(fused)


def base_semantic_weight(method: str) -> float:
    return RRF_SEMANTIC_WEIGHT if method == "rrf" else WEIGHTED_SEMANTIC_WEIGHT


def semantic_weight(method: str, multilingual: bool, fts: list[LegHit], bm25_bar: float) -> float:
    """The vector leg's share in this fusion: the tuned one, or EQUAL_SEMANTIC_WEIGHT (weighted fusion only)
    when the multilingual model ranked the vector leg or the keyword leg's best hit is below the bm25 bar."""
    if method == "weighted" and (multilingual or max((h.score for h in fts), default=0.0) < bm25_bar):
        return EQUAL_SEMANTIC_WEIGHT
    return base_semantic_weight(method)


def weak_bm25(chunks: int) -> float:
    """The bm25 a hit needs to count as strong in an index of this many chunks. bm25's idf grows with the
    log of the index size (a word in one of 300 chunks is worth less than one in one of 7,000), so the
    threshold calibrated on nat-brain scales by log(1 + chunks) / log(1 + CALIBRATION_CHUNKS)."""
    return WEAK_BM25 * math.log1p(max(chunks, 1)) / math.log1p(CALIBRATION_CHUNKS)


def covers(matched: int, terms: int) -> bool:
    """A hit holding this many of the query's terms holds most of them: at least COVERAGE of them (so all of
    a one- or two-word query): `quokka` found is found."""
    return terms > 0 and matched >= COVERAGE * terms


def similarity_bar(main_share: float, main_bar: float = WEAK_SIMILARITY) -> float:
    """The similarity a vector hit needs to count as strong, when the main model (whose own bar is
    `main_bar`: its similarities run in their own range, indexer/models/embed.py ModelSpec.weak_similarity)
    contributes `main_share` of it and the multilingual model the rest (indexer/models/multilingual.py `nearest`)."""
    return main_share * main_bar + (1.0 - main_share) * WEAK_SIMILARITY_MULTILINGUAL


@dataclass(frozen=True)
class Bar:
    """What a hit needs to count as strong: a bm25 (see weak_bm25) or a vector similarity (of the model
    that ranked the vector leg)."""

    bm25: float = WEAK_BM25
    similarity: float = WEAK_SIMILARITY


def is_weak(item: Fused, covered: bool = False, bar: Bar = Bar()) -> bool:
    """Whether a hit is only loosely related to the query, judged from absolute evidence, not from its
    rank (the best of ten poor matches is still poor). Strong when:
    - the vector leg found it at cosine similarity >= bar.similarity, or
    - the keyword leg scored it bm25 >= bar.bm25 (see weak_bm25: several rarer query words matched), or
    - it holds most of the query's words (`covered`, see `covers`).
    Calibrated in benchmarks/notes.py: on nat-brain the best hit of every off-topic question stays below
    the first two (similarity <= 0.41, bm25 <= 13.3) while every English judged question clears one."""
    if item.vector_similarity is not None and item.vector_similarity >= bar.similarity:
        return False
    if item.fts_score is not None and item.fts_score >= bar.bm25:
        return False
    return not covered


def feedback_factor(helpful: int, misleading: int) -> float:
    """Bounded in (1 - FEEDBACK_BOUND, 1 + FEEDBACK_BOUND); the prior keeps one vote from counting fully."""
    votes = helpful + misleading
    if votes == 0:
        return 1.0
    return 1.0 + FEEDBACK_BOUND * (helpful - misleading) / (votes + FEEDBACK_PRIOR)


def scaled(score: float, factor: float) -> float:
    """Multiply a higher-better score so that factor > 1 always helps, also for a negative score
    (a cosine similarity below zero in vector mode)."""
    return score * factor if score >= 0 else score / factor


def adjust(
    items: list[Fused],
    feedback: dict[str, tuple[int, int]],
    successors: dict[str, frozenset[str]],
) -> list[Fused]:
    """Apply feedback (id -> (helpful, misleading)) and supersession (superseded id -> its successor's
    chunk ids), then re-sort. With neither, the list is returned untouched."""
    if not items or not (feedback or successors):
        return items
    for item in items:
        if item.relevance is None:  # prefer_languages may have scaled it already
            item.relevance = item.score
        item.feedback_factor = round(feedback_factor(*feedback.get(item.id, (0, 0))), SCORE_DECIMALS)
        item.superseded_factor = SUPERSEDED_FACTOR if item.id in successors else 1.0
        item.score = scaled(scaled(item.score, item.feedback_factor), item.superseded_factor)
    return below_successors(finish(items), successors)


def prefer_languages(items: list[Fused], lang_of: dict[str, str | None], wanted: frozenset[str] | None,
                     factor: float = OTHER_LANGUAGE_FACTOR) -> list[Fused]:
    """Scale down hits in a language other than the query's (`lang_of`: id -> the note's structural language,
    None when unknown, which is never penalised), then re-sort. With no wanted languages, nothing changes.

    In a base translated into several languages every page exists in each, so the asker's copy of the right
    page is among the candidates and should lead; a page in another language still shows when nothing in the
    asker's language comes close (its score is scaled, not dropped)."""
    if not wanted or not items:
        return items
    changed = False
    for item in items:
        lang = lang_of.get(item.id)
        if lang is not None and lang not in wanted:
            if item.relevance is None:
                item.relevance = item.score
            item.language_factor = factor
            item.score = scaled(item.score, factor)
            changed = True
    return finish(items) if changed else items


def below_successors(items: list[Fused], successors: dict[str, frozenset[str]]) -> list[Fused]:
    """Place each superseded hit right after the best-placed chunk of its successor, whether that chunk ranked
    above or below it (an unrelated hit between them hid the pointer); chains (a -> b -> c) nest, and hits
    placed after the same chunk keep their order.

    One sort, O(n log n): every hit gets a key, its own rank, or, when it moves, its successor's key
    extended by its own rank. The earlier version moved one hit per pass and rescanned the list for each
    superseded hit: after superseding a note of 2,487 sections, a search with offset=10000 took 8.3 s.
    A cycle (a -> b -> a) cannot loop: a successor still being resolved is not a place to move to."""
    if not successors or not items:
        return items
    position = {item.id: index for index, item in enumerate(items)}
    present: dict[frozenset[str], list[str]] = {}  # the successor chunks in this list, once per successor
    keys: dict[str, tuple[int, ...]] = {}
    resolving: set[str] = set()
    for item in items:
        stack = [item.id]
        while stack:
            current = stack[-1]
            if current in keys:
                stack.pop()
                continue
            targets = successors.get(current)
            if targets and targets not in present:
                present[targets] = [t for t in targets if t in position] if len(targets) <= len(position) \
                    else [i for i in position if i in targets]
            chunks = present.get(targets, []) if targets else []
            if current not in resolving:
                resolving.add(current)
                stack.extend(t for t in chunks if t not in keys and t not in resolving)
                continue
            stack.pop()
            resolving.discard(current)
            own = (position[current],)
            best = min((keys[t] for t in chunks if t in keys), default=None)
            keys[current] = own if best is None else best + own
    return sorted(items, key=lambda item: keys[item.id])


def blend_rerank(scores: list[float], model: list[float], weight: float) -> list[tuple[int, float]]:
    """The first results reordered with a cross-encoder's scores (indexer/models/rerank.py).

    Each result's fused score and its model score are min-max scaled over these results and blended, the
    reranker's share being `weight` (1: its order alone). The blend is mapped back into the fused scores'
    range [lowest, highest], so the page stays sorted by score and the results after these stay below them.
    Returns (index into the input, new score), best first; ties keep the fused order."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    m_lo, m_hi = min(model), max(model)
    blended = []
    for i, (score, judged) in enumerate(zip(scores, model)):
        fused = (score - lo) / (hi - lo) if hi > lo else 1.0
        ranked = (judged - m_lo) / (m_hi - m_lo) if m_hi > m_lo else 1.0
        blended.append(((1.0 - weight) * fused + weight * ranked, i))
    blended.sort(key=lambda b: (-b[0], b[1]))
    return [(i, round(lo + b * (hi - lo), SCORE_DECIMALS)) for b, i in blended]
