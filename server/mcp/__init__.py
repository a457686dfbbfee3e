"""The MCP adapter (official Python SDK 2.x): tools generated from the registry (server.py), resources,
prompts, completions and change notifications (surface.py and its parts; what they read comes from services:
resources, suggestions, changes), and the stdio front that answers the
handshake before the SDK has loaded (stdio_front.py, warm.py). May import `oracle_server.registry`,
`oracle_server.services` and `indexer`; never `engine`, `http` or `cli`.
"""
