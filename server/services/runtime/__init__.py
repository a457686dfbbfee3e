"""The Oracle an adapter holds while it runs: app.py (settings, the embedder, one backend; each request pinned to
one view of it) and served.py (one tool call on that view: the outage retry and the working copy's mark)."""
