"""The one search: keyword leg, vector leg, fusion, filters, paging, grouping.

Every adapter calls `search()`; there is no second scoring path for another transport. If the vector
leg fails (model or store), keyword results come back with a warning instead of an error.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from indexer.embed import EmbeddingUnavailable
from indexer.store import Filters, count_embedded, filtered_ids, keyword_matching_ids, keyword_search
from indexer.vectors import VectorStoreUnavailable
from server import scoring
from server.app import Oracle
from server.models import Hit, ScoreBreakdown, SearchMeta, SearchRequest, SearchResult, SupersededBy, Triplet
from server.query import KeywordQuery, build_keyword_query, snippet, validate_query
from server.relations import entry_chunks, stating_files
from server.supersede import successors_for

POOL = 100  # candidates taken from each leg before fusion
_LEG_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="oracle-vector-leg")
OVERFETCH = 4  # vector candidates fetched per wanted hit when filters apply after the query


@dataclass
class _Legs:
    fts: list[scoring.LegHit]
    fts_total: int
    vector: list[scoring.LegHit]
    warnings: list[str]
    vector_ok: bool


def filters_for(request: SearchRequest) -> Filters:
    return Filters(
        type=None if request.type == "all" else request.type,
        concepts=tuple(request.concepts),
        project=request.project or None,
        date_from=request.date_from,
        date_to=request.date_to,
    )


def _keyword_leg(oracle: Oracle, kq: KeywordQuery, filters: Filters, pool: int) -> tuple[list[scoring.LegHit], int]:
    rows, total = keyword_search(oracle.store, kq.fts_match, kq.trigram_match, kq.short_unsegmented, filters, pool)
    return [scoring.LegHit(i, s) for i, s in rows], total


def _vector_leg(oracle: Oracle, query: str, filters: Filters, pool: int) -> list[scoring.LegHit]:
    """Nearest chunks by cosine similarity; filters are applied against SQLite after the query."""
    vector = oracle.embedder.embed([query])[0]
    n = pool * OVERFETCH if filters.active else pool
    while True:
        hits = oracle.vectors.query(vector, n)
        keep = filtered_ids(oracle.store, [h.id for h in hits], filters)
        kept = [scoring.LegHit(h.id, h.similarity) for h in hits if h.id in keep]
        if len(kept) >= pool or len(hits) < n:
            return kept[:pool]
        n *= 4


def _run_legs(oracle: Oracle, request: SearchRequest, query: str, kq: KeywordQuery, filters: Filters, pool: int) -> _Legs:
    """Both legs at once in hybrid mode: the model and SQLite release the GIL, so latency is the
    slower leg's, not the sum."""
    legs = _Legs(fts=[], fts_total=0, vector=[], warnings=[], vector_ok=True)
    vector_future = None
    if request.mode == "hybrid":
        vector_future = _LEG_POOL.submit(_vector_leg, oracle, query, filters, pool)
    if request.mode in ("hybrid", "fts"):
        legs.fts, legs.fts_total = _keyword_leg(oracle, kq, filters, pool)
        if kq.empty:
            legs.warnings.append("the query has no searchable words for the keyword leg")
    if request.mode in ("hybrid", "vector"):
        try:
            legs.vector = vector_future.result() if vector_future else _vector_leg(oracle, query, filters, pool)
            pending = oracle.store.pending_count()
            if pending:
                legs.warnings.append(f"{pending} chunks are not embedded yet; semantic results are incomplete")
        except (EmbeddingUnavailable, VectorStoreUnavailable) as exc:
            legs.vector_ok = False
            legs.warnings.append(f"vector search unavailable, showing keyword results only: {exc}")
            if request.mode == "vector":
                legs.fts, legs.fts_total = _keyword_leg(oracle, kq, filters, pool)
    return legs


def _fuse(request: SearchRequest, legs: _Legs) -> tuple[list[scoring.Fused], str, str | None]:
    """(fused list, mode actually used, fusion method or None)."""
    if request.mode == "fts" or not legs.vector_ok:
        return scoring.single_leg(legs.fts, "fts"), "fts", None
    if request.mode == "vector":
        return scoring.single_leg(legs.vector, "vector"), "vector", None
    method = request.fusion or scoring.DEFAULT_FUSION
    return scoring.fuse(legs.fts, legs.vector, method=method), "hybrid", method


def _total(oracle: Oracle, kq: KeywordQuery, mode: str, legs: _Legs, filters: Filters) -> int:
    """fts: every keyword match; vector: every embedded chunk passing the filters (all are ranked);
    hybrid: keyword matches plus vector candidates the keyword query does not match."""
    if mode == "fts":
        return legs.fts_total
    if mode == "vector":
        return count_embedded(oracle.store, filters)
    fts_ids = {h.id for h in legs.fts}
    vector_only = [h.id for h in legs.vector if h.id not in fts_ids]
    if legs.fts_total > len(legs.fts):
        vector_only = sorted(set(vector_only) - keyword_matching_ids(
            oracle.store, kq.fts_match, kq.trigram_match, kq.short_unsegmented, vector_only))
    return legs.fts_total + len(vector_only)


def _group(fused: list[scoring.Fused], docs: dict[str, dict]) -> tuple[list[scoring.Fused], dict[str, list[str]]]:
    """Best hit per file, in fused order; the others are listed with it."""
    best: dict[str, scoring.Fused] = {}
    others: dict[str, list[str]] = {}
    order: list[scoring.Fused] = []
    for item in fused:
        file = docs[item.id]["file"]
        if file in best:
            others[best[file].id].append(item.id)
            continue
        best[file] = item
        others[item.id] = []
        order.append(item)
    return order, others


def _apply_use(
    oracle: Oracle, fused: list[scoring.Fused], docs: dict[str, dict]
) -> tuple[list[scoring.Fused], dict[str, tuple[int, int]], dict[str, SupersededBy]]:
    """Feedback verdicts and supersessions adjust relevance within stated bounds (server/scoring.py).
    Returns the re-ranked list, the verdict counts and the supersession pointers of its hits."""
    successors, pointers = successors_for(oracle, docs)
    feedback = oracle.logs.feedback_counts([f.id for f in fused])
    return scoring.adjust(fused, feedback, successors), feedback, pointers


def _start_from_relations(
    oracle: Oracle, request: SearchRequest, fused: list[scoring.Fused], docs: dict[str, dict], filters: Filters,
    warnings: list[str],
) -> tuple[list[scoring.Fused], dict[str, list[Triplet]], list[str]]:
    """Notes stating a matching triplet lead (their best-ranked chunk, else their first chunk), in fused
    order; text and vector results follow. Returns (order, file -> matched triplets, ids added)."""
    pattern = request.relation_pattern
    assert pattern is not None
    stating = stating_files(oracle, pattern)
    if not stating:
        shown = ", ".join(f"{k}={v!r}" for k, v in zip(("subject", "predicate", "object"), pattern) if v)
        warnings.append(f"no note states a relation matching {shown}; showing text and vector results")
        return fused, {}, []
    lead: dict[str, scoring.Fused] = {}
    for item in fused:
        file = docs[item.id]["file"]
        if file in stating and file not in lead:
            lead[file] = item
    entries = entry_chunks(oracle, [f for f in stating if f not in lead], filters)
    docs.update(oracle.store.documents_by_id(sorted(entries.values())))
    added = [scoring.Fused(entries[f], 0.0, relevance=0.0) for f in sorted(entries)]
    leaders = list(lead.values()) + added
    for item in leaders:
        item.found_by = ["relation", *item.found_by]
    ids = {item.id for item in leaders}
    return leaders + [item for item in fused if item.id not in ids], stating, [item.id for item in added]


def _hit(
    item: scoring.Fused, doc: dict, kq: KeywordQuery, also: list[str], feedback: tuple[int, int],
    superseded_by: SupersededBy | None, relations: list[Triplet],
) -> Hit:
    terms = kq.terms + kq.unsegmented
    return Hit(
        id=item.id,
        type=doc["type"],
        kind=doc["kind"],
        title=doc["title"] or "",
        heading=doc["heading"] or "",
        snippet=snippet(doc["content"] or "", terms),
        source_file=doc["file"],
        line_start=doc["line_start"],
        line_end=doc["line_end"],
        concepts=doc["concepts"],
        project=doc["project"],
        date=doc["date"],
        content_hash=doc["content_hash"],
        score=item.score,
        found_by=item.found_by,
        breakdown=ScoreBreakdown(
            fused=item.score,
            bm25_rank=item.fts_rank,
            bm25_score=item.fts_score,
            vector_rank=item.vector_rank,
            vector_similarity=item.vector_similarity,
            relevance=item.score if item.relevance is None else item.relevance,
            helpful=feedback[0],
            misleading=feedback[1],
            feedback_factor=item.feedback_factor,
            superseded_factor=item.superseded_factor,
        ),
        also_in_file=also,
        superseded_by=superseded_by,
        relations=relations if "relation" in item.found_by else [],
    )


def search(oracle: Oracle, request: SearchRequest, client: str = "cli", tool: str = "search") -> SearchResult:
    """Search and record it in the search log (query, parameters, results, latency)."""
    result = run_search(oracle, request)
    oracle.logs.log_search(
        client=client,
        tool=tool,
        query=result.query,
        params=request.model_dump(exclude={"query"}),
        mode=result.meta.mode,
        total=result.total,
        results=[(h.id, h.score) for h in result.hits],
        latency_ms=result.meta.took_ms,
        warnings=result.meta.warnings,
    )
    return result


def run_search(oracle: Oracle, request: SearchRequest) -> SearchResult:
    """Retrieval only, unlogged: the building block for search and consult."""
    started = time.perf_counter()
    query = validate_query(request.query)
    kq = build_keyword_query(query)
    filters = filters_for(request)
    pool = max(POOL, request.offset + request.limit)
    legs = _run_legs(oracle, request, query, kq, filters, pool)
    fused, mode, method = _fuse(request, legs)
    docs = oracle.store.documents_by_id([f.id for f in fused])
    fused = [f for f in fused if f.id in docs]  # a vector whose chunk vanished is not a result
    total = _total(oracle, kq, mode, legs, filters)
    fused, feedback, pointers = _apply_use(oracle, fused, docs)
    stating: dict[str, list[Triplet]] = {}
    if request.relation_pattern:
        fused, stating, added = _start_from_relations(oracle, request, fused, docs, filters, legs.warnings)
        total += len(added)
        if added:  # notes that only the relation found: their pointers and verdicts too
            pointers.update(successors_for(oracle, {i: docs[i] for i in added})[1])
            feedback.update(oracle.logs.feedback_counts(added))
    also: dict[str, list[str]] = {}
    if request.group_by_file:
        fused, also = _group(fused, docs)
        total = len(fused)  # files among the candidates of both legs
    page = fused[request.offset : request.offset + request.limit]
    hits = [
        _hit(item, docs[item.id], kq, also.get(item.id, []), feedback.get(item.id, (0, 0)), pointers.get(item.id),
             stating.get(docs[item.id]["file"], []))
        for item in page
    ]
    return SearchResult(
        query=query,
        hits=hits,
        total=total,
        limit=request.limit,
        offset=request.offset,
        meta=SearchMeta(
            mode=mode,
            fusion=method,
            took_ms=round((time.perf_counter() - started) * 1000, 2),
            fts_matches=legs.fts_total,
            vector_matches=len(legs.vector),
            warnings=legs.warnings,
        ),
    )
