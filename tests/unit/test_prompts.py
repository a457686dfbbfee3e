"""The learn-from-session prompt on the REAL bundled index (SQLite + vectors + the ONNX model), issue 27 item 4.

Before: a one-line candidate that restates a saved lesson was compared with whole sections at the learn tool's
0.85 and called NEW (0.57-0.81 for lessons the bundled base holds), and the suggested call passed `concepts`
twice when the concepts argument was given.
"""

from __future__ import annotations

import re

from oracle_server.mcp.prompts import learn_from_session_prompt

# One line each, in other words than the saved lessons, which the base holds:
ALREADY_SAVED = {
    "Sort keys before serialising JSON or the cache key changes every time.":
        "learnings/2026-06-02_sort-before-you-serialise.md",
    "The installer ran twice and registered the MCP server two times; make installs idempotent.":
        "learnings/2026-07-15_installer-ran-twice.md",
    "Search the memory before starting work, even on a task you think you know.":
        "learnings/2026-02-03_search-memory-before-starting.md",
    "Rebase your branch onto main before asking for review, never after it was approved.":
        "learnings/2026-02-19_rebase-before-review-not-after.md",
}
NOT_SAVED = [
    "Pin the embedding model version; vectors from two versions do not compare.",
    "Set a busy timeout on SQLite connections so concurrent writers wait instead of failing.",
    "Use UTC timestamps in logs and convert only for display.",
    "Write the migration and its rollback in the same commit.",
]


def _verdicts(text: str) -> dict[str, str]:
    return {item: status for _, item, status in re.findall(r"^(\d+)\. (.+)\n   -> (.+)$", text, flags=re.M)}


def test_one_line_candidates_of_saved_lessons_are_near_duplicates(bundled) -> None:
    oracle, _ = bundled
    notes = "\n".join(f"- {line}" for line in [*ALREADY_SAVED, *NOT_SAVED])
    prompt = learn_from_session_prompt(oracle, notes)
    verdicts = _verdicts(prompt.text)
    assert len(verdicts) == len(ALREADY_SAVED) + len(NOT_SAVED)
    cited = {c.path for c in prompt.cited}  # the notes named, quoted inside the trust boundary
    for line, note in ALREADY_SAVED.items():
        assert verdicts[line].startswith("NEAR-DUPLICATE of "), (line, verdicts[line])
        assert note in cited and note in prompt.text, (line, cited)
    for line in NOT_SAVED:
        assert verdicts[line].startswith("NEW"), (line, verdicts[line])
    assert prompt.description == f"{len(ALREADY_SAVED) + len(NOT_SAVED)} candidate learnings, {len(NOT_SAVED)} new"


def test_the_suggested_call_names_each_argument_once(bundled) -> None:
    oracle, _ = bundled
    notes = f"- {NOT_SAVED[0]}\n"
    for concepts, project in (("embedding, release", "oracle"), (None, None), ("testing", None)):
        text = learn_from_session_prompt(oracle, notes, project=project, concepts=concepts).text
        call = re.search(r"call oracle_learn\((.*)\)\.", text).group(1)
        names = re.findall(r"(\w+)=", call)
        assert len(names) == len(set(names)), call
        assert names[:3] == ["pattern", "title", "concepts"]
        if concepts:
            assert f'concepts="{concepts}"' in call
        assert (f'project="{project}"' in call) == bool(project) and ("project" in names) == bool(project)
