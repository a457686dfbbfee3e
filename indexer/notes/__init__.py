"""Markdown in, as data: discover files, parse them into sections, fields, concepts, languages and
words (Thai segmentation), freshness. Pure functions; no store, no models."""
