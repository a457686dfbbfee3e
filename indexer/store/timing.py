"""How often the worker drives the store's periodic work, whichever backend answers (indexer/worker/maintenance.py
reads these; the backends' own modules use the same values)."""

FLUSH_INTERVAL = 0.5  # seconds a search or consultation row may wait in the usage logs' queue before it is written
RETRY_SECONDS = 1.0  # how often the maintenance worker probes a vector store that is down
