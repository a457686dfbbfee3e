"""Settings read from the environment, in one place so every entry point agrees."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

BUNDLED_ROOT = Path(__file__).resolve().parent.parent / "knowledge"
DEFAULT_PORT = 37778
DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
DEFAULT_LOG_RETENTION_DAYS = 365  # usage logs older than this are deleted (0: kept for ever)
DEFAULT_LOG_MAX_ROWS = 1_000_000  # and each usage log keeps at most this many rows (0: no limit)
DEFAULT_MAX_CHUNKS_PER_FILE = 2000  # more is a dump, not a note; and it would hold the indexer for minutes

# Folder name -> document type. Both the Oracle layout and Oracle v2's ψ/memory layout.
DEFAULT_FOLDER_TYPES: dict[str, str] = {
    "principles": "principle",
    "resonance": "principle",
    "learnings": "learning",
    "retrospectives": "retro",
}
DOC_TYPES = ("principle", "learning", "retro")


EMBEDDED_COLLECTION = "oracle_chunks"
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$")


class ConfigError(ValueError):
    """A setting is present but unusable; the message says which and how to fix it."""


def _default_data_dir(root: Path) -> Path:
    """One index per knowledge root, so pointing ORACLE_ROOT elsewhere never mixes two bases."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "oracle"
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:10]
    return base / f"{root.name or 'root'}-{digest}"


def parse_folder_types(spec: str) -> dict[str, str]:
    """Parse ORACLE_FOLDER_TYPES, e.g. "logs=retro,archive=learning", into a folder->type map."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        folder, sep, doc_type = part.partition("=")
        folder, doc_type = folder.strip(), doc_type.strip()
        if not sep or not folder or doc_type not in DOC_TYPES:
            raise ConfigError(
                f"ORACLE_FOLDER_TYPES entry {part!r} is not FOLDER=TYPE with TYPE one of {', '.join(DOC_TYPES)}"
            )
        mapping[folder] = doc_type
    return mapping


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
    folder_types: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_FOLDER_TYPES))
    chroma_collection: str | None = None
    max_chunks_per_file: int = DEFAULT_MAX_CHUNKS_PER_FILE
    log_retention_days: int = DEFAULT_LOG_RETENTION_DAYS
    log_max_rows: int = DEFAULT_LOG_MAX_ROWS

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
    def db_path(self) -> Path:
        return self.data_dir / "oracle.db"

    @property
    def chroma_path(self) -> Path:
        return self.data_dir / "chroma"

    @classmethod
    def from_env(cls, **overrides: object) -> "Settings":
        env = os.environ
        root = Path(str(overrides.pop("root", None) or env.get("ORACLE_ROOT") or BUNDLED_ROOT)).expanduser().resolve()
        data = overrides.pop("data_dir", None) or env.get("ORACLE_DATA_DIR")
        data_dir = Path(str(data)).expanduser().resolve() if data else _default_data_dir(root)
        port_text = str(overrides.pop("port", None) or env.get("ORACLE_PORT") or DEFAULT_PORT)
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ConfigError(f"ORACLE_PORT={port_text!r} is not a TCP port number (1-65535)")
        folder_types = dict(DEFAULT_FOLDER_TYPES)
        folder_types.update(parse_folder_types(env.get("ORACLE_FOLDER_TYPES", "")))
        max_bytes = int(env.get("ORACLE_MAX_FILE_BYTES") or DEFAULT_MAX_FILE_BYTES)
        max_chunks_text = str(overrides.pop("max_chunks_per_file", None) or env.get("ORACLE_MAX_CHUNKS_PER_FILE")
                              or DEFAULT_MAX_CHUNKS_PER_FILE)
        if not max_chunks_text.isdigit() or int(max_chunks_text) < 1:
            raise ConfigError(f"ORACLE_MAX_CHUNKS_PER_FILE={max_chunks_text!r} is not a positive whole number")
        collection = str(overrides.pop("chroma_collection", None) or env.get("ORACLE_CHROMA_COLLECTION") or "") or None
        if collection is not None and not _COLLECTION_NAME.match(collection):
            raise ConfigError(
                f"ORACLE_CHROMA_COLLECTION={collection!r} is not a Chroma collection name: 3-63 letters, digits,"
                " '.', '_' or '-', starting and ending with a letter or digit"
            )
        retention = {name: _whole(env, var, default) for name, var, default in (
            ("log_retention_days", "ORACLE_LOG_RETENTION_DAYS", DEFAULT_LOG_RETENTION_DAYS),
            ("log_max_rows", "ORACLE_LOG_MAX_ROWS", DEFAULT_LOG_MAX_ROWS)) if name not in overrides}
        return cls(
            root=root,
            data_dir=data_dir,
            chroma_url=str(overrides.pop("chroma_url", None) or env.get("ORACLE_CHROMA_URL") or "") or None,
            port=int(port_text),
            max_file_bytes=max_bytes,
            folder_types=folder_types,
            chroma_collection=collection,
            max_chunks_per_file=int(max_chunks_text),
            **retention,  # type: ignore[arg-type]
            **overrides,  # type: ignore[arg-type]
        )
