"""The page: the ranked entries read in full, each a Hit with its flags (weak, stale, superseded), the
warnings and meta an answer carries, and the words to try next.
"""

from __future__ import annotations

from oracle_indexer.models.multilingual import MODEL_ID as MULTILINGUAL_MODEL
from oracle_indexer.models.multilingual import wants_multilingual
from oracle_indexer.store.rows import Section, SectionFacts
from oracle_server.services.capabilities.freshness import fields as freshness_fields
from oracle_server.services.capabilities.freshness import note_staleness
from oracle_server.services.capabilities.search import scoring, vocabulary
from oracle_server.services.capabilities.search import variants as variants_module
from oracle_server.services.capabilities.search.fusion import _bar
from oracle_server.services.capabilities.search.plain import plain_text
from oracle_server.services.capabilities.search.plan import _Entry, _Page, _Plan, _Question, _Ranked, _Use
from oracle_server.services.capabilities.search.query import (
    KeywordQuery,
    quote,
    snippet,
)
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.support import guide
from oracle_server.services.vocabulary.models import (
    DuplicateRef,
    Hit,
    MatchedSection,
    ScoreBreakdown,
    SearchMeta,
    SearchRequest,
    TranslationRef,
    past_the_end,
)


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
