"""Path traversal: a catalogue of hostile paths against every way a path or a name reaches Oracle.

The knowledge root sits three folders deep in a sandbox whose every other folder holds a canary note with
one secret token; symlinks inside the root lead out to them (files, folders, loops, /proc, /dev/zero),
beside hard links, a FIFO, and symlinks planted at the names learnings will take. Real servers are attacked
through every entrance that takes a path or a name: `GET /api/file` and `GET /api/read` and raw request
lines on a real `oracle serve --http`, `oracle_read`, `oracle_supersede` and `oracle_learn` over MCP stdio
(a real `oracle serve`), `POST /api/supersede` and `POST /api/learn`, `superseded_by:` in frontmatter; and
symlinks are swapped in after indexing and while reading. The check is real three times over:
- the token must never appear in any response, nor anywhere in the index (the data dir is scanned);
- a raw inotify watch on every folder outside the root records every open, read, listing, write, create
  and delete by any process there: it must see none (reads through a symlink are reported at the real path);
- an lstat snapshot of the tree outside the root (size, mtimes, inode, links) is the same at the end.
Linux only (inotify, FIFOs, /proc).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as dt
import http.client
import json
import os
import re
import secrets
import stat
import struct
import sys
import threading
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import quote

import httpx
import pytest

from oracle_server.services.capabilities.learn import LearnError, learn
from oracle_server.services.vocabulary.models import LearnRequest
from _corpus import PROJECT, write
from _mcp import KB, Session
from _procs import serve_http, stop_process

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="inotify, FIFOs and /proc are Linux's")

SECRET = secrets.token_hex(8)
TOKEN = f"CANARY-{SECRET}"
TODAY = dt.date.today().isoformat()
LEARNED_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}_(.+?)(_\d+)?\.md$")
REFUSED = (400, 404, 422)


# -- the sandbox --------------------------------------------------------------------------------------
IN_ACCESS, IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_OPEN = 0x1, 0x2, 0x4, 0x8, 0x20
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF = 0x40, 0x80, 0x100, 0x200, 0x400, 0x800
WATCHED = (IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_OPEN | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
           | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
IN_ISDIR = 0x40000000
_EVENT = struct.Struct("iIII")


class Inotify:
    """Raw inotify (Linux) on a few folders: every open, read, write, create, delete or move, by any
    process, of a folder itself or of anything directly in it (a folder listing included, which the
    watchdog library does not report)."""

    def __init__(self, folders: list[Path]) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.folders: dict[int, Path] = {}
        for folder in folders:
            wd = libc.inotify_add_watch(self.fd, os.fsencode(folder), WATCHED)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {folder}")
            self.folders[wd] = folder

    def events(self) -> list[tuple[str, Path]]:
        """The events since the last call: (kind, path)."""
        out: list[tuple[str, Path]] = []
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return out
            at = 0
            while at < len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0")
                at += _EVENT.size + size
                if wd in self.folders:
                    kinds = [k for bit, k in ((IN_OPEN, "open"), (IN_ACCESS, "read"), (IN_MODIFY, "write"),
                             (IN_CLOSE_WRITE, "write"), (IN_CREATE, "create"), (IN_DELETE, "delete"),
                             (IN_ATTRIB, "attrib"), (IN_MOVED_FROM, "move"), (IN_MOVED_TO, "move"),
                             (IN_DELETE_SELF, "delete"), (IN_MOVE_SELF, "move")) if mask & bit]
                    what = ("folder " if mask & IN_ISDIR else "") + "/".join(kinds)
                    out.append((what, self.folders[wd] / os.fsdecode(name) if name else self.folders[wd]))

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class Sandbox:
    base: Path  # the sandbox: everything here but root/, data/ and logs/ must stay untouched
    root: Path
    data: Path
    logs: Path
    env: dict[str, str]
    before: dict[str, tuple] = field(default_factory=dict)
    inotify: Inotify | None = None
    touched: list[tuple[str, Path]] = field(default_factory=list)

    def allowed(self, path: Path) -> bool:
        return any(path == p or p in path.parents for p in (self.root, self.data, self.logs))

    def walk(self) -> dict[str, tuple]:
        """Everything outside the root, data and logs: lstat of each name (a listing opens each folder)."""
        out: dict[str, tuple] = {}
        for dirpath, dirnames, filenames in os.walk(self.base):
            dirnames[:] = [d for d in dirnames if not self.allowed(Path(dirpath, d))]
            for name in [".", *dirnames, *filenames]:
                out[str(Path(dirpath, name).relative_to(self.base))] = self.stat(Path(dirpath, name))
        return out

    @staticmethod
    def stat(path: Path) -> tuple:
        st = path.lstat()
        link = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
        return st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_nlink, link

    def assert_untouched(self) -> None:
        """Nothing outside the root was opened, read, listed or changed since the sandbox was made: no
        inotify event there, and every name there has the lstat it had (no folder listing needed, which
        would be an open of its own; new names would have been inotify events)."""
        assert self.inotify is not None
        self.touched += [(what, path) for what, path in self.inotify.events() if not self.allowed(path)]
        assert self.touched == [], f"touched outside the root: {self.touched[:20]}"
        now = {rel: self.stat(self.base / rel) for rel in self.before}
        assert now == self.before

    def check(self, text: str) -> str:
        """Every response passes through here: the canary's token must never be in it."""
        assert TOKEN not in text, f"the canary leaked: {text[:500]}"
        return text



def _canary(path: Path) -> None:
    write(path, f"---\ntitle: Canary\n---\n\n# Canary\n\n## Secret\n\n{TOKEN} the secret outside the root\n")


def build_sandbox(base: Path) -> Sandbox:
    """base/canary.md, base/box/canary.md, base/box/kb/canary.md, base/box/outside/**, base/box/home;
    the root is base/box/kb/root, so ../, ../../ and ../../../ each reach a canary."""
    box = base / "box"
    for where in (base, box, box / "kb", box / "outside", box / "outside/deep", box / "home"):
        _canary(where / "canary.md")
        (where / "canary.txt").write_text(TOKEN)
    (box / "passwd").write_text(f"root:x:0:0:{TOKEN}:/root:/bin/sh\n")
    write(box / "hard-target.md", "## Context\n\nhardlinkword lives outside but is linked in\n")
    root = box / "kb" / "root"
    write(root / "principles/p.md", "# Care\n\n### Test first\n\n- Write the failing test first.\n")
    write(root / "retrospectives/r.md", "# Week\n\n## What happened\n\nretroword\n")
    write(root / "learnings/good.md", "---\ntitle: Good\n---\n\n## Context\n\ngoodword\n")
    write(root / "learnings/swapped.md", "## Context\n\nswappedword\n")
    write(root / "learnings/swapped-dir/canary.md", "## Context\n\nswappedfolderword (a harmless namesake)\n")
    write(root / "learnings/flip-real/canary.md", "## Context\n\nflipword (a harmless namesake)\n")
    write(root / "learnings/flip.md", "## Context\n\nflipfileword\n")
    write(root / unicodedata.normalize("NFD", "learnings/café.md"), "## Context\n\ncafeword\n")  # as macOS names it
    for n, pointer in enumerate(("../../canary.md", "../../../canary.md", str(box / "canary.md"),
                                 "../../../canary", "learnings/link-out.md", "dir-out/canary")):
        write(root / f"learnings/pointer-{n}.md", f"---\nsuperseded_by: {json.dumps(pointer)}\n---\n\n## A\n\npointerword\n")
    learnings = root / "learnings"
    os.symlink(box / "canary.md", learnings / "link-out.md")
    os.symlink("../../../canary.md", learnings / "link-out-rel.md")  # relative: three up from learnings/ is box/
    os.symlink(box / "outside", learnings / "dir-out", target_is_directory=True)
    os.symlink(box / "outside", root / "principles/ext-principles", target_is_directory=True)
    os.symlink("loop.md", learnings / "loop.md")
    os.symlink("loop-b.md", learnings / "loop-a.md")
    os.symlink("loop-a.md", learnings / "loop-b.md")
    os.symlink(box / "nowhere.md", learnings / "dangling.md")
    os.symlink("/proc/self/environ", learnings / "proc.md")
    os.symlink("/dev/zero", learnings / "devzero.md")
    os.symlink("good.md", learnings / "alias.md")  # inside the root: good.md again, not a second note
    os.symlink("flip-real", learnings / "flip-dir")  # swapped back and forth while read: see the race test
    os.mkfifo(learnings / "fifo.md")
    # Issue 26: secrets inside the root where a teammate keeps them, and committed note-named links to them.
    write(root / ".env", f"API_TOKEN={TOKEN}\n")
    write(root / ".git/config", f"[remote]\n\turl = https://bob:{TOKEN}@example.com/x.git\n")
    _canary(root / "node_modules/pkg/README.md")
    os.symlink("../.env", learnings / "env.md")
    os.symlink("../.git/config", learnings / "git-config.md")
    os.symlink("../node_modules/pkg/README.md", learnings / "node.md")
    os.link(box / "hard-target.md", learnings / "hard.md")
    # Traps at the names today's learnings will take: a learn must never write through them.
    os.symlink(box / "outside/written.md", learnings / f"{TODAY}_dangling-trap.md")
    os.symlink(box / "canary.md", learnings / f"{TODAY}_symlink-trap.md")
    os.link(box / "hard-target.md", learnings / f"{TODAY}_hard-trap.md")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(base / "data"), HOME=str(box / "home"),
               PYTHONIOENCODING="utf-8")
    (base / "logs").mkdir()
    (base / "data").mkdir()  # made here: the server creating it would change the sandbox's own folder
    return Sandbox(base=base, root=root, data=base / "data", logs=base / "logs", env=env)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Iterator[Sandbox]:
    """The sandbox, watched from before any server starts; at the end, after every server stopped, the
    whole tree outside the root is walked again and must be exactly as it was."""
    box = build_sandbox(tmp_path_factory.mktemp("paths"))
    box.before = box.walk()
    box.inotify = Inotify([box.base / rel for rel, st in box.before.items() if stat.S_ISDIR(st[0])])
    try:
        yield box
    finally:
        box.inotify.close()
    assert box.walk() == box.before, "the tree outside the root changed"
    for path in box.data.rglob("*"):  # the index (its queries' log aside: the tests search for the secret)
        if path.is_file() and not path.name.startswith("logs.db"):
            assert SECRET.encode() not in path.read_bytes(), f"the canary reached the index: {path}"


@pytest.fixture(scope="module")
def http_server(sandbox) -> Iterator[str]:
    proc, url = serve_http(sandbox.env, sandbox.logs, sandbox.logs / "serve-http.log")
    try:
        yield url
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def mcp(sandbox, http_server) -> Iterator[Session]:
    session = Session(KB(sandbox.root, sandbox.data, sandbox.env, sandbox.logs))
    try:
        yield session
    finally:
        session.close()


# -- the catalogue ------------------------------------------------------------------------------------
def attempts(base: Path) -> dict[str, list[str]]:
    """Hostile paths by family. `base` is the sandbox (for absolute paths that really exist)."""
    canary = str(base / "box" / "canary.md")
    return {
        "dot-dot": [
            "../canary.md", "../../canary.md", "../../../canary.md", "../../../../canary.md",
            "learnings/../../canary.md", "learnings/../../../canary.md", "./../canary.md",
            "learnings/./../../canary.md", "learnings//../../canary.md", "../kb/root/learnings/good.md",
            "....//canary.md", "..././canary.md", "...//....//canary.md", ".../canary.md", "..", ".", "../",
            "learnings/..", "learnings/../..", "learnings/dir-out/../../canary.md", "/..", "../../../../../../../etc/passwd",
        ],
        "absolute": [
            canary, str(base / "canary.md"), str(base / "box/kb/root/learnings/good.md"),
            str(base / "box/kb/root") + "/../canary.md", "/etc/passwd", "/etc/hostname", "//" + canary.lstrip("/"),
            "///" + canary.lstrip("/"), "/proc/self/environ", "/proc/self/root" + canary, "/proc/self/cwd/../canary.md",
            "/dev/zero", "/", "file://" + canary, "file:" + canary, "file:///etc/passwd",
        ],
        "home": ["~/canary.md", "~", "~root/canary.md", "~/../canary.md", "~/.bashrc", "$HOME/canary.md",
                 "${HOME}/canary.md", "%HOME%/canary.md"],
        "url-encoded": [
            "..%2fcanary.md", "%2e%2e/canary.md", "%2e%2e%2fcanary.md", "%2E%2E%2Fcanary.md", "..%5ccanary.md",
            "%2e%2e%5ccanary.md", "learnings%2f..%2f..%2fcanary.md", "..%2f..%2f..%2fcanary.md", "%2fetc%2fpasswd",
            "..%00/canary.md", "learnings/good.md%00", "%c0%ae%c0%ae/canary.md", "..%c0%afcanary.md",
            "%e0%80%ae%e0%80%ae/canary.md", "..%u2215canary.md", "%uff0e%uff0e/canary.md",
        ],
        "double-encoded": ["%252e%252e%252fcanary.md", "..%252fcanary.md", "%252e%252e/canary.md",
                           "%25%32%65%25%32%65/canary.md", "%25252e%25252e/canary.md"],
        "backslash": ["..\\canary.md", "..\\..\\canary.md", "..\\..\\..\\canary.md", "learnings\\..\\..\\canary.md",
                      "\\..\\canary.md", "\\\\..\\canary.md", "learnings/..\\..\\canary.md", "..\\/canary.md",
                      "\\etc\\passwd", "learnings\\good.md"],
        "nul": ["learnings/good.md\x00", "../canary.md\x00.md", "learnings/good.md\x00/../../canary.md", "\x00",
                "learnings/\x00../../canary.md", "\x00../canary.md"],
        "overlong": ["a/" * 400 + "x.md", "../" * 300 + "canary.md", "x" * 300 + ".md", "learnings/" + "x" * 256 + ".md",
                     "./" * 480 + "../canary.md", "learnings/" + "é" * 200 + ".md", "learnings/" + "x" * 5000 + ".md"],
        "lookalikes": [
            "\uff0e\uff0e/canary.md", "..\uff0fcanary.md", "\uff0e\uff0e\uff0fcanary.md", "\u2024\u2024/canary.md",
            "\u2024\u2024\uff0f\u2024\u2024\uff0fcanary.md", "..\u2044canary.md", "..\u2215canary.md", "\u2025/canary.md",
            "..\u29f8canary.md", "\ufe52\ufe52/canary.md", "..\u2216canary.md", "..\uff3ccanary.md",
            "\u3002\u3002/canary.md", "..\u2044..\u2044..\u2044canary.md", "\u2024\u2024\u2044canary.md",
        ],
        "unicode-forms": ["..\u0338/canary.md", ".\u0301./canary.md", "\u0307../canary.md",
                          unicodedata.normalize("NFD", "../café.md"), "learnings/caf\u00e9.md", "learnings/cafe\u0301.md"],
        "windows-drive": ["C:\\Windows\\win.ini", "C:/canary.md", "c:canary.md", "C:..\\canary.md", "C:\\..\\canary.md",
                          "D:", "\\\\?\\C:\\canary.md", "\\\\.\\C:\\canary.md", "C:\\Windows\\System32\\drivers\\etc\\hosts"],
        "unc": ["\\\\server\\share\\canary.md", "//server/share/canary.md", "\\\\localhost\\c$\\canary.md",
                "\\\\127.0.0.1\\share\\canary.md", "\\\\?\\UNC\\server\\share\\canary.md"],
        "trailing": ["../canary.md.", "../canary.md ", "../canary.md...", "../canary.md. . .", "learnings/good.md.",
                     "learnings/good.md ", "learnings/good.md::$DATA", "learnings/good.md:stream", "learnings/good.md/",
                     "learnings/good.md/.", "learnings/good.md\\", "learnings/good .md", "learnings/good.md%20"],
        "reserved": ["CON", "CON.md", "con.md", "NUL.md", "nul", "AUX.md", "PRN.md", "COM1.md", "LPT1.md",
                     "learnings/CON.md", "learnings/NUL", "CONIN$", "learnings/con.md.md", "learnings/CON"],
        "misc": ["../canary.md?x=1", "../canary.md#x", "..;/canary.md", "learnings/;../../canary.md", "../canary.md\n",
                 "\t../canary.md", "learnings/\r\n../../canary.md", ".. /canary.md", " ../canary.md", "../CANARY.MD",
                 "*.md", "learnings/*.md", "learnings/?ood.md", "{..,.}/canary.md", "learnings/[g]ood.md", "",
                 " ", "learnings", "learnings/", "learnings/good", "learnings/good.txt", "../canary.txt"],
        "symlinks": ["learnings/link-out.md", "learnings/link-out-rel.md", "learnings/dir-out/canary.md",
                     "learnings/dir-out/deep/canary.md", "learnings/loop.md", "learnings/loop-a.md",
                     "learnings/dangling.md", "learnings/proc.md", "learnings/devzero.md", "learnings/fifo.md",
                     "principles/ext-principles/canary.md", "learnings/dir-out/nothing.md",
                     f"learnings/{TODAY}_symlink-trap.md", f"learnings/{TODAY}_dangling-trap.md",
                     "learnings/env.md", "learnings/git-config.md", "learnings/node.md", "node_modules/pkg/README.md",
                     ".env", ".git/config", "learnings/../.env"],
    }


# Paths that name a real note inside the root: these must be served (what each really is, by path).
READABLE = {
    "learnings/good.md": "learnings/good.md",
    "./learnings/good.md": "learnings/good.md",
    "learnings//good.md": "learnings/good.md",
    "learnings\\good.md": "learnings/good.md",  # a backslash is a separator on the way in
    "learnings/caf\u00e9.md": "learnings/caf\u00e9.md",  # NFC, while the disk holds NFD
    "learnings/cafe\u0301.md": "learnings/caf\u00e9.md",
    "learnings/alias.md": "learnings/good.md",  # a symlink inside the root
    "learnings/hard.md": "learnings/hard.md",  # a hard link is a file in the root (see indexer/notes/discover.py)
    f"learnings/{TODAY}_hard-trap.md": f"learnings/{TODAY}_hard-trap.md",
}


HIDDEN_TARGET = ("symlink target is a hidden file or in a hidden folder (names starting with '.', '#' or '~'):"
                 " not indexed")


def fts_total(url: str, word: str) -> int:
    return httpx.get(url + "/api/search", params={"query": word, "mode": "fts"}, timeout=60).json()["total"]


def flat(base: Path) -> list[str]:
    seen: dict[str, None] = {}
    for family in attempts(base).values():
        for path in family:
            seen[path] = None
    return list(seen)


def test_the_catalogue(sandbox):
    paths = flat(sandbox.base)
    print(f"\ncatalogue: {len(paths)} distinct hostile paths in {len(attempts(sandbox.base))} families")
    assert len(paths) >= 150 and len(set(paths)) == len(paths)


# -- indexing ---------------------------------------------------------------------------------------
def test_indexing_reads_nothing_outside_the_root(sandbox, http_server):
    stats = httpx.get(http_server + "/api/stats", timeout=60).json()
    skipped = stats["files"]["skipped"]
    assert skipped == {
        "learnings/dangling.md": "broken symlink (its target does not exist)",
        "learnings/env.md": HIDDEN_TARGET,
        "learnings/git-config.md": HIDDEN_TARGET,
        "learnings/node.md": "symlink target is left out by the rules (exclude): not indexed",
        "learnings/devzero.md": "symlink points outside the knowledge root",
        "learnings/dir-out": "folder symlink points outside the knowledge root: not followed",
        "learnings/fifo.md": "not a regular file (a FIFO)",
        "learnings/link-out-rel.md": "symlink points outside the knowledge root",
        "learnings/link-out.md": "symlink points outside the knowledge root",
        "learnings/loop-a.md": "symlink loop",
        "learnings/loop-b.md": "symlink loop",
        "learnings/loop.md": "symlink loop",
        "learnings/proc.md": "symlink points outside the knowledge root",
        f"learnings/{TODAY}_dangling-trap.md": "broken symlink (its target does not exist)",
        f"learnings/{TODAY}_symlink-trap.md": "symlink points outside the knowledge root",
        "principles/ext-principles": "folder symlink points outside the knowledge root: not followed",
    }
    listing = httpx.get(http_server + "/api/list", params={"limit": 100, "group_by_file": True}, timeout=60).json()
    files = {item["source_file"] for item in listing["items"]}
    assert {"learnings/good.md", "learnings/hard.md", "learnings/caf\u00e9.md",
            "learnings/swapped-dir/canary.md", "learnings/flip-real/canary.md"} <= files
    assert "learnings/alias.md" not in files  # a symlink to good.md is good.md, not a second note
    for query in (TOKEN, "canary secret outside the root"):
        found = httpx.get(http_server + "/api/search", params={"query": query, "limit": 50}, timeout=60).json()
        sandbox.check(json.dumps(found["hits"], ensure_ascii=False))  # (the query itself is echoed back)
    assert fts_total(http_server, SECRET) == 0
    sandbox.assert_untouched()


# -- reading by path ------------------------------------------------------------------------------------
def test_api_file_refuses_every_hostile_path(sandbox, http_server):
    refused = 0
    with httpx.Client(base_url=http_server, timeout=60) as client:
        for path in every_path(sandbox):
            response = client.get("/api/file", params={"path": path})
            sandbox.check(response.text)
            if path in READABLE:
                assert response.status_code == 200, (path, response.text)
                assert response.json()["path"] == READABLE[path]
            else:
                assert response.status_code in REFUSED, (path, response.status_code, response.text)
                assert response.json()["error"], path
                refused += 1
    print(f"\n/api/file: {refused} hostile paths refused, {len(READABLE)} real notes served by their paths")
    sandbox.assert_untouched()


def every_path(sandbox: Sandbox) -> list[str]:
    return [*flat(sandbox.base), *(p for p in READABLE if p not in flat(sandbox.base))]


def test_api_read_refuses_every_hostile_path(sandbox, http_server):
    with httpx.Client(base_url=http_server, timeout=60) as client:
        for path in every_path(sandbox):
            response = client.get("/api/read", params={"file": path})
            sandbox.check(response.text)
            if path in READABLE:
                assert response.status_code == 200, (path, response.text)
                assert response.json()["source_file"] == READABLE[path]
            else:
                assert response.status_code in REFUSED, (path, response.status_code, response.text)
                assert response.json()["error"], path
    sandbox.assert_untouched()


def test_mcp_read_refuses_every_hostile_path(sandbox, mcp):
    for path in every_path(sandbox):
        result = mcp.call("oracle_read", {"file": path})
        sandbox.check(result.content[0].text if result.content else "")
        sandbox.check(json.dumps(result.structured_content, ensure_ascii=False))
        if path in READABLE:
            assert not result.is_error, (path, result.content[0].text)
            assert result.structured_content["source_file"] == READABLE[path]
        else:
            assert result.is_error and result.content[0].text, path
    sandbox.assert_untouched()


def test_supersede_refuses_every_hostile_path(sandbox, http_server, mcp):
    """Both ends of a supersession take note paths; a hostile one names no note, whichever end it is.
    A real note's path is accepted (and the supersession undone at once)."""
    accepted: set[str] = set()
    with httpx.Client(base_url=http_server, timeout=60) as client:
        for n, path in enumerate(every_path(sandbox)):
            old, new = (path, "retrospectives/r.md") if n % 2 else ("retrospectives/r.md", path)
            response = client.post("/api/supersede", json={"old_id": old, "new_id": new})
            sandbox.check(response.text)
            if response.status_code == 201:
                accepted.add(path)
                assert client.post("/api/supersede", json={"old_id": old, "undo": True}).status_code == 201
            else:
                assert response.status_code in REFUSED and response.json()["error"], (path, response.text)
            result = mcp.call("oracle_supersede", {"old_id": new, "new_id": old})
            sandbox.check(result.content[0].text if result.content else "")
            if not result.is_error:
                accepted.add(path)
                mcp.ok("oracle_supersede", {"old_id": new, "undo": True})
    assert {p.strip() for p in accepted} <= set(READABLE), accepted  # supersede strips the ids it is given
    sandbox.assert_untouched()


def test_hostile_superseded_by_in_frontmatter_points_nowhere(sandbox, http_server):
    """`superseded_by:` pointing out of the root (or through a symlink out) is looked up among indexed notes only."""
    found = httpx.get(http_server + "/api/search", params={"query": "pointerword", "mode": "fts", "limit": 20},
                      timeout=60).json()
    assert found["total"] == 6
    for hit in found["hits"]:  # the note's own words are echoed back; they resolve to no note
        pointer = hit["superseded_by"]
        assert pointer is None or (pointer["id"], pointer["title"]) == ("", ""), hit
    sandbox.check(json.dumps(found["hits"], ensure_ascii=False))
    sandbox.assert_untouched()


def raw_get(url: str, target: str) -> tuple[int, str]:
    """A GET whose request target goes on the wire exactly as written (httpx would normalise it)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.putrequest("GET", target, skip_accept_encoding=True)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def test_raw_request_lines_cannot_escape(sandbox, http_server):
    """Traversal in the URL itself: the API routes, the static files of the dashboard, the query string."""
    static_up = "/".join([".."] * (len(PROJECT.parts) + 2))  # from server/http/static/ up to /
    canary = str(sandbox.base / "box" / "canary.md").lstrip("/")
    targets = [
        "/api/file?path=../canary.md", "/api/file?path=..%2fcanary.md", "/api/file?path=%2e%2e%2fcanary.md",
        "/api/file?path=%252e%252e%252fcanary.md", "/api/file?path=..%5c..%5ccanary.md",
        "/api/file?path=%2F" + quote(canary, safe=""), "/api/file?path=learnings/good.md%00../../canary.md",
        "/api/file?path=../canary.md&path=learnings/good.md", "/api/file?path=learnings/good.md&path=../canary.md",
        "/api/file?path=%c0%ae%c0%ae/canary.md", "/api/file?path=%ef%bc%8e%ef%bc%8e%ef%bc%8fcanary.md",
        "/api/../../canary.md", "/api/%2e%2e/%2e%2e/canary.md", "/../../../canary.md",
        f"/static/{static_up}/{canary}", f"/static/{static_up.replace('/', '%2f')}%2f{quote(canary, safe='')}",
        f"/static/{static_up.replace('..', '%2e%2e')}/{canary}", f"/static/..%5c..%5c{canary}",
        f"/static//{canary}", f"/static/{'%252e%252e/' * 12}{canary}", "/static/../../../../../../etc/passwd",
        "/static/%00", f"/static/{'..;/' * 12}{canary}",
    ]
    last_wins = "/api/file?path=../canary.md&path=learnings/good.md"  # a repeated parameter: the last one counts
    for target in targets:
        status, body = raw_get(http_server, target)
        sandbox.check(body)
        if target == last_wins:
            assert status == 200 and json.loads(body)["path"] == "learnings/good.md", body[:300]
        else:
            assert status in (*REFUSED, 405), (target, status, body[:300])
    print(f"\nraw request lines: {len(targets)} refused")
    sandbox.assert_untouched()


# -- learning: no string that reaches a file name may lead anywhere ------------------------------------
def learn_args(strings: list[str], i: int, via: str) -> dict:
    """Strings i..i+3 in title, project, source and concepts (one concept: at most 64 characters). The pattern
    names the surface: the same text learned twice in one root is refused as a duplicate."""
    n = len(strings)
    return {"pattern": f"learnpathword {i} over {via}: a learning whose metadata is hostile", "title": strings[i],
            "project": strings[(i + 1) % n], "source": strings[(i + 2) % n], "concepts": [strings[(i + 3) % n][:64]]}


def assert_learned_inside(sandbox: Sandbox, file: str) -> None:
    """learnings/DATE_slug.md (or _N.md), the slug only letters, marks, digits and hyphens, a plain file."""
    path = PurePosixPath(file)
    assert len(path.parts) == 2 and path.parts[0] == "learnings", file
    match = LEARNED_NAME.match(path.name)
    assert match and all(c == "-" or unicodedata.category(c)[0] in "LMN" for c in match.group(1)), file
    assert (sandbox.root / file).is_file() and not (sandbox.root / file).is_symlink()


def test_learn_over_mcp_never_writes_outside(sandbox, mcp):
    strings = flat(sandbox.base)
    saved = errors = 0
    for i in range(len(strings)):
        result = mcp.call("oracle_learn", learn_args(strings, i, "mcp"))
        text = sandbox.check(result.content[0].text if result.content else "")
        sandbox.check(str(result.structured_content))
        if result.is_error:
            assert "invalid arguments" in text, text  # a too-long title or concept: a clear validation error
            errors += 1
            continue
        assert_learned_inside(sandbox, result.structured_content["file"])
        saved += 1
    print(f"\nMCP oracle_learn: {saved} saved inside learnings/, {errors} refused as invalid")
    assert saved > len(strings) * 3 // 4
    sandbox.assert_untouched()


def test_learn_over_http_never_writes_outside(sandbox, http_server):
    """The same service as over MCP behind another validator: each string once, in one of the fields
    (four per call), where MCP above puts every string in every field."""
    strings = flat(sandbox.base)
    saved = errors = 0
    with httpx.Client(base_url=http_server, timeout=120) as client:
        for i in range(0, len(strings), 4):
            response = client.post("/api/learn", json=learn_args(strings, i, "http"))
            sandbox.check(response.text)
            if response.status_code == 422:
                errors += 1
                continue
            assert response.status_code == 201, response.text
            assert_learned_inside(sandbox, response.json()["file"])
            saved += 1
    print(f"\nPOST /api/learn: {saved} saved inside learnings/, {errors} refused as invalid")
    assert saved > len(strings) // 4 * 3 // 4
    sandbox.assert_untouched()


def test_learn_never_writes_through_a_link_at_its_name(sandbox, mcp):
    """Today's names are taken by a dangling symlink out, a symlink to a canary and a hard link to a file
    outside: each learn takes the next free name and the linked files stay as they were."""
    if dt.date.today().isoformat() != TODAY:  # laying traps at the new date's names would touch the outside file
        pytest.skip(f"the date changed since the traps were laid at {TODAY}'s names (a run across midnight)")
    for title, taken in (("Dangling trap", "dangling-trap"), ("Symlink trap", "symlink-trap"), ("Hard trap", "hard-trap")):
        result = mcp.ok("oracle_learn", {"pattern": f"trapword {taken}", "title": title})
        assert result["file"] == f"learnings/{TODAY}_{taken}_2.md", result["file"]
        sandbox.check(str(result))
    assert not (sandbox.base / "box/outside/written.md").exists()
    sandbox.assert_untouched()  # the hard-linked file outside kept its size, mtime and ctime


# -- symlinks swapped in after indexing, and while reading -----------------------------------------------
def test_a_symlink_swapped_in_after_indexing(sandbox, http_server, mcp):
    """A note and a folder that were indexed become symlinks to the canaries: reading them by path is
    refused at once, and the watchers re-index them as skipped, so their old words are gone too."""
    learnings = sandbox.root / "learnings"
    assert fts_total(http_server, "swappedword") == 1 and fts_total(http_server, "swappedfolderword") == 1
    os.symlink(sandbox.base / "box/canary.md", learnings / ".swap")
    os.replace(learnings / ".swap", learnings / "swapped.md")
    os.rename(learnings / "swapped-dir", sandbox.root / "retired-dir")
    os.symlink(sandbox.base / "box/outside", learnings / "swapped-dir", target_is_directory=True)
    with httpx.Client(base_url=http_server, timeout=60) as client:
        for path in ("learnings/swapped.md", "learnings/swapped-dir/canary.md"):
            for response in (client.get("/api/file", params={"path": path}), client.get("/api/read", params={"file": path})):
                assert response.status_code == 400, sandbox.check(response.text)
            result = mcp.call("oracle_read", {"file": path})
            assert result.is_error, sandbox.check(result.content[0].text)
        deadline = time.monotonic() + 60
        while fts_total(http_server, "swappedword") or fts_total(http_server, "swappedfolderword"):
            assert time.monotonic() < deadline, "the watchers never dropped the swapped note"
            time.sleep(0.3)
        skipped = client.get("/api/stats").json()["files"]["skipped"]
    assert skipped["learnings/swapped.md"] == "symlink points outside the knowledge root"
    assert skipped["learnings/swapped-dir/canary.md"] == "outside the knowledge root (reached through a symlinked folder)"
    assert fts_total(http_server, SECRET) == 0
    sandbox.assert_untouched()


def test_swapping_symlinks_while_reading_never_leaves_the_root(sandbox, http_server):
    """A real race: one thread flips `flip-dir` between a folder inside the root and one outside, and
    `flip.md` between a note and a symlink to the canary, while requests read both through the server
    (whose watchers re-index them on every flip). Each answer is the harmless note or a refusal; the
    inotify watch shows that nothing outside was even opened, at whatever moment the swap landed. The race
    is real, so a broken reader is caught by chance: one that resolves the path again and opens that
    leaked the canary in two runs out of three."""
    learnings = sandbox.root / "learnings"
    stop = threading.Event()
    flips = 0

    def flip() -> None:
        nonlocal flips
        while not stop.is_set():
            out = flips % 2 == 0
            os.symlink(sandbox.base / "box/outside" if out else "flip-real", learnings / ".flip-dir")
            os.replace(learnings / ".flip-dir", learnings / "flip-dir")
            if out:
                os.symlink(sandbox.base / "box/canary.md", learnings / ".flip")
            else:
                (learnings / ".flip").write_text("## Context\n\nflipfileword\n")
            os.replace(learnings / ".flip", learnings / "flip.md")
            flips += 1
            time.sleep(0.0002)  # let the servers breathe: their watchers re-index on every swap

    outcomes: dict[int, int] = {}
    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        with httpx.Client(base_url=http_server, timeout=60) as client:
            for n in range(200):
                path = "learnings/flip-dir/canary.md" if n % 2 else "learnings/flip.md"
                response = client.get("/api/file", params={"path": path})
                sandbox.check(response.text)
                assert response.status_code in (200, *REFUSED), (path, response.status_code, response.text)
                if response.status_code == 200:
                    assert "flip" in response.json()["text"], response.text
                outcomes[response.status_code] = outcomes.get(response.status_code, 0) + 1
    finally:
        stop.set()
        flipper.join()
    os.symlink("flip-real", learnings / ".flip-dir")
    os.replace(learnings / ".flip-dir", learnings / "flip-dir")
    print(f"\nrace: {flips} swaps during 200 reads: {outcomes}")
    assert outcomes.get(200) and len(outcomes) > 1  # both sides of the race were met
    time.sleep(2)  # the watchers' last batch, so that its reads are inside the inotify window too
    sandbox.assert_untouched()


def test_learn_refuses_a_learnings_folder_that_leads_out(tmp_path, make_oracle):
    """`learnings/` itself a symlink to a folder outside the root: learn says so and writes nothing."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    write(root / "principles/p.md", "# P\n\n### Rule\n\n- A rule.\n")
    outside.mkdir()
    os.symlink(outside, root / "learnings", target_is_directory=True)
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync()
    with pytest.raises(LearnError, match="outside the knowledge root"):
        learn(oracle, LearnRequest(pattern="escapeword: this must not be written", title="Escape"))
    assert list(outside.iterdir()) == []
