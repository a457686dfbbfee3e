"""`oracle serve --http`: the REST API generated from the registry, the dashboard (static/) and MCP over
streamable HTTP (app.py; mcp_sessions.py bounds the MCP sessions). May import `server.engine` (the
server-proof the CLI checks), `server.mcp` (mounted at /mcp), `server.registry`, `server.services`, `indexer`.
"""
