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
BLOCK = re.compile(r"<!-- install:begin -->\s*```sh\n(.*?)```\s*<!-- install:end -->", re.S)


def install_block() -> str:
    found = BLOCK.findall(README.read_text())
    assert len(found) == 1, "README.md has one install block between install:begin/end"
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
