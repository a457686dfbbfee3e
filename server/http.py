"""`oracle serve --http`: the REST API, the dashboard and MCP (streamable HTTP at /mcp) in one process.

Routes are thin: FastAPI validates the parameters with the same pydantic models the MCP tools use, one
service function does the work, and the result model is returned. Bad input is a 4xx with a message.

Safety: bound to 127.0.0.1 by default; another interface needs ORACLE_TOKEN, and then every write and
/mcp need `Authorization: Bearer <token>`. The Host header must name this server (DNS rebinding), and
CORS is an explicit allow-list (ORACLE_CORS_ORIGINS), never `*`.
"""

import contextlib
import ipaddress
import math
import os
import secrets
from pathlib import Path
from typing import Annotated
from urllib.parse import parse_qsl, urlencode

from fastapi import Depends, FastAPI, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

from server import __version__
from server.app import Oracle, ServerConfigError
from server.browse import Graph, NotFound, concepts, graph, list_documents, reflect
from server.consult import consult
from server.feedback import FeedbackError, feedback_overview, record_feedback
from server.files import FileContent, FileNotInRoot, PathRefused, read_file
from server.learn import LearnError, learn
from server.mcp_server import build_server
from server.models import (
    ConceptsRequest,
    ConceptsResult,
    ConsultRequest,
    ConsultResult,
    Document,
    FeedbackRequest,
    FeedbackResult,
    LearnRequest,
    LearnResult,
    ListRequest,
    ListResult,
    ReadRequest,
    ReadResult,
    ReflectRequest,
    RelationsRequest,
    RelationsResult,
    SearchRequest,
    SearchResult,
    SupersedeRequest,
    SupersedeResult,
    VerifyRequest,
    VerifyResult,
)
from server.query import QueryError
from server.read import read_note
from server.relations import find_relations
from server.search import search
from server.stats import Stats, stats
from server.supersede import SupersedeError, supersede, supersessions_overview
from server.verify import verify

STATIC = Path(__file__).resolve().parent / "static"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Guard:
    """Host-header check and bearer token for writes and /mcp, as plain ASGI middleware."""

    def __init__(self, app: ASGIApp, allowed_hosts: set[str], token: str | None) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if host.lower() not in self.allowed_hosts:
            await _deny(send, 421, f"Host {host!r} is not served here (DNS rebinding protection)")
            return
        needs_token = scope["method"] not in ("GET", "HEAD", "OPTIONS") or scope["path"].startswith("/mcp")
        if self.token and needs_token:
            given = headers.get("authorization", "")
            if not secrets.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                await _deny(send, 401, "missing or wrong token: send 'Authorization: Bearer $ORACLE_TOKEN'")
                return
        await self.app(scope, receive, send)


async def _deny(send: Send, status: int, message: str) -> None:
    body = JSONResponse({"error": message}, status_code=status).body
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _problem(err: dict) -> str:
    """One validation error as `field: message`; a body that is not JSON at all says so."""
    if err.get("type") == "json_invalid":
        reason = (err.get("ctx") or {}).get("error") or err.get("msg")
        return f"body: not valid JSON ({reason}); send a JSON object"
    parts = [str(p) for p in err["loc"][1:]]
    field = ".".join(parts) if parts else {"query": "parameters"}.get(str(err["loc"][0]), str(err["loc"][0]))
    if not field.strip():  # `?=x`: saying "query: Extra inputs ..." would blame the query parameter
        field = f"{field!r} (a parameter with a blank name)"
    return f"{field}: {err['msg']}"


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


class FeedbackOverview(BaseModel):
    helpful: list[dict]
    misleading: list[dict]


class Supersessions(BaseModel):
    supersessions: list[dict]


class LogsResult(BaseModel):
    searches: list[dict]
    consultations: list[dict]
    learnings: list[dict]
    per_day: dict[str, list[dict]]


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


def build_app(oracle: Oracle, host: str = "127.0.0.1", port: int = 37778, token: str | None = None) -> ASGIApp:
    token = token if token is not None else (os.environ.get("ORACLE_TOKEN") or None)
    if not is_loopback(host) and not token:
        raise ServerConfigError(
            f"refusing to listen on {host} without ORACLE_TOKEN: set a token, or bind to 127.0.0.1"
        )
    names = {"127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host}]"}
    allowed_hosts = {f"{n}:{port}" for n in names} | ({n for n in names} if port == 80 else set())
    mcp = build_server(oracle)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=sorted(allowed_hosts),
            allowed_origins=sorted(f"http://{h}" for h in allowed_hosts),
        ),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI):
        async with mcp.session_manager.run():
            yield

    app = FastAPI(title="Oracle", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Searchable agent memory made of plain markdown.")

    app.add_middleware(V2QueryAlias)

    def client_of(request: Request) -> str:
        """"cli@server" for the CLI's calls through this server (server/remote.py), else "http"."""
        return "cli@server" if request.headers.get("x-oracle-client") == "cli@server" else "http"

    @app.exception_handler(QueryError)
    @app.exception_handler(PathRefused)
    @app.exception_handler(LearnError)
    @app.exception_handler(SupersedeError)
    async def bad_request(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=400)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(_problem(err) for err in exc.errors())
        body = {"error": f"invalid input: {problems}", "detail": jsonable_encoder(exc.errors())}
        return JSONResponse(_json_safe(body), status_code=422)

    @app.exception_handler(FileNotInRoot)
    @app.exception_handler(NotFound)
    @app.exception_handler(FeedbackError)
    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=404)

    def ready() -> Oracle:
        oracle.wait_ready()
        return oracle

    Ready = Annotated[Oracle, Depends(ready)]

    @app.get("/health", response_model=Health)
    def health() -> Health:
        counts = oracle.store.counts()
        return Health(status="ok", version=__version__, files=counts["files"], chunks=counts["chunks"])

    @app.get("/api/search", response_model=SearchResult)
    def api_search(o: Ready, params: Annotated[SearchRequest, Query()], request: Request) -> SearchResult:
        return search(o, params, client=client_of(request), tool="api_search")

    @app.get("/api/consult", response_model=ConsultResult)
    def api_consult(o: Ready, params: Annotated[ConsultRequest, Query()], request: Request) -> ConsultResult:
        return consult(o, params, client=client_of(request))

    @app.get("/api/reflect", response_model=Document)
    def api_reflect(o: Ready, params: Annotated[ReflectRequest, Query()]) -> Document:
        return reflect(o, params, client="http")

    @app.get("/api/list", response_model=ListResult)
    def api_list(o: Ready, params: Annotated[ListRequest, Query()]) -> ListResult:
        return list_documents(o, params)

    @app.get("/api/stats", response_model=Stats)
    def api_stats(o: Ready) -> Stats:
        return stats(o)

    @app.get("/api/concepts", response_model=ConceptsResult)
    def api_concepts(o: Ready, params: Annotated[ConceptsRequest, Query()]) -> ConceptsResult:
        return concepts(o, params)

    @app.post("/api/learn", response_model=LearnResult, status_code=201)
    def api_learn(o: Ready, body: LearnRequest, request: Request) -> LearnResult:
        return learn(o, body, client=client_of(request))

    @app.get("/api/graph", response_model=Graph)
    def api_graph(o: Ready, limit: Annotated[int, Query(ge=1, le=200)] = 40, documents: bool = True) -> Graph:
        return graph(o, limit=limit, documents=documents)

    @app.get("/api/file", response_model=FileContent)
    def api_file(o: Ready, path: Annotated[str, Query(max_length=1000)]) -> FileContent:
        return read_file(o, path)

    @app.get("/api/read", response_model=ReadResult)
    def api_read(o: Ready, params: Annotated[ReadRequest, Query()]) -> ReadResult:
        return read_note(o, params, client="http")

    @app.get("/api/relations", response_model=RelationsResult)
    def api_relations(o: Ready, params: Annotated[RelationsRequest, Query()]) -> RelationsResult:
        return find_relations(o, params)

    @app.post("/api/feedback", response_model=FeedbackResult, status_code=201)
    def api_feedback(o: Ready, body: FeedbackRequest) -> FeedbackResult:
        return record_feedback(o, body, client="http")

    @app.get("/api/feedback", response_model=FeedbackOverview)
    def api_feedback_overview(o: Ready, limit: Annotated[int, Query(ge=1, le=100)] = 10) -> FeedbackOverview:
        return FeedbackOverview(**feedback_overview(o, limit))

    @app.post("/api/supersede", response_model=SupersedeResult, status_code=201)
    def api_supersede(o: Ready, body: SupersedeRequest) -> SupersedeResult:
        return supersede(o, body, client="http")

    @app.get("/api/supersessions", response_model=Supersessions)
    def api_supersessions(o: Ready) -> Supersessions:
        return Supersessions(supersessions=supersessions_overview(o))

    @app.post("/api/verify", response_model=VerifyResult)
    def api_verify(o: Ready, body: VerifyRequest) -> VerifyResult:
        return verify(o, body)

    @app.get("/api/logs", response_model=LogsResult)
    def api_logs(limit: Annotated[int, Query(ge=1, le=200)] = 20,
                 days: Annotated[int, Query(ge=1, le=365)] = 30) -> LogsResult:
        return LogsResult(**oracle.logs.overview(limit, days))

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
    mcp_endpoint = next(r.endpoint for r in mcp_app.routes if getattr(r, "path", None) == "/mcp")
    app.add_route("/mcp", mcp_endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    origins = [o.strip() for o in os.environ.get("ORACLE_CORS_ORIGINS", "").split(",") if o.strip() and o.strip() != "*"]
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins or sorted(f"http://{h}" for h in allowed_hosts),
        allow_methods=["GET", "POST"],
        allow_headers=["Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version"],
    )
    return Guard(app, allowed_hosts={h.lower() for h in allowed_hosts}, token=token)


def serve_http(oracle: Oracle, host: str, port: int) -> None:
    import uvicorn

    uvicorn.run(build_app(oracle, host=host, port=port), host=host, port=port, log_level="warning")

