"""Embedding throughput on nat-brain's texts under onnxruntime options, configs alternated in one process.

    .venv/bin/python benchmarks/embed_options.py EVERY ROUNDS CONFIG...
    e.g. ... 40 3 '{"sessions":2,"batch":8}' '{"sessions":2,"batch":32}' '{"sessions":1,"threads":2}' \
                  '{"sessions":2,"opt":"ORT_ENABLE_EXTENDED"}' '{"sessions":2,"tokens":2048,"dynamic":1}'

The texts are what the indexer embeds (store.embed_texts over benchmarks/out/natbrain-data, deduplicated), every
EVERY-th of them; the first config is the reference (the indexer's layout: 2 single-threaded sessions, batches of
8 texts sorted by length, shards assigned round robin) and every other config's vectors are checked against it
(cosine >= 0.999). Keys: sessions, threads (intra-op), batch, tokens (a token budget per batch instead), dynamic
(sessions take the next batch from a shared queue), opt (GraphOptimizationLevel), no_arena, entries (session
config entries), cap (the token cap, default oracle_indexer.models.embed.MAX_TOKENS: texts are tokenized per cap, and a
config with another cap than the first is not compared with it), graph ("packaged": the installed file as it is,
the default; "rewritten": indexer/models/model_graph.py's in-memory rewrite, what the indexer runs; or the path of another
ONNX file, e.g. a quantised one), slice (texts embedded per call, each call sorted and batched on its own as
the indexer's slices of oracle_indexer.worker.sync.VECTOR_SLICE are; default: the whole sample at once), multilingual ("after":
the multilingual encoder over the sample after the main model, as the indexer did; "beside": in a thread at the
same time, as it does now; texts/s then counts both models' work), deal ("rr": batches dealt to the sessions
round robin, as the indexer did, the default; "lpt": longest first to the least loaded session, as it does now), cos (the least cosine with the first config's vectors that passes, default 0.999).
Figures: seconds per pass, min / median / max over ROUNDS, tokens/s and texts/s (each config's own tokens), the
least cosine with the first config, and the load average before and after.

ORACLE_BENCH_DB=path/to/oracle.db takes the texts from another index (default benchmarks/out/natbrain-data).
"""
import os, sys, time, statistics, json
from pathlib import Path
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
from oracle_indexer.store.sqlite import Store
from oracle_indexer.models import embed as E
from oracle_indexer.models.model_graph import session_model
store = Store(Path(os.environ.get("ORACLE_BENCH_DB", REPO / "benchmarks" / "out" / "natbrain-data" / "oracle.db")))
ids = [r[0] for r in store.conn.execute("SELECT id FROM documents ORDER BY id")]
texts = list(dict.fromkeys(store.embed_texts(ids).values()))
every, rounds = int(sys.argv[1]), int(sys.argv[2])
sample = texts[::every]
model, tok_path = E.model_files()
tok = Tokenizer.from_file(str(tok_path)); tok.no_padding()
ENCODED: dict = {}


def encodings(cap):
    """The sample tokenized with this cap (cached per cap)."""
    if cap not in ENCODED:
        tok.enable_truncation(cap)
        ENCODED[cap] = tok.encode_batch([t[:cap * 32] if t.strip() else "." for t in sample])
        n = sum(len(e.ids) for e in ENCODED[cap])
        print(f"cap {cap}: {len(texts)} unique texts, sample {len(sample)}, tokens {n} (mean {n/len(sample):.0f}),"
              f" all-texts tokens ~{n*every}", flush=True)
    return ENCODED[cap]


enc = encodings(E.MAX_TOKENS)
from concurrent.futures import ThreadPoolExecutor

def make(cfg):
    o = ort.SessionOptions()
    o.intra_op_num_threads = cfg.get("threads", 1); o.inter_op_num_threads = 1; o.log_severity_level = 3
    if "opt" in cfg: o.graph_optimization_level = getattr(ort.GraphOptimizationLevel, cfg["opt"])
    for k, v in cfg.get("entries", {}).items(): o.add_session_config_entry(k, v)
    if cfg.get("no_arena"): o.enable_cpu_mem_arena = False
    graph = cfg.get("graph", "packaged")
    source = {"packaged": str(model), "rewritten": session_model(model)[0]}.get(graph, graph)
    sessions = [ort.InferenceSession(source, o, providers=["CPUExecutionProvider"]) for _ in range(cfg.get("sessions", 2))]
    return sessions

def run_batches(session, batches, out, enc):
    for batch in batches:
        width = max(len(enc[i].ids) for i in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64); mask = np.zeros_like(ids)
        for r, i in enumerate(batch):
            n = len(enc[i].ids); ids[r, :n] = enc[i].ids; mask[r, :n] = 1
        h = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        w = mask[..., None].astype(np.float32)
        p = (h * w).sum(1) / np.maximum(w.sum(1), 1e-9)
        out[batch] = p / np.maximum(np.linalg.norm(p, axis=1, keepdims=True), 1e-12)

def make_batches(cfg, enc):
    order = sorted(range(len(enc)), key=lambda i: len(enc[i].ids))
    if "tokens" in cfg:  # token budget per batch
        batches, cur, budget = [], [], cfg["tokens"]
        for i in order:
            w = len(enc[i].ids)
            if cur and (len(cur) + 1) * w > budget: batches.append(cur); cur = []
            cur.append(i)
        if cur: batches.append(cur)
        return batches
    b = cfg.get("batch", 8)
    return [order[p:p + b] for p in range(0, len(order), b)]

def minilm_pass(sessions, cfg, pool, enc, out, part):
    """Embed the sample's texts `part` (indices) as configured."""
    batches = [[part[i] for i in b] for b in make_batches(cfg, [enc[i] for i in part])]
    if cfg.get("dynamic"):  # work queue: each session takes the next batch (longest first)
        import threading
        lock = threading.Lock(); todo = list(reversed(batches))
        def worker(s):
            while True:
                with lock:
                    if not todo: return
                    b = todo.pop()
                run_batches(s, [b], out, enc)
        list(pool.map(worker, sessions))
    else:
        n = len(sessions)
        if cfg.get("deal") == "lpt":  # longest first to the least loaded session (the indexer's way)
            shards = E.balanced_shards(batches, [len(b) * max(len(enc[i].ids) for i in b) for b in batches], n)
        else:  # round robin
            shards = [batches[w::n] for w in range(n)]
        futs = [pool.submit(run_batches, s, shard, out, enc) for s, shard in zip(sessions, shards)]
        [f.result() for f in futs]


def multilingual_pass():
    """The multilingual encoder over the sample, in the indexer's slices (indexer/models/multilingual.py)."""
    from oracle_indexer.models.multilingual import SLICE, MultilingualEmbedder
    for start in range(0, len(sample), SLICE):
        MultilingualEmbedder().embed(sample[start:start + SLICE])


def once(sessions, cfg, pool):
    enc = encodings(cfg.get("cap", E.MAX_TOKENS))
    out = np.zeros((len(sample), 384), dtype=np.float32)
    step = cfg.get("slice", len(sample))  # the indexer embeds slices of oracle_indexer.worker.sync.VECTOR_SLICE texts
    parts = [list(range(p, min(p + step, len(sample)))) for p in range(0, len(sample), step)]
    multilingual = cfg.get("multilingual")  # None, "after" (main model first) or "beside" (in a thread)
    t = time.perf_counter()
    beside = pool.submit(multilingual_pass) if multilingual == "beside" else None
    for part in parts:
        minilm_pass(sessions, cfg, pool, enc, out, part)
    if multilingual == "after":
        multilingual_pass()
    if beside is not None:
        beside.result()
    return time.perf_counter() - t, out


cfgs = [json.loads(c) for c in sys.argv[3:]]
made = [(c, make(c)) for c in cfgs]
if any(c.get("multilingual") for c in cfgs):  # loaded once, outside the timings (it also sets BLAS to one thread)
    from oracle_indexer.models.multilingual import MultilingualEmbedder
    MultilingualEmbedder().warm()
pool = ThreadPoolExecutor(8)
res = {json.dumps(c): [] for c in cfgs}
least = {json.dumps(c): 1.0 for c in cfgs}
ref = None
load_before = os.getloadavg()
for r in range(rounds):
    for c, s in made:
        dt, out = once(s, c, pool)
        res[json.dumps(c)].append(dt)
        if ref is None: ref = out
        elif c.get("cap", E.MAX_TOKENS) == cfgs[0].get("cap", E.MAX_TOKENS):
            cos = float((ref * out).sum(1).min())
            least[json.dumps(c)] = min(least[json.dumps(c)], cos)
            if cos < c.get("cos", 0.999): print("WARN min cos vs first cfg", cos, c)
print("load average before", " ".join(f"{x:.2f}" for x in load_before), "after", " ".join(f"{x:.2f}" for x in os.getloadavg()))
base = statistics.median(res[json.dumps(cfgs[0])])
for k, v in res.items():
    ntok = sum(len(e.ids) for e in encodings(json.loads(k).get("cap", E.MAX_TOKENS)))
    print(f"{k:70s} min {min(v):.2f} med {statistics.median(v):.2f} max {max(v):.2f} s  tok/s {ntok/statistics.median(v):.0f}"
          f"  texts/s {len(sample)/statistics.median(v):.1f}  x{statistics.median(v)/base:.3f}  min cos {least[k]:.6f}")
