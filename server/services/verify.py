"""Verify: is the evidence an agent cited still what the knowledge base says?

Every hit and consult source carries its chunk's sha256. Given (id, hash) pairs this says, per citation,
whether the chunk is unchanged, changed (with the current hash and line span) or gone, and which chunks
now hold exactly the cited text (a renamed heading changes the id but not the content).

`mark_verified` names notes the caller checked and found still true: each is stamped `last_verified: <today>`
(server/services/freshness.py) and so is fresh again. `working_set_id` names a logged consultation: does it still
reproduce on the index as it is now (server/services/working_set.py)?
"""

from __future__ import annotations

from oracle_server.services.app import Oracle
from oracle_server.services.freshness import mark_verified
from oracle_server.services.models import Citation, CitationStatus, VerifyRequest, VerifyResult
from oracle_server.services.working_set import check


def verify(oracle: Oracle, request: VerifyRequest) -> VerifyResult:
    # checks first, then marks: a note marked verified here must not show as a change in this same answer
    working_set = check(oracle, request.working_set_id.lower()) if request.working_set_id else None
    results = check_citations(oracle, request.citations)
    verified = mark_verified(oracle, request.mark_verified) if request.mark_verified else []
    counts = {s: sum(r.status == s for r in results) for s in ("unchanged", "changed", "gone")}
    return VerifyResult(results=results, verified=verified, working_set=working_set, **counts)


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
