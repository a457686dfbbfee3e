"""Writes to the index: one transaction per note (its sections, both FTS5 tables, concepts, relations,
supersession), skips, the embedding cache and vector flags.

Hand-written statements, in one `BEGIN IMMEDIATE` per call: sqlite-utils' insert/upsert open their own
`with conn:` transaction, which on this autocommit connection would commit a note's transaction halfway
(a reader could then see a note with half its sections), and the FTS5 rows need each section's rowid.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from oracle_indexer.models.embed import text_key
from oracle_indexer.notes.fields import FieldValue
from oracle_indexer.notes.language import NoteLanguage
from oracle_indexer.notes.parse import Chunk, Relation, compose_embed_text, relation_key
from oracle_indexer.notes.segment import segment
from oracle_indexer.store.rows import FileState
from oracle_indexer.store.sqlite.schema import CONTENT_TABLES

if TYPE_CHECKING:  # numpy loads on first use: a server answers its handshake without it
    import numpy as np


class Writes:
    """The write half of `Store`: everything here runs on the one writer connection under its lock."""

    conn: sqlite3.Connection
    model_id: str  # provided by Store

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:  # provided by Store
        raise NotImplementedError

    def skipped(self) -> dict[str, str]:  # provided by Reads
        raise NotImplementedError

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- files ------------------------------------------------------------------------------------
    def forget_file_states(self) -> None:
        """Forget every file's stat and hash, so the next sync re-parses every note (parsing gained fields, or
        the frontmatter schema that checks them changed). Section ids and vectors stay."""
        with self.transaction() as conn:
            conn.execute("UPDATE files SET mtime_ns = 0, file_hash = ''")

    def touch_file(self, rel: str, mtime_ns: int, size: int) -> None:
        """Content unchanged but mtime moved (a `touch`, a checkout): remember the new stat."""
        with self.transaction() as conn:
            conn.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (mtime_ns, size, rel))

    def replace_file(
        self,
        rel: str,
        doc_type: str,
        title: str,
        state: FileState,
        chunks: Sequence[Chunk],
        warnings: Sequence[str],
        relations: Sequence[Relation] = (),
        superseded_by: str | None = None,
        language: NoteLanguage = NoteLanguage(),
        verified: tuple[str | None, str | None] = (None, None),
        fields: Sequence[FieldValue] = (),
    ) -> list[str]:
        """Swap a file's chunks in one transaction; return the chunk ids that disappeared.

        A chunk whose id and embedded text are unchanged keeps its vector (an edit elsewhere in the file,
        or a re-parse after a schema change, re-upserts nothing); other chunks start as not in the vector
        store, and the caller upserts them and `mark_in_vector`s.
        """
        with self.transaction() as conn:
            embedded = {
                doc_id: key
                for doc_id, key in conn.execute(
                    "SELECT id, embed_key FROM documents WHERE file = ? AND in_vector = 1", (rel,))
            }
            old_ids = self._delete_file_rows(conn, rel)
            for position, chunk in enumerate(chunks):
                embed_key = _embed_key(chunk, self.model_id)
                cur = conn.execute(
                    "INSERT INTO documents (id, file, type, kind, title, heading, content, line_start, line_end,"
                    " content_hash, embed_key, concepts, project, date, parent_id, position, in_vector, timestamp)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        chunk.id, chunk.file, chunk.type, chunk.kind, chunk.title, chunk.heading, chunk.content,
                        chunk.line_start, chunk.line_end, chunk.content_hash, embed_key,
                        json.dumps(list(chunk.concepts), ensure_ascii=False), chunk.project, chunk.date,
                        chunk.parent_id, position, int(embedded.get(chunk.id) == embed_key), chunk.timestamp,
                    ),
                )
                rowid = cur.lastrowid
                conn.execute(
                    "INSERT INTO documents_fts (rowid, id, title, heading, content, concepts) VALUES (?,?,?,?,?,?)",
                    (rowid, chunk.id, *section_text(chunk)),
                )
                conn.execute(
                    "INSERT INTO documents_tri (rowid, title, content) VALUES (?,?,?)",
                    (rowid, chunk.title, chunk.content),
                )
                conn.executemany(
                    "INSERT OR IGNORE INTO doc_concepts (doc_id, concept) VALUES (?, ?)",
                    [(chunk.id, c) for c in chunk.concepts],
                )
            conn.execute(
                "INSERT INTO files (path, type, title, mtime_ns, size, file_hash, chunk_count, warnings, indexed_at,"
                " body_hash, lang, lang_from, translation_key, last_verified, review_after)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(path) DO UPDATE SET type=excluded.type,"
                " title=excluded.title, mtime_ns=excluded.mtime_ns, size=excluded.size, file_hash=excluded.file_hash,"
                " chunk_count=excluded.chunk_count, warnings=excluded.warnings, indexed_at=excluded.indexed_at,"
                " body_hash=excluded.body_hash, lang=excluded.lang, lang_from=excluded.lang_from,"
                " translation_key=excluded.translation_key, last_verified=excluded.last_verified,"
                " review_after=excluded.review_after",
                (rel, doc_type, title, state.mtime_ns, state.size, state.file_hash, len(chunks),
                 json.dumps(list(warnings), ensure_ascii=False), time.time(), body_hash(title, chunks),
                 language.lang, language.source, language.translation_key, *verified),
            )
            _write_note_text(conn, rel, title, chunks)
            conn.executemany(
                "INSERT INTO relations (file, position, subject, predicate, object, subject_key, predicate_key,"
                " object_key) VALUES (?,?,?,?,?,?,?,?)",
                [(rel, n, r.subject, r.predicate, r.object, relation_key(r.subject), relation_key(r.predicate),
                  relation_key(r.object)) for n, r in enumerate(relations)],
            )
            if superseded_by:
                conn.execute("INSERT INTO superseded_files (file, target) VALUES (?, ?)", (rel, superseded_by))
            conn.executemany(
                "INSERT INTO note_fields (file, field, position, value, value_key, is_list) VALUES (?,?,?,?,?,?)",
                [(rel, f.field, n, f.value, f.key, int(f.is_list)) for n, f in enumerate(fields)],
            )
            conn.execute("DELETE FROM skipped WHERE path = ?", (rel,))
        new_ids = {c.id for c in chunks}
        return [i for i in old_ids if i not in new_ids]

    def remove_file(self, rel: str) -> list[str]:
        """Drop a vanished file from the index; return its chunk ids for the vector store."""
        with self.transaction() as conn:
            ids = self._delete_file_rows(conn, rel)
            conn.execute("DELETE FROM files WHERE path = ?", (rel,))
            conn.execute("DELETE FROM skipped WHERE path = ?", (rel,))
        return ids

    @staticmethod
    def _delete_file_rows(conn: sqlite3.Connection, rel: str) -> list[str]:
        conn.execute("DELETE FROM notes_fts WHERE rowid = (SELECT rowid FROM files WHERE path = ?)", (rel,))
        rows = conn.execute("SELECT rowid, id FROM documents WHERE file = ?", (rel,)).fetchall()
        if rows:
            rowids = [(r[0],) for r in rows]
            conn.executemany("DELETE FROM documents_fts WHERE rowid = ?", rowids)
            conn.executemany("DELETE FROM documents_tri WHERE rowid = ?", rowids)
            conn.executemany("DELETE FROM doc_concepts WHERE doc_id = ?", [(r[1],) for r in rows])
            conn.execute("DELETE FROM documents WHERE file = ?", (rel,))
        conn.execute("DELETE FROM relations WHERE file = ?", (rel,))
        conn.execute("DELETE FROM superseded_files WHERE file = ?", (rel,))
        conn.execute("DELETE FROM note_fields WHERE file = ?", (rel,))
        return [r[1] for r in rows]

    def clear(self) -> None:
        """Forget every file and chunk (for --full); the embedding cache and logs survive."""
        with self.transaction() as conn:
            for table in CONTENT_TABLES:
                conn.execute(f"DELETE FROM {table}")

    # -- skipped files ----------------------------------------------------------------------------
    def record_skip(self, rel: str, reason: str) -> list[str]:
        """A file that cannot be indexed: its reason is kept and any earlier chunks are removed."""
        ids = self.remove_file(rel)
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO skipped (path, reason, seen_at) VALUES (?,?,?) ON CONFLICT(path) DO UPDATE SET"
                " reason = excluded.reason, seen_at = excluded.seen_at",
                (rel, reason, time.time()),
            )
        return ids

    def forget_skips(self, present: Iterable[str]) -> None:
        keep = set(present)
        gone = [(p,) for p in self.skipped() if p not in keep]
        with self.transaction() as conn:
            conn.executemany("DELETE FROM skipped WHERE path = ?", gone)

    # -- embeddings -------------------------------------------------------------------------------
    def cache_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings (key, vector) VALUES (?, ?)",
                [(k, v.astype("float32").tobytes()) for k, v in vectors.items()],
            )

    def mark_in_vector(self, ids: Sequence[str], value: int = 1) -> None:
        with self.transaction() as conn:
            conn.executemany("UPDATE documents SET in_vector = ? WHERE id = ?", [(value, i) for i in ids])

    def mark_all_out_of_vector(self) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE documents SET in_vector = 0")

    def rekey(self, model: str) -> int:
        """Every section's embed key for another embedding model, and every section out of the vector store
        (their vectors come from that model's cache entries, or it embeds them). The keyword index is not
        touched. Returns the number of sections."""
        with self.transaction() as conn:
            rows = conn.execute("SELECT id, title, heading, content FROM documents").fetchall()
            conn.executemany(
                "UPDATE documents SET embed_key = ?, in_vector = 0 WHERE id = ?",
                [(text_key(compose_embed_text(title, heading, content), model), doc_id)
                 for doc_id, title, heading, content in rows],
            )
            conn.execute("INSERT INTO meta(key, value) VALUES ('embedding_model', ?)"
                         " ON CONFLICT(key) DO UPDATE SET value = excluded.value", (model,))
        return len(rows)


def _write_note_text(conn: sqlite3.Connection, rel: str, title: str, chunks: Sequence[Chunk]) -> None:
    """The note whole in `notes_fts`, under its `files` rowid (the row was just upserted). Bullets are left
    out: their section's text already holds them, and counting them twice would inflate term counts."""
    (rowid,) = conn.execute("SELECT rowid FROM files WHERE path = ?", (rel,)).fetchone()
    aliases = next((c.aliases for c in chunks), ())
    conn.execute("INSERT INTO notes_fts (rowid, title, body) VALUES (?,?,?)",
                 (rowid, *note_text(title, aliases, chunks)))


def section_text(chunk: Chunk) -> tuple[str, str, str, str]:
    """(title, heading, content, concepts) of a section as the word table indexes them (both stores use this):
    segmented, the note's aliases searched as its title."""
    return (segment(" ".join((chunk.title, *chunk.aliases))), segment(chunk.heading), segment(chunk.content),
            " ".join(chunk.concepts))


def note_text(title: str, aliases: Sequence[str], chunks: Sequence[Chunk]) -> tuple[str, str]:
    """(title, body) of a note as the whole-note word table indexes them, segmented (both stores use this)."""
    body = "\n".join(f"{c.heading}\n{c.content}" for c in chunks if c.kind != "bullet")
    return segment(" ".join((title, *aliases))), segment(body)


def body_hash(title: str, chunks: Sequence[Chunk]) -> str:
    """Identity of a note's content, frontmatter aside: two notes with the same title and the same
    sections are the same note (a copy per locale, a learning saved twice), whatever their paths or dates."""
    digest = hashlib.sha256(title.encode("utf-8"))
    for chunk in chunks:
        digest.update(b"\x00" + chunk.content_hash.encode())
    return digest.hexdigest()


def _embed_key(chunk: Chunk, model: str) -> str:
    return text_key(chunk.embed_text(), model)
