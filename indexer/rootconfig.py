"""Which markdown files under a knowledge root are notes, and of which type: `oracle.toml` plus the environment.

Any folder of markdown should index in one step, not only the principles/learnings/retrospectives layout.
The rules live in one `Layout`, built from (lowest to highest precedence) the built-in folder names, the
root's `oracle.toml`, and ORACLE_FOLDER_TYPES / ORACLE_DEFAULT_TYPE, so `discover`, the watcher's
`sync_paths` and `stats` classify every path the same way.

Folder keys in oracle.toml are paths from the root (`locales/en`, `notes`); `**/logs` matches a folder named
logs at any depth, like the built-in `learnings` (in ORACLE_FOLDER_TYPES a bare name keeps meaning that). The
most specific key wins: the deepest folder on the file's path that a key names, and at the same depth a path
beats a bare name. Files in no mapped folder
(root files included) get `default_type`, or are reported as not indexed when there is none.

Globs (include, exclude and the root's `.gitignore`) use .gitignore syntax, so there is one syntax to learn:
`*.md` matches at any depth, a pattern with a `/` is anchored at the root, `dir/` matches folders only, `**`
crosses folders, `!` re-includes (in .gitignore).

Mistakes are never silently ignored: a broken file, an unknown key or an unknown type is a ConfigError naming
the file and line; a folder key that matches no folder is a warning (`Layout.unmatched`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, TypeVar

from oracle_indexer.models.rerank import RerankPolicy
from oracle_indexer.notes.fields import FrontmatterSchema
from oracle_indexer.notes.freshness import FreshnessPolicy

T = TypeVar("T")

CONFIG_NAME = "oracle.toml"
DOC_TYPES = ("principle", "learning", "retro", "note")  # note: any other markdown (services/init.py)

# Folder name -> document type, at any depth: the Oracle layout and Oracle v2's ψ/memory layout.
BUILTIN_FOLDER_TYPES: dict[str, str] = {
    "principles": "principle",
    "resonance": "principle",
    "learnings": "learning",
    "retrospectives": "retro",
}
# Never walked: version control, editor and tool state, dependencies. Dot-folders are skipped as well.
DEFAULT_EXCLUDED_DIRS = frozenset({"node_modules", "__pycache__", "_site", "site-packages"})

_INDEX_KEYS = {"include", "exclude", "default_type", "gitignore"}
_EMBEDDING_KEYS = {"model", "query_prefix", "passage_prefix"}
_TOP_KEYS = {"index", "types", "embedding", "freshness", "frontmatter", "database", "rerank", "search"}


class ConfigError(ValueError):
    """A setting is present but unusable; the message says which, where, and how to fix it."""


# -- .gitignore-style globs --------------------------------------------------------------------------
@dataclass(frozen=True)
class Glob:
    """One .gitignore-style pattern compiled to a regex over root-relative POSIX paths."""

    text: str
    regex: re.Pattern[str]
    negated: bool = False
    dir_only: bool = False

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.fullmatch(rel) is not None


def _translate(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = body.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            inner = body[i + 1 : end]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = end + 1
        elif c == "\\" and i + 1 < len(body):
            out.append(re.escape(body[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def compile_glob(pattern: str) -> Glob | None:
    """A .gitignore line as a Glob, or None for a blank line or a comment."""
    text = pattern.rstrip("\n")
    if not text.strip() or text.startswith("#"):
        return None
    text = text.rstrip(" ") if not text.endswith("\\ ") else text
    negated = text.startswith("!")
    body = text[1:] if negated else text
    body = body[1:] if body.startswith("\\") and body[1:2] in ("!", "#") else body
    dir_only = body.endswith("/")
    body = body.rstrip("/")
    if not body:
        return None
    anchored = "/" in body
    body = body.lstrip("/")
    regex = _translate(body)
    if not anchored:
        regex = "(?:.*/)?" + regex
    return Glob(text=pattern, regex=re.compile(regex, re.DOTALL), negated=negated, dir_only=dir_only)


def ancestors(rel: str) -> list[str]:
    """`a/b/c.md` -> [`a`, `a/b`]: the folders a path lies in, outermost first."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: n + 1]) for n in range(len(parts))]


def _any_match(globs: tuple[Glob, ...], rel: str, is_dir: bool) -> bool:
    """Does a pattern match the path or one of its folders (a matched folder takes everything in it)?"""
    if any(g.matches(rel, is_dir) for g in globs):
        return True
    return any(g.matches(folder, True) for folder in ancestors(rel) for g in globs)


def _ignored_by(rules: tuple[Glob, ...], rel: str, is_dir: bool) -> bool:
    """.gitignore semantics: the last matching line decides; nothing inside an ignored folder comes back."""
    for folder in ancestors(rel):
        if _last_verdict(rules, folder, True):
            return True
    return _last_verdict(rules, rel, is_dir)


def _last_verdict(rules: tuple[Glob, ...], rel: str, is_dir: bool) -> bool:
    verdict = False
    for rule in rules:
        if rule.matches(rel, is_dir):
            verdict = not rule.negated
    return verdict


# -- the layout ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FolderKey:
    """One folder -> type rule, with where it was written (for messages)."""

    key: str  # a bare folder name, or a root-relative path
    type: str
    origin: str  # "built-in", "oracle.toml:7", "ORACLE_FOLDER_TYPES"
    is_path: bool = False  # a path from the root ("docs/adr", "./docs"), not a name at any depth


@dataclass(frozen=True)
class Layout:
    """How root-relative paths map to document types, and which paths are not notes at all."""

    folders: tuple[FolderKey, ...] = tuple(FolderKey(k, v, "built-in") for k, v in BUILTIN_FOLDER_TYPES.items())
    default_type: str | None = None
    default_origin: str = ""
    include: tuple[Glob, ...] = ()
    exclude: tuple[Glob, ...] = ()
    gitignore: tuple[Glob, ...] = ()
    source: Path | None = None  # the oracle.toml read, if any
    # [embedding]: the model (a built-in name or a folder, relative to the root) and its prefixes; None: default
    embedding_model: str | None = None
    query_prefix: str | None = None
    passage_prefix: str | None = None
    freshness: FreshnessPolicy = FreshnessPolicy()  # [freshness]: days a note of each type stays fresh
    rerank: RerankPolicy = RerankPolicy()  # [rerank]: an optional cross-encoder folder (indexer/models/rerank.py)
    frontmatter: FrontmatterSchema = FrontmatterSchema()  # [frontmatter]: required fields, allowed values
    database_url: str | None = None  # [database] url: the PostgreSQL store (ORACLE_DATABASE_URL wins)
    sampling: bool = False  # [search] sampling: ask an MCP client's model for query variants (ORACLE_SAMPLING wins)
    # key -> (precedence, type); precedence: where it was written (environment 2 > oracle.toml 1 > built-in 0),
    # then a path over a bare name
    _by_path: dict[str, tuple[int, str]] = field(default_factory=dict, compare=False, repr=False)
    _by_name: dict[str, tuple[int, str]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for item in self.folders:  # later entries of the same origin win
            rank = 0 if item.origin == "built-in" else 2 if item.origin.startswith("ORACLE_") else 1
            (self._by_path if item.is_path else self._by_name)[item.key] = (rank * 2 + item.is_path, item.type)

    @classmethod
    def from_folder_types(cls, folder_types: dict[str, str]) -> "Layout":
        return cls(folders=tuple(FolderKey(k, v, "built-in") for k, v in folder_types.items()))

    @property
    def folder_types(self) -> dict[str, str]:
        """Bare folder names -> type (what the learn tool looks for when it picks a learnings folder)."""
        return {name: doc_type for name, (_, doc_type) in self._by_name.items()}

    def type_for(self, rel: str) -> str | None:
        """The type of the note at `rel` by folder (most specific wins), else default_type; None if unmapped.

        The deepest mapped folder on the path decides; two keys for that same folder are settled by where they
        were written (the environment overrides oracle.toml), then a path beats a bare name. Exclusion is
        separate (`excluded_file`): this answers only "which type would it be"."""
        for folder in reversed(ancestors(rel)):
            candidates = [c for c in (self._by_path.get(folder), self._by_name.get(folder.rsplit("/", 1)[-1])) if c]
            if candidates:
                return max(candidates)[1]
        return self.default_type

    def excluded_dir(self, rel: str) -> bool:
        """A folder not to walk: a dot-folder, a default exclude, an exclude glob or a .gitignore'd folder."""
        name = rel.rsplit("/", 1)[-1]
        if name.startswith(".") or name in DEFAULT_EXCLUDED_DIRS:
            return True
        return any(g.matches(rel, True) for g in self.exclude) or _ignored_by(self.gitignore, rel, True)

    def excluded_file(self, rel: str) -> str | None:
        """Why a markdown file is left out by the rules ("exclude", ".gitignore", "include"), or None."""
        if any(part.startswith(".") or part in DEFAULT_EXCLUDED_DIRS for part in rel.split("/")[:-1]):
            return "exclude"
        if _any_match(self.exclude, rel, False):
            return "exclude"
        if self.gitignore and _ignored_by(self.gitignore, rel, False):
            return ".gitignore"
        if self.include and not _any_match(self.include, rel, False):
            return "include"
        return None

    def unmatched(self, folders: set[str]) -> list[str]:
        """Warnings for configured folder keys that name no folder under the root (a typo never matches)."""
        names = {f.rsplit("/", 1)[-1] for f in folders}
        out = []
        for item in self.folders:
            if item.origin == "built-in":
                continue
            hit = item.key in folders if item.is_path else item.key in names
            if not hit:
                what = "path" if item.is_path else "folder name"
                out.append(f"{item.origin}: {what} {item.key!r} ({item.type}) matches no folder under the root;"
                           " keys are folder paths from the root (\"docs/adr\") or \"**/name\" for any depth")
        return out


# -- reading oracle.toml and the environment ---------------------------------------------------------
def _line_of(text: str, key: str, section: str | None) -> int:
    """The 1-based line where `key` is set (inside `[section]` when given); 0 when it cannot be found.

    tomllib keeps no positions, and a message must point at the line to fix."""
    current: str | None = None
    want = re.compile(r"^\s*(?:\"" + re.escape(key) + r"\"|'" + re.escape(key) + r"'|" + re.escape(key) + r")\s*=")
    for n, line in enumerate(text.split("\n"), start=1):
        header = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
        if header:
            current = header.group(1).strip("\"'")
            if section is None and current == key:
                return n
            continue
        if current == section and want.match(line):
            return n
    return 0


def _where(path: Path, text: str, key: str, section: str | None) -> str:
    line = _line_of(text, key, section)
    return f"{path}:{line}" if line else str(path)


def _check_type(value: object, where: str, what: str) -> str:
    if not isinstance(value, str) or value not in DOC_TYPES:
        raise ConfigError(f"{where}: {what} = {value!r} is not a type; use one of {', '.join(DOC_TYPES)}")
    return value


def _folder_key(raw: str, where: str, bare_is_name: bool) -> tuple[str, bool]:
    """(key, is_path). `**/logs` is a folder named logs at any depth; `docs/adr` a path from the root. A bare
    `docs` is a path in oracle.toml (top-level folder docs) and a name at any depth in ORACLE_FOLDER_TYPES
    (as it always was there)."""
    text = raw.strip()
    if text.startswith("**/"):
        key, is_path = text[3:].strip("/"), False
        if "/" in key or "*" in key:
            raise ConfigError(f"{where}: folder key {raw!r}: `**/` takes one folder name, e.g. \"**/notes\"")
    else:
        key = text[2:] if text.startswith("./") else text
        key = key.strip("/")
        is_path = "/" in key or not bare_is_name or text.startswith("./")
    if not key or key == "." or "*" in key or any(part in ("", ".", "..") for part in key.split("/")):
        raise ConfigError(
            f"{where}: folder key {raw!r} is not a folder under the root (no globs here); files directly in the"
            " root, and in any unmapped folder, take `default_type` in [index]"
        )
    return key, is_path


def _globs(value: object, where: str, what: str) -> tuple[Glob, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {what} must be a list of glob strings, e.g. [\"drafts/\", \"**/*.tmp.md\"]")
    return tuple(g for g in (compile_glob(v) for v in value) if g is not None)


def read_gitignore(root: Path) -> tuple[Glob, ...]:
    try:
        text = (root / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    return tuple(g for g in (compile_glob(line) for line in text.split("\n")) if g is not None)


def parse_env_folder_types(spec: str) -> list[tuple[str, bool, str]]:
    """ORACLE_FOLDER_TYPES, e.g. "logs=retro,docs/adr=learning", as (key, is_path, type)."""
    pairs = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        folder, sep, doc_type = part.partition("=")
        folder, doc_type = folder.strip(), doc_type.strip()
        if not sep or not folder or doc_type not in DOC_TYPES:
            raise ConfigError(
                f"ORACLE_FOLDER_TYPES entry {part!r} is not FOLDER=TYPE with TYPE one of {', '.join(DOC_TYPES)}"
            )
        pairs.append((*_folder_key(folder, "ORACLE_FOLDER_TYPES", bare_is_name=True), doc_type))
    return pairs


def load_layout(root: Path, env: dict[str, str] | os._Environ[str] | None = None) -> Layout:
    """The layout for `root`: built-in names, then `root/oracle.toml`, then the environment."""
    env = os.environ if env is None else env
    config = _read_config(root / CONFIG_NAME)
    index = _index_table(config)
    embedding = _embedding_table(config)
    folders = [*(FolderKey(k, v, "built-in") for k, v in BUILTIN_FOLDER_TYPES.items()), *_types_table(config)]
    database_url = _database_table(config)
    sampling = _search_table(config)
    rerank = config.policy("rerank", RerankPolicy.parse, RerankPolicy())
    freshness = config.policy("freshness", FreshnessPolicy.parse, FreshnessPolicy())
    frontmatter = config.policy("frontmatter", lambda value, where: FrontmatterSchema.parse(value, where, DOC_TYPES),
                                FrontmatterSchema())
    folders += [FolderKey(key, doc_type, "ORACLE_FOLDER_TYPES", is_path)
                for key, is_path, doc_type in parse_env_folder_types(env.get("ORACLE_FOLDER_TYPES", ""))]
    default_type, default_origin = _default_type(env, index.default_type, index.default_origin)
    return Layout(
        folders=tuple(folders),
        default_type=default_type,
        default_origin=default_origin,
        include=index.include,
        exclude=index.exclude,
        gitignore=read_gitignore(root) if index.gitignore else (),
        source=config.path if config.found else None,
        embedding_model=embedding.get("model"),
        query_prefix=embedding.get("query_prefix"),
        passage_prefix=embedding.get("passage_prefix"),
        freshness=freshness,
        rerank=rerank,
        frontmatter=frontmatter,
        database_url=database_url,
        sampling=sampling,
    )


@dataclass(frozen=True)
class _ConfigFile:
    """oracle.toml as read (no tables when the root has none), with its text to name the line of a mistake."""

    path: Path
    found: bool = False
    text: str = ""
    data: dict = field(default_factory=dict)

    def where(self, key: str, section: str | None = None) -> str:
        return _where(self.path, self.text, key, section)

    def table(self, name: str) -> dict:
        value = self.data.get(name, {})
        if not isinstance(value, dict):
            raise ConfigError(f"{self.where(name)}: `{name}` must be a table ([{name}])")
        return value

    def policy(self, name: str, parse: Callable[[object, str], T], default: T) -> T:
        """A table that parses itself (`parse` raises ValueError naming the line), or `default` without it."""
        if name not in self.data:
            return default
        try:
            return parse(self.data[name], self.where(name))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def _read_config(path: Path) -> _ConfigFile:
    """`root/oracle.toml`, parsed, its top-level keys checked."""
    # a repository could point it at any file of the person indexing; `oracle init` refuses it too
    if path.is_symlink():
        raise ConfigError(f"{path} is a symlink; oracle.toml must be a regular file in the root (replace the link with"
                          " a copy)")
    if not path.is_file():
        return _ConfigFile(path)
    import tomllib  # only when there is a file to read: the CLI's fast path stays light

    try:
        text = path.read_text(encoding="utf-8")
        config = _ConfigFile(path, True, text, tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    for key in config.data:
        if key not in _TOP_KEYS:
            raise ConfigError(f"{config.where(key)}: unknown section or key {key!r}; "
                              f"{CONFIG_NAME} knows [index] ({', '.join(sorted(_INDEX_KEYS))}), [types],"
                              f" [embedding] ({', '.join(sorted(_EMBEDDING_KEYS))}), [freshness], [frontmatter],"
                              " [database] (url), [rerank] (model, top, weight) and [search] (sampling)")
    return config


def _search_table(config: _ConfigFile) -> bool:
    """[search] sampling = true|false: whether a search without variants asks the MCP client's model for some
    (server/mcp/sampling.py); off unless turned on, since it spends the user's model tokens."""
    search = config.table("search")
    for key, value in search.items():
        where = config.where(key, "search")
        if key != "sampling":
            raise ConfigError(f"{where}: unknown key {key!r} in [search]; known keys: sampling")
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: sampling must be true or false")
    return bool(search.get("sampling", False))


class _Index(NamedTuple):
    default_type: str | None = None
    default_origin: str = ""
    include: tuple[Glob, ...] = ()
    exclude: tuple[Glob, ...] = ()
    gitignore: bool = True  # the root's .gitignore applies


def _index_table(config: _ConfigFile) -> _Index:
    """[index]: default_type, include, exclude, gitignore."""
    index = _Index()
    for key, value in config.table("index").items():
        where = config.where(key, "index")
        if key not in _INDEX_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} in [index]; known keys: {', '.join(sorted(_INDEX_KEYS))}")
        if key == "default_type":
            if value in ("", "none"):
                continue
            index = index._replace(default_type=_check_type(value, where, "default_type"), default_origin=where)
        elif key == "include":
            index = index._replace(include=_globs(value, where, "include"))
        elif key == "exclude":
            index = index._replace(exclude=_globs(value, where, "exclude"))
        elif key == "gitignore":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: gitignore must be true or false")
            index = index._replace(gitignore=value)
    return index


def _embedding_table(config: _ConfigFile) -> dict[str, str]:
    """[embedding]: model, query_prefix, passage_prefix, the ones set."""
    out: dict[str, str] = {}
    for key, value in config.table("embedding").items():
        where = config.where(key, "embedding")
        if key not in _EMBEDDING_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} in [embedding]; known keys:"
                              f" {', '.join(sorted(_EMBEDDING_KEYS))}")
        if not isinstance(value, str) or (key == "model" and not value.strip()):
            raise ConfigError(f"{where}: {key} must be a string" + (
                " (minilm, or a folder holding model.onnx and tokenizer.json)" if key == "model" else ""))
        if key == "model":
            from oracle_indexer.models.embed import unknown_model  # the model code loads only for a model key

            mistake = unknown_model(value, config.path.parent)
            if mistake:
                raise ConfigError(f"{where}: {mistake}")
        out[key] = value.strip() if key == "model" else value
    return out


def _types_table(config: _ConfigFile) -> list[FolderKey]:
    """[types]: `"folder/path" = "type"` lines."""
    folders = []
    for raw, value in config.table("types").items():
        where = config.where(raw, "types")
        if isinstance(value, dict):
            raise ConfigError(f"{where}: [types] holds `\"folder/path\" = \"type\"` lines; quote keys"
                              f" with dots or slashes (\"{raw}.x\" made a table)")
        key, is_path = _folder_key(raw, where, bare_is_name=False)
        folders.append(FolderKey(key, _check_type(value, where, f"[types] {raw!r}"), where, is_path))
    return folders


def _database_table(config: _ConfigFile) -> str | None:
    """[database] url."""
    url = None
    for key, value in config.table("database").items():
        where = config.where(key, "database")
        if key != "url":
            raise ConfigError(f"{where}: unknown key {key!r} in [database]; known keys: url")
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: url must be a string: postgresql://USER:PASSWORD@HOST:5432/DATABASE")
        url = value.strip()
    return url


def _default_type(env: dict[str, str] | os._Environ[str], default_type: str | None,
                  origin: str) -> tuple[str | None, str]:
    """ORACLE_DEFAULT_TYPE over oracle.toml's default_type: (type or None, where it was set)."""
    env_default = env.get("ORACLE_DEFAULT_TYPE")
    if env_default is None:
        return default_type, origin
    if env_default.strip() in ("", "none"):
        return None, ""
    return _check_type(env_default.strip(), "ORACLE_DEFAULT_TYPE", "ORACLE_DEFAULT_TYPE"), "ORACLE_DEFAULT_TYPE"
