"""Reproducible consults: the working set a consultation used, as canonical bytes and their SHA-256.

The working set is what consult built its answer from: the decision, the context and the budget it was given,
its sources' ids and content hashes in the order the guidance shows them, the guidance itself, and the state of
the index it read (every note's path and file hash, `Store.index_state`). Canonical JSON: sorted keys, no
insignificant whitespace, UTF-8 as is; lists keep their order (the sources' order is the ranking's, whose ties
break deterministically). The guidance's boundary tag comes from a per-process secret
(server/services/vocabulary/boundary.py), so it is replaced by a fixed placeholder before hashing: two processes, or two
fresh indexes of the same files, give the same id for the same consultation.

Whether a logged working set still reproduces is verify's question (server/services/capabilities/verify.py:
`check_working_set`), which consults again; this module imports neither, so consult can build on it.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from oracle_server.services.vocabulary.models import ConsultRequest

if TYPE_CHECKING:
    from oracle_server.services.vocabulary.models import Source

VERSION = 1  # of the working set's shape; a new shape gives new ids
TAG_PLACEHOLDER = "TAG"


def canonical_json(value: object) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8 (not \\u escapes), a whole number written as an integer
    (0.0 and -0.0 are 0, 2.0 is 2: one value to every filter, so one value here): one byte string per value."""
    return json.dumps(_whole_numbers(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _whole_numbers(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_whole_numbers(v) for v in value]
    return value


def working_set_id(working_set: dict) -> str:
    return hashlib.sha256(canonical_json(working_set)).hexdigest()


def build(request: ConsultRequest, budget_tokens: int, sources: list[Source], guidance: str, tag: str,
          index_state: str) -> dict:
    """The working set of one consultation (the shape `working_set_id` hashes and the consult log keeps).
    `budget_tokens` is the budget it used; `context_window` and `where` are kept only when given, so a
    consultation without them has the id it had before they existed."""
    shown = guidance.replace(tag, TAG_PLACEHOLDER) if tag else guidance
    working_set = {
        "v": VERSION,
        "decision": request.decision,
        "context": request.context,
        "budget_tokens": budget_tokens,
        "sources": [[s.id, s.content_hash] for s in sources],
        "guidance_sha256": hashlib.sha256(shown.encode("utf-8")).hexdigest(),
        "index_state": index_state,
    }
    if request.context_window is not None:
        working_set["context_window"] = request.context_window
    if request.where:
        working_set["where"] = request.where
    return working_set
