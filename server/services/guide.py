"""What the notes look like, for the agent that searches them: languages, folders, types and main concepts,
read from the index as it is now, and how to ask well (issue 37: the asking agent is the strongest model in
the loop, and asks best in the notes' own words and languages).

The MCP adapter puts `guide_text` in its live instructions (server/mcp/instructions.py); a weak search page
takes the most telling concepts from the same profile (server/services/search/vocabulary.py). The profile is
read once per state of the index (`Store.change_fingerprint`: notes, last indexed time, sections), so a
handshake or a weak page costs one small query while nothing changed, and sees a learning as soon as it is
indexed.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from oracle_server.services.app import Oracle
from oracle_server.services.search.vocabulary import STRUCTURAL_WORDS

INSTRUCTIONS_BYTES = 2048  # Claude Code cuts server instructions here
GUIDE_CONCEPTS = 12  # concepts named at most (fewer when the instructions would pass INSTRUCTIONS_BYTES)
GUIDE_FOLDERS = 4
GUIDE_LANGUAGES = 4
HOW_TO_ASK = (
    "How to ask: short keyword phrasings in the notes' own words work best (the error text, the tool, the"
    " concept), not a whole story; when you ask in another language than the notes', add a phrasing in theirs;"
    " pass other phrasings as `variants` in the same call; a weak page's `try` lists the notes' words to ask"
    " with next."
)


@dataclass(frozen=True)
class Profile:
    """The index as an asker needs to know it: how many notes, in which languages, folders and types, and
    the concepts they carry (concept -> notes), read at one state of the index."""

    notes: int
    languages: Mapping[str, int]  # language code (or "unknown") -> notes
    folders: Mapping[str, int]  # top-level folder ("." for notes at the root) -> notes
    types: Mapping[str, int]
    concepts: Mapping[str, int]  # concept -> notes carrying it


_LOCK = threading.Lock()


def profile(oracle: Oracle) -> Profile:
    """The index's profile, read again only when the index changed since the last read for this store."""
    store = oracle.store
    fingerprint = store.change_fingerprint()
    with _LOCK:
        cached = oracle.memo.get("profile")
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
    paths = list(store.notes())
    folders = Counter(p.split("/", 1)[0] if "/" in p else "." for p in paths)
    _, concepts = store.concept_counts(None, 1_000_000)
    made = Profile(notes=len(paths), languages=store.note_languages(), folders=dict(folders),
                   types=store.notes_by_type(), concepts=dict(concepts))
    with _LOCK:
        oracle.memo["profile"] = (fingerprint, made)
    return made


def telling_concepts(concepts: Mapping[str, int], notes: int, limit: int) -> list[str]:
    """The concepts that say most about the base: carried by many notes but not by nearly all (notes x
    ln((all + 1) / notes), as the dashboard's graph ranks them), structural words left out; ties by notes, then
    name."""
    ranked = sorted((c for c in concepts if c.casefold() not in STRUCTURAL_WORDS and concepts[c] > 1),
                    key=lambda c: (-concepts[c] * math.log((notes + 1) / concepts[c]), -concepts[c], c))
    return ranked[:limit]


def _counted(items: Mapping[str, int], limit: int, suffix: str = "") -> str:
    """`a 10, b 3, other 2`: the `limit` largest, ties by name, the rest summed."""
    ordered = sorted(items.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [f"{k}{suffix} {n:,}" for k, n in ordered[:limit]]
    rest = sum(n for _, n in ordered[limit:])
    return ", ".join(shown + ([f"other {rest:,}"] if rest else []))


TYPE_NAMES = {"principle": "principles", "learning": "learnings", "retro": "retrospectives"}


def guide_text(p: Profile, room: int = INSTRUCTIONS_BYTES, concepts: int = GUIDE_CONCEPTS) -> str:
    """How to ask, then what the notes look like, in at most `room` bytes (UTF-8): the concept list is what
    gives way, then the folders; how to ask always comes first, so a client that cuts the instructions keeps
    it."""
    if not p.notes:
        return HOW_TO_ASK + "\nThe notes: none indexed yet."
    kinds = ", ".join(f"{n:,} {TYPE_NAMES.get(t, t)}" for t, n in sorted(p.types.items(), key=lambda kv: (-kv[1], kv[0])))
    head = (f"{HOW_TO_ASK}\nThe notes: {p.notes:,} ({kinds}); languages: {_counted(p.languages, GUIDE_LANGUAGES)};"
            f" folders: {_counted(p.folders, GUIDE_FOLDERS, '/')}")
    names = telling_concepts(p.concepts, p.notes, concepts)
    while True:
        text = head + (f"; main concepts: {', '.join(names)}." if names else ".")
        if len(text.encode("utf-8")) <= room or not names:
            return text if len(text.encode("utf-8")) <= room else _cut(text, room)
        names = names[:-1]


def _cut(text: str, room: int) -> str:
    """`text` cut to `room` bytes on a character boundary (a base with very many folders or languages)."""
    return text.encode("utf-8")[: max(room, 0)].decode("utf-8", errors="ignore")


def guide_lines(oracle: Oracle, room: int = INSTRUCTIONS_BYTES) -> str:
    """guide_text for this index now."""
    return guide_text(profile(oracle), room)


def concept_notes(oracle: Oracle) -> tuple[Mapping[str, int], int]:
    """(concept -> notes carrying it, notes): how common each concept is, for the words a weak page offers."""
    p = profile(oracle)
    return p.concepts, p.notes


@dataclass(frozen=True)
class Health:
    """What an asker should know of the index's state: sections, embedding coverage, vector store, start-up."""

    sections: int
    coverage: float  # share of the sections embedded
    vector_down: str | None  # why the vector store is down, or None
    indexing: bool  # the start-up sync is still running (calls wait for it)
    last_indexed: float | None  # epoch seconds


def health(oracle: Oracle) -> Health:
    """The index's state now (two small queries and a flag), for the live instructions."""
    counts = oracle.store.counts()
    last = oracle.store.get_meta("last_indexed")
    return Health(sections=counts["chunks"],
                  coverage=counts["embedded"] / counts["chunks"] if counts["chunks"] else 1.0,
                  vector_down=oracle.vectors.down or None, indexing=not oracle.ready.is_set(),
                  last_indexed=float(last) if last else None)
