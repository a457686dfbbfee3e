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


class ChangedMeanwhile(Exception):
    """`replace_unchanged`: the target no longer held the text the caller checked; it was left as it is."""


_RENAME_EXCHANGE = 2  # renameat2(2)
_AT_FDCWD = -100


_renameat2: list = []  # the C function once looked up ([None] where the C library has none)


def _exchange(a: Path, b: Path) -> bool:
    """Swap the files at `a` and `b` in one step (Linux renameat2 RENAME_EXCHANGE); False when this system or
    file system cannot, and nothing was done."""
    import ctypes
    import errno

    if not _renameat2:
        try:
            _renameat2.append(ctypes.CDLL(None, use_errno=True).renameat2)
        except (OSError, AttributeError):
            _renameat2.append(None)
    renameat2 = _renameat2[0]
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


MAX_GIVE_BACK = 32  # rounds of putting others' saves back before the newest is kept aside (never reached in practice)


def replace_unchanged(target: Path, data: bytes, expected: bytes, mode: int | None = None) -> None:
    """Replace `target` with `data` only if it still holds `expected`, the check and the write one step: no
    save that lands between a caller's check and its write is overwritten (issue 39: 1 of 75 edits that
    returned 200 had overwritten a person's save made meanwhile).

    `data` is written (and synced) to a new temporary file beside the target. The target is read once more,
    and then the two files are *exchanged* in one atomic step (renameat2 RENAME_EXCHANGE), so the file that
    comes out is exactly what the target held at that instant. If that is not `expected` (a save landed in
    the microseconds since the read), the saves are given back: exchanged in again until what comes out is
    the file put in before, so the note ends as the newest save anyone made, and ours is discarded
    (ChangedMeanwhile). Nothing anyone saved is deleted: should saves keep landing for MAX_GIVE_BACK rounds,
    the one in hand is kept beside the note as a hidden `.kept-` file the message names. Where the system
    cannot exchange files, the read is followed by a plain rename (a window of microseconds instead of the
    whole edit). `mode`: the new file's permission bits (the note's own); a symlink target is refused."""
    if target.is_symlink():
        raise SymlinkRefused(f"{target} is a symlink; it must be a regular file (remove the link first)")
    fd, tmp = create_new(target.parent, f".{target.name}", SHARED)
    changed = ChangedMeanwhile(f"{target.name} changed before it could be replaced; it was left as it is")
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # checked again now that ours is ready: a save made while it was written is refused before ours is
        # ever seen; the exchange settles the microseconds between this read and the swap
        placed = (os.lstat(tmp).st_ino, data)
        if target.is_symlink() or target.read_bytes() != expected:
            raise changed
        if not _exchange(tmp, target):
            os.replace(tmp, target)
            return
        if tmp.read_bytes() == expected:  # what the target held when ours took its place: the checked text
            return
        for _ in range(MAX_GIVE_BACK):  # a save landed just before the swap: give it back
            before = placed
            placed = (os.lstat(tmp).st_ino, tmp.read_bytes())
            _exchange(tmp, target)
            if (os.lstat(tmp).st_ino, tmp.read_bytes()) == before:
                raise changed  # out came what we had put there: the note is the newest save again
            # a newer save had replaced what we put there: it goes back in next, the older one is let go
        kept = tmp.with_name(f".{target.name}.kept-{token_hex(4)}")
        os.replace(tmp, kept)
        raise ChangedMeanwhile(f"{target.name} was saved again and again while it was being replaced; the note"
                               f" holds one of those saves and the one in hand is kept beside it as {kept.name}")
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


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
