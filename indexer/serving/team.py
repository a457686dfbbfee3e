"""The team backend: the team database and the working copy's own index, and the switch between them (issue 38,
item 3; one backend per Oracle since issue 46: indexer/serving/backend.py).

With the team store, a server or an engine serves from PostgreSQL; its folder is a working copy of the team's notes
(indexer/worker/workcopy.py). When the database cannot be reached (at start, or it goes away while the engine
runs), the engine does not stop and does not answer "cannot be reached" to every call: it serves the working copy
from an index of its own (the embedded store, SQLite FTS5 and the vectors it has embedded, under
`<data dir>/offline/`), says so in every answer and in stats, and keeps the writes as files in the folder. Once the
database answers again, a sync of the working copy sends what was written meanwhile with the usual rules (a note
changed on both sides: the database's text keeps its name, this folder's becomes a conflict copy; nothing lost),
and the engine serves from the database again, without a restart.

While the database answers, the same index serves the keyword leg: the link makes it follow the database (every
FOLLOW_SECONDS it compares the database's content state with the index's and re-indexes the notes that differ,
keyword phase only), and the PostgreSQL store reads its keyword leg from it whenever the two hold the same notes
(indexer/store/pg/local_words.py), FTS5 in C instead of bm25 in SQL.

One thread per Oracle (`TeamBackend`) asks the database once a second whether it answers (a new connection, libpq's
smallest connect timeout) and switches. A request that meets the outage first (a read that failed because the
database went away under it) asks the link to switch at once and is answered from the working copy; a write that
failed that way is not repeated (it may have written its file already), and says so (server/services/runtime/served.py).
A switch changes what `view()` returns; a request already running keeps the view it started with.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import threading
import time

from oracle_indexer.notes.rootfiles import path_problem
from oracle_indexer.serving.backend import Worker
from oracle_indexer.serving.parts import Parts, offline_settings, open_parts
from oracle_indexer.store.errors import DatabaseUnavailable
from oracle_indexer.store.pg.local_words import LocalWords
from oracle_indexer.store.pg.store import PgStore

PROBE_SECONDS = 1.0  # how often the link asks the database whether it answers
FOLLOW_SECONDS = 0.25  # how often it compares the database's content state with the working copy's own index's
# A follow that left the two different (a note this machine excludes, a file not pulled yet) is tried again after
# this long, twice as long each time the database's state has not moved (up to FOLLOW_RETRY_MAX), at once when it has.
FOLLOW_RETRY_SECONDS = 2.0
FOLLOW_RETRY_MAX = 300.0
SWITCH_WAIT = 120.0  # a request waits at most this long for the working copy's index (a first outage builds it)
# The working copy's own index is brought in step this long after start, then every PREPARE_SECONDS, while the
# database answers (TeamBackend._prepare): the first outage then costs a stat per file, not a parse of every note.
PREPARE_DELAY = 5.0
PREPARE_SECONDS = 300.0


def reason_of(message: str) -> str:
    """The one-line cause inside a DatabaseUnavailable's message (what libpq said), without the advice around it."""
    found = re.search(r"\(ORACLE_DATABASE_URL\)(?: cannot be reached(?: since \S+)?)?: (.*?)(?:\. (?:Is the server"
                      r"|Nothing was)|$)", message)
    text = (found.group(1) if found else message).strip()
    return text.splitlines()[0][:200] if text else "no answer"


class TeamBackend:
    """What an Oracle with the team database serves from: the database's parts, or, while it cannot be reached,
    the working copy's own index; the link that watches the database and switches between the two."""

    team = True

    def __init__(self, parts: Parts, offline_since: str | None = None) -> None:
        self.oracle: Worker | None = None  # bound by the Oracle it serves (bind)
        self.current = parts  # what serves now: view()
        self.team_parts: Parts | None = None if offline_since is not None else parts
        self.local: Parts | None = parts if offline_since is not None else None
        self.since: float | None = time.time() if offline_since is not None else None
        self.reason: str | None = reason_of(offline_since) if offline_since is not None else None
        self.back_at: float | None = None  # when the database last came back (stats)
        self.last_return: dict | None = None  # what the sync that brought the engine back did (stats)
        self.prepared: dict | None = None  # when the working copy's own index was last brought in step (stats)
        self.followed: dict | None = None  # the last follow of the database by that index (stats)
        # (database state, when, wait before the next try) of a follow that left the two different
        self._tried: tuple[tuple[int, int, int], float, float] | None = None
        self._switch = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if offline_since is not None:
            _say(f"oracle: {self.mark()}; serving the working copy, its writes are kept as files and sent when the"
                 " database is back")

    # -- the backend ---------------------------------------------------------------------------------------
    def view(self) -> Parts:
        """The side that serves now (a request keeps the one it started with)."""
        return self.current

    def bind(self, worker: Worker) -> None:
        """The Oracle this backend serves: its worker is stopped and started again at each switch."""
        self.oracle = worker

    def _bound(self) -> Worker:
        assert self.oracle is not None, "TeamBackend.bind() first"
        return self.oracle

    # -- what answers say ---------------------------------------------------------------------------------
    @property
    def offline(self) -> bool:
        return self.since is not None

    def mark(self) -> str:
        """`working copy (team database unreachable since 08:41 UTC: <why>)`: what every answer carries in an outage."""
        if self.since is None:
            return ""
        when = time.strftime("%H:%M UTC", time.gmtime(self.since))
        return f"working copy (team database unreachable since {when}: {self.reason})"

    def state(self) -> dict:
        """For stats, /health and the dashboard: serving from the database or from the working copy, and why."""
        return {
            "serving": "working copy" if self.offline else "team database",
            "offline_since": _iso(self.since) if self.since is not None else None,
            "reason": self.reason,
            "mark": self.mark() or None,
            "back_since": _iso(self.back_at) if self.back_at is not None and not self.offline else None,
            "last_return": self.last_return,
            "prepared": self.prepared,
            "keyword_index": self._keyword_index(),
        }

    def _keyword_index(self) -> dict:
        """Where the keyword leg reads: the working copy's own index (in step with the database) or the database."""
        store = self.team_parts.store if self.team_parts is not None else None
        if self.offline or not isinstance(store, PgStore):
            return {"from": "working copy" if self.offline else "database", "since": None, "followed": self.followed}
        words = store.local_words
        try:
            source = store.keyword_source()
        except DatabaseUnavailable:
            source = "database"
        since = words.since if words is not None and source == "working copy" else None
        return {"from": source, "since": _iso(since) if since else None, "followed": self.followed}

    # -- the thread -------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start watching the database (Oracle.start); the worker of whichever side serves is started by it."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="oracle-team-link", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(SWITCH_WAIT)

    def close(self) -> None:
        """Close both sides (the Oracle stopped its worker first, and `stop` this link's thread)."""
        store = self.team_parts.store if self.team_parts is not None else None
        if isinstance(store, PgStore):
            store.local_words = None  # its keyword leg no longer reads an index about to close
        closed: list[Parts] = []
        for parts in (self.current, self.team_parts, self.local):
            if parts is not None and not any(parts is c for c in closed):
                parts.close()
                closed.append(parts)
        self.team_parts = self.local = None

    # Over complexity 10 on purpose: the team link's loop: probe, switch, prepare and follow on their own timers, a
    # failure said once.
    def _run(self) -> None:  # noqa: C901
        prepare_at = time.monotonic() + PREPARE_DELAY
        probe_at = 0.0
        last = ""  # the failure said last
        while not self._stop.wait(FOLLOW_SECONDS):
            try:
                if time.monotonic() >= probe_at:
                    probe_at = time.monotonic() + PROBE_SECONDS
                    why = None if self.offline else self._probe()
                    if self.offline:
                        self._try_back()
                    elif why is not None:
                        self.lost(why)
                    elif time.monotonic() >= prepare_at and self._bound().ready.is_set():
                        prepare_at = time.monotonic() + PREPARE_SECONDS
                        self._prepare()
                if not self.offline:
                    self.follow()
            except Exception as exc:  # noqa: BLE001 - the link outlives any one failure; it tries again next second
                if self._stop.is_set():
                    break
                said = f"oracle: team link: {type(exc).__name__}: {exc}"
                if said != last:  # a failure that repeats every second (a refused sync) is said once
                    _say(said)
                last = said
            else:
                last = ""

    def _probe(self) -> str | None:
        """None when the team database answers a new connection now, else why not."""
        db = getattr(self.team_parts.store if self.team_parts is not None else None, "db", None)
        if db is None:
            return "not connected"
        return db.probe()

    def _prepare(self) -> None:
        """Keep the working copy's own index close to the folder while the database answers (keyword phase only: a
        stat per unchanged file), so an outage is served at once instead of after a parse of every note."""
        with self._switch:
            if self.local is None:
                oracle = self._bound()
                self.local = open_parts(offline_settings(oracle.settings), oracle.embedder, check=False)
            local = self.local
        words = self._local_words()
        if words is not None:
            words.state = None  # written now: the keyword leg reads the database until the next follow
        report = local.indexer.sync(vectors=False, cancel=lambda: self._stop.is_set() or self.offline)
        self.prepared = {"at": _iso(time.time()), "seconds": round(report.seconds, 3),
                         "files": report.added + report.changed + report.unchanged}

    def prepare_now(self) -> None:
        """Build the working copy's own index and make it follow the database now, on the caller's thread (a
        benchmark, a test); the link's thread does the same on its own PREPARE_DELAY after start."""
        self._prepare()
        self.follow()

    def _local_words(self) -> LocalWords | None:
        """The team store's view of the working copy's own index (made on first use), when both are open."""
        store = self.team_parts.store if self.team_parts is not None else None
        if not isinstance(store, PgStore) or self.local is None:
            return None
        if store.local_words is None or store.local_words.store is not self.local.store:
            store.local_words = LocalWords(self.local.store)
        return store.local_words

    def follow(self) -> None:
        """Bring the working copy's own index to the notes the database holds, so that the keyword leg can read it
        (indexer/store/pg/local_words.py): when the database's content state differs from the index's, the notes
        whose file hashes differ are re-indexed from the folder (keyword phase). A follow that leaves them different
        is tried again after FOLLOW_RETRY_SECONDS (doubling while the database's state stays put) or when that state
        moves. Not before the index was first built (_prepare)."""
        words = self._local_words() if self.prepared is not None else None
        if words is None or self.team_parts is None or self.local is None:
            return
        team, local = self.team_parts.store, self.local.store
        if self.local.indexer.settings.layout != self.team_parts.indexer.settings.layout:
            # oracle.toml changed under the running engine (the team side took it up): the same rules here, and the
            # whole folder again (types, include/exclude), before the index answers for the database's once more
            words.state = None
            indexer = self.local.indexer
            indexer.settings = dataclasses.replace(indexer.settings, layout=self.team_parts.indexer.settings.layout)
            indexer.sync(vectors=False, cancel=lambda: self._stop.is_set() or self.offline)
        wanted = team.content_state()
        if words.state == wanted:
            return
        tried = self._tried
        if tried is not None and tried[0] == wanted and time.monotonic() - tried[1] < tried[2]:
            return
        began = time.monotonic()
        words.state = None
        theirs, ours = team.file_states(), local.file_states()
        differ = sorted(p for p in theirs.keys() | ours.keys()
                        if (theirs[p].file_hash if p in theirs else None) != (ours[p].file_hash if p in ours else None)
                        and path_problem(p) is None)  # a path the shared database names is checked before use
        if differ:
            self.local.indexer.sync_paths(differ, vectors=False)
        words.state = local.content_state()
        caught_up = words.state == wanted
        if caught_up:
            words.since, self._tried = time.time(), None
        else:
            again = tried is not None and tried[0] == wanted
            wait = min(tried[2] * 2, FOLLOW_RETRY_MAX) if tried is not None and again else FOLLOW_RETRY_SECONDS
            self._tried = (wanted, time.monotonic(), wait)
        self.followed = {"at": _iso(time.time()), "notes": len(differ), "in_step": caught_up,
                         "seconds": round(time.monotonic() - began, 3)}

    # -- the switches ------------------------------------------------------------------------------------
    def lost(self, why: str) -> bool:
        """The database does not answer: serve the working copy from now on (from the link's thread, or from a
        request that met the outage; the first one switches, the others wait for it). True once serving it."""
        with self._switch:
            if self.offline:
                return True
            if self._stop.is_set():
                return False
            oracle = self._bound()
            since = time.time()
            try:
                oracle.stop(abandon_loads=True)  # a model warm-up under way is not waited for: it touches no store
            except Exception as exc:  # noqa: BLE001 - the worker is stopped either way; the switch goes on
                _say(f"oracle: stopping the team store's worker: {type(exc).__name__}: {str(exc)[:200]}")
            if self.local is None:
                self.local = open_parts(offline_settings(oracle.settings), oracle.embedder, check=False)
            words = self._local_words()
            if words is not None:
                words.state = None  # the working copy's worker writes it now; a follow checks it again on return
            self.current = self.local
            self.since, self.reason = since, reason_of(why)  # offline once the working copy serves, not before
            oracle.restart_worker()
            _say(f"oracle: {self.mark()}; serving the working copy until it answers again")
            return True

    def _try_back(self) -> None:
        """The database answers again: open it if this engine started without it, send what the working copy
        wrote meanwhile (a sync: the usual rules, conflicts as copies), then serve from the database again."""
        oracle = self._bound()
        if self.team_parts is None:
            try:
                self.team_parts = open_parts(oracle.settings, oracle.embedder, check=False)
            except DatabaseUnavailable as exc:
                self.reason = reason_of(str(exc))
                return
        elif self._probe() is not None:
            return
        began = time.monotonic()
        # the folder and the database in step first (pushes, pulls, conflict copies); the working copy serves meanwhile
        report = self.team_parts.indexer.sync(vectors=False, cancel=self._stop.is_set)
        with self._switch:
            if self._stop.is_set():
                return
            oracle.stop(abandon_loads=True)
            self.current = self.team_parts
            since, self.since, self.reason, self.back_at = self.since, None, None, time.time()
            self.last_return = {"at": _iso(self.back_at), "offline_since": _iso(since or self.back_at),
                                "pushed": report.pushed, "pulled": report.pulled, "conflicts": report.conflicts,
                                "seconds": round(time.monotonic() - began, 3)}
            oracle.restart_worker()
        _say(f"oracle: the team database answers again; serving from it (working copy: {report.pushed} sent,"
             f" {report.pulled} received, {len(report.conflicts)} conflicts)")

    def wait_serving(self, timeout: float = SWITCH_WAIT) -> None:
        """A request after a switch waits for the new side's keyword index (the Oracle's ready event)."""
        self._bound().wait_ready(timeout)


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
