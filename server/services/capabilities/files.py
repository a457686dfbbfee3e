"""Reading a knowledge file by its path, never anything outside the knowledge root.

Paths come from users and agents. They are refused unless, after every normalisation an attacker could
lean on (URL decoding already done by the framework, backslashes, NUL bytes, `..`, absolute paths,
symlinks), the real file sits inside the root and is markdown, and the rules that decide what is indexed
admit it: a reader never serves what the indexer would leave out (hidden, excluded, gitignored,
`node_modules`, in no mapped folder), under its own name or through a symlink. The read itself goes through the
indexer's `read_inside`, which checks again on the open file: a regular file (never a FIFO, which would
hang the request), still inside the root (a symlink swapped in after the check leads nowhere).
"""

from __future__ import annotations

import unicodedata
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from oracle_indexer.notes.discover import (
    MARKDOWN_SUFFIXES,
    TooLarge,
    Unreadable,
    is_ignored_name,
    on_disk,
    read_inside,
    target_refused,
)
from oracle_indexer.rootconfig import Layout
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import ServiceError
from oracle_server.services.vocabulary.models import NoteText

MAX_READ_BYTES = 5 * 1024 * 1024
# The indexer skips these (dotfiles, editor temporaries); a reader must not serve what was never indexed.
HIDDEN = ("hidden files and folders (names starting with '.', '#' or '~') and editor temporaries are not part of"
          " the knowledge base")


class PathRefused(ServiceError, ValueError):
    """The path tries to leave the knowledge root or is not a knowledge file."""


class FileNotInRoot(ServiceError, LookupError):
    """No such knowledge file."""

    error_kind = "not_found"


class FileContent(BaseModel):
    path: NoteText  # the note's own text and name, defused as every result's (server/services/vocabulary/boundary.py)
    text: NoteText
    size: int
    chunk_ids: list[str]


def _outside_the_rules(named: str, real: str, layout: Layout) -> str | None:
    """Why the rules leave `named` (as asked for) leading to `real` (resolved) out of the knowledge base, or None.

    The same rules as discovery, so a reader serves nothing the index would not hold: the name must not be
    excluded, the target must be something a symlink may lead to, and one of the two must have a type (a
    link from an unmapped `README.md` to a mapped `index.md` reads that note; a plain unmapped file does not).
    """
    rule = layout.excluded_file(named)
    if rule:
        return f"{named} is left out of the knowledge base by the rules ({rule})"
    if real != named:
        reason = target_refused(real, layout)
        if reason:
            return f"{named}: {reason}"
    if layout.type_for(named) is None and layout.type_for(real) is None:
        return f"{named} is in no mapped folder, so it is not part of the knowledge base (see oracle.toml)"
    return None


# Over complexity 10 on purpose: every refusal of a caller's path in the order checked: a security check read whole.
def safe_path(root: Path, raw: str, layout: Layout) -> tuple[str, Path]:  # noqa: C901
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
    if any(is_ignored_name(part) for part in pure.parts):
        raise PathRefused(HIDDEN)
    root = root.resolve()
    try:
        target = on_disk(root, pure.as_posix()).resolve()  # the name as the disk spells it (NFC or NFD)
        rel = unicodedata.normalize("NFC", target.relative_to(root).as_posix())
    except ValueError:
        raise PathRefused("the path leads outside the knowledge root (through a symlink)") from None
    except RuntimeError:  # a symlink loop (Python < 3.13); the message would show the server's own paths
        raise PathRefused("the path cannot be resolved: a symlink loop") from None
    except OSError as exc:  # a loop (3.13+), a name too long for the file system
        raise PathRefused(f"the path cannot be resolved: {exc.strerror or 'OS error'}") from None
    if any(is_ignored_name(part) for part in PurePosixPath(rel).parts):  # a symlink to a hidden file
        raise PathRefused(HIDDEN)
    reason = _outside_the_rules(pure.as_posix(), rel, layout)
    if reason:
        raise PathRefused(reason)
    return rel, target


def read_bytes(root: Path, raw_path: str, layout: Layout) -> tuple[str, bytes]:
    """(relative path, bytes) of a knowledge file, for every reader of notes by path (files, read).

    Read only through `read_inside`: never a FIFO or a device, never outside the root even if a symlink
    is swapped in after `safe_path` looked, and never more than MAX_READ_BYTES into memory.
    """
    root = root.resolve()
    rel, target = safe_path(root, raw_path, layout)
    try:
        return rel, read_inside(target, root, MAX_READ_BYTES, layout)
    except TooLarge:
        raise PathRefused(f"{rel} is larger than {MAX_READ_BYTES // 1_048_576} MB") from None
    except Unreadable as exc:
        raise PathRefused(f"{rel} cannot be read: {exc}") from None
    except OSError as exc:  # missing, or a folder on the way
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
            raise FileNotInRoot(f"no knowledge file at {rel!r}") from None
        raise FileNotInRoot(f"cannot read {rel!r}: {exc.strerror or exc}") from None


def read_file(oracle: Oracle, raw_path: str) -> FileContent:
    rel, data = read_bytes(oracle.settings.root, raw_path, oracle.settings.layout)
    text = data.decode("utf-8", errors="replace")
    return FileContent(path=rel, text=text, size=len(data), chunk_ids=oracle.store.file_chunk_ids(rel))
