"""`oracle serve --http`: the REST API, the dashboard and MCP (streamable HTTP at /mcp) in one process.

Routes are thin: FastAPI validates the parameters with the same pydantic models the MCP tools use, one
service function does the work, and the result model is returned. Bad input is a 4xx with a message.

Safety: bound to 127.0.0.1 by default; another interface needs ORACLE_TOKEN, and then every route but /health
and the pages' static shell (reads, writes and /mcp) needs `Authorization: Bearer <token>`. The Host header must name
this server (DNS rebinding), and CORS is an explicit allow-list (ORACLE_CORS_ORIGINS), never `*`.
"""

import contextlib
import errno
import hashlib
import ipaddress
import json
import math
import os
import re
import secrets
import socket
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qsl, urlencode

import anyio
import anyio.to_thread
from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oracle_server import __version__
from oracle_server.http.mcp_sessions import MAX_SESSIONS, SessionGuard
from oracle_server.mcp.server import build_server
from oracle_server.registry.shapes import BRIEF_MODELS, detail_of
from oracle_server.registry.tools import BY_PATH, TOOLS, Caller, Tool
from oracle_server.services.capabilities.browse import Graph, graph
from oracle_server.services.capabilities.feedback import feedback_overview
from oracle_server.services.capabilities.files import FileContent, read_file
from oracle_server.services.capabilities.stats import health_state, usage_overview
from oracle_server.services.capabilities.supersede import supersessions_overview
from oracle_server.services.capabilities.team import (
    ANONYMOUS,
    IDENTITY_KEY,
    REQUIRE_ENV,
    Identity,
    TokenError,
    TokenStore,
    identity_of,
    token_mode,
    token_required,
    token_store,
    weak_token,
)
from oracle_server.services.runtime.app import Oracle, ServerConfigError
from oracle_server.services.support.slots import ServiceSlots
from oracle_server.services.vocabulary.errors import (
    HTTP_STATUS,
    VALIDATION_STATUS,
    OracleError,
    classify,
    problem,
    problems,
)
from oracle_server.services.vocabulary.models import NoteData

STATIC = Path(__file__).resolve().parent / "static"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# Served without the token: liveness, and the dashboard's static shell (no data in it; it asks for the
# token and sends it with every API call). Everything else, reads included, needs the token when one is set.
# /api/server-proof is public because a CLI checks it before it sends a token (server/cli/remote.py).
PUBLIC_PATHS = frozenset({"/health", "/", "/docs", "/api/server-proof"})
PUBLIC_PREFIXES = ("/static/",)


def check_token(token: str | None) -> str | None:
    """The configured token, or ServerConfigError when it is too easy to guess (`weak_token` says why)."""
    if token is not None:
        reason = weak_token(token)
        if reason:
            raise ServerConfigError(f"ORACLE_TOKEN is refused: {reason}")
    return token


def bearer(header: str) -> str | None:
    """The token of `Authorization: Bearer <token>` (the scheme in any case, RFC 7235), else None."""
    scheme, _, given = header.strip().partition(" ")
    return given.strip(" ") if scheme.lower() == "bearer" else None


def token_matches(header: str, token: str) -> bool:
    """`Authorization: Bearer <token>`, compared in constant time: both sides are hashed first, so neither
    the token's length nor a matching prefix shows in the timing."""
    given = bearer(header)
    if given is None:
        return False
    given_digest = hashlib.sha256(given.encode("utf-8", "surrogateescape")).digest()
    return secrets.compare_digest(given_digest, hashlib.sha256(token.encode()).digest())


def needs_token(method: str, path: str) -> bool:
    """Every route but /health and the dashboard's static shell; CORS preflights carry no credentials."""
    if method == "OPTIONS":
        return False
    return path not in PUBLIC_PATHS and not path.startswith(PUBLIC_PREFIXES)


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
FAILED_AUTH_LIMIT = 20  # wrong bearer tokens one client address may send within FAILED_AUTH_WINDOW ...
FAILED_AUTH_WINDOW = 60.0  # ... seconds; beyond, every request from it is a 429 until the window has passed
FAILED_AUTH_ADDRESSES = 4096  # addresses remembered at most (the oldest forgotten first)


class AuthFailures:
    """Wrong tokens per client address in a sliding window: without a limit a client could try tokens as fast as
    the server answers. Bounded in memory (`FAILED_AUTH_ADDRESSES`); one event loop thread uses it."""

    def __init__(self, limit: int = FAILED_AUTH_LIMIT, window: float = FAILED_AUTH_WINDOW,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.window, self.clock = limit, window, clock
        self.seen: dict[str, deque[float]] = {}

    def wait(self, address: str) -> float:
        """Seconds until `address` may try again (0: now)."""
        times = self.seen.get(address)
        if not times:
            return 0.0
        now = self.clock()
        while times and now - times[0] >= self.window:
            times.popleft()
        if not times:
            del self.seen[address]
            return 0.0
        return self.window - (now - times[0]) if len(times) >= self.limit else 0.0

    def failed(self, address: str) -> None:
        times = self.seen.pop(address, None) or deque(maxlen=self.limit)
        times.append(self.clock())
        self.seen[address] = times  # most recent last: the first entries are the ones to forget
        while len(self.seen) > FAILED_AUTH_ADDRESSES:
            del self.seen[next(iter(self.seen))]


def allowed_origins(allowed_hosts: set[str], cors: list[str]) -> set[str]:
    """Origins a write may come from: this server's own names (http, or https behind a TLS proxy) and the CORS
    allow-list, lower-cased (scheme and host are case-insensitive)."""
    origins = {f"{scheme}://{h}" for h in allowed_hosts for scheme in ("http", "https")}
    # a browser leaves the scheme's default port out of Origin (a TLS proxy listed as `oracle.lan:443`)
    origins |= {f"http://{h[:-3]}" for h in allowed_hosts if h.endswith(":80")}
    origins |= {f"https://{h[:-4]}" for h in allowed_hosts if h.endswith(":443")}
    return origins | {o.lower() for o in cors}


class Guard:
    """Host header, Origin of writes and bearer token for every route but the public ones, as plain ASGI
    middleware, the same on every route (the REST API, the dashboard and /mcp).

    Tokens are needed when ORACLE_TOKEN is set or any named token exists (team mode,
    server/services/capabilities/team.py); the shared token is a writer without a name, a named token is its own
    identity, set on the scope for the routes and /mcp (`identity_of`). Named tokens are looked up on every request, so
    a revoked one stops working at once. The Host header is compared and passed on lower-cased, so /mcp (whose SDK
    compares exactly) answers `LOCALHOST` as the REST routes do; a write (any method but GET, HEAD, OPTIONS) that says
    where it comes from must come from an allowed origin (a page elsewhere cannot post a learning through the
    user's browser); a client address that sent `FAILED_AUTH_LIMIT` wrong tokens waits (429)."""

    def __init__(self, app: ASGIApp, allowed_hosts: set[str], token: str | None,
                 tokens: TokenStore | None = None, origins: set[str] | None = None,
                 required: str | None = None) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.token = token
        self.tokens = tokens
        self.required = required  # why a token is needed even when none exists (`token_required`), else None
        self.origins = origins if origins is not None else allowed_origins(allowed_hosts, [])
        self.failures = AuthFailures()

    def identify(self, header: str) -> Identity | None:
        """The identity behind an Authorization header, or None when it names no token."""
        if self.token and token_matches(header, self.token):
            return ANONYMOUS
        given = bearer(header)
        if given is None or self.tokens is None:
            return None
        return self.tokens.identify(given)

    # Over complexity 10 on purpose: the guard's checks in the order a request meets them (Host, Origin, failed-token
    # wait, token).
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # noqa: C901
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if host.lower() not in self.allowed_hosts:
            await _deny(send, 421, f"Host {host[:100]!r} is not served here (DNS rebinding protection;"
                                   " add it to ORACLE_ALLOWED_HOSTS if it names this server)")
            return
        scope = dict(scope, headers=[(k, v.lower() if k.lower() == b"host" else v) for k, v in scope["headers"]])
        origin = headers.get("origin")
        if scope["method"] not in SAFE_METHODS and origin is not None and origin.lower() not in self.origins:
            await _deny(send, 403, f"Origin {origin[:100]!r} may not write here (cross-site request protection;"
                                   " add it to ORACLE_CORS_ORIGINS if it is yours)")
            return
        if needs_token(scope["method"], scope["path"]):
            address = (scope.get("client") or ("?", 0))[0]
            wait = self.failures.wait(address)
            if wait:
                await _deny(send, 429, f"too many wrong tokens from {address}: try again in {math.ceil(wait)} s",
                            [(b"retry-after", str(math.ceil(wait)).encode())])
                return
            try:
                needed = token_mode(self.tokens, bool(self.token), self.required is not None, self.required or "")
                who = self.identify(headers.get("authorization", "")) if needed else ANONYMOUS
            except TokenError as exc:  # no token left, an unreadable tokens file: never open the server
                await _deny(send, 503, str(exc))
                return
            except Exception as exc:  # the team store's token table out of reach: refused, never let through
                error = classify(exc)
                if error is None:
                    raise
                await _deny(send, HTTP_STATUS.get(error.kind, 503), error.message)
                return
            if who is None:
                if bearer(headers.get("authorization", "")):  # a guess: a request without a token is not one
                    self.failures.failed(address)
                await _deny(send, 401, "missing or wrong token: send 'Authorization: Bearer <token>' (ORACLE_TOKEN,"
                            " or a named token from `oracle token add`)",
                            [(b"www-authenticate", b'Bearer realm="oracle"')])
                return
            scope[IDENTITY_KEY] = who
        await self.app(scope, receive, send)


MAX_BODY_BYTES = 1024 * 1024  # a learning is at most 50,000 characters; 1 MiB holds it escaped, with room
READ_TIMEOUT = 10.0  # seconds a client may take to send its request headers, or between two parts of a body
ERROR_EXCERPT_CHARS = 200
MAX_REPORTED_ERRORS = 20  # a body with 10,000 bad items gets the first few explained, not a 10,000-line echo


class BodyLimit:
    """Caps request bodies (413) and times out bodies that stop arriving (408), before any route or the
    MCP transport reads them. A declared Content-Length over the cap is refused unread; a chunked body is
    read at most up to the cap. Before this, a 200 MB POST took 1.8 GB of memory and stalled /health."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES, timeout: float = READ_TIMEOUT) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope["headers"] if k.lower() == b"content-length"), None)
        if declared is not None and (not declared.strip().isdigit() or int(declared) > self.max_bytes):
            await _deny(send, 413, self._too_large(), [(b"connection", b"close")])
            return
        body, more, disconnected = [], True, False
        size = 0
        while more:
            try:
                with anyio.fail_after(self.timeout):
                    message = await receive()
            except TimeoutError:
                await _deny(send, 408, f"the request body stopped arriving for {self.timeout:.0f} s",
                            [(b"connection", b"close")])
                return
            if message["type"] == "http.disconnect":
                disconnected = True
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _deny(send, 413, self._too_large(), [(b"connection", b"close")])
                return
            body.append(chunk)
            more = message.get("more_body", False)
        if disconnected:
            return
        await self.app(scope, _replay(b"".join(body), receive), send)

    def _too_large(self) -> str:
        return f"request body too large: at most {self.max_bytes // 1024} KiB"


def _replay(body: bytes, receive: Receive) -> Receive:
    """The buffered body once, then the real channel (so streaming responses still see a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def excerpt(value: object, limit: int = ERROR_EXCERPT_CHARS) -> object:
    """An input as an error may echo it: whole when short, else its start and its size. A 5 MB invalid body
    once came back whole in the 422."""
    try:
        size = len(json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        size = limit + 1
    if size <= limit:
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return f"{text[:limit]}… ({size} characters in all)"


def _short_errors(errors: list[dict]) -> list[dict]:
    """Validation errors with every echoed input and location cut to an excerpt."""
    out = []
    for err in errors:
        err = dict(err)
        if "input" in err:
            err["input"] = excerpt(err["input"])
        err["loc"] = tuple(excerpt(p, 100) if isinstance(p, str) else p for p in err.get("loc", ()))
        out.append(err)
    return out


SECURITY_HEADERS = [
    # The dashboard's meta CSP cannot say frame-ancestors (browsers ignore it there): say it as a header.
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class SecurityHeaders:
    """Every response, errors included, refuses to be framed (clickjacking) or content-sniffed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message = {**message, "headers": [*message.get("headers", []),
                                                   *(h for h in SECURITY_HEADERS if h[0] not in present)]}
            await send(message)

        await self.app(scope, receive, with_headers)


async def _deny(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = JSONResponse({"error": message}, status_code=status).body
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


def _problem(err: dict) -> str:
    """One FastAPI validation error as `field: message` (server/services/vocabulary/errors.py formats every
    adapter's)."""
    return problem(err, located=True)


def _json_safe(value: object) -> object:
    """Error bodies echo the caller's input, which may hold what JSON cannot carry out again (lone UTF-16
    surrogates from `\\ud800` escapes, numbers like 1e999 that parse to infinity): without this the error
    response itself failed to render and the caller got a 500."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {_json_safe(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


class Health(BaseModel):
    status: str
    version: str
    files: int
    chunks: int
    # the PostgreSQL store's state (ORACLE_DATABASE_URL): reachable, since when it is not, and why; None: SQLite
    database: dict | None = None


# Rows of the logs and overviews quote note text (titles, paths, reasons, guidance, queries): NoteData defuses
# every string in them, as the tools' results are (server/services/vocabulary/boundary.py).
class FeedbackOverview(BaseModel):
    helpful: list[NoteData]
    misleading: list[NoteData]


class Supersessions(BaseModel):
    supersessions: list[NoteData]


class LogsResult(BaseModel):
    searches: list[NoteData]
    consultations: list[NoteData]
    learnings: list[NoteData]  # each with `author`: the named token that wrote it (team mode), else null
    feedback: list[NoteData] = []
    supersessions: list[NoteData] = []
    # edits and archives (server/services/capabilities/edit.py), with author, hashes and where an archive went
    edits: list[NoteData] = []
    per_day: dict[str, list[dict]]
    per_hour: dict[str, list[dict]]  # the last 48 hours, "YYYY-MM-DDTHH" (UTC)
    titles: dict[str, dict[str, str]] = {}  # each note a write names (section id or path) -> {title, file}


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def host_names(host: str, port: int, extra: str = "") -> set[str]:
    """Host header values this server answers to: loopback names, the bind address, and ORACLE_ALLOWED_HOSTS
    (comma-separated names such as `oracle.lan` or `192.168.1.20`, or `name:port` for a proxy in front)."""
    names = {"127.0.0.1", "localhost", "[::1]", _bracketed(host)}
    allowed: set[str] = set()
    for item in (i.strip().lower() for i in extra.split(",")):
        if not item:
            continue
        if item == "*" or "/" in item or "@" in item:
            raise ServerConfigError(f"ORACLE_ALLOWED_HOSTS entry {item!r} is not a host name (no wildcards, no URLs)")
        if re.fullmatch(r"\[[0-9a-f:.]+\]:\d+|[^:\[\]]+:\d+", item):
            allowed.add(item)  # already name:port
        else:
            names.add(_bracketed(item))
    allowed |= {f"{n}:{port}" for n in names}
    if port == 80:
        allowed |= names
    return {h.lower() for h in allowed}


class V2QueryAlias:
    """Oracle v2's HTTP clients send /api/search?q=...: read it as query= (pure ASGI: /mcp streams pass through)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") == "/api/search":
            pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
            if any(k == "q" for k, _ in pairs) and not any(k == "query" for k, _ in pairs):
                renamed = [("query" if k == "q" else k, v) for k, v in pairs]
                scope = dict(scope, query_string=urlencode(renamed).encode("latin-1"))
        await self.app(scope, receive, send)


def build_app(oracle: Oracle, host: str = "127.0.0.1", port: int = 37778, token: str | None = None,
              proof_secret: bytes | None = None) -> ASGIApp:
    """The REST API, the dashboard and MCP at /mcp as one ASGI app behind the guard (tokens, Host, body limit).
    Built in parts, one function each below, so that each part (who may call, the MCP endpoint, the error
    answers, the routes) reads on its own; the routes are added in the order they are matched."""
    token, tokens, required = _access(oracle, host, token)
    allowed_hosts = host_names(host, port, os.environ.get("ORACLE_ALLOWED_HOSTS", ""))
    mcp, sessions = _mcp_endpoint(oracle, host, allowed_hosts)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI):
        # tokens.watching(): the team table re-read on a timer, not only when a request asks (a revocation holds
        # in an outage that follows it)
        async with mcp.session_manager.run(), anyio.create_task_group() as group, _sync_context(tokens.watching()):
            group.start_soon(sessions.run)  # half-open sessions expire even when no request comes
            yield
            group.cancel_scope.cancel()

    app = FastAPI(title="Oracle", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Searchable agent memory made of plain markdown.")

    app.add_middleware(V2QueryAlias)
    _add_error_answers(app)

    def ready() -> Oracle:
        oracle.wait_ready()
        return oracle

    Ready = Annotated[Oracle, Depends(ready)]
    _add_service_routes(app, oracle, proof_secret)
    for tool in TOOLS:
        _add_tool_route(app, tool, Ready, _client_of, mcp.slots)
    _add_dashboard_routes(app, oracle, Ready)
    # Starlette serves an ASGI app given as a route's endpoint; add_route's types name request handlers only
    app.add_route("/mcp", sessions, methods=["GET", "POST", "DELETE"],  # type: ignore[arg-type]
                  include_in_schema=False)

    origins = [o.strip() for o in os.environ.get("ORACLE_CORS_ORIGINS", "").split(",")
               if o.strip() and o.strip() != "*"]
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins or sorted(f"http://{h}" for h in allowed_hosts),
        allow_methods=["GET", "POST"],
        allow_headers=["Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version"],
    )
    hosts = {h.lower() for h in allowed_hosts}
    return SecurityHeaders(Guard(BodyLimit(app), allowed_hosts=hosts, token=token, tokens=tokens,
                                 origins=allowed_origins(hosts, origins), required=required))


def _access(oracle: Oracle, host: str, token: str | None) -> tuple[str | None, TokenStore, str | None]:
    """The shared token, the named tokens (the team store's, if any) and why a token is required on this host
    (None: it is not). Checked before anything listens: a server reachable from other machines with no token at
    all is refused here rather than served."""
    # "" is no token: a front an engine serves for another process takes that process's ORACLE_TOKEN, not its own
    token = check_token((token if token is not None else os.environ.get("ORACLE_TOKEN")) or None)
    tokens = token_store(oracle.settings.database_url, oracle.settings.data_dir)  # the team store's, if any
    required = _token_required(host)
    if required and not token and not tokens.enabled():
        raise ServerConfigError(
            f"refusing to listen on {host} ({required}) without ORACLE_TOKEN or a named token: set ORACLE_TOKEN,"
            " create tokens with `oracle token add NAME --write`, or bind to 127.0.0.1"
            + (" (without ORACLE_REQUIRE_TOKEN)" if is_loopback(host) else "")
        )
    return token, tokens, required


def _mcp_endpoint(oracle: Oracle, host: str, allowed_hosts: set[str]) -> tuple[Any, SessionGuard]:
    """The MCP server and its streamable HTTP endpoint behind the session guard (server/http/mcp_sessions.py),
    with the SDK's own DNS-rebinding check on the same host names as the guard's."""
    mcp = build_server(oracle)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=sorted(allowed_hosts),
            allowed_origins=sorted(f"http://{h}" for h in allowed_hosts),
        ),
        max_sessions=MAX_SESSIONS,
    )
    sessions = SessionGuard(next(r.endpoint for r in mcp_app.routes if isinstance(r, Route) and r.path == "/mcp"),
                            mcp.session_manager)
    return mcp, sessions


def _client_of(request: Request) -> str:
    """"cli@server" for the CLI's calls through this server (server/cli/remote.py), else "http"."""
    return "cli@server" if request.headers.get("x-oracle-client") == "cli@server" else "http"


def _add_error_answers(app: FastAPI) -> None:
    """Every failure answered as JSON with an `error` message: a service's (its own status), invalid input
    (the fields named, as the other adapters name them) and Starlette's own (404, 405...)."""

    @app.exception_handler(OracleError)
    async def oracle_error(request: Request, exc: OracleError) -> JSONResponse:
        return JSONResponse({"error": exc.message}, status_code=exc.http_status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _short_errors(list(exc.errors())[:MAX_REPORTED_ERRORS])
        tool = BY_PATH.get(request.url.path)
        listed = problems(errors, located=True, accepted=tool.accepted if tool else None)
        body = {"error": f"invalid input: {listed}", "detail": jsonable_encoder(errors)}
        return JSONResponse(_json_safe(body), status_code=VALIDATION_STATUS)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)


def _add_service_routes(app: FastAPI, oracle: Oracle, proof_secret: bytes | None) -> None:
    """The routes that do not wait for the index: /health, which answers at once whatever the database's state,
    and the CLI's server proof."""

    @app.get("/health", response_model=Health, responses={503: {"description": "the database cannot be reached"}})
    def health() -> Health | JSONResponse:
        """At once, whatever the database's state: a PostgreSQL store that cannot be reached is a 503 saying so
        (before, /health waited 30 s for a connection and answered a bare 500)."""
        state = health_state(oracle)
        if state["status"] not in ("ok", "working copy"):  # an engine serving its working copy is up (and says so)
            return JSONResponse({**state, "version": __version__}, status_code=503)
        return Health(version=__version__, **state)

    @app.get("/api/server-proof", include_in_schema=False)  # the CLI's check, not part of the API
    def server_proof(nonce: Annotated[str, Query(min_length=16, max_length=128)]) -> JSONResponse:
        """Proof that this is the server whose `server.json` the CLI read (server/cli/remote.py): HMAC of the CLI's
        nonce with the secret recorded there. The secret itself never leaves the data dir."""
        if proof_secret is None:
            return JSONResponse({"error": "no proof secret"}, status_code=404)
        from oracle_server.engine.channel import server_proof as prove

        return JSONResponse({"proof": prove(proof_secret, nonce)})


def _add_dashboard_routes(app: FastAPI, oracle: Oracle, Ready: Any) -> None:
    """What the dashboard reads beyond the tools (graph, file, feedback, supersessions, logs), its pages and
    their static files. `Ready` is the dependency that waits for the index."""

    @app.get("/api/graph", response_model=Graph)
    def api_graph(o: Ready, limit: Annotated[int, Query(ge=1, le=200)] = 40, documents: bool = True) -> Graph:
        return graph(o, limit=limit, documents=documents)

    @app.get("/api/file", response_model=FileContent)
    def api_file(o: Ready, path: Annotated[str, Query(max_length=1000)]) -> FileContent:
        return mapped(read_file, o, path)

    @app.get("/api/feedback", response_model=FeedbackOverview)
    def api_feedback_overview(o: Ready, limit: Annotated[int, Query(ge=1, le=100)] = 10) -> FeedbackOverview:
        return FeedbackOverview(**feedback_overview(o, limit))

    @app.get("/api/supersessions", response_model=Supersessions)
    def api_supersessions(o: Ready) -> Supersessions:
        return Supersessions(supersessions=supersessions_overview(o))

    @app.get("/api/logs", response_model=LogsResult)
    def api_logs(limit: Annotated[int, Query(ge=1, le=200)] = 20,
                 days: Annotated[int, Query(ge=1, le=365)] = 30) -> LogsResult:
        return LogsResult(**usage_overview(oracle, limit, days))

    @app.get("/docs", include_in_schema=False)
    def docs() -> FileResponse:
        return FileResponse(STATIC / "docs.html")

    @app.get("/", include_in_schema=False)
    def dashboard() -> HTMLResponse:
        index = STATIC / "index.html"
        if index.is_file():
            return FileResponse(index)  # type: ignore[return-value]
        return HTMLResponse("<h1>Oracle</h1><p>Dashboard assets missing.</p>", status_code=500)

    if STATIC.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC), name="static")


@contextlib.asynccontextmanager
async def _sync_context(context: contextlib.AbstractContextManager[None]) -> AsyncIterator[None]:
    """A plain context manager inside an `async with` (its exit may join a thread: run off the event loop)."""
    context.__enter__()
    try:
        yield
    finally:
        await anyio.to_thread.run_sync(context.__exit__, None, None, None)


def _token_required(host: str) -> str | None:
    """Why this server needs a token even when none exists (bound beyond loopback, ORACLE_REQUIRE_TOKEN), else
    None: a loopback server without tokens serves every local account."""
    try:
        if not token_required(is_loopback(host), os.environ):
            return None
    except TokenError as exc:
        raise ServerConfigError(str(exc)) from None
    return f"bound to {host}" if not is_loopback(host) else f"{REQUIRE_ENV}=1"


def mapped(service: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a service; a failure a caller can act on becomes an OracleError (answered with its kind's
    status by one handler), anything else stays a bug (a 500)."""
    try:
        return service(*args, **kwargs)
    except Exception as exc:
        error = classify(exc)
        if error is None:
            raise
        raise error from exc


def _add_tool_route(app: FastAPI, tool: Tool, ready: Any, client_of: Callable[[Request], str],
                    slots: ServiceSlots) -> None:
    """One registry tool as a route: GET reads the request model from the query string, POST from a JSON
    body; FastAPI validates with the model (422), the service's failures map through
    server/services/vocabulary/errors.py. The service runs in a worker thread taken from `slots`
    (server/services/support/slots.py), shared with /mcp."""
    model = tool.request

    async def answer(o: Oracle, params: BaseModel, request: Request, response: Response) -> Any:
        who = identity_of(request.scope)
        caller = Caller(client_of(request), "http", author=who.name, can_write=who.can_write)
        result = await slots.run(mapped, tool.run, o, params, caller)  # run: a call that waits for a load logs it
        mark = o.backend.mark()
        if mark:  # every answer from the working copy says so, warnings or not
            response.headers["X-Oracle-Store"] = mark.encode("latin-1", "replace").decode("latin-1")
        if tool.brief is not None and detail_of(params, "http") == "brief":  # asked for: the brief shape
            store = {k: v for k, v in response.headers.items() if k.lower() == "x-oracle-store"}
            return JSONResponse(tool.dump(params, result, "http"), status_code=tool.http.status, headers=store)
        return result

    if tool.http.method == "GET":
        async def endpoint(o: ready, params: Annotated[model, Query()], request: Request,  # type: ignore[valid-type]
                           response: Response) -> Any:
            return await answer(o, params, request, response)
    else:
        async def endpoint(o: ready, params: model, request: Request,  # type: ignore[valid-type]
                           response: Response) -> Any:
            return await answer(o, params, request, response)

    endpoint.__name__ = "api_" + tool.name.removeprefix("oracle_")
    shapes = BRIEF_MODELS.get(tool.name)  # a tool with `detail=brief` answers either shape
    answers = tool.result if shapes is None else tool.result | shapes
    app.add_api_route(tool.http.path, endpoint, methods=[tool.http.method], response_model=answers,
                      status_code=tool.http.status, name=endpoint.__name__, summary=tool.description.split(". ")[0])


def header_timeout_protocol():
    """uvicorn's h11 protocol with a deadline for the request line and headers: uvicorn has none, so a client
    that sends half a request (or one byte every few seconds) held a connection open for ever."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutProtocol(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm_header_deadline()

        def _arm_header_deadline(self) -> None:
            self._header_deadline = self.loop.call_later(READ_TIMEOUT, self._headers_too_slow)

        def _headers_too_slow(self) -> None:
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()  # still no complete request line and headers

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._header_deadline.cancel()
            self._arm_header_deadline()  # the next request on a kept-alive connection gets its own deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._header_deadline.cancel()
            super().connection_lost(exc)

    return HeaderTimeoutProtocol


class PortInUse(OSError):
    """The address is taken; the message says by what kind of thing and what to do."""


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything starts: a taken port is one clear error (uvicorn would log
    it after the start-up work began, and older versions aborted the process)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(f"port {port} on {host} is already in use (another `oracle serve --http`?):"
                            " stop it, or choose another with --port or ORACLE_PORT") from exc
        raise
    sock.listen(2048)
    return sock


def make_server(oracle: Oracle, host: str, port: int, proof_secret: bytes | None = None,
                token: str | None = None) -> Any:
    """The uvicorn server for the app (not started): `serve_http` runs it here, an engine's front in a thread."""
    import uvicorn

    config = uvicorn.Config(build_app(oracle, host=host, port=port, proof_secret=proof_secret, token=token), host=host,
                            port=port, log_level="warning", http=header_timeout_protocol(),
                            h11_max_incomplete_event_size=64 * 1024)
    return uvicorn.Server(config)


def serve_http(oracle: Oracle, host: str, port: int, sock: socket.socket | None = None,
               proof_secret: bytes | None = None, started: Callable[[Any], None] | None = None) -> None:
    """Serve until SIGINT/SIGTERM (in the main thread) or until `server.should_exit` is set: `started` gets the
    server before it runs (`oracle serve --http` stops it when its engine is told to stop)."""
    server = make_server(oracle, host, port, proof_secret=proof_secret)
    if started is not None:
        started(server)
    server.run(sockets=[sock or bind(host, port)])

