"""Scale benchmark: generated knowledge bases of 1k, 10k and 100k chunks through the real indexer and search.

    .venv/bin/python benchmarks/scale.py [--sizes 1000,10000,100000] [--queries 200] [--json out.json]
        [--database-url URL] [--seed-from FROM.db] [--server-runs 0] [--search-only --work DIR]

`--database-url` (a PostgreSQL server, any database on it) puts each size's store in a new database of its own on
that server (the PostgreSQL store, ORACLE_DATABASE_URL) instead of SQLite + Chroma under the data dir.
`--seed-from` copies an existing index's embedding caches (benchmarks/seed_cache.py; `{size}` in the path is
replaced by the size) into each new store first, so the embedding phase measures the store, not the model.
`--search-only` (with `--work` of an earlier `--keep` run) measures the searches again on the indexes that run
left, each on its own store.

For each size a knowledge base is generated (deterministic seed) in a temporary folder, never in the
repository: notes built from sentences of the SciFact corpus (read at run time from
../shared/eval-data/scifact), spread over principles/, learnings/ and retrospectives/ (Oracle v2's dated
retro layout), with YAML frontmatter (title, tags, date, some with a project), a `#` title, an intro and
several `##` sections per file (principles also carry bullets, which the parser makes chunks of), and some
Thai sentences and headings. Files are added until the parser's chunk count is exactly the size asked for.

Measured per size:
- `oracle index --json` in a subprocess over an empty data directory: wall clock, the keyword phase and
  the embedding phase (model + Chroma upsert) from its report, in chunks/s, and the peak RSS of that
  process (os.wait4's rusage for that one child);
- the data directory on disk (SQLite, Chroma, total);
- `oracle index` again with nothing changed (wall, and the sync alone);
- warm search latency p50/p95 in-process through `oracle_server.services.capabilities.search.pipeline.run_search` (limit 10) over a fixed set
  of SciFact training queries: fts, vector, hybrid, hybrid with a type filter, with a concepts filter and
  with group_by_file; plus the hybrid legs timed one by one (keyword leg incl. its count, query
  embedding, Chroma query, the hybrid total) to show where the time goes;
- spawn `oracle serve` (MCP over stdio) until its first `oracle_search` (hybrid) is answered;
- growth ratios between consecutive sizes.
The machine's load average is recorded at the start and end of each size (other work may share it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
from trees import importable  # noqa: E402  (benchmarks/ is sys.path[0] for a script)
for extra in (REPO, REPO / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from _procs import oracle_cmd  # noqa: E402  (shared with the tests)
from speed import percentile  # noqa: E402

from oracle_indexer.notes.parse import parse_markdown  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "eval-data" / "scifact"
DEFAULT_SIZES = (1_000, 10_000, 100_000)
TARGET_HYBRID_P95_MS = 100.0
LIMIT = 10
FILTER_TYPE = "principle"
FILTER_CONCEPT = "cardiology"

# (folder type, share of files)
KINDS = (("principle", 0.10), ("learning", 0.55), ("retro", 0.35))
HEADINGS = {
    "learning": ("Context", "What we found", "Why it matters", "Evidence", "How to apply", "Caveats",
                 "Related work", "Open questions", "Pattern", "Counter-example", "Method", "Numbers"),
    "retro": ("Summary", "What happened", "What went well", "What went wrong", "Decisions", "Timeline",
              "Lessons", "Next steps", "Blockers", "Follow-up", "Surprises", "Data"),
    "principle": ("Rule", "Rationale", "When it applies", "Exceptions", "Examples", "How to check",
                  "Trade-offs", "History"),
}
THAI_HEADINGS = ("บทเรียน", "สรุป", "ขั้นตอนถัดไป", "สิ่งที่พบ")
# Written for this benchmark (plain statements about work and research notes).
THAI_SENTENCES = (
    "บันทึกบทเรียนทุกครั้งหลังจบงาน เพื่อไม่ให้ทำผิดซ้ำ",
    "ทดสอบกับข้อมูลจริงก่อนปล่อยระบบเสมอ",
    "ความจำของเอเจนต์ต้องค้นหาได้ภายในไม่กี่วินาที",
    "อย่าลบข้อมูลเดิม ให้เขียนเวอร์ชันใหม่แทน",
    "การทบทวนย้อนหลังช่วยให้ทีมเห็นรูปแบบที่เกิดซ้ำ",
    "วัดผลก่อนปรับแต่งประสิทธิภาพทุกครั้ง",
    "เขียนเหตุผลไว้ด้วย ไม่ใช่แค่สิ่งที่ทำ",
    "ผลการทดลองนี้สอดคล้องกับงานวิจัยก่อนหน้า",
    "ควรตรวจสอบกลุ่มตัวอย่างให้ครบก่อนสรุปผล",
    "ข้อสรุปนี้ยังต้องการหลักฐานเพิ่มเติม",
    "เซสชันนี้ใช้เวลานานกว่าที่คาดไว้เพราะดัชนีเสียหาย",
    "แบ่งงานใหญ่เป็นชิ้นเล็กแล้วค่อยรวมกลับ",
)
# (tag, weight): a few research fields, a few engineering words that are also concept keywords.
TAGS = (
    ("immunology", 8), ("oncology", 8), ("genetics", 7), ("neuroscience", 6), ("epidemiology", 5),
    ("cardiology", 5), ("metabolism", 5), ("microbiology", 4), ("pharmacology", 4), ("stem-cells", 3),
    ("aging", 3), ("statistics", 3), ("testing", 4), ("performance", 3), ("debugging", 3), ("review", 3),
    ("workflow", 3), ("memory", 2), ("architecture", 2), ("retrospective", 2), ("sqlite", 1), ("embedding", 1),
)
PROJECTS = ("atlas", "trial-db", "lab-notes", "oracle")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")
_SLUG = re.compile(r"[^a-z0-9]+")


# -- the generated knowledge base ---------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    titles: list[str]
    sentences: list[str]
    queries: list[str]


def load_corpus(folder: Path, n_queries: int) -> Corpus:
    for name in ("corpus.jsonl", "queries-train.jsonl"):
        if not (folder / name).is_file():
            sys.exit(f"SciFact file missing: {folder / name} (pass --data)")
    titles: list[str] = []
    sentences: list[str] = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            title = " ".join((doc.get("title") or "").split()).rstrip(".")
            if 10 <= len(title) <= 90:
                titles.append(title)
            for sentence in _SENTENCE_SPLIT.split(" ".join((doc.get("text") or "").split())):
                if 40 <= len(sentence) <= 220:
                    sentences.append(sentence)
    with (folder / "queries-train.jsonl").open(encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for line in fh if line.strip()][:n_queries]
    return Corpus(titles=titles, sentences=sentences, queries=queries)


class Generator:
    """Deterministic notes: the same seed and size give the same files."""

    def __init__(self, corpus: Corpus, seed: int) -> None:
        self.c = corpus
        self.rng = random.Random(seed)
        self.tags, weights = zip(*TAGS)
        self.tag_weights = list(weights)
        self.count = 0

    def _para(self, lo: int, hi: int, thai: float = 0.06) -> str:
        rng = self.rng
        text = " ".join(rng.choice(self.c.sentences) for _ in range(rng.randint(lo, hi)))
        if rng.random() < thai:
            text += " " + rng.choice(THAI_SENTENCES)
        return text

    def _heading(self, kind: str, used: set[str]) -> str:
        rng = self.rng
        while True:
            if rng.random() < 0.04:
                heading = rng.choice(THAI_HEADINGS)
            else:
                heading = rng.choice(HEADINGS[kind])
                if rng.random() < 0.5:
                    heading += ": " + " ".join(rng.choice(self.c.titles).split()[:rng.randint(2, 4)])
            if heading not in used:
                used.add(heading)
                return heading

    def note(self, kind: str, sections: int) -> tuple[str, str]:
        """(relative path, markdown) of one note with an intro and `sections` `##` sections."""
        rng = self.rng
        self.count += 1
        n = self.count
        title = rng.choice(self.c.titles)
        day = dt.date(2023, 1, 1) + dt.timedelta(days=rng.randrange(900))
        tags = sorted(set(rng.choices(self.tags, weights=self.tag_weights, k=rng.randint(1, 3))))
        slug = _SLUG.sub("-", title.lower()).strip("-")[:48].rstrip("-") or "note"
        if kind == "principle":
            rel = f"principles/{slug}-{n}.md"
        elif kind == "learning":
            rel = f"learnings/{day:%Y-%m}/{day:%Y-%m-%d}_{slug}-{n}.md"
        else:
            rel = f"retrospectives/{day:%Y-%m}/{day:%d}/{rng.randrange(24):02d}.{rng.randrange(60):02d}_{slug}-{n}.md"
        front = [f"title: {json.dumps(title, ensure_ascii=False)}", f"tags: [{', '.join(tags)}]", f"date: {day.isoformat()}"]
        if rng.random() < 0.3:
            front.append(f"project: {rng.choice(PROJECTS)}")
        lines = ["---", *front, "---", f"# {title}", "", self._para(1, 1), ""]
        used: set[str] = set()
        for _ in range(sections):
            lines += [f"## {self._heading(kind, used)}", "", self._para(1, 2), ""]
            if kind == "principle":
                lines += [f"- {self._para(1, 1, thai=0.03)}" for _ in range(rng.randint(0, 2))] + [""]
        return rel, "\n".join(lines)


def generate(corpus: Corpus, root: Path, chunks: int, seed: int) -> dict:
    """Write notes under root until the parser counts exactly `chunks` chunks."""
    gen = Generator(corpus, seed)
    kinds, shares = zip(*KINDS)
    total = files = 0
    by_type: dict[str, int] = {}
    while total < chunks:
        kind = gen.rng.choices(kinds, weights=shares)[0]
        sections = gen.rng.randint(2, 6)
        rel, text = gen.note(kind, sections)
        parsed = parse_markdown(text, rel, kind)
        while total + len(parsed.chunks) > chunks:  # the last note: trim it to the exact count
            gen.count -= 1
            kind, sections = "learning", max(0, chunks - total - 1)
            rel, text = gen.note(kind, sections)
            parsed = parse_markdown(text, rel, kind)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        total += len(parsed.chunks)
        files += 1
        by_type[kind] = by_type.get(kind, 0) + len(parsed.chunks)
    return {"files": files, "chunks": total, "chunks_by_type": dict(sorted(by_type.items()))}


# -- measurements --------------------------------------------------------------------------------


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_index(env: dict[str, str]) -> tuple[dict, float, float]:
    """(report, wall seconds, peak RSS MiB) of one `oracle index --json` subprocess (its own rusage)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        started = time.perf_counter()
        proc = subprocess.Popen([*oracle_cmd(), "index", "--json"], env=env, stdout=out, stderr=subprocess.PIPE,
                                text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        stderr = proc.stderr.read() if proc.stderr else ""
        if proc.returncode != 0:
            sys.exit(f"oracle index failed ({proc.returncode}): {stderr}")
        out.seek(0)
        return json.loads(out.read()), wall, usage.ru_maxrss / 1024


def disk_usage(path: Path) -> int:
    """Bytes allocated on disk under path (st_blocks, so sparse or preallocated files count as stored)."""
    if path.is_file():
        return path.stat().st_blocks * 512
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def summary_ms(samples: list[float], cpu: list[float] | None = None) -> dict[str, float]:
    """Wall-clock p50/p95/max; with `cpu`, also the process CPU time per search (all its threads), which
    other work on the machine inflates far less than wall time."""
    out = {"p50_ms": round(statistics.median(samples), 2), "p95_ms": round(percentile(samples, 0.95), 2),
           "max_ms": round(max(samples), 2), "n": len(samples)}
    if cpu:
        out |= {"cpu_p50_ms": round(statistics.median(cpu), 2), "cpu_p95_ms": round(percentile(cpu, 0.95), 2)}
    return out


SEARCH_CONFIGS: dict[str, dict] = {
    "fts": {"mode": "fts"},
    "vector": {"mode": "vector"},
    "hybrid": {"mode": "hybrid"},
    "hybrid_type_filter": {"mode": "hybrid", "type": FILTER_TYPE},
    "hybrid_concept_filter": {"mode": "hybrid", "concepts": [FILTER_CONCEPT]},
    "hybrid_group_by_file": {"mode": "hybrid", "group_by_file": True},
}


def search_latency(root: Path, data_dir: Path, queries: list[str], warmup: int, database_url: str | None = None,
                   keyword_from: str = "working-copy") -> dict:
    """Warm in-process latency of run_search per configuration, and the hybrid legs timed one by one. With the
    PostgreSQL store the Oracle is opened as an engine opens it (a team link); `keyword_from="working-copy"` builds the
    working copy's own index and has it follow the database first, so the keyword leg reads it (as an engine's does
    a few seconds after start), `"database"` keeps the keyword leg in SQL."""
    from chromadb.api.client import SharedSystemClient

    from oracle_indexer.config import Settings
    from oracle_server.services.capabilities.search import scoring
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.vocabulary.models import SearchRequest
    from oracle_server.services.capabilities.search.pipeline import POOL, _keyword_leg, _Legs, _plan, _total, run_search

    extra = {"database_url": database_url} if database_url else {}
    oracle = Oracle.open(Settings.from_env(root=root, data_dir=data_dir, **extra), offline_ok=bool(database_url))
    try:
        if oracle.backend.team and keyword_from == "working-copy":
            began = time.perf_counter()
            oracle.backend.prepare_now()  # type: ignore[attr-defined]  # a TeamBackend
            log(f"working copy's own index: in step in {time.perf_counter() - began:.1f} s ({oracle.backend.prepared})")
        source = getattr(oracle.store, "keyword_source", lambda: "this index")()
        if database_url:
            log(f"PostgreSQL buffers warmed: {prewarm(database_url)}")
        figures: dict[str, dict] = {}
        totals: dict[str, list[int]] = {}
        for name, params in SEARCH_CONFIGS.items():
            requests = [SearchRequest(query=q, limit=LIMIT, **params) for q in queries]
            for request in requests[:warmup]:
                run_search(oracle, request)
            samples: list[float] = []
            cpu: list[float] = []
            totals[name] = []
            for request in requests:
                t0, c0 = time.perf_counter(), time.process_time()
                result = run_search(oracle, request)
                samples.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
                totals[name].append(result.total)
                failures = [w for w in result.meta.warnings if not w.startswith("no strong match")]
                if failures:  # a weak match is an answer; a failed leg would make the timing meaningless
                    sys.exit(f"search warned ({name}): {failures}")
            figures[name] = summary_ms(samples, cpu)
            figures[name]["mean_total"] = round(statistics.fmean(totals[name]), 1)

        # Where the hybrid time goes: each piece alone, in the order run_search uses them.
        legs: dict[str, list[float]] = {"keyword_leg": [], "embed_query": [], "chroma_query": [], "filter_check": [],
                                        "documents_by_id": [], "hybrid_total": []}
        for q in queries:
            request = SearchRequest(query=q, limit=LIMIT)
            plan = _plan(oracle, request)
            kq, filters = plan.kq, plan.filters
            t0 = time.perf_counter()
            fts, fts_total = _keyword_leg(oracle, kq, filters, POOL)
            t1 = time.perf_counter()
            vector = oracle.embedder.embed([q])[0]
            t2 = time.perf_counter()
            hits = oracle.vectors.query(vector, POOL)
            t3 = time.perf_counter()
            oracle.store.filtered_ids([h.id for h in hits], filters)
            t4 = time.perf_counter()
            oracle.store.documents_by_id([h.id for h in fts] + [h.id for h in hits])
            t5 = time.perf_counter()
            legs_obj = _Legs(fts=fts, fts_total=fts_total, warnings=[], vector_ok=True,
                             vector=[scoring.LegHit(h.id, h.similarity) for h in hits])
            _total(oracle, plan, "hybrid", legs_obj)
            t6 = time.perf_counter()
            for key, a, b in (("keyword_leg", t0, t1), ("embed_query", t1, t2), ("chroma_query", t2, t3),
                              ("filter_check", t3, t4), ("documents_by_id", t4, t5), ("hybrid_total", t5, t6)):
                legs[key].append((b - a) * 1000)
        figures["hybrid_legs"] = {k: summary_ms(v) for k, v in legs.items()}

        fetch = oracle.store.fetch  # either store's reads, in sqlite3's `?` dialect
        chunks = fetch("SELECT count(*) FROM documents")[0][0]
        typed = fetch("SELECT count(*) FROM documents WHERE type = ?", (FILTER_TYPE,))[0][0]
        tagged = fetch("SELECT count(*) FROM doc_concepts WHERE concept = ?", (FILTER_CONCEPT,))[0][0]
        figures["filter_share"] = {"type": round(typed / chunks, 3), "concept": round(tagged / chunks, 3)}
        figures["mean_embed_tokens"] = mean_tokens(oracle)
        figures["keyword_leg_reads"] = source
        return figures
    finally:
        oracle.close()
        SharedSystemClient.clear_system_cache()  # let the next size's Chroma replace this one in memory


def prewarm(database_url: str) -> dict[str, int]:
    """The vectors, their HNSW index and the sections read into PostgreSQL's shared buffers (contrib's pg_prewarm),
    as a database that serves searches all day holds them, and as Chroma holds its whole HNSW graph in memory once
    opened: a run that follows one reading the postings (the SQL keyword leg: ~1.2 GB at 100,000 sections) would
    otherwise meet a cold index. Block counts read per relation."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        return {rel: int(conn.execute("SELECT pg_prewarm(%s)", [rel]).fetchone()[0])
                for rel in ("chunk_vectors_hnsw", "chunk_vectors", "documents", "files")
                if conn.execute("SELECT to_regclass(%s)", [rel]).fetchone()[0]}


def mean_tokens(oracle, sample: int = 2000) -> float:
    """Mean model tokens per embedded text (capped like the model), over an evenly spaced sample."""
    from tokenizers import Tokenizer

    from oracle_indexer.models.embed import MAX_TOKENS, model_files

    tokenizer = Tokenizer.from_file(str(model_files()[1]))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()  # tokenizer.json pads to 128 by default; the embedder does not
    ids = [r[0] for r in oracle.store.fetch("SELECT id FROM documents ORDER BY rowid")]
    picked = ids[:: max(1, len(ids) // sample)]
    texts = list(oracle.store.embed_texts(picked).values())
    return round(statistics.fmean(len(e.ids) for e in tokenizer.encode_batch(texts)), 1)


def first_search(env: dict[str, str], query: str, repeats: int) -> dict:
    """Seconds from spawning `oracle serve` (stdio) to the answer of its first oracle_search (hybrid)."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    cmd = oracle_cmd()

    async def once() -> tuple[float, dict]:
        params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "serve", "--standalone"], env=env, cwd=str(REPO))
        started = time.perf_counter()
        async with Client(params, read_timeout_seconds=300) as client:
            result = await client.call_tool("oracle_search", {"query": query, "limit": LIMIT})
            took = time.perf_counter() - started
        if result.is_error:
            sys.exit(f"first search failed: {result.content[0].text}")
        return took, result.structured_content

    samples: list[float] = []
    meta: dict = {}
    if repeats <= 0:
        return {"median_s": None, "max_s": None, "runs": 0, "mode": None, "warnings": []}
    for _ in range(repeats):
        took, content = anyio.run(once)
        samples.append(took)
        meta = content["meta"]
    return {"median_s": round(statistics.median(samples), 3), "max_s": round(max(samples), 3), "runs": repeats,
            "mode": meta.get("mode"), "warnings": meta.get("warnings", [])}


def new_database(server_url: str, size: int) -> str:
    """A new, empty database on the PostgreSQL server at `server_url` for one size; its URL."""
    from urllib.parse import urlparse, urlunparse

    import psycopg

    name = f"oracle_scale_{size}_{int(time.time())}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING "UTF8"')
    return urlunparse(urlparse(server_url)._replace(path="/" + name))


def database_bytes(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])


def seed(source: Path, data_dir: Path, database_url: str | None) -> None:
    where = ["--database-url", database_url] if database_url else ["--data-dir", str(data_dir)]
    data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(HERE / "seed_cache.py"), str(source), *where], check=True,
                   env={**os.environ, "PYTHONPATH": importable(REPO)}, stdout=subprocess.DEVNULL)


def search_again(corpus: Corpus, size: int, work: Path, warmup: int, keyword_from: str = "working-copy") -> dict:
    """The searches of an earlier `--keep` run, measured again on the index it left (its `store.json`)."""
    base = work / f"kb-{size}"
    kept = json.loads((base / "store.json").read_text(encoding="utf-8"))
    load_start = loadavg()
    latency = search_latency(base / "root", base / "data", corpus.queries, warmup, kept.get("database_url"),
                             keyword_from)
    log(f"[{size}] hybrid p50 {latency['hybrid']['p50_ms']} ms, p95 {latency['hybrid']['p95_ms']} ms")
    return {"store": kept["store"], "search": latency, "load": {"start": load_start, "end": loadavg()}}


def measure_size(corpus: Corpus, size: int, work: Path, seed_: int, warmup: int, server_runs: int,
                 server_url: str | None = None, seed_from: Path | None = None) -> dict:
    load_start = loadavg()
    base = work / f"kb-{size}"
    root, data_dir = base / "root", base / "data"
    t0 = time.perf_counter()
    generated = generate(corpus, root, size, seed_)
    generate_s = time.perf_counter() - t0
    log(f"[{size}] generated {generated['files']} files, {generated['chunks']} chunks in {generate_s:.1f}s")
    env = {**os.environ, "ORACLE_ROOT": str(root), "ORACLE_DATA_DIR": str(data_dir), "PYTHONPATH": importable(REPO)}
    env.pop("ORACLE_DATABASE_URL", None)
    database_url = new_database(server_url, size) if server_url else None
    if database_url:
        env["ORACLE_DATABASE_URL"] = database_url
    (base / "store.json").write_text(json.dumps({"store": "postgresql" if database_url else "sqlite",
                                                 "database_url": database_url}), encoding="utf-8")
    if seed_from:
        seed(Path(str(seed_from).replace("{size}", str(size))), data_dir, database_url)
        log(f"[{size}] embedding caches seeded from {seed_from}")

    full, wall, peak = run_index(env)
    if full["vector_failed"] or full["chunks_written"] != size:
        sys.exit(f"index incomplete: {full['chunks_written']} chunks, warnings {full['warnings'][:3]}")
    log(f"[{size}] indexed in {wall:.1f}s (keyword {full['keyword_seconds']:.1f}s,"
        f" vector {full['vector_seconds']:.1f}s), peak {peak:.0f} MiB")
    sqlite_bytes = sum(disk_usage(p) for p in data_dir.glob("oracle.db*"))
    chroma_bytes = disk_usage(data_dir / "chroma")
    total_bytes = disk_usage(data_dir)
    if database_url:  # the store is the database (the data dir keeps the engine's own files, and the logs)
        sqlite_bytes = database_bytes(database_url)
        total_bytes += sqlite_bytes

    unchanged, unchanged_wall, _ = run_index(env)
    log(f"[{size}] unchanged re-index {unchanged_wall:.2f}s")
    latency = search_latency(root, data_dir, corpus.queries, warmup, database_url)
    log(f"[{size}] hybrid p50 {latency['hybrid']['p50_ms']} ms, p95 {latency['hybrid']['p95_ms']} ms")
    startup = first_search(env, corpus.queries[0], server_runs)
    log(f"[{size}] serve -> first search {startup['median_s']}s")
    mib = 1024 * 1024
    return {
        "store": "postgresql" if database_url else "sqlite",
        "seeded_from": str(seed_from) if seed_from else None,
        "generated": {**generated, "seconds": round(generate_s, 2)},
        "index": {
            "wall_s": round(wall, 2),
            "sync_s": round(full["seconds"], 2),
            "keyword_s": round(full["keyword_seconds"], 2),
            "keyword_chunks_per_s": round(full["chunks_written"] / full["keyword_seconds"], 1),
            "embedding_s": round(full["vector_seconds"], 2),
            "embedded": full["embedded"],
            "cached": full.get("embeddings_cached"),
            "embedding_chunks_per_s": round(full["chunks_written"] / full["vector_seconds"], 1),
            "peak_rss_mib": round(peak, 1),
        },
        "disk": {"sqlite_mib": round(sqlite_bytes / mib, 1), "chroma_mib": round(chroma_bytes / mib, 1),
                 "total_mib": round(total_bytes / mib, 1), "bytes_per_chunk": round(total_bytes / size)},
        "unchanged_reindex": {"wall_s": round(unchanged_wall, 2), "sync_s": round(unchanged["seconds"], 3),
                              "unchanged_files": unchanged["unchanged"], "embedded": unchanged["embedded"]},
        "search": latency,
        "serve_first_search": startup,
        "load": {"start": load_start, "end": loadavg()},
    }


# -- report --------------------------------------------------------------------------------------

# (label, path into a size's figures): the rows of the printed table, and the figures whose growth is shown.
ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("files", ("generated", "files")),
    ("mean tokens embedded per chunk", ("search", "mean_embed_tokens")),
    ("index wall clock, subprocess (s)", ("index", "wall_s")),
    ("keyword phase (s)", ("index", "keyword_s")),
    ("keyword phase (chunks/s)", ("index", "keyword_chunks_per_s")),
    ("embedding phase: model + Chroma upsert (s)", ("index", "embedding_s")),
    ("embedding phase (chunks/s)", ("index", "embedding_chunks_per_s")),
    ("peak RSS of `oracle index` (MiB)", ("index", "peak_rss_mib")),
    ("data dir on disk: SQLite, or the PostgreSQL database (MiB)", ("disk", "sqlite_mib")),
    ("data dir on disk: Chroma (MiB)", ("disk", "chroma_mib")),
    ("data dir on disk: total (MiB)", ("disk", "total_mib")),
    ("unchanged re-index, wall (s)", ("unchanged_reindex", "wall_s")),
    ("unchanged re-index, sync alone (s)", ("unchanged_reindex", "sync_s")),
    ("spawn `oracle serve` → first hybrid search answered (s, median)", ("serve_first_search", "median_s")),
    *(
        (f"{name.replace('_', ' ')} {q.replace('cpu_', 'CPU ')} (ms)", ("search", name, f"{q}_ms"))
        for name in SEARCH_CONFIGS
        for q in ("p50", "p95", "cpu_p50", "cpu_p95")
    ),
    *(
        (f"hybrid piece alone: {leg.replace('_', ' ')} p50 / p95 (ms)", ("search", "hybrid_legs", leg))
        for leg in ("keyword_leg", "embed_query", "chroma_query", "filter_check", "documents_by_id", "hybrid_total")
    ),
    ("load average (1 min) at start → end", ("load",)),
)


def _get(figures: dict, path: tuple[str, ...]):
    value = figures
    for key in path:
        value = value[key]
    return value


def _cell(value) -> str:
    if isinstance(value, dict) and "start" in value:
        return f"{value['start'][0]} → {value['end'][0]}"
    if isinstance(value, dict) and "p50_ms" in value:
        return f"{value['p50_ms']} / {value['p95_ms']}"
    if isinstance(value, float):
        return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _ratio(a, b) -> str:
    if isinstance(a, dict) and "p50_ms" in a:
        a, b = a["p95_ms"], b["p95_ms"]
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not a:
        return ""
    return f"×{b / a:.2f}"


def growth(results: dict[int, dict]) -> dict[str, dict[str, float]]:
    sizes = sorted(results)
    out: dict[str, dict[str, float]] = {}
    for small, large in zip(sizes, sizes[1:]):
        ratios: dict[str, float] = {}
        for label, path in ROWS:
            a, b = _get(results[small], path), _get(results[large], path)
            if isinstance(a, dict) and "p95_ms" in a:
                a, b = a["p95_ms"], b["p95_ms"]
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
                ratios[label] = round(b / a, 2)
        out[f"{large}/{small}"] = ratios
    return out


def table(results: dict[int, dict]) -> str:
    sizes = sorted(results)
    pairs = list(zip(sizes, sizes[1:]))
    head = ["chunks", *(f"{s:,}" for s in sizes), *(f"{b // 1000}k/{a // 1000}k" for a, b in pairs)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for label, path in ROWS:
        values = [_get(results[s], path) for s in sizes]
        ratios = [_ratio(_get(results[a], path), _get(results[b], path)) for a, b in pairs]
        if path == ("load",):
            ratios = ["" for _ in pairs]
        lines.append("| " + " | ".join([label, *(_cell(v) for v in values), *ratios]) + " |")
    return "\n".join(lines)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="chunk counts, comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="SciFact training queries timed per configuration")
    parser.add_argument("--warmup", type=int, default=20, help="untimed searches per configuration first")
    parser.add_argument("--server-runs", type=int, default=3, help="spawns of `oracle serve` per size")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the SciFact folder")
    parser.add_argument("--work", type=Path, help="where to generate (default: a new temp dir, removed after)")
    parser.add_argument("--keep", action="store_true", help="keep the generated knowledge bases and indexes")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--database-url", help="a PostgreSQL server URL: each size's store in a new database on it")
    parser.add_argument("--seed-from", type=Path, help="an oracle.db whose embedding caches seed each new store"
                        " ({size} is replaced by the size)")
    parser.add_argument("--search-only", action="store_true",
                        help="measure the searches again on the indexes an earlier --keep run left in --work")
    args = parser.parse_args()
    sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})

    corpus = load_corpus(args.data, args.queries)
    if args.search_only:
        if not args.work:
            sys.exit("--search-only needs --work (an earlier --keep run's folder)")
        again = {size: search_again(corpus, size, args.work, args.warmup) for size in sizes}
        print(json.dumps(again, indent=2, ensure_ascii=False))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"command": " ".join(sys.argv), "sizes": {str(s): v for s, v in again.items()}},
                                            indent=2, ensure_ascii=False), encoding="utf-8")
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="oracle-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    if REPO in work.resolve().parents:
        sys.exit("--work must be outside the repository")
    log(f"work folder {work}; {len(corpus.sentences)} sentences, {len(corpus.titles)} titles, {len(corpus.queries)} queries")
    started = time.perf_counter()
    results: dict[int, dict] = {}
    try:
        for size in sizes:
            results[size] = measure_size(corpus, size, work, args.seed, args.warmup, args.server_runs,
                                         args.database_url, args.seed_from)
            if not args.keep:
                shutil.rmtree(work / f"kb-{size}", ignore_errors=True)
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)

    biggest = results[max(results)]["search"]["hybrid"]["p95_ms"]
    figures = {
        "command": " ".join([".venv/bin/python", "benchmarks/scale.py", *sys.argv[1:]]),
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "seed": args.seed,
        "queries": len(corpus.queries),
        "limit": LIMIT,
        "filters": {"type": FILTER_TYPE, "concept": FILTER_CONCEPT},
        "seconds": round(time.perf_counter() - started, 1),
        "sizes": {str(s): results[s] for s in sizes},
        "growth": growth(results),
        "target": {"hybrid_p95_ms_max": TARGET_HYBRID_P95_MS, "at_chunks": max(results), "hybrid_p95_ms": biggest,
                   "met": biggest <= TARGET_HYBRID_P95_MS},
    }
    print(json.dumps(figures, indent=2, ensure_ascii=False))
    print()
    print(table(results))
    print(f"\ntarget hybrid p95 <= {TARGET_HYBRID_P95_MS:.0f} ms at {max(results):,} chunks: {biggest} ms,"
          f" {'met' if figures['target']['met'] else 'MISSED'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
