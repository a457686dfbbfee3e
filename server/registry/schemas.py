"""The input schemas Oracle's MCP tools publish in `tools/list`, shaped for what they cost: every byte of them is
read into an agent's context before its first call (issue 40: `tools/list` was 33 KB; benchmarks/context.py).

An input schema keeps every bound the request model enforces (tests/contract/test_registry.py compares them with
HTTP's and the CLI's) and drops what says nothing: pydantic's titles, `$defs`, `"default": null`, the `anyOf`
with null of each optional field, and descriptions of a parameter's parts. Tools publish no output schema
(server/mcp/server.py `register` says why); the HTTP API's OpenAPI document keeps pydantic's full schemas.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

_DROP = ("title",)


def lean_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A request model's schema as an agent reads it in `tools/list`: every bound the model enforces (minimum,
    lengths, enums, patterns), without pydantic's generated titles, `$defs`, `"default": null` or the `anyOf`
    with `null` of each optional field (the model reads a null argument as "not given", so an optional field is
    simply not required). Unknown names are refused (`additionalProperties: false`). About half the bytes of
    pydantic's schema, and nothing the MCP Inspector warns about (no type arrays)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    out = _portable(_optional(_inline(schema, defs)))
    out.setdefault("properties", {})
    out["properties"] = {name: _undescribed_parts(prop) for name, prop in out["properties"].items()}
    out["additionalProperties"] = False
    return out


def _undescribed_parts(prop: dict[str, Any]) -> dict[str, Any]:
    """A parameter keeps its own description; the parts inside it (a list's entries, an object's fields) do not:
    the parameter's description says what they are."""
    return {k: (v if k == "description" else _strip(v, "description")) for k, v in prop.items()}


def _strip(node: Any, key: str) -> Any:
    if isinstance(node, list):
        return [_strip(v, key) for v in node]
    if not isinstance(node, dict):
        return node
    return {k: (v if k in ("default", "enum", "const", "examples") else _strip(v, key))
            for k, v in node.items() if k != key or not isinstance(v, str)}


def _optional(node: Any) -> Any:
    """Drop titles; an `anyOf: [X, null]` defaulting to null is X, with no default."""
    if isinstance(node, list):
        return [_optional(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: v for k, v in node.items() if k not in _DROP or not isinstance(v, str)}
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and node.get("default", ...) is None:
        rest = [o for o in options if o != {"type": "null"}]
        node = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
        if len(rest) == 1:
            node = {**rest[0], **node}
        else:
            node["anyOf"] = rest
    return {k: (v if k in ("default", "enum", "const", "examples") else _optional(v)) for k, v in node.items()}


def _portable(node: Any) -> Any:
    """No type arrays (the MCP Inspector flags `"type": ["string", "null"]` as unportable): a nullable enum is the
    enum with null, any other union an `anyOf` of plain types (keywords such as `items` stay beside it: they
    apply to values of their own type only)."""
    if isinstance(node, list):
        return [_portable(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("default", "enum", "const", "examples", "required") else _portable(v))
           for k, v in node.items()}
    kinds = out.get("type")
    if isinstance(kinds, list):
        del out["type"]
        if "enum" in out:
            if "null" in kinds and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        elif len(kinds) == 1:
            out["type"] = kinds[0]
        else:
            out["anyOf"] = [{"type": k} for k in kinds]
    if isinstance(out.get("anyOf"), list):  # an option that is only an anyOf is its options
        out["anyOf"] = [o for opt in out["anyOf"]
                        for o in (opt["anyOf"] if isinstance(opt, dict) and set(opt) == {"anyOf"} else [opt])]
    return out


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = _inline(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]), defs)
            rest = {k: _inline(v, defs) for k, v in node.items() if k != "$ref"}
            return {**target, **rest}
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node
