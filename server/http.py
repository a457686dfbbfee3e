"""`oracle serve --http`: MCP over streamable HTTP at /mcp, plus /health, on 127.0.0.1 by default."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from server import __version__
from server.app import Oracle
from server.mcp_server import build_server


def build_app(oracle: Oracle, host: str = "127.0.0.1") -> Starlette:
    mcp: MCPServer = build_server(oracle)

    @mcp.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> JSONResponse:
        counts = oracle.store.counts()
        return JSONResponse({"status": "ok", "version": __version__, "files": counts["files"], "chunks": counts["chunks"]})

    return mcp.streamable_http_app(streamable_http_path="/mcp", host=host)


def serve_http(oracle: Oracle, host: str, port: int) -> None:
    import uvicorn

    uvicorn.run(build_app(oracle, host=host), host=host, port=port, log_level="warning")
