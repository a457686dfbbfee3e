"""Query expansion from the first ranking's best notes (pseudo-relevance feedback). Pure functions.

People ask in their own words: "a button that puts a snippet into the paste buffer" for a note on
`navigator.clipboard.writeText`. The keyword leg cannot match words the question does not use, but the first
ranking (both legs fused) often has the right note, or its sibling, near the top. The words that are frequent in
those few sections and rare in the index ("clipboard", "writetext") are the note's own vocabulary for the
question's meaning; a second keyword query with them finds the notes that share it: the learning beside its
session retrospective, the page a paraphrase missed.

The search (server/services/capabilities/search/fusion.py `_expand`) takes the top EXPANSION_SOURCES sections of the
fused ranking (but for those only generic words put above a section holding a near-unique word of the question:
`on_topic_sources`), picks
EXPANSION_TERMS words here, runs the keyword leg again with these words alone, and mixes that ranking into the
keyword part of the fused score (scoring.with_expansion).

Measured with the keyword floor (scoring.keyword_floor), hybrid nDCG@10 (benchmarks/sets.py, benchmarks/HISTORY.md
"Natural questions: expansion"): our natural-phrasing set 0.546 -> 0.604 (33 wins, 10 losses of 67; Thai 0.443
-> 0.516), the judged nat-brain set 0.821 -> 0.865 (38 wins, 6 losses; Thai 0.700 -> 0.767), SciFact train
0.741 -> 0.740 (63 wins, 70 losses of 809). Rejected on the same sets: sources from the vector leg alone
(SciFact -0.014), the question's words repeated in the second query (SciFact -0.002, twice the cost), Thai
words as expansion words (no change), a Rocchio step on the query vector (SciFact -0.005); 2-5 sources,
5-20 words and a share of 0.35-0.65 lie on one plateau.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from oracle_indexer.notes.segment import has_cjk, is_thai_char
from oracle_server.services.capabilities.search.query import STOPWORDS

EXPANSION_SOURCES = 3  # sections of the first ranking the words come from
NEAR_UNIQUE = 3  # a question word in at most this many sections names its subject (an error code, a name)
VECTOR_BACKING = 10  # a section the vector leg ranks this high is on topic whatever words it shares
EXPANSION_TERMS = 10  # words added to the question's
CANDIDATES_PER_TERM = 4  # words scored by frequency before their document counts are read
EXPANSION_SHARE = 0.5  # the expansion ranking's share of the keyword part of the fused score
MAX_DOCUMENT_SHARE = 0.1  # a word in more than this share of the sections says too little to add
MIN_TERM_CHARS = 3
MAX_SOURCE_CHARS = 20_000  # of each source section: a long retrospective's words past this add time, not sense
_LETTERS = re.compile(r"[^\W\d_]+")  # runs of letters (a word with digits, "v2", splits at them)


def section_words(text: str) -> list[str]:
    """The words of a section that can expand a query: alphabetic words of spaced scripts (Latin, Greek,
    Cyrillic, ...), at least MIN_TERM_CHARS letters, no stop words. Thai and CJK runs are left out: their words
    come from a segmenter or character pairs, and a run taken whole would match nothing."""
    return [w for w in _LETTERS.findall(text[:MAX_SOURCE_CHARS].casefold())
            if len(w) >= MIN_TERM_CHARS and w not in STOPWORDS and not is_thai_char(w[0]) and not has_cjk(w)]


def word_weights(texts: Sequence[str], exclude: frozenset[str]) -> dict[str, float]:
    """Each word's share of its section's words, summed over the sections with a weight of 1 / rank (the first
    ranking's best section counts most)."""
    weight: dict[str, float] = {}
    for rank, text in enumerate(texts, start=1):
        words = section_words(text)
        for word, count in Counter(words).items():
            if word not in exclude:
                weight[word] = weight.get(word, 0.0) + count / len(words) / rank
    return weight


def candidate_words(weight: Mapping[str, float], limit: int = EXPANSION_TERMS * CANDIDATES_PER_TERM) -> list[str]:
    """The heaviest words of `weight` (word_weights), ties by word: those whose document counts the caller
    reads for `expansion_terms`."""
    return [word for word, _ in sorted(weight.items(), key=lambda p: (-p[1], p[0]))[:limit]]


def most_sections(sections: int) -> int:
    """The most sections (of `sections`) a word may be in and still expand a query (MAX_DOCUMENT_SHARE)."""
    return int(MAX_DOCUMENT_SHARE * sections)


def expansion_terms(weight: Mapping[str, float], document_count: Mapping[str, int], sections: int,
                    limit: int = EXPANSION_TERMS) -> tuple[str, ...]:
    """The words to add to a query, best first: among the candidate words (frequent in the first ranking's best
    sections, `weight`), those rare in the index (`document_count`: word -> sections holding it, of
    `sections`), scored as frequency x idf. A word in one section only (the source itself) or in more than
    MAX_DOCUMENT_SHARE of them is skipped. Deterministic: ties break by frequency rank, hence by the word."""
    scored = []
    for rank, word in enumerate(candidate_words(weight, limit * CANDIDATES_PER_TERM)):
        count = document_count.get(word, 0)
        if 2 <= count <= most_sections(sections):
            scored.append((-weight[word] * math.log(sections / count), rank, word))
    return tuple(word for _, _, word in sorted(scored)[:limit])


def near_unique_terms(document_count: Mapping[str, int]) -> frozenset[str]:
    """The question's words that the index holds in at most NEAR_UNIQUE sections: `502` in "users see 502 errors
    every time we roll out a new version", a tool's or a person's name. A section holding one shares the
    question's subject, whatever else it shares."""
    return frozenset(t for t, n in document_count.items() if 1 <= n <= NEAR_UNIQUE)


def on_topic_sources(ranked: Sequence[tuple[str, bool]], holding: frozenset[str],
                     limit: int = EXPANSION_SOURCES) -> list[str]:
    """The sections whose words expand the query, from the first ranking's best (`ranked`: id, whether only
    shared words back it, i.e. the keyword leg matched it and the vector leg did not rank it among its first
    VECTOR_BACKING). As a rule the first `limit`. When one of them below the first holds a near-unique word of
    the question (`holding`), those ranked above it that hold none and that only shared words back are passed
    over: the keyword leg matched them on the question's generic words ("users", "every time", "new version"),
    and their words are off topic (a laptop set-up script's `setup, script, laptop, redis` for a question on
    502s during deploys, issue 37)."""
    first = list(ranked[:limit])
    holder = next((k for k, (i, _) in enumerate(first) if i in holding), None)
    if not holder:  # none holds one, or the first does: the sources as they come
        return [i for i, _ in first]
    return [i for k, (i, words_only) in enumerate(first) if k >= holder or not words_only or i in holding]
