"""Reflect, list and concepts: reading the knowledge base without a query."""

from __future__ import annotations

import json
import random

from server.app import Oracle
from server.models import ConceptCount, ConceptsRequest, ConceptsResult, Document, ListItem, ListRequest, ListResult, ReflectRequest


class NotFound(LookupError):
    """Nothing matches; the message says what exists instead."""


def document_from_row(row: dict) -> Document:
    concepts = row["concepts"]
    return Document(
        id=row["id"], type=row["type"], kind=row["kind"], title=row["title"] or "", heading=row["heading"] or "",
        content=row["content"] or "", source_file=row["file"], line_start=row["line_start"], line_end=row["line_end"],
        concepts=json.loads(concepts) if isinstance(concepts, str) else concepts,
        project=row["project"], date=row["date"], content_hash=row["content_hash"],
    )


def reflect(oracle: Oracle, request: ReflectRequest, client: str = "cli", rng: random.Random | None = None) -> Document:
    """One random principle or learning: a prompt to stop and think, not a search."""
    types = ("principle", "learning") if request.type == "all" else (request.type,)
    marks = ",".join("?" * len(types))
    conn = oracle.store.conn
    # Whole sections only: a lone bullet out of context reads poorly.
    where = f"type IN ({marks}) AND kind != 'bullet'"
    count = conn.execute(f"SELECT count(*) FROM documents WHERE {where}", types).fetchone()[0]
    if count == 0:
        raise NotFound(f"no {' or '.join(types)} notes are indexed yet; add some or run `oracle index`")
    pick = (rng or random).randrange(count)
    row = oracle.store.db.query(
        f"SELECT * FROM documents WHERE {where} ORDER BY id LIMIT 1 OFFSET ?", [*types, pick]
    )
    doc = document_from_row(next(iter(row)))
    oracle.logs.log_access(client, "reflect", [doc.id])
    return doc


def list_documents(oracle: Oracle, request: ListRequest) -> ListResult:
    """Newest first (by note date, then path), deterministic; optionally one entry per file."""
    conn = oracle.store.conn
    where, args = ("1", []) if request.type == "all" else ("type = ?", [request.type])
    order = "(date IS NULL), date DESC, file, position, id"
    if request.group_by_file:
        total = conn.execute(f"SELECT count(DISTINCT file) FROM documents WHERE {where}", args).fetchone()[0]
        sql = (
            f"SELECT d.*, g.n AS chunks FROM (SELECT file, min(position) AS first, count(*) AS n FROM documents"
            f" WHERE {where} GROUP BY file) g JOIN documents d ON d.file = g.file AND d.position = g.first"
            f" ORDER BY {order} LIMIT ? OFFSET ?"
        )
    else:
        total = conn.execute(f"SELECT count(*) FROM documents WHERE {where}", args).fetchone()[0]
        sql = f"SELECT *, 1 AS chunks FROM documents WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?"
    items = [
        ListItem(
            id=row["id"], type=row["type"], title=row["title"] or "", heading=row["heading"] or "",
            source_file=row["file"], date=row["date"], concepts=json.loads(row["concepts"] or "[]"),
            chunks=row["chunks"],
        )
        for row in oracle.store.db.query(sql, [*args, request.limit, request.offset])
    ]
    return ListResult(items=items, total=total, limit=request.limit, offset=request.offset)


def concepts(oracle: Oracle, request: ConceptsRequest) -> ConceptsResult:
    """Concepts by how many chunks carry them; ties alphabetical."""
    conn = oracle.store.conn
    where, args = ("1", []) if request.type == "all" else ("d.type = ?", [request.type])
    base = f"FROM doc_concepts c JOIN documents d ON d.id = c.doc_id WHERE {where}"
    total = conn.execute(f"SELECT count(DISTINCT c.concept) {base}", args).fetchone()[0]
    rows = conn.execute(
        f"SELECT c.concept, count(*) AS n {base} GROUP BY c.concept ORDER BY n DESC, c.concept LIMIT ?",
        [*args, request.limit],
    )
    return ConceptsResult(concepts=[ConceptCount(concept=c, count=n) for c, n in rows], total=total)
