"""Settings read from the environment (and the knowledge root's oracle.toml), in one place so every entry
point agrees."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from oracle_indexer import locate
from oracle_indexer.database_choice import DatabaseChoice, choose, where
from oracle_indexer.rootconfig import BUILTIN_FOLDER_TYPES, DOC_TYPES, ConfigError, Layout, load_layout

# The starter knowledge of a source checkout. An installed wheel (pipx) has no checkout: it ships the same
# files as the `oracle_knowledge` package and copies them to a user folder on first use (`bundled_root`).
BUNDLED_ROOT = Path(__file__).resolve().parent.parent / "knowledge"  # == locate.CHECKOUT_KNOWLEDGE
STARTER_PACKAGE = "oracle_knowledge"
DEFAULT_PORT = 37778
DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
DEFAULT_LOG_RETENTION_DAYS = 365  # usage logs older than this are deleted (0: kept for ever)
DEFAULT_LOG_MAX_ROWS = 1_000_000  # and each usage log keeps at most this many rows (0: no limit)
# Embedded sections up to which a SQLite base ranks its vectors exactly in NumPy, not by Chroma's HNSW
# (indexer/store/sqlite/exact.py); ORACLE_EXACT_LIMIT, 0: always Chroma
DEFAULT_EXACT_LIMIT = 50_000
DEFAULT_MAX_CHUNKS_PER_FILE = 2000  # more is a dump, not a note; and it would hold the indexer for minutes

DEFAULT_FOLDER_TYPES: dict[str, str] = dict(BUILTIN_FOLDER_TYPES)

__all__ = ["BUNDLED_ROOT", "ConfigError", "ConfigReload", "DOC_TYPES", "DEFAULT_FOLDER_TYPES", "Settings",
           "bundled_root"]

EMBEDDED_COLLECTION = "oracle_chunks"
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$")


def _data_home() -> Path:
    return Path(locate.data_home())


def _default_data_dir(root: Path) -> Path:
    """One index per knowledge root, so pointing ORACLE_ROOT elsewhere never mixes two bases."""
    return Path(locate.default_data_dir(str(root)))


def _in_checkout() -> bool:
    return locate.in_checkout()


def bundled_root() -> Path:
    """The default knowledge root: the checkout's knowledge/, or (installed from a wheel) a user copy of the
    starter knowledge, made on first use and never overwritten, so the notes you add there are yours."""
    if _in_checkout():
        return BUNDLED_ROOT
    target = _data_home() / "knowledge"
    if target.is_dir():
        return target
    import shutil
    import tempfile
    from importlib.resources import files

    try:
        source = files(STARTER_PACKAGE)
    except ModuleNotFoundError:
        raise ConfigError(
            "no knowledge root: set ORACLE_ROOT (or --root) to a folder of markdown; the starter knowledge"
            f" package {STARTER_PACKAGE!r} is not installed"
        ) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".knowledge-", dir=target.parent))
    _copy_resources(source, staging)
    try:
        staging.rename(target)  # atomic: a second process racing here finds a complete copy or makes none
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    else:
        print(f"oracle: starter knowledge copied to {target} (first run); set ORACLE_ROOT to use your own",
              file=sys.stderr)
    return target


def _copy_resources(node, dest: Path) -> None:  # noqa: ANN001 - an importlib.resources Traversable
    for child in node.iterdir():
        if child.name.startswith(("__", ".")):
            continue
        if child.is_dir():
            (dest / child.name).mkdir(exist_ok=True)
            _copy_resources(child, dest / child.name)
        elif child.name.endswith((".md", ".markdown", ".toml")):
            (dest / child.name).write_bytes(child.read_bytes())


def _whole(env: os._Environ | dict, name: str, default: int) -> int:
    """A whole number >= 0 from the environment (0 means: no limit)."""
    text = (env.get(name) or str(default)).strip()
    if not text.isdigit():
        raise ConfigError(f"{name}={text!r} is not a whole number (0 for no limit)")
    return int(text)


@dataclass(frozen=True)
class Settings:
    root: Path
    data_dir: Path
    chroma_url: str | None = None
    port: int = DEFAULT_PORT
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    layout: Layout = field(default_factory=Layout)
    chroma_collection: str | None = None
    max_chunks_per_file: int = DEFAULT_MAX_CHUNKS_PER_FILE
    log_retention_days: int = DEFAULT_LOG_RETENTION_DAYS
    log_max_rows: int = DEFAULT_LOG_MAX_ROWS
    multilingual: str = "auto"  # ORACLE_MULTILINGUAL: auto | on | off (indexer/models/multilingual.py)
    # ORACLE_EMBEDDING_MODEL, else oracle.toml's [embedding] model: minilm | a model folder (None: the default)
    embedding_model: str | None = None
    # ORACLE_DATABASE_URL (or the command line), else oracle.toml's [database] url once the user allowed it
    # (indexer/database_choice.py): the whole store in PostgreSQL (indexer/store/pg/)
    database_url: str | None = None
    database_origin: str | None = None  # where database_url came from
    database_notice: str | None = None  # oracle.toml names a database the user has not allowed: what to do
    # ORACLE_RERANK_MODEL, else oracle.toml's [rerank] model: a cross-encoder folder, or `off`
    # (indexer/models/rerank.py)
    rerank_model: str | None = None
    exact_limit: int = DEFAULT_EXACT_LIMIT  # ORACLE_EXACT_LIMIT (indexer/store/sqlite/exact.py)
    # ORACLE_SAMPLING=1|0, else oracle.toml's [search] sampling: ask an MCP client's model for query variants
    sampling: bool = False
    # ORACLE_AUTHOR: who this machine's working copy writes as (revisions, conflict copies: indexer/worker/workcopy.py);
    # None: the login name. A named token's name wins for the writes it makes.
    author: str | None = None

    @property
    def embedding(self):
        """The embedding model's spec (indexer/models/embed.py): the configured model with oracle.toml's prefixes."""
        from oracle_indexer.models.embed import model_spec

        return model_spec(self.embedding_model or self.layout.embedding_model, self.root,
                          self.layout.query_prefix, self.layout.passage_prefix)

    @property
    def rerank(self):
        """The reranker's spec (indexer/models/rerank.py), or None: none configured, or ORACLE_RERANK_MODEL=off."""
        from oracle_indexer.models.rerank import rerank_spec

        return rerank_spec(self.rerank_model, self.root, self.layout.rerank)

    @property
    def folder_types(self) -> dict[str, str]:
        """Folder names mapped at any depth (built-in plus ORACLE_FOLDER_TYPES names)."""
        return self.layout.folder_types

    @property
    def collection(self) -> str:
        """The Chroma collection. Embedded, each data dir has its own store; on a shared Chroma server each
        knowledge root gets its own collection by default, so two bases never delete each other's vectors."""
        if self.chroma_collection:
            return self.chroma_collection
        if self.chroma_url is None:
            return EMBEDDED_COLLECTION
        return "oracle_" + hashlib.sha256(str(self.root).encode()).hexdigest()[:16]

    @property
    def database_line(self) -> str:
        """Where the notes are sent, for a start-up line, stats and the MCP instructions (never a password)."""
        if self.database_url:
            return f"team database {where(self.database_url)} (from {self.database_origin})"
        return "embedded store (this machine only)"

    @property
    def db_path(self) -> Path:
        return self.data_dir / "oracle.db"

    @property
    def chroma_path(self) -> Path:
        return self.data_dir / "chroma"

    @classmethod
    def from_env(cls, **overrides: Any) -> "Settings":  # any field of Settings, by name
        """The settings from keyword overrides (the command line's), else the environment, else oracle.toml and
        the defaults. Each setting is read and checked by a function of its own below, in this order, so the first
        mistake is the one reported; the overrides a helper does not take are passed on as fields as they are."""
        env = os.environ
        root = _env_root(overrides, env)
        data = overrides.pop("data_dir", None) or env.get("ORACLE_DATA_DIR")
        data_dir = Path(str(data)).expanduser().resolve() if data else _default_data_dir(root)
        port = _env_port(overrides, env)
        layout = load_layout(root, env)
        max_bytes = int(env.get("ORACLE_MAX_FILE_BYTES") or DEFAULT_MAX_FILE_BYTES)
        max_chunks = _env_max_chunks(overrides, env)
        collection = _env_collection(overrides, env)
        multilingual = _env_multilingual(overrides, env)
        embedding_model = _env_embedding_model(overrides, env)
        rerank_model = _env_rerank_model(overrides, env)
        _env_limits(overrides, env)
        _env_sampling(overrides, env, layout)
        choice = _env_database(overrides, env, layout, root, data_dir)
        return cls(
            root=root,
            database_url=choice.url,
            database_origin=choice.origin,
            database_notice=choice.notice,
            data_dir=data_dir,
            author=str(overrides.pop("author", None) or env.get("ORACLE_AUTHOR") or "").strip() or None,
            chroma_url=str(overrides.pop("chroma_url", None) or env.get("ORACLE_CHROMA_URL") or "") or None,
            port=port,
            max_file_bytes=max_bytes,
            layout=layout,
            chroma_collection=collection,
            max_chunks_per_file=max_chunks,
            multilingual=multilingual,
            embedding_model=embedding_model,
            rerank_model=rerank_model,
            **overrides,
        )


# -- Settings.from_env, one setting each: `overrides` are the caller's keyword arguments (a helper pops the ones it
# reads, so they are not passed twice), `env` the environment. One function per setting keeps each check next to
# its message and from_env a list that reads in the order the settings are checked.
Env = dict[str, str] | os._Environ[str]


def _env_root(overrides: dict[str, Any], env: Env) -> Path:
    """--root, else ORACLE_ROOT, else the bundled knowledge; a given root must be a folder. A mistyped root used to
    index nothing, report "0 notes" and "drift: none", and leave a data dir behind; `oracle serve` died with an
    error that named no path."""
    source = "--root" if overrides.get("root") else "ORACLE_ROOT"
    given = overrides.pop("root", None) or env.get("ORACLE_ROOT")
    root = Path(str(given)).expanduser().resolve() if given else bundled_root()
    if given and not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise ConfigError(f"the knowledge root {root} ({source}={given}) {what}: check the path"
                          + ("" if root.exists() else ", or create the folder first"))
    return root


def _env_port(overrides: dict[str, Any], env: Env) -> int:
    """The HTTP port: checked here so that a typo is named at start, not when the socket is bound."""
    port_text = str(overrides.pop("port", None) or env.get("ORACLE_PORT") or DEFAULT_PORT)
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"ORACLE_PORT={port_text!r} is not a TCP port number (1-65535)")
    return int(port_text)


def _env_max_chunks(overrides: dict[str, Any], env: Env) -> int:
    """The cap on one file's sections: a positive whole number, since 0 would index nothing of any file."""
    max_chunks_text = str(overrides.pop("max_chunks_per_file", None) or env.get("ORACLE_MAX_CHUNKS_PER_FILE")
                          or DEFAULT_MAX_CHUNKS_PER_FILE)
    if not max_chunks_text.isdigit() or int(max_chunks_text) < 1:
        raise ConfigError(f"ORACLE_MAX_CHUNKS_PER_FILE={max_chunks_text!r} is not a positive whole number")
    return int(max_chunks_text)


def _env_collection(overrides: dict[str, Any], env: Env) -> str | None:
    """A Chroma collection name, checked against Chroma's own rule so that the mistake is ours to name."""
    collection = str(overrides.pop("chroma_collection", None) or env.get("ORACLE_CHROMA_COLLECTION") or "") or None
    if collection is not None and not _COLLECTION_NAME.match(collection):
        raise ConfigError(
            f"ORACLE_CHROMA_COLLECTION={collection!r} is not a Chroma collection name: 3-63 letters, digits,"
            " '.', '_' or '-', starting and ending with a letter or digit"
        )
    return collection


def _env_multilingual(overrides: dict[str, Any], env: Env) -> str:
    """auto, on or off (indexer/models/multilingual.py): anything else is refused rather than read as one."""
    multilingual = str(overrides.pop("multilingual", None) or env.get("ORACLE_MULTILINGUAL") or "auto").lower()
    if multilingual not in ("auto", "on", "off"):
        raise ConfigError(f"ORACLE_MULTILINGUAL={multilingual!r}: use auto (the default), on or off")
    return multilingual


def _env_embedding_model(overrides: dict[str, Any], env: Env) -> str | None:
    """`minilm`, None (oracle.toml's or the default), or a model folder resolved from the working dir now, since
    the server may run elsewhere; a folder that holds no model is refused here, before anything is indexed."""
    embedding_model = str(overrides.pop("embedding_model", None) or env.get("ORACLE_EMBEDDING_MODEL") or ""
                          ).strip() or None
    if embedding_model and embedding_model != "minilm":  # a folder: from the working dir
        from oracle_indexer.models.embed import unknown_model

        mistake = unknown_model(embedding_model, Path.cwd())
        if mistake:
            raise ConfigError(f"ORACLE_EMBEDDING_MODEL: {mistake}")
        embedding_model = str(Path(embedding_model).expanduser().resolve())
    return embedding_model


def _env_rerank_model(overrides: dict[str, Any], env: Env) -> str | None:
    """`off`, None, or a cross-encoder folder resolved from the working dir (as the embedding model's)."""
    rerank_model = str(overrides.pop("rerank_model", None) or env.get("ORACLE_RERANK_MODEL") or "").strip() or None
    if rerank_model and rerank_model != "off":  # a folder: from the working dir
        rerank_model = str(Path(rerank_model).expanduser().resolve())
    return rerank_model


def _env_limits(overrides: dict[str, Any], env: Env) -> None:
    """The whole-number limits an override has not set, put into `overrides`: they are passed on as fields."""
    if "exact_limit" not in overrides:
        exact_text = (env.get("ORACLE_EXACT_LIMIT") or str(DEFAULT_EXACT_LIMIT)).strip()
        if not exact_text.isdigit():
            raise ConfigError(f"ORACLE_EXACT_LIMIT={exact_text!r} is not a whole number (0: always Chroma's HNSW)")
        overrides["exact_limit"] = int(exact_text)
    for name, var, default in (("log_retention_days", "ORACLE_LOG_RETENTION_DAYS", DEFAULT_LOG_RETENTION_DAYS),
                               ("log_max_rows", "ORACLE_LOG_MAX_ROWS", DEFAULT_LOG_MAX_ROWS)):
        if name not in overrides:
            overrides[name] = _whole(env, var, default)


def _env_sampling(overrides: dict[str, Any], env: Env, layout: Layout) -> None:
    """ORACLE_SAMPLING, else oracle.toml's [search] sampling, into `overrides`; the variable is checked even when
    an override wins, so a mistyped value never goes unnoticed."""
    sampling_text = str(env.get("ORACLE_SAMPLING", "")).strip().lower()
    if sampling_text not in ("", "1", "0", "true", "false", "on", "off"):
        raise ConfigError(f"ORACLE_SAMPLING={sampling_text!r}: use 1 (ask the MCP client's model for query"
                          " variants) or 0")
    if "sampling" not in overrides:
        overrides["sampling"] = (sampling_text in ("1", "true", "on")) if sampling_text else layout.sampling


def _env_database(overrides: dict[str, Any], env: Env, layout: Layout, root: Path,
                  data_dir: Path) -> DatabaseChoice:
    """Which database serves (indexer/database_choice.py decides between the command line, the environment and
    oracle.toml); a URL that is not PostgreSQL's is refused here, without ever showing its password."""
    given = str(overrides.pop("database_url", None) or "").strip()
    origin = "the command line" if given else "ORACLE_DATABASE_URL"
    given = given or str(env.get("ORACLE_DATABASE_URL") or "").strip()
    choice = choose(given or None, origin, layout.database_url, root, data_dir)
    database_url = choice.url
    if database_url and not database_url.startswith(("postgresql://", "postgres://")):
        shown = database_url.split("@")[-1] if "@" in database_url else database_url  # never a password
        raise ConfigError(f"{choice.origin} ({shown!r}) is not a PostgreSQL URL: use"
                          " postgresql://USER:PASSWORD@HOST:5432/DATABASE, or unset it to keep the embedded store")
    return choice


# -- oracle.toml edited while a server runs ----------------------------------------------------------------
# Which of oracle.toml's settings a running server takes up at once (what `discover`, the freshness badges, the
# frontmatter checks and the search read on each call), and which it holds for its whole life (an opened model,
# store or database). Each: (what a message calls it, the Layout fields it is).
LIVE_SETTINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("[types]", ("folders",)),
    ("[index] default_type", ("default_type",)),
    ("[index] include", ("include",)),
    ("[index] exclude", ("exclude",)),
    ("[index] gitignore", ("gitignore",)),
    ("[freshness]", ("freshness",)),
    ("[frontmatter]", ("frontmatter",)),
    ("[search] sampling", ("sampling",)),
)
RESTART_SETTINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("[embedding]", ("embedding_model", "query_prefix", "passage_prefix")),
    ("[rerank]", ("rerank",)),
    ("[database] url", ("database_url",)),
)


@dataclass(frozen=True)
class ConfigReload:
    """What one re-read of oracle.toml did: the settings taken up, those that wait for a restart (compared with
    what this process runs on, so undoing an edit clears them), or why the file could not be read (the previous
    settings stay in force)."""

    applied: tuple[str, ...] = ()
    restart: tuple[str, ...] = ()
    error: str | None = None

    @property
    def message(self) -> str:
        """One line for the log and for stats."""
        if self.error:
            return f"oracle.toml changed but cannot be read, the previous settings stay in force: {self.error}"
        parts = []
        if self.applied:
            parts.append(f"oracle.toml reloaded: {', '.join(self.applied)} applied")
        if self.restart:
            parts.append(f"oracle.toml changed since start: restart to apply {', '.join(self.restart)}")
        return "; ".join(parts) or "oracle.toml re-read: nothing a running server uses changed"


def reload_settings(settings: Settings,
                    env: dict[str, str] | os._Environ[str] | None = None) -> tuple[Settings, ConfigReload]:
    """`settings` with the root's oracle.toml read again: the live settings (LIVE_SETTINGS) replaced, the
    others kept as they are (RESTART_SETTINGS: named in the result while the file differs from them). An
    unreadable file changes nothing. The environment still wins where it set a value (ORACLE_SAMPLING,
    ORACLE_DATABASE_URL, ORACLE_EMBEDDING_MODEL, ORACLE_FOLDER_TYPES, ORACLE_DEFAULT_TYPE)."""
    env = os.environ if env is None else env
    try:
        fresh = load_layout(settings.root, env)
    except ConfigError as exc:
        return settings, ConfigReload(error=str(exc))
    old = settings.layout
    applied = tuple(name for name, fields in LIVE_SETTINGS
                    if any(getattr(old, f) != getattr(fresh, f) for f in fields))
    restart = [name for name, fields in RESTART_SETTINGS if any(getattr(old, f) != getattr(fresh, f) for f in fields)]
    if settings.embedding_model is not None and "[embedding]" in restart \
            and (old.query_prefix, old.passage_prefix) == (fresh.query_prefix, fresh.passage_prefix):
        restart.remove("[embedding]")  # ORACLE_EMBEDDING_MODEL names the model whatever the file says
    if env.get("ORACLE_DATABASE_URL") and "[database] url" in restart:
        restart.remove("[database] url")
    kept = replace(fresh, **{f: getattr(old, f) for _, fields in RESTART_SETTINGS for f in fields})
    sampling = settings.sampling if str(env.get("ORACLE_SAMPLING", "")).strip() else kept.sampling
    return replace(settings, layout=kept, sampling=sampling), ConfigReload(applied=applied, restart=tuple(restart))
