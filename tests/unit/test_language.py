"""Languages: what a note and a query are in (pure functions), and how search prefers the asker's language
in a base translated into several languages, over a real index (FTS5 + vectors), without touching a base
whose notes merely mix languages."""

from __future__ import annotations

from pathlib import Path

import pytest

from _corpus import write
from oracle_indexer.notes.language import (
    NoteLanguage,
    folder_language,
    function_word_language,
    language_tag,
    note_language,
    query_languages,
    text_language,
)
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search.pipeline import run_search

BASE = {"en": 3, "de": 3, "th": 3, "zh": 3, "ja": 3}


# -- pure: notes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, code", [("th", "th"), ("zh-TW", "zh"), ("pt_BR", "pt"), ("EN", "en"),
                                         ("xx", None), ("english", None), (3, None), ("", None)])
def test_language_tag(value, code):
    assert language_tag(value) == code


def test_folder_language_takes_the_outermost_language_folder():
    assert folder_language("th/Sync/x.md") == ("th", "*/Sync/x.md")
    assert folder_language("docs/zh-TW/a/b.md") == ("zh", "docs/*/a/b.md")
    assert folder_language("de/it/notes.md") == ("de", "*/it/notes.md")
    assert folder_language("learnings/x.md") is None
    assert folder_language("en.md") is None  # a file name is not a folder


@pytest.mark.parametrize("text, lang", [
    ("This is a note about the way we deploy things and it is not hard to do at all.", "en"),
    ("Dies ist eine Notiz über die Art, wie wir Dinge bereitstellen, und es ist nicht schwer.", "de"),
    ("การใช้งาน Obsidian Sync เพื่อซิงค์โน้ตของคุณระหว่างอุปกรณ์ต่างๆ ได้อย่างปลอดภัย", "th"),
    ("Obsidian Sync を使うと、デバイス間でノートを同期できます。", "ja"),
    ("使用 Obsidian Sync 在设备之间同步你的笔记，安全可靠。", "zh"),
    ("ok", None),  # too little text to say
    ("`docker compose up -d` then `curl localhost:8080/health`", None),  # code, no language
])
def test_text_language(text, lang):
    assert text_language(text) == lang


def test_function_words_need_a_clear_lead():
    assert function_word_language("the die and und") is None
    assert function_word_language("the cat and the dog is in the house with the mouse") == "en"


def test_note_language_prefers_frontmatter_then_folder_then_text():
    body = "Dies ist eine Notiz über die Art, wie wir Dinge bereitstellen, und es ist nicht schwer."
    assert note_language({"lang": "th"}, "de/x.md", body) == NoteLanguage("th", "frontmatter", "*/x.md")
    assert note_language({}, "de/x.md", body) == NoteLanguage("de", "folder", "*/x.md")
    assert note_language({}, "learnings/x.md", body) == NoteLanguage("de", "text", "learnings/x.md")
    assert not note_language({}, "learnings/x.md", body).structural
    # a translation names its original; both then share the original's key
    assert note_language({"lang": "th", "translation_of": "[[learnings/x]]"}, "learnings/x-th.md", "").translation_key \
        == "learnings/x.md"


# -- pure: queries ----------------------------------------------------------------------------------------
def test_query_languages_by_script_and_identifier():
    assert query_languages("ทำไม sync ไม่ทำงาน", BASE) == {"th"}  # Thai with English words is Thai
    assert query_languages("同步失败怎么办", BASE) == {"zh"}
    assert query_languages("同期できないときは", BASE) == {"ja"}
    assert query_languages("Wie kann ich eine Notiz wiederherstellen", BASE) == {"de"}
    assert query_languages("how do I get back the text a note had before", BASE) == {"en"}
    # two words the identifier cannot pin down: every Latin-script language of the base, never Thai or Chinese
    assert query_languages("vim keybindings", BASE) == {"en", "de"}


def test_no_preference_without_two_structural_languages():
    assert query_languages("vim keybindings", {"en": 10}) is None
    assert query_languages("vim keybindings", {}) is None
    assert query_languages("ทำไม sync ไม่ทำงาน", {"en": 3, "de": 3}) is None  # no Thai notes to prefer
    assert query_languages("1234 !!!", BASE) is None


def test_prefer_languages_scales_other_languages_and_never_unknown_ones():
    items = [scoring.Fused("zh", 1.0), scoring.Fused("en", 0.6), scoring.Fused("unknown", 0.55)]
    out = scoring.prefer_languages(items, {"zh": "zh", "en": "en", "unknown": None}, frozenset({"en"}))
    assert [(f.id, f.score) for f in out] == [("en", 0.6), ("unknown", 0.55), ("zh", 0.5)]
    assert out[2].relevance == 1.0 and out[2].language_factor == scoring.OTHER_LANGUAGE_FACTOR
    untouched = [scoring.Fused("a", 1.0)]
    assert scoring.prefer_languages(untouched, {"a": "zh"}, None) is untouched


# -- search over a real index -----------------------------------------------------------------------------
PAGES = {  # one page, four languages: the Thai and Chinese copies keep the product's English name
    "en": ("Vim key bindings", "Turn on Vim key bindings in Settings > Editor to move with hjkl and use modal editing."),
    "de": ("Vim-Tastenkürzel", "Aktiviere die Vim-Tastenkürzel unter Einstellungen > Editor, um mit hjkl zu navigieren."),
    "th": ("ปุ่มลัด Vim", "เปิดใช้ปุ่มลัด Vim ในการตั้งค่า > ตัวแก้ไข เพื่อเลื่อนเคอร์เซอร์ด้วย hjkl และแก้ไขแบบโหมด"),
    "zh": ("Vim 键位", "在 设置 > 编辑器 中开启 Vim 键位，使用 hjkl 移动光标并进行模式编辑。Vim Vim"),
}
OTHER = {
    "en": ("Daily notes", "A daily note opens a new page for today from your template."),
    "de": ("Tägliche Notizen", "Eine tägliche Notiz öffnet eine neue Seite für heute aus deiner Vorlage."),
    "th": ("บันทึกประจำวัน", "บันทึกประจำวันเปิดหน้าใหม่สำหรับวันนี้จากเทมเพลตของคุณ"),
    "zh": ("日记", "日记会根据你的模板为今天打开一个新页面。"),
}


def _translated_base(root: Path) -> None:
    for lang, (title, body) in PAGES.items():
        write(root / f"learnings/{lang}/vim.md", f"# {title}\n\n{body}\n")
    for lang, (title, body) in OTHER.items():
        write(root / f"learnings/{lang}/daily.md", f"# {title}\n\n{body}\n")


@pytest.fixture(scope="module")
def translated(tmp_path_factory):
    from _corpus import open_oracle

    root = tmp_path_factory.mktemp("translated")
    _translated_base(root)
    oracle = open_oracle(root, tmp_path_factory.mktemp("translated-data"))
    oracle.indexer.sync()
    yield oracle
    oracle.close()


@pytest.mark.parametrize("mode", ["fts", "hybrid"])
def test_an_english_query_gets_the_english_page_with_its_translations_folded(translated, mode):
    result = run_search(translated, SearchRequest(query="vim keybindings", mode=mode))
    assert result.meta.languages == ["de", "en"]
    first = result.hits[0]
    assert first.source_file in ("learnings/en/vim.md", "learnings/de/vim.md") and first.lang in ("en", "de")
    folded = {t.source_file for t in first.translations}
    assert {"learnings/th/vim.md", "learnings/zh/vim.md"} <= folded | {first.source_file}
    assert all(h.source_file not in ("learnings/th/vim.md", "learnings/zh/vim.md") for h in result.hits)


def test_a_thai_question_gets_the_thai_page_first(translated):
    result = run_search(translated, SearchRequest(query="จะใช้ปุ่มลัด Vim ได้ยังไง"))
    assert result.meta.languages == ["th"]
    assert result.hits[0].source_file == "learnings/th/vim.md"
    assert result.hits[0].lang == "th"


def test_the_lang_filter_keeps_one_language(translated):
    result = run_search(translated, SearchRequest(query="Vim", lang="zh-CN", mode="fts"))
    assert {h.source_file for h in result.hits} == {"learnings/zh/vim.md"}
    assert result.meta.languages is None  # a filter, not a preference


def test_results_are_byte_identical_across_runs(translated):
    request = SearchRequest(query="vim keybindings")
    first = run_search(translated, request).model_dump(exclude={"meta": {"took_ms"}})
    assert run_search(translated, request).model_dump(exclude={"meta": {"took_ms"}}) == first


def test_a_mixed_language_base_has_no_preference(tmp_path, make_oracle):
    """Notes that merely mix languages (no language folders, no `lang:`): a Thai question about an English
    note still gets it first."""
    write(tmp_path / "root/learnings/hotspot.md",
          "# Localhost services die on hotspot\n\nSwitching to the iPad hotspot kills every localhost service, and it is the same for the dev server.\n")
    write(tmp_path / "root/learnings/thai.md", "# ตลาดนัด\n\nไปตลาดนัดวันเสาร์ ซื้อผลไม้และขนม\n")
    oracle = make_oracle(tmp_path / "root", tmp_path / "data")
    oracle.indexer.sync()
    result = run_search(oracle, SearchRequest(query="สลับไปใช้ hotspot แล้ว localhost ตาย"))
    assert result.meta.languages is None
    assert result.hits[0].source_file == "learnings/hotspot.md"
    assert {h.lang for h in result.hits} == {"en", "th"}  # detected from the text, shown, never used to rank
