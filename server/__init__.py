"""Knowledge out: one service layer and thin adapters over it.

The packages, each importing only the ones above it in this list (tests/contract/test_layers.py checks it):

- `services/`  the one service layer: search, consult, learn, read, edit, stats, ... over the indexer's store.
- `registry/`  every capability declared once (tools.py), with its text and schemas, over the services.
- `mcp/`       the MCP adapter: tools, resources, prompts, completions, notifications, the stdio front.
- `engine/`    one shared engine process per knowledge root, its private channel and the stdio relay to it.
- `http/`      the REST API, the dashboard and MCP over streamable HTTP.
- `cli/`       the `oracle` command, which starts any of the above.
"""

__version__ = "0.1.0"
