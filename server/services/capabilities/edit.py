"""Edit and archive existing notes, safely: the caller names the note's hash as it last read it, and the write
is refused (a conflict) if the note changed since, so an agent never overwrites what a person or another agent
wrote meanwhile without having seen it.

- `edit`: append, prepend, replace the body of a section found by its heading, or replace one exact run of
  text. Only the body changes: the frontmatter (and a BOM) is carried over byte for byte, line endings stay
  those of the file, and an edit that would change what the frontmatter says (text starting with `---` put at
  the top of a note without one) is refused. The file is replaced atomically through indexer/safe_write.py
  and re-indexed before the call returns, as a learning is.
- `archive`: the note leaves the index and moves to `.archive/<its path>` under the root, never deleted. The
  folder is hidden, so the indexer's own rules (indexer/notes/discover.py) keep it out of the index and out of
  every reader (search, read, /api/file) with no configuration; `git` still tracks it.

Paths are checked as readers check them (server/services/capabilities/files.py: inside the root, markdown, not hidden,
not excluded), and a note named through a symlink is refused: Oracle rewrites and moves only the files it names.
The text operations are pure functions (`apply_edit`), tested on their own.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from oracle_indexer.notes.discover import is_within
from oracle_indexer.notes.parse import CHUNK_ID_RE
from oracle_indexer.safe_write import ChangedMeanwhile, replace_unchanged
from oracle_server.services.capabilities.files import MAX_READ_BYTES, FileNotInRoot, PathRefused, read_bytes, safe_path
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import WRITE_ERRNO_KIND, OracleError
from oracle_server.services.vocabulary.models import ArchiveRequest, ArchiveResult, EditRequest, EditResult

ARCHIVE_FOLDER = ".archive"
MAX_SUFFIX = 1000
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class EditRefused(ValueError):
    """The edit cannot be applied to this text (heading or text not found, or found more than once); the
    message says what to send instead."""


# -- pure text operations -------------------------------------------------------------------------------
def newline_of(text: str) -> str:
    """The file's line ending, judged by its first line ("\\n" for a one-line file)."""
    end = text.find("\n")
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def split_head(text: str) -> tuple[str, str]:
    """(head, body): the head is a BOM and the frontmatter block, through the newline after its closing `---`
    (or `...`), exactly as in the file; the body is the rest. A note without frontmatter has an empty head
    (a BOM aside). A frontmatter block that is never closed is refused: where its body starts is a guess."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    rest = text[len(bom):]
    lines = rest.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return bom, rest
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() in ("---", "..."):
            cut = sum(len(line) for line in lines[: i + 1])
            return bom + rest[:cut], rest[cut:]
    raise EditRefused("the frontmatter opened with --- is never closed; fix the file by hand first")


def _as_file_lines(value: str, newline: str) -> str:
    """Text from a caller (any line endings) in the file's line endings."""
    plain = value.replace("\r\n", "\n").replace("\r", "\n")
    return plain.replace("\n", newline) if newline != "\n" else plain


def _block(value: str, newline: str) -> str:
    """Text to insert as a block of its own: no blank lines around it, ending in one newline."""
    inner = _as_file_lines(value, newline).strip("\r\n")
    return inner + newline if inner else ""


def _heading_of(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line (`## Text ##`), else None."""
    match = _HEADING.match(line.rstrip("\r\n"))
    if not match:
        return None
    text = _CLOSING_HASHES.sub("", match[2] or "").strip()
    return len(match[1]), text


def headings(body: str) -> list[tuple[int, int, str]]:
    """(line index, level, text) of every ATX heading of `body`, outside fenced code blocks."""
    out: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(body.splitlines(keepends=True)):
        marker = _FENCE.match(line)
        if marker:
            if fence is None:
                fence = marker[1][0] * 3
            elif marker[1].startswith(fence):
                fence = None
            continue
        if fence is None:
            found = _heading_of(line)
            if found:
                out.append((i, *found))
    return out


def _append(body: str, new: str, newline: str) -> str:
    kept = body.rstrip("\r\n")
    return (kept + newline + newline if kept.strip() else "") + _block(new, newline)


def _prepend(body: str, new: str, newline: str) -> str:
    """After the note's `# title` line when its body starts with one, else at the very top of the body."""
    lines = body.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    title = first is not None and (_heading_of(lines[first]) or (0, ""))[0] == 1
    cut = first + 1 if title and first is not None else 0
    before = "".join(lines[:cut])
    after = "".join(lines[cut:]).lstrip("\r\n")
    if before and not before.endswith("\n"):
        before += newline
    out = (before + newline if before else "") + _block(new, newline)
    return out + (newline + after if after else "")


def _replace_section(body: str, heading: str, new: str, newline: str) -> str:
    """The lines under the heading, up to the next heading of the same or a higher level, become `new`."""
    wanted = heading.strip().lstrip("#").strip()
    found = headings(body)
    matches = [(i, level) for i, level, text in found if text == wanted]
    if not matches:
        named = "; ".join(text for _, _, text in found[:30]) or "none"
        raise EditRefused(f"replace_section: no heading reads {wanted!r} (headings: {named}); give one of these,"
                          " without the #s")
    if len(matches) > 1:
        raise EditRefused(f"replace_section: {len(matches)} headings read {wanted!r}; use replace_text with text"
                          " that occurs once")
    start, level = matches[0]
    lines = body.splitlines(keepends=True)
    end = next((i for i, lv, _ in found if i > start and lv <= level), len(lines))
    head = lines[start] if lines[start].endswith("\n") else lines[start] + newline
    content = _block(new, newline)
    middle = (newline + content if content else "") + (newline if end < len(lines) else "")
    return "".join(lines[:start]) + head + middle + "".join(lines[end:])


def _replace_text(body: str, find: str, new: str, newline: str, head: str) -> str:
    needle = _as_file_lines(find, newline)
    count = body.count(needle)
    if count == 0:
        where = " (it is in the frontmatter, which edits never change)" if needle in head else ""
        raise EditRefused(f"replace_text: the text to find does not occur in the note's body{where}; read the"
                          " note again and copy the text exactly")
    if count > 1:
        raise EditRefused(f"replace_text: the text to find occurs {count} times; include more of the text around"
                          " it so that it occurs once")
    return body.replace(needle, _as_file_lines(new, newline), 1)


def apply_edit(text: str, op: str, new: str, heading: str | None = None, find: str | None = None) -> str:
    """`text` (a note as decoded from disk) with one edit applied to its body; the head (BOM and frontmatter)
    is carried over unchanged, and an edit that would make the result's frontmatter differ is refused."""
    head, body = split_head(text)
    newline = newline_of(text)
    if op == "append":
        out = _append(body, new, newline)
    elif op == "prepend":
        out = _prepend(body, new, newline)
    elif op == "replace_section":
        out = _replace_section(body, heading or "", new, newline)
    elif op == "replace_text":
        out = _replace_text(body, find or "", new, newline, head)
    else:
        raise EditRefused(f"unknown op {op!r}; use append, prepend, replace_section or replace_text")
    result = head + out
    if split_head(result)[0] != head:
        raise EditRefused(f"{op}: the new text would change the note's frontmatter (text starting with ---"
                          " at the top of the note); edits keep the frontmatter as it is")
    return result


# -- the services -----------------------------------------------------------------------------------------
def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class _Note:
    rel: str
    path: Path


def note_target(oracle: Oracle, file: str | None, chunk_id: str | None, what: str) -> _Note:
    """The indexed note a request names, as a regular file inside the root reached without a symlink."""
    if chunk_id is not None:
        section = oracle.store.sections_by_id([chunk_id]).get(chunk_id)
        if section is None:
            raise OracleError("not_found", f"{what}: no indexed chunk has id {chunk_id!r}; use an id from a hit,"
                              " or the note's path as file")
        raw = section.file
    else:
        assert file is not None
        raw = file
    root = oracle.settings.root.resolve()
    try:
        rel, _ = safe_path(root, raw, oracle.settings.layout)
    except PathRefused as exc:
        raise OracleError("invalid", f"{what}: {exc}") from None
    named = unicodedata.normalize("NFC", PurePosixPath(raw.replace("\\", "/")).as_posix())
    path = root / rel
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise OracleError("not_found", f"{what}: no note at {rel!r}") from None
    if named != rel or not stat.S_ISREG(mode):
        raise OracleError("invalid", f"{what}: {named!r} is a symlink or leads through one; {what} changes only"
                          " a note's own file: name the file itself")
    if oracle.store.note(rel) is None:
        raise OracleError("not_found", f"{what}: {rel!r} is not an indexed note (new files are indexed within"
                          " seconds by a running server, or by `oracle index`)")
    return _Note(rel, path)


def _read(oracle: Oracle, note: _Note) -> bytes:
    try:
        return read_bytes(oracle.settings.root, note.rel, oracle.settings.layout)[1]
    except (PathRefused, FileNotInRoot) as exc:
        raise OracleError("not_found" if isinstance(exc, FileNotInRoot) else "invalid", str(exc)) from None


def check_hash(rel: str, data: bytes, expected: str) -> str:
    """The note's current hash; a conflict when it is not the one the caller read."""
    current = file_digest(data)
    if not current.startswith(expected.lower()):
        raise OracleError("conflict", f"conflict: {rel} changed since you read it (expected_hash {expected[:12]}…,"
                          f" it is now {current[:12]}…); nothing was written: read it again (oracle_read) and"
                          " redo the change on the current text")
    return current


def expect_unchanged(oracle: Oracle, ref: str, expected: str, what: str) -> str:
    """The path of the indexed note `ref` (a path or a chunk id) names, if it is still the version whose hash
    the caller read; a conflict otherwise. For a learn that revises a note (server/services/capabilities/learn.py)."""
    chunk = ref.strip() if CHUNK_ID_RE.fullmatch(ref.strip()) else None
    note = note_target(oracle, None if chunk else ref, chunk, what)
    check_hash(note.rel, _read(oracle, note), expected)
    return note.rel


def edit(oracle: Oracle, request: EditRequest, client: str = "cli", author: str | None = None) -> EditResult:
    """Apply one edit to a note's body if the note is still what the caller read; indexed before returning."""
    note = note_target(oracle, request.file, request.id, "edit")
    with oracle.indexer.lock:  # one writer across processes: the check and the write see the same file
        data = _read(oracle, note)
        previous = check_hash(note.rel, data, request.expected_hash)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise OracleError("invalid", f"edit: {note.rel} is not UTF-8 text; edit it by hand") from None
        try:
            new = apply_edit(text, request.op, request.text, request.heading, request.find).encode("utf-8")
        except EditRefused as exc:
            raise OracleError("invalid", f"edit: {note.rel}: {exc}; nothing was written") from None
        if len(new) > MAX_READ_BYTES:
            raise OracleError("invalid", f"edit: {note.rel} would be larger than {MAX_READ_BYTES // 1_048_576} MB")
        warnings: list[str] = []
        if new == data:
            warnings.append("the edit changes nothing; nothing was written")
        else:
            try:
                mode = note.path.stat().st_mode & 0o777  # the note keeps its permissions
                # the hash check and the write in one step: a save that lands after the check is never lost
                replace_unchanged(note.path, new, data, mode)
            except ChangedMeanwhile as exc:
                raise OracleError("conflict", f"conflict: {note.rel} was saved by someone else while this edit was"
                                  f" being made ({exc}); nothing of the edit was written: read it again"
                                  " (oracle_read) and redo the change on the current text") from None
            except OSError as exc:
                raise _write_failed("edit", note.rel, exc) from None
    current = file_digest(new)
    report = oracle.indexer.sync_paths([note.rel], embed_limit=None, author=author)
    warnings += report.warnings
    chunk_ids = oracle.store.file_chunk_ids(note.rel)
    if not chunk_ids:
        warnings.append(f"{note.rel} has no indexed sections after the edit: "
                        f"{report.skipped.get(note.rel) or 'it holds no text'}")
    if new != data:
        try:
            oracle.logs.log_edit(client, author, f"edit:{request.op}", note.rel, previous, current)
        except Exception as exc:  # noqa: BLE001 - a record of the edit, not the edit itself
            warnings.append(f"the edit log could not be written ({type(exc).__name__}); the edit is saved")
    return EditResult(source_file=note.rel, op=request.op, previous_hash=previous, file_hash=current,
                      chunk_ids=chunk_ids, author=author, warnings=warnings)


def _write_failed(what: str, rel: str, exc: OSError) -> OracleError:
    """A failed write as the kind a caller can act on (a full disk is out of storage, a read-only file system
    unavailable); the file is as it was (write_atomic and link leave nothing half done)."""
    reason = exc.strerror or str(exc)
    return OracleError(WRITE_ERRNO_KIND.get(exc.errno or 0, "unavailable"),
                       f"{what}: could not write {rel} ({reason}); nothing was changed")


def _archive_folder(root: Path) -> Path:
    """`<root>/.archive`, made if missing; never a symlink (a planted link must not carry notes elsewhere)."""
    folder = root / ARCHIVE_FOLDER
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise OracleError("invalid", f"archive: {ARCHIVE_FOLDER} under the root is a symlink or a file; make it a"
                          " folder")
    return folder


def _archive_name(root: Path, rel: str) -> Path:
    """Where `rel` goes: `.archive/<rel>`, or `<stem>_2.md`, ... when that name is taken (never replaced)."""
    folder = _archive_folder(root)
    dest = folder / rel
    # One folder at a time, each checked before anything is made inside it: a link planted on the way
    # (`.archive/learnings` -> elsewhere) is refused before a folder is made under its target.
    current = folder
    for part in ("", *Path(rel).parent.parts):
        current = current / part if part else current
        try:
            current.mkdir()
        except FileExistsError:
            pass
        except OSError as exc:  # a full disk, a read-only root
            raise _write_failed("archive", f"{ARCHIVE_FOLDER}/{rel}", exc) from None
        if current.is_symlink() or not current.is_dir():
            raise OracleError("invalid", f"archive: {current.relative_to(root).as_posix()} is a symlink or a file,"
                              f" not a folder of {ARCHIVE_FOLDER}/; remove it (nothing was archived)")
    if not is_within(dest.parent.resolve(), folder.resolve()):
        raise OracleError("invalid", f"archive: a folder under {ARCHIVE_FOLDER}/ is a symlink out of it; remove it")
    return dest


def archive(oracle: Oracle, request: ArchiveRequest, client: str = "cli", author: str | None = None) -> ArchiveResult:
    """Move a note that is still what the caller read into `.archive/` (out of the index, kept on disk).

    The file is hard-linked to its archive name (which fails rather than replace anything), checked to be
    the very file whose hash was checked, and only then unlinked from the knowledge base; a file swapped
    in meanwhile is left where it is, and the caller gets a conflict."""
    note = note_target(oracle, request.file, request.id, "archive")
    root = oracle.settings.root.resolve()
    removed = len(oracle.store.file_chunk_ids(note.rel))
    with oracle.indexer.lock:
        data = _read(oracle, note)
        digest = check_hash(note.rel, data, request.expected_hash)
        inode = os.lstat(note.path).st_ino
        base = _archive_name(root, note.rel)
        dest: Path | None = None
        for n in range(1, MAX_SUFFIX):
            candidate = base if n == 1 else base.with_name(f"{base.stem}_{n}{base.suffix}")
            try:
                os.link(note.path, candidate, follow_symlinks=False)
            except FileExistsError:
                continue
            except OSError as exc:
                if exc.errno == errno.EXDEV:
                    raise OracleError("unavailable", f"archive: {ARCHIVE_FOLDER}/ is on another file system than"
                                      f" {note.rel}; nothing was moved") from None
                raise _write_failed("archive", note.rel, exc) from None
            dest = candidate
            break
        if dest is None:
            raise OracleError("conflict", f"archive: more than {MAX_SUFFIX} archived notes named {base.name}")
        if os.lstat(dest).st_ino != inode or file_digest(dest.read_bytes()) != digest \
                or os.lstat(note.path).st_ino != inode:
            dest.unlink()
            raise OracleError("conflict", f"conflict: {note.rel} changed while it was being archived; nothing was"
                              " moved: read it again (oracle_read) and retry")
        note.path.unlink()
    archived = dest.relative_to(root).as_posix()
    oracle.indexer.sync_paths([note.rel], embed_limit=None, author=author)
    warnings: list[str] = []
    try:
        oracle.logs.log_edit(client, author, "archive", note.rel, digest, None, moved_to=archived,
                             reason=request.reason)
    except Exception as exc:  # noqa: BLE001 - a record of the archive, not the archive itself
        warnings.append(f"the edit log could not be written ({type(exc).__name__}); the note is archived")
    return ArchiveResult(source_file=note.rel, archived_to=archived, file_hash=digest, removed_chunks=removed,
                         author=author, reason=request.reason, warnings=warnings)
