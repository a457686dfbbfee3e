"""The usage logs live in the store (indexer/store/logs.py); this name stays for existing imports."""

from indexer.store.logs import FLUSH_INTERVAL, LOG_TABLES, MAX_TEXT, PRUNED_TABLES, Logs

__all__ = ["FLUSH_INTERVAL", "LOG_TABLES", "MAX_TEXT", "PRUNED_TABLES", "Logs"]
