"""`oracle init [PATH]`: look at a folder of markdown and write an `oracle.toml` that indexes it sensibly.

A new user's folder is rarely principles/learnings/retrospectives: an ADR repository keeps decisions in
`locales/<lang>/...`, an Obsidian vault keeps notes anywhere. Rather than make them learn the rules first,
init counts the markdown per folder, proposes a layout (a default type for everything, `retro` for folders
of dated notes, the built-in folders as they are), writes it with comments saying what each line does, and
then says what `oracle index` will do with it: the same `discover` the indexer runs, so no surprise later.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from indexer.discover import Discovery, discover, top_folder
from indexer.safe_write import SHARED, SymlinkRefused, write_atomic
from indexer.rootconfig import BUILTIN_FOLDER_TYPES, CONFIG_NAME, Layout, load_layout, read_gitignore
from server.render import summary_lines

_DATED = re.compile(r"^\d{4}-\d{2}-\d{2}")
_LOCALE = re.compile(r"^[a-z]{2}(?:[-_][A-Za-z]{2,4})?$")


class InitError(RuntimeError):
    """init cannot proceed (no such folder, a config already there); the message says what to do."""


@dataclass
class Survey:
    """What a folder holds, as init sees it."""

    root: Path
    per_top: Counter = field(default_factory=Counter)  # top-level folder ("." = root files) -> markdown files
    dated: Counter = field(default_factory=Counter)  # top-level folder -> files named YYYY-MM-DD...
    builtin: set[str] = field(default_factory=set)  # built-in folder names present (learnings, ...)
    locales: dict[str, list[str]] = field(default_factory=dict)  # folder -> locale sub-folders
    obsidian: bool = False

    @property
    def total(self) -> int:
        return sum(self.per_top.values())


def survey(root: Path) -> Survey:
    """Count markdown files by top-level folder with the default exclusions (dot-folders, .gitignore)."""
    found = discover(root, Layout(default_type="learning", gitignore=read_gitignore(root)))  # every candidate
    result = Survey(root=root, obsidian=(root / ".obsidian").is_dir())
    for item in found.files:
        top = top_folder(item.rel)
        result.per_top[top] += 1
        if _DATED.match(item.rel.rsplit("/", 1)[-1]):
            result.dated[top] += 1
        for part in item.rel.split("/")[:-1]:
            if part in BUILTIN_FOLDER_TYPES:
                result.builtin.add(part)
    for folder in sorted({f.rel.rsplit("/", 1)[0] for f in found.files if "/" in f.rel}):
        parent, _, name = folder.rpartition("/")
        if _LOCALE.match(name):
            result.locales.setdefault(parent or ".", []).append(name)
    result.locales = {k: sorted(set(v)) for k, v in result.locales.items() if len(set(v)) >= 2}
    return result


def _toml_key(key: str) -> str:
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_config(s: Survey) -> str:
    """The commented oracle.toml for a survey."""
    lines = [
        f"# {CONFIG_NAME}: what Oracle indexes in this folder. Written by `oracle init`; edit freely.",
        "# Environment variables override it (ORACLE_FOLDER_TYPES, ORACLE_DEFAULT_TYPE).",
        "# Types: principle (how we work), learning (a pattern found while working), retro (what happened).",
        "",
        "[index]",
    ]
    others = {top: n for top, n in s.per_top.items() if top not in BUILTIN_FOLDER_TYPES}
    if s.builtin and not s.obsidian:
        lines += [
            f"# This folder has Oracle's own layout ({', '.join(sorted(s.builtin))}/): those are typed by name.",
            f"# {sum(others.values())} other markdown files are not indexed; uncomment to index them as learnings:",
            '# default_type = "learning"',
        ]
    else:
        lines += [
            "# Files in folders not mapped under [types], and files directly in this folder, get this type.",
            "# Remove the line to index only the folders mapped below.",
            'default_type = "learning"',
        ]
    lines += [
        "# Globs in .gitignore syntax (\"drafts/\", \"**/*.draft.md\"). Dot-folders (.git, .obsidian, .trash),",
        "# node_modules and what this folder's .gitignore lists are always left out.",
        "exclude = []",
        '# include = ["*.md"]    # only files matching these (default: every .md and .markdown file)',
        "# gitignore = true      # false: index what .gitignore lists too",
    ]
    for parent, langs in sorted(s.locales.items()):
        where = "" if parent == "." else f"{parent}/"
        keep = "en" if "en" in langs else langs[0]
        rest = ", ".join(f'"{where}{lang}/"' for lang in langs if lang != keep)
        lines += [
            f"# {where or 'this folder'} holds one folder per language ({', '.join(langs)}). To index one language only:",
            f"# exclude = [{rest}]",
        ]
    lines += [
        "",
        "[types]",
        "# \"folder/path\" = \"type\", paths from this folder; the most specific folder wins, so",
        "# \"docs\" = \"learning\" with \"docs/decisions\" = \"principle\" types decisions as principles.",
        "# \"**/name\" matches a folder of that name at any depth (like the built-in learnings/, principles/).",
        "# Markdown files per top-level folder here:",
    ]
    for top, n in sorted(s.per_top.items(), key=lambda kv: (-kv[1], kv[0])):
        if top == ".":
            lines.append(f"#   (this folder itself): {n} files")
            continue
        if top in BUILTIN_FOLDER_TYPES:
            lines.append(f"#   {top}/: {n} files ({BUILTIN_FOLDER_TYPES[top]}, built in)")
            continue
        if s.dated[top] * 2 > n:  # mostly named by date: a journal, daily notes, session logs
            lines.append(f"{_toml_key(top)} = \"retro\"    # {n} files, {s.dated[top]} named by date")
        else:
            lines.append(f"# {_toml_key(top)} = \"principle\"    # {n} files")
    lines += [
        "",
        "[embedding]",
        "# The model that embeds notes and questions: minilm (the default, all-MiniLM-L6-v2), or a folder holding",
        "# model.onnx and tokenizer.json (query_prefix / passage_prefix: what it expects before each, e.g. \"query: \").",
        "# A change re-embeds every note at the next `oracle index`; keyword search answers meanwhile.",
        '# model = "minilm"',
    ]
    return "\n".join(lines) + "\n"


def describe(found: Discovery, layout: Layout) -> list[str]:
    """What `oracle index` will do with this layout, in a few lines."""
    by_type = Counter(f.type for f in found.files)
    kinds = ", ".join(f"{n} {t}" for t, n in sorted(by_type.items())) or "nothing"
    lines = [f"will index {len(found.files)} notes ({kinds})"]
    lines += summary_lines(found.unmapped, found.aliases, dict(found.excluded), found.skipped)
    lines += [f"warning: {w}" for w in found.warnings]
    return lines


def init(path: Path, force: bool = False) -> tuple[Path, list[str]]:
    """Write PATH/oracle.toml (never over an existing one unless forced); return it and what it means."""
    root = path.expanduser().resolve()
    if not root.is_dir():
        raise InitError(f"{root} is not a folder")
    target = root / CONFIG_NAME
    if target.is_symlink():  # a repository could point it at any file of the person running init
        raise InitError(f"{target} is a symlink; oracle.toml must be a regular file: remove the link, then run init")
    if target.exists() and not force:
        raise InitError(f"{target} exists; edit it, or run `oracle init --force` to replace it")
    s = survey(root)
    if s.total == 0:
        raise InitError(f"no markdown files under {root} (dot-folders and .gitignore'd paths left out)")
    text = render_config(s)
    try:
        write_atomic(target, text, SHARED, refuse_symlink=True)  # a random temporary name: no planted link is followed
    except SymlinkRefused as exc:  # a link planted between the check above and now
        raise InitError(str(exc)) from None
    layout = load_layout(root)  # with the environment: what `oracle index` will really do
    lines = [f"wrote {target}"] + describe(discover(root, layout), layout)
    lines.append(f"next: oracle --root {root} index")
    return target, lines
