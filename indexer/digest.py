"""SHA-256, HMAC-SHA256 and random tokens without loading OpenSSL.

Why: `oracle serve` over stdio is a small relay, one process per agent session (server/engine/relay.py), and
everything it imports is paid once per session. `hashlib`, `hmac` and `secrets` load OpenSSL's libcrypto: 3.4 MB
of resident memory in every relay and ~7 ms of its start. CPython's own SHA-256 (`_sha256` in 3.11, `_sha2` from
3.12) gives the same digests; HMAC is RFC 2104 over it, checked against the standard library's `hmac` in
tests/unit/test_digest.py; the comparison is the constant-time one `hmac.compare_digest` itself falls back on; tokens
come from `os.urandom`, as `secrets` takes them. Only the modules on the relay's path use this one.
"""

from __future__ import annotations

import os
from _operator import _compare_digest as compare_digest  # constant time, as hmac.compare_digest
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the type checker knows hashlib's; the C modules below have the same interface
    from hashlib import sha256
else:
    try:
        from _sha2 import sha256  # CPython 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # CPython 3.11
        except ImportError:  # a Python built without its own SHA-256 uses OpenSSL's
            from hashlib import sha256

BLOCK = 64  # SHA-256's block size in bytes (RFC 2104's B)
_INNER = bytes(x ^ 0x36 for x in range(256))
_OUTER = bytes(x ^ 0x5C for x in range(256))


def hmac_sha256(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 of `message` under `key`, as hex (the same as `hmac.new(key, message, "sha256").hexdigest()`)."""
    if len(key) > BLOCK:
        key = sha256(key).digest()
    key = key.ljust(BLOCK, b"\0")
    inner = sha256(key.translate(_INNER) + message).digest()
    return sha256(key.translate(_OUTER) + inner).hexdigest()


def token_bytes(nbytes: int) -> bytes:
    return os.urandom(nbytes)


def token_hex(nbytes: int) -> str:
    return os.urandom(nbytes).hex()


__all__ = ["compare_digest", "hmac_sha256", "sha256", "token_bytes", "token_hex"]
