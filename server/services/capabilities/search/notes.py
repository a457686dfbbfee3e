"""Sections into notes: the unit of a result page. Pure functions over fused candidates.

Both legs rank sections (a note's `##` parts, a principle's bullets), because a section is what an agent
reads and cites. But a page of sections is mostly a few notes repeated: on a real knowledge base ten hits
held 4.5 notes on average. So search groups the candidates by note:
- a note scores as its best section, so a one-section note (SciFact) ranks exactly as before. Adding a
  share of the note's other matching sections (0.02-0.1 of their scores) gained at most +0.009 nDCG@10 on
  the judged nat-brain questions. What did gain is the note's keyword evidence *beyond* its best section,
  from a word table of whole notes, added after fusion (scoring.with_note_evidence): a note of one section
  has none, so it still ranks as before;
- the note is shown by its best section, with the other matching sections listed; in a principle, a
  section answers rather than one of its bullets when both match;
- notes with identical content (the same title and sections: a copy per locale, a learning saved twice)
  appear once, the later ones listed as duplicates of the first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from oracle_indexer.store.rows import SectionFacts
from oracle_server.services.capabilities.search.scoring import Fused

MAX_LISTED = 5  # other matching sections listed per note (the whole note is one oracle_read away)


@dataclass
class NoteGroup:
    lead: Fused  # the section that answers for the note
    score: float
    others: list[Fused] = field(default_factory=list)  # the note's other matching sections, best first
    duplicates: list[Fused] = field(default_factory=list)  # leads of identical notes folded into this one
    translations: list[Fused] = field(default_factory=list)  # leads of this page in other languages


def _lead(sections: list[Fused], facts: dict[str, SectionFacts]) -> Fused:
    """The best section, unless it is a bullet whose own section also matched: the section answers."""
    best = sections[0]
    parent = facts[best.id].parent_id
    if facts[best.id].kind == "bullet" and parent is not None:
        for item in sections:
            if item.id == parent:
                return item
    return best


def group_notes(fused: list[Fused], facts: dict[str, SectionFacts]) -> list[NoteGroup]:
    """One group per note, in the order of each note's best-placed section: `fused` is already the final
    order (score, then id; a note found through a relation first; a superseded section right after its
    successor's), and sorting the notes again by score undid that placement (successor #1, an unrelated
    note #2, the superseded one #3)."""
    by_note: dict[str, list[Fused]] = {}
    for item in fused:  # fused is best first, so each note's list is too
        by_note.setdefault(facts[item.id].file, []).append(item)
    groups: list[NoteGroup] = []
    for sections in by_note.values():
        lead = _lead(sections, facts)
        others = [s for s in sections if s is not lead]
        groups.append(NoteGroup(lead=lead, score=sections[0].score, others=others[:MAX_LISTED]))
    return groups


def _fold(groups: list[NoteGroup], key_of: Callable[[NoteGroup], str | None],
          into: Callable[[NoteGroup], list[Fused]]) -> list[NoteGroup]:
    """Keep the first group of each key; the later ones' leads go into `into(first)`. A None key folds nothing."""
    first: dict[str, NoteGroup] = {}
    out: list[NoteGroup] = []
    for group in groups:
        key = key_of(group)
        if key is not None and key in first:
            into(first[key]).append(group.lead)
            continue
        if key is not None:
            first[key] = group
        out.append(group)
    return out


def fold_duplicate_notes(groups: list[NoteGroup], facts: dict[str, SectionFacts]) -> list[NoteGroup]:
    """Keep the first of notes with the same content; list the others on it."""
    return _fold(groups, lambda g: facts[g.lead.id].body_hash or f"file:{facts[g.lead.id].file}",
                 lambda g: g.duplicates)


def fold_translations(groups: list[NoteGroup], facts: dict[str, SectionFacts]) -> list[NoteGroup]:
    """Keep the best-placed copy of a page that exists in several languages (the same translation key,
    indexer/notes/language.py); list the others on it. Run after the language preference, the kept copy is the
    one in the asker's language whenever it is among the candidates."""
    return _fold(groups, lambda g: facts[g.lead.id].translation_key, lambda g: g.translations)


def fold_duplicate_sections(fused: list[Fused],
                            facts: dict[str, SectionFacts]) -> tuple[list[Fused], dict[str, list[Fused]]]:
    """Section results: keep the first of sections with the same content hash; return them and, per kept
    id, the sections folded into it."""
    first: dict[str, str] = {}
    folded: dict[str, list[Fused]] = {}
    out: list[Fused] = []
    for item in fused:
        key = facts[item.id].content_hash
        if key in first:
            folded.setdefault(first[key], []).append(item)
            continue
        first[key] = item.id
        out.append(item)
    return out, folded
