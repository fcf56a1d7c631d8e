"""`datatable-roles acl show|plan|apply` in-process (cli.main([...]) with --dsn to the metadata
database as the package owner), against real data table databases: the text and --json of
each, apply with --yes, the confirmation on a terminal (a fake one), the refusal without one,
a plan changed between the plan shown and the apply, and bad input that changes nothing.
The SQL behind them is test_acl.py's."""

from __future__ import annotations

import io
import json

import pytest
from psycopg import sql

from datatable_roles import cli
from support import ACME, DT, WS, connect, job_session


@pytest.fixture
def w(make_world):
    """ACME with no default role: alice (emea) and bob (us) resolve to their roles' one-role
    logins; carol to the set login of both."""
    world = make_world(**{**ACME, "default": None})
    for viewer in ("alice", "bob", "carol"):
        world.jobs[viewer] = world.job(viewer)
    return world


class Terminal(io.StringIO):
    """stdin as a terminal: the answers given, one a line; ``before_answer`` runs when the
    command reads the first answer (after it showed the plan)."""

    def __init__(self, answers: str, before_answer=None):
        super().__init__(answers)
        self.before_answer = before_answer

    def isatty(self) -> bool:
        return True

    def readline(self, *args) -> str:
        if self.before_answer is not None:
            self.before_answer()
            self.before_answer = None
        return super().readline(*args)


def run(capsys, w, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["--dsn", w.meta.owner_conninfo, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, w, *argv: str):
    code, out, err = run(capsys, w, "--json", *argv)
    return code, json.loads(out), err


def as_admin(w, *statements: str) -> None:
    """Statements in the data table's database as its admin login (as a migration would)."""
    with connect(w.login_conninfo(w.admin_login, w.admin_password)) as conn:
        for s in statements:
            conn.execute(s)


def sql_plan(w, target, change) -> dict:
    return w.call("SELECT plan_datatable_acl(%s, %s, %s, %s)",
                  [WS, DT, json.dumps(target), json.dumps(change)])[0][0]


def audit_rows(w) -> int:
    return w.call("SELECT count(*) FROM datatable_roles.acl_change")[0][0]


def acl_state(w):
    """Every ACL and owner of the data table's database, and its default ACLs."""
    return w.su(w.dbname).execute("""
        SELECT (SELECT array_agg(n.nspname || ':' || n.nspowner::regrole || ':'
                    || coalesce(n.nspacl::text, '') ORDER BY n.nspname) FROM pg_namespace AS n),
               (SELECT array_agg(c.oid::regclass || ':' || c.relowner::regrole || ':'
                    || coalesce(c.relacl::text, '') ORDER BY c.oid::regclass::text)
                FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
                WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'),
               (SELECT array_agg(a.defaclacl::text ORDER BY a.oid) FROM pg_default_acl AS a),
               (SELECT datacl::text FROM pg_database WHERE datname = current_database())
    """).fetchone()


def ids_seen(w, viewer: str, table: str) -> list[int] | str:
    """The ids ``viewer``'s job reads from ``table``, logged in as the login it resolves to
    (a one-role login acting as its role); the error's message when it may not."""
    r = w.resolve(viewer)
    with job_session(w, r) as conn:
        try:
            return [x for (x,) in conn.execute(sql.SQL("SELECT id FROM {} ORDER BY id").format(
                sql.Identifier(*table.split("."))))]
        except Exception as e:  # noqa: BLE001 - the refusal is the answer
            return str(e).splitlines()[0]


REPORTS = ("CREATE TABLE reports (id integer PRIMARY KEY)", "INSERT INTO reports VALUES (1), (2)")


# ---- show ---------------------------------------------------------------------------------

def test_show_a_table_a_schema_and_the_database(w, capsys):
    code, out, err = run(capsys, w, "acl", "show", WS, DT, "--schema", "public",
                         "--table", "orders")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"Data table {WS}/{DT} (database {w.dbname}): table public.orders"
    assert "  owner: admin" in lines and "  row-level security: enabled" in lines
    grant = next(ln.split() for ln in lines if ln.strip().startswith(w.emea))
    assert grant[:3] == [w.emea, "catalog", "SELECT"]
    assert "Default privileges" not in out  # a table has none of its own

    code, data, _ = run_json(capsys, w, "acl", "show", WS, DT, "--schema", "public",
                             "--table", "orders")
    assert code == 0
    same = w.call("SELECT datatable_acl(%s, %s, %s)",
                  [WS, DT, json.dumps({"schema": "public", "table": "orders"})])[0][0]
    assert data == same and data["kind"] == "table" and data["row_security"] is True

    as_admin(w, *REPORTS, f'ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES'
                          f' TO "{w.us}"')
    code, out, _ = run(capsys, w, "acl", "show", WS, DT, "--schema", "public")
    assert code == 0 and "schema public" in out.splitlines()[0]
    relations = out[out.index("Relations"):]
    assert "orders" in relations and "reports" in relations
    defaults = out[out.index("Default privileges"):out.index("Relations")]
    assert [w.us, "SELECT"] == defaults.split("\n")[3].split()[2:]

    code, out, _ = run(capsys, w, "acl", "show", WS, DT, "--database")
    assert code == 0 and out.splitlines()[0].endswith(": the database")
    assert "Schemas" in out and "public" in out[out.index("Schemas"):]
    # --target is the SQL's JSON, as is
    code, data, _ = run_json(capsys, w, "acl", "show", WS, DT, "--target", '{"database": true}')
    assert code == 0 and data["kind"] == "database" and data["owner"] == "admin"


# ---- plan ---------------------------------------------------------------------------------

def test_plan_prints_numbered_statements_then_warnings_and_changes_nothing(w, capsys):
    as_admin(w, *REPORTS)
    before = acl_state(w)
    code, out, err = run(capsys, w, "acl", "plan", WS, DT, "--schema", "public",
                         "--table", "reports", "--grant", "select", "--to", w.emea)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == (f"Plan for data table {WS}/{DT}, relation public.reports: "
                        f"grant SELECT to {w.emea}")
    assert lines[1:3] == ["Statements (1):",
                          f"  1. GRANT SELECT ON TABLE public.reports TO {w.emea}"
                          f"  -- as {w.admin_login}"]
    assert lines[3].startswith("  (-- as ROLE: the statement runs as the object's owner")
    assert lines[4] == "Warnings (1):" and lines[5].startswith("  - rls_disabled: ")
    assert acl_state(w) == before and audit_rows(w) == 0

    # --json is plan_datatable_acl's result, and the JSON form of the change plans the same
    target, change = {"schema": "public", "table": "reports"}, {"grant": ["select"], "to": w.emea}
    code, data, _ = run_json(capsys, w, "acl", "plan", WS, DT, "--schema", "public",
                             "--table", "reports", "--grant", "select", "--to", w.emea)
    assert code == 0 and data == sql_plan(w, target, change)
    code, raw, _ = run_json(capsys, w, "acl", "plan", WS, DT, "--target", json.dumps(target),
                            "--change", json.dumps(change))
    assert code == 0 and raw == data


def test_plan_of_all_and_future_tables_and_an_owner(w, capsys):
    as_admin(w, "CREATE SCHEMA sales", "CREATE TABLE sales.a (id integer)",
             "CREATE TABLE sales.b (id integer)",
             f'ALTER DEFAULT PRIVILEGES IN SCHEMA sales GRANT SELECT ON TABLES TO "{w.us}"')
    code, data, _ = run_json(capsys, w, "acl", "plan", WS, DT, "--schema", "sales",
                             "--grant", "SELECT", "--to", w.us, "--on", "all-tables")
    assert code == 0 and data["statements"] == [
        f"GRANT SELECT ON TABLE sales.a, sales.b TO {w.us}"]
    code, out, _ = run(capsys, w, "acl", "plan", WS, DT, "--schema", "sales", "--revoke",
                       "SELECT, INSERT", "--from", w.us, "--on", "future tables",
                       "--for", "admin")
    assert code == 0
    assert out.splitlines()[0].endswith(f"revoke SELECT, INSERT from {w.us} on future tables"
                                        " (created by admin)")
    assert (f"  1. ALTER DEFAULT PRIVILEGES FOR ROLE {w.admin_login} IN SCHEMA sales REVOKE"
            f" SELECT, INSERT ON TABLES FROM {w.us}") in out
    assert "  - default_privileges: " in out
    code, out, _ = run(capsys, w, "acl", "plan", WS, DT, "--schema", "sales", "--owner", "admin")
    assert code == 0 and "Statements: none (nothing to do)" in out
    assert "  - nothing_to_do: " in out


# ---- apply --------------------------------------------------------------------------------

def test_apply_yes_applies_the_plan_shown_and_a_viewer_of_the_role_reads_the_rows(w, capsys):
    as_admin(w, *REPORTS)
    assert ids_seen(w, "alice", "public.reports").startswith("permission denied")
    code, out, err = run(capsys, w, "acl", "apply", WS, DT, "--schema", "public",
                         "--table", "reports", "--grant", "SELECT", "--to", w.emea, "--yes")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1:3] == ["Statements (1):",
                          f"  1. GRANT SELECT ON TABLE public.reports TO {w.emea}"
                          f"  -- as {w.admin_login}"]
    assert "  - rls_disabled: " in out
    (audit_id, statements), = w.call(
        "SELECT id, statements FROM datatable_roles.acl_change")
    assert statements == [f"GRANT SELECT ON TABLE public.reports TO {w.emea}"]
    assert lines[-1] == (f"Applied 1 statement(s) in one transaction; audit row {audit_id} of"
                         " datatable_roles.acl_change.")
    assert ids_seen(w, "alice", "public.reports") == [1, 2]
    assert ids_seen(w, "carol", "public.reports") == [1, 2]   # the set login of emea and us
    assert ids_seen(w, "bob", "public.reports").startswith("permission denied")

    # --json --yes: stdout is apply_datatable_acl's result alone
    code, data, err = run_json(capsys, w, "acl", "apply", WS, DT, "--schema", "public",
                               "--table", "reports", "--revoke", "SELECT", "--from", w.emea,
                               "--yes")
    assert (code, err) == (0, "")
    assert data["applied"] == 1 and data["audit_id"] > audit_id
    assert data["statements"] == [f"REVOKE SELECT ON TABLE public.reports FROM {w.emea}"]
    assert ids_seen(w, "alice", "public.reports").startswith("permission denied")

    # an empty plan (admin owns reports already) asks nothing, applies and records nothing
    code, out, _ = run(capsys, w, "acl", "apply", WS, DT, "--schema", "public", "--table",
                       "reports", "--owner", "admin")
    assert code == 0
    assert out.rstrip().endswith("Nothing to do: nothing applied, no audit row written.")
    assert audit_rows(w) == 2


def test_apply_without_a_terminal_or_yes_refuses_and_changes_nothing(w, capsys, monkeypatch):
    as_admin(w, *REPORTS)
    before = acl_state(w)
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))   # piped: not a terminal
    code, out, err = run(capsys, w, "acl", "apply", WS, DT, "--schema", "public",
                         "--table", "reports", "--grant", "SELECT", "--to", w.emea)
    assert code == 1
    assert f"  1. GRANT SELECT ON TABLE public.reports TO {w.emea}" in out  # shown, not applied
    assert err.startswith("error: DatatableRolesError: nothing applied: applying needs a "
                          "confirmation, and stdin is not a terminal")
    assert "run the same command with --yes" in err
    assert acl_state(w) == before and audit_rows(w) == 0
    code, data, _ = run_json(capsys, w, "acl", "apply", WS, DT, "--schema", "public",
                             "--table", "reports", "--grant", "SELECT", "--to", w.emea)
    assert code == 1 and "stdin is not a terminal" in data["error"]["message"]
    assert acl_state(w) == before


def test_apply_asks_on_a_terminal(w, capsys, monkeypatch):
    as_admin(w, *REPORTS)
    before = acl_state(w)
    args = ("acl", "apply", WS, DT, "--schema", "public", "--table", "reports", "--grant",
            "SELECT", "--to", w.emea)
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    code, out, err = run(capsys, w, *args)
    assert code == cli.EXIT_NO == 3
    assert err == f"Apply these 1 statement(s) to data table {WS}/{DT}? [y/N] "
    assert out.rstrip().endswith("Not applied (answered no).")
    assert acl_state(w) == before and audit_rows(w) == 0

    monkeypatch.setattr("sys.stdin", Terminal(""))   # end of input: no
    assert run(capsys, w, *args)[0] == 3 and audit_rows(w) == 0

    # --json: the plan and the question on stderr, the result alone on stdout
    monkeypatch.setattr("sys.stdin", Terminal("yes\n"))
    code, out, err = run(capsys, w, "--json", *args)
    assert code == 0 and json.loads(out)["applied"] == 1
    assert f"  1. GRANT SELECT ON TABLE public.reports TO {w.emea}" in err
    assert err.endswith("? [y/N] ")
    assert ids_seen(w, "alice", "public.reports") == [1, 2]


def test_apply_refuses_a_plan_that_changed_after_it_was_shown(w, capsys, monkeypatch):
    """A table created while the operator reads the plan: the apply plans again, finds one
    more statement target, and applies nothing (55000 plan_changed)."""
    as_admin(w, "CREATE TABLE one (id integer)")
    before = {}

    def meanwhile():
        as_admin(w, "CREATE TABLE two (id integer)")
        before["state"] = acl_state(w)

    monkeypatch.setattr("sys.stdin", Terminal("y\n", before_answer=meanwhile))
    code, out, err = run(capsys, w, "acl", "apply", WS, DT, "--schema", "public", "--grant",
                         "SELECT", "--to", w.emea, "--on", "all-tables")
    assert code == 1
    # (orders is emea's already: only what it lacks is planned)
    assert f"  1. GRANT SELECT ON TABLE public.one TO {w.emea}" in out
    assert "error: WrongState (55000): the plan changed since it was shown: nothing applied" in err
    assert "detail: 1 statements were shown, 1 are planned now; they differ from statement 1" \
        in err
    assert "hint: Plan again" in err
    assert acl_state(w) == before["state"] and audit_rows(w) == 0
    assert ids_seen(w, "alice", "public.one").startswith("permission denied")


# ---- bad input ----------------------------------------------------------------------------

def test_a_bad_role_or_privilege_is_a_clear_error_and_changes_nothing(w, capsys):
    as_admin(w, *REPORTS)
    before = acl_state(w)
    table = ("--schema", "public", "--table", "reports")
    for command in (("acl", "plan"), ("acl", "apply", "--yes")):
        code, out, err = run(capsys, w, *command, WS, DT, *table, "--grant", "SELECT",
                             "--to", "no_such_role")
        assert code == 1 and out == ""
        assert err.startswith("error: UnknownObject (P0002): ") and "no_such_role" in err
    # no near name: no empty suggestion ("Did you mean ?"), just the way to add one
    code, _, err = run(capsys, w, "acl", "plan", WS, DT, *table, "--grant", "SELECT",
                       "--to", "finance")
    assert code == 1 and "Did you mean" not in err and "set_datatable_role_tenants" in err
    code, data, _ = run_json(capsys, w, "acl", "apply", WS, DT, *table, "--grant", "SELECT",
                             "--to", "PUBLIC", "--yes")
    assert code == 1 and data["error"]["class"] == "InvalidInput"
    assert data["error"]["sqlstate"] == "22023"
    code, _, err = run(capsys, w, "acl", "plan", WS, DT, *table, "--grant", "EXECUTE",
                       "--to", w.emea)
    assert code == 1 and "error: InvalidInput (22023)" in err and "hint: " in err
    assert "SELECT" in err[err.index("hint: "):]   # the valid ones
    code, _, err = run(capsys, w, "acl", "show", WS, DT, "--schema", "no_such_schema")
    assert code == 1 and "UnknownObject (P0002)" in err
    code, _, err = run(capsys, w, "acl", "show", WS, "no_such_datatable", "--database")
    assert code == 1 and "UnknownObject (P0002)" in err
    assert acl_state(w) == before and audit_rows(w) == 0


def test_apply_of_what_holds_already_says_nothing_to_do_and_records_nothing(w, capsys,
                                                                            monkeypatch):
    """SELECT on orders is the emea role's already: the plan is empty and says so, apply
    asks nothing (even without a terminal), runs nothing and writes no audit row."""
    before = acl_state(w)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))   # not a terminal, and no --yes
    args = ("acl", "apply", WS, DT, "--schema", "public", "--table", "orders", "--grant",
            "SELECT", "--to", w.emea)
    code, out, err = run(capsys, w, *args)
    assert (code, err) == (0, "")
    assert "Statements: none (nothing to do)" in out
    assert f"  - nothing_to_do: {w.emea} holds SELECT already" in out
    assert out.rstrip().endswith("Nothing to do: nothing applied, no audit row written.")
    code, data, _ = run_json(capsys, w, *args)
    assert code == 0 and data["nothing_to_do"] is True
    assert (data["statements"], data["applied"], data["audit_id"]) == ([], 0, None)
    code, out, _ = run(capsys, w, "acl", "plan", WS, DT, "--schema", "public", "--table",
                       "orders", "--revoke", "INSERT", "--from", w.emea)
    assert code == 0 and "Statements: none (nothing to do)" in out
    assert f"  - nothing_to_do: {w.emea} holds none of INSERT" in out
    assert acl_state(w) == before and audit_rows(w) == 0


def test_plan_shows_the_role_each_statement_runs_as(w, capsys):
    as_admin(w, *REPORTS, "CREATE SCHEMA mixed", "CREATE TABLE mixed.a (id integer)",
             "CREATE TABLE mixed.b (id integer)", f'GRANT USAGE ON SCHEMA mixed TO "{w.emea}"')
    w.su(w.dbname).execute(f'ALTER TABLE mixed.b OWNER TO "{w.emea}"')
    code, out, _ = run(capsys, w, "acl", "plan", WS, DT, "--schema", "mixed", "--grant",
                       "SELECT", "--to", w.us, "--on", "all-tables")
    assert code == 0
    assert f"  1. GRANT SELECT ON TABLE mixed.a TO {w.us}  -- as {w.admin_login}" in out
    assert f"  2. GRANT SELECT ON TABLE mixed.b TO {w.us}  -- as {w.emea}" in out
    assert "runs as the object's owner" in out
    # ALTER DEFAULT PRIVILEGES and ALTER ... OWNER TO run as the link login: no "-- as"
    for change in (("--grant", "SELECT", "--to", w.us, "--on", "future-tables"),
                   ("--table", "b", "--owner", "admin")):
        code, out, _ = run(capsys, w, "acl", "plan", WS, DT, "--schema", "mixed", *change)
        assert code == 0 and "  1. " in out and "-- as" not in out, out


def test_show_of_schema_public_and_unknown_names(w, capsys):
    code, out, _ = run(capsys, w, "acl", "show", WS, DT, "--schema", "public")
    assert code == 0
    assert ("  owner: admin (owned by pg_database_owner, which is the database's owner:"
            " the admin login)") in out.splitlines()
    assert "pg_database_owner  " not in out   # no grant row of its own: it is admin
    code, _, err = run(capsys, w, "acl", "show", WS, DT, "--schema", "public", "--table",
                       "nope")
    assert code == 1 and "UnknownObject (P0002)" in err
    assert (f"hint: datatable-roles acl show {WS} {DT} --schema public (SQL: datatable_acl("
            f"'{WS}', '{DT}', '{{\"schema\": \"public\"}}')) lists its tables.") in err
    code, _, err = run(capsys, w, "acl", "plan", WS, DT, "--schema", "it's", "--grant",
                       "USAGE", "--to", w.us)
    assert code == 1
    assert f"hint: datatable-roles acl show {WS} {DT} --database (SQL: datatable_acl(" in err


def test_show_names_pg_hba_when_the_admin_login_is_refused(w, capsys):
    from test_acl import hba_rejecting
    with hba_rejecting(w, w.admin_login):
        code, _, err = run(capsys, w, "acl", "show", WS, DT, "--database")
    assert code == 1
    assert f"as its admin login '{w.admin_login}'" in err
    assert "detail: " in err and "pg_hba.conf rejects connection" in err
    assert "hint: " in err and "scram-sha-256" in err and "docs/operating.md" in err
    assert w.admin_password not in err


@pytest.mark.parametrize("argv, message", [
    (("plan", WS, DT, "--schema", "s", "--grant", "SELECT"), "--grant needs --to ROLE"),
    (("plan", WS, DT, "--schema", "s", "--revoke", "SELECT", "--to", "r"),
     "--to: --revoke names its role with --from"),
    (("plan", WS, DT, "--database", "--table", "t", "--owner", "r"), "--table needs --schema"),
    (("plan", WS, DT, "--schema", "s", "--owner", "r", "--on", "all-tables"),
     "--on: only with --grant or --revoke"),
    (("plan", WS, DT, "--schema", "s", "--grant", "SELECT", "--to", "r", "--for", "admin"),
     "--for: only with --on future-..."),
    (("plan", WS, DT, "--schema", "s", "--grant", "SELECT", "--to", "r", "--on", "all"),
     "invalid --on 'all'"),
    (("plan", WS, DT, "--schema", "s", "--change", "{"), "not JSON"),
    (("plan", WS, DT, "--schema", "s"), "one of the arguments --grant --revoke --owner"),
    (("show", WS, DT), "one of the arguments --database --schema --target"),
    (("show", WS, DT, "--database", "--schema", "s"), "not allowed with argument"),
    ((), "ACL_COMMAND"),
])
def test_usage_errors(capsys, argv, message):
    code = cli.main(["acl", *argv])
    _, err = capsys.readouterr()
    assert code == 2 and message in err, err


def test_help(capsys):
    assert cli.main(["--help"]) == 0
    assert "acl" in capsys.readouterr().out
    for command in ("show", "plan", "apply"):
        assert cli.main(["acl", command, "--help"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: datatable-roles acl {command}") and "--json" in out
        assert "--schema S [--table T]" in out and "exit codes:" in out
        assert ("--yes" in out) == (command == "apply")
