"""The reference a client-side benchmark measures Oracle against: whole-file SQLite FTS5 behind the same MCP SDK.

    python benchmarks/plain_server.py INDEX.db        # serve MCP over stdio (tool `search`)
    python benchmarks/plain_server.py INDEX.db --build ROOT

About the least a markdown search server can do: one FTS5 row per file (title + body, porter tokenizer),
the query's words quoted and OR-ed, bm25, top files with a snippet as structured content. It has no chunks,
no vectors and no logs, so the difference between it and Oracle in one run is what Oracle's extra work
costs on the same machine at the same moment (benchmarks/client.py).
"""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

from pydantic import BaseModel

_WORD = re.compile(r"\w+", re.UNICODE)


class Hit(BaseModel):
    path: str
    title: str
    snippet: str
    score: float


class Result(BaseModel):
    hits: list[Hit]


def build(db: Path, root: Path) -> int:
    """Index every markdown file under root; return how many."""
    db.unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(path UNINDEXED, title, body, tokenize='porter unicode61')")
    n = 0
    for path in sorted(root.rglob("*.md")):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        title = next((line[2:].strip() for line in text.split("\n") if line.startswith("# ")), path.stem)
        conn.execute("INSERT INTO f VALUES (?, ?, ?)", (path.relative_to(root).as_posix(), title, text))
        n += 1
    conn.commit()
    conn.close()
    return n


def serve(db: Path) -> None:
    from mcp.server.mcpserver import MCPServer

    conn = sqlite3.connect(db, check_same_thread=False)
    mcp = MCPServer(name="plain-fts5")

    @mcp.tool(name="search", description="Whole-file full-text search.")
    def search(query: str, limit: int = 10) -> Result:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
        if not words:
            return Result(hits=[])
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = conn.execute(
            "SELECT path, title, snippet(f, 2, '', '', '…', 24), -bm25(f, 0, 3, 1) AS s FROM f WHERE f MATCH ?"
            " ORDER BY s DESC LIMIT ?",
            (match, limit),
        ).fetchall()
        return Result(hits=[Hit(path=p, title=t, snippet=sn, score=s) for p, t, sn, s in rows])

    mcp.run("stdio")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[2] == "--build":
        print(build(Path(sys.argv[1]), Path(sys.argv[3])))
    else:
        serve(Path(sys.argv[1]))
