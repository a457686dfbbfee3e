"""What the notes look like, for the agent that searches them: languages, folders, types and main concepts,
read from the index as it is now, and how to ask well (issue 37: the asking agent is the strongest model in
the loop, and asks best in the notes' own words and languages).

The MCP adapter puts `guide_text` in its live instructions (server/mcp/instructions.py); a weak search page
takes the most telling concepts from the same profile (server/services/capabilities/search/vocabulary.py). The profile
is read once per state of the index (`Store.change_fingerprint`: notes, last indexed time, sections), so a
handshake or a weak page costs one small query while nothing changed, and sees a learning as soon as it is
indexed.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from oracle_server.services.capabilities.search.vocabulary import STRUCTURAL_WORDS
from oracle_server.services.runtime.app import Oracle

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
    the concepts they carry (concept -> sections carrying it, of `sections`), read at one state of the index."""

    notes: int
    sections: int
    languages: Mapping[str, int]  # language code (or "unknown") -> notes
    folders: Mapping[str, int]  # top-level folder ("." for notes at the root) -> notes
    types: Mapping[str, int]
    concepts: Mapping[str, int]  # concept -> sections carrying it


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
    made = Profile(notes=len(paths), sections=store.chunk_count(), languages=store.note_languages(),
                   folders=dict(folders), types=store.notes_by_type(), concepts=store.concept_sections())
    with _LOCK:
        oracle.memo["profile"] = (fingerprint, made)
    return made


def telling_concepts(concepts: Mapping[str, int], sections: int, limit: int) -> list[str]:
    """The concepts that say most about the base: carried by many sections but not by nearly all (n x
    ln((all + 1) / n), as the dashboard's graph ranks concepts by notes), structural words left out; ties by
    sections, then name."""
    ranked = sorted((c for c in concepts if c.casefold() not in STRUCTURAL_WORDS and concepts[c] > 1),
                    key=lambda c: (-concepts[c] * math.log((sections + 1) / concepts[c]), -concepts[c], c))
    return ranked[:limit]


def _counted(items: Mapping[str, int], limit: int, suffix: str = "") -> str:
    """`a 10, b 3, other 2`: the `limit` largest, ties by name, the rest summed."""
    ordered = sorted(items.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [f"{k}{suffix} {n:,}" for k, n in ordered[:limit]]
    rest = sum(n for _, n in ordered[limit:])
    return ", ".join(shown + ([f"other {rest:,}"] if rest else []))


def guide_text(p: Profile, room: int = INSTRUCTIONS_BYTES, concepts: int = GUIDE_CONCEPTS) -> str:
    """What the notes look like, in at most `room` bytes (UTF-8): their languages, then their folders, then their
    main concepts, which give way (fewer named) when the room is short, so the languages always fit."""
    if not p.notes:
        return "No notes are indexed yet."
    head = (f"Languages: {_counted(p.languages, GUIDE_LANGUAGES)}; folders: {_counted(p.folders, GUIDE_FOLDERS, '/')}")
    names = telling_concepts(p.concepts, p.sections, concepts)
    while True:
        text = head + (f"; main concepts: {', '.join(names)}." if names else ".")
        if len(text.encode("utf-8")) <= room or not names:
            return text if len(text.encode("utf-8")) <= room else _cut(text, room)
        names = names[:-1]


def _cut(text: str, room: int) -> str:
    """`text` cut to `room` bytes on a character boundary (a base with very many folders or languages)."""
    return text.encode("utf-8")[: max(room, 0)].decode("utf-8", errors="ignore")


def main_concepts(oracle: Oracle, limit: int) -> list[str]:
    """The base's `limit` most telling concepts now (what an empty search page offers to try)."""
    p = profile(oracle)
    return telling_concepts(p.concepts, p.sections, limit)


@dataclass(frozen=True)
class Health:
    """What an asker should know of the index's state: sections, embedding coverage, vector store, start-up."""

    notes: int
    types: Mapping[str, int]  # note type -> notes
    sections: int
    coverage: float  # share of the sections embedded
    vector_down: str | None  # why the vector store is down, or None
    indexing: bool  # the start-up sync is still running (calls wait for it)
    last_indexed: float | None  # epoch seconds
    # Questions in scripts the English model does not read (Thai, CJK) are ranked by the multilingual model: said
    # once here and in stats (issue 40), no longer as a warning on every such answer.
    multilingual: bool = False
    database: str = ""  # the team database the notes live in (host/name, never a password); "" when embedded


def health(oracle: Oracle) -> Health:
    """The index's state now (three small queries and a flag), for the live instructions."""
    counts = oracle.store.counts()
    last = oracle.store.get_meta("last_indexed")
    return Health(notes=counts["files"], types=oracle.store.notes_by_type(), sections=counts["chunks"],
                  coverage=counts["embedded"] / counts["chunks"] if counts["chunks"] else 1.0,
                  vector_down=oracle.vectors.down or None, indexing=not oracle.ready.is_set(),
                  last_indexed=float(last) if last else None,
                  multilingual=not oracle.embedder.multilingual and oracle.indexer.multilingual.ready(),
                  database=oracle.settings.database_line if oracle.settings.database_url else "")
