"""``policies`` (per data table database): policies naming, as text, a role that does not
exist, read through the link login."""

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


def check_policies(ctx: _Context) -> list[Check]:
    if not ctx.datatables:
        return [Check("policies", True, "no data table registered yet")]
    existing = {r[0] for r in ctx.rows("SELECT rolname::text FROM pg_roles")}
    checks = []
    for dbname in ctx.databases:
        if not ctx.reachable.get(dbname):
            checks.append(Check("policies", True, "not checked: the link login cannot reach "
                                "it (see datatable_link)", subject=dbname, skipped=True))
            continue
        try:
            rows = ctx.rows(POLICIES_SQL, [dbname])
        except psycopg.Error as e:
            checks.append(Check("policies", False, f"could not read policies: "
                                f"{_error_text(e)}", "See datatable_link.", subject=dbname))
            continue
        findings, hazards = policy_findings(dbname, rows, existing)
        if not findings:
            note = (f"; {len(hazards)} clause(s) name an existing role as text, which a "
                    "rename would break (lint-policies lists them)") if hazards else ""
            checks.append(Check("policies", True, f"{len(rows)} policies, none names a "
                                f"missing role{note}", subject=dbname))
            continue
        detail = "; ".join(f"policy {f['policy']} on {f['table']} ({f['clause']}) names "
                           f"missing role {f['role']}" for f in findings[:LIST_LIMIT])
        if len(findings) > LIST_LIMIT:
            detail += f"; and {len(findings) - LIST_LIMIT} more"
        fixes = [f"In database {dbname}, as its admin login, recreate each such policy naming "
                 "an existing role, or drop it (a rename leaves the old name in the text: "
                 "docs/policies.md):"]
        for f in dict.fromkeys((f["policy"], f["table"]) for f in findings):
            schema, table = f[1].split(".", 1)
            fixes.append(f"DROP POLICY {_ident(f[0])} ON {_ident(schema)}.{_ident(table)};"
                         " -- then CREATE POLICY ... naming an existing role")
        checks.append(Check("policies", False, detail + " (queries it applies to fail)",
                            "\n".join(fixes), subject=dbname))
    return checks
