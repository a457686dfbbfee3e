"""The two legs: keyword (FTS5 bm25 over sections) and vector (the English model, the multilingual one beside it),
run side by side, and the note-level keyword evidence read beside them.
"""

from __future__ import annotations

from concurrent.futures import Future

import numpy

from oracle_indexer.models.embed import MODEL_ID as MINILM_ID
from oracle_indexer.models.embed import EmbeddingUnavailable
from oracle_indexer.models.multilingual import covered_share, wants_multilingual
from oracle_indexer.store.errors import VectorStoreUnavailable
from oracle_indexer.store.types import Filters
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.capabilities.search.plan import (
    _LEG_POOL,
    EVERY_NOTE_MAX_MATCHES,
    OVERFETCH,
    _Legs,
    _Plan,
    _Prefetched,
)
from oracle_server.services.capabilities.search.query import (
    KeywordQuery,
)
from oracle_server.services.runtime.app import Oracle


def _keyword_leg(oracle: Oracle, kq: KeywordQuery, filters: Filters, pool: int) -> tuple[list[scoring.LegHit], int]:
    rows, total = oracle.store.keyword_search(kq.fts_match, kq.trigram_match, kq.short_unsegmented, filters, pool)
    return [scoring.LegHit(i, s) for i, s in rows], total


def _vector_leg(oracle: Oracle, query: str, filters: Filters, pool: int, multilingual: bool = False,
                main_share: float = 1.0) -> list[scoring.LegHit]:
    """Nearest chunks by cosine similarity, by the main model or (blended by `main_share`) the multilingual
    one; filters are applied against SQLite after the query, fetching more until `pool` pass them or the
    index runs out."""
    return _nearest(oracle, query, _question_vector(oracle, query, main_share), filters, pool, multilingual,
                    main_share)


def _question_vector(oracle: Oracle, query: str, main_share: float, beside: bool = False) -> numpy.ndarray | None:
    """The question embedded by the main model (None when the multilingual model ranks alone); EmbeddingUnavailable
    when the index's vectors are another model's. `beside`: the keyword leg runs meanwhile (Embedder.embed_query)."""
    stored = oracle.store.get_meta("embedding_model") or MINILM_ID
    if stored != oracle.embedder.model_id:
        raise EmbeddingUnavailable(
            f"the index's vectors are {stored}'s and the configured model is {oracle.embedder.model_id};"
            " the next index run re-embeds them")
    if main_share <= 0:
        return None
    return oracle.embedder.embed_query(query, beside=beside)


def _nearest(oracle: Oracle, query: str, vector: numpy.ndarray | None, filters: Filters, pool: int,
             multilingual: bool, main_share: float) -> list[scoring.LegHit]:
    """The vector leg after the question is embedded: the nearest chunks that pass the filters, ranked exactly
    for a SQLite base of up to EXACT_LIMIT embedded sections (indexer/store/sqlite/exact.py), else by the vector
    store."""
    if multilingual:
        def nearest(n: int) -> tuple[list[tuple[str, float]], bool]:
            return oracle.indexer.multilingual.nearest(query, n, vector, main_share), False
    else:
        exact = oracle.indexer.exact  # a small SQLite base ranks every vector exactly (indexer/store/sqlite/exact.py)
        assert vector is not None  # the main model ranks: main_share > 0 (_question_vector)

        def nearest(n: int) -> tuple[list[tuple[str, float]], bool]:
            found = exact.nearest(vector, n) if exact is not None else None
            if found is not None:
                return found, True
            return [(h.id, h.similarity) for h in oracle.vectors.query(vector, n)], False
    n = pool * OVERFETCH if filters.active else pool
    while True:
        hits, current = nearest(n)
        if current and not filters.active:
            # The exact leg's ids are the sections of the index's latest commit (the matrix is re-read after
            # every commit), so there is nothing to check: 0.4 ms of a search's critical path. A section removed
            # since is dropped with the other vanished candidates (_adjust).
            return [scoring.LegHit(i, s) for i, s in hits[:pool]]
        keep = oracle.store.filtered_ids([i for i, _ in hits], filters)
        kept = [scoring.LegHit(i, s) for i, s in hits if i in keep]
        if len(kept) >= pool or len(hits) < n:
            return kept[:pool]
        n *= 4


def _vector_leg_beside(oracle: Oracle, query: str, filters: Filters, pool: int, multilingual: bool,
                       main_share: float) -> Future:
    """Hybrid mode's vector leg, on another thread while the keyword leg runs on the search's: the question is
    embedded on a single-threaded session (one core) and its nearest sections looked up, the keyword leg takes
    the other core. Embedding first on both cores and only then starting the keyword leg was faster while the
    look-up was Chroma's ~3 ms; with the exact look-up (~2 ms) the legs overlap best this way: legs 12.4 -> 10.1
    ms, a search 24.7 -> 21.9 ms on nat-brain in-process (benchmarks/HISTORY.md, "Hybrid search: the legs side by
    side again"). The future holds the leg's hits, or the exception that failed it."""
    def leg() -> list[scoring.LegHit]:
        vector = _question_vector(oracle, query, main_share, beside=True)
        return _nearest(oracle, query, vector, filters, pool, multilingual, main_share)

    return _LEG_POOL.submit(leg)


def _run_legs(oracle: Oracle, plan: _Plan) -> _Legs:
    """Step 2: both legs at once in hybrid mode (the model and SQLite release the GIL, so latency is the
    slower leg's, not the sum: _vector_leg_beside)."""
    request, query, kq, filters, pool = plan.request, plan.query, plan.kq, plan.filters, plan.pool
    legs = _Legs(fts=[], fts_total=0, vector=[], warnings=[], vector_ok=True)
    legs.multilingual = (request.mode != "fts" and wants_multilingual(query)
                         and oracle.indexer.multilingual.ready())
    legs.main_share = covered_share(query) if legs.multilingual else 1.0
    vector_future = None
    if request.mode == "hybrid":
        vector_future = _vector_leg_beside(oracle, query, filters, pool, legs.multilingual, legs.main_share)
    if request.mode in ("hybrid", "fts"):
        legs.fts, legs.fts_total = _keyword_leg(oracle, kq, filters, pool)
        if kq.empty:
            legs.warnings.append("the query has no searchable words for the keyword leg")
        if vector_future is not None:
            legs.read = _read_beside(oracle, plan, legs)
    if request.mode in ("hybrid", "vector"):
        try:
            legs.vector = (vector_future.result() if vector_future
                           else _vector_leg(oracle, query, filters, pool, legs.multilingual, legs.main_share))
            pending = (oracle.indexer.multilingual.pending_count() if legs.multilingual
                       else oracle.store.pending_count())
            if pending:
                legs.warnings.append(f"{pending} chunks are not embedded yet; semantic results are incomplete")
        except (EmbeddingUnavailable, VectorStoreUnavailable) as exc:
            legs.vector_ok = False
            legs.warnings.append(f"vector search unavailable, showing keyword results only: {exc}")
            if request.mode == "vector":
                legs.fts, legs.fts_total = _keyword_leg(oracle, kq, filters, pool)
    return legs


def _read_beside(oracle: Oracle, plan: _Plan, legs: _Legs) -> _Prefetched:
    """Hybrid mode, on the search's thread once the keyword leg is done, while the vector leg still runs (the
    question's embedding outlasts the keyword leg): the keyword candidates' facts and, when the query matches at most
    EVERY_NOTE_MAX_MATCHES sections, the keyword score of every note it matches. That one read replaces two later
    ones: the candidates' notes read beside query expansion, and the notes of the sections expansion added, read
    after it on the search's path. Results are the same: a note's score does not depend on which notes are asked."""
    ids = [hit.id for hit in legs.fts]
    every = (_weighs_note_evidence("hybrid", plan.kq, legs) and legs.fts_total <= EVERY_NOTE_MAX_MATCHES)
    notes = oracle.store.note_keyword_scores(plan.kq.fts_match, None) if every else None
    return _Prefetched(frozenset(ids), oracle.store.section_facts(ids), notes, every)


def _weighs_note_evidence(mode: str, kq: KeywordQuery, legs: _Legs) -> bool:
    """Whether step 4 adds each note's keyword evidence beyond its best section (scoring.with_note_evidence)."""
    return mode == "hybrid" and bool(kq.fts_match) and not legs.multilingual
