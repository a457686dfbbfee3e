"""Find the markdown files under the knowledge root and give each its document type.

Which files are notes, and of which type, is the root's `Layout` (indexer/rootconfig.py: built-in folder
names, oracle.toml, ORACLE_FOLDER_TYPES): the most specific mapped folder on the path wins, so both
`knowledge/learnings/x.md` and Oracle v2's `ψ/memory/learnings/x.md` are learnings, and files in no mapped
folder take the layout's default type. Files that still have no type are counted by top-level folder and
reported, never silently dropped; files the rules exclude are counted too. Excluded folders (dot-folders,
node_modules, exclude globs, the root's .gitignore) are not walked at all.

A file symlink whose target is a note indexed under its own name is the same note, not a second one: it
is recorded as an alias (`README.md -> index.md`) and not indexed. A symlink to a file that is not indexed
under its real name (outside every mapped folder, say) is indexed once, under the first link's name.

Nothing outside the root is ever read. Folder symlinks are not followed (files under a symlinked folder
are indexed only where they really live, if that is inside the root; one that points outside is
reported as skipped). A file symlink is indexed when its target is a regular file inside the root; one
that leads outside, loops or dangles is skipped with that reason, as is anything that is not a regular
file (a FIFO named x.md would block a reader forever, a device could have side effects on open, a folder
named x.md is walked as a folder but reported, since its name says it should be a note). A symlink is
judged by where it leads as well as by its name (`target_refused`): the rules that keep `.git/`, `.env`,
excluded, gitignored and `node_modules` files out of the index apply to the target too, so a committed
`learnings/x.md -> ../.git/config` or `-> ../.env` cannot put a teammate's own secrets into search. `read_inside`
repeats these checks at read time and opens the file one name at a time from the root without following
symlinks, so one swapped in after the checks leads nowhere either. A hard link is not a path: it is the
same file under a second name in the root, indistinguishable from any other file there, so it is indexed
(making one to a file you do not own is refused by Linux's fs.protected_hardlinks).
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from oracle_indexer.rootconfig import Layout

MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class Found:
    rel: str  # POSIX path relative to the root, NFC-normalised
    path: Path
    type: str


@dataclass
class Discovery:
    files: list[Found] = field(default_factory=list)
    unmapped: Counter = field(default_factory=Counter)  # top-level folder ("." = root files) -> files with no type
    skipped: dict[str, str] = field(default_factory=dict)  # markdown names that are not indexable files: why
    aliases: dict[str, str] = field(default_factory=dict)  # symlink -> the note it points at (indexed there)
    excluded: Counter = field(default_factory=Counter)  # rule ("exclude", ".gitignore", "include") -> files
    warnings: list[str] = field(default_factory=list)  # configuration that matched nothing
    collisions: list[str] = field(default_factory=list)  # names that two files spell in different normal forms


class Unreadable(Exception):
    """This path must not (or cannot) be read as a knowledge file; the message is the reason."""


class TooLarge(Unreadable):
    """The file is larger than the reader's limit."""


_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


# How `_open_beneath` opens: never through a symlink, never blocking on a FIFO.
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC


def is_ignored_name(name: str) -> bool:
    """Dotfiles and editor temporaries (vim swap, emacs autosave/backup, JetBrains ___jb_)."""
    return (
        name.startswith((".", "#", "~"))
        or name.endswith(("~", ".swp", ".swx", ".tmp", "___jb_tmp___", "___jb_old___"))
    )


def as_layout(rules: Layout | dict[str, str]) -> Layout:
    return rules if isinstance(rules, Layout) else Layout.from_folder_types(rules)


def type_for(rel: str, rules: Layout | dict[str, str]) -> str | None:
    """The type a note at `rel` would have by folder (most specific wins, then the default type)."""
    return as_layout(rules).type_for(rel)


def top_folder(rel: str) -> str:
    """Where the "not indexed" report counts a file: its top-level folder, "." for a file in the root."""
    return rel.split("/", 1)[0] if "/" in rel else "."


def target_refused(target: str, rules: Layout | dict[str, str]) -> str | None:
    """Why a symlink may not lead to `target` (relative to the root), or None when it may.

    A link's name says nothing about what it reads: the discovery rules are applied to where it leads, so
    a note name cannot smuggle in a file the walk itself would never index (a dot-file, a file in a
    dot-folder, `node_modules`, an exclude glob, the root's .gitignore, anything that is not markdown).
    """
    if any(is_ignored_name(part) for part in target.split("/")):
        return ("symlink target is a hidden file or in a hidden folder (names starting with '.', '#' or '~'):"
                " not indexed")
    if not target.lower().endswith(MARKDOWN_SUFFIXES):
        return "symlink target is not a markdown file: not indexed"
    rule = as_layout(rules).excluded_file(target)
    if rule:
        return f"symlink target is left out by the rules ({rule}): not indexed"
    return None


def note_type(root: Path, rel: str, rules: Layout | dict[str, str]) -> str | None:
    """The type of the note at `rel`, or None when it is no note: unmapped, excluded by the rules, or a
    symlink to a file that is indexed under its own name (the watcher and `sync_paths` ask this). A symlink
    whose target the rules refuse still has a type here: `unindexable` then says why it is skipped."""
    layout = as_layout(rules)
    if layout.excluded_file(rel) or any(is_ignored_name(p) for p in rel.split("/")):
        return None
    doc_type = layout.type_for(rel)
    if doc_type is None:
        return None
    root = root.resolve()
    path = on_disk(root, rel)
    if path.is_symlink():
        real, _ = _examine(path, root, layout)
        if real is not None and not real.is_symlink():
            target = relative_name(real, root)
            if target != rel and layout.excluded_file(target) is None and layout.type_for(target) is not None:
                return None
    return doc_type


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

    File names created on macOS are often decomposed (NFD); the index and the watcher speak NFC. Only
    folders inside the root are listed (see `_names_inside`): a symlinked folder that leads out is never read.
    """
    path = root / rel
    if os.path.lexists(path):
        return path
    root = root.resolve()
    current = root
    parts = rel.split("/")
    for i, part in enumerate(parts):
        candidate = current / part
        if not os.path.lexists(candidate):
            match = next((n for n in _names_inside(current, root) if unicodedata.normalize("NFC", n) == part), None)
            if match is None:
                return current.joinpath(*parts[i:])  # nothing further down can exist
            candidate = current / match
        current = candidate
    return current


def _names_inside(folder: Path, root: Path) -> list[str]:
    """The names in `folder` if it really is a folder inside the (resolved) root, else none; listed through
    `_open_beneath`, so a symlink swapped in after the check is not followed out of the root."""
    try:
        real = folder.resolve(strict=True)
        if not _inside(real, root):
            return []
        fd = _open_beneath(root, real, _DIR_FLAGS)
    except (OSError, RuntimeError, ValueError):
        return []
    try:
        return sorted(os.listdir(fd))
    finally:
        os.close(fd)


def too_large(size: int, max_bytes: int) -> str:
    return f"file too large ({size / 1_048_576:.1f} MB > {max_bytes / 1_048_576:.1f} MB limit, ORACLE_MAX_FILE_BYTES)"


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return f"not a regular file ({_KINDS.get(stat.S_IFMT(mode), 'special file')})"


OUTSIDE = "symlink points outside the knowledge root"
TWINS = ("{n} files are named {rel} in different Unicode normal forms (NFC/NFD, e.g. one saved on macOS): neither"
         " is indexed or served, since the index names notes in NFC; rename or remove all but one")


def normal_form_twins(path: Path, root: Path) -> int:
    """How many names in `path`'s folder spell its name in some Unicode normal form (1: no twin).

    The index speaks NFC, so `café.md` saved twice (NFC and NFD) is one name for two files: indexing
    either would swap the other's content under that name on every run. Lists the folder once, and only
    when it really is inside the (resolved) root."""
    want = unicodedata.normalize("NFC", path.name)
    names = _names_inside(path.parent, root)  # opened one name at a time: a symlink swapped in leads nowhere
    # An ASCII name is its own normal form: only the others need normalising (a folder of 10k names: ~1 ms).
    return max(1, sum(1 for n in names if n == want or (not n.isascii() and unicodedata.normalize("NFC", n) == want)))


def _inside(real: Path, root: Path) -> bool:
    """Is an already resolved path the root or under it?"""
    return real == root or root in real.parents


# Over complexity 10 on purpose: the refusals a path can meet (stat, link, root, kind, twins, rules), in the order
# checked.
def _examine(path: Path, root: Path, layout: Layout | dict[str, str],  # noqa: C901
             twins: bool = True) -> tuple[Path | None, str | None]:
    """(real path, None) for a regular file inside the (resolved) root, (None, why not) for anything else,
    (None, None) when there is nothing there at all.

    The whole path is resolved, not only a last symlink: a name reached through a symlinked folder (from
    the watcher or a caller, never from `discover`, which does not follow them) must lead inside too, and
    to a file the rules would index under its own name (`target_refused`). `twins`: refuse a name another
    file in its folder spells in another normal form (`discover` finds those for the whole walk at once).
    """
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None, None  # gone: the caller treats it as vanished
    except OSError as exc:
        return None, f"cannot stat: {exc.strerror or exc}"
    link = stat.S_ISLNK(mode)
    try:
        real = path.resolve(strict=True)
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return None, ("broken symlink (its target does not exist)" if link else None)
    except RuntimeError:  # Python < 3.13 reports a loop so
        return None, "symlink loop"
    except OSError as exc:
        return None, "symlink loop" if exc.errno == errno.ELOOP else f"cannot resolve: {exc.strerror or exc}"
    if not _inside(real, root):
        return None, OUTSIDE if link else "outside the knowledge root (reached through a symlinked folder)"
    reason = _not_regular(mode)
    if reason:
        return None, reason
    if twins:  # listed only now, and only a folder inside the root: nothing outside is ever opened
        count = normal_form_twins(path, root)
        if count > 1:
            return None, TWINS.format(n=count, rel=relative_name(path.absolute(), root))
    if real != path.absolute():  # reached through a symlink: judge where it leads, not only its name
        reason = target_refused(relative_name(real, root), layout)
    return (None, reason) if reason else (real, None)


def unindexable(path: Path, root: Path, layout: Layout | dict[str, str]) -> str | None:
    """Why `path` is not a regular file inside the (resolved) root that the rules admit, or None (also when
    it is simply gone)."""
    return _examine(path, root, layout)[1]


def _open_beneath(root: Path, real: Path, flags: int) -> int:
    """Open `real` (resolved, inside the root) one name at a time from the root, following no symlink.

    `real` has no symlinks in it, so meeting one on the way means one was swapped in after the path was
    resolved; the open then fails (ELOOP, or ENOTDIR for a folder) instead of leaving the root. Nothing
    outside the root is ever opened, not even to be refused.
    """
    fd = os.open(root, _DIR_FLAGS)
    parts = real.relative_to(root).parts
    for n, part in enumerate(parts):
        try:
            child = os.open(part, flags if n == len(parts) - 1 else _DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


def read_inside(path: Path, root: Path, max_bytes: int, layout: Layout | dict[str, str], twins: bool = True) -> bytes:
    """The bytes of a regular file that really is inside the (resolved) root, and that a symlink (if `path`
    is one) may lead to under the rules; anything else is Unreadable.

    OSError (FileNotFoundError above all) still means the file is missing or failed to read. The file
    is opened without blocking (a FIFO swapped in cannot hang the reader) and checked again through the
    open descriptor. The rules are checked here, at read time, as well as at discovery: a link retargeted
    at `.env` between the walk and the read is refused too. `twins=False` when the caller has already
    ruled out normal-form twins (the sync, after `discover` or `unindexable`).
    """
    real, reason = _examine(path, root, layout, twins)
    if reason:
        raise Unreadable(reason)
    if real is None:
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
    try:
        fd = _open_beneath(root, real, _FILE_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Unreadable("the path changed while it was read (a symlink swapped in)") from None
        raise
    try:
        st = os.fstat(fd)
        reason = _not_regular(st.st_mode)
        if reason:
            raise Unreadable(reason)
        if st.st_size > max_bytes:
            raise TooLarge(too_large(st.st_size, max_bytes))
        data = read_capped(fd, max_bytes)
        if data is None:
            raise TooLarge(too_large(max_bytes + 1, max_bytes))
        return data
    finally:
        os.close(fd)


def read_capped(fd: int, max_bytes: int) -> bytes | None:
    """The bytes of an open file, or None when it holds more than `max_bytes` (one that grows while it is read is
    cut there): never more than `max_bytes` + 1 in memory."""
    chunks: list[bytes] = []
    left = max_bytes + 1
    while left > 0:
        block = os.read(fd, min(left, 1 << 20))
        if not block:
            break
        chunks.append(block)
        left -= len(block)
    return None if left <= 0 else b"".join(chunks)


def discover(root: Path, rules: Layout | dict[str, str]) -> Discovery:
    """Walk the root (not following directory symlinks, not entering excluded folders) and classify every
    markdown file."""
    layout = as_layout(rules)
    result = Discovery()
    root = root.resolve()
    folders: set[str] = set()
    links: list[tuple[str, Path, str | None, str]] = []  # (rel, path, type, target rel)
    walked: set[str] = set()  # markdown files seen under their real name
    spelled: Counter = Counter()  # NFC name -> files on disk with that name in some normal form
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = "" if dirpath == str(root) else relative_name(Path(dirpath), root)
        dirnames[:] = _kept_folders(dirnames, here, layout)  # os.walk descends into these only
        _folder_entries(Path(dirpath), dirnames, root, layout, folders, result)
        for name in sorted(filenames):
            if is_ignored_name(name) or not name.lower().endswith(MARKDOWN_SUFFIXES):
                continue
            path = Path(dirpath) / name
            rel = relative_name(path, root)
            rule = layout.excluded_file(rel)
            if rule:
                result.excluded[rule] += 1
                continue
            spelled[rel] += 1
            real, reason = _examine(path, root, layout, twins=False)
            if reason:
                result.skipped[rel] = reason
                continue
            doc_type = layout.type_for(rel)
            if real is not None and path.is_symlink():
                links.append((rel, path, doc_type, relative_name(real, root)))
                continue
            walked.add(rel)
            if doc_type is None:
                result.unmapped[top_folder(rel)] += 1
                continue
            result.files.append(Found(rel=rel, path=path, type=doc_type))
    _resolve_links(result, links, walked)
    _drop_twins(result, spelled)
    result.files.sort(key=lambda f: f.rel)
    result.warnings = layout.unmatched(folders)
    return result


def _kept_folders(dirnames: list[str], here: str, layout: Layout) -> list[str]:
    """The folders of `here` the walk enters, sorted: not hidden, not excluded by oracle.toml. Pruned before
    os.walk descends, so an excluded tree (node_modules, a vendored site) costs nothing."""
    kept = []
    for d in sorted(dirnames):
        rel_d = f"{here}/{d}" if here else unicodedata.normalize("NFC", d)
        if is_ignored_name(d) or layout.excluded_dir(rel_d):
            continue
        kept.append(d)
    return kept


def _folder_entries(dirpath: Path, dirnames: list[str], root: Path, layout: Layout, folders: set[str],
                    result: Discovery) -> None:
    """The folders of one directory: real ones noted in `folders` (for oracle.toml's unmatched keys), symlinks
    and folders named like markdown files reported as skipped with the reason. os.walk lists symlinks to folders
    among the folders and never descends into them, so they are seen here or not at all."""
    for name in dirnames:
        path = dirpath / name
        if not path.is_symlink():
            folders.add(relative_name(path, root))
        named_md = name.lower().endswith(MARKDOWN_SUFFIXES)
        if not named_md and not path.is_symlink():
            continue
        reason = unindexable(path, root, layout)
        if reason == OUTSIDE:
            result.skipped[relative_name(path, root)] = ("folder symlink points outside the knowledge root:"
                                                         " not followed")
        elif named_md and reason:
            result.skipped[relative_name(path, root)] = reason


def _resolve_links(result: Discovery, links: list[tuple[str, Path, str | None, str]], walked: set[str]) -> None:
    """File symlinks inside the root, once every real file is known: a link to a file indexed already is an
    alias of it; otherwise, in walk order, the first link to a file is indexed under the link's name (its type
    from the link's folder), so each file is indexed once whichever way it is reached."""
    indexed_as = {f.rel: f.rel for f in result.files}  # real file -> the name it is indexed under
    for rel, path, doc_type, target in links:  # in walk order: the first link to an unindexed target keeps it
        if target in indexed_as:
            result.aliases[rel] = indexed_as[target]
        elif doc_type is None:
            if target not in walked:  # else already counted under its real name
                result.unmapped[top_folder(rel)] += 1
                walked.add(target)
        else:
            result.files.append(Found(rel=rel, path=path, type=doc_type))
            indexed_as[target] = rel


def _drop_twins(result: Discovery, spelled: Counter) -> None:
    """Files whose names differ only in normal form share one NFC name: none of them is indexed, each such
    name is reported as skipped with the reason, and listed as a collision (stats drift shows them)."""
    twins = {rel: n for rel, n in spelled.items() if n > 1}
    if not twins:
        return
    result.files = [f for f in result.files if f.rel not in twins]
    result.aliases = {k: v for k, v in result.aliases.items() if k not in twins and v not in twins}
    for rel, n in twins.items():
        result.skipped[rel] = TWINS.format(n=n, rel=rel)
    result.collisions = sorted(twins)
