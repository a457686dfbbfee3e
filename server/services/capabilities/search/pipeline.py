"""The one search: plan, keyword and vector legs over sections, fusion, adjustments, notes, page.

Every adapter calls `search()`; there is no second scoring path for another transport. If the vector
leg fails (model or store), keyword results come back with a warning instead of an error. Both legs rank
sections; by default the page is made of notes (server/services/capabilities/search/notes.py), and only the page is read
in full.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

# numpy, imported whole here on the thread that builds the server, before any search: the store and the embedder
# import it on first use, and two search threads doing that at once met a partially initialised numpy (ImportError
# in the vector leg, a clean-clone test run). This module loads after the stdio handshake is answered.
import numpy  # noqa: F401

from oracle_indexer.models.embed import MODEL_ID as MINILM_ID
from oracle_indexer.models.embed import EmbeddingUnavailable
from oracle_indexer.models.multilingual import MODEL_ID as MULTILINGUAL_MODEL
from oracle_indexer.models.multilingual import covered_share, wants_multilingual
from oracle_indexer.models.rerank import RerankUnavailable
from oracle_indexer.notes.fields import NoteSelection
from oracle_indexer.notes.language import STRUCTURAL, query_languages
from oracle_indexer.notes.parse import compose_embed_text
from oracle_indexer.store.errors import VectorStoreUnavailable
from oracle_indexer.store.rows import Section, SectionFacts
from oracle_indexer.store.types import Filters
from oracle_indexer.worker.maintenance import searching
from oracle_server.services.capabilities.feedback import note_feedback
from oracle_server.services.capabilities.freshness import fields as freshness_fields
from oracle_server.services.capabilities.freshness import note_staleness, order_by_freshness
from oracle_server.services.capabilities.relations import entry_chunks, stating_files
from oracle_server.services.capabilities.search import expansion, scoring, vocabulary
from oracle_server.services.capabilities.search import variants as variants_module
from oracle_server.services.capabilities.search.notes import (
    fold_duplicate_notes,
    fold_duplicate_sections,
    fold_translations,
    group_notes,
)
from oracle_server.services.capabilities.search.plain import plain_text
from oracle_server.services.capabilities.search.query import (
    KeywordQuery,
    build_keyword_query,
    quote,
    snippet,
    validate_query,
)
from oracle_server.services.capabilities.search.where import resolve_where
from oracle_server.services.capabilities.supersede import successors_for
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.support import guide
from oracle_server.services.vocabulary.errors import OracleError
from oracle_server.services.vocabulary.models import (
    LANG_CODE,
    DuplicateRef,
    Hit,
    MatchedSection,
    ScoreBreakdown,
    SearchMeta,
    SearchRequest,
    SearchResult,
    SupersededBy,
    TranslationRef,
    Triplet,
    past_the_end,
    where_conditions,
)

POOL = 100  # candidates taken from each leg before fusion
NOTE_POOL_FACTOR = 3  # how much the pool widens when a page of notes needs more sections
MAX_POOL = 2_000
# Up to this many keyword matches (sections), the keyword scores of every note the query matches are read while the
# vector leg still runs (_read_beside): 0.3-2.6 ms on nat-brain, where the query matches at most ~4,800 sections
EVERY_NOTE_MAX_MATCHES = 5_000
_LEG_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="oracle-vector-leg")
OVERFETCH = 4  # vector candidates fetched per wanted hit when filters apply after the query


@dataclass
class _Legs:
    fts: list[scoring.LegHit]
    fts_total: int
    vector: list[scoring.LegHit]
    warnings: list[str]
    vector_ok: bool
    multilingual: bool = False  # the vector leg ranked with the multilingual model (indexer/models/multilingual.py)
    main_share: float = 1.0  # the English model's share of the vector leg's similarities (covered_share)
    expanded_with: list[str] = field(default_factory=list)  # words query expansion added (_expand)
    read: _Prefetched | None = None  # step 4's reads made while the vector leg ran (_read_beside)


@dataclass(frozen=True)
class _Plan:
    """Step 1: what to search for and how, read once per search (the index's size included)."""

    request: SearchRequest
    query: str
    kq: KeywordQuery
    filters: Filters
    where_warnings: list[str]
    pool: int  # candidates each leg ranks; widened when a page of notes needs more sections
    sections: int  # sections in the index: the weak-match bar and query expansion both scale with it
    bm25_bar: float
    languages: frozenset[str] | None  # the asker's languages, preferred in the ranking (None: no preference)

    @property
    def wanted(self) -> int:
        return self.request.offset + self.request.limit

    def widened(self) -> _Plan:
        return replace(self, pool=self.pool * NOTE_POOL_FACTOR)


def _plan(oracle: Oracle, request: SearchRequest) -> _Plan:
    """The query checked and turned into keyword expressions, the filters (`where` resolved), the pool."""
    query = validate_query(request.query)
    notes, where_warnings = resolve_where(oracle, where_conditions(request.where))
    sections = oracle.store.chunk_count()
    return _Plan(
        request=request, query=query, kq=build_keyword_query(query), filters=filters_for(request, notes),
        where_warnings=where_warnings, pool=max(POOL, request.offset + request.limit), sections=sections,
        bm25_bar=scoring.weak_bm25(sections),
        languages=None if request.lang else query_languages(query, oracle.store.structural_languages()))


def filters_for(request: SearchRequest, notes: NoteSelection = NoteSelection()) -> Filters:
    """The store's filters for a request; `notes` is its `where` filter resolved
    (server/services/capabilities/search/where.py)."""
    return Filters(
        type=None if request.type == "all" else request.type,
        concepts=tuple(request.concepts),
        project=request.project or None,
        date_from=request.date_from,
        date_to=request.date_to,
        lang=request.lang,
        only_notes=notes.only,
        excluded_notes=notes.excluded,
    )


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


@dataclass
class _Fusion:
    """Step 3's result: one ranked list of candidate sections, and how it was made."""

    fused: list[scoring.Fused]
    mode: str  # the mode actually used (hybrid falls back to fts when the vector leg fails)
    method: str | None  # fusion method (hybrid only)
    weight: float | None  # the vector leg's share in the fusion (hybrid only)
    # What step 4 reads of the candidates before query expansion, read on another thread while it ran (_prefetch)
    prefetched: Future | None = None


@dataclass
class _Prefetched:
    """Step 4's reads made ahead of it (_read_beside, _prefetch): candidates' facts and the keyword scores of their
    notes (None when step 4 does not weigh note evidence, or they were not read)."""

    asked: frozenset[str]  # the section ids looked up (those whose section vanished are not in `facts`)
    facts: dict[str, SectionFacts]
    notes: dict[str, float] | None
    every_note: bool = False  # `notes` holds every note the query matches, not only the candidates'


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


def _weighs_note_evidence(mode: str, kq: KeywordQuery, legs: _Legs) -> bool:
    """Whether step 4 adds each note's keyword evidence beyond its best section (scoring.with_note_evidence)."""
    return mode == "hybrid" and bool(kq.fts_match) and not legs.multilingual


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


def _apply_use(
    oracle: Oracle, fused: list[scoring.Fused], facts: dict[str, SectionFacts]
) -> tuple[list[scoring.Fused], dict[str, tuple[int, int]], dict[str, SupersededBy]]:
    """Feedback verdicts (each note's, on any of its sections) and supersessions adjust relevance within
    stated bounds (server/services/capabilities/search/scoring.py). Returns the re-ranked list, the verdict counts per
    candidate section (its note's) and the supersession pointers of its hits."""
    successors, pointers = successors_for(oracle, facts)
    feedback = _note_verdicts(oracle, [f.id for f in fused], facts)
    return scoring.adjust(fused, feedback, successors), feedback, pointers


def _note_verdicts(oracle: Oracle, ids: list[str], facts: dict[str, SectionFacts]) -> dict[str, tuple[int, int]]:
    """(helpful, misleading) for each of these sections that has any: its note's, a verdict counting for the note."""
    by_note = note_feedback(oracle, (facts[i].file for i in ids))
    return {i: by_note[facts[i].file] for i in ids if facts[i].file in by_note}


def _start_from_relations(
    oracle: Oracle, request: SearchRequest, fused: list[scoring.Fused], facts: dict[str, SectionFacts],
    filters: Filters, warnings: list[str],
) -> tuple[list[scoring.Fused], dict[str, list[Triplet]], list[str]]:
    """Notes stating a matching triplet lead (their best-ranked chunk, else their first chunk), in fused
    order; text and vector results follow. A note found only through its relation scores as high as the
    best text match (it states exactly what was asked), never 0. Returns (order, file -> matched
    triplets, ids added)."""
    pattern = request.relation_pattern
    assert pattern is not None
    stating = stating_files(oracle, pattern)
    if not stating:
        shown = ", ".join(f"{k}={v!r}" for k, v in zip(("subject", "predicate", "object"), pattern) if v)
        warnings.append(f"no note states a relation matching {shown}; showing text and vector results")
        return fused, {}, []
    lead: dict[str, scoring.Fused] = {}
    for item in fused:
        file = facts[item.id].file
        if file in stating and file not in lead:
            lead[file] = item
    entries = entry_chunks(oracle, [f for f in stating if f not in lead], filters)
    facts.update(oracle.store.section_facts(sorted(entries.values())))
    # A stated relation is worth the best text match: relation-only notes score that, notes matching both
    # add it to their own score. Scores then fall monotonically down the page with the leaders on top.
    top = max((item.score for item in fused), default=1.0) or 1.0
    added = [scoring.Fused(entries[f], top, relevance=top) for f in sorted(entries)]
    leaders = list(lead.values())
    for item in leaders:
        item.score = round(item.score + top, scoring.SCORE_DECIMALS)
    leaders += added
    for item in leaders:
        item.found_by = ["relation", *item.found_by]
    ids = {item.id for item in leaders}
    return leaders + [item for item in fused if item.id not in ids], stating, [item.id for item in added]


def _hit(item: scoring.Fused, score: float, doc: Section, kq: KeywordQuery, use: _Use, others: list[scoring.Fused],
         duplicates: list[scoring.Fused], facts: dict[str, SectionFacts], weak: bool,
         translations: list[scoring.Fused], rerank: float | None = None) -> Hit:
    terms = kq.terms + kq.unsegmented
    feedback = use.feedback.get(item.id, (0, 0))
    return Hit(
        id=item.id,
        type=doc.type,
        kind=doc.kind,
        title=doc.title,
        heading=doc.heading,
        snippet=snippet(plain_text(doc.content), terms),
        source_file=doc.file,
        line_start=doc.line_start,
        line_end=doc.line_end,
        concepts=list(doc.concepts),
        project=doc.project,
        date=doc.date,
        content_hash=doc.content_hash,
        score=score,
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
            language_factor=item.language_factor,
            expansion_score=item.expansion_score,
            rerank_score=rerank,
        ),
        also_in_file=[o.id for o in others],
        sections=[
            MatchedSection(id=o.id, heading=facts[o.id].heading or "", line_start=facts[o.id].line_start,
                           line_end=facts[o.id].line_end, score=o.score)
            for o in others
        ],
        duplicates=[DuplicateRef(id=d.id, source_file=facts[d.id].file) for d in duplicates],
        weak=weak,
        superseded_by=use.pointers.get(item.id),
        relations=use.stating.get(doc.file, []) if "relation" in item.found_by else [],
        lang=facts[item.id].lang,
        translations=[TranslationRef(id=t.id, source_file=facts[t.id].file, lang=facts[t.id].lang)
                      for t in translations],
    )


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


@dataclass
class _Use:
    """What use of the knowledge base adds to a hit: verdicts, supersession pointers, stated relations."""

    feedback: dict[str, tuple[int, int]]
    pointers: dict[str, SupersededBy]
    stating: dict[str, list[Triplet]]


@dataclass
class _Entry:
    """One hit of a page before it is hydrated: its leading section, score, listed sections, duplicates."""

    lead: scoring.Fused
    score: float
    others: list[scoring.Fused]
    duplicates: list[scoring.Fused]
    translations: list[scoring.Fused]
    rerank: float | None = None  # the cross-encoder's score, when one reordered this entry (_rerank)


def _entries(fused: list[scoring.Fused], facts: dict[str, SectionFacts], by_note: bool,
             languages: frozenset[str] | None) -> list[_Entry]:
    """The result list in the unit asked for: notes (grouped, identical notes folded, and, when the query's
    language is preferred, a page's translations folded under it) or sections (identical sections folded)."""
    if by_note:
        groups = fold_duplicate_notes(group_notes(fused, facts), facts)
        if languages:
            groups = fold_translations(groups, facts)
        return [_Entry(g.lead, g.score, g.others, g.duplicates, g.translations) for g in groups]
    kept, folded = fold_duplicate_sections(fused, facts)
    return [_Entry(item, item.score, [], folded.get(item.id, []), []) for item in kept]


def _prefer_languages(fused: list[scoring.Fused], facts: dict[str, SectionFacts],
                      languages: frozenset[str] | None) -> list[scoring.Fused]:
    """Notes whose frontmatter or folder puts them in another language than the query's score lower."""
    if not languages:
        return fused
    lang_of = {f.id: facts[f.id].lang if facts[f.id].lang_from in STRUCTURAL else None for f in fused}
    return scoring.prefer_languages(fused, lang_of, languages)


@dataclass
class _Adjusted:
    """Step 4's result: the candidates re-ranked by what else is known of them, with those facts."""

    fused: list[scoring.Fused]
    facts: dict[str, SectionFacts]  # file, lines, language, ... of every candidate section
    use: _Use
    added: list[str]  # sections only a stated relation brought in


def _adjust(oracle: Oracle, plan: _Plan, legs: _Legs, fusion: _Fusion) -> _Adjusted:
    """Step 4: candidates whose section vanished are dropped, then the score moves within stated bounds by
    each note's keyword evidence beyond its best section (hybrid), the asker's language, feedback verdicts and
    supersessions (server/services/capabilities/search/scoring.py); notes stating a matching relation lead."""
    request, kq = plan.request, plan.kq
    early = fusion.prefetched.result() if fusion.prefetched else legs.read
    ids = [f.id for f in fusion.fused]
    if early is None:
        facts = oracle.store.section_facts(ids)
    else:  # only the sections read early did not cover (those query expansion added) are left to read
        read = {**early.facts, **oracle.store.section_facts([i for i in ids if i not in early.asked])}
        facts = {i: read[i] for i in ids if i in read}
    fused = [f for f in fusion.fused if f.id in facts]  # a vector whose chunk vanished is not a result
    if _weighs_note_evidence(fusion.mode, kq, legs):
        note_of = {f.id: facts[f.id].file for f in fused}
        notes = _note_scores(oracle, kq, set(note_of.values()), early)
        fused = scoring.with_note_evidence(fused, note_of, notes)
    fused = _prefer_languages(fused, facts, plan.languages)  # before supersession places hits by position
    fused, feedback, pointers = _apply_use(oracle, fused, facts)
    use = _Use(feedback, pointers, {})
    added: list[str] = []
    if request.relation_pattern:
        fused, use.stating, added = _start_from_relations(oracle, request, fused, facts, plan.filters,
                                                          legs.warnings)
        if added:  # notes that only the relation found: their pointers and verdicts too
            pointers.update(successors_for(oracle, {i: facts[i] for i in added})[1])
            feedback.update(_note_verdicts(oracle, added, facts))
    return _Adjusted(fused, facts, use, added)


def _note_scores(oracle: Oracle, kq: KeywordQuery, files: set[str], early: _Prefetched | None) -> dict[str, float]:
    """The keyword scores of these notes as whole notes (store.note_keyword_scores), those read early reused: a
    note's score does not depend on which other notes are asked about, and the best of exactly these notes is what
    scales them (scoring.with_note_evidence), so the early ones are kept only for these notes."""
    if early is None or early.notes is None:
        return oracle.store.note_keyword_scores(kq.fts_match, sorted(files))
    scores = {path: score for path, score in early.notes.items() if path in files}
    if early.every_note:
        return scores
    asked = {facts.file for facts in early.facts.values()}
    missing = files - asked
    if missing:
        scores.update(oracle.store.note_keyword_scores(kq.fts_match, sorted(missing)))
    return scores


def _group(oracle: Oracle, plan: _Plan, legs: _Legs, fusion: _Fusion, adjusted: _Adjusted) -> tuple[list[_Entry], int]:
    """Step 5: the result list in the unit asked for (notes or sections, copies folded), ordered or filtered by
    freshness when asked, and how many results there are in all."""
    request, facts = plan.request, adjusted.facts
    entries = _entries(adjusted.fused, facts, request.by_note, plan.languages)
    entries, dropped = order_by_freshness(oracle, entries, lambda e: facts[e.lead.id].file,
                                          prefer=request.prefer_fresh, only=request.fresh_only)
    if request.by_note:  # the distinct notes among the candidates of both legs that really match
        if fusion.mode == "vector":
            return entries, len(entries)
        bar = _bar(oracle, plan, legs)
        return entries, sum(1 for e in entries if _really_matches(e, bar))
    # Sections: every match (see _total), and the sections only a stated relation brought in.
    return entries, _total(oracle, plan, fusion.mode, legs) + len(adjusted.added) - dropped


@dataclass
class _Ranked:
    """Steps 2-5 for one pool: the legs, the fusion, the candidates' facts and the grouped result list."""

    legs: _Legs
    fusion: _Fusion
    facts: dict[str, SectionFacts]
    entries: list[_Entry]
    total: int
    use: _Use


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


def _well_covered(oracle: Oracle, kq: KeywordQuery, page: list[_Entry], bar: scoring.Bar) -> set[str]:
    """Leads (among those the legs call weak) that hold most of the query's words (scoring.COVERAGE), the
    keyword evidence that does not depend on the index's size. Unsegmented terms (trigram) are not counted."""
    unsure = [e.lead.id for e in page if scoring.is_weak(e.lead, bar=bar)]
    if not kq.terms or not unsure:
        return set()
    counts = oracle.store.terms_matched([quote(t) for t in kq.terms], unsure)
    return {i for i, n in counts.items() if scoring.covers(n, len(kq.terms) + len(kq.unsegmented))}


def _script_note() -> str:
    """What a query mostly in other scripts (Thai, CJK, ...) got from the vector leg of an index without multilingual
    vectors (with them, stats says once how such queries are ranked: services/stats.py scripts_note)."""
    return ("most of this query is in a script the embedding model does not read (it learned English) and this "
            "index has no multilingual vectors (ORACLE_MULTILINGUAL, indexer/models/multilingual.py): its semantic "
            "matches come from the query's other words, its keyword matches from the words themselves")


def _hydrate(oracle: Oracle, entries: list[_Entry], limit: int) -> tuple[list[_Entry], dict[str, Section], int]:
    """(page, its sections by id, how many entries vanished): the first `limit` entries whose sections are
    still in the index.

    Ranking and reading the page are two reads; another writer (a learn, the watcher) may re-index or remove
    a note in between. Such an entry is dropped and the next one takes its place: one note changed under a
    search must not turn the whole search (or the learn that ran it) into an error."""
    page: list[_Entry] = []
    docs: dict[str, Section] = {}
    vanished = 0
    rest = entries
    while rest and len(page) < limit:
        batch, rest = rest[: limit - len(page)], rest[limit - len(page) :]
        found = oracle.store.sections_by_id([e.lead.id for e in batch])
        for entry in batch:
            if entry.lead.id in found:
                page.append(entry)
                docs[entry.lead.id] = found[entry.lead.id]
            else:
                vanished += 1
    return page, docs, vanished


@dataclass
class _Page:
    """Step 6: the page's hits, read in full, and how many entries vanished while the search ran."""

    hits: list[Hit]
    vanished: int


def _weak_leads(oracle: Oracle, plan: _Plan, ranked: _Ranked, entries: list[_Entry]) -> dict[str, bool]:
    """Which of these entries are weak matches for this plan's question: the lead below both legs' bars unless it
    holds most of the question's words (_well_covered), and every other section of its note below them too."""
    bar = _bar(oracle, plan, ranked.legs)
    complete = _well_covered(oracle, plan.kq, entries, bar)
    return {e.lead.id: scoring.is_weak(e.lead, e.lead.id in complete, bar)
            and all(scoring.is_weak(s, bar=bar) for s in e.others) for e in entries}


def _fresh(oracle: Oracle, hits: list[Hit]) -> list[Hit]:
    """The hits with how fresh their notes are (server/services/capabilities/freshness.py)."""
    fresh = note_staleness(oracle, {h.source_file for h in hits})
    return [h.model_copy(update=freshness_fields(fresh.get(h.source_file))) for h in hits]


def _page(oracle: Oracle, plan: _Plan, ranked: _Ranked) -> _Page:
    """Step 6: only the page is read in full; each hit says whether it is a weak match and how fresh it is."""
    entries, docs, vanished = _hydrate(oracle, ranked.entries[plan.request.offset :], plan.request.limit)
    weak = _weak_leads(oracle, plan, ranked, entries)
    hits = [_hit(e.lead, e.score, docs[e.lead.id], plan.kq, ranked.use, e.others, e.duplicates, ranked.facts,
                 weak[e.lead.id], e.translations, e.rerank) for e in entries]
    return _Page(_fresh(oracle, hits), vanished)


def _ranking_warnings(oracle: Oracle, plan: _Plan, ranked: _Ranked) -> list[str]:
    """What the caller should know about how this plan was ranked, in the order the steps met it."""
    query, legs = plan.query, ranked.legs
    warnings = plan.where_warnings + legs.warnings
    # A query in another script ranked by the multilingual model is answered as well as any: that is said once, in
    # stats (EmbeddingCounts.scripts) and meta.semantic_model, not on every answer (issue 40). Without multilingual
    # vectors its semantic leg is blind, which each such answer says.
    if (ranked.fusion.mode in ("hybrid", "vector") and wants_multilingual(query) and legs.vector_ok
            and not oracle.embedder.multilingual and not legs.multilingual):
        warnings.append(_script_note())
    return warnings


def _page_warnings(request: SearchRequest, total: int, page: _Page, weak: bool) -> list[str]:
    """What the caller should know about the page itself."""
    warnings = []
    if page.hits and weak:
        warnings.append("no strong match: the best results are only loosely related to the query")
    if page.vanished:
        warnings.append(f"{page.vanished} result(s) left out: their notes were re-indexed or removed while this"
                        " search ran")
    if not page.hits and total:
        warnings.append(past_the_end(request.offset, total, request.limit))
    return warnings


@dataclass
class _Question:
    """One question ranked (steps 1-5b): its plan, its ranking and the reranker that reordered it, if any."""

    plan: _Plan
    ranked: _Ranked
    reranked_by: str | None


def _ranked_question(oracle: Oracle, request: SearchRequest) -> _Question:
    """plan -> rank (legs -> fuse -> adjust -> group), again with a wider pool while a page of notes needs it
    -> rerank (when configured)."""
    plan = _plan(oracle, request)
    ranked = _rank(oracle, plan)
    while _wants_wider_pool(plan, ranked):
        plan = plan.widened()
        ranked = _rank(oracle, plan)
    return _Question(plan, ranked, _rerank(oracle, plan, ranked))


def _meta(oracle: Oracle, question: _Question, took_ms: float, weak: bool, warnings: list[str]) -> SearchMeta:
    """The answer's meta: how the question was ranked."""
    plan, fusion, legs = question.plan, question.ranked.fusion, question.ranked.legs
    return SearchMeta(
        mode=fusion.mode,
        fusion=fusion.method,
        took_ms=took_ms,
        fts_matches=legs.fts_total,
        vector_matches=len(legs.vector),
        unit="note" if plan.request.by_note else "section",
        semantic_weight=fusion.weight,
        semantic_model=(MULTILINGUAL_MODEL if legs.multilingual else oracle.embedder.model_id)
        if fusion.mode != "fts" else None,
        weak=weak,
        languages=sorted(plan.languages) if plan.languages else None,
        expanded_with=legs.expanded_with,
        reranked_by=question.reranked_by,
        warnings=warnings,
    )


EMPTY_INDEX = ("the index is empty: run `oracle index` (or `oracle stats` to see what the knowledge root holds and"
               " what is not indexed)")


def _languages_present(oracle: Oracle) -> dict[str, int]:
    """Language -> notes, for the languages known (stated or recognised from the text)."""
    return {lang: n for lang, n in oracle.store.note_languages().items() if lang != "unknown"}


def _languages_named(oracle: Oracle) -> str:
    present = _languages_present(oracle)
    return ", ".join(f"{lang} ({n})" for lang, n in sorted(present.items(), key=lambda kv: (-kv[1], kv[0]))) \
        or "no language yet (the index is empty or its notes too short to tell)"


def check_lang(oracle: Oracle, request: SearchRequest) -> None:
    """A `lang` that is no language code is refused, naming the form and the languages present (issue 40:
    `--lang thai` answered with a raw regex)."""
    if request.lang and not LANG_CODE.fullmatch(request.lang):
        raise OracleError("invalid", f"lang {request.lang!r} is not a language code: use ISO 639-1, two letters with"
                          f" an optional region (en, th, ja, zh-TW); the notes are in {_languages_named(oracle)}")


def _empty_warnings(oracle: Oracle, request: SearchRequest, total: int) -> list[str]:
    """Nothing at all: say why when the cause is the index or the language filter, not the words (issue 40)."""
    if total:
        return []
    if oracle.store.note_count() == 0:
        return [EMPTY_INDEX]
    if request.lang and request.lang not in _languages_present(oracle):
        return [f"no notes in language {request.lang!r}; the notes are in {_languages_named(oracle)}"]
    return []


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


def _phrasings_held(oracle: Oracle, terms: list[tuple[str, ...]], hits: list[Hit]) -> dict[str, list[int]]:
    """For each hit, the phrasings most of whose words its lead section or one of its listed sections holds
    (variants.holding): one read per phrasing, over the page's sections only."""
    ids = sorted({i for h in hits for i in (h.id, *h.also_in_file)})
    matched: dict[str, dict[int, int]] = {h.id: {} for h in hits}
    for index, words in enumerate(terms):
        counts = oracle.store.terms_matched([quote(t) for t in words], ids) if words and ids else {}
        for h in hits:
            matched[h.id][index] = max((counts.get(i, 0) for i in (h.id, *h.also_in_file)), default=0)
    return {h.id: variants_module.holding(terms, matched[h.id]) for h in hits}


def _vocabulary(oracle: Oracle, plan: _Plan, page: _Page) -> list[str]:
    """A weak page's words to try next (server/services/capabilities/search/vocabulary.py): from its first notes'
    concepts, titles and headings; an empty one's from the base's main concepts (server/services/support/guide.py)."""
    if not page.hits:
        return guide.main_concepts(oracle, vocabulary.TRY_WORDS)
    return words_to_try(oracle, plan.query, page.hits, plan.sections)


def words_to_try(oracle: Oracle, query: str, hits: list[Hit], sections: int) -> list[str]:
    """The words and titles of these hits' notes to ask `query` with next (vocabulary.try_terms), how common each
    concept is read from the index. Public for benchmarks/try_rounds.py, which offers them on every page."""
    near = [vocabulary.Near(title=h.title,
                            headings=tuple(x for x in (h.heading, *(s.heading for s in h.sections)) if x),
                            concepts=tuple(h.concepts)) for h in hits[: vocabulary.NEAR_NOTES]]
    df = oracle.store.concept_sections([c for n in near for c in n.concepts])
    return vocabulary.try_terms(query, near, df, sections)
