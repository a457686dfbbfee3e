"""The notes' own words for a question they answered weakly: what a weak or empty page offers the agent to ask
with next (`try` on the result). Pure functions.

An agent asks in its words; the notes use theirs. When the best matches are weak, the nearest notes still say
how the knowledge base talks about the subject: their concepts (tags and keywords), their section headings and
their titles. Handed back, the agent's next call can use them (issue 37, item 3). Words in the question's script
come first (a Thai question gets the Thai words first), words the question already has are left out, and so are
structural words that head sections of any note ("Context", "Fix") or name note types.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from oracle_indexer.notes.language import script_language, script_shares
from oracle_server.services.capabilities.search.query import STOPWORDS, split_terms

TRY_WORDS = 6  # concepts and heading words offered at most
TRY_PHRASES = 3  # titles and headings offered whole, at most
NEAR_NOTES = 5  # the page's first notes the words come from
MAX_PHRASE_CHARS = 80  # a longer title or heading is not offered whole
MAX_CONCEPT_SHARE = 0.1  # a concept on more than this share of the sections says too little to offer
# Words that name a note's parts or kinds rather than what it is about (never offered; the guide skips them too).
STRUCTURAL_WORDS = frozenset("""context problem solution summary overview background fix fixes lesson lessons
learning learnings retrospective retrospectives retro principle principles pattern patterns note notes session
sessions details detail example examples result results outcome references related next steps todo tags
decision decisions why how what when intro introduction conclusion takeaways takeaway insight insights""".split())
_WORD = re.compile(r"[^\W_][\w.+#-]*[^\W_]|[^\W\d_]")


@dataclass(frozen=True)
class Near:
    """One of the notes nearest to the question (a hit of the weak page), as far as its words go."""

    title: str
    headings: tuple[str, ...]  # its best section's heading, then its other matching sections' headings
    concepts: tuple[str, ...]


def script_of(text: str) -> str | None:
    """The script family a text is written in ("th", "zh", "ja", "latin", ...), or None when it has no letters."""
    return script_language(script_shares(text))


def _question_words(query: str) -> frozenset[str]:
    return frozenset(t.casefold() for t in split_terms(query))


def _structural(text: str) -> bool:
    """A heading or word that names a part of any note ("Context", "What happened", "Fix")."""
    words = [w.casefold() for w in _WORD.findall(text)]
    return not words or all(w in STRUCTURAL_WORDS or w in STOPWORDS for w in words)


def _first_in_script(items: list[str], script: str | None) -> list[str]:
    """Items in the question's script first, each group in its own order."""
    if script is None:
        return items
    return [i for i in items if script_of(i) == script] + [i for i in items if script_of(i) != script]


def try_terms(query: str, near: Sequence[Near], concept_sections: Mapping[str, int], sections: int,
              words: int = TRY_WORDS, phrases: int = TRY_PHRASES) -> list[str]:
    """The words and titles to offer: up to `words` concepts (weighted by 1 / the rank of each near note that
    carries them, times how rare they are among the `sections` of the base: `concept_sections`, concept ->
    sections carrying it), then up to `phrases` titles and headings of the nearest notes, each group in the question's
    script first. Nothing the question already says, nothing structural, no concept on more than
    MAX_CONCEPT_SHARE of the sections, nothing twice. Deterministic: ties
    break by the first note's rank, then the word."""
    said = _question_words(query)
    script = script_of(query)
    weight: dict[str, float] = {}
    first: dict[str, int] = {}
    for rank, note in enumerate(near[:NEAR_NOTES], start=1):
        for concept in dict.fromkeys(c.strip() for c in note.concepts):
            key = concept.casefold()
            if not concept or key in said or key in STRUCTURAL_WORDS or _structural(concept):
                continue
            df = max(concept_sections.get(concept, 1), 1)
            if df > MAX_CONCEPT_SHARE * sections:  # "agent", "git" on a third of an agent's notes
                continue
            weight[concept] = weight.get(concept, 0.0) + math.log((sections + 1) / df) / rank
            first.setdefault(concept, rank)
    ranked = sorted(weight, key=lambda c: (-weight[c], first[c], c))
    chosen_words = _first_in_script(ranked, script)[:words]
    seen = {w.casefold() for w in chosen_words}
    candidates: list[str] = []
    texts = [n.title for n in near[:NEAR_NOTES]] + [h for n in near[:NEAR_NOTES] for h in n.headings]
    for text in texts:  # titles first, then headings, nearest notes first
        text = " ".join(text.split())
        if (text and len(text) <= MAX_PHRASE_CHARS and text.casefold() not in seen and not _structural(text)
                and text.casefold() != query.strip().casefold()):
            seen.add(text.casefold())
            candidates.append(text)
    return chosen_words + _first_in_script(candidates, script)[:phrases]
