"""Find the markdown files under the knowledge root and give each its document type.

The type comes from the outermost folder on the file's path that the folder map knows
(`principles/`, `resonance/`, `learnings/`, `retrospectives/`, plus ORACLE_FOLDER_TYPES), so both
`knowledge/learnings/x.md` and Oracle v2's `ψ/memory/learnings/x.md` are learnings. Files in folders
the map does not know are counted and reported, never silently dropped.
"""

from __future__ import annotations

import os
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class Found:
    rel: str  # POSIX path relative to the root, NFC-normalised
    path: Path
    type: str


@dataclass
class Discovery:
    files: list[Found] = field(default_factory=list)
    unmapped: Counter = field(default_factory=Counter)  # folder -> markdown files not indexed
    outside: list[str] = field(default_factory=list)  # symlinks that lead out of the root


def is_ignored_name(name: str) -> bool:
    """Dotfiles and editor temporaries (vim swap, emacs autosave/backup, JetBrains ___jb_)."""
    return (
        name.startswith((".", "#", "~"))
        or name.endswith(("~", ".swp", ".swx", ".tmp", "___jb_tmp___", "___jb_old___"))
    )


def type_for(rel: str, folder_types: dict[str, str]) -> str | None:
    for part in rel.split("/")[:-1]:
        if part in folder_types:
            return folder_types[part]
    return None


def is_within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False
    return True


def relative_name(path: Path, root: Path) -> str:
    return unicodedata.normalize("NFC", path.relative_to(root).as_posix())


def on_disk(root: Path, rel: str) -> Path:
    """The file's real path for an NFC-normalised relative name, whatever normal form the disk uses.

    File names created on macOS are often decomposed (NFD); the index and the watcher speak NFC.
    """
    path = root / rel
    if path.exists():
        return path
    current = root
    for part in rel.split("/"):
        candidate = current / part
        if not candidate.exists() and current.is_dir():
            matches = sorted(c for c in current.iterdir() if unicodedata.normalize("NFC", c.name) == part)
            candidate = matches[0] if matches else candidate
        current = candidate
    return current


def discover(root: Path, folder_types: dict[str, str]) -> Discovery:
    """Walk the root (not following directory symlinks) and classify every markdown file."""
    result = Discovery()
    root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not is_ignored_name(d))
        for name in sorted(filenames):
            if is_ignored_name(name) or not name.lower().endswith(MARKDOWN_SUFFIXES):
                continue
            path = Path(dirpath) / name
            rel = relative_name(path, root)
            if path.is_symlink() and not is_within(path, root):
                result.outside.append(rel)
                continue
            doc_type = type_for(rel, folder_types)
            if doc_type is None:
                result.unmapped[rel.rsplit("/", 1)[0] if "/" in rel else "."] += 1
                continue
            result.files.append(Found(rel=rel, path=path, type=doc_type))
    result.files.sort(key=lambda f: f.rel)
    return result
