"""Markdown as the plain text a snippet shows (issue 40): a hit's snippet read `**Date**: … ## What happened` and
`[[0001-use-postgres]]`, marks an agent or a person has to read past. Only the display changes: the keyword and
vector legs index the section as before, and the snippet's window is chosen on the plain text.

Pure (no index, no model): `plain_text` is tested on strings alone (tests/unit/test_plain_snippet.py).
"""

from __future__ import annotations

import re

# [[target]], [[target#heading]], [[target|label]], ![[embed]]: the label, else the target (its heading dropped)
_WIKILINK = re.compile(r"!?\[\[([^\[\]|#\n]*)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
# [text](url) and ![alt](url): the text
_LINK = re.compile(r"!?\[([^\[\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t]+|$)", re.M)
_CLOSING_HASHES = re.compile(r"[ \t]+#+[ \t]*$", re.M)
_QUOTE = re.compile(r"^[ \t]{0,3}(?:>[ \t]?)+", re.M)
_BULLET = re.compile(r"^([ \t]*)[*+][ \t]+", re.M)  # `* item` reads as `- item`
_RULE = re.compile(r"^[ \t]{0,3}(?:[-*_][ \t]*){3,}$", re.M)
# emphasis: ***x***, **x**, __x__, *x*, _x_, ~~x~~ (an underscore inside a word, snake_case, is not emphasis)
_STRONG = re.compile(r"(\*\*\*|\*\*|__|~~)(?=\S)(.+?)(?<=\S)\1")
_STAR = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])")
_UNDERSCORE = re.compile(r"(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])")
_CODE = re.compile(r"(`+)(.+?)\1")
_FENCE = re.compile(r"^[ \t]{0,3}(?:```|~~~)[^\n]*$", re.M)
# a table: its |---|:--:| rule goes, a row's cells read `a · b` (only lines that start with a pipe are rows)
_TABLE_RULE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*(?::?-{3,}:?[ \t]*)?$", re.M)
_TABLE_ROW = re.compile(r"^[ \t]*\|(.*?)\|?[ \t]*$", re.M)


def _row(match: re.Match[str]) -> str:
    return " · ".join(cell.strip() for cell in match.group(1).split("|") if cell.strip())


def _wikilink(match: re.Match[str]) -> str:
    target, heading, label = match.group(1), match.group(2), match.group(3)
    if label and label.strip():
        return label.strip()
    name = target.strip().rsplit("/", 1)[-1]
    name = name[:-3] if name.lower().endswith(".md") else name
    if heading and heading.strip():
        return f"{name} › {heading.strip()}" if name else heading.strip()
    return name


def plain_text(markdown: str) -> str:
    """`markdown` without its marks: a wikilink is its label (else its note's name), a link its text, emphasis,
    code ticks, heading and quote marks and rules are dropped, `*` bullets read `-`, a table's rows read `a · b`. Line
    breaks are kept (the snippet folds whitespace itself); text that is not markdown comes back unchanged."""
    text = _FENCE.sub("", markdown)
    text = _TABLE_RULE.sub("", text)
    text = _TABLE_ROW.sub(_row, text)
    text = _WIKILINK.sub(_wikilink, text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _CODE.sub(lambda m: m.group(2).strip(), text)
    text = _RULE.sub("", text)
    text = _HEADING.sub("", text)
    text = _CLOSING_HASHES.sub("", text)
    text = _QUOTE.sub("", text)
    text = _BULLET.sub(r"\1- ", text)
    for pattern in (_STRONG, _STRONG):  # ***x*** is ** around *x*: twice covers the nesting notes use
        text = pattern.sub(lambda m: m.group(2), text)
    text = _STAR.sub(lambda m: m.group(1), text)
    return _UNDERSCORE.sub(lambda m: m.group(1), text)
