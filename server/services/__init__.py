"""The one service layer: every behaviour lives here once, as plain functions over an `Oracle` (app.py).

Adapters (MCP, HTTP, CLI) call these through the registry; nothing here knows which adapter called. May
import: `indexer`, and modules of this package. Never `oracle_server.registry`, `mcp`, `engine`, `http` or `cli`.

- app.py: the Oracle context (settings, store, vectors, embedder). models.py: request and result models.
  errors.py: one error model. boundary.py: the consult trust boundary's markers.
- search/: the one search, as a pipeline (pipeline.py) of pure steps (query, scoring, expansion, notes, where).
- consult, browse (reflect, list, concepts), read, files, learn, edit, supersede, relations, feedback, verify,
  working_set, freshness, stats: one module per capability.
- what the adapters read beyond the tools: resources (notes by page, sections by id), suggestions (completions,
  the retrospective format), changes (what the index gained or lost since last asked), init (`oracle init`).
- team.py: named tokens. slots.py: how many service calls run at once.

Errors: a service's own exception subclasses errors.ServiceError and names its kind (`error_kind`), so errors.py
imports no service. pyproject.toml's [tool.importlinter] checks all of this (tests/contract/test_imports.py).
"""
