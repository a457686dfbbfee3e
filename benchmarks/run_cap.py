"""Run another benchmark script with the embedder's token cap changed (an A/B of oracle_indexer.models.embed.MAX_TOKENS).

    .venv/bin/python benchmarks/run_cap.py CAP SCRIPT [ARGS...]
    e.g. ... 128 quality.py --work benchmarks/out/scifact128 --json benchmarks/out/quality-128.json

The cap changes the vectors but not the embedding cache's keys (the text's hash), so give the script a data dir
that holds no vectors made with another cap (quality.py: a fresh --work; notes.py: a --data copy with the
`embeddings` table emptied, `in_vector` reset and the chroma folder removed).
"""
import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
import oracle_indexer.models.embed as E  # noqa: E402

E.MAX_TOKENS = int(sys.argv[1])
E.MAX_CHARS_TOKENIZED = E.MAX_TOKENS * 32
sys.argv = [str(REPO / "benchmarks" / sys.argv[2]), *sys.argv[3:]]
runpy.run_path(sys.argv[0], run_name="__main__")
