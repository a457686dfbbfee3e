"""Learn: write a new learning as a markdown file and index it before returning.

The file is the record; the index follows from it through the same indexer as every other file, so a
learning gets the same chunk ids whether it was written here or saved by hand. Writes are atomic and
never overwrite: the text goes to a hidden temporary file that is hard-linked to its final name, and
a name that is taken gets a numeric suffix.

A learning may revise a note the caller read (`revises` + `expected_hash`): if that note changed since, nothing
is saved and the caller gets a conflict; otherwise the new learning supersedes it
(server/services/capabilities/supersede.py).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import hashlib
import os
import re
import unicodedata
from pathlib import Path

import yaml

from oracle_indexer.locks import WriterLockBusy
from oracle_indexer.notes.discover import is_within
from oracle_indexer.notes.parse import bare_title, parse_markdown, split_frontmatter
from oracle_indexer.safe_write import SHARED, create_new
from oracle_server.services.capabilities.edit import expect_unchanged
from oracle_server.services.capabilities.files import read_bytes
from oracle_server.services.capabilities.search.pipeline import run_search
from oracle_server.services.capabilities.supersede import supersede
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import ServiceError
from oracle_server.services.vocabulary.models import (
    LearnRequest,
    LearnResult,
    NearDuplicate,
    SearchRequest,
    SupersedeRequest,
)

SLUG_MAX = 60
SLUG_MAX_BYTES = 180  # 60 three-byte letters (Thai, CJK); four-byte letters get fewer: names stay < 255 bytes
DUPLICATE_SIMILARITY = 0.85
MAX_SUFFIX = 1000
YAML_WIDTH = 1_000_000  # wider than any value a LearnRequest allows: one line per field
WRITE_ATTEMPTS = 3  # the learnings folder renamed away mid-write is made again and the write retried
KEY_FIELD = "idempotency_key"  # frontmatter of a learning saved with a key


class LearnError(ServiceError, RuntimeError):
    """The learning could not be written; nothing was left behind (invalid, or the disk's kind when a refused
    write caused it)."""


class LearnLost(LearnError):
    """The learning was written, but the file was moved, deleted or changed by someone else before it was
    indexed: no note under its name is indexed with the metadata asked for."""

    error_kind = "conflict"


class LearnDuplicate(LearnError):
    """An existing learning already says the same text: nothing was saved (allow_duplicate=true saves anyway)."""

    error_kind = "conflict"


class LearnKeyConflict(LearnError):
    """The idempotency key belongs to a different learning, or a learn with it is still running."""

    error_kind = "conflict"


def slugify(text: str) -> str:
    """A file-name slug in any script: letters, marks and digits kept, the rest become single hyphens."""
    normal = unicodedata.normalize("NFC", text).casefold()
    out: list[str] = []
    for char in normal:
        if unicodedata.category(char)[0] in "LMN":
            out.append(char)
        elif out and out[-1] != "-":
            out.append("-")
    slug = "".join(out).strip("-")
    if len(slug) > SLUG_MAX or len(slug.encode("utf-8")) > SLUG_MAX_BYTES:
        slug = slug[:SLUG_MAX]
        while len(slug.encode("utf-8")) > SLUG_MAX_BYTES:
            slug = slug[:-1]
        # Do not end on a lone combining mark or a hyphen.
        while slug and (unicodedata.category(slug[-1])[0] == "M" or slug[-1] == "-"):
            slug = slug[:-1]
    return slug or "learning"


def title_for(request: LearnRequest) -> str:
    """The title the note is saved with, as the indexer will read it back: a leading markdown `# ` is not
    part of a title (Oracle v2 wrote `title: # Foo`), and a rule such as `---` is none."""
    title = bare_title(request.title)
    if title:
        return title
    for line in request.pattern.splitlines():
        words = line.strip().lstrip("#>-*0123456789. ").strip()
        if words:
            return words[:80].rstrip()
    return "Learning"


def learnings_folder(oracle: Oracle) -> Path:
    """`learnings/` at the root, or the one folder mapped to learnings (Oracle v2's ψ/memory/learnings).

    The walk tolerates folders that vanish or are renamed while it runs (os.walk skips what it cannot
    list; `rglob` raised FileNotFoundError and the learn failed with a 500)."""
    root = oracle.settings.root
    direct = root / "learnings"
    if direct.is_dir():
        return direct
    names = {name for name, t in oracle.settings.folder_types.items() if t == "learning"}
    found: list[Path] = []
    for current, dirs, _ in os.walk(root, onerror=lambda _: None):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(current) / d for d in dirs if d in names]
    found.sort(key=lambda p: (len(p.parts), str(p)))
    return found[0] if found else direct


def render(request: LearnRequest, title: str, today: dt.date, author: str | None = None) -> str:
    """Frontmatter from a YAML serialiser (never string formatting), then the title and the pattern.
    `author`: the named token that wrote it (team mode), kept in the note itself so the attribution travels
    with the file (a shared git repository), not only in this server's logs."""
    meta: dict[str, object] = {"title": title, "tags": list(request.concepts), "date": today.isoformat()}
    if author:
        meta["author"] = author
    if request.idempotency_key:  # the key travels with the note: a retry after a crash finds it (find_keyed)
        meta[KEY_FIELD] = request.idempotency_key
    if request.project:
        meta["project"] = request.project
    if request.source:
        meta["source"] = request.source
    # Never wrapped: PyYAML folds long values onto indented continuation lines, and a continuation that reads
    # `---` once ended the frontmatter early, silently dropping every field after it.
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, default_flow_style=False,
                           width=YAML_WIDTH).strip()
    if request.relations:  # one `[subject, predicate, object]` per line, as a person would write them
        lines = [
            "- " + yaml.safe_dump([t.subject, t.predicate, t.object], allow_unicode=True, default_flow_style=True,
                                  width=YAML_WIDTH).strip()
            for t in request.relations
        ]
        front += "\nrelations:\n" + "\n".join(lines)
    body = request.pattern.replace("\r\n", "\n").strip("\n")
    return f"---\n{front}\n---\n\n# {title}\n\n{body}\n"


def metadata_problems(text: str, request: LearnRequest, title: str, today: dt.date,
                      author: str | None = None) -> list[str]:
    """The fields a reader of `text` would not get back as given (empty when everything round-trips)."""
    parsed = parse_markdown(text, "learnings/_check.md", "learning")
    meta = parsed.frontmatter
    expected: dict[str, object] = {"title": title, "tags": list(request.concepts), "date": today.isoformat(),
                                   "project": request.project, "source": request.source, "author": author,
                                   KEY_FIELD: request.idempotency_key}
    problems = [key for key, want in expected.items() if _as_read(meta.get(key)) != want]
    wanted = [(t.subject, t.predicate, t.object) for t in request.relations]
    if [(r.subject, r.predicate, r.object) for r in parsed.relations] != wanted:
        problems.append("relations")
    return problems


def _as_read(value: object) -> object:
    """A frontmatter value as the learn request gave it: YAML reads an unquoted date as a date."""
    return value.isoformat() if isinstance(value, dt.date) else value


WRITE_ERRORS = {  # errno -> what happened and what to do about it
    errno.ENOSPC: "the disk is full (free some space where the knowledge base lives and try again)",
    errno.EDQUOT: "the disk quota is exceeded (free some space or raise the quota and try again)",
    errno.EFBIG: "the file is too large for this process's file-size limit (ulimit -f): shorten the"
    " learning or raise the limit",
    errno.EROFS: "the knowledge base is on a read-only file system (remount it read-write)",
}


def write_new(folder: Path, base: str, text: str) -> Path:
    """`_write_new`, again when the folder vanished under it (renamed or deleted by someone else)."""
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            return _write_new(folder, base, text)
        except LearnError as exc:
            if attempt == WRITE_ATTEMPTS or not isinstance(exc.__cause__, FileNotFoundError):
                raise
    raise AssertionError("unreachable")


def _write_new(folder: Path, base: str, text: str) -> Path:
    """Atomically create folder/base.md (or base_2.md, ...): never overwrites, never leaves a partial file.

    The text goes to a hidden temporary file first (O_EXCL: never through a symlink planted at its name),
    which is hard-linked to the first free final name (link() fails on any existing name, symlinks
    included, and does not follow a symlink swapped in for the temporary file). Whatever fails (a full
    disk, a file-size limit), the temporary file and any folder made for it are removed again.
    """
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    tmp: Path | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = create_new(folder, f".{base}", SHARED)  # random name, O_EXCL|O_NOFOLLOW
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        for n in range(1, MAX_SUFFIX):
            target = folder / (f"{base}.md" if n == 1 else f"{base}_{n}.md")
            try:
                os.link(tmp, target, follow_symlinks=False)
            except FileExistsError:
                continue
            return target
        raise LearnError(f"more than {MAX_SUFFIX} learnings named {base!r} today; choose a different title")
    except OSError as exc:
        with contextlib.suppress(OSError):
            if tmp is not None:
                tmp.unlink(missing_ok=True)
        for path in made:  # innermost first; only folders this call created, and only if still empty
            with contextlib.suppress(OSError):
                path.rmdir()
        reason = WRITE_ERRORS.get(exc.errno or 0) or exc.strerror or str(exc)
        raise LearnError(f"could not write the learning: {reason}; nothing was saved") from exc
    finally:
        with contextlib.suppress(OSError):
            if tmp is not None:
                tmp.unlink(missing_ok=True)


def near_duplicates(oracle: Oracle, request: LearnRequest, own_file: str) -> list[NearDuplicate]:
    """Existing learnings that say much the same (advice only: the learning is saved regardless)."""
    probe = SearchRequest(query=request.pattern[:2000], type="learning", mode="vector", limit=5, unit="note")
    result = run_search(oracle, probe)
    found: list[NearDuplicate] = []
    for hit in result.hits:
        similarity = hit.breakdown.vector_similarity or 0.0
        if similarity < DUPLICATE_SIMILARITY:
            continue
        # Identical notes share one hit (listed as its duplicates); each is a near-duplicate in its own right.
        for chunk_id, file in [(hit.id, hit.source_file), *((d.id, d.source_file) for d in hit.duplicates)]:
            if file != own_file:
                found.append(NearDuplicate(id=chunk_id, title=hit.title, source_file=file, similarity=similarity))
    return found


_NOT_WORDS = re.compile(r"[^\w]+")


def _normal(text: str) -> str:
    """A learning's words in order: case, markdown, punctuation and spacing do not make it a new learning; a
    changed word or number does (`retry 3 times` and `retry 5 times` are two learnings)."""
    return " ".join(_NOT_WORDS.sub(" ", unicodedata.normalize("NFC", text).casefold()).split())


def _body(text: str) -> str:
    """A learning file's text without its frontmatter and its `# title` line (learn writes both around the
    pattern)."""
    body = split_frontmatter(text.replace("\r\n", "\n"))[1].lstrip("\n")
    first, _, rest = body.partition("\n")
    return rest if first.startswith("# ") else body


def same_text(oracle: Oracle, request: LearnRequest) -> tuple[str, str, str] | None:
    """(file, chunk id, title) of an existing learning that says the pattern's words, in the same order (exactly,
    or but for case, markdown, punctuation and spacing), or None. The candidates are the pattern's best keyword
    matches among learnings (a note with the same words has every one of them: no embedding is needed, and the
    check costs a keyword search, benchmarks/learn_check.py), read from disk, so what is compared is what the
    files say now."""
    want = _normal(request.pattern)
    if not want:
        return None
    probe = SearchRequest(query=request.pattern[:2000], type="learning", mode="fts", limit=10, unit="note")
    for hit in run_search(oracle, probe).hits:
        for chunk_id, file in [(hit.id, hit.source_file), *((d.id, d.source_file) for d in hit.duplicates)]:
            try:
                _, raw = read_bytes(oracle.settings.root, file, oracle.settings.layout)
            except Exception:  # noqa: BLE001 - gone or unreadable since indexed: not a duplicate of anything
                continue
            if _normal(_body(raw.decode("utf-8", errors="replace"))) == want:
                return file, chunk_id, hit.title
    return None


def check_written(path: Path, rel: str, text: str, request: LearnRequest, title: str, today: dt.date,
                  author: str | None = None) -> None:
    """Re-read the learning from disk after indexing: it must still be there, with its metadata intact.
    Otherwise (deleted, moved, overwritten by someone else meanwhile) the caller gets an error, not an id
    of a note that is not what it asked to save."""
    try:
        on_disk = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        raise LearnLost(f"the learning was written to {rel}, but the file was deleted or moved by someone else"
                        " before it could be indexed; nothing is indexed under that name: learn it again") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LearnLost(f"the learning was written to {rel}, but it cannot be read back: {exc}") from None
    if on_disk != text:
        lost = metadata_problems(on_disk, request, title, today, author)
        if lost:
            raise LearnLost(f"the learning was written to {rel}, but the file was changed by someone else before"
                            f" it was indexed and no longer carries its {', '.join(lost)}: check the file")


def learn(oracle: Oracle, request: LearnRequest, client: str = "cli", today: dt.date | None = None,
          author: str | None = None) -> LearnResult:
    """Save and index a learning; with an idempotency key, a retry returns the first save instead of a twin.
    `author`: the named token that asked (team mode), written as `author:` in the note and in the learn log.

    The key is claimed before anything is written (atomically, in logs.db), settled with the file once it is
    saved, and released when nothing was saved, so a client that lost the answer can safely ask again."""
    key = request.idempotency_key
    if key is None:
        return _learn(oracle, request, client, today, author)
    fingerprint = hashlib.sha256(request.model_dump_json(exclude={"idempotency_key"}).encode()).hexdigest()
    state, file = oracle.logs.claim_learn_key(key, fingerprint)
    if state == "done" and file is not None:
        return _replay(oracle, request, file)
    if state == "other":
        raise LearnKeyConflict("idempotency_key: this key was already used for a different learning; use a new key"
                               " for a new learning")
    if state in ("new", "busy"):
        # A learn with this key may have saved its note and died before settling the key (kill -9, a crash):
        # the note carries the key in its frontmatter, so the retry finds it rather than write a second copy.
        found = find_keyed(oracle, request, key)
        if found is not None:
            with contextlib.suppress(Exception):
                oracle.logs.settle_learn_key(key, found)
            return _replay(oracle, request, found, index=True)
    if state == "busy":
        raise LearnKeyConflict("idempotency_key: a learn with this key is running right now; retry in a few seconds")
    try:
        result = _learn(oracle, request, client, today, author)
    except BaseException:
        oracle.logs.settle_learn_key(key, None)  # nothing saved: a retry must write it
        raise
    try:
        oracle.logs.settle_learn_key(key, result.file)
    except Exception as exc:  # noqa: BLE001 - the learning is saved; say so rather than fail
        result.warnings.append(f"the idempotency key could not be recorded ({type(exc).__name__}): a retry with it"
                               " may save the learning again")
    return result


def find_keyed(oracle: Oracle, request: LearnRequest, key: str) -> str | None:
    """The learning a learn with this key saved, found on disk by the key in its frontmatter (a root-relative
    path), or None. Only the names a learn of this title writes are read (`<date>_<slug>[_n].md` in the
    learnings folder), so a fresh key costs one listing of that folder."""
    folder = learnings_folder(oracle)
    slug = slugify(title_for(request))
    root = oracle.settings.root
    try:
        candidates = sorted({*folder.glob(f"*_{slug}.md"), *folder.glob(f"*_{slug}_*.md")})
    except OSError:
        return None
    for path in candidates:
        try:
            with path.open(encoding="utf-8") as handle:
                head = handle.read(64 * 1024)
        except (OSError, UnicodeDecodeError):
            continue
        if not head.startswith("---"):
            continue
        meta = split_frontmatter(head.replace("\r\n", "\n"))[0]
        if meta.get(KEY_FIELD) == key and not path.is_symlink():
            return unicodedata.normalize("NFC", path.relative_to(root).as_posix())
    return None


def _replay(oracle: Oracle, request: LearnRequest, file: str, index: bool = False) -> LearnResult:
    """What the first learn with this key saved, read back from the index (nothing is written). `index`: the
    note was found on disk after a crash, maybe before it was indexed: index it first."""
    if index and not oracle.store.file_chunk_ids(file):
        oracle.indexer.sync_paths([file], embed_limit=None)
    chunk_ids = oracle.store.file_chunk_ids(file)
    note = oracle.store.note(file)
    warnings = [f"this idempotency key already saved {file}; nothing new was written"]
    if not chunk_ids:
        warnings.append(f"{file} is no longer indexed (deleted or moved since)")
    sections = oracle.store.sections_by_id(chunk_ids).values()
    return LearnResult(
        id=chunk_ids[0] if chunk_ids else "", chunk_ids=chunk_ids, file=file,
        title=(note.title if note and note.title else title_for(request)), concepts=list(request.concepts),
        embedded=bool(chunk_ids) and all(s.in_vector for s in sections), warnings=warnings, replayed=True,
    )


# Over complexity 10 on purpose: the learn steps in order (check, write, index, advice, log); after the save nothing may
# fail the call.
def _learn(oracle: Oracle, request: LearnRequest, client: str, today: dt.date | None,  # noqa: C901
           author: str | None = None) -> LearnResult:
    """Write the learning, index it, and report; once the note is saved and indexed nothing after it (the
    near-duplicate advice, the learn log) can turn the answer into a failure that invites a duplicate retry."""
    title = title_for(request)
    today = today or dt.date.today()
    folder = learnings_folder(oracle)
    root = oracle.settings.root
    if not is_within(folder, root):
        raise LearnError(f"the learnings folder {folder} is outside the knowledge root {root}")
    # a learning that revises a note is refused before anything is written if that note changed since read
    revised = expect_unchanged(oracle, request.revises, request.expected_hash, "revises") \
        if request.revises and request.expected_hash else None
    if not request.allow_duplicate and revised is None:  # a revision is meant to resemble what it replaces
        same = same_text(oracle, request)
        if same is not None:
            file, chunk_id, same_title = same
            raise LearnDuplicate(f"{file} ({same_title!r}, id {chunk_id}) already says the same text;"
                                 " nothing was saved."
                                 " To save it anyway pass allow_duplicate=true; to replace that learning, pass"
                                 " revises with its expected_hash")
    base = f"{today.isoformat()}_{slugify(title)}"
    text = render(request, title, today, author)
    lost = metadata_problems(text, request, title, today, author)
    if lost:  # checked before anything is written, so a failure leaves nothing behind
        raise LearnError(f"the learning's {', '.join(lost)} would not read back from its frontmatter;"
                         " nothing was saved (please report this)")
    with oracle.indexer.lock:  # the writer lock first: held elsewhere past its wait, nothing is written (issue 39)
        path = write_new(folder, base, text)
    rel = unicodedata.normalize("NFC", path.relative_to(root).as_posix())
    try:
        # a learn is embedded before it returns
        report = oracle.indexer.sync_paths([rel], embed_limit=None, author=author)
    except WriterLockBusy as exc:  # taken by another engine between the write and the index: rare, and said
        raise WriterLockBusy(f"the learning was saved to {rel} but is not indexed yet: {exc}. The next sync indexes"
                             " it: do not learn it again (a retry with the same idempotency_key finds it)") from exc
    chunk_ids = oracle.store.file_chunk_ids(rel)
    check_written(path, rel, text, request, title, today, author)
    if not chunk_ids:
        reason = report.skipped.get(rel) or "; ".join(report.warnings) or "no chunks came out of it"
        raise LearnLost(f"the learning was written to {rel} but could not be indexed: {reason}")
    embedded = bool(chunk_ids) and all(
        section.in_vector for section in oracle.store.sections_by_id(chunk_ids).values()
    )
    warnings = list(report.warnings)
    duplicates: list[NearDuplicate] = []
    try:
        if embedded:
            duplicates = near_duplicates(oracle, request, rel)
    except Exception as exc:  # noqa: BLE001 - advice only: the learning is saved and indexed
        warnings.append(f"near-duplicate check skipped ({type(exc).__name__}: {exc}); the learning is saved")
    superseded = None
    if revised is not None:
        try:
            supersede(oracle, SupersedeRequest(old_id=revised, new_id=rel, reason="revised by a learning"), client,
                      author)
            superseded = revised
        except Exception as exc:  # noqa: BLE001 - the learning is saved; say what is left to do
            warnings.append(f"the learning is saved, but it could not be marked as superseding {revised}"
                            f" ({exc}); call oracle_supersede")
    try:
        oracle.logs.log_learn(client, rel, title, list(request.concepts), request.project, request.source, chunk_ids,
                              embedded, author=author)
    except Exception as exc:  # noqa: BLE001 - a record of the learn, not the learn itself
        warnings.append(f"the learn log could not be written ({type(exc).__name__}); the learning is saved")
    return LearnResult(
        id=chunk_ids[0] if chunk_ids else "",
        chunk_ids=chunk_ids,
        file=rel,
        title=title,
        concepts=list(request.concepts),
        embedded=embedded,
        warnings=warnings,
        near_duplicates=duplicates,
        author=author,
        supersedes=superseded,
    )

