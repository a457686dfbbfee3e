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


# Section names that say where a note is, not what it is about: an ADR's Context / Decision, a retro's What
# happened, a learning's Pattern. As concept sources they made `context` a top concept of any ADR folder (issue 40).
STRUCTURAL_HEADINGS: frozenset[str] = frozenset({
    "context", "status", "decision", "decisions", "consequences", "considered options", "decision outcome",
    "decision drivers", "context and problem statement", "pros and cons", "options", "alternatives", "summary",
    "overview", "background", "introduction", "conclusion", "notes", "details", "technical details", "references",
    "related", "see also", "links", "tags", "tl;dr", "tldr", "what happened", "what went well", "what could improve",
    "what to change", "what went wrong", "what we learned", "what we built", "lessons learned", "lessons", "lesson",
    "key learnings", "key insight", "key insights", "learnings", "learning", "pattern", "patterns", "practice",
    "fix", "problem", "solution", "action items", "next steps", "timeline", "session summary", "retrospective",
    "retro", "review", "steps", "procedure", "symptoms", "verification", "prerequisites", "date", "author",
    "authors", "deciders", "owner", "created", "updated",
})
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
# **Context**: ... / - **Status:** ...
_LABEL = re.compile(r"^(\s*(?:[-*+]\s+)?)(\*\*|__)([^*_\n]{1,40}?)\s*:?\s*\2\s*:?")


def is_structural_heading(heading: str) -> bool:
    """Is this heading (or `**Label**:`) only a section name: `## Context`, `## 2. Decision`, `## What Happened`,
    `## The Pattern`, `## AI Diary (REQUIRED - min 150 words)`? Compared lower-cased, without numbering, a
    trailing parenthesis or colon, `the`/`our` in front, or emphasis."""
    text = re.sub(r"\([^)]*\)\s*$", "", heading.strip().lower())
    text = re.sub(r"^[\d.)\s]+", "", text).strip(" :*_`'\"")
    text = re.sub(r"^(?:the|our)\s+", "", " ".join(text.split()))
    return text in STRUCTURAL_HEADINGS or f"the {text}" in STRUCTURAL_HEADINGS


def concept_text(title: str, heading: str, content: str) -> str:
    """The text concepts are found in: the title, the heading unless it is only a section name (each part of a
    `A > B` path judged alone), and the content without structural heading lines and `**Label**:` labels."""
    parts = [p for p in heading.split(" > ") if not is_structural_heading(p)]
    lines = []
    for line in content.split("\n"):
        head = _HEADING_LINE.match(line)
        if head and is_structural_heading(head.group(1)):
            continue
        label = _LABEL.match(line)
        if label and is_structural_heading(label.group(3)):
            line = label.group(1) + line[label.end():]
        lines.append(line)
    return f"{title}\n{' > '.join(parts)}\n" + "\n".join(lines)


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
