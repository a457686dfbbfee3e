"""indexer/digest.py gives what the standard library gives: the same SHA-256, the same HMAC-SHA256 for keys
shorter than, equal to and longer than the block, tokens of the asked length; and importing it loads no OpenSSL."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from oracle_indexer import digest


@given(st.binary(max_size=300), st.binary(max_size=2000))
def test_hmac_is_the_standard_librarys(key: bytes, message: bytes) -> None:
    assert digest.hmac_sha256(key, message) == hmac.new(key, message, hashlib.sha256).hexdigest()


def test_hmac_at_the_block_edges() -> None:
    for size in (0, 1, 63, 64, 65, 128, 1000):
        key = bytes(range(256)) * 4
        assert digest.hmac_sha256(key[:size], b"m") == hmac.new(key[:size], b"m", hashlib.sha256).hexdigest()
    # RFC 4231 test case 2
    assert digest.hmac_sha256(b"Jefe", b"what do ya want for nothing?") == (
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")


@given(st.binary(max_size=5000))
def test_sha256_is_the_standard_librarys(data: bytes) -> None:
    assert digest.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()


def test_tokens_and_comparison() -> None:
    assert len(digest.token_bytes(32)) == 32 and len(digest.token_hex(16)) == 32
    assert digest.token_hex(16) != digest.token_hex(16)
    assert digest.compare_digest("abc", "abc") and not digest.compare_digest("abc", "abd")


def test_the_relay_path_loads_no_openssl() -> None:
    """What `oracle serve` over stdio imports before it relays (server/engine/relay.py) keeps libcrypto out."""
    code = ("import sys; import oracle_server.cli.commands, oracle_server.engine.relay; "
            "print(sorted(m for m in sys.modules if m in ('_hashlib', 'hashlib', 'hmac', 'secrets', 'ssl')))")
    project = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, cwd=project)
    assert done.stdout.strip() == "[]", done.stdout
