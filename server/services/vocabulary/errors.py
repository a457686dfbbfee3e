"""One error model for every adapter. A service failure is an `OracleError` of one kind; each adapter maps a
kind once (MCP: a tool error; HTTP: a status; CLI: an exit code). Before, each adapter listed the service
exceptions it knew, so the same full disk was a tool error over MCP, a 400 over HTTP and exit 2 in the CLI,
and an exception one adapter forgot was a 500 there.

Standard library only: the CLI's fast path imports this to turn a server's HTTP status into an exit code.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal

Kind = Literal["invalid", "forbidden", "not_found", "conflict", "unavailable", "storage_full", "too_many"]

# forbidden: a read-only token (team mode, server/services/capabilities/team.py) asked for a write
HTTP_STATUS: dict[str, int] = {"invalid": 400, "forbidden": 403, "not_found": 404, "conflict": 409,
                               "unavailable": 503, "storage_full": 507, "too_many": 429}
VALIDATION_STATUS = 422  # malformed arguments (the request models said no), as FastAPI has always answered
EXIT_CODE: dict[str, int] = {"invalid": 2, "not_found": 3, "conflict": 4, "unavailable": 5, "storage_full": 6,
                             "forbidden": 7, "too_many": 8}
# errno of a failed write -> kind: out of space is the caller's to fix by freeing space, not a bad request.
WRITE_ERRNO_KIND: dict[int, Kind] = {errno.ENOSPC: "storage_full", errno.EDQUOT: "storage_full",
                                     errno.EFBIG: "storage_full", errno.EROFS: "unavailable"}


class OracleError(Exception):
    """A failure a caller can act on: `kind` says which, the message says what to do."""

    def __init__(self, kind: Kind, message: str) -> None:
        super().__init__(message)
        self.kind: Kind = kind
        self.message = message

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.kind]

    @property
    def exit_code(self) -> int:
        return EXIT_CODE[self.kind]


class ServiceError(Exception):
    """A service's own exception, which says what kind of failure it is: each subclass sets `error_kind`.

    The kind lives on the class, so this module imports no service: before, `classify` imported eight services'
    exception classes and tied learn, edit, freshness and the search pipeline into one import circle. The
    indexer's exceptions cannot subclass this (the indexer knows nothing of the server); one that a caller may
    meet sets the same class attribute (`SyncRefused.error_kind = "invalid"`)."""

    error_kind: ClassVar[Kind] = "invalid"


def kind_of_status(status: int) -> Kind:
    """The kind an HTTP error status stands for (the CLI's remote path gets only the status)."""
    for kind, code in HTTP_STATUS.items():
        if code == status:
            return kind  # type: ignore[return-value]
    return "unavailable" if status >= 500 else "invalid"


def _write_kind(exc: BaseException) -> Kind | None:
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno in WRITE_ERRNO_KIND:
            return WRITE_ERRNO_KIND[cause.errno]
        cause = cause.__cause__
    return None


def storage_kind(exc: BaseException) -> Kind | None:
    """storage_full (or unavailable, for a read-only disk) when `exc` or what caused it is a write the disk
    refused: an OSError's errno, or SQLite's own "database or disk is full" (SQLITE_FULL), which a log write or
    a verdict meets on a full data dir. Before, those were 500s."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in WRITE_ERRNO_KIND:
            return WRITE_ERRNO_KIND[seen.errno]
        code = getattr(seen, "sqlite_errorcode", None)
        if code == SQLITE_FULL or (code is None and "database or disk is full" in str(seen)):
            return "storage_full"
        if code == SQLITE_READONLY:
            return "unavailable"
        seen = seen.__cause__ or seen.__context__
    return None


SQLITE_FULL, SQLITE_READONLY = 13, 8  # SQLite result codes (its driver is not imported here)


def classify(exc: BaseException) -> OracleError | None:
    """The OracleError a service exception stands for, or None for a bug (which stays a 500 / crash).

    Services keep their own exception classes (each says what went wrong in its own words) and say what kind
    each is (`error_kind`, a class attribute: `ServiceError`); an invalid request that a refused write caused
    (a learning on a full disk) is the disk's kind. Standard library only: the CLI's fast path imports this."""
    if isinstance(exc, OracleError):
        return exc
    kind = getattr(type(exc), "error_kind", None)
    if kind in HTTP_STATUS:
        if kind == "invalid":
            kind = _write_kind(exc) or kind
        return OracleError(kind, str(exc))
    message = str(exc)
    full = storage_kind(exc)
    if full == "storage_full":
        return OracleError(full, f"the data dir's disk is full ({message}): nothing was recorded; free some space"
                                 " and try again")
    if full == "unavailable":
        return OracleError(full, f"the data dir cannot be written ({message}): check its disk and permissions")
    return None


# -- the one validation-error formatter ------------------------------------------------------------------
def problem(err: Mapping[str, Any], located: bool = False, accepted: Sequence[str] | None = None) -> str:
    """One pydantic/FastAPI validation error as `field: message`.

    located: the first location part says where the value came from (FastAPI's "query" or "body"), not a
    field. accepted: the argument names the tool takes, listed when an unknown name is refused (None: not
    known here, say only that the name is not permitted)."""
    if err.get("type") == "json_invalid":
        reason = (err.get("ctx") or {}).get("error") or err.get("msg")
        return f"body: not valid JSON ({reason}); send a JSON object"
    loc = [str(p) for p in err.get("loc", ())]
    parts = loc[1:] if located else loc
    if parts:
        field = ".".join(parts)
    elif located and loc:
        field = {"query": "parameters"}.get(loc[0], loc[0])  # a rule over several query parameters
    else:
        field = "input"
    if not field.strip():  # `?=x`: saying "query: Extra inputs ..." would blame the query parameter
        field = f"{field!r} (a parameter with a blank name)"
    if err.get("type") == "extra_forbidden" and accepted is not None and len(parts) == 1:
        return f"{field}: {unknown_argument(accepted)}"
    return f"{field}: {err['msg']}"


def unknown_argument(accepted: Sequence[str]) -> str:
    if not accepted:
        return "unknown argument; this tool takes no arguments"
    return f"unknown argument; accepted: {', '.join(accepted)}"


def problems(errors: Iterable[Mapping[str, Any]], located: bool = False,
             accepted: Sequence[str] | None = None) -> str:
    """Every error, `; `-separated, in the order pydantic reported them."""
    return "; ".join(problem(err, located, accepted) for err in errors)
