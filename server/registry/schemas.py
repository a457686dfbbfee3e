"""The output schemas Oracle's MCP tools publish: the result model's JSON schema, shaped so that checking a
result against it is cheap.

MCP clients SHOULD check `structuredContent` against a tool's `outputSchema`, and the official Python client
does so on every call with `jsonschema`, which costs in proportion to the number of (instance value, schema)
pairs it visits: about 550 for a page of 10 search hits with pydantic's schema, 5-10 ms a call on a busy
2-core machine, most of what the MCP round trip added to a search (benchmarks/HISTORY.md, "Latency at the client:
a lean output schema"). The schema published here says the same about the result's shape, with fewer nodes
to visit:

- no `$defs` / `$ref` (every reference is inlined: resolving one is a lookup per visit), no generated `title`s,
  no descriptions or defaults (the agent reads the result, not this schema; what each field means is in the
  HTTP API's OpenAPI document at /docs), and no type arrays (the MCP Inspector flags them as unportable): a
  nullable field is an `anyOf` of its type and null;
- the result's own fields, and its metadata (one object), keep a schema each: type, enum;
- an entry of a list (each search hit, each consult source, each listed note) is an object with its required
  fields, instead of a schema per field that a client would re-check for every entry of every result: for a
  page of 10 hits, ~20 visits instead of ~550.

What a client can no longer check mechanically is the type of each field inside an entry; the server builds
every result from pydantic models that enforce those types before anything is sent. The HTTP API's OpenAPI
document keeps pydantic's full schema; the models themselves are unchanged. `tools/list` went from 41.7 KB to
the size benchmarks/HISTORY.md records ("What Oracle costs an agent's context").
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

_DROP = ("title",)
# An output schema is for the client's check, not the agent's reading: the meaning of each field is in the
# HTTP API's OpenAPI document (/docs) and README, and a default says nothing about a result.
_OUTPUT_DROP = ("title", "description", "default")


def lean_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s serialization schema, inlined and flattened as the module docstring says."""
    schema = model.model_json_schema(mode="serialization")
    defs = schema.pop("$defs", {})
    return _portable(_shape(_inline(schema, defs)))


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
    out["additionalProperties"] = False
    return out


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


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, {"type": "null"}]` as X with "null" added to its type, when X is a plain typed schema."""
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return node
    other = next(o for o in options if o != {"type": "null"})
    kind = other.get("type")
    if not isinstance(kind, str) or "anyOf" in other:
        return node
    merged = {k: v for k, v in node.items() if k != "anyOf"}
    merged.update({k: v for k, v in other.items() if k not in _OUTPUT_DROP and (k not in merged or k == "type")})
    merged["type"] = [kind, "null"]
    return merged


def _entry(node: dict[str, Any]) -> dict[str, Any]:
    """A list entry (a hit, a consult source): an object with its required fields, and no schema per field,
    which a client would re-check for every entry of every result."""
    required = node.get("required", [])
    return {"type": "object", "required": list(required)} if required else {"type": "object"}


def _shape(node: Any, collapse: bool = True) -> Any:
    """Drop titles, inline nullables, and (when `collapse`) turn each list's entries into `_entry` objects; the
    entries' own nested lists are left whole for `_entry` to describe."""
    if isinstance(node, list):
        return [_shape(v, collapse) for v in node]
    if not isinstance(node, dict):
        return node
    node = _nullable({k: v for k, v in node.items() if k not in _OUTPUT_DROP})
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: _shape(sub, collapse) for name, sub in value.items()}
        elif key == "items":
            items = _shape(value, collapse=False)
            out[key] = _entry(items) if collapse and isinstance(items, dict) and items.get("properties") else items
        elif key in ("anyOf", "oneOf", "allOf"):
            out[key] = [_shape(v, collapse) for v in value]
        else:
            out[key] = value
    return out
