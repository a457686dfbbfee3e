"""Knowledge out: one service layer (search, consult, reflect, learn, list, stats, concepts, logs) and
thin adapters over it (CLI, MCP tools, HTTP API, dashboard)."""

__version__ = "0.1.0"
