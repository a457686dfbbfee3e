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


# A translated help vault, shaped like Obsidian's own (one folder per language, the same pages in each, a
# folder of release notes per language): English has every page, the translations most of them.
TRANSLATED_PAGES = {
    "en": {"Getting started.md": "# Getting started\n\nCreate a vault, then open the command palette.\n",
           "Plugins/Daily notes.md": "# Daily notes\n\nThe daily notes plugin opens today's note.\n",
           "Plugins/Graph view.md": "# Graph view\n\nThe graph view shows how notes link together.\n",
           "Linking/Internal links.md": "# Internal links\n\nLink notes with [[double brackets]].\n",
           "Sync/Set up sync.md": "# Set up sync\n\nSync keeps your vault on every device, encrypted end to end.\n"},
    "th": {"Getting started.md": "# เริ่มต้นใช้งาน\n\nสร้างห้องนิรภัย แล้วเปิดชุดคำสั่ง\n",
           "Plugins/Daily notes.md": "# บันทึกประจำวัน\n\nปลั๊กอินบันทึกประจำวันเปิดบันทึกของวันนี้\n",
           "Plugins/Graph view.md": "# มุมมองกราฟ\n\nมุมมองกราฟแสดงว่าบันทึกเชื่อมโยงกันอย่างไร\n"},
    "ja": {"Getting started.md": "# はじめに\n\n保管庫を作成し、コマンドパレットを開きます。\n",
           "Plugins/Daily notes.md": "# デイリーノート\n\nデイリーノートプラグインは今日のノートを開きます。\n",
           "Linking/Internal links.md": "# 内部リンク\n\n二重角括弧でノートをリンクします。\n"},
    "de": {"Getting started.md": "# Erste Schritte\n\nErstelle einen Tresor und öffne die Befehlspalette.\n",
           "Plugins/Daily notes.md": "# Tägliche Notizen\n\nDas Plugin öffnet die Notiz von heute.\n",
           "Plugins/Graph view.md": "# Graphansicht\n\nDie Graphansicht zeigt, wie Notizen verknüpft sind.\n",
           "Sync/Set up sync.md": "# Sync einrichten\n\nSync hält deinen Tresor auf jedem Gerät aktuell.\n"},
    "zh-TW": {"Getting started.md": "# 開始使用\n\n建立一個儲存庫，然後開啟命令面板。\n"},
}
RELEASES = 6  # release notes per language (near-identical entries, as in the real vault)


def build_translated_vault(root: Path) -> dict[str, int]:
    """The translated vault; returns the markdown files in each language folder."""
    write(root / ".obsidian/app.json", "{}\n")
    write(root / "README.md", "# Help\n\nThe help vault, in several languages.\n")
    counts: dict[str, int] = {}
    for lang, pages in TRANSLATED_PAGES.items():
        for rel, text in pages.items():
            write(root / lang / rel, text)
        releases = RELEASES if lang in ("en", "de") else 0
        for n in range(releases):
            write(root / lang / "Release notes" / f"v1.{n}.md",
                  f"# v1.{n}\n\n## Fixes\n\n- Fixed a crash when opening a vault (v1.{n}).\n")
        counts[lang] = len(pages) + releases
    return counts


def build_big_vault(root: Path, notes: int = 300) -> dict[str, object]:
    """A personal vault at the scale where the concept graph became a hairball (nat-brain: 571 notes, 1,081
    links): notes in a few folders, each with two or three of the vault's own tags, three or four wikilinks
    (some inside a table, where the alias's pipe is escaped: `[[Note\\|alias]]`), and prose full of the words
    Oracle's built-in keyword list knows (agent, python, git, test, memory ...)."""
    import random

    rng = random.Random(27)
    tags = [f"{a}-{b}" for a in ("kelp", "otter", "urchin", "tide", "reef", "gull") for b in
            ("survey", "census", "diet", "map", "log", "gear", "site", "team", "grant", "report")]
    folders = ("Field", "Lab", "Admin", "Reading")
    names = [f"{folders[i % len(folders)]}/Note {i:03d}" for i in range(notes)]
    links = 0
    for i, name in enumerate(names):
        mine = rng.sample(tags, rng.choice((2, 3)))
        targets = rng.sample([n for n in names if n != name], rng.choice((3, 4)))
        links += len(targets)
        table = "| link | why |\n| --- | --- |\n" + "".join(
            f"| [[{t}\\|{t.rsplit(' ', 1)[-1]}]] | related |\n" for t in targets[:2])
        prose = " ".join(f"[[{t}]]" for t in targets[2:])
        write(root / f"{name}.md",
              f"---\ntags: [{', '.join(mine)}]\n---\n# {name.rsplit('/', 1)[-1]}\n\nThe agent ran a python test on "
              f"the git memory of {mine[0]} and the database schema.\n\n{table}\nSee also {prose}.\n")
    return {"notes": notes, "links": links, "tags": set(tags)}
