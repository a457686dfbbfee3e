"""The keyword leg read from the working copy's own index while it holds what the database holds (issue 38, speed
at team size).

FTS5's bm25 in SQL over PostgreSQL's postings table (indexer/store/pg/keyword.py) scores every posting of every
question word in SQL, where SQLite does the same work in C: at 100,000 sections it made a PostgreSQL hybrid search
2.4-3.8x SQLite's. Every engine with the team store already keeps an SQLite index of its folder (the working copy's
own, `<data dir>/offline/`, indexer/serving/team.py), and its folder converges with the database. When that
index holds exactly the notes the database holds (the same content state: every note's path and file hash, the
same number of sections, read by the same parser version), its FTS5 tables give the same keyword scores, section
ids and totals as the SQL, so the keyword leg's reads (`keyword_search`, `keyword_matching_ids`, `terms_matched`,
`note_keyword_scores`, `section_counts`) are served from it; everything else (sections, vectors, writes) stays with
PostgreSQL. When the two differ (a note written a moment ago that the local index has not followed yet, a folder this
machine excludes), the SQL path answers, as it did before: never a ranking from an index that is behind.

The database's state is one row kept by a trigger (schema migration 5); a search reads it in its first round trip
(PgStore.chunk_count) and the keyword reads that follow within `FRESH_SECONDS` on this process, with no write of
this process between, use that reading, as the store's other reads fetched ahead do (Database.stash).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from oracle_indexer.store.protocols import KeywordReads

FRESH_SECONDS = 1.0  # a reading of the database's state serves the keyword reads of one search (Database.STASH_SECONDS)


@dataclass
class LocalWords:
    """The working copy's own index and the content state it held when it last followed the database (None while it
    is being written, or has not followed yet)."""

    store: KeywordReads
    state: tuple[int, int, int] | None = None
    since: float | None = None  # time.time() it last came in step (stats)


class Reading:
    """The database's content state as last read on this process, kept for FRESH_SECONDS and dropped by any write
    of this process (Database.generation)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value: tuple[float, int, tuple[int, int, int]] | None = None

    def keep(self, generation: int, state: tuple[int, int, int]) -> None:
        with self._lock:
            self._value = (time.monotonic(), generation, state)

    def get(self, generation: int) -> tuple[int, int, int] | None:
        with self._lock:
            value = self._value
        if value is None or value[1] != generation or time.monotonic() - value[0] > FRESH_SECONDS:
            return None
        return value[2]


def in_step(local: LocalWords | None, database_state: tuple[int, int, int]) -> KeywordReads | None:
    """The local index's keyword reads when it holds what the database holds, else None (the SQL path answers)."""
    if local is None or local.state is None:
        return None
    return local.store if local.state == database_state else None
