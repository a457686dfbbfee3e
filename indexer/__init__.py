"""Markdown in: discovery, parsing, concepts, embeddings, the store and incremental sync.

Nothing here knows about MCP or HTTP; the `server` package builds on it.
"""
