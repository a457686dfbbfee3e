"""`oracle serve --http`: the REST API generated from the registry, the dashboard (static/) and MCP over
streamable HTTP (app.py; mcp_sessions.py bounds the MCP sessions). May import `oracle_server.engine` (the
server-proof the CLI checks), `oracle_server.mcp` (mounted at /mcp), `oracle_server.registry`, `oracle_server.services`,
`indexer`.
"""
