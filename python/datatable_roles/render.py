"""Text for people: the tables and lines that ``status``, ``explain``, ``sweep``,
``lint-policies`` and ``acl`` print (and the demo shows), and ``--json`` output.

Every function here takes plain data (what the SQL functions return, through the client) and
returns a string; nothing here connects to a database. What is worded for people lives here
and not in SQL: the admin warning, ages such as "3 min ago", the words for a login's
state.
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

# ---- cells, tables, JSON ----------------------------------------------------------------


def cell(value: Any) -> str:
    """One value as table text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value) if value else "-"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
                 indent: str = "  ") -> str:
    """Left-aligned columns, a dashed rule under the headers, two spaces between columns."""
    text_rows = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in text_rows]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return (indent + "  ".join(v.ljust(w) for v, w in zip(values, widths))).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in text_rows]
    if not text_rows:
        out.append(indent + "(none)")
    return "\n".join(out)


def to_json(data: Any) -> str:
    """``--json`` output: indented, timestamps as ISO 8601, intervals and UUIDs as text."""
    def default(o: Any) -> Any:
        if isinstance(o, datetime):
            return o.isoformat()
        if isinstance(o, (timedelta, uuid.UUID)):
            return str(o)
        raise TypeError(f"not JSON serialisable: {type(o).__name__}")

    return json.dumps(data, indent=2, default=default, sort_keys=False)


def timestamp(value: str | datetime | None) -> datetime | None:
    """A timestamp of a JSON report (ISO 8601 text, as PostgreSQL writes timestamptz into
    jsonb) as a datetime; None stays None."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value)


def age(seconds: float | None) -> str:
    """How long ago, for people: 'just now', '5 min ago', '3 h ago', '31 days ago'."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


# ---- status -----------------------------------------------------------------------------

ADMIN_WARNING = ("WARNING: the default role is admin: a connection naming no role logs in as "
                 "the admin login, which owns the tables and bypasses row-level security.")

ADMIN_PASSWORD_CHANGED = (
    "WARNING: the admin login does not log in with the password the package holds (changed "
    "outside the package, or its database refuses it): a job's connection as admin is "
    "refused, and reported as 55000 by heal_refused_login, until the package is given the "
    "current one: set_datatable_admin_password(workspace, name, admin_password).")

ADMIN_PASSWORD_UNKNOWN = (
    "note: the package has not set the admin login's password (registered before 0.2): give "
    "it with set_datatable_admin_password(workspace, name, admin_password) so that a change "
    "is noticed.")

# A role's tenants in status: the list, what an empty one means, and what the lists mean.
NO_TENANTS = "(none: workspace admins only)"
TENANTS_NOTE = ("tenants: who may name the role in a connection (workspace admins may name "
                "any role). Unless the default is admin, a connection also holds each enabled "
                "role, admin aside, whose tenants name its viewer. admin's tenants may also run "
                "a migration that names no role.")

# login_kind, in words (explain).
LOGIN_KINDS = {"admin": "admin login", "role": "one-role login", "set": "set login"}


def set_login_state(login: dict[str, Any]) -> str:
    """A login's state in words, from status_report's active/login_exists/intact/stale."""
    if login["active"] and login["login_exists"] and login.get("intact") is False:
        state = "changed outside the package (healed on next use or sweep)"
    elif login["active"] and login["login_exists"]:
        state = "active"
    elif login["login_exists"]:
        state = "retired (taken back on next use)"
    else:
        state = "gone (made again on next use)"
    if login["stale"]:
        state += ", unused: next sweep drops it"
    return state


def render_schema_level(level: dict[str, Any]) -> str:
    """The package's version and migration level, and the database's against it (from
    versions.SchemaLevel.as_dict)."""
    package = f"datatable-roles {level['package_version']} (schema {level['package_schema']})"
    installed = f"{package}; this database is at {level['installed_schema'] or 'no migration'}"
    if level["state"] == "unknown":
        return (f"{package}; this database's migration level is unknown (no yoyo migration "
                "table that this role may read)")
    if level["state"] == "behind":
        return (f"{installed}, behind the package: run datatable-roles migrate (pending: "
                f"{', '.join(level['pending'])})")
    if level["state"] == "ahead":
        return (f"{installed}, ahead of the package (migrations of a newer release: "
                f"{', '.join(level['unknown'])}): upgrade the package (pip install -U "
                "datatable-roles)")
    return installed


PROFILE_SELF_HOSTED = ("sql/bootstrap.sql ran as a superuser; its role guard makes role changes "
                       "fast at 10,000 roles on PostgreSQL 16+")
PROFILE_MANAGED = ("no superuser step: sql/managed.sql and CREATE EXTENSION dblink; nothing "
                   "reads pg_authid")


def render_status(report: dict[str, Any]) -> str:
    """The text of ``status`` from ``datatable_roles.status_report()`` (and the CLI's
    ``version``, the migration levels, when it is there)."""
    out = [render_schema_level(report["version"])] if "version" in report else []
    out += [f"Instance {report['instance_id']} (logins unused for {report['unused_after']} "
           f"are swept; last use is recorded at most every {report['touch_every']})"]
    if "rotate_every" in report:
        out.append(f"  passwords are rotated every {report['rotate_every']}; every login "
                   f"handed to jobs is in the login group {report.get('login_group')} "
                   "(for pg_hba.conf)")
    if "profile" in report:
        out.append(f"  install profile: {report['profile']} ("
                   + (PROFILE_SELF_HOSTED if report["profile"] == "self-hosted"
                      else PROFILE_MANAGED) + ")")
    if "directory" in report:
        out.append(f"  users, groups and folders are read from the {report['directory']}"
                   " directory (docs/integration.md)")
    if report["clock_offset"] != "00:00:00":
        out.append(f"  note: the package clock runs {report['clock_offset']} ahead (tests)")
    out.append("")
    if not report["datatables"]:
        out.append("No data tables registered.")
    for d in report["datatables"]:
        title = f"Data table {d['workspace']}/{d['name']}"
        if "reference_to" in d:
            out.append(f"{title}: a reference to {d['reference_to']} (which decides everything)")
            out.append("")
            continue
        where = ("" if d.get("server", "local") == "local"
                 else f" on server {d['server']}")
        out.append(f"{title} (database {d['dbname']}{where}, admin login {d['admin_login']})")
        default = d["default_role"]
        out.append(f"  default role: {default if default else '(none): viewer roles only'}")
        if d["default_is_admin"]:
            out.append(f"  {ADMIN_WARNING}")
        if d.get("admin_password_ok") is False:
            out.append(f"  {ADMIN_PASSWORD_CHANGED}")
        elif "admin_password_ok" in d and d["admin_password_ok"] is None:
            out.append(f"  {ADMIN_PASSWORD_UNKNOWN}")
        out.append(format_table(["role", "enabled", "tenants"],
                                [[r["role"], r["enabled"], r["tenants"] or NO_TENANTS]
                                 for r in d["roles"]], indent="    "))
        out.append(textwrap.fill(TENANTS_NOTE, 92, initial_indent="    ",
                                 subsequent_indent="    "))
        out.append("")
    others = [sv for sv in report.get("servers", []) if sv["name"] != "local"]
    if others:
        out.append("Other servers (docs/servers.md)")
        out.append(format_table(["server", "where", "manager", "pending changes"],
                                [[sv["name"], f"{sv['host']}:{sv['port']} ({sv['sslmode']})",
                                  sv["manager_login"], pending_cell(sv)] for sv in others]))
        out.append("")
    out.append("Catalog roles")
    out.append(format_table(["role", "id", "enabled", "login", "in maps", "created"],
                            [[r["name"], r["id"], r["enabled"],
                              "can log in" if r["can_login"] else "NOLOGIN", r["maps"],
                              timestamp(r["created_at"])] for r in report["catalog_roles"]]))
    out.append("")
    out.append("Logins handed to jobs (one per set of roles and database some job connected "
               "with; a one-role login acts as its role), most recently used first")
    out.append(format_table(["login", "roles", "database", "created", "last used", "state"],
                            [[s["login"], s["roles"], s.get("database"),
                              timestamp(s["created_at"]),
                              f"{cell(timestamp(s['last_used_at']))} "
                              f"({age(s['idle_seconds'])})",
                              set_login_state(s)]
                             for s in report["set_logins"]]))
    return "\n".join(out)


def pending_cell(server: dict[str, Any]) -> str:
    """A server's queued changes: none, or how many and the first (its data tables are not
    served until they are applied)."""
    first = server.get("first_pending")
    if not server["pending"] or first is None:
        return "none"
    why = f"; {first['last_error']}" if first.get("last_error") else ""
    return (f"{server['pending']}, first: {first['what']} (tried {first['tries']} times{why});"
            " its data tables are refused until applied")


# ---- explain ----------------------------------------------------------------------------


def _explain_value(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        parts = []
        for v in value:
            if set(v) == {"role", "named_by"}:
                parts.append(f"{v['role']} (named by {cell(v['named_by'])})")
            else:
                parts.append(", ".join(f"{k}={cell(x)}" for k, x in v.items()))
        return "; ".join(parts)
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell(v)}" for k, v in value.items())
    if isinstance(value, list) and not value:
        return "(none)"
    return cell(value)


# The order in which explain's step keys read best (jsonb sorts them otherwise).
_STEP_KEYS = ("permissioned_as", "governing", "reference", "workspace_admin", "keys",
              "memberships", "role", "usable", "admin", "default", "gives", "viewer", "member",
              "roles")


def render_explain(data: dict[str, Any]) -> str:
    """The text of ``explain`` from ``explain_datatable_role``'s report."""
    role = data.get("role")
    out = [f"Job {data.get('job_id')} on data table {data.get('datatable')!r}, "
           + (f"role {role!r} named" if role else "no role named")]
    for i, step in enumerate(data.get("steps") or [], 1):
        rule = step.get("rule")
        out.append(f"  {i}. {step.get('step')}" + (f" [{rule}]" if rule else ""))
        keys = [k for k in _STEP_KEYS if k in step]
        keys += sorted(k for k in step if k not in keys and k not in ("step", "rule", "why"))
        keys += ["why"] if "why" in step else []
        for key in keys:
            out.append(f"       {key}: {_explain_value(step[key])}")
    refused = data.get("refused")
    if refused:
        out.append(f"  => REFUSED by {refused.get('rule')}: {refused.get('message')}")
        if refused.get("hint"):
            out.append(f"     hint: {refused['hint']}")
    else:
        exists = "exists" if data.get("login_exists") else "made on first resolve"
        kind = data.get("login_kind")
        out.append(f"  => login {data.get('login')} ({LOGIN_KINDS.get(kind, f'{kind} login')},"
                   f" {exists}), roles {cell(data.get('roles'))}, database {data.get('dbname')}")
        if kind == "role":
            out.append(f"     connected with options='-c role={cell(data.get('roles'))}', its "
                       "sessions act as the role")
    return "\n".join(out)


# ---- sweep ------------------------------------------------------------------------------


def render_sweep(report: dict[str, Any]) -> str:
    """The text of ``sweep`` from the procedure's report."""
    out = [f"Sweep: {report.get('examined', 0)} examined, {report.get('dropped', 0)} dropped, "
           f"{report.get('skipped', 0)} skipped (used meanwhile), "
           f"{len(report.get('unfinished') or [])} unfinished; "
           f"{report.get('rotated', 0)} passwords rotated, "
           f"{report.get('healed', 0)} logins changed outside the package healed"]
    if report.get("forgotten_user_keys"):
        out.append("u/ tenant keys of users who left the directory, forgotten: "
                   + ", ".join(report["forgotten_user_keys"]))
    if report.get("unfinished"):
        out.append(format_table(["login", "reason (next sweep tries again)"],
                                [[u.get("login"), u.get("reason")]
                                 for u in report["unfinished"]]))
    return "\n".join(out)


# ---- lint-policies ----------------------------------------------------------------------


def render_lint(result: dict[str, Any]) -> str:
    """The text of ``lint-policies`` from :func:`datatable_roles.policy_lint.lint_databases`'
    result: the policies naming a missing role, then those naming an existing role as text
    (rename hazards, a warning), then the fix and a summary."""
    headers = ["database", "table", "policy", "clause", "role"]
    missing, hazards = result["missing_roles"], result["rename_hazards"]

    def table(findings: list[dict[str, Any]]) -> str:
        return format_table(headers, [[f["database"], f["table"], f["policy"], f["clause"],
                                       f["role"]] for f in findings])

    out = []
    if missing:
        out += ["Policies naming a role that does not exist (renamed or dropped?): they fail, "
                "or never match", table(missing), ""]
    if hazards:
        out += ["WARNING: policies naming a role as text: renaming the role breaks them",
                table(hazards), ""]
    if missing or hazards:
        out += LINT_FIX + [""]
    checked = (f"{len(result['databases'])} database(s) checked: "
               f"{', '.join(result['databases'])}")
    if not missing and not hazards:
        out.append(f"No policy names a role as text ({checked}).")
    else:
        out.append(f"{len(missing)} policy clause(s) name a missing role, {len(hazards)} an "
                   f"existing role as text ({checked}).")
    return "\n".join(out)


LINT_FIX = ["fix: name the role in TO, not in the expression: CREATE POLICY <name> ON <table>",
            "     ... TO <role> USING (<the rest>). PostgreSQL keeps a TO role by oid, so it",
            "     follows renames (docs/policies.md)."]


# ---- acl (the grants editor) ------------------------------------------------------------


def acl_target_label(target: dict[str, Any], kind: str | None = None) -> str:
    """A target in words: 'the database', 'schema s', 'table s.t' (``kind``: the relation's
    kind, when known)."""
    if target.get("database"):
        return "the database"
    if "table" in target:
        return f"{kind or 'relation'} {target.get('schema')}.{target['table']}"
    return f"schema {target.get('schema')}"


def acl_change_label(change: dict[str, Any]) -> str:
    """A change in words, as the plan understood it: 'grant SELECT, INSERT to r on all
    tables', 'owner to r'."""
    if "owner" in change:
        return f"owner to {change['owner']}"
    verb, who = ("grant", "to") if "grant" in change else ("revoke", "from")
    text = f"{verb} {', '.join(change.get(verb) or [])} {who} {change.get(who)}"
    on = change.get("on", "target")
    if on != "target":
        text += f" on {on}"
    if change.get("for"):
        text += f" (created by {', '.join(change['for'])})"
    return text


def _wrapped(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(text, 92, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def render_acl(data: dict[str, Any]) -> str:
    """The text of ``acl show`` from ``datatable_acl``: owner, grants, row security (a
    table), default privileges (a schema, the database) and what the target holds."""
    target = data.get("target") or {}
    label = acl_target_label(target, data.get("kind"))
    out = [f"Data table {data.get('datatable')} (database {data.get('database')}): {label}",
           f"  owner: {data.get('owner')}"
           + (f" ({data['owner_note']})" if data.get("owner_note") else "")]
    if "row_security" in data:
        rls = "enabled" if data["row_security"] else "disabled"
        if data["row_security"] and data.get("force_row_security"):
            rls += ", forced on the owner too"
        out.append(f"  row-level security: {rls}")
        if data.get("kind") == "view":
            out.append("  security_invoker: " + cell(bool(data.get("security_invoker"))))
    out.append("")
    out.append("Grants")
    out.append(format_table(["role", "kind", "privileges", "with grant option"],
                            [[g["role"], g["kind"], g["privileges"], g["grantable"]]
                             for g in data.get("grants") or []]))
    if "table" not in target:
        out.append("")
        out.append("Default privileges (objects these roles create later)")
        out.append(format_table(["created by", "on", "role", "privileges"],
                                [[d["for_role"], d["kind"], g["role"], g["privileges"]]
                                 for d in data.get("default_privileges") or []
                                 for g in d.get("grants") or []]))
        out.append("")
        if target.get("database"):
            out.append("Schemas")
            out.append(format_table(["schema", "owner"],
                                    [[c["schema"], c["owner"]]
                                     for c in data.get("children") or []]))
        else:
            out.append("Relations")
            out.append(format_table(["name", "kind", "owner", "row-level security"],
                                    [[c["table"], c["kind"], c["owner"], c["row_security"]]
                                     for c in data.get("children") or []]))
    return "\n".join(out)


def render_acl_plan(plan: dict[str, Any]) -> str:
    """The text of ``acl plan`` from ``plan_datatable_acl``: the change as understood, the
    numbered statements (each with ``-- as ROLE`` when it runs as an object's owner, not as
    the link login itself: the plan's ``run_as``), then the warnings."""
    target = plan.get("target") or {}
    out = [f"Plan for data table {plan.get('datatable')}, {acl_target_label(target)}: "
           f"{acl_change_label(plan.get('change') or {})}"]
    statements = plan.get("statements") or []
    if statements:
        out.append(f"Statements ({len(statements)}):")
        width = len(str(len(statements)))
        run_as = plan.get("run_as") or []
        for i, statement in enumerate(statements, 1):
            role = run_as[i - 1] if i <= len(run_as) else None
            out.append(f"  {str(i).rjust(width)}. {statement}"
                       + (f"  -- as {role}" if role else ""))
        if any(run_as):
            out.append("  (-- as ROLE: the statement runs as the object's owner ROLE, which "
                       "PostgreSQL records as grantor; the others as the package's link login)")
    else:
        out.append("Statements: none (nothing to do)")
    warnings = plan.get("warnings") or []
    if warnings:
        out.append(f"Warnings ({len(warnings)}):")
        for w in warnings:
            out += _wrapped(f"{w.get('code')}: {w.get('message')}", "  - ", "    ")
    else:
        out.append("Warnings: none")
    return "\n".join(out)


def render_acl_applied(result: dict[str, Any]) -> str:
    """The last line of ``acl apply`` from ``apply_datatable_acl``'s result."""
    n = result.get("applied") or 0
    if not n:
        return "Nothing to do: nothing applied, no audit row written."
    return (f"Applied {n} statement(s) in one transaction; audit row {result.get('audit_id')}"
            " of datatable_roles.acl_change.")
