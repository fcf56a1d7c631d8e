"""Command line interface: ``datatable-roles`` (also ``python -m datatable_roles``).

Commands: migrate, status, explain, sweep, lint-policies, demo. Global options: ``--dsn``
(libpq conninfo or URL of the metadata database; empty: the PG* environment variables) and
``--json`` (machine output; also accepted after the command). Exit codes: 0 ok, 1 error (or,
for lint-policies, findings), 2 usage.

status, sweep and lint-policies (without its own --dsn) call owner-only functions and so run
as the package owner; explain also works as the worker role. Nothing prints a password.

This module is the argument parser and one small function per command; the SQL calls are
the client's (client.py), the text is render.py's, the sweep's bar progress.py's and the
policy check policy_lint.py's.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from . import __version__, render
from .client import Client
from .demo import run_demo
from .errors import DatatableRolesError, map_error, redact
from .migrate import DIRECTORIES, migrate
from .policy_lint import lint_database
from .progress import ProgressBar, watching_sweep

# A sweep of more stale logins than this shows a progress bar on stderr.
PROGRESS_THRESHOLD = 20


@dataclass
class Output:
    """What a command produced: ``data`` for --json, ``text`` for people."""

    data: Any
    text: str
    code: int = 0


# ---- commands ---------------------------------------------------------------------------


def cmd_migrate(args: argparse.Namespace) -> Output:
    conninfo = args.conninfo if args.conninfo is not None else args.dsn
    applied = migrate(conninfo, args.migrations, args.directory)
    return Output({"applied": applied},
                  "\n".join(f"applied {m}" for m in applied) if applied else "nothing to apply")


def cmd_status(args: argparse.Namespace) -> Output:
    with Client(args.dsn) as client:
        report = client.status_report()
    return Output(report, render.render_status(report))


def cmd_explain(args: argparse.Namespace) -> Output:
    with Client(args.dsn) as client:
        data = client.explain(args.job_id, args.datatable, args.role)
    return Output(data, render.render_explain(data))


def cmd_sweep(args: argparse.Namespace) -> Output:
    with Client(args.dsn) as client:
        stale = client.sweep_candidates(args.unused_for)
        if len(stale) > PROGRESS_THRESHOLD and not args.no_progress:
            bar = ProgressBar(len(stale), sys.stderr)
            with watching_sweep(args.dsn, stale, args.unused_for, bar):
                report = client.sweep(args.unused_for)
        else:
            report = client.sweep(args.unused_for)
    return Output(report, render.render_sweep(report))


def cmd_lint_policies(args: argparse.Namespace) -> Output:
    if args.datatable_dsn is not None:
        targets = [args.datatable_dsn]
    else:  # every registered data table database, reached as the metadata login
        with Client(args.dsn) as client:
            report = client.status_report()
        dbs = sorted({d["dbname"] for d in report["datatables"] if d.get("dbname")})
        base = conninfo_to_dict(args.dsn)
        targets = [make_conninfo(**{**base, "dbname": db}) for db in dbs]
    findings: list[dict[str, Any]] = []
    for target in targets:
        findings += lint_database(target)
    return Output({"databases": len(targets), "findings": findings},
                  render.render_lint(findings, len(targets)), 1 if findings else 0)


def cmd_demo(args: argparse.Namespace) -> Output:
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
    p.add_argument("--directory", choices=DIRECTORIES, default=None,
                   help="read users, groups and folders through this adapter from now on"
                        " (builtin: the package's own tables; docs/integration.md)")
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("status", parents=[with_dsn],
                       help="data tables (default role, roles, tenants) and the logins handed "
                            "to jobs")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("explain", parents=[with_dsn],
                       help="why a job's connection resolves as it does (no side effects)")
    p.add_argument("job_id", type=_uuid, metavar="JOB_ID")
    p.add_argument("datatable", metavar="DATATABLE")
    p.add_argument("--role", help="the role the connection names")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("sweep", parents=[with_dsn],
                       help="drop this instance's logins unused for 30 days; rotate and heal "
                            "passwords")
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
        print(render.to_json({"error": err.to_dict()}))


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
        print(render.to_json(result.data))
    elif result.text:
        print(result.text)
    sys.stdout.flush()
    return result.code


if __name__ == "__main__":
    sys.exit(main())
