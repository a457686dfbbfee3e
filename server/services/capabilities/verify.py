"""Verify: is the evidence an agent cited still what the knowledge base says?

Every hit and consult source carries its chunk's sha256. Given (id, hash) pairs this says, per citation,
whether the chunk is unchanged, changed (with the current hash and line span) or gone, and which chunks
now hold exactly the cited text (a renamed heading changes the id but not the content).

`mark_verified` names notes the caller checked and found still true: each is stamped `last_verified: <today>`
(server/services/capabilities/freshness.py) and so is fresh again. `working_set_id` names a logged consultation: does it
still reproduce on the index as it is now (`check_working_set`; the working set's shape:
server/services/capabilities/working_set.py)?
"""

from __future__ import annotations

import json

from oracle_server.services.capabilities.consult import run_consult
from oracle_server.services.capabilities.freshness import mark_verified
from oracle_server.services.capabilities.working_set import working_set_id
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import OracleError
from oracle_server.services.vocabulary.models import (
    Citation,
    CitationStatus,
    ConsultRequest,
    VerifyRequest,
    VerifyResult,
    WorkingSetCheck,
)


def verify(oracle: Oracle, request: VerifyRequest) -> VerifyResult:
    # checks first, then marks: a note marked verified here must not show as a change in this same answer
    reproduced = check_working_set(oracle, request.working_set_id.lower()) if request.working_set_id else None
    results = check_citations(oracle, request.citations)
    verified = mark_verified(oracle, request.mark_verified) if request.mark_verified else []
    counts = {s: sum(r.status == s for r in results) for s in ("unchanged", "changed", "gone")}
    return VerifyResult(results=results, verified=verified, working_set=reproduced, **counts)


def check_citations(oracle: Oracle, citations: list[Citation]) -> list[CitationStatus]:
    docs = oracle.store.sections_by_id(list(dict.fromkeys(c.id for c in citations)))
    results: list[CitationStatus] = []
    for citation in citations:
        cited = citation.content_hash.lower()
        doc = docs.get(citation.id)
        if doc is not None and doc.content_hash.startswith(cited):
            results.append(CitationStatus(id=citation.id, content_hash=citation.content_hash, status="unchanged",
                                          current_hash=doc.content_hash, source_file=doc.file,
                                          line_start=doc.line_start, line_end=doc.line_end))
            continue
        elsewhere = [i for i in oracle.store.ids_with_hash_prefix(cited) if i != citation.id]
        if doc is not None:
            results.append(CitationStatus(id=citation.id, content_hash=citation.content_hash, status="changed",
                                          current_hash=doc.content_hash, source_file=doc.file,
                                          line_start=doc.line_start, line_end=doc.line_end,
                                          same_content_in=elsewhere))
        else:
            results.append(CitationStatus(id=citation.id, content_hash=citation.content_hash, status="gone",
                                          same_content_in=elsewhere))
    return results


def check_working_set(oracle: Oracle, wanted: str) -> WorkingSetCheck:
    """Does the logged consultation with this id reproduce on the index as it is now? It consults again
    (unlogged) and compares, naming the sources that changed or vanished and those the new one adds or drops."""
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
