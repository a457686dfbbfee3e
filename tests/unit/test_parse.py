"""oracle_indexer.notes.parse and oracle_indexer.notes.concepts: pure functions over strings, no database, no file system
(except reading the bundled notes as sample input)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from oracle_indexer.notes.concepts import extract_concepts, normalise_tag, normalise_tags
from oracle_indexer.notes.parse import chunk_id, content_hash, note_date, parse_markdown, split_frontmatter, title_for

BUNDLED = Path(__file__).resolve().parents[2] / "knowledge"
LAYOUT_TYPES = {"principles": "principle", "learnings": "learning", "retrospectives": "retro"}


def span_text(text: str, chunk) -> str:
    """The file's lines line_start..line_end (1-based, inclusive), as the chunk claims they are."""
    lines = text.split("\n")
    return "\n".join(lines[chunk.line_start - 1 : chunk.line_end]).strip()


def summary(parsed) -> list[tuple]:
    return [(c.kind, c.heading, c.line_start, c.line_end, c.content) for c in parsed.chunks]


# -- principles: ### sections plus one chunk per top-level bullet ----------------------------------
PRINCIPLE = """---
title: Keep it small
tags: [style]
date: 2026-11-01
---

# Keep it small

Small changes are easy to review.

### Small commits

One purpose per commit.

- Split refactors from features.
- Write the message first;
  then stage the hunks.

1. Numbered item.

### Small PRs

#### Detail

Reviewers tire after 400 lines.

- Link the issue.
"""

PRINCIPLE_EXPECTED = [
    ("intro", "", 9, 9, "Small changes are easy to review."),
    ("section", "Small commits", 13, 19,
     "One purpose per commit.\n\n- Split refactors from features.\n- Write the message first;\n"
     "  then stage the hunks.\n\n1. Numbered item."),
    ("bullet", "Small commits", 15, 15, "- Split refactors from features."),
    ("bullet", "Small commits", 16, 17, "- Write the message first;\n  then stage the hunks."),
    ("bullet", "Small commits", 19, 19, "1. Numbered item."),
    ("section", "Small PRs", 23, 27, "#### Detail\n\nReviewers tire after 400 lines.\n\n- Link the issue."),
    ("bullet", "Small PRs", 27, 27, "- Link the issue."),
]


@pytest.mark.parametrize("rel", ["principles/keep-it-small.md", "ψ/memory/resonance/keep-it-small.md"])
def test_principle_split_sections_and_bullets(rel):
    parsed = parse_markdown(PRINCIPLE, rel, "principle")
    assert parsed.warnings == []
    assert parsed.title == "Keep it small"
    assert summary(parsed) == PRINCIPLE_EXPECTED
    for chunk in parsed.chunks:
        assert chunk.file == rel and chunk.type == "principle"
        assert span_text(PRINCIPLE, chunk) == chunk.content


def test_principle_bullets_point_at_their_section():
    parsed = parse_markdown(PRINCIPLE, "principles/keep-it-small.md", "principle")
    sections = {c.heading: c.id for c in parsed.chunks if c.kind == "section"}
    for chunk in parsed.chunks:
        if chunk.kind == "bullet":
            assert chunk.parent_id == sections[chunk.heading]
        else:
            assert chunk.parent_id is None
    assert [c.parent_id for c in parsed.chunks if c.kind == "bullet"] == [sections["Small commits"]] * 3 + [
        sections["Small PRs"]
    ]


def test_principle_heading_paths_follow_the_outline():
    text = "# T\n\n## Part one\n\nLead.\n\n### Alpha\n\n- a1\n\n## Part two\n\n### Beta\n\nbeta text\n\n#### Deep\n\ndeep text\n"
    parsed = parse_markdown(text, "principles/t.md", "principle")
    assert [(c.kind, c.heading) for c in parsed.chunks] == [
        ("section", "Part one"),
        ("section", "Part one > Alpha"),
        ("bullet", "Part one > Alpha"),
        ("section", "Part two > Beta"),  # "## Part two" has no text of its own: no chunk
    ]
    assert parsed.chunks[-1].content == "beta text\n\n#### Deep\n\ndeep text"


def test_principle_bullets_inside_code_fence_are_not_bullets():
    text = "# T\n\n### S\n\n- real bullet\n\n```\n- not a bullet\n### not a heading\n```\n"
    parsed = parse_markdown(text, "principles/t.md", "principle")
    kinds = [(c.kind, c.heading) for c in parsed.chunks]
    assert kinds == [("section", "S"), ("bullet", "S")]  # "- not a bullet" is no chunk of its own
    assert parsed.chunks[1].content.startswith("- real bullet")
    assert "### not a heading" in parsed.chunks[0].content


# -- learnings and retrospectives: ## sections, deeper headings stay inside ------------------------
LEARNING = """---
title: Rebase before review
tags: git, Code Review
project: oracle
---
# Rebase before review

Some intro text.

## Context

We used git rebase.

### Deeper

Deeper stays inside.

```bash
## not a heading
git rebase -i
```

## How to apply

- Rebase first.
- Then ask for review.
"""


@pytest.mark.parametrize(
    "rel, doc_type",
    [
        ("learnings/2026-02-19_rebase.md", "learning"),
        ("ψ/memory/learnings/2026-02-19_rebase.md", "learning"),
        ("retrospectives/2026-02-19_rebase.md", "retro"),
        ("ψ/memory/retrospectives/2026-02-19_rebase.md", "retro"),
    ],
)
def test_learning_and_retro_split_on_h2(rel, doc_type):
    parsed = parse_markdown(LEARNING, rel, doc_type)
    assert parsed.warnings == []
    assert summary(parsed) == [
        ("intro", "", 8, 8, "Some intro text."),
        ("section", "Context", 12, 21,
         "We used git rebase.\n\n### Deeper\n\nDeeper stays inside.\n\n```bash\n## not a heading\ngit rebase -i\n```"),
        ("section", "How to apply", 25, 26, "- Rebase first.\n- Then ask for review."),
    ]
    assert all(c.parent_id is None for c in parsed.chunks)  # no bullet chunks outside principles
    assert {c.date for c in parsed.chunks} == {"2026-02-19"}
    assert {c.project for c in parsed.chunks} == {"oracle"}
    for chunk in parsed.chunks:
        assert span_text(LEARNING, chunk) == chunk.content


def test_title_line_is_not_content_and_title_only_intro_is_dropped():
    text = "# Only a title\n\n## A\n\nalpha\n"
    parsed = parse_markdown(text, "learnings/x.md", "learning")
    assert summary(parsed) == [("section", "A", 5, 5, "alpha")]
    for chunk in parse_markdown(LEARNING, "learnings/x.md", "learning").chunks + parse_markdown(
        PRINCIPLE, "principles/x.md", "principle"
    ).chunks:
        assert not re.search(r"^# ", chunk.content, re.M), chunk


def test_note_without_any_heading_is_one_intro_chunk():
    parsed = parse_markdown("just text\non two lines\n", "learnings/plain.md", "learning")
    assert summary(parsed) == [("intro", "", 1, 2, "just text\non two lines")]
    assert parsed.title == "plain"


def test_horizontal_rules_do_not_become_content():
    parsed = parse_markdown("# T\n\n---\n\n## A\n\n---\n\ntext\n\n***\n", "learnings/x.md", "learning")
    assert summary(parsed) == [("section", "A", 9, 9, "text")]


@pytest.mark.parametrize("fence", ["```", "~~~", "```python", "~~~~"])
def test_headings_inside_fenced_code_are_ignored(fence):
    close = fence.rstrip("python")
    text = f"# T\n\n## Real\n\n{fence}\n## fake heading\n# fake title\n{close}\n\n## Second\n\nafter\n"
    parsed = parse_markdown(text, "learnings/x.md", "learning")
    assert [c.heading for c in parsed.chunks] == ["Real", "Second"]
    assert "## fake heading" in parsed.chunks[0].content
    assert parsed.title == "T"


def test_longer_fence_is_not_closed_by_a_shorter_one():
    text = (
        "# T\n\n## A\n\n````markdown\n```python\n## not a heading\n```\n````\n\ntext a\n\n"
        "## B\n\ntext b\n"
    )
    parsed = parse_markdown(text, "learnings/x.md", "learning")
    assert [c.heading for c in parsed.chunks] == ["A", "B"]


def test_heading_ending_in_hash_keeps_it():
    parsed = parse_markdown("# Using C#\n\n## Why C#\n\ntext\n\n## Closed ##\n\nmore\n", "learnings/x.md", "learning")
    assert parsed.title == "Using C#"
    assert [c.heading for c in parsed.chunks] == ["Why C#", "Closed"]


def test_closing_hash_sequence_is_removed_from_heading():
    parsed = parse_markdown("# Title #\n\n## Closed ##\n\nmore\n", "learnings/x.md", "learning")
    assert parsed.title == "Title"
    assert [c.heading for c in parsed.chunks] == ["Closed"]


def test_duplicate_headings_get_distinct_stable_ids():
    text = "# T\n\n## Notes\n\none\n\n## Notes\n\ntwo\n\n## Notes\n\nthree\n"
    first = parse_markdown(text, "learnings/dup.md", "learning")
    again = parse_markdown(text, "learnings/dup.md", "learning")
    ids = [c.id for c in first.chunks]
    assert len(set(ids)) == 3
    assert ids == [c.id for c in again.chunks]
    assert ids == [chunk_id("learnings/dup.md", k) for k in ("Notes", "Notes#2", "Notes#3")]
    # editing the first section's text changes neither its id nor the others'
    edited = parse_markdown(text.replace("one", "one, now longer"), "learnings/dup.md", "learning")
    assert [c.id for c in edited.chunks] == ids


def test_duplicate_principle_sections_give_distinct_bullet_ids():
    text = "# T\n\n### Rule\n\n- a\n- b\n\n### Rule\n\n- c\n"
    parsed = parse_markdown(text, "principles/dup.md", "principle")
    ids = [c.id for c in parsed.chunks]
    assert len(ids) == 5 and len(set(ids)) == 5
    sections = [c for c in parsed.chunks if c.kind == "section"]
    last_bullet = parsed.chunks[-1]
    assert last_bullet.content == "- c" and last_bullet.parent_id == sections[1].id


# -- chunk ids ---------------------------------------------------------------------------------------
def test_chunk_ids_depend_on_file_and_section_only():
    a = parse_markdown(LEARNING, "learnings/a.md", "learning")
    a2 = parse_markdown(LEARNING, "learnings/a.md", "learning")
    b = parse_markdown(LEARNING, "learnings/b.md", "learning")
    edited = parse_markdown(
        LEARNING.replace("We used git rebase.", "We used git rebase and then merged.").replace("Some intro", "Other intro"),
        "learnings/a.md",
        "learning",
    )
    assert [c.id for c in a.chunks] == [c.id for c in a2.chunks]
    assert [c.id for c in edited.chunks] == [c.id for c in a.chunks]
    assert [c.content_hash for c in edited.chunks] != [c.content_hash for c in a.chunks]
    assert set(c.id for c in a.chunks).isdisjoint(c.id for c in b.chunks)
    assert [c.id for c in a.chunks] == [
        chunk_id("learnings/a.md", "(intro)"), chunk_id("learnings/a.md", "Context"),
        chunk_id("learnings/a.md", "How to apply"),
    ]
    assert all(re.fullmatch(r"c_[0-9a-f]{20}", c.id) for c in a.chunks)
    assert a.chunks[1].content_hash == content_hash(a.chunks[1].content)


def test_chunk_id_is_a_pure_function():
    assert chunk_id("learnings/x.md", "A") == chunk_id("learnings/x.md", "A")
    assert chunk_id("learnings/x.md", "A") != chunk_id("learnings/x.md", "B")
    assert chunk_id("learnings/x.md", "A") != chunk_id("learnings/y.md", "A")


# -- frontmatter edge cases ----------------------------------------------------------------------------
def test_no_frontmatter_spans_start_at_line_one():
    text = "# Plain\n\n## A\n\nalpha\n"
    parsed = parse_markdown(text, "learnings/plain.md", "learning")
    assert parsed.frontmatter == {} and parsed.warnings == []
    assert summary(parsed) == [("section", "A", 5, 5, "alpha")]


def test_broken_yaml_is_reported_and_never_indexed():
    text = "---\n{{{ not: yaml-secret-token\n: : :\n---\n\n# Real title\n\n## A\n\nbody text\n"
    parsed = parse_markdown(text, "learnings/2026-03-04_broken.md", "learning")
    assert parsed.frontmatter == {}
    assert parsed.warnings == ["frontmatter is not valid YAML at line 3; metadata ignored"]
    assert parsed.title == "Real title"
    assert summary(parsed) == [("section", "A", 10, 10, "body text")]  # frontmatter lines still counted
    for chunk in parsed.chunks:
        assert "yaml-secret-token" not in chunk.content and ": : :" not in chunk.content
    assert parsed.chunks[0].date == "2026-03-04"  # falls back to the path


def test_unquoted_colon_in_a_value_is_read_as_written_without_a_warning():
    """`title: A vs B: why` is what people (and Oracle v2) write; YAML refuses it, Oracle reads it as meant."""
    text = "---\ntitle: A vs B: why\ntags: [git, yaml-ok]\ndate: 2026-03-05\n---\n\n# Heading title\n\n## A\n\nbody text\n"
    parsed = parse_markdown(text, "learnings/2026-03-04_broken.md", "learning")
    assert parsed.warnings == []
    assert parsed.title == "A vs B: why"
    assert summary(parsed) == [("section", "A", 11, 11, "body text")]
    chunk = parsed.chunks[0]
    assert chunk.date == "2026-03-05" and chunk.concepts == ("git", "yaml-ok")
    assert "A vs B" not in chunk.content and "title:" not in chunk.content


def test_broken_yaml_with_readable_lines_is_recovered_leniently():
    """YAML that no quoting repairs (an unclosed flow list) is read line by line, and the warning says so."""
    text = "---\ntitle: A vs B\ntags: [git, yaml-ok\ndate: 2026-03-05\n---\n\n# Heading title\n\n## A\n\nbody text\n"
    parsed = parse_markdown(text, "learnings/2026-03-04_broken.md", "learning")
    assert len(parsed.warnings) == 1
    assert parsed.warnings[0].startswith("frontmatter is not valid YAML at line")
    assert parsed.title == "A vs B"
    assert summary(parsed) == [("section", "A", 11, 11, "body text")]
    assert parsed.chunks[0].date == "2026-03-05"


def test_frontmatter_that_is_a_list():
    text = "---\n- one\n- two\n---\nbody line\n"
    parsed = parse_markdown(text, "learnings/listy.md", "learning")
    assert parsed.frontmatter == {}
    assert parsed.warnings == ["frontmatter is not a YAML mapping; metadata ignored"]
    assert summary(parsed) == [("intro", "", 5, 5, "body line")]
    assert parsed.title == "listy"


def test_unclosed_frontmatter_is_text_with_a_warning():
    text = "---\ntitle: Never closed\n\n## A\n\nalpha\n"
    parsed = parse_markdown(text, "learnings/open-ended.md", "learning")
    assert parsed.frontmatter == {}
    assert parsed.warnings == ["frontmatter opened with --- but never closed; treated as text"]
    assert parsed.title == "open ended"
    # The stray `title: ...` line reads as a header block, so it is folded into the first section.
    assert summary(parsed) == [("section", "A", 2, 6, "title: Never closed\n\n## A\n\nalpha")]


@pytest.mark.parametrize(
    "tags_yaml, expected",
    [
        ("tags: [Git, code review, '#Testing']", ["git", "code review", "testing"]),
        ("tags:\n  - alpha\n  - Beta", ["alpha", "beta"]),
        ("tags: 'git, Code  Review; docs'", ["git", "code review", "docs"]),
        ("tags: solo", ["solo"]),
        ("tags: 42", ["42"]),
        ("tags:", []),
        ("tags: [ok, {nested: map}, [inner]]", ["ok"]),
    ],
)
def test_tags_forms(tags_yaml, expected):
    text = f"---\n{tags_yaml}\n---\n# T\n\n## A\n\nplain words only\n"
    parsed = parse_markdown(text, "learnings/t.md", "learning")
    assert parsed.warnings == []
    assert sorted(parsed.chunks[0].concepts) == sorted(expected)


def test_normalise_tags_directly():
    assert normalise_tags(None) == []
    assert normalise_tags(["#A", "a", " A "]) == ["a"]
    assert normalise_tags("x,y;z") == ["x", "y", "z"]
    assert normalise_tag("  Code \t Review ") == "code review"
    assert len(normalise_tag("x" * 500)) == 64


@pytest.mark.parametrize(
    "text, expected",
    [
        ("---\ntitle: บันทึกการเรียนรู้\n---\n## A\n\nx\n", "บันทึกการเรียนรู้"),
        ("---\ntitle: ψ memory\n---\n## A\n\nx\n", "ψ memory"),
        ("# ψ หัวข้อภาษาไทย\n\n## A\n\nx\n", "ψ หัวข้อภาษาไทย"),
        ("---\ntags: [a]\n---\n\n# From the heading\n\n## A\n\nx\n", "From the heading"),
        ("---\ntitle: ''\n---\n# Heading wins over empty\n", "Heading wins over empty"),
        ("---\ntitle: [a, b]\n---\n# Heading wins over a list\n", "Heading wins over a list"),
        ("## Only h2\n\nx\n", "my-file name"),
        ("---\n---\n\nno heading\n", "my-file name"),
        ("---\nbroken: [\n---\n\nno heading\n", "my-file name"),
        ("---\n- a\n---\n", "my-file name"),
        ("---\nnever closed\n", "my-file name"),
        ("---\n", "my-file name"),
    ],
)
def test_title_fallbacks_never_dashes(text, expected):
    parsed = parse_markdown(text, "learnings/my-file__name.md", "learning")
    expected = "my file name" if expected == "my-file name" else expected
    assert parsed.title == expected
    assert "---" not in parsed.title
    assert all(c.title == expected for c in parsed.chunks)


def test_title_for_uses_first_h1_not_first_heading():
    assert title_for({}, ["## sub", "# main", "# second"], "learnings/x.md") == "main"
    assert title_for({"title": 2026}, ["# main"], "learnings/x.md") == "2026"


@pytest.mark.parametrize(
    "meta_yaml, rel, expected",
    [
        ("date: 2026-11-01", "learnings/no-date.md", "2026-11-01"),  # YAML date object
        ("date: '2026-07-08'", "learnings/no-date.md", "2026-07-08"),  # string
        ("date: 2026-07-08T10:20:30", "learnings/no-date.md", "2026-07-08"),  # datetime
        ("created: 2025-12-31", "learnings/no-date.md", "2025-12-31"),
        ("date: 2026-11-01", "learnings/2020-01-02_x.md", "2026-11-01"),  # frontmatter wins over path
        ("tags: [a]", "learnings/2026-02-19_rebase.md", "2026-02-19"),  # from the path
        ("tags: [a]", "retrospectives/2026-03/31-sprint.md", "2026-03-31"),
        ("tags: [a]", "learnings/no-date.md", None),
    ],
)
def test_dates(meta_yaml, rel, expected):
    parsed = parse_markdown(f"---\n{meta_yaml}\n---\n## A\n\nx\n", rel, "learning")
    assert parsed.chunks[0].date == expected


def test_note_date_accepts_python_dates():
    assert note_date({"date": dt.date(2026, 1, 2)}, "x.md") == "2026-01-02"
    assert note_date({"date": dt.datetime(2026, 1, 2, 23, 59)}, "x.md") == "2026-01-02"


def test_split_frontmatter_offsets():
    meta, body, offset, warnings = split_frontmatter("---\na: 1\nb: 2\n---\nrest\n")
    assert (meta, body, offset, warnings) == ({"a": 1, "b": 2}, "rest\n", 4, [])
    meta, body, offset, warnings = split_frontmatter("---\na: 1\n...\nrest")
    assert (meta, body, offset) == ({"a": 1}, "rest", 3)
    assert split_frontmatter("----\na: 1\n---\n")[2] == 0  # not a frontmatter opener


# -- concepts ----------------------------------------------------------------------------------------
def test_concepts_match_whole_words_only():
    assert "git" in extract_concepts("use git rebase")
    assert "git" not in extract_concepts("digital signatures")
    assert "git" not in extract_concepts("gitignore files")
    assert extract_concepts("use git rebase") == ["git", "rebase"]
    assert extract_concepts("Git, GIT and git-flow") == ["git"]
    assert extract_concepts("nothing here") == []


def test_multiword_concepts():
    assert "code review" in extract_concepts("ask for a code review today")
    assert "code review" in extract_concepts("ask for a Code\n  Review today")
    assert "code review" not in extract_concepts("the code reviewer")
    assert extract_concepts("hybrid search over fts5") == ["fts5", "hybrid search", "search"]
    assert extract_concepts("search, then hybrid search") == ["hybrid search", "search"]


def test_chunk_concepts_combine_tags_and_keywords():
    parsed = parse_markdown(LEARNING, "learnings/2026-02-19_rebase.md", "learning")
    context = parsed.chunks[1]
    assert context.heading == "Context"
    # tags (git, code review) + keywords in title/content ("rebase", "review", "git"); the heading "Context" is only
    # a section name, not a concept (issue 40: tests/unit/test_concepts_structural.py)
    assert context.concepts == ("code review", "git", "rebase", "review")


def test_concepts_never_match_inside_unicode_words():
    assert extract_concepts("gitไทย ψgit") == []
    assert extract_concepts("ไทย git ไทย") == ["git"]


# -- the bundled notes -----------------------------------------------------------------------------------
BUNDLED_FILES = sorted(p for p in BUNDLED.rglob("*.md") if p.parent.name in LAYOUT_TYPES)


def test_bundled_corpus_is_present():
    assert len(BUNDLED_FILES) == 33


@pytest.mark.parametrize("path", BUNDLED_FILES, ids=lambda p: p.name)
def test_bundled_notes_parse_cleanly(path):
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(BUNDLED).as_posix()
    doc_type = LAYOUT_TYPES[path.parent.name]
    parsed = parse_markdown(text, rel, doc_type)
    assert parsed.warnings == []
    assert parsed.title and not parsed.title.startswith("-")
    assert parsed.title == parsed.frontmatter["title"]
    assert len(parsed.chunks) >= 2
    assert len({c.id for c in parsed.chunks}) == len(parsed.chunks)
    kinds = {c.kind for c in parsed.chunks}
    assert ("bullet" in kinds) == (doc_type == "principle")
    for chunk in parsed.chunks:
        assert span_text(text, chunk) == chunk.content
        assert chunk.line_start > 4  # after the frontmatter, which every bundled note has
        assert "title:" not in chunk.content.split("\n")[0]
        if chunk.kind == "bullet":
            assert chunk.parent_id in {c.id for c in parsed.chunks if c.kind == "section"}
        if doc_type != "principle" and chunk.kind == "section":
            assert " > " not in chunk.heading
