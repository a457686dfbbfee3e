"""Concepts: frontmatter tags plus known keywords found on word boundaries.

Matching is by whole word (regex lookarounds over Unicode word characters), so "git" is found in
"use git rebase" but never in "digital". Pure functions; no state.
"""

from __future__ import annotations

import re

# Engineering and agent-memory vocabulary. Multi-word entries match as phrases.
KEYWORDS: tuple[str, ...] = (
    "agent", "api", "architecture", "async", "authentication", "backup", "benchmark", "bug", "cache",
    "chromadb", "ci", "cli", "code review", "commit", "concurrency", "config", "consult", "context",
    "database", "debugging", "delegation", "dependency", "deploy", "design", "docker", "documentation",
    "embedding", "error handling", "fts5", "frontmatter", "git", "http", "hybrid search", "index",
    "latency", "learning", "logging", "markdown", "mcp", "memory", "migration", "mock", "monitoring",
    "observability", "offline", "oracle", "parser", "performance", "pattern", "principle", "privacy",
    "prompt", "python", "query", "ranking", "rebase", "refactor", "regression", "release", "retrospective",
    "review", "rollback", "rust", "schema", "search", "security", "session", "sqlite", "subagent",
    "supersede", "test", "testing", "token", "trust", "typescript", "unicode", "validation", "vector",
    "watcher", "workflow",
)

_SINGLE = frozenset(k for k in KEYWORDS if " " not in k)
_PHRASES = tuple(k for k in KEYWORDS if " " in k)
_WORD = re.compile(r"\w+")
_TAG_SPLIT = re.compile(r"[,;]")
MAX_TAG_CHARS = 64  # a stored tag is cut to this; filters are cut the same way (normalise_tag)


def tag_parts(text: str) -> list[str]:
    """The tags one written value holds, normalised but not yet cut to MAX_TAG_CHARS: split on `,` and
    `;`, trimmed, a leading '#' dropped (Obsidian style), inner whitespace collapsed, lower-cased, empty
    parts dropped. The one rule for frontmatter, search filters and learn requests alike (a learn request
    refuses an over-long tag instead of cutting it, so the cut is separate)."""
    return [tag for tag in map(_normal_form, _TAG_SPLIT.split(text)) if tag]


def _normal_form(part: str) -> str:
    return " ".join(part.strip().lstrip("#").split()).lower()


def normalise_tag(tag: str) -> str:
    """One tag as stored: `tag_parts`' normalisation of a single part, cut to MAX_TAG_CHARS ("" for none)."""
    return _normal_form(tag)[:MAX_TAG_CHARS].rstrip()


def normalise_tags(value: object) -> list[str]:
    """The tags as stored, from a list, a comma or semicolon string, a single scalar or nothing. A tag never
    holds `,` or `;`: each item, in a list or not, is split on them, so "ops;deploy" is the tags "ops" and
    "deploy" wherever it is written."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple, set)) else [value]
    out: dict[str, None] = {}  # ordered set: a list's `in` made 100k tags quadratic
    for item in items:
        if isinstance(item, (dict, list)):
            continue
        for part in _TAG_SPLIT.split(str(item)):
            out[normalise_tag(part)] = None
    return [t for t in out if t]


def extract_concepts(text: str) -> list[str]:
    """Known keywords present in text as whole words, normalised and sorted.

    The text is cut into words once; single-word keywords are a set intersection and phrases are
    looked up in the space-joined word list, so "git" never matches inside "digital".
    """
    words = _WORD.findall(text.lower())
    found = set(_SINGLE.intersection(words))
    if _PHRASES:
        joined = f" {' '.join(words)} "
        found.update(p for p in _PHRASES if f" {p} " in joined)
    return sorted(found)
