"""README's install sequence, extracted from README.md itself and run as it stands with bash
on this test's cluster: a superuser through the PG* variables, the CLI of this virtualenv on
PATH, and cluster-wide names made unique through the variables the block reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

# The same on every PostgreSQL version: run once in `make test` (tests/conftest.py).
pytestmark = pytest.mark.version_independent

README = Path(__file__).resolve().parent.parent / "README.md"


def install_block(kind: str = "install") -> str:
    """The README's block between <!-- <kind>:begin --> and <!-- <kind>:end -->."""
    block = re.compile(rf"<!-- {kind}:begin -->\s*```sh\n(.*?)```\s*<!-- {kind}:end -->", re.S)
    found = block.findall(README.read_text())
    assert len(found) == 1, f"README.md has one block between {kind}:begin/end"
    return found[0]


def test_the_readme_install_sequence_runs_on_a_fresh_cluster(cluster, scratch, uid):
    """Run with bash, then pasted again into an interactive bash, where its first step fails
    (the roles exist): the block stops with its message and the shell goes on. With every
    statement logged, no password of the block is in the server log."""
    names = {"OWNER": f"{uid}_owner", "WORKER": f"{uid}_worker", "META": f"{uid}_meta",
             "DT_DB": f"{uid}_sales", "DT_ADMIN": f"{uid}_sales_admin"}
    scratch.databases += [names["META"], names["DT_DB"]]
    passwords = {"OWNER_PASSWORD": "pw-o-" + uid, "WORKER_PASSWORD": "pw-w-" + uid,
                 "DT_ADMIN_PASSWORD": "pw-a-" + uid}
    env = {**os.environ, **names, **passwords,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PGHOST": cluster.host, "PGPORT": str(cluster.port), "PGUSER": "postgres",
           "PGDATABASE": "postgres"}
    env.pop("PGPASSWORD", None)
    start = cluster.log_path.stat().st_size
    cluster.set_setting("log_statement", "all")
    try:
        run = subprocess.run(["bash", "-c", install_block()], env=env, capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "acme" in run.stdout and names["DT_DB"] in run.stdout  # status lists the table
        assert "(healthy)" in run.stdout, run.stdout  # doctor: nothing the sequence left out
        again = subprocess.run(["bash", "--norc", "-i"], env=env, capture_output=True,
                               text=True, timeout=300,
                               input=install_block() + "\necho shell-still-here\n")
    finally:
        cluster.set_setting("log_statement", None)
    assert "install stopped: the step above failed" in again.stderr, again.stderr
    assert f'role "{names["OWNER"]}" already exists' in again.stderr
    assert "shell-still-here" in again.stdout
    log = cluster.log_path.read_bytes()[start:].decode("utf-8", errors="replace")
    assert "CREATE ROLE" in log and "register_datatable" in log and "already exists" in log
    assert [p for p in passwords.values() if p in log] == []

    # What it installed works: register_datatable took CONNECT from PUBLIC; the worker
    # records a job and resolves the data table.
    with psycopg.connect(cluster.superuser_conninfo(), autocommit=True) as su:
        assert su.execute("SELECT has_database_privilege('public', %s, 'CONNECT')",
                          [names["DT_DB"]]).fetchone() == (False,)
    worker = cluster.conninfo(names["WORKER"], env["WORKER_PASSWORD"], names["META"])
    with psycopg.connect(worker, autocommit=True) as conn:
        (job,) = conn.execute("SELECT gen_random_uuid()").fetchone()
        with psycopg.connect(cluster.conninfo(names["OWNER"], env["OWNER_PASSWORD"],
                                              names["META"]), autocommit=True) as owner:
            owner.execute("SELECT add_workspace_user('acme', 'pub', 'pub@acme.test')")
        conn.execute("SELECT record_job_start(%s, 'acme', 'u/pub', 'schedule')", [job])
        login, roles = conn.execute(
            "SELECT login, roles FROM resolve_datatable_role(%s, 'main')", [job]).fetchone()
    assert (login, roles) == (names["DT_ADMIN"], ["admin"])


def test_the_readme_managed_install_needs_no_superuser_but_the_extension_step(
        cluster, scratch, uid):
    """The managed variant, run as a NOSUPERUSER CREATEROLE CREATEDB role (a managed
    service's admin role) with a superuser for the extension step alone (EXT): it installs,
    status names the managed profile, no superuser-owned function is left in the metadata
    database, the worker resolves, and no password of the block is in the server log."""
    from test_managed_profile import superuser_code

    admin = f"{uid}_svcadmin"
    names = {"OWNER": f"{uid}_owner", "WORKER": f"{uid}_worker", "META": f"{uid}_meta",
             "DT_DB": f"{uid}_sales", "DT_ADMIN": f"{uid}_sales_admin"}
    scratch.databases += [names["META"], names["DT_DB"]]
    passwords = {"OWNER_PASSWORD": "pw-o-" + uid, "WORKER_PASSWORD": "pw-w-" + uid,
                 "DT_ADMIN_PASSWORD": "pw-a-" + uid}
    admin_password = "pw-s-" + uid
    with psycopg.connect(cluster.superuser_conninfo(), autocommit=True) as su:
        su.execute(f'CREATE ROLE "{admin}" LOGIN NOSUPERUSER CREATEROLE CREATEDB'
                   f" PASSWORD '{admin_password}'")
        # as the services give their admin role the predefined roles to hand on (16+)
        su.execute(f'GRANT pg_signal_backend TO "{admin}" WITH ADMIN OPTION')
    env = {**os.environ, **names, **passwords,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PGHOST": cluster.host, "PGPORT": str(cluster.port), "PGUSER": admin,
           "PGPASSWORD": admin_password, "PGDATABASE": "postgres",
           "EXT": "psql -X -q -v ON_ERROR_STOP=1 -U postgres"}
    start = cluster.log_path.stat().st_size
    cluster.set_setting("log_statement", "all")
    try:
        run = subprocess.run(["bash", "-c", install_block("install-managed")], env=env,
                             capture_output=True, text=True, timeout=300)
    finally:
        cluster.set_setting("log_statement", None)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "install profile: managed" in run.stdout, run.stdout
    assert names["DT_DB"] in run.stdout
    log = cluster.log_path.read_bytes()[start:].decode("utf-8", errors="replace")
    assert "CREATE EXTENSION" in log and "register_datatable" in log
    assert [p for p in passwords.values() if p in log] == []
    assert superuser_code(cluster.superuser_conninfo(names["META"])) == []
    worker = cluster.conninfo(names["WORKER"], env["WORKER_PASSWORD"], names["META"])
    with psycopg.connect(worker, autocommit=True) as conn:
        (job,) = conn.execute("SELECT gen_random_uuid()").fetchone()
        with psycopg.connect(cluster.conninfo(names["OWNER"], env["OWNER_PASSWORD"],
                                              names["META"]), autocommit=True) as owner:
            owner.execute("SELECT add_workspace_user('acme', 'pub', 'pub@acme.test')")
        conn.execute("SELECT record_job_start(%s, 'acme', 'u/pub', 'schedule')", [job])
        login, roles = conn.execute(
            "SELECT login, roles FROM resolve_datatable_role(%s, 'main')", [job]).fetchone()
    assert (login, roles) == (names["DT_ADMIN"], ["admin"])
