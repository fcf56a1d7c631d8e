"""Errors that say what is missing and the command that fixes it (issue 13): migrate before
the superuser step or as a role without its privileges, status on a database never
migrated, and owner-only commands run as the worker role. The real CLI, in-process, against
the real cluster."""

from __future__ import annotations

import json
import shlex
import time

from psycopg import sql

from datatable_roles import cli
from datatable_roles.migrate import BOOTSTRAP_SQL, MANAGED_SQL
from support import ACME

# yoyo retried its lock for 10 s before it said that yoyo_lock does not exist.
AT_ONCE = 5.0


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def empty_database(scratch, name: str, owner: str | None = None,
                   bootstrap_for: str | None = None) -> str:
    """A new database (dropped when the test ends), owned by ``owner`` (else the superuser),
    with the superuser step run for ``bootstrap_for``."""
    scratch.database(name)
    c = scratch.cluster
    with c.connect_super() as conn:
        if owner:
            conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(name), sql.Identifier(owner)))
    if bootstrap_for:
        c.psql_file(BOOTSTRAP_SQL, name, owner=bootstrap_for)
    return name


def package_schema_exists(cluster, dbname: str) -> bool:
    with cluster.connect_super(dbname) as conn:
        return conn.execute("SELECT to_regnamespace('datatable_roles') IS NOT NULL"
                            ).fetchone()[0]


def test_migrate_before_the_superuser_step_says_so_at_once(cluster, scratch, uid, capsys):
    db = empty_database(scratch, f"{uid}_noboot", owner=cluster.owner)
    started = time.monotonic()
    code, out, err = run(capsys, "--dsn", cluster.owner_conninfo(db), "migrate")
    assert time.monotonic() - started < AT_ONCE
    assert code == 1 and out == ""
    assert err.startswith(f"error: NotInstalled: the set-up step has not been run in "
                          f"database '{db}' (no extension dblink in schema "
                          "datatable_roles_dblink)")
    bootstrap = f"psql -d {db} -v owner={cluster.owner} -f {shlex.quote(str(BOOTSTRAP_SQL))}"
    managed = f"psql -d {db} -v owner={cluster.owner} -f {shlex.quote(str(MANAGED_SQL))}"
    assert f"hint: self-hosted, as a superuser: {bootstrap}; managed, as the database owner" \
        f" or the service's admin role: {managed}, then CREATE EXTENSION IF NOT EXISTS dblink" \
        " SCHEMA datatable_roles_dblink; then migrate again" in err
    assert "yoyo_lock" not in err
    with cluster.connect_super(db) as conn:  # nothing was made, not even yoyo's tables
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchone() == (0,)
    # once the superuser step has run, the same command installs
    cluster.psql_file(BOOTSTRAP_SQL, db, owner=cluster.owner)
    code, out, _ = run(capsys, "--dsn", cluster.owner_conninfo(db), "migrate")
    assert code == 0 and out.startswith("applied 0001_tables")


def test_migrate_as_a_role_without_the_privileges_says_which(cluster, scratch, meta_db, uid,
                                                            capsys):
    db = empty_database(scratch, f"{uid}_boot", owner=None, bootstrap_for=cluster.owner)
    worker = cluster.worker_conninfo(db)
    # the superuser step took CONNECT from PUBLIC: no connection, and the error says so
    code, _, err = run(capsys, "--dsn", worker, "migrate")
    assert code == 1
    assert err.startswith("error: PermissionDenied (42501): ") and "permission denied" in err
    assert "hint: Connect as the package owner" in err

    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
            sql.Identifier(db), sql.Identifier(cluster.worker)))
    started = time.monotonic()
    code, out, err = run(capsys, "--dsn", worker, "migrate")
    assert time.monotonic() - started < AT_ONCE
    assert code == 1 and out == ""
    assert err.startswith(
        f"error: PermissionDenied: role '{cluster.worker}' may not install the package in "
        f"database '{db}': it lacks USAGE on schema datatable_roles_dblink, CREATE on "
        f"database {db}, CREATE on schema public")
    assert "hint: Migrate as the package owner. The set-up step gives it these" in err
    assert not package_schema_exists(cluster, db)

    # an install: only its owner may migrate it
    code, _, err = run(capsys, "--dsn", meta_db.worker_conninfo, "migrate")
    assert code == 1
    assert err.startswith(f"error: PermissionDenied: role '{cluster.worker}' may not migrate "
                          f"database '{meta_db.name}': the package there belongs to "
                          f"'{cluster.owner}'")
    assert f"hint: Connect as the package owner {cluster.owner}." in err


def test_status_on_a_database_never_migrated_says_run_migrate(cluster, scratch, uid, capsys):
    db = empty_database(scratch, f"{uid}_boot", bootstrap_for=cluster.owner)
    code, out, err = run(capsys, "--dsn", cluster.owner_conninfo(db), "status")
    assert code == 1 and out == ""
    assert err.startswith(f"error: NotInstalled: database '{db}' has no datatable-roles "
                          "install (no schema datatable_roles)")
    assert (f"as the package owner, datatable-roles --dsn 'dbname={db} user={cluster.owner}' "
            "migrate") in err
    assert "bootstrap.sql" not in err  # the superuser step has run
    # without the superuser step, the hint starts there
    bare = empty_database(scratch, f"{uid}_bare")
    code, _, err = run(capsys, "--dsn", cluster.owner_conninfo(bare), "sweep")
    assert code == 1 and "NotInstalled" in err
    assert f"self-hosted, as a superuser: psql -d {bare} -v owner={cluster.owner} -f " in err
    code, out, err = run(capsys, "--json", "--dsn", cluster.owner_conninfo(bare), "status")
    assert code == 1 and err == "" and json.loads(out)["error"]["class"] == "NotInstalled"


def test_owner_commands_as_the_worker_are_permission_denied_not_refused(make_world, capsys):
    env = make_world(**ACME)
    for command in ("status", "sweep", "lint-policies"):
        code, out, err = run(capsys, "--dsn", env.meta.worker_conninfo, command)
        assert code == 1 and out == "", command
        assert err.startswith("error: PermissionDenied (42501): permission denied for "), err
        assert "Refused" not in err
        assert "hint: Connect as the package owner" in err
    code, out, err = run(capsys, "--dsn", env.meta.worker_conninfo, "--json", "status")
    error = json.loads(out)["error"]
    assert code == 1 and err == ""
    assert (error["class"], error["sqlstate"]) == ("PermissionDenied", "42501")
    assert "rule" not in error
    # what the worker may do still works
    code, _, _ = run(capsys, "--dsn", env.meta.worker_conninfo, "explain",
                     str(env.job("alice")), "main")
    assert code == 0


def test_no_server_at_the_dsn_says_what_names_the_database(tmp_path, capsys):
    """No server where the DSN (or PG*) points: libpq's line saying what to check is kept,
    and the hint names --dsn and the PG* variables."""
    code, out, err = run(capsys, "--dsn", f"host={tmp_path} port=5999 dbname=x user=x",
                         "status")
    assert code == 1 and out == ""
    assert err.startswith("error: DatatableRolesError: ") and str(tmp_path) in err
    assert "detail: Is the server running locally and accepting connections" in err
    assert "hint: Name the metadata database and its login: a conninfo or URL (the CLI's --dsn" in err
    assert "PGHOST, PGPORT, PGDATABASE, PGUSER" in err


def test_a_login_the_cluster_does_not_know_gets_the_same_hint(cluster, uid, capsys):
    code, out, err = run(capsys, "--dsn", f"host={cluster.host} port={cluster.port}"
                         f" dbname=postgres user={uid}_nobody", "status")
    assert code == 1 and out == ""
    assert err.startswith("error: DatatableRolesError: connection failed: ")
    assert "hint: Name the metadata database and its login" in err
