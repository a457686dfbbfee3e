"""Argument completion from the index: concepts, projects, note paths, frontmatter field names and values.

Values that start with what was typed come first (most used first for concepts and projects, path order
for notes), then values that merely contain it, so `fts` offers `fts5` before `sqlite-fts5`. Matching is
case-insensitive. At most MAX_VALUES come back (the protocol's limit) with the true total, so a client can
say "and 240 more".
"""

from __future__ import annotations

from dataclasses import dataclass

from oracle_server.services.app import Oracle

MAX_VALUES = 100  # the protocol's ceiling for one completion response
MAX_TYPED = 200  # longer input cannot be a prefix of anything useful; refuse to scan with it


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


def complete_types(typed: str, choices: tuple[str, ...]) -> Suggestions:
    """A fixed set of choices (note types), in their given order."""
    low = typed.strip().lower()
    values = [c for c in choices if c.startswith(low)] + [c for c in choices if low in c and not c.startswith(low)]
    return Suggestions(values=values, total=len(values))
