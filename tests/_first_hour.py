"""Two knowledge bases nobody here wrote, as small fixtures: an ADR repository and an Obsidian vault.

The ADR repository has the shape of a public one (decisions under `locales/<lang>/...`, no principles/
learnings/retrospectives folders, a `README.md -> index.md` symlink in every folder, byte-identical copies
across locales, a root README, a .gitignore). The Obsidian vault has `.obsidian/` and `.trash/`, daily notes
named by date, wikilinks and aliases.
"""

from __future__ import annotations

import os
from pathlib import Path

ADR_TOPICS = {
    "use-postgresql": ("Use PostgreSQL for persistence", "We store orders in PostgreSQL because of transactions."),
    "adopt-kafka": ("Adopt Kafka for events", "Order events go through a Kafka topic with seven partitions."),
    "rest-over-grpc": ("Prefer REST over gRPC at the edge", "Browsers speak REST; gRPC stays internal."),
}
LOCALES = ("en", "fr", "ja")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def build_adr_repo(root: Path) -> dict[str, int]:
    """The ADR-shaped repository; returns how many notes each kind should give."""
    write(root / "README.md", "# Architecture decision records\n\nDecisions of the shop, one folder each.\n")
    write(root / "CONTRIBUTING.md", "# Contributing\n\nOpen a pull request with a new decision folder.\n")
    write(root / ".gitignore", "drafts/\n*.draft.md\n")
    write(root / "drafts/half-baked.md", "# Half baked\n\nnot ready: zebra-draft-token\n")
    write(root / "locales/en/notes.draft.md", "# Draft\n\nzebra-draft-token\n")
    write(root / "node_modules/some-lib/README.md", "# some lib\n\nzebra-vendored-token\n")
    write(root / ".git/description.md", "# git internals\n")
    for lang in LOCALES:
        base = root / "locales" / lang
        write(base / "index.md", f"# Decisions ({lang})\n\nThe decision log in {lang}.\n")
        os.symlink("index.md", base / "README.md")
        for slug, (title, body) in ADR_TOPICS.items():
            folder = base / "decisions" / slug
            # Untranslated decisions are byte-identical copies of the English one (as in the real repository).
            text = f"# {title}\n\n## Context\n\n{body}\n\n## Decision\n\nAccepted.\n"
            if lang == "fr" and slug == "use-postgresql":
                text = "# Utiliser PostgreSQL\n\n## Contexte\n\nNous stockons les commandes dans PostgreSQL.\n"
            write(folder / "index.md", text)
            os.symlink("index.md", folder / "README.md")
    # 3 locale index notes + 9 decisions; 12 README symlinks are the same notes; 2 root files
    return {"notes": 3 + 9 + 2, "symlinks": 12}


def build_obsidian_vault(root: Path) -> dict[str, int]:
    """An Obsidian-style vault; returns how many notes it should give."""
    write(root / ".obsidian/app.json", "{}\n")
    write(root / ".obsidian/workspace.md", "# workspace state\n\nzebra-obsidian-token\n")
    write(root / ".trash/old.md", "# deleted\n\nzebra-trash-token\n")
    write(root / "Welcome.md", "# Welcome\n\nStart at [[Projects/Gecko]] or the [[Reading list|list]].\n")
    write(root / "Projects/Gecko.md",
          "---\naliases:\n  - Lizard uploader\n  - gk\ntags: [project]\n---\n# Gecko\n\n"
          "The uploader writes to [[Object store]] and reads from [[Queue#Retries|the queue]].\n\n"
          "```\n[[Not a link]]\n```\n![[diagram.png]]\n")
    write(root / "Projects/Object store.md", "# Object store\n\nBuckets with versioning; see [[Gecko]].\n")
    write(root / "Reading list.md", "---\naliases: books\n---\n# Reading list\n\n- Designing Data-Intensive Applications\n")
    for day in ("2026-01-05", "2026-01-06", "2026-01-07"):
        write(root / "Daily" / f"{day}.md", f"# {day}\n\n## Log\n\nWorked on [[Gecko]] on {day}.\n")
    return {"notes": 7}
