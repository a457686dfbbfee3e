"""Oracle's MCP surface beyond the tools: resources, prompts, completions, change notifications, live
instructions, resource links on hits, and the tool-loading hint. A thin adapter like the tools: every
handler validates, calls one service (`oracle_server.mcp.resources`, `oracle_server.mcp.prompts`,
`oracle_server.services.support.suggestions`) off the event loop, and shapes the result into MCP types.

These handlers are registered on the SDK's low-level server (`add_request_handler`), because MCPServer's
own resource and prompt layer cannot paginate `resources/list`, put per-read metadata (a note's
frontmatter) on a resource's contents, or serve `resources/subscribe`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.lowlevel import NotificationOptions
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    Annotations,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceLink,
    ResourceTemplate,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from oracle_indexer.rootconfig import DOC_TYPES
from oracle_server.mcp.instructions import live_instructions
from oracle_server.mcp.notify import McpNotifier
from oracle_server.mcp.prompts import (
    PromptArgumentError,
    PromptText,
    consult_prompt,
    learn_from_session_prompt,
    reflect_prompt,
    retrospective_prompt,
)
from oracle_server.mcp.resources import (
    CHUNK_TEMPLATE,
    FIELD_TEMPLATE,
    NOTE_TEMPLATE,
    STATS_URI,
    BadCursor,
    NoteEntry,
    UnknownResource,
    chunk_uri,
    list_notes,
    note_uri,
    parse_uri,
    read_resource,
)
from oracle_server.services.capabilities.browse import REFLECT_TYPES, NotFound
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.support.slots import ServiceSlots
from oracle_server.services.support.suggestions import (
    Suggestions,
    complete_concepts,
    complete_field_names,
    complete_field_values,
    complete_note_paths,
    complete_projects,
    complete_section_ids,
    complete_types,
)
from oracle_server.services.vocabulary.models import ConsultResult, SearchResult, unstorable_text

T = TypeVar("T")
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for "Resource not found"

NOTE_TYPES = ("all", *DOC_TYPES)


# -- resource links on tool results -----------------------------------------------------------------
def _link(path: str, title: str, description: str | None = None, chunk_id: str | None = None) -> ResourceLink:
    return ResourceLink(
        uri=note_uri(path), name=path, title=title, description=description, mime_type="text/markdown",
        _meta={"oracle/chunk": chunk_uri(chunk_id)} if chunk_id else None,
    )


def link_hits(result: CallToolResult, found: SearchResult, brief: bool = False) -> CallToolResult:
    """Append one `resource_link` per hit's note, so a client can open it or @-mention it; only with full detail:
    a brief answer (a search's default over MCP) names each note by its path and id, for oracle_read (issue 40:
    the links were 1.75 KB of a 10-hit page)."""
    if brief:
        return result
    seen: set[str] = set()
    for hit in found.hits:
        if hit.source_file in seen:
            continue
        seen.add(hit.source_file)
        where = f"{hit.type}: {hit.heading or hit.title}, lines {hit.line_start}-{hit.line_end}"
        result.content.append(_link(hit.source_file, hit.title, where, hit.id))
    return result


def link_sources(result: CallToolResult, consulted: ConsultResult, brief: bool = False) -> CallToolResult:
    """The same for consult: one link per source note."""
    seen: set[str] = set()
    for src in [*consulted.principles, *consulted.learnings]:
        if src.source_file not in seen:
            seen.add(src.source_file)
            result.content.append(_link(src.source_file, src.title, f"{src.type}: {src.heading or src.title}", src.id))
    return result


# -- prompts ----------------------------------------------------------------------------------------
PROMPTS: dict[str, Prompt] = {
    "consult": Prompt(
        name="consult", title="Consult Oracle before a decision",
        description="The principles and learnings that bear on a decision, framed for deciding with them.",
        arguments=[
            PromptArgument(name="decision", description="The decision you are about to make.", required=True),
            PromptArgument(name="context", description="What you know about the situation.", required=False),
        ],
    ),
    "reflect": Prompt(
        name="reflect", title="Reflect on a principle or learning",
        description="One random principle or learning, with a question about the work at hand.",
        arguments=[PromptArgument(name="type", description="all, principle or learning (default all).",
                                  required=False)],
    ),
    "retrospective": Prompt(
        name="retrospective", title="Write a session retrospective",
        description="A retrospective skeleton in this knowledge base's own format, with what happened filled in,"
        " ready to save as a file or to mine with oracle_learn.",
        arguments=[
            PromptArgument(name="what_happened", description="What happened in the session.", required=True),
            PromptArgument(name="title", description="The retrospective's title.", required=False),
            PromptArgument(name="project", description="The project it belongs to.", required=False),
        ],
    ),
    "learn-from-session": Prompt(
        name="learn-from-session", title="Turn session notes into learnings",
        description="Candidate learnings from a session's notes (one per bullet or paragraph), each already checked"
        " against existing learnings for near-duplicates.",
        arguments=[
            PromptArgument(name="notes", description="The session's notes: one lesson per bullet or paragraph.",
                           required=True),
            PromptArgument(name="project", description="The project the learnings belong to.", required=False),
            PromptArgument(name="concepts", description="Tags for the learnings, comma-separated.", required=False),
        ],
    ),
}


def _render_prompt(oracle: Oracle, name: str, args: dict[str, str], client: str) -> PromptText:
    if name == "consult":
        return consult_prompt(oracle, args.get("decision"), args.get("context"), client=client)
    if name == "reflect":
        return reflect_prompt(oracle, args.get("type"), client=client)
    if name == "retrospective":
        return retrospective_prompt(oracle, args.get("what_happened"), args.get("title"), args.get("project"))
    if name == "learn-from-session":
        return learn_from_session_prompt(oracle, args.get("notes"), args.get("project"), args.get("concepts"))
    raise MCPError(INVALID_PARAMS, f"unknown prompt {name!r}: one of {', '.join(PROMPTS)}")


def _prompt_messages(text: PromptText) -> list[PromptMessage]:
    messages = [PromptMessage(role="user", content=TextContent(type="text", text=text.text))]
    seen: set[str] = set()
    for cited in text.cited:
        if cited.path not in seen:
            seen.add(cited.path)
            messages.append(PromptMessage(role="user", content=_link(cited.path, cited.title, None, cited.chunk_id)))
    return messages


# -- completions ------------------------------------------------------------------------------------
def _complete_list(typed: str, complete: Callable[[str], Suggestions]) -> Suggestions:
    """A comma-separated argument (concepts): complete the last item, keep the ones before it."""
    head, _, last = typed.rpartition(",")
    found = complete(last.strip())
    prefix = f"{head}, " if head else ""
    return Suggestions(values=[prefix + v for v in found.values], total=found.total)


def complete_argument(oracle: Oracle, ref: Any, name: str, typed: str,
                      context: Mapping[str, str] | None = None) -> Suggestions:
    """What to offer for one argument of a prompt or resource template (empty when it is free text).
    `context` holds the arguments already chosen (a field's values complete once its name is known)."""
    if isinstance(ref, PromptReference):
        if name == "project":
            return complete_projects(oracle, typed)
        if name == "concepts":
            return _complete_list(typed, lambda t: complete_concepts(oracle, t))
        if name == "type" and ref.name == "reflect":
            return complete_types(typed, ("all", *REFLECT_TYPES))
        return Suggestions([], 0)
    if ref.uri == NOTE_TEMPLATE and name == "path":
        return complete_note_paths(oracle, typed)
    if ref.uri == FIELD_TEMPLATE and name == "name":
        return complete_field_names(oracle, typed)
    if ref.uri == FIELD_TEMPLATE and name == "value":
        return complete_field_values(oracle, (context or {}).get("name"), typed)
    if ref.uri == CHUNK_TEMPLATE and name == "id":
        return complete_section_ids(oracle, typed)
    return Suggestions([], 0)


# -- the surface ------------------------------------------------------------------------------------
def _client(ctx: Any) -> str:
    try:
        return f"mcp:{ctx.session.client_params.client_info.name}"[:100]
    except Exception:
        return "mcp"


def _legacy(ctx: Any) -> bool:
    """Handshake-era connection: notifications go on the connection, not on listen streams."""
    return getattr(ctx, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS


class Surface:
    """Resources, prompts, completions and notifications for one Oracle, installed on one MCPServer."""

    def __init__(self, oracle: Oracle, base_instructions: str, slots: ServiceSlots) -> None:
        self.oracle = oracle
        self.base_instructions = base_instructions
        self.slots = slots  # the server's, shared with its tools (server/services/support/slots.py)
        self.notifier = McpNotifier(oracle)

    def server_options(self) -> dict[str, Any]:
        """Constructor arguments for the MCPServer: our lifespan (notifications) and subscription bus."""
        return {"lifespan": self._lifespan, "subscriptions": self.notifier.bus}

    @contextlib.asynccontextmanager
    async def _lifespan(self, _server: Any) -> AsyncIterator[dict]:
        async with self.notifier.running():
            yield {}

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """A service call off the event loop (notifications keep flowing), in one of the server's slots like a
        tool call, once the start-up sync is ready."""

        def call() -> T:
            self.oracle.wait_ready()
            return fn(*args)

        return await self.slots.run(call)

    def instructions(self) -> str:
        return live_instructions(self.oracle, self.base_instructions)

    def install(self, mcp: Any) -> None:
        """Register every handler on `mcp` (an MCPServer built with `server_options()`)."""
        low = mcp._lowlevel_server  # the SDK's public add_request_handler lives on the low-level server
        handlers: list[tuple[str, type, Callable[[Any, Any], Awaitable[Any]]]] = [
            ("resources/list", PaginatedRequestParams, self._list_resources),
            ("resources/templates/list", PaginatedRequestParams, self._list_templates),
            ("resources/read", ReadResourceRequestParams, self._read_resource),
            ("resources/subscribe", SubscribeRequestParams, self._subscribe),
            ("resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe),
            ("prompts/list", PaginatedRequestParams, self._list_prompts),
            ("prompts/get", GetPromptRequestParams, self._get_prompt),
            ("completion/complete", CompleteRequestParams, self._complete),
        ]
        for method, params_type, handler in handlers:
            low.add_request_handler(method, params_type, handler)
        original = low.create_initialization_options

        def initialization_options(notification_options: Any = None, experimental: Any = None, extensions: Any = None):
            """Handshake-era `initialize`: advertise resource list changes, and instructions as of now."""
            low.instructions = self.instructions()
            return original(notification_options or NotificationOptions(resources_changed=True), experimental,
                            extensions)

        low.create_initialization_options = initialization_options

        async def fresh_instructions(ctx: Any, call_next: Any) -> Any:
            """2026-era `server/discover` reads the instructions when it answers: refresh them first."""
            if ctx.method == "server/discover":
                low.instructions = await anyio.to_thread.run_sync(self.instructions)
            return await call_next(ctx)

        mcp.middleware.append(fresh_instructions)

    # -- resources --------------------------------------------------------------------------------
    @staticmethod
    def _note_resource(note: NoteEntry) -> Resource:
        return Resource(
            uri=note.uri, name=note.path, title=note.title, mime_type="text/markdown", size=note.size,
            description=f"{note.type}, {note.chunks} section{'s' if note.chunks != 1 else ''}",
            annotations=Annotations(last_modified=note.modified) if note.modified else None,
            _meta={"oracle/type": note.type},
        )

    async def _list_resources(self, ctx: Any, params: PaginatedRequestParams) -> ListResourcesResult:
        try:
            page = await self._run(list_notes, self.oracle, params.cursor)
        except BadCursor as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        if _legacy(ctx):
            self.notifier.listed(ctx.session)
        resources = [self._note_resource(n) for n in page.notes]
        if not params.cursor:
            resources.insert(0, Resource(
                uri=STATS_URI, name="stats", title="Oracle stats", mime_type="application/json",
                description=("Documents by type, drift, embedding coverage, vector store health, usage"
                             " (as oracle_stats)."),
                annotations=Annotations(priority=0.3),
            ))
        return ListResourcesResult(resources=resources, next_cursor=page.next_cursor)

    async def _list_templates(self, ctx: Any, params: PaginatedRequestParams) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=[
            ResourceTemplate(
                uri_template=NOTE_TEMPLATE, name="note", title="A note by path", mime_type="text/markdown",
                description="A note's markdown by its path relative to the knowledge root (e.g. learnings/x.md);"
                " its frontmatter, type, sha256 and sections are in the contents' _meta.",
            ),
            ResourceTemplate(
                uri_template=CHUNK_TEMPLATE, name="chunk", title="A section by id", mime_type="text/markdown",
                description="One section (a search hit's id) with its content hash, line span and note in _meta.",
            ),
            ResourceTemplate(
                uri_template=FIELD_TEMPLATE, name="field", title="Notes by a frontmatter field's value",
                mime_type="application/json",
                description="The notes whose frontmatter field holds a value (as where={name: value} in oracle_search"
                " filters them). Both parts complete: field names, then the values of the chosen field.",
            ),
        ])

    async def _read_resource(self, ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
        try:
            content = await self._run(read_resource, self.oracle, params.uri, _client(ctx))
        except (UnknownResource, NotFound) as exc:
            raise MCPError(RESOURCE_NOT_FOUND, str(exc), data={"uri": params.uri}) from None
        return ReadResourceResult(contents=[TextResourceContents(
            uri=params.uri, text=content.text, mime_type=content.mime_type, _meta=content.meta or None,
        )])

    def _known(self, uri: str) -> str:
        try:
            parse_uri(uri)
        except UnknownResource as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        return uri

    async def _subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        self.notifier.subscribe(ctx.session, self._known(params.uri))
        return EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        self.notifier.unsubscribe(ctx.session, params.uri)
        return EmptyResult()

    # -- prompts ----------------------------------------------------------------------------------
    async def _list_prompts(self, ctx: Any, params: PaginatedRequestParams) -> ListPromptsResult:
        return ListPromptsResult(prompts=list(PROMPTS.values()))

    async def _get_prompt(self, ctx: Any, params: GetPromptRequestParams) -> GetPromptResult:
        if params.name not in PROMPTS:
            raise MCPError(INVALID_PARAMS, f"unknown prompt {params.name!r}: one of {', '.join(PROMPTS)}")
        refused = unstorable_text(dict(params.arguments or {}))  # the tools' own check (a NUL, a lone surrogate)
        if refused is not None:
            raise MCPError(INVALID_PARAMS, f"prompt {params.name}: {refused}")
        try:
            text = await self._run(_render_prompt, self.oracle, params.name, dict(params.arguments or {}), _client(ctx))
        except (PromptArgumentError, NotFound) as exc:
            raise MCPError(INVALID_PARAMS, f"prompt {params.name}: {exc}") from None
        return GetPromptResult(description=text.description, messages=_prompt_messages(text))

    # -- completions ------------------------------------------------------------------------------
    async def _complete(self, ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        context = params.context.arguments if params.context and params.context.arguments else None
        found = await self._run(complete_argument, self.oracle, params.ref, params.argument.name, params.argument.value,
                                context)
        return CompleteResult(completion=Completion(values=found.values[:100], total=found.total,
                                                    has_more=found.has_more))


__all__ = ["Surface", "link_hits", "link_sources", "live_instructions"]
