"""What an Oracle serves from, chosen once (issue 46): one backend per Oracle, and each request pinned to one view
of it.

- parts.py: the store, vectors, logs and indexer one side is made of, and how they are opened;
- backend.py: the `Backend` contract and `StoreBackend` (one side for the Oracle's life: the embedded store, or the
  team database for a one-shot command); choice.py: `open_backend`, the one place that chooses;
- team.py: `TeamBackend`, the team database and the working copy's own index, the link between them and the
  switch in an outage (issue 38 item 3).

Services above name `Backend` and `Parts`; only this package and indexer/store/backends.py name a backend's class.
"""
