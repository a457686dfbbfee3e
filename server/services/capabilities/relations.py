"""Relations: (subject, predicate, object) triplets that notes state in their frontmatter.

Terms match case- and spacing-insensitively (`oracle_indexer.notes.parse.relation_key`), exactly otherwise: a
triplet is a claim, and "sqlite" should not find "sqlite-vec". Search can start from a triplet pattern:
the notes stating a matching relation come first, then text and vector results fill the page.
"""

from __future__ import annotations

from oracle_indexer.store.types import Filters, Pattern
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.models import RelationHit, RelationsRequest, RelationsResult, Triplet


def find_relations(oracle: Oracle, request: RelationsRequest) -> RelationsResult:
    """Matching triplets, each with the note that states it; leave a part out to match anything there."""
    total, rows = oracle.store.relations_page((request.subject, request.predicate, request.object),
                                              request.limit, request.offset)
    hits = [
        RelationHit(subject=r.subject, predicate=r.predicate, object=r.object, id=r.first_section_id,
                    source_file=r.file, title=r.title, type=r.type)
        for r in rows
    ]
    return RelationsResult(relations=hits, total=total, limit=request.limit, offset=request.offset)


def stating_files(oracle: Oracle, pattern: Pattern, files: list[str] | None = None) -> dict[str, list[Triplet]]:
    """file -> the matching triplets it states (among `files` when given), files in path order."""
    out: dict[str, list[Triplet]] = {}
    for subject, predicate, obj, file in oracle.store.stated_relations(pattern, files):
        out.setdefault(file, []).append(Triplet(subject=subject, predicate=predicate, object=obj))
    return out


def entry_chunks(oracle: Oracle, files: list[str], filters: Filters) -> dict[str, str]:
    """file -> its first section passing the filters: where a relation-only hit enters the note."""
    if not files:
        return {}
    return oracle.store.first_sections(files, filters)


def relation_graph(oracle: Oracle, limit: int = 200) -> list[tuple[str, str, str, int]]:
    """(subject, predicate, object, number of notes stating it), most stated first; terms shown as first
    written (alphabetically first spelling) while matched by key."""
    return oracle.store.relation_counts(limit)
