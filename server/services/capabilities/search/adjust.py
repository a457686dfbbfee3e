"""What use and the notes add to fused relevance: feedback, supersession, relations, languages, note evidence;
then sections grouped into notes.
"""

from __future__ import annotations

from oracle_indexer.notes.language import STRUCTURAL
from oracle_indexer.store.rows import SectionFacts
from oracle_indexer.store.types import Filters
from oracle_server.services.capabilities.feedback import note_feedback
from oracle_server.services.capabilities.freshness import order_by_freshness
from oracle_server.services.capabilities.relations import entry_chunks, stating_files
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.capabilities.search.fusion import _bar, _really_matches, _total
from oracle_server.services.capabilities.search.legs import _weighs_note_evidence
from oracle_server.services.capabilities.search.notes import (
    fold_duplicate_notes,
    fold_duplicate_sections,
    fold_translations,
    group_notes,
)
from oracle_server.services.capabilities.search.plan import _Adjusted, _Entry, _Fusion, _Legs, _Plan, _Prefetched, _Use
from oracle_server.services.capabilities.search.query import (
    KeywordQuery,
)
from oracle_server.services.capabilities.supersede import successors_for
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.models import (
    SearchRequest,
    SupersededBy,
    Triplet,
)


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
