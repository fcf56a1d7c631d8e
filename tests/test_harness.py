"""The test cluster is what the package expects: a non-superuser owner, SCRAM logins."""

from __future__ import annotations

import base64
import secrets

import psycopg
import pytest
from psycopg import sql

from datatable_roles.scram import scram_sha256_verifier

# The same on every PostgreSQL version: run once in `make test` (tests/conftest.py).
pytestmark = pytest.mark.version_independent


def test_owner_is_not_superuser_and_can_create_roles(cluster):
    with cluster.connect_super() as conn:
        row = conn.execute(
            "SELECT rolsuper, rolcreaterole, rolcanlogin,"
            " pg_has_role(rolname, 'pg_signal_backend', 'member')"
            " FROM pg_roles WHERE rolname = %s", [cluster.owner]).fetchone()
    assert row == (False, True, True, True)


def test_owner_password_authenticates_over_tcp_with_scram(cluster):
    conninfo = cluster.conninfo(cluster.owner, cluster.owner_password, tcp=True)
    with psycopg.connect(conninfo) as conn:
        assert conn.info.host == "127.0.0.1"
        assert conn.execute("SELECT current_user").fetchone() == (cluster.owner,)
    with cluster.connect_super() as conn:
        (stored,) = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                 [cluster.owner]).fetchone()
    assert stored.startswith("SCRAM-SHA-256$4096:")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(cluster.conninfo(cluster.owner, "wrong", tcp=True)).close()


@pytest.mark.parametrize("iterations", [4096, 1])
def test_scram_verifier_logs_in(cluster, uid, iterations):
    password = secrets.token_urlsafe(16)
    verifier = scram_sha256_verifier(password, iterations=iterations)
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(uid), sql.Literal(verifier)))
    try:
        with cluster.connect_super() as conn:
            (stored,) = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                     [uid]).fetchone()
        assert stored == verifier  # kept as given, not re-hashed
        for tcp in (True, False):
            with psycopg.connect(cluster.conninfo(uid, password, tcp=tcp)) as conn:
                assert conn.execute("SELECT current_user").fetchone() == (uid,)
    finally:
        with cluster.connect_super() as conn:
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(uid)))


@pytest.mark.parametrize("password", ["pencil", "p\u00e4ssw\u00f6rd \"'$\\"])
def test_scram_verifier_matches_the_server(cluster, uid, password):
    """Same salt and iterations as a verifier the server computed -> the same verifier.
    (The only place a plaintext password is sent: a throwaway role with no LOGIN.)"""
    role = uid
    with cluster.connect_super() as conn:
        conn.execute("SET password_encryption = 'scram-sha-256'")
        conn.execute(sql.SQL("CREATE ROLE {} PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(password)))
        try:
            (server,) = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                     [role]).fetchone()
        finally:
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    iterations, salt = server.split("$")[1].split(":")
    assert scram_sha256_verifier(password, int(iterations), base64.b64decode(salt)) == server
