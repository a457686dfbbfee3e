"""The pure text operations behind oracle_edit (server/services/capabilities/edit.py): each edits only the body, the head (BOM and
frontmatter) comes back byte for byte, line endings stay the file's, and an ambiguous or missing target is
refused with a message that says what to send instead. Team tokens' pure parts (server/services/capabilities/team.py) too."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _hostile import examples
from oracle_server.services.capabilities.edit import EditRefused, apply_edit, headings, split_head
from oracle_server.services.capabilities.team import TokenError, TokenExists, TokenMissing, TokenStore

FRONT = "---\ntitle: Mocks hide bugs\ntags: [testing, db]   # odd spacing kept\nrelations:\n  - [a, b, c]\n---\n"
NOTE = FRONT + "# Mocks hide bugs\n\n## Why\nTests mocked the database.\n\n### Detail\nDeep.\n\n## Fix\nUse a real one.\n"


def test_append_adds_a_block_at_the_end() -> None:
    out = apply_edit(NOTE, "append", "## Later\nIt happened again.\n")
    assert out == NOTE + "\n## Later\nIt happened again.\n"
    assert out.startswith(FRONT)


def test_prepend_goes_after_the_title_line() -> None:
    out = apply_edit(NOTE, "prepend", "> Status: superseded in part.")
    assert out == FRONT + "# Mocks hide bugs\n\n> Status: superseded in part.\n\n## Why\nTests mocked the database.\n\n" \
        "### Detail\nDeep.\n\n## Fix\nUse a real one.\n"


def test_prepend_without_a_title_goes_first_in_the_body() -> None:
    assert apply_edit("---\na: 1\n---\nplain text\n", "prepend", "new") == "---\na: 1\n---\nnew\n\nplain text\n"
    assert apply_edit("plain text\n", "prepend", "new\n") == "new\n\nplain text\n"


def test_replace_section_replaces_its_body_and_subsections_up_to_the_next_peer() -> None:
    out = apply_edit(NOTE, "replace_section", "A migration broke production.", heading="Why")
    assert out == FRONT + "# Mocks hide bugs\n\n## Why\n\nA migration broke production.\n\n## Fix\nUse a real one.\n"
    last = apply_edit(NOTE, "replace_section", "Use PostgreSQL in tests.", heading="## Fix")
    assert last.endswith("## Fix\n\nUse PostgreSQL in tests.\n")
    emptied = apply_edit(NOTE, "replace_section", "", heading="Detail")
    assert "### Detail\n\n## Fix" in emptied


def test_replace_section_refuses_a_missing_or_repeated_heading_naming_the_headings() -> None:
    with pytest.raises(EditRefused, match="no heading reads 'Nope'.*Why; Detail; Fix"):
        apply_edit(NOTE, "replace_section", "x", heading="Nope")
    twice = NOTE + "\n## Why\nagain\n"
    with pytest.raises(EditRefused, match="2 headings read 'Why'"):
        apply_edit(twice, "replace_section", "x", heading="Why")


def test_headings_inside_code_fences_are_not_headings() -> None:
    body = "# T\n\n## Real\n```sh\n## not a heading\n```\n~~~\n# nor this\n~~~\n## Also real ##\n"
    assert [(level, text) for _, level, text in headings(body)] == [(1, "T"), (2, "Real"), (2, "Also real")]
    out = apply_edit(body, "replace_section", "new", heading="Real")
    assert out == "# T\n\n## Real\n\nnew\n\n## Also real ##\n"


def test_replace_text_needs_exactly_one_occurrence_in_the_body() -> None:
    out = apply_edit(NOTE, "replace_text", "a real database", find="a real one")
    assert out == NOTE.replace("a real one", "a real database")
    with pytest.raises(EditRefused, match="does not occur"):
        apply_edit(NOTE, "replace_text", "x", find="absent words")
    with pytest.raises(EditRefused, match="in the frontmatter"):
        apply_edit(NOTE, "replace_text", "x", find="odd spacing kept")
    with pytest.raises(EditRefused, match="occurs 2 times"):
        apply_edit(NOTE + "Use a real one.\n", "replace_text", "x", find="Use a real one.")


def test_crlf_bom_and_frontmatter_are_kept_byte_for_byte() -> None:
    crlf = "\ufeff" + NOTE.replace("\n", "\r\n")
    for op, kwargs in [("append", {}), ("prepend", {}), ("replace_section", {"heading": "Fix"}),
                       ("replace_text", {"find": "Deep.\n"})]:
        out = apply_edit(crlf, op, "line one\nline two\n", **kwargs)
        assert out.startswith("\ufeff" + FRONT.replace("\n", "\r\n")), op
        assert "\n" not in out.replace("\r\n", ""), f"{op}: a bare LF crept in"
        assert "line one\r\nline two\r\n" in out, op


def test_an_edit_that_would_create_or_change_frontmatter_is_refused() -> None:
    with pytest.raises(EditRefused, match="frontmatter"):
        apply_edit("plain\n", "prepend", "---\ntitle: injected\n---")
    with pytest.raises(EditRefused, match="never closed"):
        apply_edit("---\ntitle: x\nbody\n", "append", "more")


def test_unknown_op_is_refused() -> None:
    with pytest.raises(EditRefused, match="unknown op"):
        apply_edit(NOTE, "delete", "x")


_LINES = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"),
                          max_size=30), max_size=8)


@given(front=_LINES, body=_LINES, new=st.text(max_size=80).filter(lambda t: "\x00" not in t and t.strip()),
       crlf=st.booleans())
@settings(deadline=None, derandomize=True, database=None, max_examples=examples(200),
          suppress_health_check=[HealthCheck.too_slow])
def test_property_append_and_prepend_never_touch_the_head(front: list[str], body: list[str], new: str,
                                                          crlf: bool) -> None:
    nl = "\r\n" if crlf else "\n"
    fm = [line for line in front if line.strip() not in ("---", "...")]
    text = nl.join(["---", *fm, "---", *body]) + nl
    head, _ = split_head(text)
    for op in ("append", "prepend"):
        try:
            out = apply_edit(text, op, new)
        except EditRefused as exc:  # only ever for text that would read as frontmatter
            assert "frontmatter" in str(exc)
            continue
        assert out.startswith(head) and split_head(out)[0] == head


# -- team tokens (pure parts) ----------------------------------------------------------------------------
def test_tokens_are_stored_hashed_private_and_identify_their_owner(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    assert not store.enabled() and store.identify("anything") is None
    alice = store.add("alice", "write")
    bob = store.add("bob@laptop", "read")
    raw = (tmp_path / "tokens.json").read_text()
    assert alice not in raw and bob not in raw  # never in clear
    assert stat.S_IMODE(os.stat(tmp_path / "tokens.json").st_mode) == 0o600
    assert {e["name"] for e in json.loads(raw)["tokens"]} == {"alice", "bob@laptop"}
    assert store.identify(alice) == type(store.identify(alice))("alice", True)
    assert store.identify(bob).name == "bob@laptop" and not store.identify(bob).can_write
    assert store.identify(alice + "x") is None and store.identify("") is None
    with pytest.raises(TokenExists):
        store.add("alice", "read")
    with pytest.raises(TokenError, match="not allowed"):
        store.add("../etc", "write")
    # another process (a second TokenStore) revokes: this one sees it at the next lookup
    TokenStore(tmp_path).revoke("alice")
    assert store.identify(alice) is None and store.identify(bob) is not None
    with pytest.raises(TokenMissing, match="tokens: bob@laptop"):
        store.revoke("alice")


@pytest.mark.parametrize("content", ["{not json", '{"tokens": [{"name": "a"}]}', '{"tokens": 5}',
                                     '{"tokens": [{"name": "a", "access": "admin", "salt": "00", "digest": "'
                                     + "0" * 64 + '", "created": ""}]}',
                                     '{"tokens": [{"name": "a", "access": "read", "salt": "zz", "digest": "00",'
                                     ' "created": ""}]}'])
def test_an_unreadable_tokens_file_is_an_error_not_an_open_door(tmp_path: Path, content: str) -> None:
    (tmp_path / "tokens.json").write_text(content)
    with pytest.raises(TokenError, match="cannot be read"):
        TokenStore(tmp_path).enabled()
