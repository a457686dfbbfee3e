"""Reads of the index for services: typed rows, no SQL outside the store.

Every read runs on the calling thread's own connection (`Store.fetch`): WAL lets any number of them read
while the one writer writes, instead of queueing on a shared connection. Statements are hand-written for
the same reason as the keyword leg's: a few are joins or GROUP BYs sqlite-utils' `rows_where` cannot state,
and its `query` wraps each read in a SAVEPOINT (a write, refused on a `query_only` reader).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oracle_indexer.notes.fields import FieldValue, value_key
from oracle_indexer.notes.parse import compose_embed_text, relation_key
from oracle_indexer.store.rows import (
    SECTION_COLUMNS,
    FileState,
    IndexedNote,
    RelationRow,
    Section,
    SectionFacts,
    batched,
    content_state,
    marks,
    parser_version,
)
from oracle_indexer.store.types import Filters, Pattern

if TYPE_CHECKING:  # numpy loads on first use: a server answers its handshake without it
    import numpy as np

_NOTE_COLUMNS = "path, type, title, size, mtime_ns, chunk_count, file_hash"
_SUGGEST_SOURCES = {
    "concept": "SELECT concept AS value, count(*) AS weight FROM doc_concepts GROUP BY concept",
    "project": "SELECT project AS value, count(*) AS weight FROM documents WHERE project IS NOT NULL AND"
               " project != '' GROUP BY project",
    "path": "SELECT path AS value, 0 AS weight FROM files",
    "field": "SELECT field AS value, count(DISTINCT file) AS weight FROM note_fields GROUP BY field",
}


def _note(row: Sequence) -> IndexedNote:
    path, type_, title, size, mtime_ns, chunk_count, file_hash = row
    return IndexedNote(path, type_, title, size or 0, mtime_ns, chunk_count or 0, file_hash or "")


def _like(text: str) -> str:
    """`text` as a LIKE pattern matched literally (`%`, `_` and the escape itself are escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _relation_where(pattern: Pattern) -> tuple[str, list[str]]:
    clauses, args = [], []
    for column, term in zip(("subject_key", "predicate_key", "object_key"), pattern):
        if term:
            clauses.append(f"r.{column} = ?")
            args.append(relation_key(term))
    return (" AND ".join(clauses) or "1 = 1"), args


class Reads:
    """The read half of `Store`. `fetch` (provided by Store) runs one statement on this thread's reader."""

    dialect: str  # provided by Store and PgStore

    def fetch(self, sql: str, args: Sequence = ()) -> list[tuple]:  # provided by Store
        raise NotImplementedError

    def _scalar(self, sql: str, args: Sequence = ()) -> int:
        return self.fetch(sql, args)[0][0]

    # -- meta, files, sync ------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self.fetch("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def file_states(self) -> dict[str, FileState]:
        rows = self.fetch("SELECT path, mtime_ns, size, file_hash FROM files")
        return {path: FileState(mtime_ns or 0, size or 0, file_hash or "") for path, mtime_ns, size, file_hash in rows}

    def index_state(self) -> str:
        """SHA-256 of every indexed note's path and file hash, in path order: equal for two indexes of the same
        files (however and whenever they were built), different once any note changes, appears or vanishes.
        Kept while `change_fingerprint` stays put, so a consult does not read every note's row each time."""
        fingerprint = self.change_fingerprint()
        cached = getattr(self, "_index_state", None)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        digest = hashlib.sha256()
        for path, file_hash in self.fetch("SELECT path, coalesce(file_hash, '') FROM files ORDER BY path"):
            digest.update(f"{path}\x00{file_hash}\n".encode())
        state = digest.hexdigest()
        self._index_state = (fingerprint, state)
        return state

    def content_state(self) -> tuple[int, int, int]:
        """(XOR of every note's path and file hash, sections, the parser version that parsed them): what
        `rows.content_state` says of this index, its section count and its meta's `parser_version`. Two indexes of
        the same files parsed alike give the same triple; the PostgreSQL store reads its XOR from one row a trigger
        keeps (PgStore.content_state)."""
        notes = self.fetch("SELECT path, file_hash FROM files")
        return content_state(notes), self.chunk_count(), parser_version(self.get_meta("parser_version"))

    def file_chunk_ids(self, rel: str) -> list[str]:
        return [r[0] for r in self.fetch("SELECT id FROM documents WHERE file = ? ORDER BY position", (rel,))]

    def in_vector_flags(self) -> dict[str, int]:
        """section id -> 1 when its vector is stored, 0 when pending."""
        return dict(self.fetch("SELECT id, in_vector FROM documents"))

    def skipped(self) -> dict[str, str]:
        return dict(self.fetch("SELECT path, reason FROM skipped ORDER BY path"))

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        import numpy as np

        out: dict[str, np.ndarray] = {}
        for part in batched(keys):
            for key, blob in self.fetch(f"SELECT key, vector FROM embeddings WHERE key IN ({marks(len(part))})", part):
                out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def pending_vectors(self, limit: int | None = None) -> list[tuple[str, str, str, str, str | None]]:
        """(id, embed_key, type, file, project) of sections not yet in the vector store."""
        sql = "SELECT id, embed_key, type, file, project FROM documents WHERE in_vector = 0 ORDER BY rowid"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return self.fetch(sql)

    def pending_count(self) -> int:
        return self._scalar("SELECT count(*) FROM documents WHERE in_vector = 0")

    def embedded_sample(self, n: int) -> list[tuple[str, str]]:
        """(id, embed_key) of up to n chunks marked embedded, spread over the index from its oldest to its newest
        (the vector store's self-check: a store that lost old segments still holds the newest vectors)."""
        total = self.embedded_count()
        offsets = sorted({min(total - 1, i * total // max(1, n - 1)) for i in range(n)}) if total else []
        out: list[tuple[str, str]] = []
        for offset in offsets:
            out += self.fetch("SELECT id, embed_key FROM documents WHERE in_vector = 1 ORDER BY rowid LIMIT 1 OFFSET ?",
                              (offset,))
        return out

    def embedded_count(self) -> int:
        """Chunks marked as being in the vector store (what a healthy store holds at least)."""
        return self._scalar("SELECT count(*) FROM documents WHERE in_vector = 1")

    def embed_texts(self, ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for part in batched(ids):
            sql = f"SELECT id, title, heading, content FROM documents WHERE id IN ({marks(len(part))})"
            for cid, title, heading, content in self.fetch(sql, part):
                out[cid] = compose_embed_text(title, heading, content)
        return out

    # -- sections (search hydrates through these; results must stay byte-identical) ---------------
    def section_facts(self, ids: Sequence[str]) -> dict[str, SectionFacts]:
        """What ranking needs of each candidate (its note, kind, parent, hashes, size), without the text:
        a search groups and de-duplicates a pool of ~100 candidates but shows only a page of them."""
        out: dict[str, SectionFacts] = {}
        for part in batched(ids):
            sql = (
                "SELECT d.id, d.file, d.kind, d.parent_id, d.content_hash, f.body_hash, d.heading, d.line_start,"
                " d.line_end, f.lang, f.lang_from, f.translation_key"
                f" FROM documents d INDEXED BY documents_sections LEFT JOIN files f ON f.path = d.file"
                f" WHERE d.id IN ({marks(len(part))})"
            )  # the index holds every column read (schema.py): SQLite would take the primary key's and read the rows
            for row in self.fetch(sql, part):
                out[row[0]] = SectionFacts(*row)
        return out

    def structural_languages(self) -> dict[str, int]:
        """Language -> notes, for the notes whose language their frontmatter or folder states (not guessed
        from text): whether, and among which languages, a search prefers the asker's
        (server/services/capabilities/search/pipeline.py)."""
        rows = self.fetch("SELECT lang, count(*) FROM files WHERE lang IS NOT NULL"
                          " AND lang_from IN ('frontmatter', 'folder') GROUP BY lang ORDER BY lang")
        return {lang: n for lang, n in rows}

    def note_languages(self) -> dict[str, int]:
        """Language -> notes, every note's language however it was found (stated or guessed from its text);
        "unknown" for notes too short to tell: what the notes look like to an asker
        (server/services/support/guide.py)."""
        rows = self.fetch("SELECT coalesce(lang, 'unknown'), count(*) FROM files GROUP BY 1 ORDER BY 1")
        return {lang: n for lang, n in rows}

    def sections_by_id(self, ids: Sequence[str]) -> dict[str, Section]:
        """The sections among `ids` that are indexed, as typed rows."""
        out: dict[str, Section] = {}
        for part in batched(ids):
            for row in self.fetch(f"SELECT {SECTION_COLUMNS} FROM documents WHERE id IN ({marks(len(part))})", part):
                out[row[0]] = Section.from_row(row)
        return out

    def documents_by_id(self, ids: Sequence[str]) -> dict[str, dict]:
        """Every column of each section as a dict (concepts decoded): the shape
        server/services/capabilities/search/pipeline.py hydrates a page from. New code uses `sections_by_id`."""
        out: dict[str, dict] = {}
        for part in batched(ids):
            for row in self.rows(f"SELECT rowid AS rowid, * FROM documents WHERE id IN ({marks(len(part))})", part):
                row["concepts"] = json.loads(row["concepts"] or "[]")
                out[row["id"]] = row
        return out

    def rows(self, sql: str, args: Sequence = ()) -> list[dict]:
        """Rows of any read as dicts, for tests and benchmarks that inspect the index; services use the
        typed reads."""
        return self.fetch_dicts(sql, args)

    def fetch_dicts(self, sql: str, args: Sequence = ()) -> list[dict]:  # provided by Store
        raise NotImplementedError

    def file_sections(self, rel: str) -> list[Section]:
        """A note's sections in file order."""
        return [Section.from_row(r) for r in self.fetch(
            f"SELECT {SECTION_COLUMNS} FROM documents WHERE file = ? ORDER BY position", (rel,))]

    def section_family(self, section_id: str) -> list[Section]:
        """A section and the bullets under it (its children by parent_id)."""
        return [Section.from_row(r) for r in self.fetch(
            f"SELECT {SECTION_COLUMNS} FROM documents WHERE id = ? OR parent_id = ?", (section_id, section_id))]

    def ids_with_hash_prefix(self, prefix: str, limit: int = 20) -> list[str]:
        """Sections whose content hash starts with `prefix` (a cited hash may be shortened)."""
        rows = self.fetch("SELECT id FROM documents WHERE content_hash GLOB ? ORDER BY id LIMIT ?",
                          (prefix + "*", limit))
        return [r[0] for r in rows]

    def section_ids_from(self, start: str, limit: int) -> list[str]:
        """Section ids that start with `start`, in id order (completion of a section URI)."""
        rows = self.fetch("SELECT id FROM documents WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                          (start, start + "\U0010ffff", limit))
        return [r[0] for r in rows]

    def has_thai(self) -> bool:
        """Whether any section holds Thai letters (a server then loads the Thai segmenter ahead of queries)."""
        return bool(self.fetch("SELECT 1 FROM documents WHERE content GLOB '*[ก-๛]*' LIMIT 1"))

    def chunk_count(self) -> int:
        """How many sections the index holds."""
        return self._scalar("SELECT count(*) FROM documents")

    # -- browsing: reflect, list, concepts, graph -----------------------------------------------
    def whole_section_count(self, types: Sequence[str]) -> int:
        """Sections of these note types that are whole sections (not a lone bullet)."""
        return self._scalar(f"SELECT count(*) FROM documents WHERE type IN ({marks(len(types))}) AND kind != 'bullet'",
                            types)

    def whole_section_at(self, types: Sequence[str], index: int) -> Section | None:
        """The `index`-th whole section of these types in id order (reflect picks one at random)."""
        rows = self.fetch(f"SELECT {SECTION_COLUMNS} FROM documents WHERE type IN ({marks(len(types))})"
                          " AND kind != 'bullet' ORDER BY id LIMIT 1 OFFSET ?", [*types, index])
        return Section.from_row(rows[0]) if rows else None

    def list_sections(self, filters: Filters, first_per_note: bool, limit: int,
                      offset: int) -> tuple[int, list[tuple[Section, int]]]:
        """Newest first (note date, then time of day when known, then path), deterministic: (total,
        [(section, sections in its note or 1)]) of the sections `filters` let through (a type, a `where`
        filter's notes, ...). With `first_per_note`, each note once, by its first section."""
        where, args = filters.sql(self.dialect)
        if first_per_note:
            total = self._scalar(f"SELECT count(DISTINCT d.file) FROM documents d WHERE {where}", args)
            columns = ", ".join(f"s.{c.strip()}" for c in SECTION_COLUMNS.split(","))
            order = "(s.date IS NULL), s.date DESC, s.timestamp DESC NULLS LAST, s.file, s.position, s.id"
            sql = (
                f"SELECT {columns}, g.n FROM (SELECT d.file, min(d.position) AS first, count(*) AS n FROM documents d"
                f" WHERE {where} GROUP BY d.file) g JOIN documents s ON s.file = g.file AND s.position = g.first"
                f" ORDER BY {order} LIMIT ? OFFSET ?"
            )
        else:
            total = self._scalar(f"SELECT count(*) FROM documents d WHERE {where}", args)
            order = "(d.date IS NULL), d.date DESC, d.timestamp DESC NULLS LAST, d.file, d.position, d.id"
            columns = ", ".join(f"d.{c.strip()}" for c in SECTION_COLUMNS.split(","))
            sql = f"SELECT {columns}, 1 FROM documents d WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?"
        return total, [(Section.from_row(r), r[17]) for r in self.fetch(sql, [*args, limit, offset])]

    def concept_counts(self, doc_type: str | None, limit: int) -> tuple[int, list[tuple[str, int]]]:
        """(distinct concepts, [(concept, notes carrying it in any section)]), most carried first, ties
        alphabetical."""
        where, args = ("1 = 1", []) if doc_type is None else ("d.type = ?", [doc_type])
        base = f"FROM doc_concepts c JOIN documents d ON d.id = c.doc_id WHERE {where}"
        total = self._scalar(f"SELECT count(DISTINCT c.concept) {base}", args)
        rows = self.fetch(f"SELECT c.concept, count(DISTINCT d.file) AS n {base} GROUP BY c.concept"
                          " ORDER BY n DESC, c.concept LIMIT ?", [*args, limit])
        return total, [(c, n) for c, n in rows]

    def concept_sections(self, concepts: Sequence[str] | None = None) -> dict[str, int]:
        """Concept -> sections carrying it, for `concepts` (every concept when None). Read from the concept
        table's own index alone: counting notes instead joins every carrying section's row (~1 s for all of
        nat-brain's concepts from a cold page cache, against ~70 ms), and what the caller wants is how common a
        concept is (server/services/support/guide.py, server/services/capabilities/search/vocabulary.py)."""
        if concepts is None:
            return dict(self.fetch("SELECT concept, count(*) FROM doc_concepts GROUP BY concept"))
        out: dict[str, int] = {}
        for part in batched(list(dict.fromkeys(concepts))):
            out.update(self.fetch(f"SELECT concept, count(*) FROM doc_concepts WHERE concept IN ({marks(len(part))})"
                                  " GROUP BY concept", part))
        return out

    def note_concepts(self) -> list[tuple[str, str]]:
        """(note path, concept) pairs, by path: which concepts each note carries in any section."""
        return [(f, c) for f, c in self.fetch(
            "SELECT DISTINCT d.file, c.concept FROM doc_concepts c JOIN documents d ON d.id = c.doc_id"
            " ORDER BY d.file")]

    def notes(self) -> dict[str, IndexedNote]:
        """Every indexed note by path."""
        return {r[0]: _note(r) for r in self.fetch(f"SELECT {_NOTE_COLUMNS} FROM files")}

    def note(self, rel: str) -> IndexedNote | None:
        rows = self.fetch(f"SELECT {_NOTE_COLUMNS} FROM files WHERE path = ?", (rel,))
        return _note(rows[0]) if rows else None

    def note_dates(self, files: Sequence[str] | None = None
                   ) -> dict[str, tuple[str, str | None, str | None, str | None]]:
        """note path -> (type, date, last_verified, review_after): what freshness is judged on (every note when
        `files` is None). The date is the note's (the same on each of its sections)."""
        sql = ("SELECT f.path, f.type, (SELECT d.date FROM documents d WHERE d.file = f.path ORDER BY d.position"
               " LIMIT 1), f.last_verified, f.review_after FROM files f")
        if files is None:
            return {r[0]: tuple(r[1:]) for r in self.fetch(sql + " ORDER BY f.path")}
        out: dict = {}
        for part in batched(sorted(set(files))):
            out.update({r[0]: tuple(r[1:]) for r in self.fetch(sql + f" WHERE f.path IN ({marks(len(part))})", part)})
        return out

    def notes_after(self, after: str, limit: int) -> list[IndexedNote]:
        """Up to `limit` notes whose path sorts after `after`, in path order (a page of a listing)."""
        return [_note(r) for r in self.fetch(f"SELECT {_NOTE_COLUMNS} FROM files WHERE path > ? ORDER BY path LIMIT ?",
                                             (after, limit))]

    def retro_headings(self) -> list[tuple[str, str, int]]:
        """(note, heading, first position) of each whole-section heading in retrospectives."""
        return [(f, h, p) for f, h, p in self.fetch(
            "SELECT file, heading, min(position) AS position FROM documents WHERE type = 'retro' AND heading != ''"
            " AND kind != 'bullet' GROUP BY file, heading")]

    def suggest(self, source: str, typed: str) -> list[str]:
        """Values of `source` ("concept", "project", "path", "field": frontmatter field names) containing `typed`
        case-insensitively: those starting with it first, then by weight (sections carrying it; notes for a
        field), then alphabetically."""
        pattern = _like(typed.lower())
        rows = self.fetch(
            f"SELECT value, weight, lower(value) LIKE ? ESCAPE '\\' AS prefix FROM ({_SUGGEST_SOURCES[source]})"
            " WHERE lower(value) LIKE ? ESCAPE '\\' ORDER BY prefix DESC, weight DESC, value",
            [pattern + "%", "%" + pattern + "%"],
        )
        return [r[0] for r in rows]

    def suggest_field_values(self, field: str, typed: str) -> list[str]:
        """Values of one frontmatter field containing `typed` (compared by key: case-folded), as first
        written: those starting with it first, then by how many notes hold them, then alphabetically."""
        pattern = _like(value_key(typed))
        rows = self.fetch(
            "SELECT min(value), count(DISTINCT file) AS weight, value_key LIKE ? ESCAPE '\\' AS prefix"
            " FROM note_fields WHERE field = ? AND value_key LIKE ? ESCAPE '\\' GROUP BY value_key"
            " ORDER BY prefix DESC, weight DESC, value_key",
            [pattern + "%", field, "%" + pattern + "%"],
        )
        return [r[0] for r in rows]

    def field_rows(self, fields: Sequence[str]) -> list[tuple[str, FieldValue]]:
        """(note, value) for every stored value of the named frontmatter fields, in note and field order: what
        a `where` filter is decided on (indexer/notes/fields.py select_notes)."""
        out: list[tuple[str, FieldValue]] = []
        for part in batched(sorted(set(fields))):
            out += [(file, FieldValue(name, value, key, bool(is_list)))
                    for file, name, value, key, is_list in self.fetch(
                "SELECT file, field, value, value_key, is_list FROM note_fields"
                f" WHERE field IN ({marks(len(part))}) ORDER BY file, field, position", part)]
        return out

    # -- counts (stats, server instructions) ----------------------------------------------------
    def counts(self) -> dict[str, int]:
        q = self._scalar
        return {
            "files": q("SELECT count(*) FROM files"),
            "chunks": q("SELECT count(*) FROM documents"),
            "embedded": q("SELECT count(*) FROM documents WHERE in_vector = 1"),
            "cached_embeddings": q("SELECT count(*) FROM embeddings"),
            "skipped": q("SELECT count(*) FROM skipped"),
        }

    def note_count(self) -> int:
        return self._scalar("SELECT count(*) FROM files")

    def notes_with_warnings(self) -> int:
        return self._scalar("SELECT count(*) FROM files WHERE warnings != '[]'")

    def sections_by_type(self) -> dict[str, int]:
        return dict(self.fetch("SELECT type, count(*) FROM documents GROUP BY type ORDER BY type"))

    def notes_by_type(self) -> dict[str, int]:
        return dict(self.fetch("SELECT type, count(*) FROM files GROUP BY type ORDER BY type"))

    def concept_total(self) -> int:
        return self._scalar("SELECT count(DISTINCT concept) FROM doc_concepts")

    def change_fingerprint(self) -> tuple[int, float, int]:
        """(notes, last indexed_at, sections): moves whenever any process changes the index."""
        return tuple(self.fetch(
            "SELECT count(*), coalesce(max(indexed_at), 0), coalesce(sum(chunk_count), 0) FROM files")[0])

    def section_hashes(self, paths: Sequence[str] | None) -> dict[str, dict[str, str]]:
        """note path -> {section id: content hash}, for `paths` or every note."""
        out: dict[str, dict[str, str]] = {}
        if paths is None:
            rows = self.fetch("SELECT file, id, content_hash FROM documents")
        else:
            rows = [r for part in batched(paths)
                    for r in self.fetch("SELECT file, id, content_hash FROM documents"
                                        f" WHERE file IN ({marks(len(part))})", part)]
        for file, cid, digest in rows:
            out.setdefault(file, {})[cid] = digest
        return out

    # -- relations and supersession ---------------------------------------------------------------
    def relations_page(self, pattern: Pattern, limit: int, offset: int) -> tuple[int, list[RelationRow]]:
        """(matching triplets, a page of them with the note stating each and its first section)."""
        where, args = _relation_where(pattern)
        total = self._scalar(f"SELECT count(*) FROM relations r WHERE {where}", args)
        rows = self.fetch(
            "SELECT r.subject, r.predicate, r.object, r.file, f.title, f.type,"
            " (SELECT d.id FROM documents d WHERE d.file = r.file ORDER BY d.position LIMIT 1) AS id"
            f" FROM relations r JOIN files f ON f.path = r.file WHERE {where}"
            " ORDER BY r.subject_key, r.predicate_key, r.object_key, r.file, r.position LIMIT ? OFFSET ?",
            [*args, limit, offset],
        )
        return total, [RelationRow(s, p, o, file, title or "", type_, id_ or "")
                       for s, p, o, file, title, type_, id_ in rows]

    def stated_relations(self, pattern: Pattern, files: Sequence[str] | None = None) -> list[tuple[str, str, str, str]]:
        """(subject, predicate, object, note) matching `pattern` (among `files` when given), in note order."""
        where, args = _relation_where(pattern)
        if files is not None:
            where += f" AND r.file IN ({marks(len(files))})"
            args += list(files)
        return [(s, p, o, f) for s, p, o, f in self.fetch(
            f"SELECT r.subject, r.predicate, r.object, r.file FROM relations r WHERE {where}"
            " ORDER BY r.file, r.position",
            args)]

    def first_sections(self, files: Sequence[str], filters: Filters) -> dict[str, str]:
        """note -> its first section passing the filters."""
        where, args = filters.sql(self.dialect)
        out: dict[str, str] = {}
        for part in batched(files):
            for doc_id, file in self.fetch(
                f"SELECT d.id, d.file FROM documents d WHERE d.file IN ({marks(len(part))}) AND {where}"
                " ORDER BY d.file, d.position",
                [*part, *args],
            ):
                out.setdefault(file, doc_id)
        return out

    def relation_counts(self, limit: int) -> list[tuple[str, str, str, int]]:
        """(subject, predicate, object, notes stating it), most stated first; terms as first written
        (alphabetically first spelling) while matched by key."""
        return [(s, p, o, n) for s, p, o, n in self.fetch(
            "SELECT min(subject), min(predicate), min(object), count(DISTINCT file) AS n FROM relations"
            " GROUP BY subject_key, predicate_key, object_key ORDER BY n DESC, subject_key, predicate_key, object_key"
            " LIMIT ?", (limit,))]

    def superseded_files(self, files: Sequence[str] | None = None) -> dict[str, str]:
        """note -> the successor its frontmatter names (`superseded_by`), for `files` or every note, by path."""
        if files is None:
            return dict(self.fetch("SELECT file, target FROM superseded_files ORDER BY file"))
        out: dict[str, str] = {}
        for part in batched(sorted(files)):
            out.update(self.fetch(f"SELECT file, target FROM superseded_files WHERE file IN ({marks(len(part))})",
                                  part))
        return out
