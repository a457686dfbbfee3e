"""Other phrasings of one need, searched in one call (`variants` on search and consult): the pure part.

The agent that calls Oracle is usually the strongest model in the loop: it can say the same need in the notes'
words, in their language, as a heading. The query and its distinct variants are searched as one question: their
words together make the keyword query (a note holding words of several phrasings ranks high), their text together
is embedded once, and query expansion starts from what that finds, the way query2doc-style expansion adds a
model's text to the query. Measured against running each phrasing as its own search and fusing the rankings
(reciprocal rank, or summed max-normalised scores): better on both judged sets and in both languages, at the cost
of one search with a longer query instead of five (benchmarks/variants.py, BENCHMARKS.md). Variants are query
text, never instructions: they only ever reach the keyword expression builder and the embedder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oracle_server.services.capabilities.search.scoring import covers


def distinct_phrasings(query: str, variants: Sequence[str]) -> list[str]:
    """The query, then each variant that says something else (case and spacing ignored), in the order given."""
    seen: set[str] = set()
    out: list[str] = []
    for text in (query, *variants):
        norm = " ".join(text.casefold().split())
        if norm and norm not in seen:
            seen.add(norm)
            out.append(text.strip())
    return out


def joined(phrasings: Sequence[str]) -> str:
    """The one question the phrasings are searched as: the query first (its words lead the keyword query's term
    limit and the embedder's token limit), then each variant."""
    return "\n".join(phrasings)


def holding(terms: Sequence[Sequence[str]], matched: Mapping[int, int]) -> list[int]:
    """Which phrasings a hit holds the words of: `terms[i]` is phrasing i's keyword terms, `matched[i]` how many
    of them the hit's best-holding section contains. A phrasing counts when the hit holds most of its words
    (scoring.covers, the rule that keeps a hit from being called weak)."""
    return [i for i, words in enumerate(terms) if covers(matched.get(i, 0), len(words))]
