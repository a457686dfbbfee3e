"""Reflect, list and concepts: reading the knowledge base without a query."""

from __future__ import annotations

import math
import random
import re

from pydantic import BaseModel

from oracle_indexer.notes.concepts import normalise_tags
from oracle_indexer.notes.parse import relation_key
from oracle_indexer.rootconfig import DOC_TYPES
from oracle_indexer.store.protocols import IndexStore
from oracle_indexer.store.rows import IndexedNote, Section
from oracle_indexer.store.types import Filters
from oracle_server.services.capabilities.relations import relation_graph
from oracle_server.services.capabilities.search.where import resolve_where
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import ServiceError
from oracle_server.services.vocabulary.models import (
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
    where_conditions,
)


class NotFound(ServiceError, LookupError):
    """Nothing matches; the message says what exists instead."""

    error_kind = "not_found"


# How to work: what happened (retro) is not, nor a generic note (a handbook page, a README), which claims nothing
REFLECT_TYPES = tuple(t for t in DOC_TYPES if t not in ("retro", "note"))


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
    if count == 0 and request.type == "all":  # a base of RFCs or handbook pages: reflect on the notes there are
        types = DOC_TYPES
        count = oracle.store.whole_section_count(types)
    if count == 0:
        raise NotFound(_nothing_to_reflect_on(oracle, types))
    pick = (rng or random).randrange(count)
    section = oracle.store.whole_section_at(types, pick)
    if section is None:  # another process removed sections between the count and the pick
        raise NotFound(_nothing_to_reflect_on(oracle, types))
    doc = document_from_section(section)
    oracle.logs.log_access(client, "reflect", [doc.id])
    return doc


def _nothing_to_reflect_on(oracle: Oracle, types: tuple[str, ...]) -> str:
    """What is true when reflect finds nothing (issue 48: it said "run oracle index" with 648 notes indexed)."""
    notes = oracle.store.counts()["files"]
    if notes == 0:
        return "the index is empty: add notes to the knowledge root, or run `oracle index`"
    by_type = ", ".join(f"{n} {t}" for t, n in sorted(oracle.store.notes_by_type().items()))
    return (f"none of the {notes} indexed notes ({by_type}) is a {' or '.join(types)}: ask for another type, search"
            " them (oracle_search), or type a folder in oracle.toml's [types]")


def list_documents(oracle: Oracle, request: ListRequest) -> ListResult:
    """Newest first (by note date, then its time of day when known, then path), deterministic; one entry per
    note unless asked for sections; a `where` filter on frontmatter fields as search applies it."""
    notes, warnings = resolve_where(oracle, where_conditions(request.where))
    filters = Filters(type=None if request.type == "all" else request.type, only_notes=notes.only,
                      excluded_notes=notes.excluded)
    total, rows = oracle.store.list_sections(filters, request.by_note, request.limit, request.offset)
    items = [
        ListItem(
            id=s.id, type=s.type, title=s.title, heading=s.heading, source_file=s.file, date=s.date,
            concepts=list(s.concepts), sections=n,
        )
        for s, n in rows
    ]
    return ListResult(items=items, total=total, limit=request.limit, offset=request.offset,
                      unit="note" if request.by_note else "section",
                      warnings=warnings + ([past_the_end(request.offset, total, request.limit)] if total and not items
                                           else []))


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
    # Notes carrying the drawn concepts, of which `nodes` holds the `documents_shown` that carry most of them.
    documents_total: int = 0
    concepts_from: str = "tags"  # "tags", "tags and title terms", "title terms": where the concepts came from


GRAPH_DOCUMENTS = 60  # notes drawn at most: 160 of a 571-note vault's were a hairball
GRAPH_RELATIONS = 40  # relations drawn at most (the most stated)
MIN_TITLE_TERM_NOTES = 2  # a title word is a term of the vault's own once this many notes' titles have it
_TITLE_WORD = re.compile(r"[^\W\d_][\w'-]{3,}")  # 4+ characters, starting with a letter
# Words too common in any title to say what a vault is about (English; other languages rarely need it: their
# function words are short, and a word in more than half the titles is dropped anyway).
_TITLE_STOP = frozenset("""about after again also away back been before being between both does doing done down
during each even every from have having here into just more most much must only other over same should some such
than that their them then there these they this those through under until very what when where which while will
with without would your yours notes note untitled readme index""".split())


def _rank(counts: dict[str, int], total: int) -> list[tuple[str, int]]:
    """Most telling first: notes x ln((all notes + 1) / notes), a tf-idf-like weight, so a concept in nearly
    every note sinks below the ones that tell notes apart. Ties: more notes, then name."""
    return sorted(counts.items(), key=lambda cn: (-cn[1] * math.log((total + 1) / cn[1]), -cn[1], cn[0]))


def vault_concepts(store: IndexStore) -> tuple[dict[str, set[str]], str]:
    """(note -> its concepts, where they came from): the vault's own words, never Oracle's built-in engineering
    keywords (a personal vault's graph was "agent", "memory", "test" on every note): the notes' frontmatter
    tags, and, in a vault with few tags, the words its note titles share (in at least MIN_TITLE_TERM_NOTES
    notes, at most half of them)."""
    per_file: dict[str, set[str]] = {}
    for file, value in store.field_rows(["tags", "concepts"]):
        per_file.setdefault(file, set()).update(normalise_tags(value.value))
    tagged = {c for cs in per_file.values() for c in cs}
    if len(tagged) >= GRAPH_CONCEPT_FLOOR:
        return per_file, "tags"
    notes = store.notes()
    words: dict[str, set[str]] = {}
    for path, note in notes.items():
        title = (note.title or path.rsplit("/", 1)[-1].rsplit(".", 1)[0]).lower()
        for word in set(_TITLE_WORD.findall(title)) - _TITLE_STOP:
            words.setdefault(word, set()).add(path)
    for word, files in words.items():
        if MIN_TITLE_TERM_NOTES <= len(files) <= max(MIN_TITLE_TERM_NOTES, len(notes) // 2) and word not in tagged:
            for file in files:
                per_file.setdefault(file, set()).add(word)
    return per_file, "tags and title terms" if tagged else "title terms"


GRAPH_CONCEPT_FLOOR = 12  # fewer distinct tags than this: title terms fill the graph too


def _hub_relations(oracle: Oracle, limit: int) -> list[tuple[str, str, str, int]]:
    """The `limit` relations to draw: the most stated first, then those between the most connected entities
    (a vault's hub notes), at most RELATIONS_PER_ENTITY per entity; not the alphabetically first ones (on a
    real vault, 40 links of one note)."""
    rows = relation_graph(oracle, RELATIONS_READ)
    degree: dict[str, int] = {}
    for subject, _, obj, _ in rows:
        for term in (subject, obj):
            degree[relation_key(term)] = degree.get(relation_key(term), 0) + 1
    rank = lambda r: (-r[3], -(degree[relation_key(r[0])] + degree[relation_key(r[2])]), r[0], r[1], r[2])  # noqa: E731
    drawn: dict[str, int] = {}
    out = []
    for row in sorted(rows, key=rank):  # at most RELATIONS_PER_ENTITY each: one hub's 40 links were a star
        ends = (relation_key(row[0]), relation_key(row[2]))
        if all(drawn.get(e, 0) < RELATIONS_PER_ENTITY for e in ends):
            out.append(row)
            for e in ends:
                drawn[e] = drawn.get(e, 0) + 1
            if len(out) == limit:
                break
    return out


def _note_names(oracle: Oracle) -> dict[str, IndexedNote]:
    """Every way a relation's end names a note (relation_key'd): its title, its path without the extension and its
    file name's stem (what `[[wikilinks]]` write). A name two notes share names neither."""
    names: dict[str, IndexedNote | None] = {}
    for file, note in oracle.store.notes().items():
        stem = file.rsplit(".", 1)[0]
        for name in {relation_key(n) for n in (note.title or "", stem, stem.rsplit("/", 1)[-1]) if n}:
            names[name] = note if names.get(name, note) is note else None
    return {name: note for name, note in names.items() if note is not None}


RELATIONS_PER_ENTITY = 4  # relations drawn at most per entity
RELATIONS_READ = 5000  # relations read to find the hubs among (nat-brain: 1,081 links)


# Over complexity 10 on purpose: the graph's parts (concepts, co-occurrence, notes, relations) built over the same
# counts.
def graph(oracle: Oracle, limit: int = 40, documents: bool = True, relations: int = GRAPH_RELATIONS,  # noqa: C901
          max_documents: int = GRAPH_DOCUMENTS) -> Graph:
    """The vault's own top concepts (`vault_concepts`), how often they share a note, the notes that carry most
    of them (at most `max_documents`), and the relations notes state most often between entities."""
    per_file_all, source = vault_concepts(oracle.store)
    counts: dict[str, int] = {}
    for cs in per_file_all.values():
        for c in cs:
            counts[c] = counts.get(c, 0) + 1
    top = _rank(counts, max(oracle.store.note_count(), 1))[:limit]
    keep = {c for c, _ in top}
    per_file = {f: cs & keep for f, cs in per_file_all.items() if cs & keep}
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
        shown = sorted(per_file, key=lambda f: (-len(per_file[f]), f))[:max_documents]
        for file in sorted(shown):
            note = notes.get(file)
            nodes.append(GraphNode(id=f"file:{file}", label=(note.title if note else None) or file, kind="document",
                                   count=len(per_file[file]), type=note.type if note else None))
            edges += [GraphEdge(source=f"file:{file}", target=f"concept:{c}", weight=1, kind="tagged")
                      for c in sorted(per_file[file])]
    entities: dict[str, GraphNode] = {}
    hubs = _hub_relations(oracle, relations)
    # A wikilink's two ends name one note two ways (its title as subject, `[[its-file-slug]]` as object): each end
    # that names a note is that note's node, `file:PATH`, the same as its document node (issue 40: a linked note
    # was drawn twice, once per spelling).
    as_note = _note_names(oracle) if hubs else {}
    drawn = {nd.id: nd for nd in nodes}
    for subject, predicate, obj, n in hubs:
        ends = []
        for term in (subject, obj):
            note = as_note.get(relation_key(term))
            if note is not None:
                node = drawn.get(f"file:{note.path}") or entities.setdefault(f"file:{note.path}", GraphNode(
                    id=f"file:{note.path}", label=note.title or note.path, kind="entity", count=0, type=note.type))
            else:
                node = entities.setdefault(relation_key(term), GraphNode(
                    id=f"entity:{relation_key(term)}", label=term, kind="entity", count=0))
            if node.kind == "entity":
                node.count += n
            ends.append(node.id)
        edges.append(GraphEdge(source=ends[0], target=ends[1], weight=n, kind="relation", label=predicate))
    nodes += [entities[key] for key in sorted(entities)]
    return Graph(nodes=nodes, edges=edges, documents_total=len(per_file) if documents else 0, concepts_from=source)
