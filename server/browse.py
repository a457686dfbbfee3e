"""Reflect, list and concepts: reading the knowledge base without a query."""

from __future__ import annotations

import json
import math
import random
import sqlite3

from pydantic import BaseModel

from indexer.parse import relation_key
from server.app import Oracle
from server.models import ConceptCount, ConceptsRequest, ConceptsResult, Document, ListItem, ListRequest, ListResult, ReflectRequest
from server.relations import relation_graph


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
    rows = oracle.store.rows(f"SELECT * FROM documents WHERE {where} ORDER BY id LIMIT 1 OFFSET ?", [*types, pick])
    doc = document_from_row(rows[0])
    oracle.logs.log_access(client, "reflect", [doc.id])
    return doc


def list_documents(oracle: Oracle, request: ListRequest) -> ListResult:
    """Newest first (by note date, then its time of day when known, then path), deterministic; optionally
    one entry per file."""
    conn = oracle.store.conn
    where, args = ("1", []) if request.type == "all" else ("type = ?", [request.type])
    order = "(date IS NULL), date DESC, timestamp DESC, file, position, id"
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
        for row in oracle.store.rows(sql, [*args, request.limit, request.offset])
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


class GraphNode(BaseModel):
    id: str
    label: str
    kind: str  # "concept" | "document" | "entity" (a subject or object of a relation)
    count: int
    type: str | None = None


class GraphEdge(BaseModel):
    source: str
    target: str
    weight: int
    # "co-occurs" (concept-concept, weight = files with both) | "tagged" (document-concept) |
    # "relation" (entity-entity, label = predicate, weight = notes stating it)
    kind: str
    label: str | None = None


class Graph(BaseModel):
    nodes: list[GraphNode]
    edges: list[GraphEdge]


def top_concepts(conn: sqlite3.Connection, limit: int) -> list[tuple[str, int]]:
    """(concept, files carrying it), the `limit` most telling first: files x ln((all files + 1) / files),
    a tf-idf-like weight, so a concept in nearly every note ("oracle", "session" on a v2 brain) sinks
    below the ones that tell notes apart instead of topping the graph. Ties: more files, then name."""
    total = conn.execute("SELECT count(DISTINCT file) FROM documents").fetchone()[0]
    counts = conn.execute(
        "SELECT c.concept, count(DISTINCT d.file) FROM doc_concepts c JOIN documents d ON d.id = c.doc_id"
        " GROUP BY c.concept"
    ).fetchall()
    ranked = sorted(counts, key=lambda cn: (-cn[1] * math.log((total + 1) / cn[1]), -cn[1], cn[0]))
    return ranked[:limit]


def graph(oracle: Oracle, limit: int = 40, documents: bool = True, relations: int = 200) -> Graph:
    """The top concepts, how often they share a file, which files carry them, and the relations notes
    state between entities."""
    conn = oracle.store.conn
    top = top_concepts(conn, limit)
    keep = {c for c, _ in top}
    per_file: dict[str, set[str]] = {}
    for file, concept in conn.execute(
        "SELECT DISTINCT d.file, c.concept FROM doc_concepts c JOIN documents d ON d.id = c.doc_id ORDER BY d.file"
    ):
        if concept in keep:
            per_file.setdefault(file, set()).add(concept)
    pairs: dict[tuple[str, str], int] = {}
    for concepts_in_file in per_file.values():
        ordered = sorted(concepts_in_file)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                pairs[(a, b)] = pairs.get((a, b), 0) + 1
    nodes = [GraphNode(id=f"concept:{c}", label=c, kind="concept", count=n) for c, n in top]
    edges = [
        GraphEdge(source=f"concept:{a}", target=f"concept:{b}", weight=w, kind="co-occurs")
        for (a, b), w in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    if documents:
        titles = dict(conn.execute("SELECT path, title FROM files"))
        types = dict(conn.execute("SELECT path, type FROM files"))
        for file in sorted(per_file):
            nodes.append(GraphNode(id=f"file:{file}", label=titles.get(file) or file, kind="document",
                                   count=len(per_file[file]), type=types.get(file)))
            edges += [GraphEdge(source=f"file:{file}", target=f"concept:{c}", weight=1, kind="tagged")
                      for c in sorted(per_file[file])]
    entities: dict[str, GraphNode] = {}
    for subject, predicate, obj, n in relation_graph(oracle, relations):
        ends = []
        for term in (subject, obj):
            node = entities.setdefault(relation_key(term), GraphNode(
                id=f"entity:{relation_key(term)}", label=term, kind="entity", count=0))
            node.count += n
            ends.append(node.id)
        edges.append(GraphEdge(source=ends[0], target=ends[1], weight=n, kind="relation", label=predicate))
    nodes += [entities[key] for key in sorted(entities)]
    return Graph(nodes=nodes, edges=edges)
