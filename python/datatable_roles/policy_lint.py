"""``lint-policies``: row-level security policies that name, as text, a role that does not
exist.

A policy written as the package recommends names its role in a string literal,
``pg_has_role(current_user, 'sales_us', 'member')``; renaming or dropping that role leaves the
policy naming nothing, and queries it applies to fail. :func:`role_literals` finds the role
names such calls give as literals (a small tokenizer over the expression text PostgreSQL
keeps in ``pg_policies``); :func:`lint_database` checks one database's policies against its
cluster's roles. Only system catalogs are read: no package function is called.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg

from .errors import map_error

_PG_HAS_ROLE = re.compile(r"\bpg_has_role\s*\(", re.IGNORECASE)
_LITERAL = re.compile(r"\(*\s*'((?:[^']|'')*)'\s*((?:\)|::\s*[\w\s\"]+?)\s*)*$")


def _call_arguments(text: str, start: int) -> list[str]:
    """The top-level arguments of the call whose '(' ends at ``start``."""
    args, depth, i, begin = [], 1, start, start
    while i < len(text) and depth:
        ch = text[i]
        if ch in "'\"":  # a literal or a quoted identifier; '' and "" escape themselves
            j = i + 1
            while j < len(text):
                if text[j] == ch:
                    if j + 1 < len(text) and text[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                args.append(text[begin:i])
                break
        elif ch == "," and depth == 1:
            args.append(text[begin:i])
            begin = i + 1
        i += 1
    return args


def role_literals(expression: str | None) -> list[str]:
    """The role (and user) names that pg_has_role(...) calls in ``expression`` give as
    string literals; the last argument (the privilege) is not a role."""
    found: list[str] = []
    if not expression:
        return found
    for m in _PG_HAS_ROLE.finditer(expression):
        for arg in _call_arguments(expression, m.end())[:-1]:
            lit = _LITERAL.match(arg.strip())
            if lit:
                found.append(lit.group(1).replace("''", "'"))
    return found


def lint_database(conninfo: str) -> list[dict[str, Any]]:
    """Policies of one database whose pg_has_role(...) names a role that does not exist:
    one finding per policy, clause (USING, WITH CHECK) and missing role."""
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            dbname = conn.info.dbname
            existing = {r[0] for r in conn.execute("SELECT rolname FROM pg_roles")}
            policies = conn.execute(
                "SELECT schemaname, tablename, policyname, cmd, qual, with_check"
                " FROM pg_policies ORDER BY schemaname, tablename, policyname").fetchall()
    except psycopg.Error as e:
        raise map_error(e) from None
    findings = []
    for schema, table, policy, cmd, qual, with_check in policies:
        for clause, expr in (("USING", qual), ("WITH CHECK", with_check)):
            for name in dict.fromkeys(role_literals(expr)):
                if name not in existing:
                    findings.append({"database": dbname, "table": f"{schema}.{table}",
                                     "policy": policy, "command": cmd, "clause": clause,
                                     "missing_role": name, "expression": expr})
    return findings
