"""oracle_server.services.capabilities.search.pipeline over a real index of a temp root (bundled notes + synthetic notes, see _corpus)."""

from __future__ import annotations

import json
import re
import socket

import pytest
from pydantic import ValidationError

import _corpus
from _corpus import HOSTILE_QUERIES, NO_TERMS, QUOKKA_CHUNKS, QUOKKA_FILES, open_oracle
from oracle_indexer.notes.parse import parse_markdown
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search.query import QueryError, validate_query
from oracle_server.services.capabilities.search.pipeline import search

MODES = ("fts", "vector", "hybrid")
LAYOUT_TYPES = {"principles": "principle", "learnings": "learning", "retrospectives": "retro"}


def run(oracle, query: str, **kw):
    """Section results unless a test asks otherwise: these tests check the legs, fusion, filters and
    paging section by section (tests/unit/test_notes.py checks the note unit on top of them)."""
    if "group_by_file" not in kw:
        kw.setdefault("unit", "section")
    return search(oracle, SearchRequest(query=query, **kw))


def dump(result) -> str:
    return json.dumps(result.model_dump(exclude={"meta": {"took_ms"}}), sort_keys=True, ensure_ascii=False)


def corpus_chunks(root):
    out = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        out += parse_markdown(path.read_text("utf-8"), rel, LAYOUT_TYPES[rel.split("/")[0]]).chunks
    return out


def check_breakdown(result, offset: int = 0) -> None:
    for position, hit in enumerate(result.hits, start=offset + 1):
        b = hit.breakdown
        assert hit.found_by and set(hit.found_by) <= {"fts", "vector", "expansion"}
        assert hit.found_by == sorted(hit.found_by)  # "expansion" (hybrid only), "fts", "vector"
        by_section = result.meta.unit == "section"
        if by_section:
            assert b.fused == hit.score
        else:  # a note scores as its best matching section, which is shown or listed first
            assert hit.score == max([b.fused] + [s.score for s in hit.sections])
        assert ("fts" in hit.found_by) == (b.bm25_rank is not None) == (b.bm25_score is not None)
        assert ("vector" in hit.found_by) == (b.vector_rank is not None) == (b.vector_similarity is not None)
        assert ("expansion" in hit.found_by) == (b.expansion_score is not None)
        assert "expansion" not in hit.found_by or set(result.meta.expanded_with)
        if result.meta.mode == "fts":
            assert hit.found_by == ["fts"]
            assert not by_section or (b.bm25_rank == position and hit.score == b.bm25_score)
        if result.meta.mode == "vector":
            assert hit.found_by == ["vector"]
            assert not by_section or (b.vector_rank == position and hit.score == b.vector_similarity)
            assert -1.0 <= b.vector_similarity <= 1.0
    keys = [(-h.score, h.id) for h in result.hits]
    assert keys == sorted(keys)


# -- ranking ----------------------------------------------------------------------------------------
def test_fts_ranks_the_note_that_mentions_the_term_most_first(search_index):
    result = run(search_index, "zanzibar", mode="fts", limit=10)
    files = [h.source_file for h in result.hits]
    assert result.total == 2
    assert files == [_corpus.HEAVY_FILE, _corpus.LIGHT_FILE]
    heavy, light = result.hits
    assert heavy.breakdown.bm25_score == max(h.breakdown.bm25_score for h in result.hits)
    assert heavy.breakdown.bm25_score > light.breakdown.bm25_score > 0
    assert [h.breakdown.bm25_rank for h in result.hits] == [1, 2]
    check_breakdown(result)


@pytest.mark.parametrize("mode", MODES)
def test_hits_carry_consistent_breakdowns(search_index, mode):
    result = run(search_index, "how should I quote search terms for fts5", mode=mode, limit=20)
    assert result.meta.mode == mode and len(result.hits) == 20
    check_breakdown(result)
    if mode == "hybrid":
        assert result.meta.fusion == scoring.DEFAULT_FUSION
        assert {"fts", "vector"} <= {leg for h in result.hits for leg in h.found_by}
        assert any(h.found_by[-2:] == ["fts", "vector"] for h in result.hits)
        # the best sections' own words widened the keyword leg (server/services/capabilities/search/expansion.py)
        assert result.meta.expanded_with and any(h.found_by[0] == "expansion" for h in result.hits)
    page2 = run(search_index, "how should I quote search terms for fts5", mode=mode, limit=5, offset=5)
    check_breakdown(page2, offset=5)


def test_weighted_fusion_is_selectable(search_index):
    result = run(search_index, "quokka shade", mode="hybrid", fusion="weighted", limit=10)
    assert result.meta.fusion == "weighted" and result.meta.mode == "hybrid"
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)
    check_breakdown(result)


# -- hostile queries in every mode -------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(HOSTILE_QUERIES))
def test_hostile_queries_never_raise(search_index, name, mode):
    query = HOSTILE_QUERIES[name]
    result = run(search_index, query, mode=mode, limit=5)
    assert result.query == validate_query(query)
    assert result.meta.mode == mode
    # the total counts the notes that really match (issue 40): the page may go on with weak vector neighbours
    assert len(result.hits) <= 5 and result.total >= len([h for h in result.hits if not h.weak])
    check_breakdown(result)
    if mode == "fts":
        assert result.total == result.meta.fts_matches
        if name in NO_TERMS:
            assert result.hits == [] and result.total == 0
            assert result.meta.warnings == ["the query has no searchable words for the keyword leg"]
    else:
        assert len(result.hits) == 5  # the vector leg ranks every chunk
        assert result.meta.vector_matches > 0


def test_a_nul_in_the_query_is_refused_by_the_model_and_survived_by_the_service(search_index):
    """Issue 45: the request model refuses a NUL in any text, the query included (every surface says so, naming the
    field); the search service itself still reads past one, for a caller that skipped the model."""
    with pytest.raises(ValidationError, match="query holds a NUL"):
        SearchRequest(query="abc\x00def")
    result = search(search_index, SearchRequest.model_construct(**{**SearchRequest(query="abc").model_dump(),
                                                                   "query": "abc\x00def", "mode": "fts"}))
    assert result.query == validate_query("abc\x00def") == "abc def"


def test_hostile_queries_find_real_matches(search_index):
    assert run(search_index, "c# code", mode="fts").total > 0
    assert run(search_index, "col:term", mode="fts").total > 0  # "term(s)" appears in the bundled notes
    hits = run(search_index, '"unbalanced', mode="fts", limit=3).hits
    assert hits and all(re.search(r"unbalanced", h.snippet, re.I) for h in hits)


# -- errors and bounds -------------------------------------------------------------------------------
@pytest.mark.parametrize("query", ["", "   ", "\x00", "\t\n"])
def test_empty_query_is_rejected(search_index, query):
    with pytest.raises(ValidationError, match="query"):
        SearchRequest(query=query)
    # past the model (an adapter that skipped validation), search() still refuses with a clear error
    with pytest.raises(QueryError, match="query is empty"):
        search(search_index, SearchRequest.model_construct(query=query))


def test_whitespace_query_message(search_index):
    with pytest.raises(ValidationError, match="query is empty: pass a few words"):
        SearchRequest(query="  \t ")


@pytest.mark.parametrize(
    "kw",
    [{"limit": 101}, {"limit": 0}, {"offset": -1}, {"offset": 10_001}, {"mode": "magic"}, {"type": "memo"},
     {"query": "x" * 10_001}, {"date_from": "2026/01/01"}, {"unknown": 1}],
)
def test_request_bounds(kw):
    with pytest.raises(ValidationError):
        SearchRequest(**{"query": "quokka", **kw})


def test_limit_100_is_allowed_and_honoured(search_index):
    result = run(search_index, "the", mode="vector", limit=100)
    assert len(result.hits) == 100


# -- filters ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("doc_type, expected", [("principle", 3), ("retro", 1), ("learning", 24), ("all", QUOKKA_CHUNKS)])
def test_type_filter(search_index, doc_type, expected):
    result = run(search_index, "quokka", mode="fts", type=doc_type, limit=100)
    assert result.total == expected == len(result.hits)
    if doc_type != "all":
        assert {h.type for h in result.hits} == {doc_type}


def test_concepts_filter_list_and_comma_string(search_index):
    one = run(search_index, "quokka", mode="fts", concepts=["marsupial"], limit=100)
    assert one.total == 8 and all("marsupial" in h.concepts for h in one.hits)
    as_list = run(search_index, "quokka", mode="fts", concepts=["marsupial", "island"], limit=100)
    as_text = run(search_index, "quokka", mode="fts", concepts="Marsupial, #island", limit=100)
    assert as_list.total == as_text.total == 24
    assert [h.id for h in as_list.hits] == [h.id for h in as_text.hits]
    assert all({"marsupial", "island"} & set(h.concepts) for h in as_list.hits)
    assert run(search_index, "quokka", mode="fts", concepts="no-such-concept").total == 0


@pytest.mark.parametrize("mode", MODES)
def test_project_filter(search_index, mode):
    result = run(search_index, "quokka count", mode=mode, project="alpha", limit=100)
    assert result.hits and {h.project for h in result.hits} == {"alpha"}
    if mode == "fts":
        assert result.total == 12
    if mode == "vector":
        # every embedded chunk of project alpha: 6 quokka logs x 2 + the zanzibar note
        assert result.total == len(result.hits) == 13


def test_date_filter(search_index):
    result = run(search_index, "quokka", mode="fts", date_from="2026-06-10", date_to="2026-06-11", limit=100)
    assert result.total == 4
    assert {h.date for h in result.hits} == {"2026-06-10", "2026-06-11"}


# -- paging and totals --------------------------------------------------------------------------------
def test_total_is_the_true_number_of_fts_matches(search_index, search_root):
    word = re.compile(r"(?<!\w)quokkas?(?!\w)", re.I)
    mine = [c for c in corpus_chunks(search_root)
            if word.search("\n".join([c.title, c.heading, c.content, " ".join(c.concepts)]))]
    assert len(mine) == QUOKKA_CHUNKS
    result = run(search_index, "quokka", mode="fts", limit=3)
    assert result.total == result.meta.fts_matches == QUOKKA_CHUNKS
    assert len(result.hits) == 3
    everything = run(search_index, "quokka", mode="fts", limit=100)
    assert {h.id for h in everything.hits} == {c.id for c in mine}


def test_total_counts_matches_beyond_the_candidate_pool(search_index, search_root):
    """A word in most chunks: the total must be the real count, not the size of the ranked pool (100)."""
    mine = [c for c in corpus_chunks(search_root)
            if "the" in re.findall(r"[^\W_]+", "\n".join([c.title, c.heading, c.content, " ".join(c.concepts)]).lower())]
    assert len(mine) > 100
    result = run(search_index, "the", mode="fts", limit=5)
    assert result.total == len(mine)
    assert len(result.hits) == 5


@pytest.mark.parametrize("mode", ["fts", "hybrid"])
def test_offset_pages_are_disjoint_and_concatenate(search_index, mode):
    pages = [run(search_index, "quokka", mode=mode, limit=7, offset=o) for o in (0, 7, 14, 21)]
    big = run(search_index, "quokka", mode=mode, limit=28)
    ids = [h.id for p in pages for h in p.hits]
    assert len(ids) == 28 == len(set(ids))
    assert ids == [h.id for h in big.hits]
    assert [h.score for p in pages for h in p.hits] == [h.score for h in big.hits]
    assert {p.total for p in pages} == {big.total}
    if mode == "fts":
        assert big.total == QUOKKA_CHUNKS
    past_end = run(search_index, "quokka", mode="fts", limit=5, offset=QUOKKA_CHUNKS)
    assert past_end.hits == [] and past_end.total == QUOKKA_CHUNKS


@pytest.mark.parametrize("mode", MODES)
def test_group_by_file(search_index, mode):
    result = run(search_index, "quokka", mode=mode, group_by_file=True, limit=100)
    files = [h.source_file for h in result.hits]
    assert len(files) == len(set(files))
    docs = search_index.store.documents_by_id([i for h in result.hits for i in h.also_in_file])
    for hit in result.hits:
        assert all(docs[i]["file"] == hit.source_file for i in hit.also_in_file)
        assert hit.id not in hit.also_in_file
    if mode == "fts":
        assert result.total == len(result.hits) == QUOKKA_FILES
        by_file = {h.source_file: len(h.also_in_file) for h in result.hits}
        assert by_file[_corpus.QUOKKA_PRINCIPLE] == 2 and by_file[_corpus.QUOKKA_RETRO] == 0
        assert all(by_file[f] == 1 for f in _corpus.QUOKKA_LOGS)


# -- unsegmented scripts ------------------------------------------------------------------------------
@pytest.mark.parametrize("word", ["มะม่วง", "ตลาดนัด", "แมว", "ไป"])
def test_thai_word_inside_a_thai_sentence(search_index, word):
    result = run(search_index, word, mode="fts")
    assert result.total == 1
    assert result.hits[0].source_file == _corpus.THAI_FILE
    assert result.hits[0].heading == "บันทึก"
    assert word in result.hits[0].snippet


# -- determinism --------------------------------------------------------------------------------------
DETERMINISM_QUERIES = [
    ("quokka", {"mode": "fts", "limit": 20}),
    ("how should I quote search terms for fts5", {"mode": "fts", "limit": 20, "type": "learning"}),
    ("ตลาดนัด mango", {"mode": "fts", "group_by_file": True, "limit": 10}),
    ("quokka", {"mode": "fts", "concepts": ["island"], "limit": 7, "offset": 7}),
    ("memory hygiene and superseding stale notes", {"mode": "vector", "limit": 5}),
    ("how should I quote search terms for fts5", {"mode": "hybrid", "limit": 20}),
    ("how should I quote search terms for fts5", {"mode": "hybrid", "fusion": "weighted", "limit": 20}),
    ("the", {"mode": "vector", "limit": 100}),
    ("ตลาดนัด mango", {"mode": "hybrid", "group_by_file": True, "limit": 10}),
]


@pytest.mark.parametrize("query, kw", DETERMINISM_QUERIES)
def test_same_query_twice_is_identical(search_index, query, kw):
    first, second = run(search_index, query, **kw), run(search_index, query, **kw)
    assert first.hits
    assert dump(first) == dump(second)


@pytest.mark.parametrize("query, kw", [q for q in DETERMINISM_QUERIES if q[1]["mode"] == "fts"]
                         + [DETERMINISM_QUERIES[4]])
def test_two_separately_built_indexes_agree(search_index, search_twin, query, kw):
    assert search_index.settings.data_dir != search_twin.settings.data_dir
    first = run(search_index, query, **kw)
    assert first.hits
    assert dump(first) == dump(run(search_twin, query, **kw))


POOL_QUERIES = [
    "quokka", "the", "memory hygiene", "tests must fail", "offline install", "ตลาดนัด mango",
    "hybrid search ranking", "commit messages", "security of retrieved notes", "benchmark latency",
    "webhook clock skew", "installer twice", "sort before serialise", "frontmatter parsing", "code fences",
]


def test_vector_pool_is_identical_across_separately_built_indexes(search_index, search_twin):
    differing = []
    for query in POOL_QUERIES:
        for kw in ({"mode": "vector", "limit": 100}, {"mode": "hybrid", "limit": 10, "group_by_file": True}):
            if dump(run(search_index, query, **kw)) != dump(run(search_twin, query, **kw)):
                differing.append((query, kw["mode"]))
    assert differing == []


# -- the vector leg really down ------------------------------------------------------------------------
def closed_loopback_port() -> int:
    """A port nothing listens on: bind to an ephemeral port, then release it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    return port


@pytest.fixture(scope="module")
def vectors_down(search_index, search_root):
    """The same SQLite index, but Chroma configured at a closed loopback port: a real connection failure. The
    exact vector leg of small bases (indexer/store/sqlite/exact.py) is off (limit 0), so that Chroma answers every query,
    as it does above the limit."""
    if search_index.settings.database_url:
        pytest.skip("the PostgreSQL store keeps its vectors in the database of its keyword index, so there is no"
                    " Chroma server to lose; its vector failures: tests/unit/test_pg_store.py")
    oracle = open_oracle(search_root, search_index.settings.data_dir,
                         chroma_url=f"http://127.0.0.1:{closed_loopback_port()}", exact_limit=0)
    yield oracle
    oracle.close()


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_a_small_base_keeps_its_vector_leg_while_chroma_is_down(search_index, search_root, mode):
    """Below the exact limit the vector leg reads the vectors cached in SQLite, not Chroma: with Chroma
    unreachable a search answers exactly as with it up, without a warning (the sections Chroma could not take
    meanwhile are not marked embedded and are reported as pending; oracle_stats reports the store as down)."""
    if search_index.settings.database_url:
        pytest.skip("no Chroma with the PostgreSQL store")
    oracle = open_oracle(search_root, search_index.settings.data_dir,
                         chroma_url=f"http://127.0.0.1:{closed_loopback_port()}")
    try:
        query = "how do agents share a repository safely"
        down = run(oracle, query, mode=mode, limit=10)
        assert down.meta.mode == mode and down.meta.vector_matches > 0
        assert not any("unavailable" in w for w in down.meta.warnings), down.meta.warnings
        assert dump(down) == dump(run(search_index, query, mode=mode, limit=10))
    finally:
        oracle.close()


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_vector_leg_down_falls_back_to_keywords(search_index, vectors_down, mode):
    query = "quote fts5 search terms"
    result = run(vectors_down, query, mode=mode, limit=10)
    keyword = run(search_index, query, mode="fts", limit=10)
    assert result.meta.mode == "fts" and result.meta.fusion is None
    assert len(result.meta.warnings) == 1
    assert result.meta.warnings[0].startswith("vector search unavailable, showing keyword results only:")
    assert "Could not connect" in result.meta.warnings[0] or "connect" in result.meta.warnings[0].lower()
    assert [h.id for h in result.hits] == [h.id for h in keyword.hits] and len(result.hits) == 10
    assert result.total == keyword.total > 0
    assert result.meta.vector_matches == 0
    check_breakdown(result)


def test_vector_leg_down_fts_mode_has_no_warning(vectors_down):
    result = run(vectors_down, "quokka", mode="fts")
    assert result.meta.warnings == [] and result.total == QUOKKA_CHUNKS


def test_hybrid_embeds_the_question_on_one_core_while_the_keyword_leg_runs(search_index, monkeypatch):
    """The question is embedded on another thread, on a single-threaded session (`beside`), while the keyword leg
    runs on the search's thread: the embedding here waits until the keyword leg has started, which would time out
    if the legs ran one after the other. The results are the same."""
    import threading

    from oracle_server.services.capabilities.search import legs

    before = dump(run(search_index, "quote fts5 search terms", mode="hybrid"))
    started = threading.Event()
    seen: list[tuple[bool, bool]] = []
    embed_query, keyword_leg = search_index.embedder.embed_query, legs._keyword_leg
    search_thread = threading.get_ident()

    def embedding(query, beside=False):
        seen.append((beside, threading.get_ident() != search_thread))
        assert started.wait(10), "the keyword leg did not start while the question was being embedded"
        return embed_query(query, beside=beside)

    def keywords(*args):
        started.set()
        return keyword_leg(*args)

    monkeypatch.setattr(search_index.embedder, "embed_query", embedding)
    monkeypatch.setattr(legs, "_keyword_leg", keywords)
    assert dump(run(search_index, "quote fts5 search terms", mode="hybrid")) == before
    assert seen == [(True, True)]


def test_a_failed_question_embedding_falls_back_to_keywords(search_index, monkeypatch):
    """The question is embedded on the vector leg's thread; its failure still costs the vector leg only."""
    from oracle_indexer.models.embed import EmbeddingUnavailable

    def broken(query, beside=False):
        raise EmbeddingUnavailable("embedding model failed: test")

    keyword = run(search_index, "quote fts5 search terms", mode="fts", limit=10)
    monkeypatch.setattr(search_index.embedder, "embed_query", broken)
    result = run(search_index, "quote fts5 search terms", mode="hybrid", limit=10)
    assert result.meta.mode == "fts"
    assert result.meta.warnings == ["vector search unavailable, showing keyword results only: embedding model failed: test"]
    assert [h.id for h in result.hits] == [h.id for h in keyword.hits] and result.total == keyword.total


@pytest.mark.parametrize("every", [True, False], ids=["every-note", "candidates"])
@pytest.mark.parametrize("query", ["quote fts5 search terms", "how do agents share a repository safely"])
def test_step_4_reads_made_early_give_the_same_ranking(search_index, monkeypatch, query, every):
    """Hybrid search reads step 4's facts and note scores ahead of it: the keyword candidates' facts and every matching
    note's score while the vector leg runs (_read_beside), the other candidates' facts beside query expansion
    (_prefetch); step 4 then reads only what is left. Above EVERY_NOTE_MAX_MATCHES keyword matches the note scores
    are read for the candidates instead, beside expansion, and those of the notes expansion added after it. Ranked
    from any of these reads or from reads made afterwards, the candidates come out the same, to the last digit."""
    import copy
    from dataclasses import replace

    from oracle_server.services.capabilities.search import adjust, fusion, legs
    from oracle_server.services.capabilities.search import plan as plan_module

    calls: list[list[str] | None] = []
    scores = search_index.store.note_keyword_scores

    def note_scores(match, files):
        calls.append(None if files is None else list(files))
        return scores(match, files)

    monkeypatch.setattr(search_index.store, "note_keyword_scores", note_scores)
    if not every:
        monkeypatch.setattr(legs, "EVERY_NOTE_MAX_MATCHES", 0)
    plan = plan_module._plan(search_index, SearchRequest(query=query, mode="hybrid", limit=10))
    legs = legs._run_legs(search_index, plan)
    assert legs.read is not None and legs.read.asked == {h.id for h in legs.fts}
    assert calls == ([None] if every else [])  # every matching note, once, while the vector leg ran
    fusion = fusion._fuse(search_index, plan, legs)
    assert fusion.prefetched is not None and legs.expanded_with
    # each from its own copy of the candidates: step 4 adjusts their scores in place
    early = adjust._adjust(search_index, plan, legs, replace(fusion, fused=copy.deepcopy(fusion.fused)))
    if every:
        assert calls == [None]  # the notes expansion added are among them
    else:
        assert len(calls) in (1, 2)  # the legs' notes beside expansion, and those only expansion found, if any
    made = len(calls)
    late = adjust._adjust(search_index, plan, replace(legs, read=None),
                            replace(fusion, fused=copy.deepcopy(fusion.fused), prefetched=None))
    assert len(calls) == made + 1 and calls[-1] is not None
    if not every:
        assert sorted(calls[-1]) == sorted(set(calls[0]) | set(calls[1] if made == 2 else []))
    assert early.facts == late.facts
    assert [vars(f) for f in early.fused] == [vars(f) for f in late.fused]


def test_a_total_counts_the_notes_that_really_match(search_index) -> None:
    """Issue 40: the vector leg ranks every embedded section, and a hybrid search's total counted every one of their
    notes (60-74 of 84 for `a`). It counts keyword matches and vector matches at or above the weak bar; the page
    still shows the nearest others after them, each marked weak, in the same order as before."""
    notes = run(search_index, "zanzibar", mode="hybrid", limit=10)
    assert {h.source_file for h in notes.hits[:2]} == {_corpus.HEAVY_FILE, _corpus.LIGHT_FILE}
    assert notes.total == 2 and len(notes.hits) == 10 and all(h.weak for h in notes.hits[2:])
    sections = run(search_index, "zanzibar", mode="hybrid", limit=10, unit="section")
    assert sections.total == sections.meta.fts_matches < len(sections.hits)
    assert run(search_index, "zanzibar", mode="fts", limit=10).total == 2
