"""Fusion of the two legs (scoring.py), query expansion from the best notes' own words, and the bar a match must
clear to count in the total.
"""

from __future__ import annotations

from oracle_server.services.capabilities.search import expansion, scoring
from oracle_server.services.capabilities.search.legs import _weighs_note_evidence
from oracle_server.services.capabilities.search.plan import _LEG_POOL, _Entry, _Fusion, _Legs, _Plan, _Prefetched
from oracle_server.services.capabilities.search.query import (
    KeywordQuery,
    quote,
)
from oracle_server.services.runtime.app import Oracle


def _prefetch(oracle: Oracle, ids: list[str], fts_match: str | None, early: _Prefetched | None) -> _Prefetched:
    """Step 4's reads for the candidates of both legs, beside query expansion: those `early` (_read_beside) has not
    made already."""
    asked = early.asked if early else frozenset()
    facts = {**(early.facts if early else {}), **oracle.store.section_facts([i for i in ids if i not in asked])}
    notes: dict[str, float] | None
    if early is not None and early.notes is not None:
        notes, every = early.notes, early.every_note
    else:
        notes = (oracle.store.note_keyword_scores(fts_match, sorted({f.file for f in facts.values()})) if fts_match
                 else None)
        every = False
    return _Prefetched(asked | frozenset(ids), facts, notes, every)


def _fuse(oracle: Oracle, plan: _Plan, legs: _Legs) -> _Fusion:
    """Step 3: the legs fused into one list; weighted fusion then adds query expansion (_expand), while another
    thread reads what step 4 needs of the candidates found so far (_prefetch: SQLite and PostgreSQL release the
    GIL, and expansion waits on its own keyword query most of its time)."""
    request = plan.request
    if request.mode == "fts" or not legs.vector_ok:
        return _Fusion(scoring.single_leg(legs.fts, "fts"), "fts", None, None)
    if request.mode == "vector":
        return _Fusion(scoring.single_leg(legs.vector, "vector"), "vector", None, None)
    method = request.fusion or scoring.DEFAULT_FUSION
    weight = scoring.semantic_weight(method, legs.multilingual, legs.fts, plan.bm25_bar)
    fused = scoring.fuse(legs.fts, legs.vector, method=method, semantic_weight=weight,
                         keyword_floor=scoring.keyword_floor(plan.bm25_bar))
    prefetched = None
    if method == "weighted" and fused:
        notes_for = plan.kq.fts_match if _weighs_note_evidence("hybrid", plan.kq, legs) else None
        prefetched = _LEG_POOL.submit(_prefetch, oracle, [f.id for f in fused], notes_for, legs.read)
        fused = _expand(oracle, plan, fused, weight, legs)
    return _Fusion(fused, "hybrid", method, weight, prefetched)


def _expand(oracle: Oracle, plan: _Plan, fused: list[scoring.Fused], semantic_weight: float,
            legs: _Legs) -> list[scoring.Fused]:
    """Weighted hybrid only: the words of the first ranking's best sections that are rare in the index
    (server/services/capabilities/search/expansion.py) make a second keyword query, whose ranking is mixed into the
    keyword part of the fused scores. The question's own words are not repeated in it: the keyword leg has ranked them
    already, and common question words made the second query cost as much as the first. The words used are kept
    in `legs.expanded_with` for the meta."""
    best = _on_topic_sources(oracle, plan, fused)
    sources = oracle.store.sections_by_id(best)
    texts = [f"{s.title} {s.heading} {s.content}" for s in (sources.get(i) for i in best) if s]
    weight = expansion.word_weights(texts, frozenset(plan.kq.terms))
    candidates = expansion.candidate_words(weight)
    counts = oracle.store.section_counts([quote(w) for w in candidates], expansion.most_sections(plan.sections))
    words = expansion.expansion_terms(weight, {w: counts[quote(w)] for w in candidates}, plan.sections)
    if not words:
        return fused
    expanded = KeywordQuery(terms=words, unsegmented=())
    rows, _ = oracle.store.keyword_search(expanded.fts_match, None, (), plan.filters, plan.pool, count=False)
    legs.expanded_with = list(words)
    return scoring.with_expansion(fused, [scoring.LegHit(i, s) for i, s in rows], semantic_weight,
                                  expansion.EXPANSION_SHARE)


def _on_topic_sources(oracle: Oracle, plan: _Plan, fused: list[scoring.Fused]) -> list[str]:
    """The sections query expansion takes its words from (expansion.on_topic_sources): the first ranking's best,
    but for those outranking a section that holds a near-unique word of the question while only its generic
    words back them. Reads the question words' section counts (cached per state of the word table) and, when
    some are near-unique, which of the best sections hold them."""
    first = fused[: expansion.EXPANSION_SOURCES]
    ranked = [(f.id, f.fts_rank is not None and (f.vector_rank is None or f.vector_rank > expansion.VECTOR_BACKING))
              for f in first]
    terms = list(plan.kq.terms)
    if not terms or not any(words_only for _, words_only in ranked[:-1]):  # nothing that could be passed over:
        return [i for i, _ in ranked]  # no count read (most searches: the vector leg backs the best sections)
    counts = oracle.store.section_counts([quote(t) for t in terms], expansion.NEAR_UNIQUE)
    rare = expansion.near_unique_terms({t: counts[quote(t)] for t in terms})
    if not rare:
        return [i for i, _ in ranked]
    held = oracle.store.terms_matched([quote(t) for t in sorted(rare)], [i for i, _ in ranked])
    return expansion.on_topic_sources(ranked, frozenset(i for i, n in held.items() if n))


def _bar(oracle: Oracle, plan: _Plan, legs: _Legs) -> scoring.Bar:
    """What a hit needs to count as strong (scoring.is_weak): the bm25 and the similarity of the model that ranked
    the vector leg. Its similarity is also the cut below which a vector candidate does not count in a total."""
    return scoring.Bar(plan.bm25_bar, scoring.similarity_bar(legs.main_share, oracle.embedder.weak_similarity))


def _really_matches(entry: _Entry, bar: scoring.Bar) -> bool:
    """A note (or section) counts in a search's total when one of its sections matches the query's words, states
    the asked relation, or is near it by meaning: a vector similarity at or above the weak bar. The vector leg
    ranks every embedded section, so without the bar `a` counted 60-74 of 84 notes (issue 40)."""
    return any(f.fts_rank is not None or "relation" in f.found_by
               or (f.vector_similarity is not None and f.vector_similarity >= bar.similarity)
               for f in (entry.lead, *entry.others))


def _total(oracle: Oracle, plan: _Plan, mode: str, legs: _Legs) -> int:
    """Sections that really match (see _really_matches). fts: every keyword match; vector: every embedded chunk
    passing the filters (all are ranked: the mode asks for nearness alone); hybrid: keyword matches plus vector
    candidates the keyword query does not match whose similarity clears the weak bar."""
    if mode == "fts":
        return legs.fts_total
    if mode == "vector":
        return oracle.store.count_embedded(plan.filters)
    fts_ids = {h.id for h in legs.fts}
    cut = _bar(oracle, plan, legs).similarity
    vector_only = [h.id for h in legs.vector if h.id not in fts_ids and h.score >= cut]
    if legs.fts_total > len(legs.fts):
        kq = plan.kq
        vector_only = sorted(set(vector_only) - oracle.store.keyword_matching_ids(
            kq.fts_match, kq.trigram_match, kq.short_unsegmented, vector_only))
    return legs.fts_total + len(vector_only)
