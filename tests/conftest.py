"""pytest fixtures against a throwaway PostgreSQL cluster.

Inside `python -m datatable_roles.devcluster run -- ...` the cluster comes from the exported
PG*/DTR_* variables; otherwise the session starts (and at the end removes) its own.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from datatable_roles.devcluster import Cluster
from datatable_roles.scram import scram_sha256_verifier


@dataclass(frozen=True)
class MetaDB:
    """A metadata database cloned from the template (the package installed)."""

    name: str
    owner_conninfo: str
    worker_conninfo: str
    super_conninfo: str


@pytest.fixture(scope="session")
def cluster():
    """The cluster: a datatable_roles.devcluster.Cluster (host/port/owner/worker/template,
    owner_password, worker_password, log_path, conninfo(...), superuser_conninfo(db),
    connect_super(db), set_setting(name, value))."""
    if Cluster.env_present():
        yield Cluster.from_env()
        return
    c = Cluster().start()
    mp = pytest.MonkeyPatch()
    for k, v in c.env().items():
        mp.setenv(k, v)
    try:
        yield c
    finally:
        mp.undo()
        c.stop()


def drop_database(cluster: Cluster, name: str) -> None:
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


def drop_role(cluster: Cluster, name: str) -> None:
    """End the role's sessions and drop it, with whatever it owns or was granted anywhere."""
    with cluster.connect_super() as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                     " WHERE usename = %s", [name])
        try:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
            return
        except psycopg.errors.DependentObjectsStillExist:
            dbs = [r[0] for r in conn.execute(
                "SELECT datname FROM pg_database WHERE datallowconn")]
    for db in dbs:
        with cluster.connect_super(db) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture
def meta_db(cluster):
    """A fresh metadata database (clone of the template, owned by the package owner) with
    its own instance id; dropped afterwards."""
    name = "dtr_meta_" + secrets.token_hex(4)
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(cluster.template),
            sql.Identifier(cluster.owner)))
    try:
        with cluster.connect_super(name) as conn:
            (has_instance_id,) = conn.execute(
                "SELECT EXISTS (SELECT FROM pg_attribute"
                " WHERE attrelid = to_regclass('datatable_roles.settings')"
                " AND attname = 'instance_id' AND NOT attisdropped)").fetchone()
            if has_instance_id:
                conn.execute("UPDATE datatable_roles.settings SET instance_id = gen_random_uuid()")
        yield MetaDB(
            name=name,
            owner_conninfo=cluster.owner_conninfo(name),
            worker_conninfo=cluster.worker_conninfo(name),
            super_conninfo=cluster.superuser_conninfo(name),
        )
    finally:
        drop_database(cluster, name)


@pytest.fixture
def datatable_db(cluster):
    """Factory: make(prefix="dt") -> (dbname, admin_login, admin_password).

    Creates a LOGIN role with a random password, grants it to the package owner, and creates
    a database it owns; all of it is dropped afterwards."""
    made: list[tuple[str, str]] = []

    def make(prefix: str = "dt") -> tuple[str, str, str]:
        base = f"{prefix}_{secrets.token_hex(3)}"
        dbname, admin = base, base + "_admin"
        password = secrets.token_urlsafe(24)
        with cluster.connect_super() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(admin), sql.Literal(scram_sha256_verifier(password))))
            made.append((dbname, admin))
            conn.execute(sql.SQL("GRANT {} TO {}").format(
                sql.Identifier(admin), sql.Identifier(cluster.owner)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(dbname), sql.Identifier(admin)))
        return dbname, admin, password

    yield make
    for dbname, admin in reversed(made):
        drop_database(cluster, dbname)
        drop_role(cluster, admin)


@pytest.fixture
def uid() -> str:
    """A short unique lowercase prefix for cluster-wide names, e.g. 't3f9a0c'."""
    return "t" + secrets.token_hex(3)
