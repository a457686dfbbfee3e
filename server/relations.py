"""Relations: (subject, predicate, object) triplets that notes state in their frontmatter.

Terms match case- and spacing-insensitively (`indexer.parse.relation_key`), exactly otherwise: a
triplet is a claim, and "sqlite" should not find "sqlite-vec". Search can start from a triplet pattern:
the notes stating a matching relation come first, then text and vector results fill the page.
"""

from __future__ import annotations

from indexer.parse import relation_key
from indexer.store import Filters
from server.app import Oracle
from server.models import RelationHit, RelationsRequest, RelationsResult, Triplet

Pattern = tuple[str | None, str | None, str | None]


def _where(pattern: Pattern) -> tuple[str, list[str]]:
    clauses, args = [], []
    for column, term in zip(("subject_key", "predicate_key", "object_key"), pattern):
        if term:
            clauses.append(f"r.{column} = ?")
            args.append(relation_key(term))
    return (" AND ".join(clauses) or "1"), args


def find_relations(oracle: Oracle, request: RelationsRequest) -> RelationsResult:
    """Matching triplets, each with the note that states it; leave a part out to match anything there."""
    where, args = _where((request.subject, request.predicate, request.object))
    conn = oracle.store.conn
    total = conn.execute(f"SELECT count(*) FROM relations r WHERE {where}", args).fetchone()[0]
    rows = oracle.store.rows(
        "SELECT r.subject, r.predicate, r.object, r.file, f.title, f.type,"
        " (SELECT d.id FROM documents d WHERE d.file = r.file ORDER BY d.position LIMIT 1) AS id"
        f" FROM relations r JOIN files f ON f.path = r.file WHERE {where}"
        " ORDER BY r.subject_key, r.predicate_key, r.object_key, r.file, r.position LIMIT ? OFFSET ?",
        [*args, request.limit, request.offset],
    )
    hits = [
        RelationHit(subject=r["subject"], predicate=r["predicate"], object=r["object"], id=r["id"] or "",
                    source_file=r["file"], title=r["title"] or "", type=r["type"])
        for r in rows
    ]
    return RelationsResult(relations=hits, total=total, limit=request.limit, offset=request.offset)


def stating_files(oracle: Oracle, pattern: Pattern, files: list[str] | None = None) -> dict[str, list[Triplet]]:
    """file -> the matching triplets it states (among `files` when given), files in path order."""
    where, args = _where(pattern)
    if files is not None:
        where += f" AND r.file IN ({','.join('?' * len(files))})"
        args += files
    out: dict[str, list[Triplet]] = {}
    for subject, predicate, obj, file in oracle.store.conn.execute(
        f"SELECT r.subject, r.predicate, r.object, r.file FROM relations r WHERE {where} ORDER BY r.file, r.position",
        args,
    ):
        out.setdefault(file, []).append(Triplet(subject=subject, predicate=predicate, object=obj))
    return out


def entry_chunks(oracle: Oracle, files: list[str], filters: Filters) -> dict[str, str]:
    """file -> its first chunk passing the filters: where a relation-only hit enters the note."""
    if not files:
        return {}
    where, args = filters.sql()
    out: dict[str, str] = {}
    for start in range(0, len(files), 500):
        part = files[start : start + 500]
        marks = ",".join("?" * len(part))
        for doc_id, file in oracle.store.conn.execute(
            f"SELECT d.id, d.file FROM documents d WHERE d.file IN ({marks}) AND {where} ORDER BY d.file, d.position",
            [*part, *args],
        ):
            out.setdefault(file, doc_id)
    return out


def relation_graph(oracle: Oracle, limit: int = 200) -> list[tuple[str, str, str, int]]:
    """(subject, predicate, object, number of notes stating it), most stated first; terms shown as first
    written (alphabetically first spelling) while matched by key."""
    rows = oracle.store.conn.execute(
        "SELECT min(subject), min(predicate), min(object), count(DISTINCT file) AS n FROM relations"
        " GROUP BY subject_key, predicate_key, object_key ORDER BY n DESC, subject_key, predicate_key, object_key"
        " LIMIT ?",
        (limit,),
    )
    return [(s, p, o, n) for s, p, o, n in rows]
