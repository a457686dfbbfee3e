"""Reproducible consults: the working set a consultation used, as canonical bytes and their SHA-256.

The working set is what consult built its answer from: the decision, the context and the budget it was given,
its sources' ids and content hashes in the order the guidance shows them, the guidance itself, and the state of
the index it read (every note's path and file hash, `Store.index_state`). Canonical JSON: sorted keys, no
insignificant whitespace, UTF-8 as is; lists keep their order (the sources' order is the ranking's, whose ties
break deterministically). The guidance's boundary tag comes from a per-process secret (server/services/boundary.py), so
it is replaced by a fixed placeholder before hashing: two processes, or two fresh indexes of the same files,
give the same id for the same consultation.

`check()` answers whether a logged working set still reproduces: it consults again (unlogged) and compares,
naming the sources that changed or vanished and those the new consultation adds or drops.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from oracle_server.services.errors import OracleError
from oracle_server.services.models import Citation, ConsultRequest, WorkingSetCheck

if TYPE_CHECKING:
    from oracle_server.services.app import Oracle
    from oracle_server.services.models import Source

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


def check(oracle: Oracle, wanted: str) -> WorkingSetCheck:
    """Does the logged consultation with this id reproduce on the index as it is now?"""
    from oracle_server.services.consult import run_consult  # consult imports this module
    from oracle_server.services.verify import check_citations

    row = oracle.logs.consult_by_working_set(wanted)
    if row is None or not row.get("working_set"):
        raise OracleError("not_found", f"working_set_id: no logged consultation has id {wanted}; consult logs are "
                          f"kept {oracle.settings.log_retention_days} days")
    old = json.loads(row["working_set"])
    request = ConsultRequest(decision=old["decision"], context=old["context"], budget_tokens=old["budget_tokens"],
                             context_window=old.get("context_window"), where=old.get("where"))
    _, new = run_consult(oracle, request)
    current = working_set_id(new)
    old_ids = [i for i, _ in old["sources"]]
    new_ids = [i for i, _ in new["sources"]]
    cited = check_citations(oracle, [Citation(id=i, content_hash=h) for i, h in old["sources"]])
    return WorkingSetCheck(
        working_set_id=wanted,
        status="reproduces" if current == wanted else "changed",
        current_id=current,
        sources=cited,
        changed_sources=[c.id for c in cited if c.status == "changed"],
        vanished_sources=[c.id for c in cited if c.status == "gone"],
        added_sources=[i for i in new_ids if i not in old_ids],
        dropped_sources=[i for i in old_ids if i not in new_ids],
        reordered=[i for i in old_ids if i in new_ids] != [i for i in new_ids if i in old_ids],
        guidance_changed=old["guidance_sha256"] != new["guidance_sha256"],
        index_changed=old["index_state"] != new["index_state"],
    )
