"""The CLI's commands and options, derived from the registry (server/registry/tools.py) and cached like bytecode.

Every `oracle search|consult|learn|...` option comes from a request model field: name, type, choices,
bounds and help. Deriving them needs pydantic and the service layer (~0.2 s of imports), and the CLI's fast
path answers through a running server in ~60 ms, so the derived table is cached as JSON, keyed by the size
and mtime of every source file of `server/` and `indexer/`: any edit to a model gives a new key and the
table is derived again on the next run. Only the standard library is imported on a cache hit.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from oracle_indexer.digest import sha256
from oracle_indexer.safe_write import PRIVATE, write_atomic

PACKAGES = ("server", "indexer")  # the folders (installed as oracle_server, oracle_indexer)
HERE = Path(__file__).resolve().parent.parent  # server/


def _key() -> str:
    """A digest of every source file's name, size and mtime (~100 stats, about a millisecond)."""
    digest = sha256(sys.version.encode())
    for package in PACKAGES:
        folder = HERE.parent / package
        for path in sorted(folder.rglob("*.py")):
            st = path.stat()
            digest.update(f"{path.relative_to(folder.parent).as_posix()}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()[:20]


def _cache_dirs() -> list[Path]:
    """The package's own __pycache__ (as Python caches bytecode), else the user's cache folder."""
    from oracle_indexer.locate import cache_home

    user = cache_home()
    return [HERE / "__pycache__", *([Path(user)] if user else [])]


def derive(tools: Iterable[Any] | None = None) -> dict[str, Any]:
    """The table, from the registry (or the given tools): {command: {tool, method, path, words, stdin,
    help, options}}."""
    if tools is None:
        from oracle_server.registry.tools import TOOLS

        tools = TOOLS

    spec: dict[str, Any] = {}
    for tool in tools:
        if tool.cli is None:
            continue
        schema = tool.request.model_json_schema()
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        flags = dict(tool.cli.flags)
        options = [_option(name, props[name], name in required, flags.get(name)) for name in tool.request.model_fields
                   if name != tool.cli.words]
        spec[tool.cli.command] = {
            "tool": tool.name, "method": tool.http.method, "path": tool.http.path, "help": tool.cli.help,
            "words": tool.cli.words, "words_required": tool.cli.words in required, "stdin": tool.cli.stdin,
            "options": options,
        }
    return spec


def _option(name: str, prop: dict[str, Any], required: bool, flag: str | None = None) -> dict[str, Any]:
    """One request field as a command-line option: kind (str/int/bool/list), choices, and a help text that
    states the default and bounds the model enforces."""
    variants = [v for v in prop.get("anyOf", [prop]) if v.get("type") != "null"]
    types = {v.get("type") for v in variants}
    kind = ("list" if "array" in types else "int" if types == {"integer"} else "bool" if types == {"boolean"}
            else "str")
    choices = next((v["enum"] for v in variants if "enum" in v), None)
    first = variants[0] if variants else {}
    notes = []
    if "minimum" in first or "maximum" in first:
        notes.append(f"{first.get('minimum', '')}-{first.get('maximum', '')}")
    if "default" in prop and prop["default"] not in (None, [], False):
        notes.append(f"default {prop['default']}")
    if kind == "list":
        strings = any(v.get("type") == "string" for v in variants)
        notes.append("repeat the option for each" if flag or not strings else "comma-separated or repeated")
    help_text = prop.get("description", "")
    if notes:
        help_text = f"{help_text} ({'; '.join(notes)})".strip()
    return {"field": name, "flag": "--" + (flag or name).replace("_", "-"), "kind": kind, "choices": choices,
            "required": required, "help": help_text}


@functools.cache
def load() -> dict[str, Any]:
    """The cached table when it matches the sources, else derived now (and cached for the next run)."""
    name = f"cli-spec-{_key()}.json"
    for folder in _cache_dirs():
        try:
            return json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    spec = derive()
    for folder in _cache_dirs():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(folder / name, json.dumps(spec), PRIVATE)  # a concurrent run reads the old file or the new one
            for stale in folder.glob("cli-spec-*.json"):
                if stale.name != name:
                    stale.unlink(missing_ok=True)
            break
        except OSError:
            continue
    return spec
