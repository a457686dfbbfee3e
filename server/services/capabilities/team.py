"""Team mode: named tokens, one per person or agent, each read-only or allowed to write.

One shared `ORACLE_TOKEN` says nothing about who asked, and anyone holding it may write. A named token says
both: the HTTP server (server/http/app.py) maps the bearer token to an `Identity`, read-only identities are
refused on every write (server/registry/tools.py), and learns, feedback, supersessions, edits and archives carry the
token's name (`author:` in a learning's frontmatter, the `author` column of the logs).

Tokens are kept in `<data dir>/tokens.json` (0600), never in clear: each entry holds a random salt and
HMAC-SHA256(salt, token). A token is 256 random bits, so there is no dictionary to attack and a slow hash
(scrypt) would add nothing but cost on every request; the salt keeps equal digests from showing across data
dirs. Every entry is compared on every request with `hmac.compare_digest`, so neither which entry matched nor
how much of a digest matched shows in the timing. The file is re-read when it changes (size, mtime, inode),
so `oracle token add` and `revoke` take effect on a running server at its next request.

With the team store (`ORACLE_DATABASE_URL`), tokens live in the database instead (`PgTokenStore`,
indexer/store/pg/named_tokens.py): `oracle token add` on one machine works on every engine, and every engine
re-reads the table at most DB_TOKENS_SECONDS after it last did (a running server on a timer, `watching`), so a
revocation is refused everywhere within that time, and in an outage only the last good read's tokens are accepted.
A row that cannot be used is skipped with a warning. A server that needs a token (bound beyond loopback,
ORACLE_REQUIRE_TOKEN=1) and has none left fails closed (`token_mode`). A data dir's tokens.json is brought into
the database once (and renamed, so a revoked token never comes back from it). `token_store(settings)` picks the one.

Standard library only (the PostgreSQL one imports psycopg when used): the CLI's `oracle token` commands import
this without the service layer.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from oracle_indexer.locks import WriterLock
from oracle_indexer.safe_write import PRIVATE, private_dir, write_atomic
from oracle_indexer.store.errors import DatabaseUnavailable

if TYPE_CHECKING:
    from oracle_indexer.store.protocols import TokenTable

Access = Literal["read", "write"]
TOKENS_FILE = "tokens.json"
TOKEN_PREFIX = "oracle_"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
NAME_RULE = "1-64 characters: letters, digits, '.', '_', '@' or '-', starting with a letter or digit"


MIN_TOKEN_CHARS = 16
MIN_DISTINCT_CHARS = 6


def weak_token(token: str) -> str | None:
    """Why a chosen token (ORACLE_TOKEN) is too easy to guess, or None. Named tokens are 256 random bits and
    never need this. Length alone let `aaaaaaaaaaaaaaaa`, `1234567890123456` and 16 spaces through: a token
    must be printable without spaces (a Bearer header cannot carry them intact), use at least 8 different
    characters, and be neither one word repeated (`passwordpassword`) nor mostly a run or a sequence (`aaaa`,
    `abcd`, `4321`). 16 random hex digits (64 bits) pass."""
    make = "make one with `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`"
    if len(token) < MIN_TOKEN_CHARS:
        return f"it is {len(token)} characters; use at least {MIN_TOKEN_CHARS} ({make})"
    if not token.strip() or any(c.isspace() or not c.isprintable() for c in token):
        return f"it contains spaces or control characters, which a Bearer header cannot carry intact ({make})"
    if len(set(token)) < MIN_DISTINCT_CHARS:
        return f"it uses only {len(set(token))} different characters; use at least {MIN_DISTINCT_CHARS} ({make})"
    period = next((p for p in range(1, len(token) // 2 + 1) if all(c == token[i % p] for i, c in enumerate(token))), 0)
    if period:
        return f"it repeats {token[:period]!r}; use random characters ({make})"
    steps = [ord(b) - ord(a) for a, b in zip(token, token[1:])]
    if sum(1 for d in steps if abs(d) <= 1) * 3 > len(steps) * 2 or len(set(steps)) <= 2:
        return f"it is mostly a repeated or sequential run of characters ({make})"
    return None


class TokenError(ValueError):
    """A token command cannot be done; the message says why and what to do."""


class TokenExists(TokenError):
    """The name already has a token."""


class TokenMissing(TokenError):
    """No token has that name."""


class NoTokens(TokenError):
    """A server that needs a token has none left (the last one revoked): it fails closed (503), never open."""


NO_TOKENS = ("no token exists: add one with `oracle token add NAME --write` (or set ORACLE_TOKEN and restart);"
             " this server needs a token ({why}) and refuses every request until one exists")
REQUIRE_ENV = "ORACLE_REQUIRE_TOKEN"


def token_required(loopback: bool, environ: Mapping[str, str]) -> bool:
    """Whether every request must carry a token even when none exists (then it is refused, 503). A server bound
    beyond loopback always needs one; a loopback server serves every local account without tokens, unless
    ORACLE_REQUIRE_TOKEN=1 (a shared host: other users' processes reach 127.0.0.1 too)."""
    raw = environ.get(REQUIRE_ENV, "").strip().lower()
    if raw not in ("", "0", "1", "true", "false", "yes", "no", "on", "off"):
        raise TokenError(f"{REQUIRE_ENV}={environ[REQUIRE_ENV][:40]!r} is not understood: use 1 or 0")
    return not loopback or raw in ("1", "true", "yes", "on")


def token_mode(store: TokenStore | None, shared: bool, required: bool, why: str) -> bool:
    """Whether this request needs a token: ORACLE_TOKEN is set, or a named token exists. A server that requires
    one (`token_required`) and has none (the last revoked, the table emptied) raises NoTokens: before, it went
    back to serving anyone, reads and writes, on whatever interface it was bound to."""
    if shared or (store is not None and store.enabled()):
        return True
    if required:
        raise NoTokens(NO_TOKENS.format(why=why))
    return False


def last_token_warning(store: TokenStore) -> str | None:
    """What `oracle token revoke` says when it removed the last named token, else None."""
    if store.entries():
        return None
    return ("that was the last named token: a server bound beyond localhost (or run with ORACLE_REQUIRE_TOKEN=1)"
            " and without ORACLE_TOKEN now refuses every request (503) until `oracle token add NAME --write`;"
            " a loopback server without ORACLE_REQUIRE_TOKEN serves every local account again")


@dataclass(frozen=True)
class Identity:
    """Who a request comes from. `name` None: no named token (the shared ORACLE_TOKEN, a local client)."""

    name: str | None
    can_write: bool = True


ANONYMOUS = Identity(None, True)  # stdio, the CLI in its own process, a loopback server without tokens
IDENTITY_KEY = "oracle.identity"  # the ASGI scope key server/http/app.py's Guard sets: who this request comes from


def identity_of(scope: Mapping[str, Any]) -> Identity:
    """Who sent the HTTP request the Guard let through (ANONYMOUS when no token was needed)."""
    found = scope.get(IDENTITY_KEY)
    return found if isinstance(found, Identity) else ANONYMOUS


@dataclass(frozen=True)
class TokenEntry:
    name: str
    access: Access
    salt: str  # hex
    digest: str  # hex HMAC-SHA256(salt, token)
    created: str  # ISO time, UTC

    def public(self) -> dict[str, str]:
        """What `oracle token list` shows: never the salt or digest."""
        return {"name": self.name, "access": self.access, "created": self.created}


def _digest(salt: bytes, token: str) -> bytes:
    return hmac.new(salt, token.encode("utf-8", "surrogateescape"), hashlib.sha256).digest()


def _new_token(name: str, access: Access, now: dt.datetime | None) -> tuple[str, TokenEntry]:
    """A new token for `name` (checked) and the entry that stores it: salt and digest, never the token. Both stores
    (the token file, the team database's table) add tokens this way."""
    check_name(name)
    if access not in ("read", "write"):
        raise TokenError("access must be read or write")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    salt = secrets.token_bytes(16)
    created = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0).isoformat()
    return token, TokenEntry(name, access, salt.hex(), _digest(salt, token).hex(), created)


def _exists(name: str) -> TokenExists:
    return TokenExists(f"a token named {name!r} exists already; revoke it first"
                       f" (`oracle token revoke {name}`) or choose another name")


def check_name(name: str) -> str:
    if not NAME_RE.fullmatch(name or ""):
        raise TokenError(f"token name {name!r} is not allowed: use {NAME_RULE}")
    return name


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def shown(name: str) -> str:
    """A token name as a terminal may print it: a row of the team table can hold any text (escape codes that
    clear the screen or retitle the window, newlines), so every control character is shown as `\\x1b`."""
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                            else f"\\u{ord(m.group()):04x}", str(name))


def entry_problem(entry: TokenEntry) -> str | None:
    """Why a stored entry cannot be used, or None. Every lookup decodes the salt and digest, so a damaged one must be
    found when the entries are read, not in the middle of a request (a 500 on every request). A name outside
    NAME_RULE was not made by `oracle token add` and would reach frontmatter and logs as an author."""
    if not isinstance(entry.name, str) or not NAME_RE.fullmatch(entry.name):
        return "its name is not one `oracle token add` makes"
    if entry.access not in ("read", "write"):
        return f"its access '{shown(str(entry.access))}' is neither read nor write"
    try:
        salt, digest = bytes.fromhex(entry.salt), bytes.fromhex(entry.digest)
    except (TypeError, ValueError):
        return "its salt or digest is not hexadecimal"
    if not salt or len(digest) != hashlib.sha256().digest_size:
        return "its salt is empty or its digest is not 32 bytes"
    return None


class TokenStore:
    """The named tokens of one data dir. Reads are cached by the file's identity; writes take a file lock
    so that two `oracle token add` at once cannot lose one another's entry."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / TOKENS_FILE
        self._lock = WriterLock(Path(data_dir) / "tokens.lock")
        self._cache: tuple[tuple[int, int, int], tuple[TokenEntry, ...]] | None = None
        self._cache_lock = threading.Lock()

    # -- reads ----------------------------------------------------------------------------------------
    def entries(self) -> tuple[TokenEntry, ...]:
        """Every token entry, from the file as it is now (re-parsed only when it changed)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return ()
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        with self._cache_lock:
            if self._cache is not None and self._cache[0] == key:
                return self._cache[1]
        entries = self._read()
        with self._cache_lock:
            self._cache = (key, entries)
        return entries

    def _read(self) -> tuple[TokenEntry, ...]:
        """The file's entries. A file that cannot be parsed is an error, never "no tokens": that would turn
        team mode off and open the server to anyone."""
        return _entries_in(self.path)

    def enabled(self) -> bool:
        """Team mode: at least one named token exists."""
        return bool(self.entries())

    def identify(self, token: str) -> Identity | None:
        """The identity a presented token belongs to, or None. Every entry is compared (constant time)."""
        found: TokenEntry | None = None
        for entry in self.entries():
            if hmac.compare_digest(_digest(bytes.fromhex(entry.salt), token), bytes.fromhex(entry.digest)):
                found = entry
        if found is None:
            return None
        return Identity(found.name, found.access == "write")

    # -- writes ---------------------------------------------------------------------------------------
    def add(self, name: str, access: Access, now: dt.datetime | None = None) -> str:
        """Create a token for `name` and return it (the only time it exists in clear)."""
        token, entry = _new_token(name, access, now)
        with self._lock:
            entries = list(self._read())
            if any(e.name == name for e in entries):
                raise _exists(name)
            entries.append(entry)
            self._write(entries)
        return token

    def revoke(self, name: str) -> TokenEntry:
        """Remove the token named `name`; it stops working at the server's next request."""
        with self._lock:
            entries = list(self._read())
            gone = [e for e in entries if e.name == name]
            if not gone:
                known = ", ".join(e.name for e in entries) or "none"
                raise TokenMissing(f"no token is named {name!r} (tokens: {known})")
            self._write([e for e in entries if e.name != name])
        return gone[0]

    @property
    def where(self) -> str:
        """Where the tokens are kept, for `oracle token list`."""
        return str(self.path)

    def close(self) -> None:
        """Nothing to let go of (the file is opened per read)."""

    @contextmanager
    def watching(self) -> Iterator[None]:
        """While a server runs: nothing to do for a file, which is looked at (a stat) on every request."""
        yield

    def _write(self, entries: list[TokenEntry]) -> None:
        private_dir(self.path.parent)
        body = {"version": 1, "tokens": [e.__dict__ for e in sorted(entries, key=lambda e: e.name)]}
        write_atomic(self.path, json.dumps(body, indent=2) + "\n", PRIVATE, refuse_symlink=True, fsync=True)
        os.chmod(self.path, PRIVATE)  # an older file with wider permissions is narrowed too


def _entries_in(path: Path) -> tuple[TokenEntry, ...]:
    """The entries of a tokens file (tokens.json, or the team table's last copy). A file that cannot be parsed is
    an error, never "no tokens": that would turn team mode off and open the server to anyone."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        entries = tuple(TokenEntry(name=e["name"], access=e["access"], salt=e["salt"], digest=e["digest"],
                                   created=e["created"]) for e in raw["tokens"])
        for e in entries:  # the user's own file: a damaged entry closes the server until it is fixed (503)
            problem = entry_problem(e)
            if problem:
                raise ValueError(f"the entry for '{shown(str(e.name))}' is damaged: {problem}")
        return entries
    except FileNotFoundError:
        return ()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TokenError(f"{path} cannot be read ({type(exc).__name__}: {exc}); fix or remove it"
                         " (then re-create the tokens with `oracle token add`)") from None


DB_TOKENS_SECONDS = 1.0  # how long an engine trusts the token table it read: a revocation reaches it within this
IMPORTED_SUFFIX = ".imported-to-database"
OFFLINE_COPY = "named_tokens.last.json"  # the team's token table as last read: what an engine uses in an outage


class PgTokenStore(TokenStore):
    """The named tokens of a team store: the same entries, checks and commands as TokenStore, kept in PostgreSQL
    so every engine on every machine shares them."""

    def __init__(self, url: str, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.url = url
        self._db: TokenTable | None = None
        self._tried = -1e9
        self._read_at = -1e9
        self._entries: tuple[TokenEntry, ...] = ()
        self._known = False  # the entries were read from the database (or its last copy) at least once
        self.offline = data_dir / OFFLINE_COPY
        self._warned: set[str] = set()  # the damaged rows already warned of (the table is re-read every second)
        self._connect(raising=False)  # a database that cannot be reached: the last copy answers (issue 38, item 3)

    def _connect(self, raising: bool = True) -> TokenTable | None:
        """The table, opened (and the schema migrated) on first use; None while the server cannot be reached
        (asked again at most once per DB_TOKENS_SECONDS), unless `raising`."""
        if self._db is not None:
            return self._db
        if not raising and time.monotonic() - self._tried < DB_TOKENS_SECONDS:
            return None
        from oracle_indexer.store.backends import open_token_table

        self._tried = time.monotonic()
        try:
            self._db = open_token_table(self.url)
        except DatabaseUnavailable:
            if raising:
                raise
            return None
        return self._db

    @property
    def db(self) -> TokenTable:  # `oracle token add|revoke|list` need the database itself
        table = self._connect()
        assert table is not None  # raising: an unreachable database raised
        return table

    def close(self) -> None:
        if self._db is not None:
            self._db.release()

    @contextmanager
    def watching(self) -> Iterator[None]:
        """While a server runs, the table is re-read every DB_TOKENS_SECONDS whether requests come or not. Read only
        when a request came, an engine idle while a token was revoked still held that token's row when the database
        went away, and in the outage answered from that read: the revoked token worked again. Now the last good read
        is at most a second older than the outage, and in it only the tokens that read confirmed are accepted."""
        stop = threading.Event()
        thread = threading.Thread(target=self._reread_until, args=(stop,), name="oracle-token-table", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(DB_TOKENS_SECONDS)  # a read in progress in an outage may take a probe's 2 s: not waited out

    def _reread_until(self, stop: threading.Event) -> None:
        while not stop.wait(DB_TOKENS_SECONDS / 2):
            with self._cache_lock:
                self._read_at = -1e9  # due now
            try:
                self.entries()
            except Exception:  # noqa: BLE001 - a damaged tokens.json, a broken store: each request says so (503)
                continue

    def _import_file(self) -> None:
        """tokens.json of this data dir (from before tokens lived in the database), brought in once. Looked for
        at every read (a stat): one that cannot be parsed is a TokenError at every request (503), as it is
        without the team store, until it is fixed or removed; never "no tokens"."""
        if not self.path.exists():
            return
        entries = TokenStore._read(self)
        self.db.insert_missing([(e.name, e.access, e.salt, e.digest, e.created) for e in entries])
        os.replace(self.path, self.path.with_name(self.path.name + IMPORTED_SUFFIX))

    def entries(self) -> tuple[TokenEntry, ...]:
        """The team's tokens, re-read at most once per DB_TOKENS_SECONDS. While the database cannot be reached,
        the last table this data dir read (kept in OFFLINE_COPY: salts and digests, as the table holds them)
        answers, so an engine serving its working copy keeps its callers; a revocation made meanwhile reaches it
        when the database is back. A data dir that never read the table knows no tokens then."""
        with self._cache_lock:
            if time.monotonic() - self._read_at < DB_TOKENS_SECONDS:
                return self._entries
        try:
            if self._connect(raising=False) is None:
                raise DatabaseUnavailable("not connected")
            self._import_file()
            entries = self._read()
        except DatabaseUnavailable:
            return self._last_copy()
        with self._cache_lock:
            changed = entries != self._entries or not self._known
            self._entries, self._read_at, self._known = entries, time.monotonic(), True
        if changed:
            self._keep_copy(entries)
        return entries

    def _keep_copy(self, entries: tuple[TokenEntry, ...]) -> None:
        private_dir(self.offline.parent)
        body = {"version": 1, "tokens": [e.__dict__ for e in sorted(entries, key=lambda e: e.name)]}
        write_atomic(self.offline, json.dumps(body, indent=2) + "\n", PRIVATE, refuse_symlink=True, fsync=True)

    def _last_copy(self) -> tuple[TokenEntry, ...]:
        if self._known:
            return self._entries
        if not self.offline.exists():
            return ()
        entries = _entries_in(self.offline)  # the copy has tokens.json's format
        with self._cache_lock:
            self._entries, self._known = entries, True
        return entries

    def _read(self) -> tuple[TokenEntry, ...]:
        """The table's usable rows. Anyone with the team URL can write a row, and one that cannot be decoded made
        every authenticated request on every engine a 500: such a row is skipped with a warning (once per process)
        and its token refused; `oracle token list` names it, `oracle token revoke NAME` removes it."""
        good = []
        for row in self.db.rows():
            entry = TokenEntry(*row)  # type: ignore[arg-type]
            problem = entry_problem(entry)
            if problem is None:
                good.append(entry)
                continue
            warning = f"a row of named_tokens is skipped (its token refused): '{shown(str(entry.name))}': {problem}"
            if warning not in self._warned:
                self._warned.add(warning)
                print(f"oracle: {warning}; remove it with `oracle token revoke NAME`", file=sys.stderr, flush=True)
        return tuple(good)

    def add(self, name: str, access: Access, now: dt.datetime | None = None) -> str:
        self._import_file()
        token, entry = _new_token(name, access, now)
        if not self.db.insert((entry.name, entry.access, entry.salt, entry.digest, entry.created)):
            raise _exists(name)
        self._read_at = -1e9
        return token

    def revoke(self, name: str) -> TokenEntry:
        self._import_file()
        row = self.db.delete(name)
        self._read_at = -1e9
        if row is None:
            known = ", ".join(e.name for e in self._read()) or "none"
            raise TokenMissing(f"no token is named {name!r} (tokens: {known})")
        return TokenEntry(*row)  # type: ignore[arg-type]

    @property
    def where(self) -> str:
        if self._db is not None:
            return self._db.where
        return f"the team store {self.url.split('@')[-1]} (table named_tokens)"  # never the password


def token_store(database_url: str | None, data_dir: Path) -> TokenStore:
    """The team's tokens: in the PostgreSQL store when there is one (shared by every engine), else tokens.json in
    the data dir."""
    if database_url:
        return PgTokenStore(database_url, data_dir)
    return TokenStore(data_dir)
