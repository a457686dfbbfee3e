"""Ranking quality on BEIR SciFact (training split), through the real indexer and the real search.

Run from the repository root:

    .venv/bin/python benchmarks/quality.py [--sweep] [--json out.json]

What it does:
1. writes each corpus document as `<work>/root/learnings/<_id>.md` (`# {title}\\n\\n{text}\\n`: no `##`, so
   one chunk per document, titled with the paper's title), only when the file is missing;
2. indexes the root with `Oracle.open(...)` and `oracle.indexer.sync()`. The data directory
   (`<work>/data`) is reused, so a rerun costs a stat per file (the first run embeds 5,183 abstracts);
3. runs every training query through `oracle_server.services.capabilities.search.pipeline.search()` with limit 100 for the fts, vector and
   hybrid (rrf, weighted) modes, maps hits back to corpus ids by file stem, and prints nDCG@10,
   Recall@10, Recall@100 and MRR@10 (BEIR definitions: linear gain from the qrels grade, log2 discount,
   mean over all queries with judgements) with the median per-query latency of each mode;
4. with `--sweep`, runs each leg once per query (the keyword leg once per bm25 title weight) and fuses
   the stored legs with `oracle_server.services.capabilities.search.scoring.fuse()` over a grid, printed by nDCG@10: rrf k in
   {5, 10, 20, 40, 60, 100} x semantic weight {0.3 ... 0.7}, weighted with semantic weight {0.30 ... 0.80}
   step 0.05, each for bm25 title weights {1, 2, 3, 5} (the current defaults are always included, and
   the sweep's row for them is checked against search()). `--pool N` widens both legs' candidates.

Other options: `--max-queries N` (a quick smoke run), `--data PATH`, `--work PATH`.

The data is read from `../shared/eval-data/scifact` (relative to the repository root) and never copied
into the repository; the work folder defaults to `benchmarks/out/scifact`, which git ignores.
Reference figures on BEIR's *test* split: BM25 0.665 and all-MiniLM-L6-v2 0.645 nDCG@10.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import oracle_indexer.store.sqlite.keyword as store_module  # noqa: E402  (after the path fix, for a plain `python benchmarks/...`)
from oracle_indexer.config import Settings  # noqa: E402
from oracle_server.services.capabilities.search import scoring  # noqa: E402
from oracle_server.services.runtime.app import Oracle  # noqa: E402
from oracle_server.services.vocabulary.models import Fusion, SearchMode, SearchRequest  # noqa: E402
from oracle_server.services.capabilities.search.query import build_keyword_query  # noqa: E402
from oracle_server.services.capabilities.search.pipeline import POOL, _keyword_leg, _vector_leg, filters_for, search  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "eval-data" / "scifact"
DEFAULT_WORK = REPO / "benchmarks" / "out" / "scifact"
DEPTH = 100  # hits asked of search() per query, and the cut-off of Recall@100
CUTOFF = 10
TARGET_NDCG = 0.72

# The sweep grid; the current defaults are always added to it (see fusion_grid, title_weights).
RRF_KS = (5, 10, 20, 40, 60, 100)
RRF_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
WEIGHTED_WEIGHTS = tuple(round(0.3 + 0.05 * i, 2) for i in range(11))  # 0.30 ... 0.80
TITLE_WEIGHTS = (1.0, 2.0, 3.0, 5.0)
TITLE_COLUMN = 1  # position of `title` in BM25_WEIGHTS (id, title, heading, content, concepts)

Qrels = dict[str, dict[str, int]]
Run = dict[str, list[str]]  # query id -> corpus ids, best first, no duplicates


# -- data -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    corpus: dict[str, tuple[str, str]]  # corpus id -> (title, text)
    queries: dict[str, str]  # query id -> text, only queries with judgements
    qrels: Qrels  # query id -> corpus id -> grade


def _read_jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def read_qrels(path: Path) -> Qrels:
    qrels: Qrels = {}
    with path.open(encoding="utf-8") as fh:
        next(fh)  # header: query-id, corpus-id, score
        for line in fh:
            if not line.strip():
                continue
            query_id, corpus_id, grade = line.rstrip("\n").split("\t")
            qrels.setdefault(query_id, {})[corpus_id] = int(grade)
    return qrels


def load_dataset(folder: Path, max_queries: int | None = None) -> Dataset:
    for name in ("corpus.jsonl", "queries-train.jsonl", "qrels/train.tsv"):
        if not (folder / name).is_file():
            sys.exit(f"SciFact file missing: {folder / name} (pass --data)")
    corpus = {d["_id"]: (d.get("title") or "", d.get("text") or "") for d in _read_jsonl(folder / "corpus.jsonl")}
    qrels = read_qrels(folder / "qrels" / "train.tsv")
    queries = {q["_id"]: q["text"] for q in _read_jsonl(folder / "queries-train.jsonl") if q["_id"] in qrels}
    if max_queries:
        queries = dict(list(queries.items())[:max_queries])
    return Dataset(corpus=corpus, queries=queries, qrels={q: qrels[q] for q in queries})


def markdown_for(title: str, text: str) -> str:
    """One `#` title and the abstract: the parser makes exactly one chunk, titled with the paper's title."""
    return f"# {' '.join(title.split())}\n\n{text.strip()}\n"


def write_corpus(dataset: Dataset, root: Path) -> int:
    """Write the documents that are missing; return how many were written."""
    folder = root / "learnings"
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for corpus_id, (title, text) in dataset.corpus.items():
        path = folder / f"{corpus_id}.md"
        if not path.exists():
            path.write_text(markdown_for(title, text), encoding="utf-8")
            written += 1
    return written


def open_index(work: Path) -> Oracle:
    settings = Settings.from_env(root=work / "root", data_dir=work / "data")
    oracle = Oracle.open(settings)
    started = time.perf_counter()

    def progress(phase: str, done: int, total: int) -> None:
        if done == total or done % 640 == 0:
            log(f"  {phase}: {done}/{total} ({time.perf_counter() - started:.0f}s)")

    report = oracle.indexer.sync(progress=progress)
    log(f"sync: {report.summary()}")
    if report.vector_failed:
        sys.exit("the vector index could not be built: " + "; ".join(report.warnings))
    return oracle


def chunk_to_doc(oracle: Oracle) -> dict[str, str]:
    """Chunk id -> corpus id (the file stem), for the legs, which return chunk ids."""
    rows = oracle.store.conn.execute("SELECT id, file FROM documents")
    return {chunk_id: Path(file).stem for chunk_id, file in rows}


# -- metrics --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metrics:
    ndcg_10: float
    recall_10: float
    recall_100: float
    mrr_10: float


def dedupe(ids: Sequence[str], depth: int = DEPTH) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for doc_id in ids:
        if doc_id not in seen:
            seen.add(doc_id)
            out.append(doc_id)
            if len(out) == depth:
                break
    return out


def query_metrics(ranked: Sequence[str], grades: dict[str, int]) -> Metrics:
    """BEIR (pytrec_eval) definitions: gain = grade, discount log2(rank + 1), relevant = grade > 0."""
    relevant = {d for d, g in grades.items() if g > 0}
    if not relevant:
        return Metrics(0.0, 0.0, 0.0, 0.0)
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:CUTOFF]))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:CUTOFF]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    first = next((i for i, d in enumerate(ranked[:CUTOFF], start=1) if d in relevant), None)
    return Metrics(
        ndcg_10=dcg / idcg,
        recall_10=len(relevant.intersection(ranked[:CUTOFF])) / len(relevant),
        recall_100=len(relevant.intersection(ranked[:DEPTH])) / len(relevant),
        mrr_10=1.0 / first if first else 0.0,
    )


def evaluate(run: Run, qrels: Qrels) -> Metrics:
    """Mean over every judged query; a query with no hits scores zero."""
    per_query = [query_metrics(run.get(q, []), grades) for q, grades in qrels.items()]
    n = len(per_query)
    return Metrics(*(sum(getattr(m, f) for m in per_query) / n for f in Metrics.__dataclass_fields__))


# -- the real search, per mode --------------------------------------------------------------------


@dataclass(frozen=True)
class Mode:
    name: str
    mode: SearchMode
    fusion: Fusion | None = None


MODES = (
    Mode("fts", "fts"),
    Mode("vector", "vector"),
    Mode("hybrid rrf", "hybrid", "rrf"),
    Mode("hybrid weighted", "hybrid", "weighted"),
)


@dataclass(frozen=True)
class ModeResult:
    name: str
    metrics: Metrics
    median_ms: float


def run_mode(oracle: Oracle, dataset: Dataset, mode: Mode) -> ModeResult:
    run: Run = {}
    latencies: list[float] = []
    for query_id, text in dataset.queries.items():
        request = SearchRequest(query=text, limit=DEPTH, mode=mode.mode, fusion=mode.fusion)
        started = time.perf_counter()
        result = search(oracle, request)
        latencies.append((time.perf_counter() - started) * 1000)
        if result.meta.warnings:
            log(f"  {mode.name} q{query_id}: {'; '.join(result.meta.warnings)}")
        run[query_id] = dedupe([Path(hit.source_file).stem for hit in result.hits])
    return ModeResult(mode.name, evaluate(run, dataset.qrels), statistics.median(latencies))


def run_modes(oracle: Oracle, dataset: Dataset) -> list[ModeResult]:
    search(oracle, SearchRequest(query="warm up the model and the vector store", mode="hybrid"))
    results = []
    for mode in MODES:
        log(f"searching: {mode.name} ({len(dataset.queries)} queries)")
        results.append(run_mode(oracle, dataset, mode))
    return results


# -- the sweep ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepRow:
    title_weight: float | None  # bm25 weight of the title column; None for the vector leg alone
    method: str  # "fts" | "vector" | "rrf" | "weighted"
    k: int | None
    semantic_weight: float | None
    metrics: Metrics


@contextmanager
def bm25_weights(weights: tuple[float, ...]) -> Iterator[None]:
    """The keyword leg reads oracle_indexer.store.sqlite.keyword.BM25_WEIGHTS at query time; swap it for the block."""
    saved = store_module.BM25_WEIGHTS
    store_module.BM25_WEIGHTS = weights
    try:
        yield
    finally:
        store_module.BM25_WEIGHTS = saved


def with_title_weight(title_weight: float) -> tuple[float, ...]:
    weights = list(store_module.BM25_WEIGHTS)
    weights[TITLE_COLUMN] = title_weight
    return tuple(weights)


Legs = dict[str, list[scoring.LegHit]]  # query id -> one leg's candidates (chunk ids)


def vector_legs(oracle: Oracle, dataset: Dataset, pool: int) -> Legs:
    filters = filters_for(SearchRequest(query="unfiltered"))
    return {q: _vector_leg(oracle, text, filters, pool) for q, text in dataset.queries.items()}


def keyword_legs(oracle: Oracle, dataset: Dataset, pool: int) -> Legs:
    filters = filters_for(SearchRequest(query="unfiltered"))
    return {q: _keyword_leg(oracle, build_keyword_query(text), filters, pool)[0] for q, text in dataset.queries.items()}


def fused_run(
    fts: Legs,
    vector: Legs,
    docs: dict[str, str],
    method: str,
    k: int = scoring.RRF_K,
    semantic_weight: float | None = None,
) -> Run:
    """Fuse stored legs exactly as search() does; "fts" or "vector" ranks that leg alone.

    semantic_weight None means the method's own default, as in search().
    """
    run: Run = {}
    for query_id in fts.keys() | vector.keys():
        if method in ("fts", "vector"):
            fused = scoring.single_leg((fts if method == "fts" else vector).get(query_id, []), method)
        else:
            fused = scoring.fuse(fts.get(query_id, []), vector.get(query_id, []), method, k=k, semantic_weight=semantic_weight)
        run[query_id] = dedupe([docs[f.id] for f in fused if f.id in docs])
    return run


def fusion_grid() -> list[tuple[str, int | None, float]]:
    """(method, k, semantic_weight) for every fused setting of the sweep, the current defaults included."""
    ks = sorted({*RRF_KS, scoring.RRF_K})
    rrf_weights = sorted({*RRF_WEIGHTS, scoring.RRF_SEMANTIC_WEIGHT})
    weighted_weights = sorted({*WEIGHTED_WEIGHTS, scoring.WEIGHTED_SEMANTIC_WEIGHT})
    grid: list[tuple[str, int | None, float]] = [("rrf", k, w) for k in ks for w in rrf_weights]
    return grid + [("weighted", None, w) for w in weighted_weights]


def title_weights() -> list[float]:
    return sorted({*TITLE_WEIGHTS, store_module.BM25_WEIGHTS[TITLE_COLUMN]})


def sweep(oracle: Oracle, dataset: Dataset, pool: int = POOL) -> list[SweepRow]:
    """Each leg once per query (the keyword leg once per title weight), then every fusion setting."""
    docs = chunk_to_doc(oracle)
    log(f"sweep: vector leg for {len(dataset.queries)} queries (pool {pool})")
    vector = vector_legs(oracle, dataset, pool)
    rows = [SweepRow(None, "vector", None, None, evaluate(fused_run({}, vector, docs, "vector"), dataset.qrels))]
    for title_weight in title_weights():
        weights = with_title_weight(title_weight)
        log(f"sweep: keyword leg with bm25 weights {weights}")
        with bm25_weights(weights):
            fts = keyword_legs(oracle, dataset, pool)
        rows.append(SweepRow(title_weight, "fts", None, None, evaluate(fused_run(fts, {}, docs, "fts"), dataset.qrels)))
        for method, k, w in fusion_grid():
            run = fused_run(fts, vector, docs, method, k=k or scoring.RRF_K, semantic_weight=w)
            rows.append(SweepRow(title_weight, method, k, w, evaluate(run, dataset.qrels)))
    rows.sort(key=lambda r: (-r.metrics.ndcg_10, -r.metrics.recall_100))
    return rows


def check_sweep(rows: list[SweepRow], results: list[ModeResult], pool: int) -> None:
    """The sweep's row for the current defaults must reproduce search() (same legs, same fusion)."""
    if pool != POOL:
        return
    title = store_module.BM25_WEIGHTS[TITLE_COLUMN]
    expected = {r.name: r.metrics for r in results}
    checks = [
        ("fts", lambda r: r.method == "fts" and r.title_weight == title),
        ("vector", lambda r: r.method == "vector"),
        ("hybrid rrf", lambda r: r.method == "rrf" and r.title_weight == title and r.k == scoring.RRF_K
         and r.semantic_weight == scoring.RRF_SEMANTIC_WEIGHT),
        ("hybrid weighted", lambda r: r.method == "weighted" and r.title_weight == title
         and r.semantic_weight == scoring.WEIGHTED_SEMANTIC_WEIGHT),
    ]
    for name, match in checks:
        row = next((r for r in rows if match(r)), None)
        if row is None:
            continue
        same = math.isclose(row.metrics.ndcg_10, expected[name].ndcg_10, abs_tol=1e-9)
        log(f"sweep vs search(), {name}: {'identical' if same else 'DIFFERENT'} nDCG@10"
            f" ({row.metrics.ndcg_10:.4f} vs {expected[name].ndcg_10:.4f})")


# -- output ---------------------------------------------------------------------------------------


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def current_defaults() -> dict[str, object]:
    return {
        "fusion": scoring.DEFAULT_FUSION,
        "rrf_k": scoring.RRF_K,
        "rrf_semantic_weight": scoring.RRF_SEMANTIC_WEIGHT,
        "weighted_semantic_weight": scoring.WEIGHTED_SEMANTIC_WEIGHT,
        "bm25_weights": list(store_module.BM25_WEIGHTS),
        "pool": POOL,
    }


def describe_defaults() -> str:
    return (f"fusion={scoring.DEFAULT_FUSION}; rrf k={scoring.RRF_K} w={scoring.RRF_SEMANTIC_WEIGHT};"
            f" weighted w={scoring.WEIGHTED_SEMANTIC_WEIGHT}; bm25={store_module.BM25_WEIGHTS}; pool={POOL}")


def _figures(m: Metrics) -> str:
    return f"{m.ndcg_10:8.4f} {m.recall_10:8.4f} {m.recall_100:8.4f} {m.mrr_10:8.4f}"


HEADER = f"{'nDCG@10':>8} {'R@10':>8} {'R@100':>8} {'MRR@10':>8}"


def print_modes(results: list[ModeResult], n_queries: int) -> None:
    print(f"\nSciFact train, {n_queries} queries; defaults: {describe_defaults()}")
    print(f"{'mode':<16} {HEADER} {'p50 ms':>8}")
    for r in results:
        print(f"{r.name:<16} {_figures(r.metrics)} {r.median_ms:8.1f}")
    by_name = {r.name: r.metrics.ndcg_10 for r in results}
    best_leg = max(by_name["fts"], by_name["vector"])
    print(f"target: hybrid nDCG@10 >= {TARGET_NDCG} and above both legs (best leg {best_leg:.4f})")
    for name in ("hybrid rrf", "hybrid weighted"):
        ok = by_name[name] >= TARGET_NDCG and by_name[name] > best_leg
        default = " (default fusion)" if name == f"hybrid {scoring.DEFAULT_FUSION}" else ""
        print(f"  {name}{default}: {by_name[name]:.4f} {'meets' if ok else 'misses'} it")


def _describe(row: SweepRow) -> str:
    if row.method == "rrf":
        return f"rrf k={row.k} w={row.semantic_weight}"
    if row.method == "weighted":
        return f"weighted w={row.semantic_weight}"
    return row.method


def print_sweep(rows: list[SweepRow]) -> None:
    print("\nSweep (sorted by nDCG@10; title = bm25 title-column weight, w = semantic weight)")
    print(f"{'title':>5}  {'setting':<22} {HEADER}")
    for r in rows:
        title = "-" if r.title_weight is None else f"{r.title_weight:g}"
        print(f"{title:>5}  {_describe(r):<22} {_figures(r.metrics)}")
    print("\nBest per method:")
    for method in ("fts", "vector", "rrf", "weighted"):
        best = next(r for r in rows if r.method == method)
        title = "" if best.title_weight is None else f" title={best.title_weight:g}"
        print(f"  {_describe(best):<22}{title:<10} nDCG@10 {best.metrics.ndcg_10:.4f}  R@100 {best.metrics.recall_100:.4f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="SciFact folder (corpus.jsonl, queries-train.jsonl, qrels/)")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="work folder: root/ (markdown) and data/ (index)")
    parser.add_argument("--sweep", action="store_true", help="also sweep fusion parameters and the bm25 title weight")
    parser.add_argument("--pool", type=int, default=POOL, help="candidates per leg in the sweep (search() uses POOL)")
    parser.add_argument("--max-queries", type=int, default=None, help="evaluate only the first N queries (smoke test)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON to this path")
    args = parser.parse_args(argv)

    dataset = load_dataset(args.data.resolve(), args.max_queries)
    work = args.work.resolve()
    written = write_corpus(dataset, work / "root")
    log(f"corpus: {len(dataset.corpus)} documents ({written} written) under {work / 'root'}; {len(dataset.queries)} queries")
    oracle = open_index(work)
    try:
        results = run_modes(oracle, dataset)
        print_modes(results, len(dataset.queries))
        rows = sweep(oracle, dataset, args.pool) if args.sweep else []
        if rows:
            check_sweep(rows, results, args.pool)
            print_sweep(rows)
    finally:
        oracle.close()

    if args.json:
        out = {
            "dataset": "scifact",
            "split": "train",
            "queries": len(dataset.queries),
            "documents": len(dataset.corpus),
            "defaults": current_defaults(),
            "modes": [{"name": r.name, **asdict(r.metrics), "median_ms": round(r.median_ms, 2)} for r in results],
            "sweep": [
                {"title_weight": r.title_weight, "method": r.method, "k": r.k, "semantic_weight": r.semantic_weight,
                 "pool": args.pool, **asdict(r.metrics)}
                for r in rows
            ],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
