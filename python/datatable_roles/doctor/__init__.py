"""``doctor``: a health check of one install, for what operators get wrong.

:func:`run_doctor` connects to the metadata database as the package owner and returns a
:class:`DoctorReport`: one :class:`Check` per thing it verified, each failure with the
statement or command that fixes it. A failed check never raises; only a metadata database
that cannot be reached does (:class:`~datatable_roles.errors.DatatableRolesError`).

The checks, in order (``name``, and ``subject`` where there is one per data table):

- ``owner``: the connected role holds the package owner's privileges (it is the owner of
  schema datatable_roles, a member of it, or a superuser), the server is PostgreSQL 15 or
  later, and the owner (read by name) is NOSUPERUSER, with CREATEROLE,
  ``pg_signal_backend``, CREATE on the metadata database and its schema public, CONNECT on
  it WITH GRANT OPTION, and membership in each data table's admin login (WITH ADMIN OPTION
  on PostgreSQL 16 and later): docs/operating.md, "Privileges";
- ``bootstrap``: the install's profile and what its set-up step leaves: self-hosted
  (sql/bootstrap.sql's role guard, on 16+ all of it, and no ``verifier_is`` of an earlier
  release) or managed (sql/managed.sql and the extension step); both: dblink in
  ``datatable_roles_dblink`` usable by the owner alone, no CONNECT for PUBLIC on the
  metadata database;
- ``migrations``: every migration of this package applied, none unknown to it;
- ``functions_digest``: ``settings.functions_sha256`` is the digest of this package's
  function sources (what sql/migrations/post-apply.py records);
- ``worker_grants``: each worker role of ``worker_role`` may run the worker's calls (the
  ``'worker'`` rows of ``datatable_roles.entry_point``) and connect to the metadata
  database, and reads nothing else (no superuser, not a member of the owner);
- ``datatable_link`` (per data table database): the package's link login logs in there,
  as the package's own dblink sessions do (``datatable_roles.login_fails``), and holds each
  admin login of that database;
- ``admin_password`` (per data table): ``status_report``'s ``admin_password_ok``, then a
  login attempt with the stored password from ``settings.link_host``;
- ``servers`` (per other server, docs/servers.md): its manager logs in, it has applied
  every role change (none pending), and its data tables' admin logins log in. For each
  server that passes, the manager reads its catalog there once, for the parts of
  connect_grants, login_reach and policies about that server (subject: the server's name);
- ``connect_grants``: no CONNECT for PUBLIC on data table databases, none for catalog
  roles anywhere, each live generated login CONNECT on its own database only and in the
  login group, and CONNECT on the metadata database for the link login (docs/trust.md);
  on another server the same, read there (no login group check there);
- ``pg_hba``: from ``pg_hba_file_rules`` when the connected role may read it (by default
  only superusers may: then the check is *skipped*, not failed, and its fix says which
  lines the file needs and how to let the doctor read it): the first matching line lets the
  link login, each admin login and a generated login into the data table databases with a
  password from ``settings.link_host``, and refuses generated logins on postgres,
  template1, the metadata database and every other database PUBLIC may connect to, over
  the socket (``local``) as over TCP (:func:`hba_first_match` picks the line);
- ``login_reach``: tries it, whatever the file says: the server (dblink) logs in as a live
  generated login, with the password the package stores, to each of those databases over
  its Unix socket and over TCP; any attempt that gets in fails the check. On another
  server, a live login of that server tries each database there PUBLIC may connect to;
- ``policies`` (per data table database): policies naming, as text, a role that does not
  exist (the tokenizer of :mod:`datatable_roles.policy_lint`), read through the link login
  (on another server: as the data table's admin login, against the roles there); names of
  existing roles (rename hazards) are noted, not failed.

Nothing here prints a password: the link login's and the admin logins' passwords stay in
the database (the login attempts and the dblink sessions are built from the table rows in
SQL).

The CLI's ``doctor`` command: ``datatable-roles --dsn <owner's metadata DSN> doctor
[--json]`` prints :meth:`DoctorReport.render` (or :meth:`DoctorReport.to_dict`) and exits 0
when every check passed, 1 otherwise.

One module per area: ``owner``; ``install`` (bootstrap, migrations, functions_digest);
``worker`` (worker_grants); ``datatables``
(datatable_link, admin_password); ``servers``; ``connect`` (connect_grants); ``hba`` (pg_hba and
:func:`hba_first_match`); ``reach`` (login_reach); ``policies``. ``report`` holds
:class:`Check` and :class:`DoctorReport`, ``context`` what every check reads, ``quoting``
the names in fix texts; this module runs the checks in the order above (``_CHECKS``).
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from ..errors import map_error, redact
from .connect import check_connect_grants
from .context import MIGRATE_FIX, _Context, _load
from .datatables import check_admin_password, check_datatable_link
from .hba import HbaRule, check_pg_hba, hba_first_match
from .install import check_bootstrap, check_functions_digest, check_migrations
from .owner import check_owner
from .policies import check_policies
from .quoting import _error_text
from .reach import check_login_reach
from .servers import check_servers
from .report import Check, DoctorReport
from .worker import check_worker_grants

__all__ = ["Check", "DoctorReport", "run_doctor", "HbaRule", "hba_first_match"]

# A statement of the doctor never waits longer than this (a login attempt to a host that
# does not answer, a lock).
STATEMENT_TIMEOUT = "60s"


def run_doctor(dsn: str) -> DoctorReport:
    """Check the install reached by ``dsn`` (libpq conninfo or URL of the metadata database,
    as the package owner; empty: the PG* environment variables). Raises
    :class:`~datatable_roles.errors.DatatableRolesError` only when it cannot connect."""
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.Error as e:
        raise map_error(e) from None
    with conn:
        try:
            conn.execute("SET search_path = pg_catalog, pg_temp")
            conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
            ctx = _load(conn)
        except psycopg.Error as e:
            raise map_error(e) from None
        report = DoctorReport(database=ctx.database, user=ctx.user,
                              server_version=ctx.version)
        for name, fn, needs in _CHECKS:
            report.checks.extend(_run_check(ctx, name, fn, needs))
    return report


def _run_check(ctx: _Context, name: str, fn: Callable[[_Context], list[Check]],
               needs: str) -> list[Check]:
    """Runs one check function; what it needs missing makes it skipped, an error failed."""
    if needs in ("owner", "status") and not ctx.installed:
        return [Check(name, True, "not checked: the package is not installed in this database",
                      skipped=True)]
    if needs in ("owner", "status") and not ctx.is_owner:
        return [Check(name, True, f"not checked: needs the package owner ({ctx.owner}), "
                      f"connected as {ctx.user}", skipped=True)]
    if needs == "status" and ctx.status is None:
        return [Check(name, False, f"could not read status_report(): {ctx.status_error}",
                      MIGRATE_FIX)]
    try:
        return fn(ctx)
    except psycopg.Error as e:
        return [Check(name, False, f"could not check: {_error_text(e)}",
                      "Run the doctor as the package owner; the error says what is missing.")]
    except Exception as e:  # noqa: BLE001 - one check's bug must not hide the others
        return [Check(name, False, f"could not check: {type(e).__name__}: "
                      f"{redact(str(e)) or ''}", "Report this as a bug of the doctor.")]


# name, function, what it needs: "" (any connection), "owner" (the package, as its owner),
# "status" (also status_report()).
_CHECKS: list[tuple[str, Callable[[_Context], list[Check]], str]] = [
    ("owner", check_owner, ""),
    ("bootstrap", check_bootstrap, ""),
    ("migrations", check_migrations, ""),
    ("functions_digest", check_functions_digest, "owner"),
    ("worker_grants", check_worker_grants, "owner"),
    ("datatable_link", check_datatable_link, "status"),
    ("admin_password", check_admin_password, "status"),
    ("servers", check_servers, "status"),  # before the three that read ctx.far
    ("connect_grants", check_connect_grants, "status"),
    ("pg_hba", check_pg_hba, "status"),
    ("login_reach", check_login_reach, "status"),
    ("policies", check_policies, "status"),
]
