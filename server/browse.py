"""Reflect, list and concepts: reading the knowledge base without a query."""

from __future__ import annotations

import math
import random

from pydantic import BaseModel

from indexer.parse import relation_key
from indexer.rootconfig import DOC_TYPES
from indexer.store import Section, Store
from server.app import Oracle
from server.models import (
    ConceptCount,
    ConceptsRequest,
    ConceptsResult,
    Document,
    ListItem,
    ListRequest,
    ListResult,
    NoteText,
    ReflectRequest,
    past_the_end,
)
from server.relations import relation_graph


class NotFound(LookupError):
    """Nothing matches; the message says what exists instead."""


REFLECT_TYPES = tuple(t for t in DOC_TYPES if t != "retro")  # what happened is not how to work


def document_from_section(section: Section) -> Document:
    return Document(
        id=section.id, type=section.type, kind=section.kind, title=section.title, heading=section.heading,
        content=section.content, source_file=section.file, line_start=section.line_start,
        line_end=section.line_end, concepts=list(section.concepts), project=section.project, date=section.date,
        content_hash=section.content_hash,
    )


def reflect(oracle: Oracle, request: ReflectRequest, client: str = "cli", rng: random.Random | None = None) -> Document:
    """One random principle or learning: a prompt to stop and think, not a search."""
    types = REFLECT_TYPES if request.type == "all" else (request.type,)
    # Whole sections only: a lone bullet out of context reads poorly.
    count = oracle.store.whole_section_count(types)
    if count == 0:
        raise NotFound(f"no {' or '.join(types)} notes are indexed yet; add some or run `oracle index`")
    pick = (rng or random).randrange(count)
    section = oracle.store.whole_section_at(types, pick)
    if section is None:  # another process removed sections between the count and the pick
        raise NotFound(f"no {' or '.join(types)} notes are indexed yet; add some or run `oracle index`")
    doc = document_from_section(section)
    oracle.logs.log_access(client, "reflect", [doc.id])
    return doc


def list_documents(oracle: Oracle, request: ListRequest) -> ListResult:
    """Newest first (by note date, then its time of day when known, then path), deterministic; one entry per
    note unless asked for sections."""
    total, rows = oracle.store.list_sections(None if request.type == "all" else request.type,
                                             request.by_note, request.limit, request.offset)
    items = [
        ListItem(
            id=s.id, type=s.type, title=s.title, heading=s.heading, source_file=s.file, date=s.date,
            concepts=list(s.concepts), sections=n,
        )
        for s, n in rows
    ]
    return ListResult(items=items, total=total, limit=request.limit, offset=request.offset,
                      unit="note" if request.by_note else "section",
                      warnings=[past_the_end(request.offset, total, request.limit)] if total and not items else [])


def concepts(oracle: Oracle, request: ConceptsRequest) -> ConceptsResult:
    """Concepts by how many notes carry them (in any section); ties alphabetical."""
    total, rows = oracle.store.concept_counts(None if request.type == "all" else request.type, request.limit)
    return ConceptsResult(concepts=[ConceptCount(concept=c, count=n) for c, n in rows], total=total)


class GraphNode(BaseModel):
    id: NoteText  # concept, document path or relation term: all written by notes
    label: NoteText
    kind: str  # "concept" | "document" | "entity" (a subject or object of a relation)
    count: int
    type: str | None = None


class GraphEdge(BaseModel):
    source: NoteText
    target: NoteText
    weight: int
    # "co-occurs" (concept-concept, weight = files with both) | "tagged" (document-concept) |
    # "relation" (entity-entity, label = predicate, weight = notes stating it)
    kind: str
    label: NoteText | None = None


class Graph(BaseModel):
    nodes: list[GraphNode]
    edges: list[GraphEdge]


def top_concepts(store: Store, limit: int) -> list[tuple[str, int]]:
    """(concept, files carrying it), the `limit` most telling first: files x ln((all files + 1) / files),
    a tf-idf-like weight, so a concept in nearly every note ("oracle", "session" on a v2 brain) sinks
    below the ones that tell notes apart instead of topping the graph. Ties: more files, then name."""
    total, counts = store.concept_note_counts()
    ranked = sorted(counts, key=lambda cn: (-cn[1] * math.log((total + 1) / cn[1]), -cn[1], cn[0]))
    return ranked[:limit]


def graph(oracle: Oracle, limit: int = 40, documents: bool = True, relations: int = 200) -> Graph:
    """The top concepts, how often they share a file, which files carry them, and the relations notes
    state between entities."""
    top = top_concepts(oracle.store, limit)
    keep = {c for c, _ in top}
    per_file: dict[str, set[str]] = {}
    for file, concept in oracle.store.note_concepts():
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
        notes = oracle.store.notes()
        for file in sorted(per_file):
            note = notes.get(file)
            nodes.append(GraphNode(id=f"file:{file}", label=(note.title if note else None) or file, kind="document",
                                   count=len(per_file[file]), type=note.type if note else None))
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
