"""The output schemas Oracle's MCP tools publish: the result model's JSON schema, shaped so that checking a
result against it is cheap.

MCP clients SHOULD check `structuredContent` against a tool's `outputSchema`, and the official Python client
does so on every call with `jsonschema`, which costs in proportion to the number of (instance value, schema)
pairs it visits: about 550 for a page of 10 search hits with pydantic's schema, 5-10 ms a call on a busy
2-core machine, most of what the MCP round trip added to a search (BENCHMARKS.md, "Latency at the client:
a lean output schema"). The schema published here says the same about the result's shape, with fewer nodes
to visit:

- no `$defs` / `$ref` (every reference is inlined: resolving one is a lookup per visit) and no generated
  `title`s; an optional value is `"type": ["string", "null"]`, not an `anyOf` of two schemas;
- the result's own fields, and its metadata (one object), keep a schema each: type, enum, description;
- an entry of a list (each search hit, each consult source, each listed note) is an object with its required
  fields, and its description gives every field's name, type and meaning (`line_start: integer`,
  `sections?: [{id, heading, line_start, line_end, score}]`), instead of a schema per field that a client
  would re-check for every entry of every result: for a page of 10 hits, ~20 visits instead of ~550.

What a client can no longer check mechanically is the type of each field inside an entry; the server builds
every result from pydantic models that enforce those types before anything is sent. The HTTP API's OpenAPI document keeps pydantic's full schema; the models themselves are unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

_DROP = ("title",)


def lean_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s serialization schema, inlined and flattened as the module docstring says."""
    schema = model.model_json_schema(mode="serialization")
    defs = schema.pop("$defs", {})
    return _shape(_inline(schema, defs))


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
    merged.update({k: v for k, v in other.items() if k not in _DROP and (k not in merged or k == "type")})
    merged["type"] = [kind, "null"]
    return merged


def _types(node: dict[str, Any]) -> list[str]:
    kind = node.get("type")
    return [kind] if isinstance(kind, str) else list(kind or [])


def _fields(node: dict[str, Any]) -> str:
    """An object schema's fields as `name` (`name?` when optional), comma-separated."""
    required = set(node.get("required", ()))
    return ", ".join(f"{name}{'' if name in required else '?'}" for name in node.get("properties", {}))


def _kind(node: dict[str, Any]) -> str:
    """A short type for a field: `string`, `string|null`, `string[]`, `{a, b?}`, `[{a, b?}]`."""
    types = _types(node)
    null = "|null" if "null" in types else ""
    if "array" in types:
        items = node.get("items") or {}
        if isinstance(items, dict) and items.get("properties"):
            return f"[{{{_fields(items)}}}]{null}"
        inner = "|".join(_types(items)) if isinstance(items, dict) else ""
        return f"{inner or 'any'}[]{null}"
    if "object" in types and node.get("properties"):
        return f"{{{_fields(node)}}}{null}"
    return "|".join(types) or "any"


def _entry(node: dict[str, Any]) -> dict[str, Any]:
    """A list entry (a hit, a consult source): an object with its required fields, each field's name, type and
    meaning in the description instead of a schema per field, which a client would re-check for every entry."""
    required = node.get("required", [])
    parts = []
    for name, sub in node["properties"].items():
        text = f"{name}{'' if name in required else '?'}: {_kind(sub)}"
        if sub.get("description"):
            text += f" ({sub['description'].rstrip('.')})"
        parts.append(text)
    lead = node.get("description", "").strip()
    out: dict[str, Any] = {"type": "object"}
    if required:
        out["required"] = list(required)
    out["description"] = (f"{lead} " if lead else "") + "Fields (? = optional): " + "; ".join(parts) + "."
    return out


def _shape(node: Any, collapse: bool = True) -> Any:
    """Drop titles, inline nullables, and (when `collapse`) turn each list's entries into `_entry` objects; the
    entries' own nested lists are left whole for `_entry` to describe."""
    if isinstance(node, list):
        return [_shape(v, collapse) for v in node]
    if not isinstance(node, dict):
        return node
    node = _nullable({k: v for k, v in node.items() if k not in _DROP})
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
