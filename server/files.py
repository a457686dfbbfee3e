"""Reading a knowledge file by its path, never anything outside the knowledge root.

Paths come from users and agents. They are refused unless, after every normalisation an attacker could
lean on (URL decoding already done by the framework, backslashes, NUL bytes, `..`, absolute paths,
symlinks), the real file sits inside the root and is markdown.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from indexer.discover import MARKDOWN_SUFFIXES
from server.app import Oracle

MAX_READ_BYTES = 5 * 1024 * 1024


class PathRefused(ValueError):
    """The path tries to leave the knowledge root or is not a knowledge file."""


class FileNotInRoot(LookupError):
    """No such knowledge file."""


class FileContent(BaseModel):
    path: str
    text: str
    size: int
    chunk_ids: list[str]


def safe_path(root: Path, raw: str) -> tuple[str, Path]:
    """(relative POSIX path, resolved absolute path) or PathRefused saying why."""
    if not raw or not raw.strip():
        raise PathRefused("path is empty: pass a path relative to the knowledge root, e.g. learnings/x.md")
    if "\x00" in raw:
        raise PathRefused("path contains a NUL byte")
    if "%" in raw:
        raise PathRefused("path contains '%': send the path decoded exactly once")
    text = unicodedata.normalize("NFC", raw.replace("\\", "/"))
    pure = PurePosixPath(text)
    if pure.is_absolute() or text.startswith("~") or (len(text) > 1 and text[1] == ":"):
        raise PathRefused("absolute paths are refused: pass a path relative to the knowledge root")
    if any(part == ".." for part in pure.parts):
        raise PathRefused("'..' is refused: the path must stay inside the knowledge root")
    if not text.lower().endswith(MARKDOWN_SUFFIXES):
        raise PathRefused("only markdown files (.md) of the knowledge base can be read")
    root = root.resolve()
    try:
        target = (root / pure).resolve()
        rel = target.relative_to(root).as_posix()
    except ValueError:
        raise PathRefused("the path leads outside the knowledge root (through a symlink)") from None
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long for the file system
        raise PathRefused(f"the path cannot be resolved: {exc}") from None
    return rel, target


def read_file(oracle: Oracle, raw_path: str) -> FileContent:
    rel, target = safe_path(oracle.settings.root, raw_path)
    try:
        if not target.is_file():
            raise FileNotInRoot(f"no knowledge file at {rel!r}")
        size = target.stat().st_size
        if size > MAX_READ_BYTES:
            raise PathRefused(f"{rel} is larger than {MAX_READ_BYTES // 1_048_576} MB")
        text = target.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise FileNotInRoot(f"cannot read {rel!r}: {exc.strerror or exc}") from None
    return FileContent(path=rel, text=text, size=size, chunk_ids=oracle.store.file_chunk_ids(rel))
