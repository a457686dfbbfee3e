"""The registry: every capability declared once (tools.py: name, request model, service, result model, text,
HTTP route, CLI words), the short text each returns (text.py, rendered by render.py) and its published schemas
(schemas.py). Every adapter is generated from it. May import `oracle_server.services` and `indexer`.
"""
