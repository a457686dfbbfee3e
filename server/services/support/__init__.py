"""What the adapters need beyond the tools: resources (notes by page, sections by id), suggestions (completions,
the retrospective format), changes (what the index gained or lost since last asked: notifications), guide (what the
notes look like, for the MCP instructions), init (`oracle init`), loading (what a cold call waits for) and slots
(how many service calls run at once)."""
