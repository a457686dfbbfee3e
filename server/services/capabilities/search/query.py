"""Turn a user's query into FTS5 MATCH expressions that can never be a syntax error.

Users type words, not FTS5 syntax. The query is cut into terms (runs of letters, marks and digits), every
term is quoted, and terms are joined with OR so that a long natural-language question still matches the
notes that share its important words; bm25 then ranks notes that share more and rarer terms higher.
Thai is cut into words (indexer/notes/segment.py), which the word table indexes the same way; terms in other
scripts written without spaces (Chinese, Japanese, ...) go to the trigram table, where a word inside a
sentence can be found. Pure functions; no database.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from oracle_indexer.notes.segment import cjk_bigrams, cjk_runs, has_cjk, is_thai_char, thai_stopwords, thai_words
from oracle_server.services.vocabulary.errors import ServiceError

MAX_QUERY_CHARS = 10_000
MAX_TERMS = 64
TRIGRAM_MIN = 3  # the trigram tokenizer cannot match shorter strings; those fall back to LIKE

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its me my no not of on or our she should so than that the their them then there these they this to
    too was we were what when where which while who why will with would you your""".split()
)

_UNSEGMENTED_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
)


class QueryError(ServiceError, ValueError):
    """The query cannot be searched at all (empty); the message says what to send instead."""


@dataclass(frozen=True)
class KeywordQuery:
    terms: tuple[str, ...]  # spaced-script terms for the porter/unicode61 table
    unsegmented: tuple[str, ...]  # terms for the trigram table

    @property
    def fts_match(self) -> str | None:
        return " OR ".join(quote(t) for t in self.terms) or None

    @property
    def trigram_match(self) -> str | None:
        long_terms = [t for t in self.unsegmented if len(t) >= TRIGRAM_MIN]
        return " OR ".join(quote(t) for t in long_terms) or None

    @property
    def short_unsegmented(self) -> tuple[str, ...]:
        return tuple(t for t in self.unsegmented if len(t) < TRIGRAM_MIN)

    @property
    def empty(self) -> bool:
        return not self.terms and not self.unsegmented


def quote(term: str) -> str:
    """An FTS5 string literal: the term in double quotes, inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def is_unsegmented(char: str) -> bool:
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in _UNSEGMENTED_RANGES)


def _is_term_char(char: str) -> bool:
    return unicodedata.category(char)[0] in "LMN"


def split_terms(text: str) -> list[str]:
    """Runs of letters, combining marks and digits; an unsegmented-script run is its own term."""
    terms: list[str] = []
    current: list[str] = []
    current_unsegmented = False
    for char in text:
        if not _is_term_char(char):
            if current:
                terms.append("".join(current))
                current = []
            continue
        unsegmented = is_unsegmented(char) or (current_unsegmented and unicodedata.category(char)[0] == "M")
        if current and unsegmented != current_unsegmented:
            terms.append("".join(current))
            current = []
        current.append(char)
        current_unsegmented = unsegmented
    if current:
        terms.append("".join(current))
    return terms


def validate_query(query: str) -> str:
    """Trim and bound the query; an empty one is an error the caller can act on."""
    if not isinstance(query, str):
        raise QueryError("query must be a string")
    cleaned = query.replace("\x00", " ").strip()
    if not cleaned:
        raise QueryError("query is empty: pass a few words describing what you are looking for")
    return cleaned[:MAX_QUERY_CHARS]


def build_keyword_query(query: str) -> KeywordQuery:
    """Quoted OR-terms, stopwords dropped unless nothing else is left, at most MAX_TERMS distinct terms.

    A Thai run becomes its words (function words dropped like English stop words), a Chinese or Japanese
    run its overlapping character pairs (indexer/notes/segment.py): a sentence-length question then matches notes
    sharing its content words, where the whole run as one trigram phrase matched only the same sentence
    verbatim. A lone ideograph still goes to the trigram table (LIKE), as before."""
    raw = split_terms(unicodedata.normalize("NFC", query))
    spaced: list[str] = []
    unsegmented: list[str] = []
    thai: list[str] = []
    cjk: list[str] = []
    for term in raw:
        if any(is_thai_char(c) for c in term):
            thai.extend(w for w in thai_words(term) if w not in thai)
            continue
        if len(term) > 1 and has_cjk(term):  # Chinese, Japanese: the pairs the word table indexes (segment.py)
            pairs = [p for run in cjk_runs(term) for p in cjk_bigrams(run)]
            cjk.extend(p for p in pairs if p not in cjk)
            continue
        bucket = unsegmented if any(is_unsegmented(c) for c in term) else spaced
        folded = term.casefold()
        if folded not in bucket:
            bucket.append(folded)
    content = [t for t in spaced if t not in STOPWORDS]
    thai_content = [w for w in thai if w not in thai_stopwords()] if thai else []
    spaced = (content or ([] if thai_content or cjk else spaced)) + (thai_content or thai) + cjk
    budget = MAX_TERMS
    unsegmented = unsegmented[:budget]
    spaced = spaced[: max(0, budget - len(unsegmented))]
    return KeywordQuery(terms=tuple(spaced), unsegmented=tuple(unsegmented))


def snippet(content: str, terms: tuple[str, ...], width: int = 240) -> str:
    """A window of the content around the first query term found, on word boundaries where possible."""
    text = " ".join(content.split())
    if len(text) <= width:
        return text
    lowered = text.casefold()
    positions = [p for p in (lowered.find(t) for t in terms if t) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    if start:
        space = text.rfind(" ", 0, start)
        start = space + 1 if space >= 0 and start - space < 30 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + width // 2 else end
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
