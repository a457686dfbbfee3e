"""How much of a result an answer carries: a search's `detail` (issue 40, "the context an agent pays").

A page of 10 search hits was ~27 KB at an MCP client: every hit's score breakdown, found_by, concepts and other
matching sections, twice (the structured content and a text rendering of it), and a resource link per note. An
agent judges and cites a hit by its id, title, heading, snippet, file, lines and content_hash; how the hit was
ranked is for tuning and debugging. So `detail=brief` (the default over MCP, where each byte is context) keeps
those, whatever about a hit calls for action (weak, superseded, stale, duplicates, translations, matched
relations, the phrasings that found it) and the answer's meta but for the words query expansion added; `detail=full`
(the default over HTTP and the CLI, read by programs and people) is the whole model.

One search runs either way: the shape is cut from the same SearchResult after it, so the notes and their order
never depend on the detail asked for. Every adapter shapes through `Tool.dump` (server/registry/tools.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, create_model

from oracle_server.services.vocabulary.models import Hit, SearchResult

Surface = Literal["mcp", "http", "cli"]
DEFAULT_DETAIL: dict[Surface, str] = {"mcp": "brief", "http": "full", "cli": "full"}

# The fields of a brief hit, always present: enough to judge a hit and to cite it (oracle_verify, oracle_read).
BRIEF_HIT = ("id", "type", "title", "heading", "snippet", "source_file", "line_start", "line_end", "content_hash",
             "score")
# Present in a brief hit only when they say something (a value other than the model's default): each asks the
# agent to act or to read the hit differently.
WHEN_SET = ("weak", "superseded_by", "stale", "stale_since", "last_verified", "duplicates", "translations",
            "relations", "phrasings")
_DEFAULTS = {name: Hit.model_fields[name].get_default(call_default_factory=True) for name in WHEN_SET}


def detail_of(request: Any, surface: Surface) -> str:
    """The detail a request asked for, else its surface's default."""
    return getattr(request, "detail", None) or DEFAULT_DETAIL[surface]


# A brief hit's content_hash is the hash's first 16 hex digits (64 bits, as git's short hashes): oracle_verify takes
# any prefix of 12 or more, and a citation names its chunk by id besides. Full detail carries the whole sha256.
SHORT_HASH = 16


def brief_hit(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit's JSON (`Hit.model_dump(mode="json")`) cut to BRIEF_HIT and the WHEN_SET fields that are set."""
    out = {name: hit[name] for name in BRIEF_HIT}
    out["content_hash"] = out["content_hash"][:SHORT_HASH]
    out.update({name: hit[name] for name in WHEN_SET if hit.get(name, _DEFAULTS[name]) != _DEFAULTS[name]})
    return out


# How the ranking went, beside each hit's breakdown: full detail only.
FULL_META = ("expanded_with",)


def brief_search(result: SearchResult) -> dict[str, Any]:
    """A search result's JSON with brief hits; its total, paging and `try` whole, its meta but for FULL_META."""
    data = result.model_dump(mode="json")
    data["hits"] = [brief_hit(hit) for hit in data["hits"]]
    data["meta"] = {k: v for k, v in data["meta"].items() if k not in FULL_META}
    return data


# The brief shape as a schema of its own, so that an HTTP client asking `detail=brief` reads an answer its OpenAPI
# document describes (the route's response is either shape; the fuzz test validates every answer against it).
BriefHit: type[BaseModel] = create_model(
    "BriefHit",
    __doc__="A search hit as `detail=brief` gives it: what judges and cites it, and what asks for action when set.",
    **{name: (Hit.model_fields[name].annotation, ...) for name in BRIEF_HIT},  # type: ignore[call-overload]
    **{name: (Hit.model_fields[name].annotation, _DEFAULTS[name]) for name in WHEN_SET},
)
BriefSearchResult: type[BaseModel] = create_model(
    "BriefSearchResult", __base__=SearchResult, __doc__="A search result as `detail=brief` gives it.",
    hits=(list[BriefHit], ...),  # type: ignore[valid-type]
)
BRIEF_MODELS: dict[str, type[BaseModel]] = {"oracle_search": BriefSearchResult}
