"""Keeping the index in step with the files: sync (one run), watch (file events), maintenance (the
engine's background worker)."""
