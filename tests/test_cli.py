"""The CLI in-process (cli.main([...]) with --dsn to the metadata database as the owner):
every subcommand, --json output that parses, and the exit codes. Errors that say what is
missing (the superuser step, an install, a privilege) are in test_cli_errors.py."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from datatable_roles import __version__, cli, policy_lint, progress
from datatable_roles.scram import scram_sha256_verifier
from support import ACME, DT, WS, sql_exec

REPO = Path(__file__).resolve().parent.parent


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
    assert run(capsys, "demo")[0] == 2  # the lab's (make demo), not the installed CLI's
    assert run(capsys, "sweep", "--bogus")[0] == 2
    code, out, _ = run(capsys, "--version")
    assert code == 0 and "datatable-roles" in out
    for command in ("migrate", "status", "explain", "sweep", "lint-policies"):
        code, out, _ = run(capsys, command, "--help")
        assert code == 0 and "--json" in out


COMMANDS = ("migrate", "status", "explain", "sweep", "lint-policies")


def test_help_describes_each_command_and_every_exit_code(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    codes = out[out.index("exit codes:"):]
    for line in ("0  success", "1  error", "2  usage", "3  the answer is no"):
        assert line in codes
    assert '--json: {"error": ...} on stdout' in codes
    for command in COMMANDS:
        code, out, _ = run(capsys, command, "--help")
        usage, description = out.split("\n\n")[:2]
        assert code == 0 and usage.startswith(f"usage: datatable-roles {command}")
        assert not description.startswith("options:") and len(description) > 80, command
        # each command points at the block instead of repeating it
        assert "exit codes: 0 ok, 1 error, 2 usage, 3 the answer is no (datatable-roles --help)" in out
        assert "0  success" not in out
    code, out, _ = run(capsys, "sweep", "--help")
    assert "30 days" not in out.replace("'30 days'", "")  # only as an example of INTERVAL
    assert "default: the instance's unused_after" in " ".join(out.split())
    code, out, _ = run(capsys, "lint-policies", "--help")
    assert "--database DBNAME_OR_CONNINFO" in out and "metadata database" in out


def test_module_and_console_script_entry_points():
    proc = subprocess.run([sys.executable, "-m", "datatable_roles", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for command in ("migrate", "status", "explain", "sweep", "lint-policies"):
        assert command in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "datatable_roles"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    pyproject = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"] == {"datatable-roles": "datatable_roles.cli:main"}
    # docs/wrapper.md: the virtualenv of `make test` and `make demo` has the command
    script = Path(sys.executable).parent / "datatable-roles"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "lint-policies" in proc.stdout


def test_every_environment_variable_the_package_reads_is_documented():
    wrapper = (REPO / "docs" / "wrapper.md").read_text()
    documented = set(re.findall(r"`((?:DTR_|PG)[A-Z_]+)`", wrapper))
    read = set()
    sources = [*(REPO / "python" / "datatable_roles").rglob("*.py"),
               *(REPO / "lab" / "datatable_roles_lab").rglob("*.py")]
    for source in sources:
        read |= set(re.findall(r"""["']((?:DTR_|PG)[A-Z_]+)["']""", source.read_text()))
    assert read and read <= documented, read - documented
    assert "DTR_MIGRATIONS" not in read


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
    from datatable_roles.migrate import BOOTSTRAP_SQL
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
    # an empty tenant list says what it means, and what tenants are
    assert re.search(r"^    admin +yes +\(none: workspace admins only\)$", out, flags=re.M)
    assert ("tenants: who may name the role in a connection (workspace admins may name any "
            "role). Unless the default is admin, a connection also holds each enabled role, "
            "admin aside, whose tenants name its viewer.") in " ".join(out.split())

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


def test_status_lists_logins_most_recently_used_first(env, capsys):
    env.owner.set_datatable_default_role(WS, DT, None)
    older = env.worker.resolve(env.job("carol"), DT)  # a set login
    env.advance_clock("1 hour")
    newer = env.worker.resolve(env.job("alice"), DT)  # a one-role login, used later
    code, out, _ = run(capsys, "--dsn", env.meta.owner_conninfo, "status")
    assert code == 0 and "most recently used first" in out
    assert out.index(newer.login) < out.index(older.login)
    line = next(x for x in out.splitlines() if older.login in x)
    assert "1 h ago" in line


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
    """A script changed its login's password, someone the admin login's: status names the
    admin login's (a real login with the stored password fails; no password shown). A set
    login's shows itself when a job's connection is refused (nothing reads pg_authid), and
    the worker's heal_refused_login heals it."""
    env.owner.set_datatable_default_role(WS, DT, None)
    res = env.worker.resolve(env.job("carol"), DT)
    with env.cluster.connect_super() as su:
        for login in (res.login, env.admin_login):
            su.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(login), sql.Literal(scram_sha256_verifier(uuid.uuid4().hex))))
    code, out, _ = run(capsys, "--dsn", env.meta.owner_conninfo, "status")
    assert code == 0
    assert ("WARNING: the admin login does not log in with the password the package holds"
            in out)
    assert "set_datatable_admin_password" in out
    code, data, _ = run_json(capsys, "--dsn", env.meta.owner_conninfo, "--json", "status")
    assert code == 0 and data["datatables"][0]["admin_password_ok"] is False
    assert env.worker.resolve(env.job("carol"), DT) == res  # the stored password, refused
    assert env.worker.heal_refused_login(res.login) == "healed"
    assert env.worker.resolve(env.job("carol"), DT).password != res.password
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

    # a refusal is an answer (on stdout), with its own exit code
    code, out, err = run(capsys, "--dsn", dsn, "explain", str(env.job("dave")), DT)
    assert code == cli.EXIT_NO == 3 and err == ""
    assert "=> REFUSED by R5" in out and "hint:" in out
    code, data, _ = run_json(capsys, "--dsn", dsn, "--json", "explain",
                             str(env.job("alice")), DT, "--role", env.us)
    assert code == 3 and data["refused"]["rule"] == "R1"


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
    # with --json the error is printed once: as JSON on stdout, nothing on stderr
    code, data, err = run_json(capsys, "--dsn", dsn, "--json", "explain",
                               str(uuid.uuid4()), DT)
    assert code == 1 and data["error"]["class"] == "UnknownObject" and err == ""
    assert data["error"]["sqlstate"] == "P0002"
    assert "Call record_job_start" in data["error"]["hint"]
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
                                  "forgotten_user_keys": [], "servers_pending": []}


def test_sweep_many_stale_logins_shows_a_progress_bar(env, capsys):
    roles = [env.new_role(f"s{i}") for i in range(7)]
    for role in roles:  # a login is made only of roles mapped on its database
        env.set_tenants(DT, role, [])
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


def policies(env, *statements: str) -> None:
    """Run ``statements`` on the data table database as its admin login (formatted with the
    world's role names: {emea}, {us})."""
    with env.cluster.connect_super(env.dbname) as conn:
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(env.admin_login)))
        for statement in statements:
            conn.execute(statement.format(emea=env.emea, us=env.us))


def test_lint_policies_checks_the_data_tables_of_the_metadata_database(env, capsys):
    """--dsn is the metadata database, as everywhere: every registered data table's
    database is checked (issue 13: it used to check the database --dsn named, and found
    nothing there)."""
    meta = env.meta.owner_conninfo
    ghost = f"{env.uid}_ghost"
    policies(env, "DROP POLICY IF EXISTS emea ON orders", "DROP POLICY IF EXISTS us ON orders",
             "CREATE POLICY emea_to ON orders FOR SELECT TO {emea} USING (region = 'emea')")
    code, out, _ = run(capsys, "--dsn", meta, "lint-policies")
    assert code == 0
    assert out.strip() == f"No policy names a role as text (1 database(s) checked: {env.dbname})."

    policies(env, f"CREATE POLICY ghostly ON orders FOR SELECT"
                  f" USING (pg_has_role(current_user, '{ghost}', 'member'))")
    for argv in (["lint-policies", "--dsn", meta],            # --dsn after the command
                 ["--dsn", meta, "lint-policies"],
                 ["--dsn", meta, "lint-policies", "--database", env.dbname],
                 ["--dsn", meta, "lint-policies", "--database", env.cluster.conninfo(
                     env.admin_login, env.admin_password, env.dbname)]):
        code, out, _ = run(capsys, *argv)
        assert code == cli.EXIT_NO == 3, argv
        assert [env.dbname, "public.orders", "ghostly", "USING", ghost] in [
            line.split() for line in out.splitlines()]
    code, data, _ = run_json(capsys, "--dsn", meta, "--json", "lint-policies")
    assert code == 3 and data["databases"] == [env.dbname]
    assert [(f["policy"], f["role"]) for f in data["missing_roles"]] == [("ghostly", ghost)]


def test_lint_policies_fails_on_a_database_that_is_not_a_data_table(env, new_meta_db, capsys):
    meta = env.meta.owner_conninfo
    # --dsn at a data table database (what --dsn meant here before): it has no package
    admin_dsn = env.cluster.conninfo(env.admin_login, env.admin_password, env.dbname)
    code, out, err = run(capsys, "--dsn", admin_dsn, "lint-policies")
    assert code == 1 and out == ""
    assert err.startswith(f"error: NotInstalled: database '{env.dbname}' has no "
                          "datatable-roles install")
    assert "Otherwise connect to the metadata database" in err
    # --database at a database of no data table: the metadata database itself, postgres
    for database in (env.meta.name, "postgres"):
        code, out, err = run(capsys, "--dsn", meta, "lint-policies", "--database", database)
        assert code == 1 and out == "" and "No policy" not in err
        assert err.startswith(f"error: UnknownObject: database '{database}' is not the "
                              "database of a data table registered in metadata database")
        assert f"(registered: {env.dbname})" in err
    # a metadata database with no data table: nothing to check is not a success
    empty = new_meta_db()
    code, out, err = run(capsys, "--dsn", empty.owner_conninfo, "lint-policies")
    assert code == 1 and out == ""
    assert f"no data table is registered in metadata database '{empty.name}'" in err
    code, data, err = run_json(capsys, "--dsn", empty.owner_conninfo, "lint-policies",
                               "--json")
    assert code == 1 and err == "" and data["error"]["class"] == "UnknownObject"


def test_lint_policies_warns_about_roles_named_as_text(env, capsys):
    """A role named as text in USING or WITH CHECK is a rename hazard (a warning, exit 0);
    a policy naming its role in TO is not; a text name of no role is an error (exit 3)."""
    meta = env.meta.owner_conninfo
    ghost = f"{env.uid}_ghost"
    policies(env, "DROP POLICY IF EXISTS emea ON orders", "DROP POLICY IF EXISTS us ON orders",
             "CREATE POLICY by_to ON orders FOR SELECT TO {emea}, {us} USING (true)",
             "CREATE POLICY by_member ON orders FOR SELECT"
             " USING (region = 'emea' AND pg_has_role(current_user, '{emea}', 'member'))",
             "CREATE POLICY by_name ON orders FOR ALL USING (current_user = '{us}')"
             " WITH CHECK (session_user IN ('{emea}', '{us}'))")
    code, out, _ = run(capsys, "--dsn", meta, "lint-policies")
    assert code == 0
    assert "WARNING: policies naming a role as text: renaming the role breaks them" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(f"  {env.dbname}")]
    assert [r[2:] for r in rows] == [
        ["by_member", "USING", env.emea], ["by_name", "USING", env.us],
        ["by_name", "WITH", "CHECK", env.emea], ["by_name", "WITH", "CHECK", env.us]]
    assert "fix: name the role in TO, not in the expression: CREATE POLICY" in out
    assert "0 policy clause(s) name a missing role, 4 an existing role as text" in out

    policies(env, f"CREATE POLICY ghostly ON orders FOR SELECT"
                  f" USING (pg_has_role(current_user, '{ghost}', 'member'))")
    code, data, _ = run_json(capsys, "--dsn", meta, "--json", "lint-policies")
    assert code == 3
    assert [f["role"] for f in data["missing_roles"]] == [ghost]
    assert {(f["policy"], f["clause"], f["role"]) for f in data["rename_hazards"]} == {
        ("by_member", "USING", env.emea), ("by_name", "USING", env.us),
        ("by_name", "WITH CHECK", env.emea), ("by_name", "WITH CHECK", env.us)}
    code, out, _ = run(capsys, "--dsn", meta, "lint-policies")
    missing, hazards = out.split("WARNING:")
    assert "Policies naming a role that does not exist" in missing and ghost in missing
    assert ghost not in hazards

    # renaming a role breaks the policies that name it as text, not those naming it in TO
    policies(env, "DROP POLICY ghostly ON orders")
    env.owner.rename_datatable_role(env.us, env.us + "_new")
    code, data, _ = run_json(capsys, "--dsn", meta, "--json", "lint-policies")
    assert code == 3
    assert {(f["policy"], f["clause"], f["role"]) for f in data["missing_roles"]} == {
        ("by_name", "USING", env.us), ("by_name", "WITH CHECK", env.us)}
    assert "by_to" not in json.dumps(data)


def test_roles_named_as_text_parser():
    text = policy_lint.roles_named_as_text
    expr = ("((region = 'a,b'::text) AND pg_has_role(CURRENT_USER, 'r1'::name, 'member'::text)"
            " OR pg_has_role(('r2'::text)::name, 'usage') OR pg_has_role(f(x, 'no'), 'm')"
            " OR PG_HAS_ROLE('o''brien', 'member'))")
    assert text(expr) == ["r1", "r2", "o'brien"]
    assert text(None) == [] and text("(x > 1)") == []
    # comparisons with the session's role, as pg_policies prints them back
    assert text("(CURRENT_USER = 'a'::name)") == ["a"]
    assert text("(('b'::name = SESSION_USER) OR (CURRENT_ROLE <> 'a'::name))") == ["b", "a"]
    assert text("(CURRENT_USER = ANY (ARRAY['a'::name, 'b'::name]))") == ["a", "b"]
    assert text("(CURRENT_USER <> ALL ('{a,b}'::name[]))") == ["a", "b"]
    assert text("((USER = 'a'::name) AND ((CURRENT_USER)::text = 'b'::text))") == ["a", "b"]
    assert text("((CURRENT_USER)::character varying = 'c'::character varying)") == ["c"]
    # not a role: a column compared with the session's role, quoted identifiers, subqueries
    assert text("(owner = CURRENT_USER)") == []
    assert text("((\"user\" = 'bob'::text) AND (\"CURRENT_USER\" = 'x'::text))") == []
    assert text("pg_has_role(SESSION_USER, ( SELECT 'r'::name AS name), 'member'::text)") == []


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


# ---- the package version and the schema's migration level ---------------------------------


def shipped_migrations() -> list[str]:
    folder = REPO / "python" / "datatable_roles" / "sql" / "migrations"
    return sorted(p.stem for p in folder.glob("[0-9][0-9][0-9][0-9]_*.sql"))


def version_line(out: str) -> str:
    first = out.splitlines()[0]
    assert first.startswith(f"datatable-roles {__version__} (schema {shipped_migrations()[-1]}); ")
    return first


def test_status_shows_the_package_version_and_the_databases_migration_level(env, capsys):
    dsn = env.meta.owner_conninfo
    newest = shipped_migrations()[-1]
    code, out, _ = run(capsys, "--dsn", dsn, "status")
    assert code == 0
    assert version_line(out).endswith(f"; this database is at {newest}")
    assert out.splitlines()[1].startswith("Instance ")  # the rest as before
    code, data, _ = run_json(capsys, "--dsn", dsn, "--json", "status")
    assert code == 0 and data["version"] == {
        "package_version": __version__, "package_schema": newest, "installed_schema": newest,
        "state": "current", "pending": [], "unknown": []}
    assert data["datatables"] and "instance_id" in data  # status_report's keys unchanged


def test_status_of_an_install_behind_the_package_says_to_migrate_until_it_is_done(
        cluster, scratch, tmp_path, capsys):
    """An install of a landed state of main (d0e8378, issues 12-13, at 0014) read by this
    package: status says it is behind and which migrations are pending, then migrate, then
    status says it is current."""
    from test_migrations import LANDED
    from test_upgrade import install_release

    commit = LANDED[3]
    assert commit.startswith("d0e8378")
    dbname = "dtr_behind_" + uuid.uuid4().hex[:8]
    scratch.databases.append(dbname)
    applied = install_release(cluster, dbname, commit, tmp_path)
    assert applied[-1] == "0014_speed"
    dsn = cluster.owner_conninfo(dbname)
    pending = shipped_migrations()[shipped_migrations().index("0014_speed") + 1:]
    assert pending
    code, out, _ = run(capsys, "--dsn", dsn, "status")
    assert code == 0
    assert version_line(out).endswith(
        "; this database is at 0014_speed, behind the package: run datatable-roles migrate "
        f"(pending: {', '.join(pending)})")
    code, data, _ = run_json(capsys, "--dsn", dsn, "--json", "status")
    assert code == 0 and data["version"]["state"] == "behind"
    assert (data["version"]["installed_schema"], data["version"]["pending"]) == (
        "0014_speed", pending)
    cluster.psql_file(cluster_bootstrap(), dbname, owner=cluster.owner)  # as for an upgrade
    code, data, _ = run_json(capsys, "--dsn", dsn, "--json", "migrate")
    assert code == 0 and data["applied"] == pending
    code, out, _ = run(capsys, "--dsn", dsn, "status")
    assert code == 0
    assert version_line(out).endswith(f"; this database is at {pending[-1]}")


def test_status_of_an_install_ahead_of_the_package_says_to_upgrade_the_package(env, capsys):
    """A newer release migrated the database (its migration is in yoyo's table, not in this
    package): status says so, and that the package needs the upgrade, not the database."""
    newer = "9999_from_a_newer_release"
    sql_exec(env.meta.owner_conninfo,
             sql.SQL("INSERT INTO public._yoyo_migration (migration_hash, migration_id,"
                     " applied_at_utc) VALUES ({}, {}, now())").format(
                 sql.Literal(uuid.uuid4().hex), sql.Literal(newer)))
    code, out, _ = run(capsys, "--dsn", env.meta.owner_conninfo, "status")
    assert code == 0
    assert version_line(out).endswith(
        f"; this database is at {newer}, ahead of the package (migrations of a newer "
        f"release: {newer}): upgrade the package (pip install -U datatable-roles)")
    code, data, _ = run_json(capsys, "--dsn", env.meta.owner_conninfo, "--json", "status")
    assert data["version"]["state"] == "ahead" and data["version"]["unknown"] == [newer]
