"""Where a folder's notes are sent: chosen by the user, never by the folder.

A cloned repository's `oracle.toml` is the folder's, not the user's. Before issue 45 its `[database] url` sent
the folder, the agent's learnings and its logged queries to whatever PostgreSQL it named, silently. Now the
database comes from the user only:
- `ORACLE_DATABASE_URL` (the environment, or the MCP client's config the user wrote), or the command line;
- oracle.toml's `[database] url` only once the user allowed that URL for that root (`oracle database allow`),
  an answer recorded in the data dir (which the user chooses: ORACLE_DATABASE_DIR / the default per root, never
  the folder). The record keeps a digest of the URL, never the URL or its password; a different URL, or the same
  file in another root, asks again.
Until then the folder is served from the embedded store, and a notice (start-up, stats, `oracle database
status`) names the host the file asks for and the command that allows it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ALLOWED_FILE = "database-allowed.json"  # in the data dir: {"allowed": [{"root", "url_sha256", "at"}]}


@dataclass(frozen=True)
class DatabaseChoice:
    """The URL to use (None: the embedded store), where it came from, and what to tell the user."""

    url: str | None
    origin: str | None  # "ORACLE_DATABASE_URL", "the command line", "oracle.toml (allowed)"
    notice: str | None = None  # oracle.toml names a database the user has not allowed


def where(url: str) -> str:
    """`host:port/database` of a PostgreSQL URL, never its user or password (for lines people read)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "an unreadable URL"
    name = parts.path.lstrip("/") or "(default database)"
    query = "?" + parts.query.split("&")[0] if parts.query.startswith("host=") else ""  # a Unix socket's folder
    return f"{host}{port}/{name}{query}"


def _digest(root: Path, url: str) -> str:
    return hashlib.sha256(f"{root}\n{url}".encode()).hexdigest()


def _records(data_dir: Path) -> list[dict]:
    try:
        body = json.loads((data_dir / ALLOWED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    allowed = body.get("allowed") if isinstance(body, dict) else None
    return [r for r in allowed if isinstance(r, dict)] if isinstance(allowed, list) else []


def is_allowed(data_dir: Path, root: Path, url: str) -> bool:
    """Whether the user allowed `url` for `root` (`allow`)."""
    digest = _digest(root, url)
    return any(r.get("url_sha256") == digest for r in _records(data_dir))


def allow(data_dir: Path, root: Path, url: str) -> None:
    """Record that the user lets `root`'s oracle.toml send its notes to `url`."""
    from oracle_indexer.safe_write import PRIVATE, PRIVATE_DIR, write_atomic

    if is_allowed(data_dir, root, url):
        return
    records = _records(data_dir)
    records.append({"root": str(root), "database": where(url), "url_sha256": _digest(root, url),
                    "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
    data_dir.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    write_atomic(data_dir / ALLOWED_FILE, json.dumps({"allowed": records}, indent=2) + "\n", PRIVATE,
                 refuse_symlink=True)


def choose(given: str | None, given_origin: str, named: str | None, root: Path, data_dir: Path) -> DatabaseChoice:
    """The database for this root: `given` (environment or command line) wins; oracle.toml's `named` URL only
    where the user allowed it."""
    if given:
        return DatabaseChoice(given, given_origin)
    if not named:
        return DatabaseChoice(None, None)
    if is_allowed(data_dir, root, named):
        return DatabaseChoice(named, "oracle.toml (allowed)")
    return DatabaseChoice(None, None, notice=(
        f"oracle.toml in {root} names a team database at {where(named)}; it is not used (a folder does not choose"
        " where its notes are sent): run `oracle database allow` to send this folder's notes there, or set"
        " ORACLE_DATABASE_URL"))
