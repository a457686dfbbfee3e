"""The one way a working copy touches its folder: note names checked, files opened beneath the root.

A team database is shared, not trusted (docs/security.md): any row in it may have been written by a
compromised machine, so a note's path read from it is a claim, not a place. Before this layer, `root / rel`
dropped the root for an absolute `rel`, `..` was refused only by accident, `learnings//x.md` aliased
`learnings/x.md`, and a pull wrote through a symlinked folder into whatever it pointed at.

Two parts:
- `path_problem(rel)`: the pure check of a note name from anywhere but this machine's own walk: relative
  POSIX, NFC, no empty / `.` / `..` component, no leading `/`, no `\\`, no control character, no hidden
  component, a markdown suffix. The database's rows are checked with it where they are read and again at
  commit (indexer/store/pg/revisions.py).
- `RootFiles`: read, stat, write (atomically) and unlink of a checked name, each opened one component at a
  time from the root with O_NOFOLLOW (Python has no binding for openat2's RESOLVE_BENEATH; walking with
  `dir_fd` and O_NOFOLLOW|O_DIRECTORY gives the same guarantee): a symlinked folder on the way, or a symlink
  at the name itself, is refused, never followed, so nothing outside the root is read, replaced or deleted,
  even when a link is swapped in between a check and the open.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from oracle_indexer.digest import token_hex
from oracle_indexer.notes.discover import MARKDOWN_SUFFIXES, is_ignored_name, read_capped

MAX_PATH_CHARS = 1024  # longer than any real note name; a row this long is refused rather than walked
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_READ = os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC


class PathRefused(ValueError):
    """A note name that must not be used, or a file that must not be touched: the message says why."""


def path_problem(rel: object) -> str | None:
    """Why `rel` is not a note name a working copy may act on, or None when it is (pure: no disk)."""
    if not isinstance(rel, str) or not rel:
        return "empty or not text"
    if len(rel) > MAX_PATH_CHARS:
        return f"longer than {MAX_PATH_CHARS} characters"
    if any(ord(c) < 32 or ord(c) == 127 for c in rel):
        return "holds a control character"
    if "\\" in rel:
        return "holds a backslash"
    if rel.startswith("/"):
        return "is absolute"
    if unicodedata.normalize("NFC", rel) != rel:
        return "is not in Unicode NFC (another spelling of a name would alias it)"
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "has an empty, '.' or '..' component"
    if any(is_ignored_name(part) for part in parts):
        return "names a hidden file or folder"
    if not rel.lower().endswith(MARKDOWN_SUFFIXES):
        return "is not a markdown file"
    return None


def named_problem(rel: object) -> str | None:
    """`path_problem` as a message naming the path (escaped), or None."""
    problem = path_problem(rel)
    return f"{shown(rel)} {problem}" if problem else None


def check_path(rel: object) -> str:
    """`rel` itself when it is a usable note name; PathRefused otherwise."""
    problem = named_problem(rel)
    if problem:
        raise PathRefused(problem)
    return rel  # type: ignore[return-value]  # path_problem checked it is a str


def shown(rel: object) -> str:
    """A name as a message may print it: quoted, control characters escaped, long ones cut."""
    text = rel if isinstance(rel, str) else repr(rel)
    return repr(text[:200] + ("..." if len(text) > 200 else ""))


class RootFiles:
    """Files of one root, reached only beneath it (see the module's docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    # -- the walk ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _folder(self, rel: str, create: bool = False) -> Iterator[tuple[int, str]]:
        """(descriptor of the folder holding `rel`, the name in it as the disk spells it) for a checked name.
        `create`: make missing folders on the way. FileNotFoundError when a folder is missing."""
        parts = check_path(rel).split("/")
        fd = os.open(self.root, _DIR)
        try:
            for part in parts[:-1]:
                name = self._spelled(fd, part)
                if create and name is None:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                    name = part
                if name is None:
                    raise FileNotFoundError(errno.ENOENT, "no such folder", rel)
                try:
                    child = os.open(name, _DIR, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise PathRefused(f"{shown(rel)}: {shown(name)} on the way is a symlink or not a folder;"
                                          " a working copy never writes through a link") from None
                    raise
                os.close(fd)
                fd = child
            yield fd, self._spelled(fd, parts[-1]) or parts[-1]
        finally:
            os.close(fd)

    @staticmethod
    def _spelled(fd: int, part: str) -> str | None:
        """The entry of folder `fd` named `part`, in whatever normal form the disk uses (macOS saves NFD)."""
        try:
            os.stat(part, dir_fd=fd, follow_symlinks=False)
            return part
        except FileNotFoundError:
            pass
        if part.isascii():
            return None
        return next((n for n in sorted(os.listdir(fd)) if unicodedata.normalize("NFC", n) == part), None)

    @staticmethod
    def _lstat(fd: int, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    # -- what a working copy does ---------------------------------------------------------------------
    def stat(self, rel: str) -> os.stat_result | None:
        """The note's own stat; None when there is none (or no folder to hold it). A symlink or a non-regular
        file at the name is refused."""
        try:
            with self._folder(rel) as (fd, name):
                st = self._lstat(fd, name)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise PathRefused(f"{shown(rel)} is a symlink or not a regular file; a working copy leaves it alone")
        return st

    def exists(self, rel: str) -> bool:
        """Whether anything at all is at the name (a link too): a name that is taken is never written."""
        try:
            with self._folder(rel) as (fd, name):
                return self._lstat(fd, name) is not None
        except (FileNotFoundError, NotADirectoryError):
            return False

    def read(self, rel: str, max_bytes: int) -> bytes:
        """The note's bytes; PathRefused for a link, a special file or more than `max_bytes`."""
        with self._folder(rel) as (folder, name):
            try:
                fd = os.open(name, _READ, dir_fd=folder)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise PathRefused(f"{shown(rel)} is a symlink; a working copy leaves it alone") from None
                raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise PathRefused(f"{shown(rel)} is not a regular file")
            if st.st_size > max_bytes:
                raise PathRefused(f"{shown(rel)} is larger than the {max_bytes:,}-byte limit (ORACLE_MAX_FILE_BYTES)")
            data = read_capped(fd, max_bytes)
            if data is None:
                raise PathRefused(f"{shown(rel)} grew past the {max_bytes:,}-byte limit while it was read")
            return data
        finally:
            os.close(fd)

    def write(self, rel: str, data: bytes, mode: int = 0o666) -> os.stat_result:
        """Replace (or create) the note atomically; its stat after. A new temporary name, created exclusively
        in the same folder descriptor, is renamed over the name: nothing is written through a link. A file
        that is there keeps its permission bits."""
        with self._folder(rel, create=True) as (fd, name):
            old = self._lstat(fd, name)
            if old is not None and not stat.S_ISREG(old.st_mode):
                raise PathRefused(f"{shown(rel)} is a symlink or not a regular file; not replaced")
            keep = stat.S_IMODE(old.st_mode) if old is not None else None
            tmp = f".{name}.{token_hex(8)}.tmp"
            out = os.open(tmp, _NEW, mode, dir_fd=fd)
            try:
                with os.fdopen(out, "wb") as handle:
                    if keep is not None:
                        os.fchmod(handle.fileno(), keep)  # the note keeps its bits (the umask applied to new ones only)
                    handle.write(data)
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise
            return os.stat(name, dir_fd=fd, follow_symlinks=False)

    def unlink(self, rel: str) -> None:
        """Delete the note; a link or anything but a regular file at the name is refused."""
        with self._folder(rel) as (fd, name):
            st = self._lstat(fd, name)
            if st is None:
                return
            if not stat.S_ISREG(st.st_mode):
                raise PathRefused(f"{shown(rel)} is a symlink or not a regular file; not deleted")
            os.unlink(name, dir_fd=fd)
