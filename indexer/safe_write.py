"""Write a file atomically without ever writing through a name someone else planted.

A temporary file beside its target is the usual way to replace a file atomically, but a predictable
temporary name (`.oracle.toml.tmp`, `.server.json.<pid>`) is a trap: a symlink planted there in a shared
repository or data dir makes a plain `open(tmp, "w")` overwrite whatever it points at. Every temporary file
Oracle writes is created here instead: a random name, opened with O_CREAT|O_EXCL|O_NOFOLLOW (nothing that
already exists at that name, a symlink included, is ever opened), then renamed over the target (rename
replaces a symlink at the target itself; it never writes through it).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from oracle_indexer.digest import token_hex

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
PRIVATE = 0o600  # the data dir's files: indexes, logs, the server record
PRIVATE_DIR = 0o700  # the data dir itself: what the notes hold, and every logged query, is the user's alone
SHARED = 0o666  # a file in the user's own folder (oracle.toml, a learning): the umask decides


class SymlinkRefused(OSError):
    """The target is a symlink, and this file must be a regular file of its own."""


def create_new(folder: Path, prefix: str, mode: int = PRIVATE) -> tuple[int, Path]:
    """(descriptor, path) of a new empty file `folder/prefix.<random>.tmp`, created exclusively.

    The random part makes the name unguessable, and O_EXCL|O_NOFOLLOW makes the open fail rather than
    follow anything already at the name; so a planted symlink can neither be predicted nor followed.
    """
    for _ in range(16):
        path = folder / f"{prefix}.{token_hex(8)}.tmp"
        try:
            return os.open(path, _NEW_FILE, mode), path
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file in {folder}")


def write_atomic(target: Path, data: bytes | str, mode: int = PRIVATE, *, refuse_symlink: bool = False,
                 fsync: bool = False) -> None:
    """Replace `target` with `data` atomically: a reader sees the old file or the new one, never half.

    `refuse_symlink`: raise SymlinkRefused when the target is a symlink (a configuration file that a
    repository could point at someone else's file) instead of replacing the link. Whatever fails, the
    temporary file is removed again.
    """
    if refuse_symlink and target.is_symlink():
        raise SymlinkRefused(f"{target} is a symlink; it must be a regular file (remove the link first)")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = create_new(target.parent, f".{target.name}", mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def private_dir(path: Path, *, narrow: bool = False) -> Path:
    """`path` as a folder only its owner can enter: created 0700 (with any missing parents), and with `narrow`,
    an existing one of ours that others can read is narrowed to 0700. Before, the data dir and its databases were
    created world-readable, so any local user could read every note's text and every logged query."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    if narrow:
        st = path.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, PRIVATE_DIR)
    return path


def private_file(path: Path) -> Path:
    """A database file that only its owner can read, before SQLite opens it: created empty 0600 (exclusively,
    never through a symlink) when missing, narrowed to 0600 when ours and wider. SQLite gives its -wal and -shm
    files the database's permissions; older ones are narrowed here too."""
    try:
        os.close(os.open(path, _NEW_FILE, PRIVATE))
    except FileExistsError:
        pass
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = os.lstat(name)
        except FileNotFoundError:
            continue
        if st.st_uid == os.getuid() and st.st_mode & 0o077 and not os.path.islink(name):
            os.chmod(name, PRIVATE)
    return path
