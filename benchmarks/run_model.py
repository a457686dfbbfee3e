"""Run another benchmark script with the main embedding model swapped for another ONNX file (an A/B of a
quantised or otherwise changed graph), under its own model id so that no cached vector of the real model is
reused.

    .venv/bin/python benchmarks/run_model.py MODEL.onnx MODEL_ID SCRIPT [ARGS...]
    e.g. ... /tmp/dyn-int8.onnx minilm-dyn-int8 quality.py --work /tmp/scifact-int8 --json /tmp/q-int8.json
         ... rewritten minilm-rewritten quality.py --work /tmp/scifact-rw   # the in-memory rewrite, fresh index
         ... packaged minilm-packaged quality.py --work /tmp/scifact-pk     # the packaged graph as it is

MODEL.onnx is taken as it is (no in-memory rewrite), `rewritten` and `packaged` name the two graphs of the
installed model. The model id enters every section's embed key, so give the script a fresh data dir (quality.py:
a fresh --work; notes.py: a fresh --data).
"""
import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
import oracle_indexer.models.embed as E  # noqa: E402
from oracle_indexer.models.model_graph import session_model  # noqa: E402

model, E.MODEL_ID = sys.argv[1], sys.argv[2]
if model == "packaged":
    E.session_model = lambda path: (str(path), "packaged graph (benchmarks/run_model.py)")
elif model != "rewritten":
    E.session_model = lambda path: (str(Path(model).resolve()), f"{model} (benchmarks/run_model.py)")
else:
    E.session_model = session_model
print(f"run_model: main embedding model {model}, id {E.MODEL_ID}", flush=True)
sys.argv = [str(REPO / "benchmarks" / sys.argv[3]), *sys.argv[4:]]
runpy.run_path(sys.argv[0], run_name="__main__")
