"""What the index holds and how healthy it is, read from the store (and a real vector-store probe)."""

from __future__ import annotations

import json
import time

from indexer.discover import discover
from server import __version__
from server.app import Oracle


def _drift(oracle: Oracle) -> dict:
    """Files on disk that the index lacks or has stale, and indexed files that vanished (cost: stats)."""
    found = discover(oracle.settings.root, oracle.settings.folder_types)
    known = oracle.store.file_states()
    skipped = oracle.store.skipped()
    on_disk = {f.rel: f for f in found.files}
    missing = sorted(rel for rel in on_disk if rel not in known and rel not in skipped)
    vanished = sorted(rel for rel in known if rel not in on_disk)
    stale = []
    for rel, item in on_disk.items():
        state = known.get(rel)
        if state is None:
            continue
        try:
            st = item.path.stat()
        except OSError:
            continue
        if (st.st_mtime_ns, st.st_size) != (state.mtime_ns, state.size):
            stale.append(rel)
    return {
        "in_sync": not (missing or vanished or stale),
        "not_indexed": missing[:20],
        "not_indexed_count": len(missing),
        "changed_since_index": sorted(stale)[:20],
        "changed_since_index_count": len(stale),
        "vanished": vanished[:20],
        "vanished_count": len(vanished),
        "unmapped_folders": dict(sorted(found.unmapped.items())),
    }


def stats(oracle: Oracle, probe_vectors: bool = True) -> dict:
    conn = oracle.store.conn
    counts = oracle.store.counts()
    by_type = dict(conn.execute("SELECT type, count(*) FROM documents GROUP BY type ORDER BY type"))
    files_by_type = dict(conn.execute("SELECT type, count(*) FROM files GROUP BY type ORDER BY type"))
    concepts = conn.execute("SELECT count(DISTINCT concept) FROM doc_concepts").fetchone()[0]
    last = oracle.store.get_meta("last_indexed")
    vector: dict = {"probed": probe_vectors}
    if probe_vectors:
        ok, detail = oracle.vectors.probe()
        vector.update(ok=ok, detail=detail)
    warnings = [
        json.loads(w) for (w,) in conn.execute("SELECT warnings FROM files WHERE warnings != '[]'")
    ]
    return {
        "version": __version__,
        "root": str(oracle.settings.root),
        "data_dir": str(oracle.settings.data_dir),
        "documents": {"total": counts["chunks"], "by_type": by_type},
        "files": {"total": counts["files"], "by_type": files_by_type, "skipped": oracle.store.skipped(),
                  "with_warnings": len(warnings)},
        "concepts": concepts,
        "last_indexed": (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(last))) if last else None
        ),
        "embeddings": {
            "embedded_chunks": counts["embedded"],
            "coverage": round(counts["embedded"] / counts["chunks"], 4) if counts["chunks"] else 1.0,
            "cached": counts["cached_embeddings"],
        },
        "vector_store": vector,
        "drift": _drift(oracle),
    }
