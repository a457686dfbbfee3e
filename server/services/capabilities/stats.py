"""What the index holds and how healthy it is, read from the store (and a real vector-store probe)."""

from __future__ import annotations

import contextlib
import os
import time

from pydantic import BaseModel, Field

from oracle_indexer.models.multilingual import MODEL_ID as MULTILINGUAL_MODEL
from oracle_indexer.notes.discover import discover
from oracle_indexer.store.errors import VectorStoreUnavailable
from oracle_server import __version__
from oracle_server.services.capabilities.freshness import stale_by_type
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.models import NoteText


class Drift(BaseModel):
    in_sync: bool
    not_indexed: list[NoteText]  # paths are the knowledge base's own: defused (server/services/vocabulary/boundary.py)
    not_indexed_count: int
    changed_since_index: list[NoteText]
    changed_since_index_count: int
    vanished: list[NoteText]
    vanished_count: int
    unmapped_folders: dict[NoteText, int]  # top-level folder ("." = root files) -> markdown files with no type
    symlink_aliases: int = 0  # symlinks to notes indexed under their real name (one note, not two)
    excluded: dict[str, int] = {}  # rule (exclude, .gitignore, include) -> markdown files it leaves out
    # oracle.toml / ORACLE_FOLDER_TYPES keys that match no folder; oracle.toml changed since start in a way only a
    # restart applies, or no longer readable (config_notices)
    config_warnings: list[NoteText] = []
    # names two or more files spell in different Unicode normal forms (NFC/NFD): none of them is indexed
    name_collisions: list[NoteText] = []


class DocumentCounts(BaseModel):
    total: int
    by_type: dict[str, int]


class FileCounts(BaseModel):
    total: int
    by_type: dict[str, int]
    skipped: dict[NoteText, NoteText]  # path -> why it is not indexed
    with_warnings: int


class Freshness(BaseModel):
    """Notes past their freshness window today (server/services/capabilities/freshness.py), by type, and the windows in force."""  # noqa: E501 (the JSON schema's description: one line)

    stale: int
    stale_by_type: dict[str, int]
    window_days: dict[str, int] = Field(description="days a note's last_verified stays good, per type (365 unless"
                                        " [freshness] days in oracle.toml says otherwise); a type not listed has no"
                                        " window (only its notes' own review_after dates apply). A note that never"
                                        " states last_verified or review_after is never stale.")


class EmbeddingCounts(BaseModel):
    embedded_chunks: int
    coverage: float
    cached: int
    # How a query mostly in scripts the English model does not read (Thai, CJK, ...) is ranked, said here once
    # rather than on every such answer (issue 40); "" when the main model reads every script.
    scripts: str = ""


class VectorHealth(BaseModel):
    ok: bool
    detail: str


class Usage(BaseModel):
    searches: int
    consultations: int
    learnings: int
    document_accesses: int
    search_p50_ms: float | None = Field(description="Warm searches: the cold starts below are not in it.")
    search_p95_ms: float | None
    # Searches that first loaded the embedding model (a stdio session's first, a lone CLI search).
    search_cold_starts: int = 0
    search_cold_p50_ms: float | None = None
    # "server" and "cli" (a CLI process on its own, cold model): {p50_ms, p95_ms, samples}
    search_latency_by_process: dict[str, dict[str, float | None]] = {}
    # Usage log rows this process could not store (text with no UTF-8 form...): dropped, not retried for ever.
    log_drops: int = 0


class Serving(BaseModel):
    """Which process answered: `in-process` (a CLI call, `serve --standalone`), `engine` (the shared engine of this
    root, whichever way it started: a stdio session or `serve --http`: server/engine/process.py) or `fallback` (a stdio
    session whose engine could not start or died, now running Oracle in its own process; `detail` says why)."""

    mode: str
    detail: str = ""
    pid: int
    sessions: int | None = None  # MCP sessions attached to the engine right now
    http: list[str] | None = None  # the engine's HTTP fronts (`oracle serve --http` attached to it), by URL
    cli_calls: int | None = None  # `oracle` commands the engine answered over its socket since it started


class WorkingCopyStats(BaseModel):
    """The team store's notes as this folder's working copy sees them (issue 38, indexer/worker/workcopy.py)."""

    machine: str = Field(description="This working copy's id (its data dir's).")
    author: str = Field(description="Who this machine's revisions are from (ORACLE_AUTHOR, else the login name).")
    notes: int = Field(description="Notes with a live revision in the team store.")
    tombstones: int = Field(description="Deleted notes (their text stays in the history: oracle_history).")
    revisions: int
    conflicts: int = Field(description="Conflict copies syncs have written (both texts kept, both searchable).")
    recent_conflicts: list[dict] = Field(default_factory=list, description="The latest: path, copy, author, at.")
    left_alone: int = Field(0, description="Paths the syncs left alone: rows of the team database naming no usable"
                            " note (absolute, '..', not markdown...), symlinks, files over the size limit.")
    left_alone_recent: list[str] = Field(default_factory=list, description="Up to 10 of them, each with why.")
    deletions_held: int = Field(0, description="Notes gone from this folder whose deletion the guard holds (too many"
                                " at once): `oracle index --force` sends them, `oracle restore --deleted-since` brings"
                                " them back.")


class Stats(BaseModel):
    version: str
    root: str
    data_dir: str
    # "sqlite" (the embedded store under data_dir) or the PostgreSQL store's URL, without its password
    store: str = "sqlite"
    documents: DocumentCounts
    files: FileCounts
    concepts: int
    last_indexed: str | None
    embeddings: EmbeddingCounts
    vector_store: VectorHealth
    drift: Drift
    usage: Usage
    freshness: Freshness | None = None
    serving: Serving | None = None
    working_copy: WorkingCopyStats | None = None  # with the team store only
    # the team store in a server or an engine: `serving` ("team database", or "working copy" in an outage, since when
    # and why), what the last return to the database sent, and where the keyword leg reads (`keyword_index`: the
    # working copy's own index while it holds what the database holds, or the database; indexer/serving/team.py;
    # docs/team.md)
    team_link: dict = Field(default_factory=dict)  # {} without the team store


def drift(oracle: Oracle) -> Drift:
    """Files on disk that the index lacks or has stale, and indexed files that vanished (cost: stats)."""
    found = discover(oracle.settings.root, oracle.settings.layout)
    known = oracle.store.file_states()
    skipped = oracle.store.skipped()
    on_disk = {f.rel: f for f in found.files}
    missing = sorted(rel for rel in on_disk if rel not in known and rel not in skipped)
    vanished = sorted(rel for rel in known if rel not in on_disk)
    copy = oracle.indexer.copy
    if copy is not None:  # the shared index holds every machine's notes: one this folder keeps out is not gone
        known = copy.index_states(known)
        live = {p for p, h in copy.revisions.heads().items() if not h.deleted}
        vanished = [rel for rel in vanished if rel not in live]
    stale = []
    for rel, item in on_disk.items():
        state = known.get(rel)
        if state is None:
            continue
        try:
            st = item.path.stat()
        except OSError:
            continue
        if (st.st_mtime_ns, st.st_size) != (state.mtime_ns, state.size):
            stale.append(rel)
    stale.sort()
    return Drift(
        in_sync=not (missing or vanished or stale or found.collisions),
        not_indexed=missing[:20],
        not_indexed_count=len(missing),
        changed_since_index=stale[:20],
        changed_since_index_count=len(stale),
        vanished=vanished[:20],
        vanished_count=len(vanished),
        unmapped_folders=dict(sorted(found.unmapped.items())),
        symlink_aliases=len(found.aliases),
        excluded=dict(sorted(found.excluded.items())),
        config_warnings=[*config_notices(oracle), *found.warnings],
        name_collisions=found.collisions,
    )


def vector_health(oracle: Oracle, embedded: int) -> VectorHealth:
    """A real round trip (or, while the store is down, why it is), checked against the index: a store
    that answers but lost vectors is not healthy either. A read: it never repairs. A started Oracle's
    maintenance worker notices the same loss on its own schedule and re-adds the vectors."""
    try:
        held = oracle.vectors.count()
    except VectorStoreUnavailable as exc:
        return VectorHealth(ok=False, detail=str(exc))
    if held < embedded:
        return VectorHealth(ok=False, detail=(
            f"{held} vectors, but the index has {embedded} chunks marked as embedded: the vector store lost"
            f" {embedded - held}; a running Oracle server re-adds them from the embedding cache"
        ))
    try:
        broken = oracle.indexer.check_vectors()  # a count read from metadata says nothing of the index files
    except VectorStoreUnavailable as exc:
        return VectorHealth(ok=False, detail=str(exc))
    if broken:
        return VectorHealth(ok=False, detail=f"{broken}; a running Oracle server moves it aside and rebuilds it from"
                                             " the embedding cache")
    return VectorHealth(ok=True, detail=f"{held} vectors")


def stats(oracle: Oracle) -> Stats:
    counts = oracle.store.counts()
    last = oracle.store.get_meta("last_indexed")
    vectors = vector_health(oracle, counts["embedded"])
    with_warnings = oracle.store.notes_with_warnings()
    logs = oracle.logs.counts()
    latency = oracle.logs.search_latency()
    cold = oracle.logs.search_latency(cold=True)
    return Stats(
        version=__version__,
        root=str(oracle.settings.root),
        data_dir=str(oracle.settings.data_dir),
        store=_store_name(oracle),
        documents=DocumentCounts(
            total=counts["chunks"],
            by_type=oracle.store.sections_by_type(),
        ),
        files=FileCounts(
            total=counts["files"],
            by_type=oracle.store.notes_by_type(),
            skipped=oracle.store.skipped(),
            with_warnings=with_warnings,
        ),
        concepts=oracle.store.concept_total(),
        last_indexed=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(last))) if last else None,
        embeddings=EmbeddingCounts(
            embedded_chunks=counts["embedded"],
            coverage=round(counts["embedded"] / counts["chunks"], 4) if counts["chunks"] else 1.0,
            cached=counts["cached_embeddings"],
            scripts=scripts_note(oracle),
        ),
        vector_store=vectors,
        drift=drift(oracle),
        usage=Usage(
            searches=logs["search_log"],
            consultations=logs["consult_log"],
            learnings=logs["learn_log"],
            document_accesses=logs["document_access"],
            search_p50_ms=latency["p50_ms"],
            search_p95_ms=latency["p95_ms"],
            search_cold_starts=int(cold["samples"] or 0),
            search_cold_p50_ms=cold["p50_ms"],
            log_drops=oracle.logs.dropped,
            search_latency_by_process=oracle.logs.search_latency_by_process(),
        ),
        serving=Serving(pid=os.getpid(), **oracle.serving),
        freshness=_freshness(oracle),
        working_copy=_working_copy(oracle),
        team_link=oracle.backend.state(),
    )


def config_notices(oracle: Oracle) -> list[str]:
    """oracle.toml changed while this server runs (the watcher re-read it: indexer/config.py `reload_settings`) in a
    way only a restart applies, or it cannot be read: said with the other config warnings, in stats and the log.
    (No field of its own: every byte of stats' output schema is in tools/list, which each agent pays for.)"""
    named = [oracle.settings.database_notice] if oracle.settings.database_notice else []
    outcome, at = oracle.config_reload, oracle.config_reload_at
    if outcome is None or at is None or not (outcome.restart or outcome.error):
        return named
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
    if outcome.error:
        return [*named, f"{outcome.message} (re-read {when})"]
    return [*named, f"oracle.toml changed since start: restart to apply {', '.join(outcome.restart)} (re-read {when})"]


def _store_name(oracle: Oracle) -> str:
    """"sqlite", the PostgreSQL store's URL (no password), or the working copy's mark in an outage."""
    if oracle.backend.offline:
        return oracle.backend.mark()
    return str(oracle.store.path) if oracle.store.team else "sqlite"


def _working_copy(oracle: Oracle) -> WorkingCopyStats | None:
    copy = oracle.indexer.copy
    if copy is None:
        return None
    total, recent = copy.revisions.conflicts()
    left = [why for _, why in sorted(copy.refused.items())]
    return WorkingCopyStats(machine=copy.machine, author=copy.author, conflicts=total, recent_conflicts=recent,
                            left_alone=len(left), left_alone_recent=left[:10], deletions_held=len(copy.held),
                            **copy.revisions.counts())


def _freshness(oracle: Oracle) -> Freshness:
    by_type = stale_by_type(oracle)
    return Freshness(stale=sum(by_type.values()), stale_by_type=by_type,
                     window_days=dict(oracle.settings.layout.freshness.days))


def index_size(oracle: Oracle) -> tuple[int, int]:
    """Files and sections indexed: what a health check answers with (one small read, no probe, no disk walk)."""
    counts = oracle.store.counts()
    return counts["files"], counts["chunks"]


def health_state(oracle: Oracle) -> dict:
    """What /health answers, at once whatever the database's state: status ("ok" or "unavailable"), files, chunks
    and, with PostgreSQL, the database's state (reachable, since when it is not, why; None on SQLite). Before, a
    PostgreSQL outage made /health wait 30 s for a pooled connection and answer a bare 500."""
    from oracle_indexer.store.errors import DatabaseUnavailable

    if oracle.backend.offline:  # serving the working copy: up, and saying what it lacks
        state = oracle.backend.state()
        with contextlib.suppress(Exception):  # a switch back under way: the database's own state below
            files, chunks = index_size(oracle)
            return {"status": "working copy", "files": files, "chunks": chunks,
                    "database": {"backend": "postgresql", "reachable": False, "since": state["offline_since"],
                                 "error": state["mark"]}}
    db = getattr(oracle.store, "db", None)
    database = db.state() if db is not None and hasattr(db, "state") else None
    try:
        if database is not None and not database["reachable"]:
            raise DatabaseUnavailable(database["error"])
        files, chunks = index_size(oracle)
    except DatabaseUnavailable as exc:
        if database is None or database["reachable"]:
            database = {"backend": "postgresql", "reachable": False, "since": None, "error": str(exc)}
        return {"status": "unavailable", "files": None, "chunks": None, "database": database}
    return {"status": "ok", "files": files, "chunks": chunks, "database": database}


def usage_overview(oracle: Oracle, limit: int, days: int) -> dict:
    """The latest searches, consults and reads and their daily counts over `days` (the dashboard's usage
    panel): the usage logs as they are, newest first, and `titles`: each note a write names (a verdict's section
    id, a supersession's refs, an edited file) -> {title, file}, so the dashboard shows titles, not bare ids."""
    overview = oracle.logs.overview(limit, days)
    refs = {*(r.get("doc_id") for r in overview.get("feedback", [])),
            *(r.get(k) for r in overview.get("supersessions", []) for k in ("old_ref", "new_ref")),
            *(r.get("file") for r in overview.get("edits", []) + overview.get("learnings", []))}
    overview["titles"] = note_titles(oracle, [r for r in refs if isinstance(r, str) and r])
    return overview


def note_titles(oracle: Oracle, refs: list[str]) -> dict[str, dict[str, str]]:
    """{ref: {"title", "file"}} for the refs that name an indexed section (by id) or note (by path); others left out
    (a note since deleted or archived keeps its bare ref)."""
    out: dict[str, dict[str, str]] = {}
    by_id = oracle.store.sections_by_id([r for r in refs if not r.endswith((".md", ".markdown"))])
    for ref, section in by_id.items():
        out[ref] = {"title": section.title or section.file, "file": section.file}
    for ref in refs:
        if ref in out:
            continue
        note = oracle.store.note(ref)
        if note is not None:
            out[ref] = {"title": note.title or ref, "file": ref}
    return out


def scripts_note(oracle: Oracle) -> str:
    """What EmbeddingCounts.scripts says: which model ranks the semantic leg of a query in another script."""
    if oracle.embedder.multilingual:
        return ""
    if oracle.indexer.multilingual.ready():
        return (f"queries mostly in scripts the English model does not read (Thai, CJK, ...) are ranked by the"
                f" multilingual model ({MULTILINGUAL_MODEL}), weighted equally with keywords")
    return ("queries mostly in scripts the English model does not read (Thai, CJK, ...) have no semantic ranking:"
            " this index has no multilingual vectors (ORACLE_MULTILINGUAL); their keyword matches still count")
