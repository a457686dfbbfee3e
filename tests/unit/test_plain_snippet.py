"""Snippets as plain text (issue 40: a hit read `**Date**: … ## What happened`, `[[0001-use-postgres…]]`): the
markdown marks go, the words stay. Pure: no index, no model."""

from __future__ import annotations

import pytest

from oracle_server.services.capabilities.search.plain import plain_text
from oracle_server.services.capabilities.search.query import snippet


@pytest.mark.parametrize("markdown, plain", [
    ("**Date**: 2026-01-02\n\n## What happened\nWe shipped.", "Date: 2026-01-02\n\nWhat happened\nWe shipped."),
    ("See [[0001-use-postgres]] and [[decisions/0002-queue.md|the queue ADR]].", "See 0001-use-postgres and the queue ADR."),
    ("[[runbook#Rollback]] and ![[diagram.png]]", "runbook › Rollback and diagram.png"),
    ("a [link](https://x.y/a_(b)) and ![alt](img.png)", "a link and alt"),
    ("*em*, _em_, __strong__, ***both***, ~~gone~~ and `code`", "em, em, strong, both, gone and code"),
    ("> quoted\n* item\n+ other\n---\n### Title ###", "quoted\n- item\n- other\n\nTitle"),
    ("snake_case_name, 2*3*4 and a * b", "snake_case_name, 2*3*4 and a * b"),  # not emphasis
    ("ไทย **ตัวหนา** 日本語の[[メモ]]", "ไทย ตัวหนา 日本語のメモ"),
    ("```python\nprint(1)\n```", "\nprint(1)\n"),
    ("plain text stays as it is.", "plain text stays as it is."),
    ("| Idea | Why not |\n|------|:---:|\n| Moon | too **many** |", "Idea · Why not\n\nMoon · too many"),
    ("a | b in prose stays", "a | b in prose stays"),
])
def test_markdown_marks_go_and_the_words_stay(markdown: str, plain: str) -> None:
    assert plain_text(markdown) == plain


def test_a_snippet_is_windowed_on_the_plain_text() -> None:
    body = "**Context**: " + "filler words here. " * 20 + "We moved to [[0001-use-postgres|Postgres]] for **queues**."
    cut = snippet(plain_text(body), ("postgres",))
    assert "Postgres for queues." in cut and "**" not in cut and "[[" not in cut and cut.startswith("…")
