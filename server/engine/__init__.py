"""One shared engine per knowledge root and data dir (process.py), the private channel a client proves itself
on (channel.py), and the stdio relay a session runs instead of a whole Oracle (relay.py). May import
`oracle_server.mcp`, `oracle_server.registry`, `oracle_server.services` and `indexer`; never `http` or `cli`.
"""
