"""The `oracle` command: a thin adapter over the service layer (no logic of its own).

search, consult, learn and stats go to a running `oracle serve --http` for the same root when there is one
(server/cli/remote.py: milliseconds instead of seconds, since the model is already loaded there), and run in
this process otherwise; both give the same JSON, printed by the same renderers (server/registry/render.py). Heavy
imports happen only on the in-process path.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from oracle_indexer import locate
from oracle_server.cli import remote
from oracle_server.cli import spec as clispec
from oracle_server.registry import render

if TYPE_CHECKING:  # the fast path must not import the service layer (~0.1 s) to find a running server
    from oracle_indexer.config import Settings
    from oracle_server.services.capabilities.team import TokenStore
    from oracle_server.services.runtime.app import Oracle

Renderer = Callable[[dict], tuple[list[str], list[str]]]


def _safe(text: object) -> str:
    """Note text as a terminal may print it: control characters (escape sequences that retitle the window
    or clear the screen, bidi overrides) shown as `\\x1b`-style escapes; newlines and tabs kept. Names in it
    (files, authors) were escaped by the renderers, newlines included (render.printable)."""
    return render.printable(text, lines=True)


# json.dumps escapes C0 controls but writes DEL, the C1 controls (U+0080-U+009F: U+009B is a terminal's CSI, as
# ESC [ is) and bidi overrides raw; outside the ASCII structure of JSON they can only sit inside strings, where a
# \uXXXX escape is the same character to any JSON reader.
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _dump(data: object) -> None:
    """`--json`: readable non-ASCII text, and nothing a terminal would act on (issue 26)."""
    text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False)
    print(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


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


# -- commands generated from the registry (server/registry/tools.py via server/cli/spec.py) ---------------------------
RENDERERS: dict[str, Renderer] = {"search": render.search, "consult": render.consult, "learn": render.learn,
                                  "stats": render.stats, "index": render.index}


def tool_values(args: argparse.Namespace, spec: dict) -> dict:
    """The request's fields as given on the command line (absent ones left to the model's defaults)."""
    values: dict = {}
    if spec["words"] and getattr(args, spec["words"], None):
        if not hasattr(args, "_words"):  # stdin is read once, even when the server path falls back to local
            words = " ".join(getattr(args, spec["words"]))
            args._words = sys.stdin.read() if spec["stdin"] and words == "-" else words
        values[spec["words"]] = args._words
    for option in spec["options"]:
        value = getattr(args, option["field"], None)
        if value is not None:
            values[option["field"]] = value
    return values


def _query_value(value: object) -> object:
    return ("true" if value else "false") if isinstance(value, bool) else value


def _remote_request(args: argparse.Namespace, specs: dict) -> tuple[str, str, dict | None, dict | None] | None:
    """(method, path, query params, JSON body) for a command a server can answer, else None."""
    spec = specs.get(args.command)
    if spec is None:
        return None
    values = tool_values(args, spec)
    if spec["method"] == "GET":
        return "GET", spec["path"], {k: _query_value(v) for k, v in values.items()}, None
    return spec["method"], spec["path"], None, values


def _print_error(kind_code: int, message: str) -> int:
    print(f"oracle: {render.printable(message)}", file=sys.stderr)  # one line, whatever file name it holds
    return kind_code


def try_remote(args: argparse.Namespace, specs: dict) -> int | None:
    """Answer through a running server for this root; None when there is none (or it does not answer).

    The root and data dir come from `oracle_indexer.locate`, the same functions Settings uses, so nothing heavy is
    imported before the answer is printed. (oracle.toml is the server's to read: it already has.)"""
    if args.local or (args.command not in specs and args.command != "index"):
        return None
    root = locate.resolve_root(args.root)
    data_dir = locate.resolve_data_dir(args.data_dir, root)
    answered = try_engine(args, specs, root, data_dir)
    if answered is not None:
        return answered
    request = _remote_request(args, specs)
    if request is None:
        return None
    endpoint = remote.find(data_dir, root)
    if endpoint is None:
        return None
    method, path, params, body = request
    try:
        data = remote.call(endpoint, method, path, params=params, body=body)
    except remote.RemoteUnavailable:
        return None
    except remote.RemoteError as exc:
        from oracle_server.services.vocabulary.errors import EXIT_CODE, kind_of_status

        return _print_error(EXIT_CODE[kind_of_status(exc.status)], str(exc))
    return emit(args, data, lambda data: _renderer(args.command, specs)(data))  # imported for text output only


def engine_request(args: argparse.Namespace, specs: dict) -> dict | None:
    """What an engine is asked for this command: a registry tool with its arguments, or `oracle index` (a sync by
    the engine, which holds the writer lock: `--full` rebuilds in this process, with its progress bar)."""
    if args.command == "index":
        return None if args.full else {"command": "index", "force": bool(args.force)}
    spec = specs.get(args.command)
    return None if spec is None else {"tool": spec["tool"], "arguments": tool_values(args, spec)}


def try_engine(args: argparse.Namespace, specs: dict, root: str, data_dir: str) -> int | None:
    """Answer through a running engine for this root, data dir and settings (server/engine/process.py) over its private
    socket, after both sides proved the engine's secret; None when there is none. The CLI never starts one.

    The engine sends the tool's text with its result, so the text is printed without importing the registry
    (pydantic models of every service: 1-3 s on a busy machine, most of what `oracle list` cost)."""
    from oracle_server.engine import channel

    request = engine_request(args, specs)
    if request is None:
        return None
    folder = channel.runtime_dir()
    settings = channel.settings_digest()
    for info in channel.records(folder):
        if (info.get("root"), info.get("data_dir"), info.get("settings")) != (root, data_dir, settings):
            continue
        try:
            line, _hello = channel.connect(channel.Paths(folder, str(info["key"])), "call")
        except (channel.ChannelError, OSError):
            continue
        with line.sock:
            try:
                line.sock.settimeout(300)
                line.send_json(request)
                answer = json.loads(line.readline() or b"{}")
            except (OSError, ValueError):
                continue
        if "result" in answer:
            text = answer.get("text")
            if args.command not in RENDERERS and isinstance(text, str) and not getattr(args, "json", False):
                print(_safe(text))
                return 0
            return emit(args, answer["result"], lambda data: _renderer(args.command, specs)(data))
        if "error" in answer:
            return _print_error(int(answer.get("exit_code") or 1), str(answer["error"]))
    return None


def _renderer(command: str, specs: dict) -> Renderer:
    """The CLI's own renderer for a command, else the tool's text (the MCP tool's text content)."""
    if command in RENDERERS:
        return RENDERERS[command]
    from oracle_server.registry.tools import BY_NAME

    tool = BY_NAME[specs[command]["tool"]]

    def as_text(data: dict) -> tuple[list[str], list[str]]:
        request = tool.request.model_construct(**{k: v for k, v in data.items() if k in tool.request.model_fields})
        return [tool.text(request, tool.result.model_validate(data))], []

    return as_text


def run_tool(oracle: Oracle, args: argparse.Namespace, spec: dict) -> int:
    """A registry command in this process: the same validation and service as MCP and HTTP."""
    from oracle_server.registry.tools import BY_NAME, Caller

    tool = BY_NAME[spec["tool"]]
    request = getattr(args, "request", None) or tool.parse(tool_values(args, spec))  # parsed before the index opened
    result = tool.call(oracle, request, Caller("cli", "cli"))
    if args.command in RENDERERS or getattr(args, "json", False):
        return emit(args, tool.dump(request, result, "cli"), RENDERERS.get(args.command, _no_renderer))
    print(_safe(tool.text_of(oracle, request, result)))
    return 0


def _no_renderer(data: dict) -> tuple[list[str], list[str]]:
    raise AssertionError("only --json output reaches here")


# -- in-process commands --------------------------------------------------------------------------------
def cmd_index(oracle: Oracle, args: argparse.Namespace) -> int:
    from oracle_indexer.progress import Progress

    bar = Progress()
    waiting = getattr(args, "waiting", None)

    def progress(phase: str, done: int, total: int) -> None:
        if waiting is not None:
            waiting.progress(phase, done, total)
        bar(phase, done, total)

    from oracle_server.services.capabilities.indexing import index

    report = index(oracle, full=args.full, force=args.force, progress=progress)
    return emit(args, report.as_dict(), render.index)


WARM_DELAY = 1.0  # seconds before a server loads its models, so that they do not compete with its start-up


_CLOSING = False  # set once `run_local` closes the Oracle: a SIGTERM then lets the close finish


def _on_sigterm(signum: int, frame: object) -> None:
    if not _CLOSING:
        sys.exit(0)


def _exit_on_sigterm() -> None:
    """SIGTERM (a service manager, a test harness) ends the server like Ctrl-C: through `main`'s finally,
    which closes the Oracle and so writes the queued search and consult logs. uvicorn re-raises the signal
    after its own graceful shutdown; without this handler the default action would kill the process there.
    Once the close has begun, a SIGTERM is ignored: raised inside it, SystemExit cut the close short and the
    queued logs were lost (a stdio client closes stdin, then sends SIGTERM 2 s later)."""
    import signal

    signal.signal(signal.SIGTERM, _on_sigterm)


def cmd_serve(oracle: Oracle, args: argparse.Namespace) -> int:
    """The maintenance worker (Oracle.start) starts once the server's modules are imported: started earlier,
    its initial sync competed with those imports for the interpreter and delayed the first `tools/list`. Over
    stdio it is also held until the client has its tools (the front's `handshake_done`): the index check and
    the sync read the whole base, which for a big new root takes minutes.
    `--no-index` leaves out the initial sync and the watcher; the worker still writes the usage logs and
    keeps the vector store healthy. `run_local`'s `finally` closes the Oracle, which joins the worker."""
    _exit_on_sigterm()
    if args.http:
        from oracle_server.http.app import PortInUse, bind, serve_http

        port = args.port or oracle.settings.port
        try:
            sock = bind(args.host, port)
        except PortInUse as exc:
            print(f"oracle: {exc}", file=sys.stderr)
            return 1
        oracle.start(watch=not (args.no_index or args.no_watch), sync=not args.no_index, warm_delay=WARM_DELAY)
        print(f"oracle: dashboard http://{args.host}:{port}/  MCP http://{args.host}:{port}/mcp", file=sys.stderr)
        # `_exit_on_sigterm` makes SIGTERM run `finally`, so the record goes with the server.
        secret = remote.record(oracle.settings.data_dir, oracle.settings.root, args.host, port)  # the CLI's fast path
        try:
            paths = getattr(args, "engine_paths", None)
            if paths is None:  # --standalone, ORACLE_ENGINE=0, or no engine could be had
                serve_http(oracle, host=args.host, port=port, sock=sock, proof_secret=secret)
            else:
                serve_hosting_engine(oracle, args, paths, port, sock, secret)
        finally:
            remote.forget(oracle.settings.data_dir, port=port)
        return 0
    from oracle_server.mcp import stdio_front

    front = getattr(args, "stdio_front", None)  # answering the handshake since `main` started it
    from oracle_server.mcp.server import INSTRUCTIONS, build_server

    server = build_server(oracle)
    oracle.start(watch=not (args.no_index or args.no_watch), sync=not args.no_index, warm_delay=WARM_DELAY,
                 hold=front.handshake_done if front is not None else None)
    try:
        if front is None:
            server.run("stdio")
        else:
            stdio_front.serve(server, front, INSTRUCTIONS)
    except BaseExceptionGroup as group:  # SIGTERM inside the SDK's task group: an exit, not a traceback
        _, rest = group.split(SystemExit)
        if rest is not None:
            raise
    return 0


def serve_hosting_engine(oracle: Oracle, args: argparse.Namespace, paths: Any, port: int, sock: Any,
                         secret: bytes) -> None:
    """`oracle serve --http` as the shared engine of its root (it holds the key's lock: server/cli/http_front.py):
    HTTP here, the engine's socket in a thread, so later stdio sessions and CLI calls use this Oracle. `oracle engine
    stop` ends both."""
    from oracle_server.cli.http_front import front_factory
    from oracle_server.engine import process as engine
    from oracle_server.http.app import serve_http
    from oracle_server.mcp.server import build_server

    running: list[Any] = []
    stopped = False

    def stop_http() -> None:  # the engine was told to stop: so is the HTTP server
        nonlocal stopped
        stopped = True
        for server in running:
            server.should_exit = True

    def started(server: Any) -> None:
        running.append(server)
        server.should_exit = stopped

    with engine.hosted(oracle, build_server(oracle), paths, front_factory, stop_http):
        serve_http(oracle, host=args.host, port=port, sock=sock, proof_secret=secret, started=started)


def serve_http_command(args: argparse.Namespace) -> int | None:
    """`oracle serve --http` through the shared engine (server/cli/http_front.py): the exit status after serving as
    its front, or None with `args.engine_paths` / `args.engine_lock` set for this process to be the engine (or
    unset: serve alone)."""
    from oracle_server.cli import http_front

    paths = http_front.engine_paths(args)
    if paths is None:
        return None
    from oracle_indexer.config import ConfigError, Settings

    try:
        port = args.port or Settings.from_env(root=args.root, data_dir=args.data_dir).port  # oracle.toml's too
    except ConfigError:
        return None  # said by the in-process path
    how, value = http_front.take_or_attach(paths, args.host, port)
    if how == "attached":
        return int(value)
    if how == "lock":
        args.engine_paths, args.engine_lock = paths, value
    return None


def cmd_init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from oracle_indexer.config import ConfigError
    from oracle_server.cli.init import InitError, init

    path = Path(args.path or args.root or ".")
    try:
        _, lines = init(path, force=args.force)
    except (InitError, ConfigError, OSError) as exc:
        return _print_error(2, str(exc))
    print("\n".join(lines))
    return 0


def cmd_watch(oracle: Oracle, args: argparse.Namespace) -> int:
    import faulthandler
    import signal
    import threading

    from oracle_indexer.progress import Progress

    def report(result) -> None:
        if result.added or result.changed or result.removed or result.skipped:
            print(result.summary(), flush=True)

    # Ctrl-C and SIGTERM (systemd, a supervisor) both stop the watch cleanly. The handlers are installed, not
    # inherited: a process started in the background by a non-interactive shell inherits SIGINT as *ignored*,
    # and Python then leaves it ignored, so Ctrl-C never reached the watch (seen: killed after 240 s in a test).
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    # `kill -USR1 <pid>` prints every thread's stack: what a watch that does not stop is waiting on.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    from oracle_server.services.capabilities.indexing import index

    print(index(oracle, progress=Progress()).summary(), flush=True)  # in the foreground: progress
    oracle.start(watch=True, sync=False, on_batch=report)
    print(f"watching {oracle.settings.root} (Ctrl-C to stop)", flush=True)
    while not stop.wait(3600):
        pass
    return 0  # run_local closes the Oracle, which stops the worker


def engine_enabled() -> bool:
    """ORACLE_ENGINE=0 makes every `oracle serve` (stdio or --http) standalone, as `--standalone` does one."""
    import os

    return os.environ.get("ORACLE_ENGINE", "1").strip().lower() not in ("0", "false", "no", "off")


def _serve_flags(args: argparse.Namespace) -> list[str]:
    return [flag for flag, on in (("--no-index", args.no_index), ("--no-watch", args.no_watch)) if on]


def serve_through_engine(args: argparse.Namespace) -> int:
    """`oracle serve` (stdio): relay to the engine of this root, starting it if needed; in-process if not."""
    from oracle_server.engine import relay

    root = locate.resolve_root(args.root)
    data_dir = locate.resolve_data_dir(args.data_dir, root)

    def in_process(front, reason: str) -> int:
        from oracle_indexer.config import ConfigError, Settings

        try:
            settings = Settings.from_env(root=args.root, data_dir=args.data_dir)
        except ConfigError as exc:
            print(f"oracle: configuration error: {exc}", file=sys.stderr)
            return 2
        args.stdio_front, args.serving = front, {"mode": "fallback", "detail": reason}
        return run_local(args, settings)

    return relay.serve(root, data_dir, _serve_flags(args), in_process)


def cmd_engine(args: argparse.Namespace) -> int:
    from oracle_server.engine import process as engine

    if args.action == "run":
        from oracle_indexer.config import ConfigError, Settings

        if not args.key:
            print("oracle: `oracle engine run` is started by `oracle serve`; use status or stop", file=sys.stderr)
            return 2
        try:
            settings = Settings.from_env(root=args.root, data_dir=args.data_dir)
        except ConfigError as exc:
            print(f"oracle: configuration error: {exc}", file=sys.stderr)
            return 2
        from oracle_server.cli.http_front import front_factory

        return engine.run(settings, args.key, watch=not args.no_watch, index=not args.no_index, fronts=front_factory)
    root = locate.resolve_root(args.root)
    data_dir = locate.resolve_data_dir(args.data_dir, root)
    answers = engine.control(args.action, None if args.all else root, None if args.all else data_dir)
    if args.json:
        _dump(answers)
        return 0
    if not answers:
        print(f"no engine running for {root}" if not args.all else "no engine running")
        return 0
    for a in answers:
        if "error" in a:
            print(f"engine pid {a.get('pid')}: does not answer ({a['error']})")
        elif args.action == "stop":
            state = "stopped" if a.get("stopped") else "still running"
            print(f"engine pid {a.get('pid')} for {a.get('root')}: {state}")
        else:
            busy = a.get("sessions") or a.get("hosted") or a.get("http")  # an engine serving HTTP never idles out
            idle = "" if busy else f", idle {a.get('idle_for_seconds')} s of {a.get('idle_seconds'):.0f}"
            fronts = "".join(f", HTTP {url}" for url in a.get("http") or [])
            hosted = " (it is an `oracle serve --http`)" if a.get("hosted") else ""
            print(f"engine pid {a['pid']}{hosted} for {a['root']} (index {a['data_dir']}): {a['sessions']} session(s)"
                  f"{idle}{fronts}, up {a['uptime_seconds']} s, {a.get('rss_mb')} MB, watching: {a['watching']},"
                  f" socket {a['socket']}")
    return 0


def cmd_database(args: argparse.Namespace) -> int:
    """`oracle database status|allow`: where this root's notes are sent. A folder's oracle.toml may *name* a team
    database, but its notes go there only once the user allows that URL for that root (indexer/database_choice.py).
    Local only: the answer is the user's, recorded in their data dir."""
    from pathlib import Path

    from oracle_indexer.config import ConfigError, Settings
    from oracle_indexer.database_choice import allow, where

    try:
        settings = Settings.from_env(root=args.root, data_dir=args.data_dir)
        named = settings.layout.database_url  # what oracle.toml names, used or not
    except ConfigError as exc:
        return _print_error(2, f"database: {exc}")
    if args.action == "allow":
        if not named:
            return _print_error(2, f"database allow: {settings.root}/oracle.toml names no [database] url; to use a"
                                   " database, set ORACLE_DATABASE_URL")
        allow(settings.data_dir, Path(settings.root), named)
        print(f"oracle: {render.printable(settings.root)}'s notes, learnings and logged queries now go to the team"
              f" database {render.printable(where(named))} (allowed for this root and this URL only; recorded in"
              f" {render.printable(settings.data_dir)})")
        return 0
    print(f"oracle: {render.printable(settings.root)}: {render.printable(settings.database_line)}")
    if settings.database_notice:
        print(f"oracle: {render.printable(settings.database_notice)}")
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    """`oracle token add|list|revoke`: the named tokens of this data dir (team mode,
    server/services/capabilities/team.py). Local only, never through a server: whoever can write the data dir
    administers its tokens. Each action is a function below; the errors they raise map to exit codes here."""
    from oracle_server.services.capabilities.team import TokenError, TokenExists, TokenMissing

    store = _token_store(args)
    if isinstance(store, int):
        return store
    try:
        if args.action == "add":
            return _token_add(args, store)
        if args.action == "revoke":
            return _token_revoke(args, store)
        return _token_list(args, store)
    except TokenExists as exc:
        return _print_error(4, str(exc))
    except TokenMissing as exc:
        return _print_error(3, str(exc))
    except (TokenError, OSError) as exc:
        return _print_error(2, str(exc))
    finally:
        store.close()


def _token_store(args: argparse.Namespace) -> TokenStore | int:
    """The token store `oracle token` works on, or the exit code when it cannot be opened. With the team store
    the tokens are the database's, shared by every engine (docs/team.md), so the URL is looked up as a server
    would: ORACLE_DATABASE_URL, or the root's oracle.toml ([database] url); no root needed."""
    from pathlib import Path

    from oracle_server.services.capabilities.team import token_store

    root = locate.resolve_root(args.root)
    data_dir = Path(locate.resolve_data_dir(args.data_dir, root))
    try:  # with the team store the tokens are the database's, shared by every engine (docs/team.md)
        url = os.environ.get("ORACLE_DATABASE_URL", "").strip() or None
        if url is None and Path(root).is_dir():  # or the root's oracle.toml ([database] url); no root needed
            from oracle_indexer.config import Settings

            url = Settings.from_env(root=Path(root), data_dir=data_dir).database_url
        return token_store(url, data_dir)
    except Exception as exc:  # noqa: BLE001 - a bad URL, the database away: say which, change nothing
        return _print_error(5, f"token {args.action}: {exc}")


def _token_add(args: argparse.Namespace, store: TokenStore) -> int:
    """`oracle token add NAME --read-only|--write`: the new token printed once (it is stored only as a hash)."""
    if not args.name:
        return _print_error(2, "token add: give the token's name, e.g. `oracle token add alice --write`")
    if args.read_only == args.write:
        return _print_error(2, "token add: say what the token may do: --read-only or --write")
    token = store.add(args.name, "read" if args.read_only else "write")
    access = "read-only" if args.read_only else "read and write"
    if args.json:
        _dump({"name": args.name, "access": "read" if args.read_only else "write", "token": token})
    else:
        print(token)
        print(f"oracle: token for {args.name} ({access}); it is shown only this once: send it as"
              " 'Authorization: Bearer <token>'", file=sys.stderr)
    return 0


def _token_revoke(args: argparse.Namespace, store: TokenStore) -> int:
    """`oracle token revoke NAME`, with a warning when it was the last token (team mode is off then)."""
    from oracle_server.services.capabilities.team import last_token_warning, shown

    if not args.name:
        return _print_error(2, "token revoke: give the token's name (`oracle token list` shows them)")
    gone = store.revoke(args.name)
    if args.json:
        _dump(gone.public())
    else:
        print(f"revoked {shown(gone.name)} ({shown(gone.access)}); a running server refuses it from its next"
              " request")
    warning = last_token_warning(store)
    if warning:
        print(f"oracle: warning: {warning}", file=sys.stderr)
    return 0


def _token_list(args: argparse.Namespace, store: TokenStore) -> int:
    """`oracle token list`: name, access and creation date of each token (never the token itself)."""
    from oracle_server.services.capabilities.team import shown

    entries = [e.public() for e in store.entries()]
    if args.json:
        _dump({"tokens": entries, "file": str(store.path), "kept_in": store.where})
    elif not entries:
        print("no named tokens (team mode is off); add one with `oracle token add NAME --read-only|--write`")
    else:
        for e in entries:
            print(f"{shown(e['name'])}\t{e['access']}\tcreated {shown(e['created'])}")
    return 0


def _literal(text: str | None) -> str | None:
    """A registry description as argparse help: argparse formats help with %, so a literal % (consult's "15% of
    context_window") is doubled; `oracle consult --help` crashed on it."""
    return text.replace("%", "%%") if text else text


def add_tool_command(sub: argparse._SubParsersAction, command: str, spec: dict) -> None:
    """One registry tool as a subcommand: its free words, then one option per request field."""
    p = sub.add_parser(command, help=_literal(spec["help"]))
    if spec["words"]:
        p.add_argument(spec["words"], nargs="+" if spec.get("words_required", True) else "*",
                       help="text" + (", or - to read it from stdin" if spec["stdin"] else ""))
    for option in spec["options"]:
        kwargs: dict = {"dest": option["field"], "help": _literal(option["help"]) or None}
        if option["kind"] == "bool":
            kwargs["action"] = argparse.BooleanOptionalAction
        elif option["kind"] == "list":
            kwargs["action"] = "append"
        elif option["kind"] == "int":
            kwargs["type"] = int
        if option["choices"]:
            kwargs["choices"] = option["choices"]
        p.add_argument(option["flag"], **kwargs)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=None, tool=spec)


def _global_options(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """--root, --data-dir and --local, before the command (`oracle --root X index`) or after it (`oracle index
    --root X`). After it, an option not given leaves the value given before it (SUPPRESS: no default)."""
    default: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {}
    parser.add_argument("--root", help="knowledge root (default: ORACLE_ROOT or the bundled knowledge/)", **default)
    parser.add_argument("--data-dir", help="where the index lives (default: ORACLE_DATA_DIR)", **default)
    parser.add_argument("--local", action="store_true", **default,
                        help="answer in this process even when an `oracle serve --http` for this root runs")


class _Subcommands(argparse._SubParsersAction):
    """Every command accepts the global options too."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser = super().add_parser(name, **kwargs)
        _global_options(parser, suppress=True)
        return parser


def build_parser() -> argparse.ArgumentParser:
    from oracle_server import __version__

    parser = argparse.ArgumentParser(prog="oracle", description="Searchable agent memory made of plain markdown.")
    parser.add_argument("--version", action="version", version=f"oracle {__version__}")
    _global_options(parser, suppress=False)
    parser.register("action", "parsers", _Subcommands)
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

    p = sub.add_parser("serve", help="MCP server over stdio (default) or streamable HTTP (--http)")
    p.add_argument("--http", action="store_true", help="serve MCP at /mcp over HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, help="default: ORACLE_PORT or 37778")
    p.add_argument("--no-index", action="store_true", help="do not sync the index at start-up (nor watch)")
    p.add_argument("--no-watch", action="store_true", help="do not watch the knowledge root for changes")
    p.add_argument("--standalone", action="store_true",
                   help="run Oracle in this process instead of sharing the root's engine (over stdio: instead of"
                        " relaying to it; with --http: instead of being it or serving in front of it; also"
                        " ORACLE_ENGINE=0)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("engine", help="the shared engine that serves every `oracle serve` session of this root")
    p.add_argument("action", choices=["status", "stop", "run"],
                   help="status: the engines serving this root; stop: end them; run: be one (started by `serve`)")
    p.add_argument("--all", action="store_true", help="status: every engine of this user, whatever its root")
    p.add_argument("--json", action="store_true")
    p.add_argument("--key", help=argparse.SUPPRESS)
    p.add_argument("--no-index", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-watch", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=None)

    p = sub.add_parser("database", help="where this root's notes are sent: status, or allow the team database its"
                                        " oracle.toml names")
    p.add_argument("action", choices=["status", "allow"])
    p.set_defaults(func=None)

    p = sub.add_parser("token", help="named tokens for a team: add NAME --read-only|--write, list, revoke NAME")
    p.add_argument("action", choices=["add", "list", "revoke"])
    p.add_argument("name", nargs="?", help="who the token is for (a person or an agent)")
    access = p.add_mutually_exclusive_group()
    access.add_argument("--read-only", action="store_true", help="add: the token may search and read, never write")
    access.add_argument("--write", action="store_true", help="add: the token may also learn, edit, archive, ...")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=None)

    p = sub.add_parser("watch", help="index, then keep the index in step with file changes")
    p.set_defaults(func=cmd_watch)

    for command, spec in clispec.load().items():
        add_tool_command(sub, command, spec)
    return parser


# Over complexity 10 on purpose: the CLI's dispatch in the order a command is tried: own commands, the engine, a server,
# this process.
def _command_at(parser: argparse.ArgumentParser, argv: list[str]) -> int | None:
    """Where the subcommand is in `argv`: the first word that is not an option or a global option's value."""
    takes_value = {flag: action.nargs != 0 for action in parser._actions for flag in action.option_strings}
    i = 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("-"):
            return i
        i += 2 if takes_value.get(token, False) else 1
    return None


def words_last(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`argv` with a registry command's free words moved after `--`, so a word that begins with `-` (a flag the
    question is about: `oracle search -Zbuild-std`) is searched, not taken for an unknown option (issue 48: it was
    an argparse error, "the following arguments are required: query"). Options keep their values and words their
    order; anything else (no such command, `--` given already, a command without words) is left as it is."""
    command = _command_at(parser, argv)
    if command is None or "--" in argv:
        return argv
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    chosen = sub.choices.get(argv[command]) if sub is not None else None
    tool = chosen.get_default("tool") if chosen is not None else None
    if chosen is None or not tool or not tool["words"]:
        return argv
    takes_value = {flag: action.nargs != 0 for action in chosen._actions for flag in action.option_strings}
    front, words, rest, i = argv[:command + 1], [], argv[command + 1:], 0
    while i < len(rest):
        token = rest[i]
        if token.split("=", 1)[0] in takes_value:
            front.append(token)
            if takes_value[token.split("=", 1)[0]] and "=" not in token and i + 1 < len(rest):
                front.append(rest[i + 1])
                i += 1
        else:
            words.append(token)
        i += 1
    return [*front, "--", *words] if words else argv


def main(argv: list[str] | None = None) -> int:  # noqa: C901
    parser = build_parser()
    args = parser.parse_args(words_last(parser, list(sys.argv[1:] if argv is None else argv)))
    if args.command == "init":
        return cmd_init(args)
    if args.command == "engine":
        return cmd_engine(args)
    if args.command == "token":
        return cmd_token(args)
    if args.command == "database":
        return cmd_database(args)
    if args.command == "serve" and not args.http and not args.standalone and engine_enabled():
        code = serve_through_engine(args)
        # As a standalone server below: a session that fell back to its own Oracle has closed it; the interpreter's
        # teardown met an abandoned model load and aborted (SIGABRT, "terminate called without an active
        # exception": every fallback session's exit status was -6).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if args.command == "serve" and args.http and not args.standalone and engine_enabled():
        answered = serve_http_command(args)
        if answered is not None:
            return answered
    specs = clispec.load()
    answered = try_remote(args, specs)
    if answered is not None:
        return answered
    from oracle_indexer.config import ConfigError, Settings

    try:
        settings = Settings.from_env(root=args.root, data_dir=args.data_dir)
    except ConfigError as exc:
        print(f"oracle: configuration error: {exc}", file=sys.stderr)
        return 2
    if settings.database_notice:  # oracle.toml names a database the user has not allowed: said before anything runs
        print(f"oracle: {render.printable(settings.database_notice)}", file=sys.stderr)
    if args.func is cmd_serve and not args.http:
        from oracle_server.mcp import stdio_front

        args.stdio_front = stdio_front.start(settings) if stdio_front.enabled() else None
    if args.command in specs or args.command == "index":  # a one-shot command: it says what it waits for
        args.wait_stage = ("opening the index in this process" if args.local else
                           "no `oracle serve` is running for this root: opening the index in this process")
    try:
        code = run_local(args, settings)
    finally:
        lock = getattr(args, "engine_lock", None)
        if lock is not None:  # after the Oracle closed: a new engine for this key may open the stores now
            os.close(lock)
    if _quick_exit(args):
        # Everything is written and closed: leave without the interpreter's teardown (freeing the Thai
        # dictionary and the models took 1-2 s) and without waiting for an abandoned model load.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _quick_exit(args: argparse.Namespace) -> bool:
    """`oracle serve` over stdio ends as soon as its logs are written and its stores closed: clients close
    stdin and send SIGTERM 2 s later (issue 27: the usage logs of short sessions were lost)."""
    return args.func is cmd_serve and not args.http


def run_local(args: argparse.Namespace, settings: Settings) -> int:
    """Run the command in this process; every failure a caller can act on is one line and its kind's exit
    code (server/services/vocabulary/errors.py), the same code the remote path gives for the server's HTTP status."""
    if args.func is None:  # a tool's input is checked before the index opens: a bad one is said at once
        from pydantic import ValidationError

        from oracle_server.registry.tools import BY_NAME, InvalidArguments
        from oracle_server.services.vocabulary.errors import problems

        try:
            args.request = BY_NAME[args.tool["tool"]].parse(tool_values(args, args.tool))
        except InvalidArguments as exc:
            return _print_error(exc.exit_code, f"invalid input: {exc}")
        except ValidationError as exc:
            return _print_error(2, f"invalid input: {problems(exc.errors())}")
    stage = getattr(args, "wait_stage", None)
    if stage is None:
        return _run_opened(args, settings)
    from oracle_server.cli.waiting import Waiting

    with Waiting(stage) as args.waiting:
        return _run_opened(args, settings)


# Over complexity 10 on purpose: opening, then running: each kind of failure mapped to its exit code where it is caught.
def _run_opened(args: argparse.Namespace, settings: Settings) -> int:  # noqa: C901
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.vocabulary.errors import classify

    # A server checks its index in the maintenance worker, off the way to the handshake (Store.verify).
    try:
        # a server with the team store serves its working copy while the database cannot be reached
        oracle = Oracle.open(settings, check=args.func is not cmd_serve, offline_ok=args.func is cmd_serve)
    except Exception as exc:  # ORACLE_DATABASE_URL unreachable (DatabaseUnavailable): the message says what to check
        error = classify(exc)
        if error is None or error.kind != "unavailable":
            raise
        return _print_error(error.exit_code, error.message)
    if getattr(args, "serving", None):
        oracle.serving.update(args.serving)
    if getattr(args, "stdio_front", None) is not None:  # `oracle serve`: the handshake can be answered now
        from oracle_server.mcp import stdio_front

        stdio_front.attach(args.stdio_front, oracle)
    # Imported after the attach: the early handshake answers need the open index, not these modules.
    from pydantic import ValidationError

    from oracle_server.registry.tools import InvalidArguments
    from oracle_server.services.vocabulary.errors import problems

    try:
        if args.func is None:
            return run_tool(oracle, args, args.tool)
        return args.func(oracle, args)
    except InvalidArguments as exc:
        return _print_error(exc.exit_code, f"invalid input: {exc}")
    except ValidationError as exc:
        return _print_error(2, f"invalid input: {problems(exc.errors())}")
    except FileNotFoundError as exc:
        return _print_error(2, str(exc))
    except Exception as exc:
        error = classify(exc)
        if error is None:
            raise
        return _print_error(error.exit_code, str(error))
    finally:
        global _CLOSING
        _CLOSING = True
        oracle.close(abandon_loads=_quick_exit(args))


if __name__ == "__main__":
    sys.exit(main())
