"""``lint-policies``: row-level security policies that name a role as text.

A policy that names its role in its ``TO`` clause (``CREATE POLICY ... TO sales_us``) is
kept by the role's oid, so a rename is followed. A policy that names it as text in its
expression, ``pg_has_role(current_user, 'sales_us', 'member')`` or ``current_user =
'sales_us'``, is not: after ``rename_datatable_role`` it names a role that no longer exists
(``pg_has_role`` then fails, a comparison never matches), or whoever takes the old name next.

:func:`roles_named_as_text` finds those names in the expression text PostgreSQL keeps in
``pg_policies`` (a small tokenizer): the literal role arguments of ``pg_has_role(...)``, and
literals compared with ``CURRENT_USER``, ``SESSION_USER``, ``CURRENT_ROLE`` or ``USER``
(``=``, ``<>``, ``IN``/``= ANY``). :func:`lint_database` checks one database's policies
against its cluster's roles: a name no role has is a **missing role** (the policy is broken
now), a name a role has is a **rename hazard** (a warning: the fix is ``TO <role>``). Only
system catalogs are read; which databases to check (the registered data tables') is the
caller's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from .errors import map_error

_TOKEN = re.compile(r"""\s*(?:
      (?P<str>[Ee]?'(?:[^']|'')*')          # a string literal; '' escapes a quote
    | (?P<ident>"(?:[^"]|"")*")             # a quoted identifier: never a keyword
    | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    | (?P<op>::|<>|!=|[^\s\w'"])
    | (?P<num>\w+)
)""", re.VERBOSE)

# What PostgreSQL evaluates to the role of the session (it prints them in capitals).
_SESSION_ROLES = {"CURRENT_USER", "SESSION_USER", "CURRENT_ROLE", "USER"}
_COMPARISONS = {"=", "<>", "!="}

Token = tuple[str, str]  # (kind, text)


def _tokens(expression: str) -> list[Token]:
    """The expression's tokens, without casts (``::name``, ``::character varying``,
    ``::name[]``): a literal reads the same with or without its cast."""
    raw = [(m.lastgroup or "", m.group(m.lastgroup or 0)) for m in _TOKEN.finditer(expression)]
    out: list[Token] = []
    in_cast = False
    for kind, text in raw:
        if text == "::":
            in_cast = True
        elif in_cast and (kind == "word" or text in ("[", "]")):
            continue
        else:
            in_cast = False
            out.append((kind, text))
    return out


def _value(text: str) -> str:
    """A string literal's value."""
    if text[0] in "Ee":
        return text[2:-1].replace("''", "'").replace("\\\\", "\\")
    return text[1:-1].replace("''", "'")


def _array_elements(text: str) -> list[str]:
    """The elements of an array literal's value, '{a,"b c"}'."""
    return [e.strip().strip('"') for e in _value(text).strip("{}").split(",") if e.strip()]


def _pg_has_role_names(toks: list[Token], start: int) -> list[str]:
    """The role names that the pg_has_role call whose '(' is at ``start`` gives as literals:
    each argument but the last (the privilege) that is one literal, parenthesized or not."""
    args: list[list[Token]] = [[]]
    depth = 0
    for kind, text in toks[start + 1:]:
        if text == "(":
            depth += 1
        elif text == ")":
            if depth == 0:
                break
            depth -= 1
        elif text == "," and depth == 0:
            args.append([])
            continue
        args[-1].append((kind, text))
    names = []
    for arg in args[:-1]:
        bare = [t for t in arg if t[1] not in ("(", ")")]
        if len(bare) == 1 and bare[0][0] == "str":
            names.append(_value(bare[0][1]))
    return names


def _compared_names(toks: list[Token], i: int) -> list[str]:
    """The literals that the session role at ``toks[i]`` is compared with: ``CURRENT_USER =
    'x'``, ``'x' = CURRENT_USER``, ``CURRENT_USER = ANY (ARRAY['x', 'y'])`` (how IN reads
    back), ``CURRENT_USER = ANY ('{x,y}')``, and the same with ``<>``."""
    def at(k: int) -> Token:
        return toks[k] if 0 <= k < len(toks) else ("", "")

    def skip(k: int, paren: str, step: int) -> int:
        while at(k)[1] == paren:
            k += step
        return k

    j = skip(i + 1, ")", 1)
    if at(j)[1] in _COMPARISONS:            # CURRENT_USER = ...
        k = skip(j + 1, "(", 1)
        if at(k)[0] == "str":
            return [_value(at(k)[1])]
        if at(k)[1].upper() not in ("ANY", "ALL", "SOME"):
            return []
        k = skip(k + 1, "(", 1)
        if at(k)[0] == "str":                # ANY ('{x,y}')
            return _array_elements(at(k)[1])
        names = []
        if at(k)[1].upper() == "ARRAY":      # ANY (ARRAY['x', 'y'])
            for kind, text in toks[k + 1:]:
                if text == "]":
                    break
                if kind == "str":
                    names.append(_value(text))
        return names
    j = skip(i - 1, "(", -1)
    if at(j)[1] in _COMPARISONS:            # 'x' = CURRENT_USER
        k = skip(j - 1, ")", -1)
        if at(k)[0] == "str":
            return [_value(at(k)[1])]
    return []


def roles_named_as_text(expression: str | None) -> list[str]:
    """The role names ``expression`` gives as text, in order, each once: literal arguments of
    pg_has_role(...) (not its privilege), and literals compared with the session's role."""
    if not expression:
        return []
    toks = _tokens(expression)
    names: list[str] = []
    for i, (kind, text) in enumerate(toks):
        if kind != "word":
            continue
        if text.lower() == "pg_has_role" and i + 1 < len(toks) and toks[i + 1][1] == "(":
            names += _pg_has_role_names(toks, i + 1)
        elif text.upper() in _SESSION_ROLES:
            names += _compared_names(toks, i)
    return list(dict.fromkeys(names))


def policy_findings(dbname: str, policies: Iterable[Sequence[Any]], existing: set[str]
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """For rows (schema, table, policy, command, qual, with_check) of ``dbname``: one finding
    per policy, clause (USING, WITH CHECK) and role named as text, split into those whose role
    does not exist (missing: the policy is broken now) and those whose role does (rename
    hazards)."""
    missing: list[dict[str, Any]] = []
    hazards: list[dict[str, Any]] = []
    for schema, table, policy, cmd, qual, with_check in policies:
        for clause, expr in (("USING", qual), ("WITH CHECK", with_check)):
            for name in dict.fromkeys(roles_named_as_text(expr)):
                (hazards if name in existing else missing).append(
                    {"database": dbname, "table": f"{schema}.{table}", "policy": policy,
                     "command": cmd, "clause": clause, "role": name, "expression": expr})
    return missing, hazards


def lint_database(conninfo: str) -> dict[str, Any]:
    """One database's policies: ``{"database", "missing_roles", "rename_hazards"}``
    (:func:`policy_findings`)."""
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            dbname = conn.info.dbname
            existing = {r[0] for r in conn.execute("SELECT rolname FROM pg_roles")}
            policies = conn.execute(
                "SELECT schemaname, tablename, policyname, cmd, qual, with_check"
                " FROM pg_policies ORDER BY schemaname, tablename, policyname").fetchall()
    except psycopg.Error as e:
        raise map_error(e) from None
    missing, hazards = policy_findings(dbname, policies, existing)
    return {"database": dbname, "missing_roles": missing, "rename_hazards": hazards}


def lint_databases(conninfos: list[str]) -> dict[str, Any]:
    """:func:`lint_database` of each: ``{"databases": [names], "missing_roles": [...],
    "rename_hazards": [...]}``."""
    results = [lint_database(c) for c in conninfos]
    return {"databases": [r["database"] for r in results],
            "missing_roles": [f for r in results for f in r["missing_roles"]],
            "rename_hazards": [f for r in results for f in r["rename_hazards"]]}
