"""The one service layer: every behaviour lives here once, as plain functions over an `Oracle` (runtime/app.py).

Adapters (MCP, HTTP, CLI) call these through the registry; nothing here knows which adapter called. May
import: `indexer`, and modules of this package. Never `oracle_server.registry`, `mcp`, `engine`, `http` or `cli`.

Four rooms, by kind (issue 46):
- capabilities/: one module per tool family, and search/ (the one search, a pipeline of pure steps);
- support/: what the adapters need beyond the tools (resources, completions, notifications, instructions, init);
- runtime/: the Oracle context and the call path every tool takes (one view of the backend per request);
- vocabulary/: request and result models, errors, the trust boundary's markers.

Errors: a service's own exception subclasses errors.ServiceError and names its kind (`error_kind`), so errors.py
imports no service. pyproject.toml's [tool.importlinter] checks all of this (tests/contract/test_imports.py).
"""
