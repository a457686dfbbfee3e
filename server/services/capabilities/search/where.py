"""`where` filters on frontmatter fields, resolved to the notes they let through (the service side).

The matching rule is indexer/notes/fields.py's (pure); the store only hands over the stored values of the fields a
filter names (`Store.field_rows`). The answer becomes two note sets on the store's `Filters`, so every leg
of search (keyword, vector, relations) and every count applies it the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oracle_indexer.notes.fields import FieldCondition, NoteSelection, select_notes

if TYPE_CHECKING:
    from oracle_server.services.runtime.app import Oracle

FIELDS_NAMED = 12  # field names a warning lists when a filter names one no note has


def resolve_where(oracle: Oracle, conditions: Sequence[FieldCondition]) -> tuple[NoteSelection, list[str]]:
    """The notes meeting every condition, and warnings for fields no note has (a typo would otherwise look
    like "nothing matches"), naming the fields that do exist."""
    if not conditions:
        return NoteSelection(), []
    rows = oracle.store.field_rows([c.field for c in conditions])
    present = {value.field for _, value in rows}
    missing = [c.field for c in conditions if c.field not in present and c.exists is not False]
    warnings = []
    if missing:
        known = oracle.store.suggest("field", "")
        listed = ", ".join(sorted(known[:FIELDS_NAMED])) + (" ..." if len(known) > FIELDS_NAMED else "")
        warnings.append(f"where: no note has the field {', '.join(repr(m) for m in missing)}"
                        + (f"; fields in use: {listed}" if known else "; no note has frontmatter fields"))
    return select_notes(rows, conditions), warnings
