"""Command line interface: ``datatable-roles`` (also ``python -m datatable_roles``).

Commands: migrate, status, explain, sweep, lint-policies, doctor, register-datatable,
register-server, set-admin-password, usable-roles, preview-change, acl (show, plan, apply), sql-file,
verifier. Global options: ``--dsn``
(libpq conninfo or URL of the metadata database, for every command; empty: the PG*
environment variables) and ``--json`` (machine output; also accepted after the command).
Exit codes (:data:`EXIT_CODES`): 0 ok, 1 error, 2 usage, 3 the answer is no (explain: a
refusal; lint-policies: a policy names a role that does not exist; acl apply: the operator
said no). An error is printed once:
on stderr, or with --json as ``{"error": ...}`` on stdout.

status, sweep and lint-policies call owner-only functions and so run as the package owner;
explain also works as the worker role; acl as the owner or a role given grant_acl_editor.
acl apply asks before it applies (--yes: not; without a terminal it refuses). Each command
but migrate first checks that the metadata database has the package
(migrate.check_installed). Nothing prints a password. The demo is the lab's (``make demo``),
not a command of the installed package.

This module is the argument parser and one small function per command; the SQL calls are
the client's (client.py), the text is render.py's, the sweep's bar progress.py's and the
policy check policy_lint.py's.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import textwrap
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from . import render
from .client import Client
from .doctor import run_doctor
from .errors import DatatableRolesError, UnknownObject, map_error, redact
from .migrate import DIRECTORIES, SQL_DIR, check_installed, migrate
from .policy_lint import lint_databases
from .progress import ProgressBar, watching_sweep
from .scram import scram_sha256_verifier
from .versions import schema_level, version_text

# A sweep of more stale logins than this shows a progress bar on stderr.
PROGRESS_THRESHOLD = 20

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NO = 0, 1, 2, 3
EXIT_CODES = f"""exit codes:
  {EXIT_OK}  success
  {EXIT_ERROR}  error: class, message and hint on stderr (with --json: {{"error": ...}} on stdout)
  {EXIT_USAGE}  usage (bad arguments)
  {EXIT_NO}  the answer is no: explain's decision is a refusal; lint-policies found a policy
     naming a role that does not exist; doctor found a problem; acl apply: the operator
     answered no (nothing applied)"""
# A subcommand's --help points at the block instead of repeating it.
EXIT_CODES_SEE = "exit codes: 0 ok, 1 error, 2 usage, 3 the answer is no (datatable-roles --help)"


@dataclass
class Output:
    """What a command produced: ``data`` for --json, ``text`` for people."""

    data: Any
    text: str
    code: int = EXIT_OK


@contextmanager
def metadata_client(dsn: str) -> Iterator[Client]:
    """A client of the metadata database, once it is known to have the package."""
    with Client(dsn) as client:
        check_installed(client.conn)
        yield client


# ---- commands ---------------------------------------------------------------------------


def cmd_migrate(args: argparse.Namespace) -> Output:
    conninfo = args.conninfo if args.conninfo is not None else args.dsn
    applied = migrate(conninfo, args.migrations, args.directory)
    return Output({"applied": applied},
                  "\n".join(f"applied {m}" for m in applied) if applied else "nothing to apply")


def cmd_status(args: argparse.Namespace) -> Output:
    with metadata_client(args.dsn) as client:
        level = schema_level(client.conn)
        report = {"version": level.as_dict(), **client.status_report()}
    return Output(report, render.render_status(report))


def cmd_explain(args: argparse.Namespace) -> Output:
    with metadata_client(args.dsn) as client:
        data = client.explain(args.job_id, args.datatable, args.role)
    return Output(data, render.render_explain(data), EXIT_NO if data.get("refused") else EXIT_OK)


def cmd_sweep(args: argparse.Namespace) -> Output:
    with metadata_client(args.dsn) as client:
        stale = client.sweep_candidates(args.unused_for)
        if len(stale) > PROGRESS_THRESHOLD and not args.no_progress:
            bar = ProgressBar(len(stale), sys.stderr)
            with watching_sweep(args.dsn, stale, args.unused_for, bar):
                report = client.sweep(args.unused_for)
        else:
            report = client.sweep(args.unused_for)
    return Output(report, render.render_sweep(report))


def cmd_lint_policies(args: argparse.Namespace) -> Output:
    with metadata_client(args.dsn) as client:
        metadata_db = client.conn.info.dbname
        report = client.status_report()
    registered = sorted({d["dbname"] for d in report["datatables"] if d.get("dbname")})
    if args.database is None:  # every registered data table database, as the metadata login
        if not registered:
            raise UnknownObject(f"no data table is registered in metadata database "
                                f"{metadata_db!r}: there is no policy to check")
        targets = [make_conninfo(args.dsn, dbname=db) for db in registered]
    else:
        targets = [make_conninfo(args.dsn, **database_params(args.database))]
    result = lint_databases(targets)
    for db in result["databases"]:  # --database: a data table's, not any database
        if db not in registered:
            raise UnknownObject(
                f"database {db!r} is not the database of a data table registered in "
                f"metadata database {metadata_db!r}",
                hint="--database names a registered data table's database (registered: "
                     f"{', '.join(registered) or 'none'}); --dsn names the metadata database. "
                     "Without --database, every registered one is checked.")
    return Output(result, render.render_lint(result),
                  EXIT_NO if result["missing_roles"] else EXIT_OK)


def read_secret(args: argparse.Namespace) -> None:
    """args.secret, the admin password: from --password-file (- for standard input), from
    the variable --password-env names, or asked for on the terminal; never from the command
    line. Runs while the arguments are parsed, so that a missing source is a usage error."""
    if args.password_file is not None:
        if args.password_file == "-":
            text = sys.stdin.readline()
        else:
            with open(args.password_file, encoding="utf-8") as f:
                text = f.readline()
        secret = text.rstrip("\r\n")
    elif args.password_env is not None:
        secret = os.environ.get(args.password_env, "")
        if not secret:
            args.parser.error(f"--password-env {args.password_env}: the variable is not set "
                              "or empty")
    elif sys.stdin.isatty():
        secret = getpass.getpass("password: ")
    else:
        args.parser.error("no terminal to ask for the password on: give --password-file or "
                          "--password-env")
    if not secret:
        args.parser.error("the password is empty")
    args.secret = secret


def cmd_register_datatable(args: argparse.Namespace) -> Output:
    """register_datatable, the admin password in no statement text and no bind parameter."""
    with metadata_client(args.dsn) as client:
        datatable_id = client.register_datatable(args.workspace, args.name, args.dbname,
                                                 args.admin_login, args.secret, args.server)
    where = "" if args.server == "local" else f" on server {args.server}"
    return Output({"id": datatable_id, "workspace": args.workspace, "name": args.name,
                   "server": args.server},
                  f"registered data table {args.workspace}/{args.name} (id {datatable_id}) on "
                  f"database {args.dbname}{where}, admin login {args.admin_login}; its default "
                  "role is admin until you set another (set_datatable_default_role)")


def cmd_register_server(args: argparse.Namespace) -> Output:
    """register_datatable_server, the manager's password in no statement text or parameter."""
    with metadata_client(args.dsn) as client:
        client.register_datatable_server(args.name, args.host, args.port, args.manager_login,
                                         args.secret, args.sslmode, args.maintenance_db)
    return Output({"name": args.name, "host": args.host, "port": args.port},
                  f"registered server {args.name} ({args.host}:{args.port}, sslmode "
                  f"{args.sslmode}), managed by {args.manager_login}; register data tables "
                  f"on it with register-datatable --server {args.name}")


def cmd_set_admin_password(args: argparse.Namespace) -> Output:
    """set_datatable_admin_password, the password in no statement text or parameter."""
    with metadata_client(args.dsn) as client:
        client.set_datatable_admin_password(args.workspace, args.name, args.secret)
    return Output({"workspace": args.workspace, "name": args.name},
                  f"data table {args.workspace}/{args.name}: the package has the admin "
                  "login's new password")


# The set-up steps an operator runs with psql, by name (sql-file): the superuser steps of the
# self-hosted profile, and the managed profile's, which needs no superuser.
SET_UP_STEPS = ("bootstrap", "after-pg-upgrade", "pgbouncer-auth", "managed")


def write_private_file(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` at once (a new file renamed over it), mode 0600, with
    the owner of the file it replaces, so that PgBouncer never reads half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            st = os.stat(path)
            os.chown(tmp, st.st_uid, st.st_gid)
        except FileNotFoundError:
            pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def cmd_pgbouncer_userlist(args: argparse.Namespace) -> Output:
    with metadata_client(args.dsn) as client:
        lines = client.pgbouncer_userlist(args.database)
    text = "".join(line + "\n" for line in lines)
    if args.output is None:
        return Output({"lines": lines}, text.rstrip("\n"))
    write_private_file(args.output, text)
    return Output({"logins": len(lines), "path": args.output},
                  f"wrote {len(lines)} set logins to {args.output}")


def cmd_sql_file(args: argparse.Namespace) -> Output:
    """The path of a set-up step shipped with the package, for psql -f."""
    path = SQL_DIR / f"{args.step}.sql"
    return Output({"step": args.step, "path": str(path)}, str(path))


def cmd_verifier(args: argparse.Namespace) -> Output:
    """A SCRAM-SHA-256 verifier of a password, for CREATE ROLE ... PASSWORD '<verifier>': the
    server stores it as is, and the password itself is in no statement."""
    verifier = scram_sha256_verifier(args.secret)
    return Output({"verifier": verifier}, verifier)


def database_params(value: str) -> dict[str, Any]:
    """--database: a database name, or a conninfo/URL whose parameters replace --dsn's."""
    if "=" in value or value.startswith(("postgresql://", "postgres://")):
        return conninfo_to_dict(value)
    return {"dbname": value}


def cmd_usable_roles(args: argparse.Namespace) -> Output:
    """usable_datatable_roles: the roles a member may name, and what naming none gives."""
    with metadata_client(args.dsn) as client:
        data = client.usable_datatable_roles(args.workspace, args.datatable, args.username)
    named = [r["role"] for r in data if r["source"] == "named"]
    lines = [f"{args.username} may name: {', '.join(named) or '(none)'}"]
    for r in data:
        if r["source"] != "named":
            gives = ", ".join(r["roles"]) if r["roles"] else "refused"
            lines.append(f"naming no role ({r['source'].replace('_', ' ')}): {gives}"
                         f" [{r['rule']}; default: {r['role'] or 'none'}]")
    return Output(data, "\n".join(lines))


def cmd_preview_change(args: argparse.Namespace) -> Output:
    """preview_datatable_role_change: what a change to a role would retire and end."""
    with metadata_client(args.dsn) as client:
        report = client.preview_datatable_role_change(args.change, args.role, args.workspace,
                                                       args.datatable)
    lines = [f"{args.change} {report['role']} would retire {report['retired']} login(s) and "
             f"end {report['sessions']['count']} session(s); nothing was changed"]
    lines += [f"  data table {t['workspace']}/{t['name']}" + (" (its default)" if t["default"]
                                                             else "")
              for t in report["datatables"]]
    lines += [f"  login {x['login']} on {x['dbname']} ({', '.join(x['roles'])})"
              f"{'' if x['live'] else ' (already retired)'}: sessions {x['pids'] or 'none'}"
              for x in report["logins"]]
    lines += [f"  objects in {o['dbname']} move to {o['moved_to'] or '(dropped)'}"
              for o in report.get("objects_in", [])]
    return Output(report, "\n".join(lines))


# ---- acl: the grants editor (docs/acl.md) ------------------------------------------------

# --on's values, as typed (a hyphen for the space of the SQL's "all tables").
ACL_ON = ("target", "all-tables", "all-sequences", "all-functions", "future-tables",
          "future-sequences", "future-functions", "future-schemas")


def _acl_on(value: str) -> str:
    """--on: 'all-tables' or 'all tables' (any case) -> the SQL's 'all tables'."""
    typed = value.strip().lower().replace(" ", "-")
    if typed not in ACL_ON:
        raise argparse.ArgumentTypeError(f"invalid --on {value!r} (choose from "
                                         f"{', '.join(ACL_ON)})")
    return typed.replace("-", " ")


def _names_list(value: str) -> list[str]:
    """A comma-separated list: 'SELECT, insert' -> ['SELECT', 'insert']."""
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        raise argparse.ArgumentTypeError("an empty list")
    return names


def _json_object(value: str) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(data, dict):
        raise argparse.ArgumentTypeError("not a JSON object")
    return data


def acl_target(args: argparse.Namespace) -> dict[str, Any]:
    """The target JSON of --database, --schema [--table] or --target."""
    if args.table is not None and args.schema is None:
        args.parser.error("--table needs --schema")
    if args.target is not None:
        return args.target
    if args.database:
        return {"database": True}
    return {"schema": args.schema} | ({} if args.table is None else {"table": args.table})


def acl_change(args: argparse.Namespace) -> dict[str, Any]:
    """The change JSON of --grant/--to, --revoke/--from (with --on, --for), --owner or
    --change; a combination that means nothing is a usage error."""
    error = args.parser.error
    extra = [flag for flag, value in (("--to", args.to), ("--from", args.from_),
                                      ("--on", args.on), ("--for", args.for_))
             if value is not None]
    if args.change is not None or args.owner is not None:
        if extra:
            error(f"{', '.join(extra)}: only with --grant or --revoke")
        return args.change if args.change is not None else {"owner": args.owner}
    verb, who, whom = (("grant", "--to", args.to) if args.grant is not None
                       else ("revoke", "--from", args.from_))
    wrong = "--from" if verb == "grant" else "--to"
    if wrong in extra:
        error(f"{wrong}: --{verb} names its role with {who}")
    if whom is None:
        error(f"--{verb} needs {who} ROLE")
    change: dict[str, Any] = {verb: args.grant if verb == "grant" else args.revoke,
                              who.removeprefix("--"): whom}
    if args.on is not None:
        change["on"] = args.on
    if args.for_ is not None:
        if not (args.on or "").startswith("future "):
            error("--for: only with --on future-...")
        change["for"] = args.for_
    return change


def prepare_acl(args: argparse.Namespace) -> None:
    """Before an acl command runs (a usage error, exit 2, otherwise): its target and change
    as the SQL takes them, in ``args.acl_target`` and ``args.acl_change``."""
    args.acl_target = acl_target(args)
    args.acl_change = acl_change(args) if hasattr(args, "grant") else None


def cmd_acl_show(args: argparse.Namespace) -> Output:
    target = args.acl_target
    with metadata_client(args.dsn) as client:
        data = client.datatable_acl(args.workspace, args.datatable, target)
    return Output(data, render.render_acl(data))


def cmd_acl_plan(args: argparse.Namespace) -> Output:
    target, change = args.acl_target, args.acl_change
    with metadata_client(args.dsn) as client:
        plan = client.plan_datatable_acl(args.workspace, args.datatable, target, change)
    return Output(plan, render.render_acl_plan(plan))


def confirm(question: str) -> bool:
    """Asks on stderr, reads a line of stdin: yes only for y or yes."""
    print(question, end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def cmd_acl_apply(args: argparse.Namespace) -> Output:
    """Plans, shows the plan, asks (unless --yes), then applies exactly the statements shown:
    the server plans again and refuses (55000 plan_changed) if they differ."""
    target, change = args.acl_target, args.acl_change
    with metadata_client(args.dsn) as client:
        plan = client.plan_datatable_acl(args.workspace, args.datatable, target, change)
        shown = list(plan["statements"])
        if not (args.json and args.yes):  # --json --yes: the result below has the statements
            # With --json, stdout is the JSON alone: the plan for the operator goes to stderr.
            print(render.render_acl_plan(plan), file=sys.stderr if args.json else sys.stdout,
                  flush=True)
        if shown and not args.yes:
            if sys.stdin is None or not sys.stdin.isatty():
                raise DatatableRolesError(
                    "nothing applied: applying needs a confirmation, and stdin is not a "
                    "terminal",
                    hint="Review the plan above, then run the same command with --yes: it "
                         "applies exactly the statements it shows, or refuses if the plan "
                         "changed meanwhile.")
            if not confirm(f"Apply these {len(shown)} statement(s) to data table "
                           f"{plan.get('datatable')}? [y/N] "):
                return Output({**plan, "applied": 0, "audit_id": None, "confirmed": False},
                              "Not applied (answered no).", EXIT_NO)
        result = client.apply_datatable_acl(args.workspace, args.datatable, target, change,
                                            shown)
    return Output(result, render.render_acl_applied(result))


def cmd_doctor(args: argparse.Namespace) -> Output:
    # Not check_installed() first: what is missing is the doctor's to report.
    report = run_doctor(args.dsn)
    return Output(report.to_dict(), report.render(), EXIT_OK if report.ok else EXIT_NO)


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
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    # the package version and the newest migration it ships (versions.py)
    parser.add_argument("--version", action="version", version=f"%(prog)s {version_text()}")
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

    def command(name: str, summary: str, description: str, parents=(with_dsn,)):
        return sub.add_parser(name, parents=list(parents), help=summary,
                              description=textwrap.fill(description, 88),
                              epilog=EXIT_CODES_SEE,
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    p = command("migrate", "apply pending migrations",
                "Installs the package into the metadata database, or upgrades it: the pending "
                "migrations, then every function. Run it as the package owner, after the "
                "superuser step sql/bootstrap.sql; it checks both first and says what is "
                "missing.")
    p.add_argument("conninfo", nargs="?", default=None,
                   help="metadata database (default: --dsn)")
    p.add_argument("--migrations", help="migrations directory (default: the package's)")
    p.add_argument("--directory", choices=DIRECTORIES, default=None,
                   help="read users, groups and folders through this adapter from now on"
                        " (builtin: the package's own tables; docs/integration.md)")
    p.set_defaults(func=cmd_migrate)

    p = command("status", "data tables (default role, roles, tenants) and the logins handed "
                          "to jobs",
                "Per data table: its default role (with a warning while it is admin), its "
                "roles and their tenants; the catalog roles; the logins handed to jobs, most "
                "recently used first, with their state. As the package owner.")
    p.set_defaults(func=cmd_status)

    p = command("explain", "why a job's connection resolves as it does (no side effects)",
                "The decision for a job's connection to a data table, rule by rule, and the "
                "login it gets, or the refusal (exit code 3). Nothing is created or "
                "recorded. As the package owner or the worker role.")
    p.add_argument("job_id", type=_uuid, metavar="JOB_ID")
    p.add_argument("datatable", metavar="DATATABLE")
    p.add_argument("--role", help="the role the connection names")
    p.set_defaults(func=cmd_explain)

    p = command("sweep", "drop this instance's unused logins; rotate and heal passwords",
                "Drops the logins handed to jobs that no job used for the instance's "
                "unused_after setting (or --unused-for), gives live logins new passwords "
                "when rotate_every has passed, and heals logins changed outside the package. "
                "As the package owner.")
    p.add_argument("--unused-for", metavar="INTERVAL",
                   help="e.g. '30 days' (default: the instance's unused_after setting)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_sweep)

    p = command("pgbouncer-userlist", "PgBouncer's auth_file lines of the live set logins",
                "Each live set login with the SCRAM verifier the package set as its "
                "password, as PgBouncer's auth_file wants it, for PgBouncer where auth_query "
                "cannot read verifiers (managed PostgreSQL; docs/operating.md). PgBouncer "
                "knows a login made or re-keyed since only after the next run and reload: "
                "run it often, and after each sweep. With --output, the file is replaced at "
                "once, mode 0600. "
                "As the package owner.")
    p.add_argument("--database", metavar="DBNAME",
                   help="the set logins of this data table database only")
    p.add_argument("--output", metavar="PATH", help="write the file (default: print)")
    p.set_defaults(func=cmd_pgbouncer_userlist)

    p = command("lint-policies", "policies that name a role as text",
                "Checks the row-level security policies of every registered data table's "
                "database (reached with --dsn's parameters, as the metadata login), or of "
                "the one --database names. A policy whose USING or WITH CHECK expression "
                "names a role as text (pg_has_role(current_user, 'r', 'member'), "
                "current_user = 'r') is listed: as an error when no role has that name "
                "(exit code 3), as a rename hazard (a warning) when one has. The fix: CREATE "
                "POLICY ... TO <role>. As the package owner.")
    p.add_argument("--database", metavar="DBNAME_OR_CONNINFO",
                   help="check this data table database only: a database name (reached with "
                        "--dsn's parameters), or a conninfo/URL whose parameters replace "
                        "--dsn's")
    p.set_defaults(func=cmd_lint_policies)

    p = command("doctor", "check the install and say how to fix what is wrong",
                "Checks the owner's privileges, the superuser bootstrap, migrations and the "
                "functions digest, the worker's grants, each data table's database through "
                "the package's link and its admin password, CONNECT grants, pg_hba.conf (when "
                "readable) and policies naming missing roles. Prints one line per check and "
                "each problem's fix; exit code 3 when a check failed. As the package owner.")
    p.set_defaults(func=cmd_doctor)

    secret = argparse.ArgumentParser(add_help=False)
    source = secret.add_mutually_exclusive_group()
    source.add_argument("--password-file", metavar="PATH",
                        help="read the password from the first line of PATH (- for "
                             "standard input)")
    source.add_argument("--password-env", metavar="VAR",
                        help="read the password from the environment variable VAR")

    p = command("register-datatable", "register a data table (its admin password asked for, "
                                      "never on the command line)",
                "register_datatable: a data table WORKSPACE/NAME on database DBNAME, owned by "
                "ADMIN_LOGIN. The admin password is asked for on the terminal, or read from "
                "--password-file or --password-env, and reaches the server as COPY data: in no "
                "statement text and no bind parameter, so no log_* setting of the server logs "
                "it, even when a step fails. The package tries it as a login first. As the "
                "package owner.", parents=(with_dsn, secret))
    p.add_argument("workspace", metavar="WORKSPACE")
    p.add_argument("name", metavar="NAME")
    p.add_argument("dbname", metavar="DBNAME")
    p.add_argument("admin_login", metavar="ADMIN_LOGIN")
    p.add_argument("--server", default="local",
                   help="the server DBNAME is on (register-server; default local: this "
                        "cluster)")
    p.set_defaults(func=cmd_register_datatable, parser=p, prepare=read_secret)

    p = command("register-server", "register another PostgreSQL server data tables may be on",
                "register_datatable_server: server NAME at HOST:PORT, where MANAGER_LOGIN "
                "(NOSUPERUSER, CREATEROLE, pg_signal_backend: a managed service's admin role) "
                "makes the catalog roles and logins (docs/servers.md). Its password is read as "
                "register-datatable reads the admin's, and tried as a login. As the package "
                "owner.", parents=(with_dsn, secret))
    p.add_argument("name", metavar="NAME")
    p.add_argument("host", metavar="HOST")
    p.add_argument("port", metavar="PORT", type=int)
    p.add_argument("manager_login", metavar="MANAGER_LOGIN")
    p.add_argument("--sslmode", default="require", help="libpq sslmode (default require)")
    p.add_argument("--maintenance-db", default="postgres",
                   help="the database the manager connects to for role statements "
                        "(default postgres)")
    p.set_defaults(func=cmd_register_server, parser=p, prepare=read_secret)

    p = command("set-admin-password", "give the package a data table's new admin password",
                "set_datatable_admin_password, after the admin login's password was changed "
                "outside the package (resolves of it are refused with 55000 until then). The "
                "password is read as register-datatable reads it. As the package owner.",
                parents=(with_dsn, secret))
    p.add_argument("workspace", metavar="WORKSPACE")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(func=cmd_set_admin_password, parser=p, prepare=read_secret)

    p = command("usable-roles", "the roles a member may name on a data table",
                "The roles USERNAME may name on the data table (R1), and what a connection "
                "naming no role gives a job run as that member, with no viewer and as its "
                "own viewer (usable_datatable_roles). No tenant list is shown. As the package "
                "owner or the worker role.")
    p.add_argument("workspace", metavar="WORKSPACE")
    p.add_argument("datatable", metavar="DATATABLE")
    p.add_argument("username", metavar="USERNAME")
    p.set_defaults(func=cmd_usable_roles)

    p = command("preview-change", "what removing, disabling, retiring or dropping a role "
                                  "would retire and end (changes nothing)",
                "The logins the change would retire, the sessions it would end and the data "
                "tables it touches (preview_datatable_role_change); nothing is changed. "
                "remove needs --workspace and --datatable. As the package owner.")
    p.add_argument("change", choices=("remove", "disable", "retire", "drop"))
    p.add_argument("role", metavar="ROLE")
    p.add_argument("--workspace")
    p.add_argument("--datatable")

    def remove_names_its_datatable(args: argparse.Namespace, p=p) -> None:
        missing = [f"--{a}" for a in ("workspace", "datatable")
                   if args.change == "remove" and getattr(args, a) is None]
        if missing:
            p.error(f"remove needs {' and '.join(missing)}: the data table to remove the "
                    "role from")
    p.set_defaults(func=cmd_preview_change, prepare=remove_names_its_datatable)

    add_acl_commands(sub, with_dsn)

    p = command("sql-file", "the path of a set-up step, for psql -f",
                "Prints where the package's set-up steps are. Self-hosted, as a superuser: "
                "bootstrap (once per metadata database, and again before an upgrade), "
                "after-pg-upgrade (after pg_upgrade from 15), pgbouncer-auth (per data table "
                "database behind PgBouncer). Managed PostgreSQL, no superuser: managed (once "
                "per metadata database, as its owner or the service's admin role, before "
                "CREATE EXTENSION dblink). Needs no --dsn.", parents=(common,))
    p.add_argument("step", choices=SET_UP_STEPS)
    p.set_defaults(func=cmd_sql_file)

    p = command("verifier", "a SCRAM verifier of a password, to create a role with",
                "Prints the SCRAM-SHA-256 verifier of a password read as register-datatable "
                "reads it (terminal, --password-file or --password-env), for CREATE ROLE ... "
                "PASSWORD '<verifier>': the server stores the verifier as is, so the password "
                "is in no statement and no log. Needs no --dsn.", parents=(common, secret))
    p.set_defaults(func=cmd_verifier, parser=p, prepare=read_secret)
    return parser


ACL_TARGET_HELP = """target (one of):
  --database                 the data table's database
  --schema S [--table T]     schema S, or relation T of S (table, view, sequence, ...)
  --target JSON              as the SQL takes it: '{"schema": "s", "table": "t"}'"""

ACL_CHANGE_HELP = """change (one of):
  --grant PRIVILEGES --to ROLE [--on WHERE [--for ROLES]]
  --revoke PRIVILEGES --from ROLE [--on WHERE [--for ROLES]]
  --owner ROLE               hand the target (a schema: with everything in it) to ROLE
  --change JSON              as the SQL takes it: '{"grant": ["SELECT"], "to": "r"}'
PRIVILEGES is a comma-separated list (SELECT,INSERT; ALL). ROLE is admin (the data table's
admin login) or a catalog role of the data table's map. WHERE: target (default), all-tables,
all-sequences, all-functions (each existing one of a schema), future-tables,
future-sequences, future-functions, future-schemas (default privileges; --for: the
creating roles, default admin and every other role of the map). docs/acl.md has the
details: the privileges per kind, the warnings, the ordering of an apply."""


def add_acl_commands(sub: Any, with_dsn: argparse.ArgumentParser) -> None:
    """acl show|plan|apply WORKSPACE DATATABLE, a target and (plan, apply) a change."""
    formatter = argparse.RawDescriptionHelpFormatter
    acl = sub.add_parser(
        "acl", help="grants in a data table's database: show, plan, apply (docs/acl.md)",
        description=textwrap.fill(
            "The grants editor: what each role may touch in a data table's database. show "
            "reads a target's owner, grants and default privileges; plan prints the exact "
            "GRANT / REVOKE / ALTER DEFAULT PRIVILEGES / ALTER ... OWNER TO statements a "
            "change takes, with warnings; apply plans, shows the plan, asks, and applies "
            "exactly the statements shown. As the package owner or a role given "
            "datatable_roles.grant_acl_editor.", 88),
        epilog=EXIT_CODES_SEE, formatter_class=formatter)
    acl_sub = acl.add_subparsers(dest="acl_command", metavar="ACL_COMMAND", required=True)

    target = argparse.ArgumentParser(add_help=False)
    target.add_argument("workspace", metavar="WORKSPACE")
    target.add_argument("datatable", metavar="DATATABLE")
    which = target.add_mutually_exclusive_group(required=True)
    which.add_argument("--database", action="store_true", help="the data table's database")
    which.add_argument("--schema", metavar="SCHEMA", help="a schema (exact name)")
    which.add_argument("--target", metavar="JSON", type=_json_object,
                       help="the target as JSON")
    target.add_argument("--table", metavar="TABLE",
                        help="with --schema: a relation of it (exact name)")

    change = argparse.ArgumentParser(add_help=False)
    what = change.add_mutually_exclusive_group(required=True)
    what.add_argument("--grant", metavar="PRIVILEGES", type=_names_list)
    what.add_argument("--revoke", metavar="PRIVILEGES", type=_names_list)
    what.add_argument("--owner", metavar="ROLE")
    what.add_argument("--change", metavar="JSON", type=_json_object,
                      help="the change as JSON")
    change.add_argument("--to", metavar="ROLE", help="with --grant")
    change.add_argument("--from", dest="from_", metavar="ROLE", help="with --revoke")
    change.add_argument("--on", metavar="WHERE", type=_acl_on,
                        help=f"with --grant or --revoke: {', '.join(ACL_ON)}")
    change.add_argument("--for", dest="for_", metavar="ROLES", type=_names_list,
                        help="with --on future-...: the creating roles, comma-separated")

    def acl_command(name: str, summary: str, description: str, parents: tuple,
                    epilog: str) -> argparse.ArgumentParser:
        p = acl_sub.add_parser(name, parents=[*parents, with_dsn], help=summary,
                               description=textwrap.fill(description, 88),
                               epilog=epilog + "\n\n" + EXIT_CODES_SEE, formatter_class=formatter)
        p.set_defaults(parser=p, prepare=prepare_acl)
        return p

    p = acl_command("show", "a target's owner, grants, default privileges and contents",
                    "Reads the target through the data table's admin login: its owner, the "
                    "grants per role (admin, catalog roles by name, PUBLIC, others), row "
                    "security for a table, default privileges and the schemas or relations "
                    "it holds. Changes nothing.", (target,), ACL_TARGET_HELP)
    p.set_defaults(func=cmd_acl_show)
    p = acl_command("plan", "the statements a change takes, and its warnings",
                    "Prints the numbered statements the change takes on the target, then "
                    "the warnings (RLS disabled, CREATE on a search_path schema, PUBLIC "
                    "grants, ...). Changes nothing; --json prints the plan as "
                    "plan_datatable_acl returns it.", (target, change),
                    ACL_TARGET_HELP + "\n\n" + ACL_CHANGE_HELP)
    p.set_defaults(func=cmd_acl_plan)
    p = acl_command("apply", "plan, show, confirm and apply exactly the statements shown",
                    "Plans the change, prints the plan, asks for a confirmation on the "
                    "terminal (--yes: none), then applies exactly the statements it showed, "
                    "in one transaction of the data table's database, with an audit row. "
                    "If the plan changed meanwhile (a new table, another owner) nothing is "
                    "applied (55000 plan_changed): plan again. Without a terminal and without "
                    "--yes it refuses. Answering no exits with 3. With --json the plan and "
                    "question go to stderr and stdout is apply_datatable_acl's result.",
                    (target, change), ACL_TARGET_HELP + "\n\n" + ACL_CHANGE_HELP)
    p.add_argument("--yes", action="store_true",
                   help="apply without asking (the plan is still printed)")
    p.set_defaults(func=cmd_acl_apply)


def print_error(err: DatatableRolesError, as_json: bool) -> None:
    """The error, once: as JSON on stdout with --json, else class, message and hint on
    stderr."""
    if as_json:
        print(render.to_json({"error": err.to_dict()}))
        return
    state = f" ({err.sqlstate})" if err.sqlstate else ""
    print(f"error: {type(err).__name__}{state}: {err.message}", file=sys.stderr)
    if err.detail:
        print(f"  detail: {err.detail}", file=sys.stderr)
    if err.hint:
        print(f"  hint: {err.hint}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if getattr(args, "prepare", None) is not None:
            args.prepare(args)  # checks that need several arguments (acl's change)
    except SystemExit as e:  # --help, --version (0) or a usage error (2)
        return e.code if isinstance(e.code, int) else (EXIT_OK if e.code is None else EXIT_USAGE)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        result = args.func(args)
    except DatatableRolesError as e:
        print_error(e, args.json)
        return EXIT_ERROR
    except psycopg.Error as e:
        print_error(map_error(e), args.json)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # yoyo, files, ...: still a clean message, never a password
        print_error(DatatableRolesError(redact(f"{type(e).__name__}: {e}") or ""), args.json)
        return EXIT_ERROR
    if args.json:
        print(render.to_json(result.data))
    elif result.text:
        print(result.text)
    sys.stdout.flush()
    return result.code


if __name__ == "__main__":
    sys.exit(main())
