"""The registry: every capability declared once (name, request model, service, result model, text, MCP
annotations, HTTP route, CLI exposure). server/mcp/server.py, server/http/app.py and server/cli/commands.py generate
their tools, routes and commands from `TOOLS`, so a parameter added to a request model (and read by its service)
appears over MCP, HTTP and the CLI with the same name, default and bounds. Before, each adapter restated
every parameter and the copies drifted (MCP search lacked the date filters, the CLI the relation filters).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from mcp_types import ToolAnnotations
from pydantic import BaseModel, ValidationError

from oracle_server.registry import text
from oracle_server.registry.schemas import lean_input_schema
from oracle_server.registry.shapes import Surface, brief_search, detail_of
from oracle_server.services.capabilities.browse import concepts, list_documents, reflect
from oracle_server.services.capabilities.consult import consult
from oracle_server.services.capabilities.edit import archive, edit
from oracle_server.services.capabilities.feedback import record_feedback
from oracle_server.services.capabilities.history import history, restore
from oracle_server.services.capabilities.learn import learn
from oracle_server.services.capabilities.read import read_note
from oracle_server.services.capabilities.relations import find_relations
from oracle_server.services.capabilities.search.pipeline import search
from oracle_server.services.capabilities.stats import Stats, stats
from oracle_server.services.capabilities.supersede import supersede
from oracle_server.services.capabilities.verify import verify
from oracle_server.services.runtime.served import serve
from oracle_server.services.support.loading import log_done, log_wait, waiting_for
from oracle_server.services.vocabulary import models as m
from oracle_server.services.vocabulary.errors import OracleError, problems

if TYPE_CHECKING:
    from oracle_server.services.runtime.app import Oracle

WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# Claude Code defers MCP tools behind its tool search unless a tool's `_meta` carries this key set to
# exactly `true` (Claude Code 2.1.121+; other clients ignore it). The key was checked against what is
# published about Claude Code's MCP support (code.claude.com/docs/en/mcp, "Scale with MCP Tool Search", as
# quoted by several servers that set it) and against Claude Code's client code, which reads
# `_meta["anthropic/alwaysLoad"] === true`; the official page itself could not be fetched from here.
ALWAYS_LOAD = {"anthropic/alwaysLoad": True}

# A read-only tool states no destructive or idempotent hint: the MCP spec reads them only when readOnlyHint is false
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# verify: writes only when asked to mark notes verified, and marking twice on one day changes nothing
MARKS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
RANDOM_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)  # reflect: read-only, not idempotent
# edit replaces text (the old text is gone but for the file's history); archive moves a note out of the index
REWRITES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


@dataclass(frozen=True)
class Caller:
    """Who asked: the client's name and the surface the call came in on (for the usage logs), and in team
    mode the named token's name (`author`: recorded with every write) and whether it may write."""

    client: str
    surface: Surface
    author: str | None = None
    can_write: bool = True


@dataclass(frozen=True)
class Http:
    method: Literal["GET", "POST"]
    path: str
    status: int = 200


@dataclass(frozen=True)
class Cli:
    """How the tool appears as an `oracle` command. `words` names the field that takes the command line's
    free words (joined with spaces); every other field becomes an option named after it."""

    command: str
    help: str
    words: str | None = None
    stdin: bool = False  # `-` as the words reads them from stdin
    flags: tuple[tuple[str, str], ...] = ()  # (field, option name) where the option reads better than the field


class InvalidArguments(OracleError):
    """The request model refused the arguments; the message lists each bad field (one formatter)."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid", message)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    request: type[BaseModel]
    result: type[BaseModel]
    service: Callable[[Oracle, Any, Caller], BaseModel]
    text: Callable[[Any, Any], str]
    annotations: ToolAnnotations
    http: Http
    cli: Cli | None = None
    meta: dict[str, Any] | None = None
    returns: str = ""  # what the result holds, in a sentence (docs/tools.md; the result model has the fields)
    # Does this request write? None: whenever the annotations say the tool is not read-only. A read-only
    # token is refused on exactly these calls (verify writes only when it marks notes verified).
    writes: Callable[[Any], bool] | None = None
    # The result's brief shape (server/registry/shapes.py), for a tool whose request has `detail`: what an answer
    # carries unless full detail is asked for (or is the surface's default).
    brief: Callable[[Any], dict[str, Any]] | None = None
    details: str = ""  # the longer explanation, in docs/tools.md only (the description is what tools/list sends)

    @property
    def accepted(self) -> tuple[str, ...]:
        """The argument names this tool takes, in declaration order."""
        return tuple(self.request.model_fields)

    def parse(self, arguments: Mapping[str, Any]) -> BaseModel:
        """Validate arguments against the request model. A null value means "not given" (some clients send
        every optional argument as null); an unknown name is refused, naming the accepted ones."""
        try:
            return self.request.model_validate({k: v for k, v in arguments.items() if v is not None})
        except ValidationError as exc:
            raise InvalidArguments(problems(exc.errors(), accepted=self.accepted)) from None

    def is_write(self, request: BaseModel) -> bool:
        if self.writes is not None:
            return self.writes(request)
        return not self.annotations.read_only_hint

    def authorize(self, request: BaseModel, caller: Caller) -> None:
        """Refuse a write from a read-only token (team mode), before anything is read or written."""
        if not caller.can_write and self.is_write(request):
            who = f"the token {caller.author!r}" if caller.author else "this token"
            raise OracleError("forbidden", f"forbidden: {who} is read-only and {self.name} writes to the knowledge"
                              " base; ask whoever runs this server for a write token (`oracle token add NAME"
                              " --write`)")

    def call(self, oracle: Oracle, request: BaseModel, caller: Caller) -> BaseModel:
        """Check the caller may make this call, then call the one service function. Every adapter calls
        tools through here (or `run`)."""
        self.authorize(request, caller)
        return serve(oracle, lambda: self.service(oracle, request, caller), writes=self.is_write(request))

    def text_of(self, oracle: Oracle, request: BaseModel, result: BaseModel) -> str:
        """The answer's text (MCP's text content, the CLI's output): the tool's own, and, while the working copy
        answers for the team database, that mark, if the text does not say it already (an answer without
        warnings)."""
        text = self.text(request, result)
        mark = oracle.backend.mark()
        return text + "\nwarning: " + mark if mark and mark not in text else text

    def dump(self, request: BaseModel, result: BaseModel, surface: Surface) -> dict[str, Any]:
        """The result's JSON as `surface` answers it: brief or full (server/registry/shapes.py) where the tool has
        both, else the whole model. MCP's structured content, HTTP's body and the CLI's --json all come from here."""
        if self.brief is not None and detail_of(request, surface) == "brief":
            return self.brief(result)
        return result.model_dump(mode="json")

    def run(self, oracle: Oracle, request: BaseModel, caller: Caller) -> BaseModel:
        """`call`, once the start-up sync has the keyword index ready (a served Oracle). A call that waits for
        what loads once (the start-up sync, the models: server/services/support/loading.py) says so in the server's
        log."""
        pending = waiting_for(oracle, self.name)
        if not pending:
            oracle.wait_ready()
            return self.call(oracle, request, caller)
        log_wait(self.name, pending)
        started = time.monotonic()
        try:
            oracle.wait_ready()
            return self.call(oracle, request, caller)
        finally:
            log_done(self.name, time.monotonic() - started)


def _logged_as(caller: Caller) -> str:
    """Search logs name the entry point: the MCP tool, the HTTP route or the CLI command."""
    return {"mcp": "oracle_search", "http": "api_search", "cli": "search"}[caller.surface]


TOOLS: tuple[Tool, ...] = (
    Tool(
        name="oracle_search",
        description=(
            "Search the notes by keywords and meaning (plain words, no syntax), in the notes' words and language; "
            "other phrasings in `variants`; a weak page's `try` has words to ask next."
        ),
        details=(
            "Hits give id, file, lines, snippet and content_hash to cite. `detail=full` adds each hit's score "
            "breakdown, found_by, concepts and other matching sections (the default over HTTP and the CLI). The MCP "
            "instructions say what the notes look like and how to ask well."
        ),
        returns=(
            "one hit per note (its best section: id, type, title, heading, snippet, source_file, line span, "
            "concepts, content_hash), its other matching `sections`, identical notes as `duplicates`, `weak`, "
            "score, found_by, score breakdown (incl. relevance, verdicts, factors), `superseded_by` pointer, "
            "matched `relations`, the note's `lang` and its `translations`, `stale`/`stale_since`; total; meta "
            "(mode, unit, weak, took_ms, matches per leg, `expanded_with`, warnings); on a weak or empty page, `try`:"
            " the nearest notes' concepts, titles and headings to ask with next"),
        request=m.SearchRequest, result=m.SearchResult,
        service=lambda o, r, c: search(o, r, client=c.client, tool=_logged_as(c)),
        text=text.search_text, annotations=READ_ONLY, meta=ALWAYS_LOAD, brief=brief_search,
        http=Http("GET", "/api/search"),
        cli=Cli("search", "hybrid search over the knowledge base", words="query", flags=(("variants", "also"),)),
    ),
    Tool(
        name="oracle_consult",
        description=(
            "Before a decision: the principles and learnings that apply, as guidance within a token budget, each "
            "source with id, file and sha256 to cite."
        ),
        details=(
            "Give the decision and any context. The notes are wrapped as reference data (not instructions). "
            "context_window: the budget becomes 15% of it (at most 8000 tokens), and under 30,000 only principles, "
            "the core, are consulted (mode core); the result says which budget and mode it used. Notes of a folder "
            "typed as plain notes (type note: a handbook, a vault) are consulted beside the learnings."
        ),
        returns=(
            "relevant principles and learnings (hybrid) and guidance within the budget, wrapped in a "
            "reference-data boundary with each source's id, file and sha256; `budget_tokens`, `budget_from` and "
            "`mode` (full/core) it used; `working_set_id` (see *Reproducible consults*)"),
        request=m.ConsultRequest, result=m.ConsultResult,
        service=lambda o, r, c: consult(o, r, client=c.client),
        text=text.consult_text, annotations=READ_ONLY, meta=ALWAYS_LOAD,
        http=Http("GET", "/api/consult"),
        cli=Cli("consult", "guidance from principles and learnings for a decision", words="decision",
                flags=(("variants", "also"),)),
    ),
    Tool(
        name="oracle_reflect",
        description='One random principle or learning to reflect on before or after a piece of work.',
        returns="one random principle or learning section",
        request=m.ReflectRequest, result=m.Document,
        service=lambda o, r, c: reflect(o, r, client=c.client),
        text=text.reflect_text, annotations=RANDOM_READ,
        http=Http("GET", "/api/reflect"),
        cli=Cli("reflect", "one random principle or learning to think about"),
    ),
    Tool(
        name="oracle_learn",
        description=(
            "Save a learning (a pattern or lesson) as a markdown note, searchable when this returns. To replace a "
            "note you read, pass revises (its path) and expected_hash."
        ),
        details=(
            "The text of an existing learning is refused (allow_duplicate=true saves it); similar ones are listed as "
            "advice. With revises, it is refused as a conflict if the note changed since it was read."
            " idempotency_key: any unique string of 8-200 printable ASCII characters (a UUID); a retry of the "
            "same learn with the same key returns the learning saved the first time instead of saving it twice."
        ),
        returns=(
            "writes `learnings/YYYY-MM-DD_<slug>.md` atomically (never overwrites), indexes it in both legs "
            "before returning; id, file, embedding status, near-duplicate learnings. Once the note is saved "
            "nothing after it (the near-duplicate check, the log) turns the answer into an error"),
        request=m.LearnRequest, result=m.LearnResult,
        service=lambda o, r, c: learn(o, r, client=c.client, author=c.author),
        text=text.learn_text, annotations=WRITES,
        http=Http("POST", "/api/learn", status=201),
        cli=Cli("learn", "save a new learning (markdown) and index it", words="pattern", stdin=True),
    ),
    Tool(
        name="oracle_list",
        description=(
            "List notes newest first, by type or frontmatter (unit=section: every section); for browsing."
        ),
        returns=(
            "notes newest first (each by its first section, with how many sections it has), deterministic; "
            "`unit=section` lists every section"),
        request=m.ListRequest, result=m.ListResult,
        service=lambda o, r, c: list_documents(o, r),
        text=text.list_text, annotations=READ_ONLY,
        http=Http("GET", "/api/list"),
        cli=Cli("list", "list notes, newest first"),
    ),
    Tool(
        name="oracle_stats",
        description=(
            "Health and size of the knowledge base: notes by type, index drift, embeddings, vector store, usage, "
            "latency."
        ),
        returns=(
            "notes and sections by type, concepts, last indexed, drift between disk and index, embedding "
            "coverage, a live vector-store probe, usage counts, search latency p50/p95, version"),
        request=m.StatsRequest, result=Stats,
        service=lambda o, r, c: stats(o),
        text=text.stats_text, annotations=READ_ONLY,
        http=Http("GET", "/api/stats"),
        cli=Cli("stats", "what is indexed and whether the index is healthy"),
    ),
    Tool(
        name="oracle_concepts",
        description='Concepts (tags and known keywords) with how many notes carry each; use them as search filters.',
        returns="concepts with how many notes carry each",
        request=m.ConceptsRequest, result=m.ConceptsResult,
        service=lambda o, r, c: concepts(o, r),
        text=text.concepts_text, annotations=READ_ONLY,
        http=Http("GET", "/api/concepts"),
        cli=Cli("concepts", "concepts with how many notes carry each"),
    ),
    Tool(
        name="oracle_feedback",
        description=(
            "Say whether a hit or consult source (by id) was helpful or misleading; it moves that note's future "
            "ranking (x0.8 to x1.2)."
        ),
        details=(
            "Verdicts are logged; a verdict counts for the whole note, and the factor stays within the bound however "
            "many there are."
        ),
        returns=(
            "the note's verdict counts (over all its sections: a verdict counts for the whole note) and its "
            "ranking factor"),
        request=m.FeedbackRequest, result=m.FeedbackResult,
        service=lambda o, r, c: record_feedback(o, r, client=c.client, author=c.author),
        text=text.feedback_text, annotations=WRITES,
        http=Http("POST", "/api/feedback", status=201),
        cli=Cli("feedback", "say whether a note (by id) was helpful or misleading"),
    ),
    Tool(
        name="oracle_supersede",
        description=(
            "Mark a note as replaced by a newer one (chunk ids or paths): it stays searchable, ranks below it and "
            "points to it. undo=true revokes."
        ),
        details=(
            "The old note stays on disk and in the index, and every hit that returns it points to the new one. A "
            "chunk id means that section; a path relative to the root means the whole note."
        ),
        returns=(
            "what was superseded by what (a section id means that section, a path the whole note)"),
        request=m.SupersedeRequest, result=m.SupersedeResult,
        service=lambda o, r, c: supersede(o, r, client=c.client, author=c.author),
        text=text.supersede_text, annotations=WRITES,
        http=Http("POST", "/api/supersede", status=201),
        cli=Cli("supersede", "mark a note as replaced by a newer one"),
    ),
    Tool(
        name="oracle_relations",
        description=(
            "Find (subject, predicate, object) relations the notes state: give any of the three, or none to list all."
        ),
        details='Terms match case-insensitively, as whole terms. Each result names the note that states it.',
        returns=(
            "matching triplets, each with the note that states it"),
        request=m.RelationsRequest, result=m.RelationsResult,
        service=lambda o, r, c: find_relations(o, r),
        text=text.relations_text, annotations=READ_ONLY,
        http=Http("GET", "/api/relations"),
        cli=Cli("relations", "relations (subject, predicate, object) that notes state"),
    ),
    Tool(
        name="oracle_read",
        description=(
            "Read a whole note (or with section=true one section) by a hit's id or its path: the text, line span, "
            "sections and hashes."
        ),
        details=(
            "max_chars is about four times the tokens it costs; when `truncated`, ask again with more, or read "
            "one section by its id."
        ),
        returns=(
            "the whole note from disk (frontmatter parsed, line span, sections with ids and hashes, relations, "
            "supersession) or one section"),
        request=m.ReadRequest, result=m.ReadResult,
        service=lambda o, r, c: read_note(o, r, client=c.client),
        text=text.read_text, annotations=READ_ONLY,
        http=Http("GET", "/api/read"),
        cli=Cli("read", "read a note: `oracle read learnings/x.md` (its path) or `oracle read c_...` (a hit's id)",
                words="file"),
    ),
    Tool(
        name="oracle_verify",
        description=(
            "Check citations (id, content_hash): unchanged, changed or gone; working_set_id: does a consult "
            "reproduce; mark_verified: stamp notes checked today."
        ),
        details=(
            "For each citation from a hit or consult source, says whether the note is unchanged, changed (with the "
            "current hash) or gone, and where its text now lives. working_set_id is a consult's id: says whether "
            "that consultation reproduces now, or which sources changed or vanished. mark_verified takes notes (ids "
            "or paths) you checked and found still true: each gets `last_verified: today` in its frontmatter "
            "(nothing else in the file changes) and stops being stale."
        ),
        returns=(
            "per citation `unchanged`, `changed` (with the current hash and span) or `gone`, and which chunks now "
            "hold the cited text; each marked note gets `last_verified: <today>` in its frontmatter (nothing else "
            "in the file changes) and is re-indexed before the call returns"),
        request=m.VerifyRequest, result=m.VerifyResult,
        service=lambda o, r, c: verify(o, r),
        text=text.verify_text, annotations=MARKS, writes=lambda r: bool(r.mark_verified),
        http=Http("POST", "/api/verify"),
        # --working-set-id and --mark-verified (repeated) on the command line; citations, a list of {id, content_hash}
        # objects, are an HTTP body or MCP arguments
        cli=Cli("verify", "does a consult's working set reproduce; mark notes verified today"),
    ),
    Tool(
        name="oracle_edit",
        description=(
            "Edit a note: append, prepend, replace a section or one exact text. Pass its file_hash as expected_hash: "
            "a conflict if it changed since."
        ),
        details=(
            "prepend puts the text after the note's title; a conflict means: read it again and redo the edit. The "
            "frontmatter is kept as it is; the note is re-indexed before this returns."
            " replace_section keeps the heading line and replaces the body under it; replace_text needs `find` "
            "to occur exactly once in the body. expected_hash takes at least 12 leading hex digits."
        ),
        returns=(
            "the note's new `file_hash` (to edit again), its indexed sections, `author`; a conflict if the note "
            "changed since it was read"),
        request=m.EditRequest, result=m.EditResult,
        service=lambda o, r, c: edit(o, r, client=c.client, author=c.author),
        text=text.edit_text, annotations=REWRITES,
        http=Http("POST", "/api/edit"),
        cli=Cli("edit", "edit a note's body (append, prepend, replace a section or text) if unchanged since read",
                words="text", stdin=True),
    ),
    Tool(
        name="oracle_archive",
        description=(
            "Retire a note into .archive/ (out of the index, never deleted), given its file_hash as expected_hash; "
            "oracle_supersede points to a newer one."
        ),
        details=(
            "The .archive/ folder is under the knowledge root. If the note changed since you read it nothing is "
            "moved and you get a conflict."
        ),
        returns=(
            "where the file went (`.archive/<path>`), how many sections left the index; a conflict if the note "
            "changed since it was read"),
        request=m.ArchiveRequest, result=m.ArchiveResult,
        service=lambda o, r, c: archive(o, r, client=c.client, author=c.author),
        text=text.archive_text, annotations=REWRITES,
        http=Http("POST", "/api/archive"),
        cli=Cli("archive", "move a note out of the index into .archive/ (never deleted) if unchanged since read",
                words="file"),
    ),
    Tool(
        name="oracle_history",
        description="A note's revisions in the team store (ORACLE_DATABASE_URL): who wrote each, when, deletions.",
        returns="the note's revisions, oldest first, each with its hash, author, time and whether it is a deletion",
        request=m.HistoryRequest, result=m.HistoryResult,
        service=lambda o, r, c: history(o, r),
        text=text.history_text, annotations=READ_ONLY,
        http=Http("GET", "/api/history"),
        cli=Cli("history", "a note's revisions in the team store: `oracle history learnings/x.md`", words="file"),
    ),
    Tool(
        name="oracle_restore",
        description="Bring back a revision from oracle_history (a deleted note too) as the note's newest revision.",
        returns="the new revision's number and file_hash, and the note's sections as indexed now",
        request=m.RestoreRequest, result=m.RestoreResult,
        service=lambda o, r, c: restore(o, r, author=c.author),
        text=text.restore_text, annotations=WRITES,
        http=Http("POST", "/api/restore"),
        cli=Cli("restore", "bring back a revision: `oracle restore learnings/x.md --revision 2`", words="file"),
    ),
)
BY_NAME: dict[str, Tool] = {t.name: t for t in TOOLS}
BY_PATH: dict[str, Tool] = {t.http.path: t for t in TOOLS}


def input_schema(tool: Tool) -> dict[str, Any]:
    """The MCP input schema: the request model's own JSON schema, lean (server/registry/schemas.py), so it states
    every bound the model enforces (minimum/maximum, lengths, enums, patterns) and refuses unknown names."""
    return lean_input_schema(tool.request)
