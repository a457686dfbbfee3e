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
- every field of the result and of each list entry (each hit, each consult source) keeps its type and
  description, and required fields stay required;
- inside a list entry, a field that is itself a list or an object (a hit's score breakdown, its other
  matching sections, its concepts) keeps its type, and its entries' fields are named in its description
  rather than described by a nested schema that would be re-checked for every entry of every hit.

The HTTP API's OpenAPI document keeps pydantic's full schema; the models themselves are unchanged.
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
    return _shape(_inline(schema, defs), in_entry=False)


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
    merged.update({k: v for k, v in other.items() if k not in merged or k == "type"})
    merged["type"] = [kind, "null"]
    return merged


def _types(node: dict[str, Any]) -> list[str]:
    kind = node.get("type")
    return [kind] if isinstance(kind, str) else list(kind or [])


def _fields_note(node: dict[str, Any]) -> str:
    """The field names of an object schema (or of an array's entries), for a collapsed field's description."""
    target = node.get("items", {}) if "array" in _types(node) else node
    props = target.get("properties") if isinstance(target, dict) else None
    if props:
        required = set(target.get("required", ()))
        names = ", ".join(f"{name}{'' if name in required else '?'}" for name in props)
        return ("each entry: " if target is not node else "fields: ") + names
    if isinstance(target, dict) and target is not node and _types(target):
        return f"entries: {'/'.join(_types(target))}"
    return ""


def _collapse(node: dict[str, Any]) -> dict[str, Any]:
    """A nested list or object inside a list entry: its type and its description, with its fields named."""
    out: dict[str, Any] = {"type": node["type"]}
    note = _fields_note(node)
    text = " ".join(part for part in (node.get("description", ""), f"({note})" if note else "") if part)
    if text:
        out["description"] = text
    if "default" in node:
        out["default"] = node["default"]
    return out


def _shape(node: Any, in_entry: bool) -> Any:
    if isinstance(node, list):
        return [_shape(v, in_entry) for v in node]
    if not isinstance(node, dict):
        return node
    node = _nullable({k: v for k, v in node.items() if k not in _DROP})
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            props: dict[str, Any] = {}
            for name, sub in value.items():
                sub = _nullable({k: v for k, v in sub.items() if k not in _DROP})
                if in_entry and {"array", "object"} & set(_types(sub)):
                    props[name] = _collapse(_shape(sub, True))
                else:
                    props[name] = _shape(sub, in_entry)
            out[key] = props
        elif key == "items":
            out[key] = _shape(value, True)
        elif key in ("anyOf", "oneOf", "allOf"):
            out[key] = [_shape(v, in_entry) for v in value]
        else:
            out[key] = value
    return out
