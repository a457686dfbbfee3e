"""Word segmentation for the keyword leg: Thai into words, Chinese and Japanese into character pairs.

Thai is written without spaces between words, so FTS5's unicode61 tokenizer sees a whole clause as one
token and a query word inside it never matches; the trigram table finds substrings but not a
sentence-length query, and cannot see two-character words at all. Before Thai text reaches the word
table, each run of Thai letters is cut into words with PyThaiNLP's dictionary-based `newmm` segmenter
(Apache-2.0, its dictionary ships inside the wheel; nothing is downloaded), and the words are joined
with spaces. The displayed text is never changed, only what the word table indexes.

unicode61 also treats Thai vowel and tone marks (Unicode category Mn) as separators and would cut
"ค้นหา" into "ค" + "นหา"; THAI_MARKS are declared token characters in the table's tokenizer.

PyThaiNLP loads its dictionary on first use (about a second), so it is imported only when Thai text
appears: a knowledge base without Thai never pays for it.
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from functools import lru_cache

# PyThaiNLP creates ~/pythainlp-data when its corpus module is imported, unless told it is read-only.
# Oracle writes nothing beyond its knowledge root and data dir (tests/test_paths.py), and the segmenter
# and stop words it uses ship inside the wheel.
os.environ.setdefault("PYTHAINLP_READ_ONLY", "1")

THAI_RANGE = (0x0E00, 0x0E7F)
# Vowel and tone marks of the Thai block: part of a word, not a break between words.
THAI_MARKS = "".join(
    chr(c) for c in range(THAI_RANGE[0], THAI_RANGE[1] + 1) if unicodedata.category(chr(c)) in ("Mn", "Mc")
)
_THAI_RUN = re.compile(f"[{chr(THAI_RANGE[0])}-{chr(THAI_RANGE[1])}]+")
_lock = threading.Lock()


def has_thai(text: str) -> bool:
    return _THAI_RUN.search(text) is not None


def is_thai_char(char: str) -> bool:
    return THAI_RANGE[0] <= ord(char) <= THAI_RANGE[1]


@lru_cache(maxsize=1)
def _tokenizer():
    """PyThaiNLP's newmm word tokenizer, imported once (the import and dictionary load cost ~1 s). Its dictionary
    is a trie of ~420,000 Python objects that live as long as the process: once it is built they are moved out
    of the cyclic garbage collector's reach (`gc.freeze`), or every full collection walked them, a ~100 ms pause
    (200-270 ms under load) that a search caught now and then (benchmarks/HISTORY.md, "A search beside the
    warm-up")."""
    import gc

    with _lock:
        from pythainlp.tokenize import word_tokenize

        word_tokenize("ภาษาไทย", engine="newmm")  # builds the dictionary's trie
        gc.freeze()
        return word_tokenize


def thai_words(run: str) -> list[str]:
    """The words of one run of Thai letters, in order; marks stay on their word."""
    words = _tokenizer()(run, engine="newmm", keep_whitespace=False)
    return [w for w in (w.strip() for w in words) if w]


# Chinese and Japanese runs (ideographs and kana): no dictionary ships for them, so they are indexed as
# overlapping character pairs, as Lucene's CJK analyzer does. Most Chinese words are two characters, so a
# question's pairs find the notes sharing its words, and bm25's idf makes the rarer pairs count; the whole run
# as one token (unicode61) or one trigram phrase matched only the same sentence verbatim.
_CJK_RUN = re.compile("[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30fc]+")


def has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None


def cjk_bigrams(run: str) -> list[str]:
    """The overlapping character pairs of one run of ideographs and kana (a single character stays whole)."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i:i + 2] for i in range(len(run) - 1)]


def cjk_runs(text: str) -> list[str]:
    return _CJK_RUN.findall(text)


def segment(text: str) -> str:
    """What the word tables index: every Thai run cut into space-separated words, every Chinese or Japanese
    run into its overlapping character pairs; other scripts untouched."""
    if has_thai(text):
        text = _THAI_RUN.sub(lambda m: " " + " ".join(thai_words(m.group(0))) + " ", text)
    if has_cjk(text):
        text = _CJK_RUN.sub(lambda m: " " + " ".join(cjk_bigrams(m.group(0))) + " ", text)
    return text


@lru_cache(maxsize=1)
def thai_stopwords() -> frozenset[str]:
    """PyThaiNLP's list of Thai function words (1,030), left out of queries like English stop words."""
    from pythainlp.corpus import thai_stopwords as load

    return frozenset(load())


def warm() -> None:
    """Load the segmenter now (a server does this in the background when its index holds Thai)."""
    thai_words("ภาษาไทย")
    thai_stopwords()
