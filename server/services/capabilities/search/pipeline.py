"""The one search, its entry points first: `search` (logged) and `run_search`; then the order of its phases, each in
its own module: plan.py (the plan and what each phase hands the next), legs.py (keyword and vector legs, side by
side), fusion.py (fusion, query expansion, the bar), adjust.py (use, supersession, languages, note evidence; sections
grouped into notes), page.py (the page read in full, its hits, warnings and meta).

Every adapter calls `search()`; there is no second scoring path for another transport. If the vector
leg fails (model or store), keyword results come back with a warning instead of an error. Both legs rank
sections; by default the page is made of notes (server/services/capabilities/search/notes.py), and only the page is read
in full.
"""

from __future__ import annotations

import time

# numpy, imported whole here on the thread that builds the server, before any search: the store and the embedder
# import it on first use, and two search threads doing that at once met a partially initialised numpy (ImportError
# in the vector leg, a clean-clone test run). This module loads after the stdio handshake is answered.
import numpy  # noqa: F401

from oracle_indexer.models.rerank import RerankUnavailable
from oracle_indexer.notes.parse import compose_embed_text
from oracle_indexer.worker.maintenance import searching
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.capabilities.search import variants as variants_module
from oracle_server.services.capabilities.search.adjust import _adjust, _group
from oracle_server.services.capabilities.search.fusion import _fuse
from oracle_server.services.capabilities.search.legs import _run_legs
from oracle_server.services.capabilities.search.page import (
    _meta,
    _page,
    _page_warnings,
    _phrasings_held,
    _ranking_warnings,
    _vocabulary,
    words_to_try,
)
from oracle_server.services.capabilities.search.plan import MAX_POOL, _Plan, _plan, _Question, _Ranked, filters_for
from oracle_server.services.capabilities.search.query import (
    build_keyword_query,
    validate_query,
)
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import OracleError
from oracle_server.services.vocabulary.models import (
    LANG_CODE,
    SearchRequest,
    SearchResult,
)

__all__ = ["EMPTY_INDEX", "check_lang", "filters_for", "run_search", "search", "words_to_try"]


def search(oracle: Oracle, request: SearchRequest, client: str = "cli", tool: str = "search") -> SearchResult:
    """Search and record it in the search log (query, parameters, results, latency, and whether it was a
    cold start: the model loaded for it)."""
    cold = request.mode != "fts" and not oracle.embedder.loaded
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
        cold=cold,
    )
    return result


def run_search(oracle: Oracle, request: SearchRequest) -> SearchResult:
    """Retrieval only, unlogged: the building block for search and consult. Reads as its steps:

    plan -> rank (legs -> fuse -> adjust -> group), again with a wider pool while a page of notes needs it
    -> page (only the page is read in full) -> result. With `variants`, the query and its variants are searched
    as one question (_run_phrasings)."""
    check_lang(oracle, request)
    if request.variants:
        phrasings = variants_module.distinct_phrasings(request.query, request.variants)
        if len(phrasings) > 1:
            return _run_phrasings(oracle, request, phrasings)
        request = request.model_copy(update={"variants": []})  # every variant repeats the query: the plain search
    started = time.perf_counter()
    with searching():  # the background warm-up waits for a quiet moment (indexer/worker/maintenance.py)
        ranked_question = _ranked_question(oracle, request)
        page = _page(oracle, ranked_question.plan, ranked_question.ranked)
    plan, ranked = ranked_question.plan, ranked_question.ranked
    weak = not page.hits or all(h.weak for h in page.hits)
    offer = _vocabulary(oracle, plan, page) if weak and (page.hits or not ranked.total) else []
    warnings = (_ranking_warnings(oracle, plan, ranked) + _page_warnings(request, ranked.total, page, weak)
                + _empty_warnings(oracle, request, ranked.total))
    return SearchResult(query=plan.query, hits=page.hits, total=ranked.total, limit=request.limit,
                        offset=request.offset, try_=offer,
                        meta=_meta(oracle, ranked_question, round((time.perf_counter() - started) * 1000, 2), weak,
                                   warnings))


def _run_phrasings(oracle: Oracle, request: SearchRequest, phrasings: list[str]) -> SearchResult:
    """The query and its distinct variants searched as one question (variants.joined), then each hit told which
    phrasings' words it holds. The answer names the query as asked."""
    result = run_search(oracle, request.model_copy(update={"query": variants_module.joined(phrasings),
                                                            "variants": []}))
    terms = [build_keyword_query(p).terms for p in phrasings]
    held = _phrasings_held(oracle, terms, result.hits)
    return result.model_copy(update={
        "query": validate_query(request.query),
        "hits": [h.model_copy(update={"phrasings": held[h.id]}) for h in result.hits],
        "meta": result.meta.model_copy(update={"phrasings": len(phrasings)}),
    })


def _ranked_question(oracle: Oracle, request: SearchRequest) -> _Question:
    """plan -> rank (legs -> fuse -> adjust -> group), again with a wider pool while a page of notes needs it
    -> rerank (when configured)."""
    plan = _plan(oracle, request)
    ranked = _rank(oracle, plan)
    while _wants_wider_pool(plan, ranked):
        plan = plan.widened()
        ranked = _rank(oracle, plan)
    return _Question(plan, ranked, _rerank(oracle, plan, ranked))


def _rank(oracle: Oracle, plan: _Plan) -> _Ranked:
    """legs -> fuse -> adjust -> group, for the plan's pool."""
    legs = _run_legs(oracle, plan)
    fusion = _fuse(oracle, plan, legs)
    adjusted = _adjust(oracle, plan, legs, fusion)
    entries, total = _group(oracle, plan, legs, fusion, adjusted)
    return _Ranked(legs, fusion, adjusted.facts, entries, total, adjusted.use)


def _wants_wider_pool(plan: _Plan, ranked: _Ranked) -> bool:
    """A page of notes can need more sections than the pool holds (several sections per note): widen it while
    a leg filled the pool and the notes found do not fill the page. The first pool is the same as for
    sections, so a knowledge base of one-section notes ranks exactly as with sections."""
    return (plan.request.by_note and len(ranked.entries) < plan.wanted and plan.pool < MAX_POOL
            and max(len(ranked.legs.fts), len(ranked.legs.vector)) >= plan.pool)


def _rerank(oracle: Oracle, plan: _Plan, ranked: _Ranked) -> str | None:
    """Step 5b, only with `[rerank]` configured: a cross-encoder reads the question with each of the first
    `top` results (its leading section, titled as the embedding model sees it) and its scores are blended
    with the fused order (scoring.blend_rerank). The first `top` are reordered whatever the page's offset,
    so pages stay consistent. Returns the reranker's id, or None when none ran (a failure is a warning and
    keeps the fused order)."""
    reranker = oracle.reranker
    if reranker is None or len(ranked.entries) < 2:
        return None
    head = ranked.entries[: reranker.spec.top]
    docs = oracle.store.sections_by_id([e.lead.id for e in head])
    present = [e for e in head if e.lead.id in docs]  # a note re-indexed meanwhile: _hydrate drops it later
    try:
        judged = reranker.score(plan.query, [compose_embed_text(docs[e.lead.id].title, docs[e.lead.id].heading,
                                                                docs[e.lead.id].content) for e in present])
        model_id = reranker.model_id
    except RerankUnavailable as exc:
        ranked.legs.warnings.append(f"reranker unavailable, results keep the fused order: {exc}")
        return None
    order = scoring.blend_rerank([e.score for e in present], judged, reranker.spec.weight)
    reordered = []
    for index, score in order:
        entry = present[index]
        entry.score, entry.rerank = score, round(judged[index], scoring.SCORE_DECIMALS)
        reordered.append(entry)
    ranked.entries[: len(head)] = reordered + [e for e in head if e.lead.id not in docs]
    return model_id


def check_lang(oracle: Oracle, request: SearchRequest) -> None:
    """A `lang` that is no language code is refused, naming the form and the languages present (issue 40:
    `--lang thai` answered with a raw regex)."""
    if request.lang and not LANG_CODE.fullmatch(request.lang):
        raise OracleError("invalid", f"lang {request.lang!r} is not a language code: use ISO 639-1, two letters with"
                          f" an optional region (en, th, ja, zh-TW); the notes are in {_languages_named(oracle)}")


EMPTY_INDEX = ("the index is empty: run `oracle index` (or `oracle stats` to see what the knowledge root holds and"
               " what is not indexed)")


def _languages_present(oracle: Oracle) -> dict[str, int]:
    """Language -> notes, for the languages known (stated or recognised from the text)."""
    return {lang: n for lang, n in oracle.store.note_languages().items() if lang != "unknown"}


def _languages_named(oracle: Oracle) -> str:
    present = _languages_present(oracle)
    return ", ".join(f"{lang} ({n})" for lang, n in sorted(present.items(), key=lambda kv: (-kv[1], kv[0]))) \
        or "no language yet (the index is empty or its notes too short to tell)"


def _empty_warnings(oracle: Oracle, request: SearchRequest, total: int) -> list[str]:
    """Nothing at all: say why when the cause is the index or the language filter, not the words (issue 40)."""
    if total:
        return []
    if oracle.store.note_count() == 0:
        return [EMPTY_INDEX]
    if request.lang and request.lang not in _languages_present(oracle):
        return [f"no notes in language {request.lang!r}; the notes are in {_languages_named(oracle)}"]
    return []
