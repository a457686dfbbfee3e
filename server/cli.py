"""The `oracle` command: a thin adapter over the service layer (no logic of its own).

search, consult, learn and stats go to a running `oracle serve --http` for the same root when there is one
(server/remote.py: milliseconds instead of seconds, since the model is already loaded there), and run in
this process otherwise; both give the same JSON, printed by the same renderers (server/render.py). Heavy
imports happen only on the in-process path.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from indexer import locate
from server import remote, render

if TYPE_CHECKING:  # the fast path must not import the service layer (~0.1 s) to find a running server
    from indexer.config import Settings
    from server.app import Oracle

Renderer = Callable[[dict], tuple[list[str], list[str]]]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _safe(text: object) -> str:
    """Note text as a terminal may print it: control characters (escape sequences that retitle the window
    or clear the screen, bidi overrides) shown as `\\x1b`-style escapes; newlines and tabs kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        str(text))


def _dump(data: object) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False))


def emit(args: argparse.Namespace, data: dict, renderer: Renderer) -> int:
    """Print a result: its JSON with --json, else the renderer's lines (warnings to stderr)."""
    if getattr(args, "json", False):
        _dump(data)
        return 0
    out, err = renderer(data)
    for line in err:
        print(_safe(line), file=sys.stderr)
    if out:
        print(_safe("\n".join(out)))
    return 0


def _split(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


# -- what each command asks: the same request in-process or over HTTP --------------------------------
def search_params(args: argparse.Namespace) -> dict:
    return {"query": " ".join(args.query), "type": args.type, "limit": args.limit, "offset": args.offset,
            "mode": args.mode, "concepts": _split(args.concepts), "project": args.project, "unit": args.unit,
            "group_by_file": args.group_by_file, "date_from": args.date_from, "date_to": args.date_to,
            "fusion": args.fusion}


def consult_params(args: argparse.Namespace) -> dict:
    return {"decision": " ".join(args.decision), "context": args.context, "budget_tokens": args.budget_tokens}


def learn_body(args: argparse.Namespace) -> dict:
    if not hasattr(args, "_pattern"):
        args._pattern = sys.stdin.read() if args.pattern == "-" else args.pattern
    body = {"pattern": args._pattern, "title": args.title, "concepts": _split(args.concepts),
            "source": args.source, "project": args.project}
    return {k: v for k, v in body.items() if v is not None}


def _remote_request(args: argparse.Namespace) -> tuple[str, str, dict | None, dict | None] | None:
    """(method, path, query params, JSON body) for a command a server can answer, else None."""
    if args.command == "search":
        params = search_params(args)
        params["concepts"] = ",".join(params["concepts"]) or None
        if params["group_by_file"] is not None:
            params["group_by_file"] = "true" if params["group_by_file"] else "false"
        return "GET", "/api/search", params, None
    if args.command == "consult":
        return "GET", "/api/consult", consult_params(args), None
    if args.command == "stats":
        return "GET", "/api/stats", None, None
    if args.command == "learn":
        return "POST", "/api/learn", None, learn_body(args)
    return None


RENDERERS: dict[str, Renderer] = {"search": render.search, "consult": render.consult, "learn": render.learn,
                                  "stats": render.stats, "index": render.index}


def try_remote(args: argparse.Namespace) -> int | None:
    """Answer through a running server for this root; None when there is none (or it does not answer).

    The root and data dir come from `indexer.locate`, the same functions Settings uses, so nothing heavy is
    imported before the answer is printed. (oracle.toml is the server's to read: it already has.)"""
    request = None if args.local else _remote_request(args)
    if request is None:
        return None
    root = locate.resolve_root(args.root)
    endpoint = remote.find(locate.resolve_data_dir(args.data_dir, root), root)
    if endpoint is None:
        return None
    method, path, params, body = request
    try:
        data = remote.call(endpoint, method, path, params=params, body=body)
    except remote.RemoteUnavailable:
        return None
    except remote.RemoteError as exc:
        print(f"oracle: {exc}", file=sys.stderr)
        return 2
    return emit(args, data, RENDERERS[args.command])


# -- in-process commands --------------------------------------------------------------------------------
def cmd_index(oracle: Oracle, args: argparse.Namespace) -> int:
    from indexer.sync import print_progress

    report = oracle.indexer.sync(full=args.full, force=args.force, progress=print_progress)
    return emit(args, report.as_dict(), render.index)


def cmd_search(oracle: Oracle, args: argparse.Namespace) -> int:
    from server.models import SearchRequest
    from server.search import search

    result = search(oracle, SearchRequest(**search_params(args)))
    return emit(args, result.model_dump(), render.search)


def cmd_stats(oracle: Oracle, args: argparse.Namespace) -> int:
    from server.stats import stats

    return emit(args, stats(oracle).model_dump(), render.stats)


def _start_watcher(oracle: Oracle, verbose: bool = False):
    from indexer.watch import Watcher

    def report(result) -> None:
        if verbose and (result.added or result.changed or result.removed or result.skipped):
            print(result.summary(), flush=True)

    return Watcher(oracle.indexer, on_batch=report).start()


def _background_start(oracle: Oracle, warm_delay: float, watch: bool) -> None:
    """Bring the index up to date and load the model off the request path.

    Tool calls wait (oracle.ready) until the keyword index is complete; `tools/list` does not. The
    model loads after a short delay so that it does not compete with the server's own start-up.
    """
    import threading
    import time

    from indexer import segment

    oracle.ready.clear()

    def work() -> None:
        try:
            oracle.indexer.sync(keyword_ready=oracle.ready.set, vectors=False)
        except Exception as exc:  # the server keeps serving what is indexed
            print(f"oracle: background index failed: {exc}", file=sys.stderr)
        finally:
            oracle.ready.set()
        if watch:
            _start_watcher(oracle)
        time.sleep(warm_delay)
        try:
            if oracle.store.has_thai():  # the first Thai query would otherwise wait ~1 s for the dictionary
                segment.warm()
        except Exception as exc:
            print(f"oracle: Thai word segmenter unavailable: {exc}", file=sys.stderr)
        try:
            oracle.embedder.warm()
            for warning in oracle.indexer.flush_vectors().warnings:
                print(f"oracle: {warning}", file=sys.stderr)
        except Exception as exc:
            print(f"oracle: embedding model unavailable, keyword search only: {exc}", file=sys.stderr)

    threading.Thread(target=work, name="oracle-startup", daemon=True).start()


def _exit_on_sigterm() -> None:
    """SIGTERM (a service manager, a test harness) ends the server like Ctrl-C: through `main`'s finally,
    which closes the Oracle and so writes the queued search and consult logs. uvicorn re-raises the signal
    after its own graceful shutdown; without this handler the default action would kill the process there."""
    import signal

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))


def cmd_serve(oracle: Oracle, args: argparse.Namespace) -> int:
    """The start-up sync runs in the background once the server's modules are imported: started earlier,
    it competed with those imports for the interpreter and delayed the first `tools/list`."""
    _exit_on_sigterm()
    if args.http:
        from server.http import serve_http

        if not args.no_index:
            _background_start(oracle, warm_delay=1.0, watch=not args.no_watch)
        port = args.port or oracle.settings.port
        print(f"oracle: dashboard http://{args.host}:{port}/  MCP http://{args.host}:{port}/mcp", file=sys.stderr)
        # `_exit_on_sigterm` makes SIGTERM run `finally`, so the record goes with the server.
        remote.record(oracle.settings.data_dir, oracle.settings.root, args.host, port)  # the CLI's fast path
        try:
            serve_http(oracle, host=args.host, port=port)
        finally:
            remote.forget(oracle.settings.data_dir)
        return 0
    from server import stdio_front

    front = getattr(args, "stdio_front", None)  # answering the handshake since `main` started it
    from server.mcp_server import INSTRUCTIONS, build_server

    server = build_server(oracle)
    if not args.no_index:
        _background_start(oracle, warm_delay=1.0, watch=not args.no_watch)
    if front is None:
        server.run("stdio")
    else:
        stdio_front.serve(server, front, INSTRUCTIONS)
    return 0


def cmd_consult(oracle: Oracle, args: argparse.Namespace) -> int:
    from server.consult import consult
    from server.models import ConsultRequest

    result = consult(oracle, ConsultRequest(**consult_params(args)))
    return emit(args, result.model_dump(), render.consult)


def cmd_learn(oracle: Oracle, args: argparse.Namespace) -> int:
    from server.learn import learn
    from server.models import LearnRequest

    result = learn(oracle, LearnRequest(**learn_body(args)))
    return emit(args, result.model_dump(), render.learn)


def cmd_init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from indexer.config import ConfigError
    from server.init import InitError, init

    path = Path(args.path or args.root or ".")
    try:
        _, lines = init(path, force=args.force)
    except (InitError, ConfigError, OSError) as exc:
        print(f"oracle: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


def cmd_watch(oracle: Oracle, args: argparse.Namespace) -> int:
    import time

    from indexer.sync import print_progress

    print(oracle.indexer.sync(progress=print_progress).summary(), flush=True)
    watcher = _start_watcher(oracle, verbose=True)
    print(f"watching {oracle.settings.root} (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oracle", description="Searchable agent memory made of plain markdown.")
    parser.add_argument("--root", help="knowledge root (default: ORACLE_ROOT or the bundled knowledge/)")
    parser.add_argument("--data-dir", help="where the index lives (default: ORACLE_DATA_DIR)")
    parser.add_argument("--local", action="store_true",
                        help="answer in this process even when an `oracle serve --http` for this root runs")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("init", help="look at a folder of markdown and write an oracle.toml for it")
    p.add_argument("path", nargs="?", help="the knowledge root (default: --root, else the current folder)")
    p.add_argument("--force", action="store_true", help="replace an existing oracle.toml")
    p.set_defaults(func=None)

    p = sub.add_parser("index", help="bring the index in step with the markdown files")
    p.add_argument("--full", action="store_true", help="rebuild from scratch (embeddings still come from the cache)")
    p.add_argument("--force", action="store_true", help="allow removing more than half of the indexed files")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("search", help="hybrid search over the knowledge base")
    p.add_argument("query", nargs="+")
    p.add_argument("--type", default="all", choices=["all", "principle", "learning", "retro"])
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--mode", default="hybrid", choices=["hybrid", "fts", "vector"])
    p.add_argument("--fusion", choices=["rrf", "weighted"])
    p.add_argument("--concepts", help="comma-separated; hits carrying any of them")
    p.add_argument("--project")
    p.add_argument("--unit", choices=["note", "section"], help="note (default): one hit per note; section: every section")
    p.add_argument("--group-by-file", action="store_true", default=None, help="older name for --unit note")
    p.add_argument("--date-from", help="YYYY-MM-DD")
    p.add_argument("--date-to", help="YYYY-MM-DD")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("serve", help="MCP server over stdio (default) or streamable HTTP (--http)")
    p.add_argument("--http", action="store_true", help="serve MCP at /mcp over HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, help="default: ORACLE_PORT or 37778")
    p.add_argument("--no-index", action="store_true", help="do not sync the index at start-up (nor watch)")
    p.add_argument("--no-watch", action="store_true", help="do not watch the knowledge root for changes")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("consult", help="guidance from principles and learnings for a decision")
    p.add_argument("decision", nargs="+")
    p.add_argument("--context")
    p.add_argument("--budget-tokens", type=int, default=1200)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_consult)

    p = sub.add_parser("learn", help="save a new learning (markdown) and index it")
    p.add_argument("pattern", help="the learning text, or - to read it from stdin")
    p.add_argument("--title")
    p.add_argument("--concepts", help="comma-separated")
    p.add_argument("--source")
    p.add_argument("--project")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_learn)

    p = sub.add_parser("watch", help="index, then keep the index in step with file changes")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("stats", help="what is indexed and whether the index is healthy")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stats)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "init":
        return cmd_init(args)
    answered = try_remote(args)
    if answered is not None:
        return answered
    from indexer.config import ConfigError, Settings

    try:
        settings = Settings.from_env(root=args.root, data_dir=args.data_dir)
    except ConfigError as exc:
        print(f"oracle: configuration error: {exc}", file=sys.stderr)
        return 2
    if args.func is cmd_serve and not args.http:
        from server import stdio_front

        args.stdio_front = stdio_front.start(settings) if stdio_front.enabled() else None
    return run_local(args, settings)


def run_local(args: argparse.Namespace, settings: Settings) -> int:
    from server.app import Oracle, ServerConfigError

    oracle = Oracle.open(settings)
    if getattr(args, "stdio_front", None) is not None:  # `oracle serve`: the handshake can be answered now
        from server import stdio_front

        stdio_front.attach(args.stdio_front, oracle)
    try:
        from pydantic import ValidationError

        from indexer.sync import SyncRefused
        from server.learn import LearnError
        from server.query import QueryError

        return args.func(oracle, args)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())
        print(f"oracle: invalid input: {problems}", file=sys.stderr)
        return 2
    except (QueryError, SyncRefused, FileNotFoundError, LearnError, ServerConfigError) as exc:
        print(f"oracle: {exc}", file=sys.stderr)
        return 2
    finally:
        oracle.close()


if __name__ == "__main__":
    sys.exit(main())
