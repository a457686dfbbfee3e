"""oracle_server.services.capabilities.search.query (user text -> FTS5 MATCH expressions) and oracle_server.services.capabilities.search.scoring (fusion). Pure functions; the
FTS5 expressions are checked against real in-memory SQLite FTS5 tables with the index's tokenizers."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _corpus import HOSTILE_QUERIES, NO_TERMS
from _hostile import examples
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.capabilities.search.query import (
    MAX_QUERY_CHARS,
    MAX_TERMS,
    QueryError,
    build_keyword_query,
    quote,
    snippet,
    split_terms,
    validate_query,
)
from oracle_indexer.notes.segment import THAI_MARKS, segment
from oracle_server.services.capabilities.search.scoring import LegHit

ROWS = [
    "hello world",
    "c sharp code",
    "the path to glory",
    "start here",
    "วันนี้ฉันไปตลาดนัดกับแมวของฉัน",
    "digital memory",
    "使用 Obsidian Sync 在设备之间同步你的笔记，也可以恢复笔记以前的版本。",
    "東京で会議",
]


@pytest.fixture(scope="module")
def fts():
    conn = sqlite3.connect(":memory:")
    # The word table as the store declares it (Thai marks are word characters) and fills it (Thai cut into
    # words); `t` keeps the text as written, so the rows read back unchanged.
    tokenize = f"porter unicode61 remove_diacritics 2 tokenchars '{THAI_MARKS}'"
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, words UNINDEXED, tokenize = \"{tokenize}\")")
    conn.execute("CREATE VIRTUAL TABLE w USING fts5(content, tokenize = \"" + tokenize + "\")")
    conn.execute("CREATE VIRTUAL TABLE tri USING fts5(content, tokenize = 'trigram')")
    for n, row in enumerate(ROWS, start=1):
        conn.execute("INSERT INTO t(rowid, content) VALUES (?, ?)", (n, row))
        conn.execute("INSERT INTO w(rowid, content) VALUES (?, ?)", (n, segment(row)))
        conn.execute("INSERT INTO tri(rowid, content) VALUES (?, ?)", (n, row))
    yield conn
    conn.close()


def run(conn, kq) -> tuple[list[str], list[str]]:
    """Rows matched by the keyword query's porter and trigram expressions (raises if SQLite rejects one)."""
    porter = [r[0] for r in conn.execute(
        "SELECT t.content FROM w JOIN t ON t.rowid = w.rowid WHERE w MATCH ? ORDER BY w.rowid", (kq.fts_match,)
    )] if kq.fts_match else []
    tri = [r[0] for r in conn.execute("SELECT content FROM tri WHERE tri MATCH ? ORDER BY rowid", (kq.trigram_match,))] if kq.trigram_match else []
    return porter, tri


def test_raw_hostile_text_really_is_an_fts5_error(fts):
    """Guard for the test itself: these inputs do break FTS5 when passed unquoted."""
    for raw in ("hello, world", "c# code", "foo@bar", "100%", "a=b", "x & y", "path/to", "[x]", "{y}", "NOT",
                "AND OR", '"unbalanced', "*", "col:term", "-x"):
        with pytest.raises(sqlite3.OperationalError):
            fts.execute("SELECT count(*) FROM t WHERE t MATCH ?", (raw,)).fetchone()


@pytest.mark.parametrize("name", list(HOSTILE_QUERIES))
def test_hostile_queries_give_expressions_sqlite_accepts(fts, name):
    query = HOSTILE_QUERIES[name]
    kq = build_keyword_query(validate_query(query))
    run(fts, kq)  # must not raise
    if name in NO_TERMS:
        assert kq.empty and kq.fts_match is None and kq.trigram_match is None
    else:
        assert not kq.empty
    if kq.fts_match:
        # every term is a quoted literal joined by OR: no user-supplied operator survives
        for part in kq.fts_match.split(" OR "):
            assert part.startswith('"') and part.endswith('"')
            assert '"' not in part[1:-1].replace('""', "")


@pytest.mark.parametrize(
    "query, expected_fts, expected_rows",
    [
        ("hello, world", '"hello" OR "world"', ["hello world"]),
        ("c# code", '"c" OR "code"', ["c sharp code"]),
        ("foo@bar", '"foo" OR "bar"', []),
        ("100%", '"100"', []),
        ("a=b", '"b"', []),  # "a" is a stopword
        ("x & y", '"x" OR "y"', []),
        ("path/to", '"path"', ["the path to glory"]),
        ("[x]", '"x"', []),
        ("{y}", '"y"', []),
        ("NOT", '"not"', []),  # only stopwords: kept, as literals
        ("AND OR", '"and" OR "or"', []),
        ('"unbalanced', '"unbalanced"', []),
        ("NEAR(a b)", '"near" OR "b"', []),
        ("col:term", '"col" OR "term"', []),
        ("-x", '"x"', []),
        ("^start", '"start"', ["start here"]),
        ("abc\x00def", '"abc" OR "def"', []),
        ("Hello HELLO hello", '"hello"', ["hello world"]),  # case-folded and deduplicated
        ("Digital", '"digital"', ["digital memory"]),
    ],
)
def test_hostile_query_expressions_exactly(fts, query, expected_fts, expected_rows):
    kq = build_keyword_query(validate_query(query))
    assert kq.fts_match == expected_fts
    assert run(fts, kq)[0] == expected_rows


def test_ten_kb_query_is_bounded(fts):
    words = " ".join(f"word{i}, x:{i}" for i in range(3000))
    assert len(words) > 10_240
    cleaned = validate_query(words)
    assert len(cleaned) == MAX_QUERY_CHARS
    kq = build_keyword_query(cleaned)
    assert len(kq.terms) == MAX_TERMS
    assert kq.terms[:3] == ("word0", "x", "0")
    run(fts, kq)


@settings(max_examples=examples(400), deadline=None, database=None,  # no .hypothesis/ dir outside tests/
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_random_unicode_never_breaks_fts5(fts, text):
    try:
        cleaned = validate_query(text)
    except QueryError:
        assert not text.replace("\x00", "").strip()
        return
    run(fts, build_keyword_query(cleaned))


@pytest.mark.parametrize("query", ["", "   ", "\t\n", "\x00", " \x00 \x00 "])
def test_empty_query_is_a_clear_error(query):
    with pytest.raises(QueryError, match="query is empty: pass a few words"):
        validate_query(query)


def test_non_string_query_is_an_error():
    with pytest.raises(QueryError, match="must be a string"):
        validate_query(None)  # type: ignore[arg-type]


def test_validate_trims():
    assert validate_query("  hello \x00 ") == "hello"


def test_thai_is_cut_into_words_for_the_word_table(fts):
    kq = build_keyword_query("ตลาดนัด")
    assert kq.terms == ("ตลาดนัด",) and kq.unsegmented == ()
    porter, tri = run(fts, kq)
    assert porter == ["วันนี้ฉันไปตลาดนัดกับแมวของฉัน"] and tri == []


def test_a_thai_sentence_matches_by_its_content_words(fts):
    """A sentence-length Thai query shares no run of text with the note, only words: "the cat went to the
    flea market" finds "today I went to the flea market with my cat". The function word ไป is dropped like
    an English stop word."""
    kq = build_keyword_query("แมวไปตลาดนัด")
    assert kq.terms == ("แมว", "ตลาดนัด")
    assert run(fts, kq)[0] == ["วันนี้ฉันไปตลาดนัดกับแมวของฉัน"]
    assert fts.execute("SELECT count(*) FROM tri WHERE tri MATCH ?", ('"แมวไปตลาดนัด"',)).fetchone()[0] == 0


def test_thai_function_words_alone_still_search():
    assert build_keyword_query("ฉันไป").terms == ("ฉัน", "ไป")


def test_thai_marks_stay_inside_words(fts):
    """unicode61 alone would cut ค้นหา into ค + นหา at the tone mark."""
    vocab = sqlite3.connect(":memory:")
    tokenize = f"porter unicode61 remove_diacritics 2 tokenchars '{THAI_MARKS}'"
    vocab.execute(f"CREATE VIRTUAL TABLE v USING fts5(x, tokenize = \"{tokenize}\")")
    vocab.execute("INSERT INTO v VALUES (?)", (segment("ระบบค้นหาความรู้"),))
    vocab.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(v, 'row')")
    assert {t for (t,) in vocab.execute("SELECT term FROM terms")} == {"ระบบ", "ค้นหา", "ความรู้"}


def test_thai_word_inside_a_sentence_is_not_found_by_unicode61():
    """Why Thai is segmented before indexing: unsegmented, unicode61 sees the sentence as one token."""
    plain = sqlite3.connect(":memory:")
    plain.execute("CREATE VIRTUAL TABLE p USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')")
    plain.execute("INSERT INTO p VALUES (?)", ("วันนี้ฉันไปตลาดนัดกับแมวของฉัน",))
    assert plain.execute("SELECT count(*) FROM p WHERE p MATCH ?", ('"ตลาดนัด"',)).fetchone()[0] == 0


def test_mixed_scripts_split_between_tables(fts):
    kq = build_keyword_query("hello ตลาดนัด ไป 東京")
    assert kq.terms == ("hello", "ตลาดนัด", "東京")  # a Chinese/Japanese run: its character pairs
    assert kq.unsegmented == () and kq.trigram_match is None
    porter, tri = run(fts, kq)
    assert porter == ["hello world", "วันนี้ฉันไปตลาดนัดกับแมวของฉัน", "東京で会議"] and tri == []
    assert build_keyword_query("猫").short_unsegmented == ("猫",)  # one ideograph: the trigram table's LIKE


def test_a_chinese_sentence_question_finds_the_note_sharing_its_words(fts):
    """Why Chinese and Japanese are indexed as character pairs: the question as one run (one token, or one
    trigram phrase) shares no whole token with the note; its pairs 恢复, 笔记, 版本 are in it."""
    kq = build_keyword_query("怎么恢复笔记之前的版本")
    assert {"恢复", "笔记", "版本"} <= set(kq.terms)
    porter, _ = run(fts, kq)
    assert porter == ["使用 Obsidian Sync 在设备之间同步你的笔记，也可以恢复笔记以前的版本。"]
    whole = fts.execute("SELECT count(*) FROM tri WHERE tri MATCH ?", ('"怎么恢复笔记之前的版本"',)).fetchone()[0]
    assert whole == 0


def test_split_terms_keeps_thai_combining_marks_in_the_word():
    assert split_terms("กิน ข้าว") == ["กิน", "ข้าว"]
    assert split_terms("APIの使い方") == ["API", "の使い方"]
    assert split_terms("ψ-memory") == ["ψ", "memory"]


def test_long_question_becomes_or_of_content_words():
    kq = build_keyword_query("How do I stop my tests from passing when the database is mocked out?")
    assert kq.terms == ("stop", "tests", "passing", "database", "mocked", "out")
    assert kq.fts_match == '"stop" OR "tests" OR "passing" OR "database" OR "mocked" OR "out"'


def test_quote_doubles_inner_quotes(fts):
    assert quote('say "hi"') == '"say ""hi"""'
    fts.execute("SELECT count(*) FROM t WHERE t MATCH ?", (quote('say "hi"'),)).fetchone()


def test_snippet_windows_around_the_first_term():
    content = ("filler " * 60) + "the needle is here " + ("tail " * 60)
    out = snippet(content, ("needle",))
    assert "needle" in out and out.startswith("…") and out.endswith("…")
    assert len(out) <= 242
    assert snippet("short text", ("x",)) == "short text"


# -- scoring -----------------------------------------------------------------------------------------
def test_rrf_ranks_better_items_first_and_rounds():
    fused = scoring.rrf([LegHit("a", 3.0), LegHit("b", 2.0), LegHit("c", 1.0)], [], k=60, semantic_weight=0.5)
    assert [f.id for f in fused] == ["a", "b", "c"]
    assert [f.score for f in fused] == [round(0.5 / 61, 6), round(0.5 / 62, 6), round(0.5 / 63, 6)]
    assert [f.fts_rank for f in fused] == [1, 2, 3]
    assert all(f.found_by == ["fts"] for f in fused)


def test_rrf_input_order_does_not_matter():
    fts = [LegHit("c", 1.0), LegHit("a", 3.0), LegHit("b", 2.0)]
    vec = [LegHit("b", 0.2), LegHit("d", 0.9)]
    fused = scoring.rrf(fts, vec, k=60, semantic_weight=0.5)
    assert fused == scoring.rrf(list(reversed(fts)), list(reversed(vec)), k=60, semantic_weight=0.5)
    # b: fts rank 2 + vector rank 2 beats everything found by one leg
    assert [f.id for f in fused] == ["b", "a", "d", "c"]
    b = fused[0]
    assert (b.fts_rank, b.vector_rank, b.found_by) == (2, 2, ["fts", "vector"])
    assert b.score == round(0.5 / 62 + 0.5 / 62, 6)


def test_rrf_ties_break_by_id():
    fused = scoring.rrf([LegHit("zeta", 5.0)], [LegHit("alpha", 0.9)], k=60, semantic_weight=0.5)
    assert fused[0].score == fused[1].score
    assert [f.id for f in fused] == ["alpha", "zeta"]
    # equal scores within a leg: id order decides the rank too
    ranked = scoring.rank_order([LegHit("b", 1.0), LegHit("a", 1.0), LegHit("c", 2.0)])
    assert [h.id for h in ranked] == ["c", "a", "b"]


def test_weighted_fusion_order_and_values():
    fused = scoring.weighted([LegHit("a", 10.0), LegHit("b", 5.0)], [LegHit("b", 0.9), LegHit("c", 0.5)], semantic_weight=0.5)
    assert [(f.id, f.score) for f in fused] == [("b", 0.75), ("a", 0.5), ("c", 0.0)]
    assert fused[0].found_by == ["fts", "vector"]


def test_weighted_ties_break_by_id():
    fused = scoring.weighted([LegHit("y", 4.0)], [LegHit("x", 0.3)], semantic_weight=0.5)
    # keyword 1.0 * 0.5 versus semantic 1.0 (a pool of one) * 0.5
    assert [(f.id, f.score) for f in fused] == [("x", 0.5), ("y", 0.5)]


def test_scores_are_rounded_to_six_decimals():
    fused = scoring.single_leg([LegHit("a", 1.23456789), LegHit("b", 1.234567849)], "fts")
    assert [(f.id, f.score, f.fts_score) for f in fused] == [("a", 1.234568, 1.234568), ("b", 1.234568, 1.234568)]
    vec = scoring.single_leg([LegHit("v", 0.1234564999)], "vector")
    assert (vec[0].score, vec[0].vector_similarity, vec[0].vector_rank, vec[0].found_by) == (0.123456, 0.123456, 1, ["vector"])


def test_tuned_defaults_are_what_fuse_uses():
    fts, vec = [LegHit("a", 2.0), LegHit("b", 1.0)], [LegHit("b", 0.9), LegHit("c", 0.4)]
    assert scoring.fuse(fts, vec) == scoring.weighted(fts, vec, semantic_weight=scoring.WEIGHTED_SEMANTIC_WEIGHT)
    assert scoring.fuse(fts, vec, method="rrf") == scoring.rrf(
        fts, vec, k=scoring.RRF_K, semantic_weight=scoring.RRF_SEMANTIC_WEIGHT)


def test_fuse_dispatch_and_unknown_method():
    fts = [LegHit("a", 2.0)]
    assert scoring.fuse(fts, [], method="rrf") == scoring.rrf(fts, [])
    assert scoring.fuse(fts, [], method="weighted") == scoring.weighted(fts, [])
    with pytest.raises(ValueError, match="unknown fusion 'magic'"):
        scoring.fuse(fts, [], method="magic")
