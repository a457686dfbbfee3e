"""The keyword leg's words exactly as FTS5 makes them, for a store that is not SQLite (indexer/store/pg/).

FTS5's word table tokenises with porter + unicode61 (diacritics removed, Thai marks kept inside words), after
indexer/notes/segment.py has cut Thai into words and Chinese/Japanese into character pairs. A second copy of that
tokenizer in Python (a Porter stemmer, unicode61's folding and categories) would drift from FTS5's in corner
cases and break ranking parity; so the words are taken from FTS5 itself: the text goes into an in-memory FTS5
table with the same tokenizer, and its `fts5vocab` instance table gives back each token with its column and
position. About 0.3 ms per section of a hundred words; one in-memory database per thread.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from functools import lru_cache

from oracle_indexer.store.sqlite.schema import WORD_TOKENIZE

COLUMNS = 4  # the widest word table: documents_fts(title, heading, content, concepts)
_local = threading.local()


def _scratch() -> sqlite3.Connection:
    """This thread's in-memory FTS5 table (columns c0..c3) and its instance vocabulary."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        cols = ", ".join(f"c{i}" for i in range(COLUMNS))
        conn.execute(f'CREATE VIRTUAL TABLE t USING fts5({cols}, tokenize = "{WORD_TOKENIZE}")')
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _local.conn = conn
    return conn


def tokenize_rows(rows: Sequence[Sequence[str]]) -> list[list[list[str]]]:
    """For each row (up to COLUMNS texts), each column's tokens in order, as FTS5's word tables index them."""
    if not rows:
        return []
    conn = _scratch()
    out: list[list[list[str]]] = [[[] for _ in range(COLUMNS)] for _ in rows]
    positions: list[list[dict[int, str]]] = [[{} for _ in range(COLUMNS)] for _ in rows]
    with conn:
        conn.executemany(
            f"INSERT INTO t (rowid, {', '.join(f'c{i}' for i in range(COLUMNS))}) VALUES (?{', ?' * COLUMNS})",
            [(n + 1, *(list(r) + [""] * (COLUMNS - len(r)))) for n, r in enumerate(rows)],
        )
        for term, doc, col, offset in conn.execute("SELECT term, doc, col, offset FROM v"):
            positions[doc - 1][int(col[1:])][offset] = term
        conn.execute("DELETE FROM t")
    for n, cols in enumerate(positions):
        for c, by_offset in enumerate(cols):
            out[n][c] = [by_offset[o] for o in sorted(by_offset)]
    return out


@lru_cache(maxsize=4096)
def phrase_tokens(text: str) -> tuple[str, ...]:
    """The tokens of one quoted query string (an FTS5 phrase): usually one word, several when unicode61 cuts
    it (a mark it does not keep), none when nothing in it is a word character."""
    return tuple(tokenize_rows([(text,)])[0][0])


def parse_match(match: str | None) -> list[str]:
    """The quoted strings of a MATCH expression as server/services/capabilities/search/query.py builds them
    (`"a" OR "b"`, inner quotes doubled), unquoted, in order. Anything else in the expression is an error: the
    store must never guess."""
    if not match:
        return []
    out: list[str] = []
    i, n = 0, len(match)
    while i < n:
        if match.startswith(" OR ", i):
            i += 4
            continue
        if match[i] != '"':
            raise ValueError(f"not a quoted OR-list: {match!r}")
        j, text = i + 1, []
        while True:
            k = match.index('"', j)
            text.append(match[j:k])
            if k + 1 < n and match[k + 1] == '"':
                text.append('"')
                j = k + 2
                continue
            i = k + 1
            break
        out.append("".join(text))
    return out


def match_phrases(match: str | None) -> list[tuple[str, ...]]:
    """The FTS5 phrases of a MATCH expression, each as its tokens; phrases without a token (FTS5 matches
    nothing for them) are left out."""
    return [p for p in (phrase_tokens(s) for s in parse_match(match)) if p]
