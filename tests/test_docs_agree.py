"""Docs that cannot drift (issue 22): the lists an operator reads, derived from the installed
schema and the code, against every page and message that repeats them. Who may call what
(the worker's calls, the operator functions, each caller kind's entry points as
datatable_roles.entry_point records them), the fields of the sweep's and status's reports,
and a Client method for every public call."""

from __future__ import annotations

import inspect
import re
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from support import drop_role

from datatable_roles import cli, client, errors

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
SQL_API = (DOCS / "sql-api.md").read_text()
CALLERS = ("worker", "directory", "acl", "owner")
NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def public_functions(conn, owner: str) -> set[str]:
    return {name for (name,) in conn.execute(
        "SELECT p.proname FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace"
        " WHERE n.nspname = 'public' AND p.proowner = %s::regrole", [owner])}


def operator_functions() -> list[str]:
    """The owner's calls in schema datatable_roles: sql-api.md's `datatable_roles.x` headings."""
    return re.findall(r"^### `datatable_roles\.([a-z_]+)`", SQL_API, re.M)


@pytest.fixture(scope="module")
def installed(cluster, meta_db_module):
    """(public functions, the worker's calls) of an installed metadata database, the worker's
    read from what grant_worker grants."""
    meta = meta_db_module
    with psycopg.connect(meta.owner_conninfo, autocommit=True) as conn:
        public = public_functions(conn, cluster.owner)
        worker = granted(conn, cluster.owner, cluster.worker)
    return public, worker


def granted(conn, owner: str, role: str) -> set[str]:
    """The owner's functions in schema public that role may execute."""
    return {name for (name,) in conn.execute(
        "SELECT p.proname FROM pg_proc AS p JOIN pg_namespace AS n"
        " ON n.oid = p.pronamespace WHERE n.nspname = 'public'"
        " AND p.proowner = %s::regrole AND has_function_privilege(%s, p.oid, 'EXECUTE')",
        [owner, role])}


def call_name(signature: str) -> str:
    """'public.x(uuid,text)' -> 'x'; 'datatable_roles.x()' -> 'datatable_roles.x'."""
    return signature.split("(")[0].removeprefix("public.")


@pytest.fixture(scope="module")
def entry_points(meta_db_module) -> dict[str, set[str]]:
    """datatable_roles.entry_point of an installed database: caller kind -> call names."""
    with psycopg.connect(meta_db_module.owner_conninfo, autocommit=True) as conn:
        rows = conn.execute("SELECT signature, caller FROM datatable_roles.entry_point").fetchall()
    calls: dict[str, set[str]] = {kind: set() for kind in CALLERS}
    for signature, caller in rows:
        calls[caller].add(call_name(signature))
    return calls


def documented_callers() -> dict[str, set[str]]:
    """sql-api.md's table of who may call what: caller kind -> the calls of its last column."""
    rows = dict(re.findall(rf"^\| ({'|'.join(CALLERS)}) \|.*\| ([^|]*) \|$", SQL_API, re.M))
    return {kind: set(re.findall(r"`((?:datatable_roles\.)?[a-z_]+)`", cells))
            for kind, cells in rows.items()}


@pytest.fixture(scope="module")
def meta_db_module(cluster):
    from support import Scratch
    s = Scratch(cluster)
    try:
        yield s.meta_db()
    finally:
        s.clean()


def names_in(text: str, among: set[str]) -> set[str]:
    return {n for n in among if re.search(rf"(?<![\w.]){n}(?!\w)", text)}


def paragraph(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i:text.index(end, i + len(start))]


def test_the_worker_calls_are_the_same_everywhere(installed):
    public, worker = installed
    assert {"resolve_datatable_role", "record_job_start"} <= worker < public
    readme = (REPO / "README.md").read_text()
    places = {
        "README.md": paragraph(readme, "The worker role needs only what `grant_worker`",
                               "It cannot read"),
        "docs/operating.md": paragraph((DOCS / "operating.md").read_text(), "| worker role |",
                                       "\n"),
        "docs/trust.md": paragraph((DOCS / "trust.md").read_text(),
                                   "The worker role executes", "and nothing else"),
        "docs/sql-api.md": paragraph(SQL_API, "| worker |", "\n"),
        "errors.OWNER_HINT": errors.OWNER_HINT,
        "client.Client.grant_worker": inspect.getdoc(client.Client.grant_worker) or "",
    }
    wrong = {where: sorted(names_in(text, public) ^ worker) for where, text in places.items()
             if names_in(text, public) != worker}
    assert not wrong, f"these places list other worker calls than grant_worker gives: {wrong}"


def test_entry_point_is_what_the_grants_give_and_the_docs_list(cluster, meta_db_module,
                                                              entry_points):
    """Each caller kind's rows are sql-api.md's row for it, and grant_calls gives a role
    exactly the rows of its kind (the worker's, and a directory writer and ACL editor made
    here)."""
    assert documented_callers() == entry_points
    assert {"resolve_datatable_role", "record_job_start"} <= entry_points["worker"]
    with psycopg.connect(meta_db_module.owner_conninfo, autocommit=True) as conn:
        assert granted(conn, cluster.owner, cluster.worker) == entry_points["worker"]
        for kind, grant in (("directory", "grant_directory_writer"), ("acl", "grant_acl_editor")):
            role = f"dtr_test_{kind}_{uuid.uuid4().hex[:8]}"
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
            try:
                conn.execute(f"SELECT datatable_roles.{grant}(%s)", [role])
                assert granted(conn, cluster.owner, role) == entry_points[kind], kind
            finally:
                drop_role(cluster, role)


def test_grant_calls_refuses_a_kind_with_no_recorded_calls(cluster, meta_db_module):
    """Before the api files have recorded a kind's calls, grant_calls says so (55000) rather
    than grant nothing or fail on a malformed GRANT."""
    with psycopg.connect(meta_db_module.owner_conninfo) as conn:
        conn.execute("DELETE FROM datatable_roles.entry_point WHERE caller = 'acl'")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState,
                           match="no acl calls are recorded"):
            conn.execute("SELECT datatable_roles.grant_acl_editor(%s)", [cluster.worker])
        conn.rollback()


def test_every_public_function_is_one_entry_point(cluster, meta_db_module):
    """Every function the owner owns in schema public, and every operator function sql-api.md
    documents in schema datatable_roles, has exactly one row, and every row is one of them."""
    with psycopg.connect(meta_db_module.owner_conninfo, autocommit=True) as conn:
        public = {oid for (oid,) in conn.execute(
            "SELECT p.oid FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'public' AND p.proowner = %s::regrole", [cluster.owner])}
        operators = {oid for (oid,) in conn.execute(
            "SELECT p.oid FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'datatable_roles' AND p.proname = ANY(%s)",
            [operator_functions()])}
        rows = [oid for (oid,) in conn.execute(
            "SELECT e.signature::regprocedure::oid FROM datatable_roles.entry_point AS e")]
    assert len(operators) == len(operator_functions())
    assert len(rows) == len(set(rows)), "a function has more than one entry_point row"
    missing = (public | operators) - set(rows)
    assert not missing, f"functions without an entry_point row: {missing}"
    assert set(rows) <= public | operators


def test_sql_api_counts_the_operator_functions():
    found = operator_functions()
    assert "grant_worker" in found and "status_report" in found
    assert f"the {NUMBERS[len(found)]} operator functions" in " ".join(SQL_API.split())


def test_every_public_call_has_a_client_method_and_the_cli_goes_through_it(installed):
    public, _ = installed
    source = inspect.getsource(client.Client)
    calls = public | set(operator_functions())
    missing = sorted(n for n in calls if not re.search(rf"(?<![\w]){n}\(", source))
    assert not missing, f"Client has no method calling {missing}"
    cli_source = inspect.getsource(cli)
    direct = sorted(n for n in calls if re.search(rf"SELECT[^\"]*(?<![\w]){n}\(", cli_source))
    assert not direct, f"cli.py calls {direct} itself instead of through the Client"


def test_the_sweep_report_fields_are_documented(cluster, meta_db_module):
    with psycopg.connect(meta_db_module.owner_conninfo, autocommit=True) as conn:
        report = conn.execute("CALL sweep_unused_role_set_logins(NULL)").fetchone()[0]
    fields = set(report)
    assert {"examined", "dropped"} <= fields
    monitor = paragraph((DOCS / "operating.md").read_text(), "It returns a report:",
                        "lifecycle.md")
    for where, text in {"docs/operating.md": monitor,
                        "docs/sql-api.md": paragraph(SQL_API, "### `sweep_unused_role_set_logins`",
                                                     "\n### "),
                        "docs/lifecycle.md": (DOCS / "lifecycle.md").read_text()}.items():
        missing = sorted(f for f in fields if f'"{f}"' not in text and f"`{f}`" not in text)
        assert not missing, f"{where} does not name the sweep report's {missing}"


def test_the_status_report_fields_are_documented(meta_db_module):
    with psycopg.connect(meta_db_module.owner_conninfo, autocommit=True) as conn:
        report = conn.execute("SELECT datatable_roles.status_report()").fetchone()[0]
    section = paragraph(SQL_API, "### `datatable_roles.status_report`", "\n### ")
    missing = sorted(f for f in report if f"`{f}`" not in section and f not in section)
    assert not missing, f"sql-api.md's status_report does not name {missing}"
