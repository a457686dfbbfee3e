"""The `oracle` command: a thin adapter over the service layer (no logic of its own)."""

from __future__ import annotations

import argparse
import json
import re
import sys

from pydantic import ValidationError

from indexer.config import ConfigError, Settings
from indexer.sync import SyncRefused, print_progress
from server.app import Oracle, ServerConfigError
from server.models import SearchRequest
from server.learn import LearnError
from server.query import QueryError


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _safe(text: object) -> str:
    """Note text as a terminal may print it: control characters (escape sequences that retitle the window
    or clear the screen, bidi overrides) shown as `\\x1b`-style escapes; newlines and tabs kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        str(text))


def _dump(data: object) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False))


def cmd_index(oracle: Oracle, args: argparse.Namespace) -> int:
    report = oracle.indexer.sync(full=args.full, force=args.force, progress=print_progress)
    if args.json:
        _dump(report.as_dict())
        return 0
    print(report.summary())
    for rel, reason in report.skipped.items():
        print(_safe(f"skipped {rel}: {reason}"))
    if report.unmapped:
        folders = ", ".join(f"{k}/ ({v})" for k, v in report.unmapped.items())
        print(f"not indexed, folder has no type: {folders}; map them with ORACLE_FOLDER_TYPES=folder=learning,...")
    for warning in report.warnings:
        print(_safe(f"warning: {warning}"), file=sys.stderr)
    return 0


def cmd_search(oracle: Oracle, args: argparse.Namespace) -> int:
    request = SearchRequest(
        query=" ".join(args.query),
        type=args.type,
        limit=args.limit,
        offset=args.offset,
        mode=args.mode,
        concepts=args.concepts or [],
        project=args.project,
        unit=args.unit,
        group_by_file=args.group_by_file,
        date_from=args.date_from,
        date_to=args.date_to,
        fusion=args.fusion,
    )
    from server.search import search

    result = search(oracle, request)
    if args.json:
        _dump(result.model_dump())
        return 0
    for warning in result.meta.warnings:
        print(_safe(f"warning: {warning}"), file=sys.stderr)
    unit = "notes" if result.meta.unit == "note" else "sections"
    print(f"{result.total} {unit} ({result.meta.mode}, {result.meta.took_ms} ms)")
    for n, hit in enumerate(result.hits, start=result.offset + 1):
        where = f"{hit.source_file}:{hit.line_start}-{hit.line_end}"
        heading = f" › {hit.heading}" if hit.heading else ""
        weak = ", weak match" if hit.weak else ""
        print(_safe(f"\n{n}. [{hit.type}] {hit.title}{heading}  ({hit.score:.4f}, {'+'.join(hit.found_by)}{weak})"))
        print(_safe(f"   {where}  id={hit.id}"))
        print(_safe(f"   {hit.snippet}"))
        for section in hit.sections[:5]:
            print(_safe(f"   also: {section.heading or '(intro)'}  :{section.line_start}-{section.line_end}  id={section.id}"))
        for duplicate in hit.duplicates:
            print(_safe(f"   same content: {duplicate.source_file}"))
    return 0


def cmd_stats(oracle: Oracle, args: argparse.Namespace) -> int:
    from server.stats import stats

    data = stats(oracle)
    if args.json:
        _dump(data.model_dump())
        return 0
    docs, emb, drift = data.documents, data.embeddings, data.drift
    print(f"root: {data.root}\nindex: {data.data_dir}")
    print(f"files: {data.files.total}  chunks: {docs.total}  " + "  ".join(f"{k}: {v}" for k, v in docs.by_type.items()))
    print(f"concepts: {data.concepts}  last indexed: {data.last_indexed}")
    print(f"embeddings: {emb.embedded_chunks}/{docs.total} ({emb.coverage:.1%})  vector store: "
          f"{'ok' if data.vector_store.ok else 'DOWN'} ({data.vector_store.detail})")
    print("drift: none" if drift.in_sync else
          f"drift: {drift.not_indexed_count} not indexed, {drift.changed_since_index_count} changed,"
          f" {drift.vanished_count} vanished (run `oracle index`)")
    if data.files.skipped:
        print(f"skipped files: {len(data.files.skipped)} (see `oracle stats --json`)")
    usage = data.usage
    print(f"usage: {usage.searches} searches (p50 {usage.search_p50_ms} ms, p95 {usage.search_p95_ms} ms),"
          f" {usage.consultations} consultations, {usage.learnings} learnings")
    return 0


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
    _exit_on_sigterm()
    if not args.no_index:
        _background_start(oracle, warm_delay=1.0, watch=not args.no_watch)
    if args.http:
        from server.http import serve_http

        port = args.port or oracle.settings.port
        print(f"oracle: dashboard http://{args.host}:{port}/  MCP http://{args.host}:{port}/mcp", file=sys.stderr)
        serve_http(oracle, host=args.host, port=port)
        return 0
    from server.mcp_server import build_server

    build_server(oracle).run("stdio")
    return 0


def cmd_consult(oracle: Oracle, args: argparse.Namespace) -> int:
    from server.consult import consult
    from server.models import ConsultRequest

    result = consult(oracle, ConsultRequest(decision=" ".join(args.decision), context=args.context,
                                            budget_tokens=args.budget_tokens))
    if args.json:
        _dump(result.model_dump())
    else:
        print(_safe(result.guidance))
    return 0


def cmd_learn(oracle: Oracle, args: argparse.Namespace) -> int:
    from server.learn import learn
    from server.models import LearnRequest

    pattern = sys.stdin.read() if args.pattern == "-" else args.pattern
    result = learn(oracle, LearnRequest(pattern=pattern, title=args.title, concepts=args.concepts or [],
                                        source=args.source, project=args.project))
    if args.json:
        _dump(result.model_dump())
        return 0
    print(_safe(f"saved {result.file} (id {result.id}, embedded: {result.embedded})"))
    for dup in result.near_duplicates:
        print(_safe(f"similar: {dup.title} ({dup.source_file}, similarity {dup.similarity:.2f})"))
    for warning in result.warnings:
        print(_safe(f"warning: {warning}"), file=sys.stderr)
    return 0


def cmd_watch(oracle: Oracle, args: argparse.Namespace) -> int:
    import time

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
    sub = parser.add_subparsers(dest="command", required=True)

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
    try:
        settings = Settings.from_env(root=args.root, data_dir=args.data_dir)
        oracle = Oracle.open(settings)
    except ConfigError as exc:
        print(f"oracle: configuration error: {exc}", file=sys.stderr)
        return 2
    try:
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
