"""``policies`` (per data table database): policies naming, as text, a role that does not
exist, read through the link login (on another server: as a data table's admin login there,
against the roles there)."""

from __future__ import annotations

import psycopg

from ..policy_lint import policy_findings
from .context import _Context
from .quoting import LIST_LIMIT, _error_text, _ident
from .report import Check


# ---- policies ---------------------------------------------------------------------------

POLICIES_SQL = (
    "SELECT t.* FROM datatable_roles.link_credential AS c,"
    " LATERAL datatable_roles_dblink.dblink("
    "  datatable_roles.conninfo_for(%s, c.login, c.password),"
    "  'SELECT schemaname::text, tablename::text, policyname::text, cmd, qual, with_check"
    "   FROM pg_catalog.pg_policies ORDER BY 1, 2, 3')"
    " AS t (schemaname text, tablename text, policyname text, cmd text, qual text,"
    "       with_check text)")


# On another server, as the admin login of one of the database's data tables, in a session
# whose options pin its search_path (the admin login is handed to jobs).
FAR_POLICIES_SQL = (
    "SELECT t.* FROM (SELECT d.* FROM datatable_roles.datatable AS d"
    "  WHERE d.server = %s AND d.dbname = %s ORDER BY d.workspace, d.name LIMIT 1) AS d,"
    " LATERAL datatable_roles_dblink.dblink("
    "  datatable_roles.server_conninfo(d.server, d.dbname, d.admin_login, d.admin_password)"
    "  || ' options=' || datatable_roles.conninfo_value(datatable_roles.server_session_options()),"
    "  'SELECT schemaname::text, tablename::text, policyname::text, cmd, qual, with_check"
    "   FROM pg_catalog.pg_policies ORDER BY 1, 2, 3')"
    " AS t (schemaname text, tablename text, policyname text, cmd text, qual text,"
    "       with_check text)")


def check_policies(ctx: _Context) -> list[Check]:
    if not ctx.datatables and not ctx.far:
        return [Check("policies", True, "no data table registered yet")]
    places = []  # (subject, where in a fix, statement, parameters, the roles there)
    if ctx.databases:
        existing = {r[0] for r in ctx.rows("SELECT rolname::text FROM pg_roles")}
        places += [(db, f"database {db}", POLICIES_SQL, [db], existing) for db in ctx.databases]
    for server, far in ctx.far.items():
        places += [(f"{server}/{db}", f"database {db} on server {server}", FAR_POLICIES_SQL,
                    [server, db], set(far["roles"]))
                   for db in sorted({d["dbname"] for d in ctx.far_datatables
                                     if d.get("server") == server})]
    return [_policies_in(ctx, *place) for place in places]


def _policies_in(ctx: _Context, subject: str, where: str, query: str, params: list,
                 existing: set[str]) -> Check:
    dbname = params[-1]
    if query is POLICIES_SQL and not ctx.reachable.get(dbname):
        return Check("policies", True, "not checked: the link login cannot reach it (see "
                     "datatable_link)", subject=subject, skipped=True)
    try:
        rows = ctx.rows(query, params)
    except psycopg.Error as e:
        return Check("policies", False, f"could not read policies: {_error_text(e)}",
                     "See datatable_link (on another server: admin_password and servers).",
                     subject=subject)
    findings, hazards = policy_findings(dbname, rows, existing)
    if not findings:
        note = (f"; {len(hazards)} clause(s) name an existing role as text, which a rename "
                "would break (lint-policies lists them)") if hazards else ""
        return Check("policies", True, f"{len(rows)} policies, none names a missing role{note}",
                     subject=subject)
    detail = "; ".join(f"policy {f['policy']} on {f['table']} ({f['clause']}) names missing "
                       f"role {f['role']}" for f in findings[:LIST_LIMIT])
    if len(findings) > LIST_LIMIT:
        detail += f"; and {len(findings) - LIST_LIMIT} more"
    fixes = [f"In {where}, as its admin login, recreate each such policy naming an existing "
             "role, or drop it (a rename leaves the old name in the text: docs/policies.md):"]
    for f in dict.fromkeys((f["policy"], f["table"]) for f in findings):
        schema, table = f[1].split(".", 1)
        fixes.append(f"DROP POLICY {_ident(f[0])} ON {_ident(schema)}.{_ident(table)};"
                     " -- then CREATE POLICY ... naming an existing role")
    return Check("policies", False, detail + " (queries it applies to fail)", "\n".join(fixes),
                 subject=subject)
