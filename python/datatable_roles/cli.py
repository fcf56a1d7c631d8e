"""Command line interface: ``datatable-roles`` (also ``python -m datatable_roles``).

Commands: migrate, status, explain, sweep, lint-policies, demo. Global options: ``--dsn``
(libpq conninfo or URL of the metadata database; empty: the PG* environment variables) and
``--json`` (machine output; also accepted after the command). Exit codes: 0 ok, 1 error (or,
for lint-policies, findings), 2 usage.

status, sweep and lint-policies (without its own --dsn) read the package's tables and so run
as the package owner; explain also works as the worker role. Nothing prints a password.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TextIO

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from . import __version__
from .errors import DatatableRolesError, map_error, redact

# ---- output helpers ---------------------------------------------------------------------


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
    def default(o: Any) -> Any:
        if isinstance(o, (datetime, timedelta, uuid.UUID)):
            return str(o) if not isinstance(o, datetime) else o.isoformat()
        raise TypeError(f"not JSON serialisable: {type(o).__name__}")

    return json.dumps(data, indent=2, default=default, sort_keys=False)


@dataclass
class Output:
    """What a command produced: ``data`` for --json, ``text`` for people."""

    data: Any
    text: str
    code: int = 0


def connect_meta(dsn: str) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as e:
        raise map_error(e) from None


def interval_text(delta: timedelta | None) -> str:
    """A timedelta as an interval people read: '30 days', '1 day 02:00:00', '00:05:00'."""
    if delta is None:
        return "-"
    days, rest = delta.days, delta - timedelta(days=delta.days)
    parts = [f"{days} day{'s' if days != 1 else ''}"] if days else []
    if rest or not parts:
        total = int(rest.total_seconds())
        parts.append(f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}")
    return " ".join(parts)


def _age(delta: timedelta | None) -> str:
    if delta is None:
        return "-"
    seconds = delta.total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


# ---- status -----------------------------------------------------------------------------

NO_DEFAULT = "*none*"
ADMIN_WARNING = ("WARNING: the default role is admin: a connection naming no role logs in as "
                 "the admin login, which owns the tables and bypasses row-level security.")


def collect_status(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """The instance's data tables, catalog roles and set logins, read from the package's
    tables as the owner. Password columns are never selected (only whether one is set)."""
    def rows(query: str) -> list[dict[str, Any]]:
        cur = conn.execute(query)
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    try:
        (settings,) = rows(
            "SELECT s.instance_id, s.unused_after, s.touch_every, s.clock_offset,"
            " datatable_roles.clock_now() AS now FROM datatable_roles.settings AS s")
        datatables = rows(
            "SELECT d.id, d.workspace, d.name, d.dbname, d.admin_login, d.default_role,"
            " d.admin_tenants, g.workspace AS governing_workspace, g.name AS governing_name"
            " FROM datatable_roles.datatable AS d"
            " LEFT JOIN datatable_roles.datatable AS g ON g.id = d.governing_id"
            " ORDER BY d.workspace, d.name")
        maps = rows(
            "SELECT m.datatable_id, r.name AS role, r.enabled, m.tenants"
            " FROM datatable_roles.datatable_role AS m"
            " JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id"
            " ORDER BY r.name COLLATE \"C\"")
        roles = rows(
            "SELECT r.id, r.name, r.enabled, r.created_at,"
            " (SELECT count(*) FROM datatable_roles.datatable_role AS m"
            "  WHERE m.role_id = r.id)::int AS maps,"
            " coalesce((SELECT pr.rolcanlogin FROM pg_roles AS pr WHERE pr.rolname = r.name),"
            "  false) AS can_login"
            " FROM datatable_roles.catalog_role AS r ORDER BY r.name COLLATE \"C\"")
        set_logins = rows(
            "SELECT s.login, ARRAY(SELECT coalesce(r.name, '#' || i::text || ' (dropped)')"
            "  FROM unnest(s.role_ids) AS i LEFT JOIN datatable_roles.catalog_role AS r"
            "  ON r.id = i ORDER BY 1) AS roles,"
            " s.created_at, s.last_used_at, datatable_roles.clock_now() - s.last_used_at AS idle,"
            " s.password <> '' AS active,"
            " EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = s.login) AS login_exists,"
            " s.last_used_at < datatable_roles.clock_now() - st.unused_after AS stale"
            " FROM datatable_roles.datatable_role_set AS s, datatable_roles.settings AS st"
            " ORDER BY s.last_used_at DESC, s.login")
    except psycopg.Error as e:
        raise map_error(e) from None

    by_dt: dict[int, list[dict[str, Any]]] = {}
    for m in maps:
        by_dt.setdefault(m.pop("datatable_id"), []).append(m)
    out_dts = []
    for d in datatables:
        entry: dict[str, Any] = {"workspace": d["workspace"], "name": d["name"]}
        if d["governing_name"] is not None:
            entry["reference_to"] = f"{d['governing_workspace']}/{d['governing_name']}"
        else:
            default = d["default_role"]
            entry.update({
                "dbname": d["dbname"], "admin_login": d["admin_login"],
                "default_role": None if default == NO_DEFAULT else default,
                "default_is_admin": default == "admin",
                "roles": [{"role": "admin", "enabled": True, "tenants": d["admin_tenants"]}]
                + by_dt.get(d["id"], []),
            })
            if default == "admin":
                entry["warning"] = ADMIN_WARNING
        out_dts.append(entry)
    for s in set_logins:
        s["idle"] = _age(s["idle"])
        s["state"] = ("active" if s["active"] and s["login_exists"] else
                      "retired (taken back on next use)" if s["login_exists"] else
                      "gone (made again on next use)")
        if s["stale"]:
            s["state"] += ", unused: next sweep drops it"
    return {
        "instance_id": str(settings["instance_id"]),
        "unused_after": interval_text(settings["unused_after"]),
        "touch_every": interval_text(settings["touch_every"]),
        "clock_offset": interval_text(settings["clock_offset"]),
        "now": settings["now"],
        "datatables": out_dts,
        "catalog_roles": roles,
        "set_logins": set_logins,
    }


def render_status(data: dict[str, Any]) -> str:
    out = [f"Instance {data['instance_id']} (set logins unused for {data['unused_after']} "
           f"are swept; last use is recorded at most every {data['touch_every']})"]
    if data["clock_offset"] != "00:00:00":
        out.append(f"  note: the package clock runs {data['clock_offset']} ahead (tests)")
    out.append("")
    if not data["datatables"]:
        out.append("No data tables registered.")
    for d in data["datatables"]:
        title = f"Data table {d['workspace']}/{d['name']}"
        if "reference_to" in d:
            out.append(f"{title}: a reference to {d['reference_to']} (which decides everything)")
            out.append("")
            continue
        out.append(f"{title} (database {d['dbname']}, admin login {d['admin_login']})")
        default = d["default_role"]
        out.append(f"  default role: {default if default else '(none): viewer roles only'}")
        if d.get("warning"):
            out.append(f"  {d['warning']}")
        out.append(format_table(["role", "enabled", "tenants"],
                                [[r["role"], r["enabled"], r["tenants"] or "(nobody)"]
                                 for r in d["roles"]], indent="    "))
        out.append("")
    out.append("Catalog roles")
    out.append(format_table(["role", "id", "enabled", "login", "in maps", "created"],
                            [[r["name"], r["id"], r["enabled"],
                              "can log in" if r["can_login"] else "NOLOGIN", r["maps"],
                              r["created_at"]] for r in data["catalog_roles"]]))
    out.append("")
    out.append("Set logins (one per set of roles some viewer connected with)")
    out.append(format_table(["login", "roles", "created", "last used", "state"],
                            [[s["login"], s["roles"], s["created_at"],
                              f"{cell(s['last_used_at'])} ({s['idle']})", s["state"]]
                             for s in data["set_logins"]]))
    return "\n".join(out)


def cmd_status(args: argparse.Namespace) -> Output:
    with connect_meta(args.dsn) as conn:
        data = collect_status(conn)
    return Output(data, render_status(data))


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
        out.append(f"  => login {data.get('login')} ({data.get('login_kind')} login, {exists}),"
                   f" roles {cell(data.get('roles'))}, database {data.get('dbname')}")
    return "\n".join(out)


def cmd_explain(args: argparse.Namespace) -> Output:
    from .client import Client

    with Client(args.dsn) as client:
        data = client.explain(args.job_id, args.datatable, args.role)
    return Output(data, render_explain(data))


# ---- sweep ------------------------------------------------------------------------------

PROGRESS_THRESHOLD = 20


def stale_logins(conn: psycopg.Connection[Any], unused_for: str | None) -> list[str]:
    """The logins the sweep will examine (same selection as the procedure)."""
    try:
        return [r[0] for r in conn.execute(
            "SELECT s.login FROM datatable_roles.datatable_role_set AS s"
            " WHERE s.last_used_at < datatable_roles.clock_now() - coalesce(%s::interval,"
            "  (SELECT st.unused_after FROM datatable_roles.settings AS st))"
            " OR (s.password = '' AND NOT s.role_ids <@ ARRAY("
            "  SELECT r.id FROM datatable_roles.catalog_role AS r))"
            " ORDER BY s.login", [unused_for]).fetchall()]
    except psycopg.Error as e:
        raise map_error(e) from None


class ProgressBar:
    """A plain-text bar on a stream: ``sweep [#####-----]  12/40 logins``, redrawn in place
    on a terminal; elsewhere (a log) one line per quarter done."""

    def __init__(self, total: int, stream: TextIO, width: int = 30, label: str = "sweep"):
        self.total, self.stream, self.width, self.label = total, stream, width, label
        self.shown = -1
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.lock = threading.Lock()

    def _text(self, done: int) -> str:
        filled = int(self.width * done / self.total) if self.total else self.width
        return (f"{self.label} [{'#' * filled}{'-' * (self.width - filled)}]"
                f" {done:>{len(str(self.total))}}/{self.total} logins")

    def update(self, done: int) -> None:
        done = max(0, min(done, self.total))
        with self.lock:
            if done == self.shown:
                return
            if self.tty:
                self.stream.write("\r" + self._text(done))
            elif self.shown < 0 or 4 * done // max(self.total, 1) > \
                    4 * self.shown // max(self.total, 1):
                self.stream.write(self._text(done) + "\n")
            self.shown = done
            self.stream.flush()

    def finish(self) -> None:
        self.update(self.total)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _watch_sweep(dsn: str, logins: list[str], bar: ProgressBar,
                 stop: threading.Event) -> None:
    """Counts, from a second session, the rows the sweep has dropped (it commits each)."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not stop.wait(0.1):
                (left,) = conn.execute(
                    "SELECT count(*) FROM datatable_roles.datatable_role_set"
                    " WHERE login = ANY(%s::text[])", [logins]).fetchone()
                bar.update(len(logins) - left)
    except psycopg.Error:
        pass  # the bar is a courtesy; the report is what counts


def render_sweep(report: dict[str, Any]) -> str:
    out = [f"Sweep: {report.get('examined', 0)} examined, {report.get('dropped', 0)} dropped, "
           f"{report.get('skipped', 0)} skipped (used meanwhile), "
           f"{len(report.get('unfinished') or [])} unfinished"]
    if report.get("unfinished"):
        out.append(format_table(["login", "reason (next sweep tries again)"],
                                [[u.get("login"), u.get("reason")]
                                 for u in report["unfinished"]]))
    return "\n".join(out)


def cmd_sweep(args: argparse.Namespace) -> Output:
    from .client import Client

    with Client(args.dsn) as client:
        stale = stale_logins(client.conn, args.unused_for)
        bar = None
        if len(stale) > PROGRESS_THRESHOLD and not args.no_progress:
            bar = ProgressBar(len(stale), sys.stderr)
            bar.update(0)
            stop = threading.Event()
            watcher = threading.Thread(target=_watch_sweep, args=(args.dsn, stale, bar, stop),
                                       daemon=True)
            watcher.start()
        try:
            report = client.sweep(args.unused_for)
        finally:
            if bar is not None:
                stop.set()
                watcher.join(5)
                bar.finish()
    return Output(report, render_sweep(report))


# ---- lint-policies ----------------------------------------------------------------------

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
    """Policies of one database whose pg_has_role(...) names a role that does not exist."""
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


def cmd_lint_policies(args: argparse.Namespace) -> Output:
    if args.datatable_dsn is not None:
        targets = [args.datatable_dsn]
    else:  # every registered data table database, reached as the metadata login
        with connect_meta(args.dsn) as conn:
            try:
                dbs = [r[0] for r in conn.execute(
                    "SELECT DISTINCT dbname FROM datatable_roles.datatable"
                    " WHERE dbname IS NOT NULL ORDER BY 1")]
            except psycopg.Error as e:
                raise map_error(e) from None
        base = conninfo_to_dict(args.dsn)
        targets = [make_conninfo(**{**base, "dbname": db}) for db in dbs]
    findings: list[dict[str, Any]] = []
    for target in targets:
        findings += lint_database(target)
    if findings:
        text = (format_table(["database", "table", "policy", "clause", "missing role"],
                             [[f["database"], f["table"], f["policy"], f["clause"],
                               f["missing_role"]] for f in findings])
                + f"\n{len(findings)} policy clause(s) name a role that does not exist: "
                  "queries they apply to fail (renamed or dropped role?).")
    else:
        text = (f"No policy names a missing role ({len(targets)} database(s) checked).")
    return Output({"databases": len(targets), "findings": findings}, text,
                  1 if findings else 0)


# ---- migrate, demo ----------------------------------------------------------------------


def cmd_migrate(args: argparse.Namespace) -> Output:
    from .migrate import migrate

    conninfo = args.conninfo if args.conninfo is not None else args.dsn
    applied = migrate(conninfo, args.migrations)
    return Output({"applied": applied},
                  "\n".join(f"applied {m}" for m in applied) if applied else "nothing to apply")


def cmd_demo(args: argparse.Namespace) -> Output:
    from .demo import run_demo

    # Text mode streams the tour as it goes; --json prints the collected record at the end.
    data = run_demo(stream=None if args.json else sys.stdout)
    return Output(data, "", 0 if data.get("ok") else 1)


# ---- parser and main --------------------------------------------------------------------


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a UUID: {value!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="datatable-roles",
        description="Per-viewer PostgreSQL logins for data tables.",
        epilog="Exit codes: 0 ok, 1 error (lint-policies: findings), 2 usage.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--dsn", default="",
                        help="metadata database: libpq conninfo or URL (default: PG* env)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    # The same two options after the command; SUPPRESS keeps a value given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="machine-readable output")
    with_dsn = argparse.ArgumentParser(add_help=False, parents=[common])
    with_dsn.add_argument("--dsn", default=argparse.SUPPRESS,
                          help="metadata database (as the global --dsn)")

    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("migrate", parents=[with_dsn], help="apply pending migrations")
    p.add_argument("conninfo", nargs="?", default=None,
                   help="metadata database (default: --dsn)")
    p.add_argument("--migrations", help="migrations directory (default: the package's)")
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("status", parents=[with_dsn],
                       help="data tables (default role, roles, tenants) and set logins")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("explain", parents=[with_dsn],
                       help="why a job's connection resolves as it does (no side effects)")
    p.add_argument("job_id", type=_uuid, metavar="JOB_ID")
    p.add_argument("datatable", metavar="DATATABLE")
    p.add_argument("--role", help="the role the connection names")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("sweep", parents=[with_dsn],
                       help="drop this instance's set logins unused for 30 days")
    p.add_argument("--unused-for", metavar="INTERVAL",
                   help="e.g. '30 days' (default: the instance's setting)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser(
        "lint-policies", parents=[common],
        help="policies whose pg_has_role(...) names a role that does not exist",
        description="Lists row-level security policies whose USING or WITH CHECK expression "
                    "gives pg_has_role(...) a role name (as a string literal) that no role of "
                    "the cluster has; such policies make queries fail. Exits 1 on findings.")
    p.add_argument("--dsn", dest="datatable_dsn", default=None, metavar="DATATABLE_DSN",
                   help="a data table database (default: every registered one, reached "
                        "with the global --dsn's parameters)")
    p.set_defaults(func=cmd_lint_policies)

    p = sub.add_parser("demo", parents=[common],
                       help="a tour on a throwaway cluster: per-viewer rows under each default")
    p.set_defaults(func=cmd_demo)
    return parser


def print_error(err: DatatableRolesError, as_json: bool) -> None:
    state = f" ({err.sqlstate})" if err.sqlstate else ""
    print(f"error: {type(err).__name__}{state}: {err.message}", file=sys.stderr)
    if err.detail:
        print(f"  detail: {err.detail}", file=sys.stderr)
    if err.hint:
        print(f"  hint: {err.hint}", file=sys.stderr)
    if as_json:
        print(to_json({"error": err.to_dict()}))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version (0) or a usage error (2)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        result = args.func(args)
    except DatatableRolesError as e:
        print_error(e, args.json)
        return 1
    except psycopg.Error as e:
        print_error(map_error(e), args.json)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # yoyo, files, ...: still a clean message, never a password
        print_error(DatatableRolesError(redact(f"{type(e).__name__}: {e}") or ""), args.json)
        return 1
    if args.json:
        print(to_json(result.data))
    elif result.text:
        print(result.text)
    sys.stdout.flush()
    return result.code


if __name__ == "__main__":
    sys.exit(main())
