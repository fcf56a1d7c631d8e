"""SCRAM-SHA-256 password verifiers (RFC 5802 / RFC 7677), as PostgreSQL stores them.

Setting a role's password to a verifier (``ALTER ROLE r PASSWORD 'SCRAM-SHA-256$...'``) keeps
the plaintext out of statement text: the server stores the verifier as is.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def scram_sha256_verifier(password: str, iterations: int = 4096, salt: bytes | None = None) -> str:
    """Return ``SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>`` for ``password``.

    The password is used as UTF-8 without SASLprep normalisation, which is what the server
    does too for ASCII passwords (all generated ones are).
    """
    if iterations < 1:
        raise ValueError("iterations must be >= 1")
    if salt is None:
        salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    return f"SCRAM-SHA-256${iterations}:{_b64(salt)}${_b64(stored_key)}:{_b64(server_key)}"
