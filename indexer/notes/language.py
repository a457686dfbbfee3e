"""Which language a note and a query are in, so a search can prefer notes in the asker's language.

A translated knowledge base (a documentation vault with `en/`, `th/`, `de/` ... folders, every page in each)
answers an English keyword query with its Thai and Chinese copies as readily as the English page: they share
the product names, and the vector leg maps translations close together. What the asker wants is the page in
their language. A personal base that mixes languages (English notes, Thai notes, notes that switch mid-line)
is different: there a Thai question is often answered by an English note, and preferring Thai notes would
hide it. So a note's language is recorded with where it came from:

- `frontmatter`: `lang:` or `language:` says it (explicit, trusted);
- `folder`: the note lies under a folder named as a language (`th/`, `zh-TW/`, `pt_BR/`);
- `text`: detected from the note's own text (script shares, then a small packaged identifier for Latin text).

Only the first two are *structural*: search prefers the asker's language when the base holds notes in at
least two structural languages (server/services/capabilities/search/pipeline.py), never on text detection alone.
Every note's language is shown and can be filtered on (`lang`). Translations of one page share a `translation_key`
(frontmatter `translation_of`, or the path below the language folder) and are folded under the one in the asker's
language.

Pure functions, except `identify_latin`, which loads py3langid's model (BSD-3-Clause, 4.6 MB wheel, NumPy only;
~1.5 s to load, once per process): only for a Latin-script query in a base with two structural Latin-script
languages. Notes' text is told apart by script and by function words, with no model.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Languages a folder may be named after (ISO 639-1), those a documentation site is commonly translated into.
# Short English words that are also codes ("it", "no", "is", "as", "be", "my", "so", "to", "am", "or", "id")
# count only because two language folders are needed before anything is preferred.
FOLDER_LANGUAGES = frozenset(
    """af ar az be bg bn ca cs cy da de el en eo es et eu fa fi fr ga gl gu he hi hr hu hy id is it ja ka kk km
    kn ko ky lo lt lv mk ml mn mr ms my nb ne nl nn no pa pl pt ro ru si sk sl sq sr sv sw ta te tg th tl tr uk
    ur uz vi zh""".split()
)
_TAG = re.compile(r"^([A-Za-z]{2})(?:[-_]([A-Za-z]{2,4}|\d{3}))?$")
STRUCTURAL = ("frontmatter", "folder")
TEXT_SAMPLE = 4_000  # characters of a note read to detect its language: enough, and bounded for big notes
MIN_LETTERS = 20  # fewer letters than this: too little text to say
LATIN_CONFIDENCE = 0.9  # the identifier's probability needed to narrow a Latin query to one language


@dataclass(frozen=True)
class NoteLanguage:
    """A note's language (a lowercase ISO 639-1 code), where it came from, and the key its translations share."""

    lang: str | None = None
    source: str | None = None  # "frontmatter" | "folder" | "text"
    translation_key: str | None = None

    @property
    def structural(self) -> bool:
        return self.source in STRUCTURAL


def language_tag(value: object) -> str | None:
    """`th`, `zh-TW`, `pt_BR`, `EN` -> the primary code in lowercase; anything else (or an unknown code) -> None."""
    if not isinstance(value, str):
        return None
    match = _TAG.match(value.strip())
    if not match:
        return None
    code = match.group(1).lower()
    return code if code in FOLDER_LANGUAGES else None


def folder_language(rel: str) -> tuple[str, str] | None:
    """(language, the path below that folder) for a note under a folder named as a language, else None.
    The outermost such folder counts: `de/it/notes.md` is German."""
    parts = rel.split("/")
    for depth, part in enumerate(parts[:-1]):
        lang = language_tag(part)
        if lang:
            return lang, "/".join(parts[:depth] + ["*"] + parts[depth + 1:])
    return None


# Over complexity 10 on purpose: a table of Unicode ranges, one branch per script.
def _script(char: str) -> str | None:  # noqa: C901
    code = ord(char)
    if 0x0E00 <= code <= 0x0E7F:
        return "th"
    if 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF:
        return "kana"
    if 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF:
        return "han"
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF:
        return "ko"
    if 0x0400 <= code <= 0x04FF:
        return "cyrillic"
    if 0x0600 <= code <= 0x06FF:
        return "arabic"
    if 0x0590 <= code <= 0x05FF:
        return "he"
    if 0x0370 <= code <= 0x03FF:
        return "el"
    if 0x0900 <= code <= 0x097F:
        return "hi"
    if char.isalpha() and unicodedata.name(char, "").startswith("LATIN"):
        return "latin"
    return None


def script_shares(text: str) -> dict[str, float]:
    """Share of each script among the letters of `text` (empty when it has none)."""
    counts: dict[str, int] = {}
    for char in text:
        script = _script(char)
        if script:
            counts[script] = counts.get(script, 0) + 1
    total = sum(counts.values())
    return {s: n / total for s, n in counts.items()} if total else {}


def script_language(shares: Mapping[str, float]) -> str | None:
    """The language a script mix says for sure, or "latin" / "cyrillic" / "arabic" when only an identifier
    can tell, or None. Thai or Chinese prose keeps English names and code in Latin letters, so a script
    counts from a quarter of the letters; Japanese from a little kana (its prose is kana and kanji)."""
    if not shares:
        return None
    if shares.get("kana", 0) >= 0.05:
        return "ja"
    for script in ("th", "ko", "he", "el", "hi"):
        if shares.get(script, 0) >= 0.25:
            return script
    if shares.get("han", 0) >= 0.25:
        return "zh"
    return max(("latin", "cyrillic", "arabic"), key=lambda s: shares.get(s, 0.0)) \
        if any(shares.get(s) for s in ("latin", "cyrillic", "arabic")) else None


_IDENTIFIER = None
_IDENTIFIER_LOCK = threading.Lock()
_SCRIPT_FAMILIES = {"latin": None, "cyrillic": ("ru", "uk", "bg", "sr", "mk", "be", "kk", "ky", "mn", "tg"),
                    "arabic": ("ar", "fa", "ur")}


def identify_latin(text: str, among: Iterable[str] | None = None) -> tuple[str, float] | None:
    """(language, probability) by py3langid, optionally among the given codes only; None when the
    identifier is not installed (the language then stays unknown, which only loses a preference)."""
    global _IDENTIFIER
    with _IDENTIFIER_LOCK:
        if _IDENTIFIER is None:
            try:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier
            except ImportError:
                return None
            _IDENTIFIER = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        identifier = _IDENTIFIER
        codes = sorted(set(among or ()) & set(identifier.nb_classes)) if among is not None else None
        if codes is not None and len(codes) < 2:
            return (codes[0], 1.0) if codes else None
        identifier.set_languages(codes)
        try:
            lang, prob = identifier.classify(text)
        finally:
            identifier.set_languages(None)
    return str(lang), float(prob)


# The most frequent words of the Latin-script languages notes are most often written in. Counting them tells a
# paragraph's language as well as an identifier does, in microseconds and without loading a model at index time
# (the identifier is loaded only for short queries, where word counts say nothing).
_FUNCTION_WORDS = {
    "en": "the and of to is in that it for with as are this be on not you",
    "de": "der die und das ist nicht ein eine zu den mit von sie ich auf für",
    "fr": "le la les et des est une que pour dans qui pas sur vous avec du",
    "es": "el la los las que es en por para una con del se no como",
    "it": "il di che la per non una sono con della del gli le si",
    "pt": "de que não uma para com os as do da em se por você",
    "nl": "de het een van en is dat niet op te met voor zijn je",
    "sv": "och att det som en är på för med inte av till den har",
    "pl": "nie się że na jest to do jak co ale w z od",
}
_WORD_SETS = {lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()}
_WORD = re.compile(r"[^\W\d_]+")


def function_word_language(text: str) -> str | None:
    """The language whose most frequent words the text uses most, when clearly ahead (twice the next, at
    least 3 of them), else None."""
    counts = dict.fromkeys(_WORD_SETS, 0)
    for word in _WORD.findall(text.lower()):
        for lang, words in _WORD_SETS.items():
            if word in words:
                counts[lang] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    (best, n), (_, second) = ranked[0], ranked[1]
    return best if n >= 3 and n >= 2 * second else None


def text_language(text: str) -> str | None:
    """A note's language from its own text: its script, then its most frequent words for Latin script."""
    sample = text[:TEXT_SAMPLE]
    shares = script_shares(sample)
    if sum(1 for c in sample if _script(c)) < MIN_LETTERS:
        return None
    script = script_language(shares)
    if script == "latin":
        return function_word_language(sample)
    return None if script in _SCRIPT_FAMILIES else script


def translation_key(rel: str) -> str:
    """The key a page shares with its translations: its path, with its language folder (if any) as `*`."""
    folder = folder_language(rel)
    return folder[1] if folder else rel


def _translation_of(value: object) -> str | None:
    """`translation_of:` as a path from the root (`[[en/Start]]`, `./en/Start.md` -> `en/Start.md`)."""
    if not isinstance(value, str):
        return None
    path = value.strip().removeprefix("[[").removesuffix("]]").split("|")[0].strip().lstrip("./")
    if not path:
        return None
    return path if path.endswith(".md") else f"{path}.md"


def note_language(meta: Mapping[str, object], rel: str, body: str) -> NoteLanguage:
    """A note's language and translation key: frontmatter first, then its folder, then its text. The key is
    the original's (`translation_of:`) or the note's own, so an original and its translations share it."""
    explicit = language_tag(meta.get("lang")) or language_tag(meta.get("language"))
    folder = folder_language(rel)
    original = _translation_of(meta.get("translation_of"))
    key = translation_key(original or rel)
    if explicit:
        return NoteLanguage(explicit, "frontmatter", key)
    if folder:
        return NoteLanguage(folder[0], "folder", key)
    return NoteLanguage(text_language(body), "text" if body.strip() else None, key)


def query_languages(query: str, structural: Mapping[str, int]) -> frozenset[str] | None:
    """The languages a query may be in, among the base's structural languages (code -> notes), or None when
    no preference applies: fewer than two structural languages, or a query whose language cannot be told.
    A Latin-script query the identifier cannot pin down keeps every Latin-script language of the base
    ("vim keybindings" is English or German, certainly not Thai)."""
    if len(structural) < 2:
        return None
    shares = script_shares(query)
    script = script_language(shares)
    if script is None:
        return None
    if script not in _SCRIPT_FAMILIES:
        if script == "zh" and "zh" not in structural and "ja" in structural:
            script = "ja"  # kanji without kana, in a base that has Japanese but no Chinese
        return frozenset({script}) if script in structural else None
    family = _SCRIPT_FAMILIES[script]
    candidates = sorted(lang for lang in structural
                        if (family is None and _latin_language(lang)) or (family and lang in family))
    if not candidates:
        return None
    found = identify_latin(query, candidates) if len(candidates) > 1 else (candidates[0], 1.0)
    if found and found[1] >= LATIN_CONFIDENCE:
        return frozenset({found[0]})
    return frozenset(candidates)


_NON_LATIN = frozenset({"ar", "be", "bg", "bn", "el", "fa", "gu", "he", "hi", "hy", "ja", "ka", "kk", "km", "kn",
                        "ko", "ky", "lo", "mk", "ml", "mn", "mr", "my", "ne", "pa", "ru", "si", "sr", "ta", "te",
                        "tg", "th", "uk", "ur", "zh"})


def _latin_language(lang: str) -> bool:
    """Whether a language is written in Latin script (as its notes are, by default)."""
    return lang not in _NON_LATIN
