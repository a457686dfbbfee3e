"""Issue 40 (also b): learning the same text twice wrote `_2.md` and only mentioned a similarity of 0.95. Now an
exact or near-exact duplicate (the same words in the same order: case, markdown, punctuation, spacing aside) is
refused by default (a conflict naming the learning that already says it;
nothing written), `allow_duplicate=true` saves anyway, and a learning that only resembles one is saved with the
near-duplicate advice as before. Through the service, HTTP and the CLI's path; the real index and model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _corpus import indexed_oracle
from oracle_server.services.capabilities.learn import LearnDuplicate, _normal, learn
from oracle_server.services.vocabulary.models import LearnRequest
from tests.contract.test_where_surfaces import cli

EXISTING = "learnings/2026-01-10_quoll-cache.md"
TEXT = "Warm the quoll cache from the nightly snapshot, never from live traffic: live warming doubled p99."
NOTES = {
    EXISTING: f"---\ntitle: Quoll cache warming\ndate: 2026-01-10\n---\n\n# Quoll cache warming\n\n{TEXT}\n",
    "learnings/2026-01-11_other.md": "# Bilby queues\n\nBilby queues drain at night.\n",
}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    o = indexed_oracle(tmp_path_factory, "learn-duplicates", NOTES)
    yield o
    o.close()


def _learnings(oracle: Any) -> set[str]:
    return {p.name for p in (Path(oracle.settings.root) / "learnings").glob("*.md")}


def test_the_same_text_is_refused_naming_the_learning_that_says_it(oracle: Any) -> None:
    before = _learnings(oracle)
    for pattern, title in ((TEXT, "Quoll cache warming"), (TEXT.upper(), "Another title"),
                           (f"**{TEXT}**\n", None), (TEXT.replace(":", " -") + " !", None)):
        with pytest.raises(LearnDuplicate) as caught:
            learn(oracle, LearnRequest(pattern=pattern, title=title))
        message = str(caught.value)
        assert EXISTING in message and "Quoll cache warming" in message and "allow_duplicate=true" in message
        assert "nothing was saved" in message
    assert _learnings(oracle) == before
    assert LearnDuplicate.error_kind == "conflict"


def test_allow_duplicate_saves_anyway_with_the_advice(oracle: Any) -> None:
    saved = learn(oracle, LearnRequest(pattern=TEXT, title="Quoll cache warming again", allow_duplicate=True))
    assert saved.file != EXISTING and (Path(oracle.settings.root) / saved.file).is_file()
    assert EXISTING in {d.source_file for d in saved.near_duplicates}
    (Path(oracle.settings.root) / saved.file).unlink()
    oracle.indexer.sync_paths([saved.file])


def test_a_learning_that_only_resembles_one_is_saved(oracle: Any) -> None:
    saved = learn(oracle, LearnRequest(pattern="Warm the quoll cache from the snapshot taken at noon, because the"
                                       " nightly one misses the morning's writes.", title="Quoll cache at noon"))
    assert (Path(oracle.settings.root) / saved.file).is_file()
    one_word = learn(oracle, LearnRequest(pattern=TEXT.replace("doubled", "tripled")))  # one word differs: new
    assert (Path(oracle.settings.root) / one_word.file).is_file()


def test_the_cli_and_http_refuse_it_too(oracle: Any) -> None:
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    with TestClient(build_app(oracle), base_url="http://127.0.0.1:37778") as client:
        answer = client.post("/api/learn", json={"pattern": TEXT})
    assert answer.status_code == 409 and EXISTING in answer.text
    with pytest.raises(LearnDuplicate):
        cli(oracle, "learn", TEXT)


def test_normal_form_ignores_case_markup_and_spacing() -> None:
    assert _normal("**Warm** the `cache`\n\n- now") == _normal("warm THE cache now")
    assert _normal("warm the cache") != _normal("warm the caches")
    assert _normal("retry 3 times.") != _normal("retry 5 times.")
