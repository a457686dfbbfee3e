"""A search's plan and what each phase hands the next (legs, fusion, adjustments, ranking, page): the pools' sizes
and the frozen records the phases pass along (server/services/capabilities/search/pipeline.py runs them in order).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from oracle_indexer.notes.fields import NoteSelection
from oracle_indexer.notes.language import query_languages
from oracle_indexer.store.rows import SectionFacts
from oracle_indexer.store.types import Filters
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.capabilities.search.query import (
    KeywordQuery,
    build_keyword_query,
    validate_query,
)
from oracle_server.services.capabilities.search.where import resolve_where
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.models import (
    Hit,
    SearchRequest,
    SupersededBy,
    Triplet,
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


@dataclass
class _Adjusted:
    """Step 4's result: the candidates re-ranked by what else is known of them, with those facts."""

    fused: list[scoring.Fused]
    facts: dict[str, SectionFacts]  # file, lines, language, ... of every candidate section
    use: _Use
    added: list[str]  # sections only a stated relation brought in


@dataclass
class _Ranked:
    """Steps 2-5 for one pool: the legs, the fusion, the candidates' facts and the grouped result list."""

    legs: _Legs
    fusion: _Fusion
    facts: dict[str, SectionFacts]
    entries: list[_Entry]
    total: int
    use: _Use


@dataclass
class _Page:
    """Step 6: the page's hits, read in full, and how many entries vanished while the search ran."""

    hits: list[Hit]
    vanished: int


@dataclass
class _Question:
    """One question ranked (steps 1-5b): its plan, its ranking and the reranker that reordered it, if any."""

    plan: _Plan
    ranked: _Ranked
    reranked_by: str | None
