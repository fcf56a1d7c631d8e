"""The CLI in-process (cli.main([...]) with --dsn to the metadata database as the owner):
every subcommand, --json output that parses, and the exit codes."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from datatable_roles import cli, policy_lint, progress
from datatable_roles.scram import scram_sha256_verifier
from support import ACME, DT, WS, sql_exec


@pytest.fixture
def env(make_world):
    """support.ACME, the world of test_wrapper.py."""
    return make_world(**ACME)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str):
    code, out, err = run(capsys, *argv)
    return code, json.loads(out), err


# ---- usage -------------------------------------------------------------------------------


def test_usage_and_help_exit_codes(capsys):
    assert run(capsys, "--help")[0] == 0
    code, _, err = run(capsys)
    assert code == 2 and "COMMAND" in err
    assert run(capsys, "explain")[0] == 2
    code, _, err = run(capsys, "explain", "not-a-uuid", "main")
    assert code == 2 and "not a UUID" in err
    assert run(capsys, "no-such-command")[0] == 2
    assert run(capsys, "sweep", "--bogus")[0] == 2
    code, out, _ = run(capsys, "--version")
    assert code == 0 and "datatable-roles" in out
    for command in ("migrate", "status", "explain", "sweep", "lint-policies", "demo"):
        code, out, _ = run(capsys, command, "--help")
        assert code == 0 and "--json" in out


def test_module_and_console_script_entry_points():
    proc = subprocess.run([sys.executable, "-m", "datatable_roles", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for command in ("migrate", "status", "explain", "sweep", "lint-policies", "demo"):
        assert command in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "datatable_roles"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    script = Path(sys.executable).parent / "datatable-roles"  # pyproject's console script
    if script.exists():
        proc = subprocess.run([str(script), "--help"], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0 and "lint-policies" in proc.stdout


# ---- migrate -----------------------------------------------------------------------------


def test_migrate(env, capsys):
    dsn = env.meta.owner_conninfo
    code, out, _ = run(capsys, "--dsn", dsn, "migrate")
    assert (code, out.strip()) == (0, "nothing to apply")
    code, data, _ = run_json(capsys, "--json", "migrate", dsn)
    assert code == 0 and data == {"applied": []}
    code, data, _ = run_json(capsys, "migrate", "--dsn", dsn, "--json")  # options after
    assert code == 0 and data == {"applied": []}


def test_migrate_a_fresh_database(cluster, capsys, uid):
    dbname = f"{uid}_fresh"
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(dbname), sql.Identifier(cluster.owner)))
    link = None
    try:
        cluster.psql_file(cluster_bootstrap(), dbname, owner=cluster.owner)
        code, data, _ = run_json(capsys, "--json", "--dsn", cluster.owner_conninfo(dbname),
                                 "migrate")
        assert code == 0 and data["applied"][0] == "0001_tables"
        with psycopg.connect(cluster.owner_conninfo(dbname)) as conn:
            (link,) = conn.execute("SELECT login FROM datatable_roles.link_credential"
                                   ).fetchone()
    finally:
        with cluster.connect_super() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(dbname)))
            if link is not None:
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(link)))


def cluster_bootstrap():
    from datatable_roles.devcluster import BOOTSTRAP_SQL
    return BOOTSTRAP_SQL


# ---- status ------------------------------------------------------------------------------


def test_status_shows_defaults_roles_tenants_and_set_logins(env, capsys):
    dsn = env.meta.owner_conninfo
    code, out, _ = run(capsys, "--dsn", dsn, "status")
    assert code == 0
    assert f"Data table {WS}/{DT} (database {env.dbname}, admin login {env.admin_login})" in out
    assert "default role: admin" in out
    assert "WARNING: the default role is admin" in out
    assert f"{env.emea}  yes      g/emea" in out

    env.owner.set_datatable_default_role(WS, DT, None)
    res = env.worker.resolve(env.job("carol"), DT)  # a set login
    env.owner.add_workspace("fork")
    env.owner.reference_datatable("fork", "shared", WS, DT)
    code, out, _ = run(capsys, "--dsn", dsn, "status")
    assert code == 0
    assert "WARNING" not in out and "default role: (none)" in out
    assert f"Data table fork/shared: a reference to {WS}/{DT}" in out
    assert res.login in out and "just now" in out and "active" in out
    line = next(x for x in out.splitlines() if res.login in x)
    assert env.dbname in line  # a login's one database
    assert "passwords are rotated every 1 day" in out
    for secret in (res.password, env.admin_password, env.cluster.owner_password):
        assert secret not in out

    code, data, _ = run_json(capsys, "--dsn", dsn, "--json", "status")
    assert code == 0
    main = next(d for d in data["datatables"] if d["name"] == DT)
    assert main["default_role"] is None and main["default_is_admin"] is False
    assert {r["role"]: r["tenants"] for r in main["roles"]} == {
        "admin": [], env.emea: ["g/emea"], env.us: ["g/us"]}
    (login,) = data["set_logins"]
    assert login["login"] == res.login and login["roles"] == sorted([env.emea, env.us])
    assert login["database"] == env.dbname and login["intact"] is True
    assert main["admin_password_ok"] is True
    assert data["rotate_every"] == "1 day" and data["login_group"].startswith("dtr_logins_")
    assert "password" not in json.dumps(data).lower().replace("password_", "")
    assert res.password not in json.dumps(data)


def test_status_marks_stale_and_retired_logins(env, capsys):
    env.owner.set_datatable_default_role(WS, DT, None)
    res = env.worker.resolve(env.job("carol"), DT)
    env.owner.retire(env.us)
    sql_exec(env.meta.owner_conninfo,
             "UPDATE datatable_roles.settings SET clock_offset = '31 days'")
    code, out, _ = run(capsys, "--dsn", env.meta.owner_conninfo, "status")
    assert code == 0
    line = next(x for x in out.splitlines() if res.login in x)
    assert "31 days ago" in line and "retired" in line and "next sweep drops it" in line
    assert "package clock runs 31 days ahead" in out


def test_status_shows_passwords_changed_outside_the_package(env, capsys):
    """A script changed its login's password, someone the admin login's: status says so
    (no password shown), and the next resolve heals the login."""
    env.owner.set_datatable_default_role(WS, DT, None)
    res = env.worker.resolve(env.job("carol"), DT)
    with env.cluster.connect_super() as su:
        for login in (res.login, env.admin_login):
            su.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(login), sql.Literal(scram_sha256_verifier(uuid.uuid4().hex))))
    code, out, _ = run(capsys, "--dsn", env.meta.owner_conninfo, "status")
    assert code == 0
    assert "WARNING: the admin login's password was changed outside the package" in out
    assert "set_datatable_admin_password" in out
    line = next(x for x in out.splitlines() if res.login in x)
    assert "changed outside the package" in line
    code, data, _ = run_json(capsys, "--dsn", env.meta.owner_conninfo, "--json", "status")
    assert code == 0 and data["set_logins"][0]["intact"] is False
    assert data["datatables"][0]["admin_password_ok"] is False
    env.worker.resolve(env.job("carol"), DT)  # healed
    code, out, _ = run(capsys, "--dsn", env.meta.owner_conninfo, "status")
    line = next(x for x in out.splitlines() if res.login in x)
    assert line.rstrip().endswith("active")


# ---- explain -----------------------------------------------------------------------------


def test_explain_human_and_json(env, capsys):
    dsn = env.meta.owner_conninfo
    env.owner.set_datatable_default_role(WS, DT, None)
    job = env.job("carol")
    code, out, _ = run(capsys, "--dsn", dsn, "explain", str(job), DT)
    assert code == 0
    assert f"Job {job} on data table 'main', no role named" in out
    assert "viewer: carol@acme.test" in out
    assert f"{env.emea} (named by g/emea)" in out
    assert "=> login wm_set_" in out and "(set login, made on first resolve)" in out

    code, data, _ = run_json(capsys, "--dsn", dsn, "explain", str(job), DT, "--json")
    assert code == 0 and data["roles"] == sorted([env.emea, env.us])
    assert data["login_kind"] == "set"

    code, out, _ = run(capsys, "--dsn", dsn, "explain", str(env.job("alice")), DT)
    assert code == 0 and "(one-role login, made on first resolve), roles " + env.emea in out
    assert f"connected with options='-c role={env.emea}'" in out

    code, out, _ = run(capsys, "--dsn", dsn, "explain", str(env.job("dave")), DT)
    assert code == 0 and "=> REFUSED by R5" in out and "hint:" in out
    code, data, _ = run_json(capsys, "--dsn", dsn, "--json", "explain",
                             str(env.job("alice")), DT, "--role", env.us)
    assert code == 0 and data["refused"]["rule"] == "R1"


def test_explain_as_the_worker(env, capsys):
    code, out, _ = run(capsys, "--dsn", env.meta.worker_conninfo, "explain",
                       str(env.job("alice")), DT)
    assert code == 0 and f"=> login {env.admin_login} (admin login" in out


def test_errors_exit_1_with_class_message_and_hint(env, capsys):
    dsn = env.meta.owner_conninfo
    code, out, err = run(capsys, "--dsn", dsn, "explain", str(uuid.uuid4()), DT)
    assert code == 1 and out == ""
    assert err.startswith("error: UnknownObject (P0002): job ")
    assert "hint: Call record_job_start" in err
    code, data, err = run_json(capsys, "--dsn", dsn, "--json", "explain",
                               str(uuid.uuid4()), DT)
    assert code == 1 and data["error"]["class"] == "UnknownObject"
    assert data["error"]["sqlstate"] == "P0002"
    # the worker may not read the package's tables
    code, _, err = run(capsys, "--dsn", env.meta.worker_conninfo, "status")
    assert code == 1 and err.startswith("error: Refused (42501): permission denied")
    # a login that cannot connect; the password is not echoed
    bad = psycopg.conninfo.make_conninfo(env.meta.owner_conninfo, password="wrong-pw-123")
    code, _, err = run(capsys, "--dsn", bad, "status")
    assert code == 1 and "password authentication failed" in err
    assert "wrong-pw-123" not in err
    code, _, err = run(capsys, "--dsn", "host=/nonexistent/dir port=1", "sweep")
    assert code == 1 and err.startswith("error: DatatableRolesError: ")


# ---- sweep -------------------------------------------------------------------------------


def test_sweep_with_nothing_to_do(env, capsys):
    code, out, err = run(capsys, "--dsn", env.meta.owner_conninfo, "sweep")
    assert code == 0 and out.startswith("Sweep: 0 examined, 0 dropped") and err == ""
    code, data, _ = run_json(capsys, "--dsn", env.meta.owner_conninfo, "sweep", "--json")
    assert code == 0 and data == {"examined": 0, "dropped": 0, "skipped": 0, "unfinished": [],
                                  "rotated": 0, "healed": 0,
                                  "forgotten_user_keys": []}


def test_sweep_many_stale_logins_shows_a_progress_bar(env, capsys):
    roles = [env.new_role(f"s{i}") for i in range(7)]
    ids = [r[0] for r in env.owner._rows(
        "SELECT id FROM datatable_roles.catalog_role WHERE name = ANY(%s) ORDER BY id",
        [roles])]
    pairs = list(itertools.combinations(ids, 2))
    assert len(pairs) == 21
    logins = [env.owner.ensure_set_login(env.dbname, p) for p in pairs]
    sql_exec(env.meta.owner_conninfo,
             "UPDATE datatable_roles.settings SET clock_offset = '31 days'")
    code, out, err = run(capsys, "--dsn", env.meta.owner_conninfo, "sweep")
    assert code == 0
    assert out.startswith("Sweep: 21 examined, 21 dropped, 0 skipped")
    assert "0 passwords rotated, 0 logins changed outside the package healed" in out
    assert "sweep [" in err and err.rstrip().endswith("21/21 logins")
    with env.cluster.connect_super() as conn:
        assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = ANY(%s)",
                            [logins]).fetchone() == (0,)
    code, out, err = run(capsys, "--dsn", env.meta.owner_conninfo, "sweep", "--no-progress")
    assert code == 0 and err == "" and "0 examined" in out


def test_sweep_unused_for(env, capsys):
    env.owner.set_datatable_default_role(WS, DT, None)
    res = env.worker.resolve(env.job("carol"), DT)
    code, data, _ = run_json(capsys, "--dsn", env.meta.owner_conninfo, "--json", "sweep",
                             "--unused-for", "1 day")
    assert code == 0 and data["examined"] == 0
    code, data, _ = run_json(capsys, "--dsn", env.meta.owner_conninfo, "--json", "sweep",
                             "--unused-for", "0 seconds")
    assert code == 0 and data["dropped"] == 1
    with env.cluster.connect_super() as conn:
        assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                            [res.login]).fetchone() == (0,)
    code, _, err = run(capsys, "--dsn", env.meta.owner_conninfo, "sweep",
                       "--unused-for", "soon")
    assert code == 1 and "interval" in err


# ---- lint-policies -----------------------------------------------------------------------


def test_lint_policies(env, capsys):
    admin_dsn = env.cluster.conninfo(env.admin_login, env.admin_password, env.dbname)
    code, out, _ = run(capsys, "lint-policies", "--dsn", admin_dsn)
    assert code == 0 and "No policy names a missing role (1 database(s) checked)" in out

    ghost = f"{env.uid}_ghost"
    with env.cluster.connect_super(env.dbname) as conn:
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(env.admin_login)))
        conn.execute(sql.SQL(
            "CREATE POLICY ghostly ON orders FOR ALL"
            " USING (pg_has_role(current_user, {}::text, 'member'))"
            " WITH CHECK (pg_has_role({}, 'usage') OR pg_has_role(current_user, {}, 'member'))"
        ).format(sql.Literal(ghost), sql.Literal(ghost + "_it's"), sql.Literal(env.emea)))
    code, out, err = run(capsys, "lint-policies", "--dsn", admin_dsn)
    assert code == 1
    rows = [line.split() for line in out.splitlines() if "ghostly" in line]
    assert [env.dbname, "public.orders", "ghostly", "USING", ghost] in rows
    assert any(r[-1] == ghost + "_it's" for r in rows)
    assert len(rows) == 2  # the existing role and the privilege argument are not findings
    assert "2 policy clause(s) name a role that does not exist" in out

    code, data, _ = run_json(capsys, "--json", "lint-policies", "--dsn", admin_dsn)
    assert code == 1 and {f["missing_role"] for f in data["findings"]} == {
        ghost, ghost + "_it's"}
    # without its own --dsn: every registered data table, reached as the metadata login
    code, data, _ = run_json(capsys, "--dsn", env.meta.owner_conninfo, "--json",
                             "lint-policies")
    assert code == 1 and data["databases"] == 1
    assert {f["database"] for f in data["findings"]} == {env.dbname}

    # renaming a role breaks the policy that names it as text
    with env.cluster.connect_super(env.dbname) as conn:
        conn.execute("DROP POLICY ghostly ON orders")
    env.owner.rename_datatable_role(env.us, env.us + "_new")
    code, data, _ = run_json(capsys, "--json", "lint-policies", "--dsn", admin_dsn)
    assert code == 1 and [(f["policy"], f["missing_role"]) for f in data["findings"]] == [
        ("us", env.us)]


def test_role_literals_parser():
    expr = ("((region = 'a,b'::text) AND pg_has_role(CURRENT_USER, 'r1'::name, 'member'::text)"
            " OR pg_has_role(('r2'::text)::name, 'usage') OR pg_has_role(f(x, 'no'), 'm')"
            " OR PG_HAS_ROLE('o''brien', 'member'))")
    assert policy_lint.role_literals(expr) == ["r1", "r2", "o'brien"]
    assert policy_lint.role_literals(None) == []


def test_progress_bar_in_a_log_writes_a_line_per_quarter():
    import io

    stream = io.StringIO()
    bar = progress.ProgressBar(40, stream, width=8)
    for done in range(41):
        bar.update(done)
    bar.finish()
    assert stream.getvalue().splitlines() == [
        "sweep [--------]  0/40 logins", "sweep [##------] 10/40 logins",
        "sweep [####----] 20/40 logins", "sweep [######--] 30/40 logins",
        "sweep [########] 40/40 logins"]
