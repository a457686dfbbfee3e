"""What the index suggests: argument completion (concepts, projects, note paths, section ids, frontmatter field
names and values) and the section headings this base's retrospectives use. The MCP adapter's completions and
retrospective prompt ask here (server/mcp/surface.py, prompts.py); they read no store themselves.

Values that start with what was typed come first (most used first for concepts and projects, path order
for notes), then values that merely contain it, so `fts` offers `fts5` before `sqlite-fts5`. Matching is
case-insensitive. At most MAX_VALUES come back (the protocol's limit) with the true total, so a client can
say "and 240 more".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from oracle_server.services.runtime.app import Oracle

MAX_VALUES = 100  # the protocol's ceiling for one completion response
MAX_TYPED = 200  # longer input cannot be a prefix of anything useful; refuse to scan with it
# The bundled retrospectives' sections: used when the knowledge base has too few retrospectives of its own.
DEFAULT_RETRO_SECTIONS = (
    "What we set out to do", "What happened", "What went well", "What went badly", "What we will do differently",
)


@dataclass(frozen=True)
class Suggestions:
    values: list[str]
    total: int

    @property
    def has_more(self) -> bool:
        return self.total > len(self.values)


def _rank(oracle: Oracle, source: str, typed: str, limit: int) -> Suggestions:
    """Values of `source` ("concept", "project", "path"): prefix matches first, then substring matches."""
    values = oracle.store.suggest(source, typed.strip()[:MAX_TYPED])
    return Suggestions(values=values[:limit], total=len(values))


def complete_concepts(oracle: Oracle, typed: str, limit: int = MAX_VALUES) -> Suggestions:
    """Concepts (tags and keywords) by how many sections carry them."""
    return _rank(oracle, "concept", typed, limit)


def complete_projects(oracle: Oracle, typed: str, limit: int = MAX_VALUES) -> Suggestions:
    """Projects named in notes' frontmatter, by how many sections carry them."""
    return _rank(oracle, "project", typed, limit)


def complete_note_paths(oracle: Oracle, typed: str, limit: int = MAX_VALUES) -> Suggestions:
    """Indexed note paths relative to the root; a path matches by its start or by its file name."""
    return _rank(oracle, "path", typed, limit)


def complete_field_names(oracle: Oracle, typed: str, limit: int = MAX_VALUES) -> Suggestions:
    """Frontmatter field names (what a `where` filter names), by how many notes have each."""
    return _rank(oracle, "field", typed, limit)


def complete_field_values(oracle: Oracle, field: str | None, typed: str, limit: int = MAX_VALUES) -> Suggestions:
    """Values of one frontmatter field (as first written), by how many notes hold each; nothing until the
    field is known."""
    if not field or not field.strip():
        return Suggestions([], 0)
    values = oracle.store.suggest_field_values(field.strip()[:MAX_TYPED], typed.strip()[:MAX_TYPED])
    return Suggestions(values=values[:limit], total=len(values))


def complete_section_ids(oracle: Oracle, typed: str, limit: int = MAX_VALUES) -> Suggestions:
    """Section ids that start with what was typed, in id order (a chunk resource's `id`)."""
    ids = oracle.store.section_ids_from(typed.strip(), limit + 1)
    return Suggestions(ids[:limit], len(ids))


def complete_types(typed: str, choices: tuple[str, ...]) -> Suggestions:
    """A fixed set of choices (note types), in their given order."""
    low = typed.strip().lower()
    values = [c for c in choices if c.startswith(low)] + [c for c in choices if low in c and not c.startswith(low)]
    return Suggestions(values=values, total=len(values))


def retro_sections(oracle: Oracle) -> list[str]:
    """The `##` sections this knowledge base's retrospectives use, in their usual order.

    A heading counts when at least half of the retrospectives (and at least two) have it; with fewer than
    two retrospectives indexed, the bundled format is used.
    """
    rows = oracle.store.retro_headings()
    files = {file for file, _, _ in rows}
    if len(files) < 2:
        return list(DEFAULT_RETRO_SECTIONS)
    counts = Counter(heading.split(" › ")[-1] for _, heading, _ in rows)
    order: dict[str, list[int]] = {}
    for _, heading, position in rows:
        order.setdefault(heading.split(" › ")[-1], []).append(position)
    common = [h for h, n in counts.items() if n >= max(2, len(files) / 2)]
    if len(common) < 2:
        return list(DEFAULT_RETRO_SECTIONS)
    return sorted(common, key=lambda h: (sum(order[h]) / len(order[h]), h))
