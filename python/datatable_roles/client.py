"""A small typed client over the package's public SQL functions.

::

    from datatable_roles.client import Client

    with Client("host=/run/postgresql dbname=windmill user=worker") as dtr:
        res = dtr.resolve(job_id, "main")          # Resolution(dbname, login, password, roles)
        with dtr.connect(job_id, "main") as conn:  # pooled, logged in as res.login
            conn.execute("SELECT * FROM orders")

A one-role login (``kind`` ``role``, R6) is connected with the startup option
``options='-c role=<the role>'``, so that its sessions act as the role (``current_user`` is the
role, and what they create belongs to the role). A connection refused for a bad password
(someone changed the login's password between the resolve and the connection) is retried
once: :meth:`Client.connect` resolves again, which heals the login, and logs a warning.

This module holds every SQL string that calls the package's functions: the CLI, and the lab's
demo and bench, call these methods. Every call binds its values as parameters; no value is ever
formatted into SQL text. Errors
arrive as the classes of :mod:`datatable_roles.errors`. Each call runs in a transaction of its
own when the metadata connection is idle (or in autocommit); a call made inside a transaction
the caller opened becomes part of it (a savepoint), and then a set login it creates is only
usable once the caller commits.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeAlias

import psycopg
from psycopg import pq
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from .errors import DatatableRolesError, connect_error, is_bad_password, map_error
from .migrate import migrate

__all__ = ["Client", "Resolution", "JobId", "migrate", "role_option"]

log = logging.getLogger(__name__)

JobId: TypeAlias = uuid.UUID | str


@dataclass(frozen=True)
class Resolution:
    """The answer of ``resolve_datatable_role``: log in to ``dbname`` as ``login`` with
    ``password``; the login holds exactly ``roles`` (sorted; ``("admin",)`` for the data
    table's admin login). ``kind`` is the function's ``login_kind``: ``admin`` (the admin
    login), ``role`` (the scoped login of one catalog role, R6, whose sessions act as the role
    when connected with :attr:`options`) or ``set`` (the scoped login of several, R7). The
    password never shows in ``repr`` or ``str``."""

    dbname: str
    login: str
    password: str = field(repr=False)
    roles: tuple[str, ...]
    kind: str
    #: Where to connect, for a data table on another server (docs/servers.md); None on
    #: ``local``, where the Client's own host and port are used.
    host: str | None = None
    port: int | None = None
    sslmode: str | None = None

    @property
    def session_role(self) -> str | None:
        """The role a one-role login's sessions act as (None for the other kinds)."""
        return self.roles[0] if self.kind == "role" and len(self.roles) == 1 else None

    @property
    def options(self) -> str | None:
        """The libpq ``options`` a connection with this login passes: ``-c role=<role>``
        for a one-role login, so that its session acts as the role; None otherwise."""
        role = self.session_role
        return None if role is None else role_option(role)


def role_option(role: str) -> str:
    """libpq's ``options`` value that starts a session as ``role`` (``-c role=<role>``), with
    backslash and space escaped as libpq's option parser wants them (catalog role names hold
    neither: validate_role_name)."""
    return "-c role=" + role.replace("\\", "\\\\").replace(" ", "\\ ")


PoolKey: TypeAlias = tuple[str, str]


class Client:
    """Calls the SQL API over one metadata-database connection.

    ``conn`` is a psycopg connection (used as is, never closed here) or a libpq conninfo
    (URL or ``key=value``; empty means the PG* environment variables), which the client opens
    in autocommit and closes in :meth:`close`.

    ``host``/``port`` are where :meth:`connect` reaches the data table databases; by default,
    wherever the metadata connection went. Pools hold ``pool_min_size`` to ``pool_max_size``
    connections per (login, database).
    """

    def __init__(self, conn: psycopg.Connection[Any] | str = "", *, host: str | None = None,
                 port: int | None = None, pool_min_size: int = 1, pool_max_size: int = 4,
                 pool_timeout: float = 10.0, connect_timeout: int = 10) -> None:
        if isinstance(conn, str):
            try:
                self.conn: psycopg.Connection[Any] = psycopg.connect(conn, autocommit=True)
            except psycopg.OperationalError as e:
                raise connect_error(e) from None
            except psycopg.Error as e:
                raise map_error(e) from None
            self._owns_conn = True
        else:
            self.conn = conn
            self._owns_conn = False
        self.host = host if host is not None else self.conn.info.host
        self.port = port if port is not None else self.conn.info.port
        self.pool_min_size = pool_min_size
        self.pool_max_size = pool_max_size
        self.pool_timeout = pool_timeout
        self.connect_timeout = connect_timeout
        self._lock = threading.RLock()
        self._pools: dict[PoolKey, tuple[str, ConnectionPool]] = {}

    # ---- plumbing ------------------------------------------------------------------------

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every pool, and the metadata connection if the client opened it."""
        with self._lock:
            pools = [pool for _, pool in self._pools.values()]
            self._pools.clear()
        for pool in pools:
            pool.close()
        if self._owns_conn:
            self.conn.close()

    def _rows(self, query: str, params: Sequence[Any] = (),
              secrets: Sequence[str] = ()) -> list[tuple[Any, ...]]:
        """Run one statement in its own transaction (or savepoint); map errors, with
        ``secrets`` redacted from their texts."""
        with self._lock:
            try:
                if self.conn.autocommit:
                    return self.conn.execute(query, params).fetchall()
                with self.conn.transaction():
                    return self.conn.execute(query, params).fetchall()
            except psycopg.Error as e:
                raise map_error(e, secrets) from None

    def _value(self, query: str, params: Sequence[Any] = (),
               secrets: Sequence[str] = ()) -> Any:
        rows = self._rows(query, params, secrets)
        return rows[0][0] if rows else None

    # Stands for the secret in a query of _rows_with_secret.
    SECRET = "(SELECT s.value FROM pg_temp.dtr_secret AS s)"

    def _rows_with_secret(self, query: str, params: Sequence[Any],
                          secret: str) -> list[tuple[Any, ...]]:
        """Run ``query``, in which :attr:`SECRET` stands for ``secret``. The secret crosses
        as COPY data into a temporary table dropped before the transaction ends: the server
        logs statement texts (log_statement, and every failed statement by default) and,
        with log_statement=all, bind parameters too, but never COPY data."""
        with self._lock:
            try:
                with self.conn.transaction():
                    self.conn.execute("CREATE TEMPORARY TABLE dtr_secret (value text NOT NULL)"
                                      " ON COMMIT DROP")
                    with self.conn.cursor().copy(
                            "COPY pg_temp.dtr_secret (value) FROM STDIN") as copy:
                        copy.write_row([secret])
                    rows = self.conn.execute(query, params).fetchall()
                    self.conn.execute("DROP TABLE pg_temp.dtr_secret")
                    return rows
            except psycopg.Error as e:
                raise map_error(e, [secret]) from None

    @staticmethod
    def _uuid(job_id: JobId) -> str:
        return str(job_id)

    # ---- directory -----------------------------------------------------------------------

    def add_workspace(self, workspace: str) -> None:
        self._rows("SELECT add_workspace(%s)", [workspace])

    def add_workspace_user(self, workspace: str, username: str, email: str,
                           is_admin: bool = False) -> None:
        self._rows("SELECT add_workspace_user(%s, %s, %s, %s)",
                   [workspace, username, email, is_admin])

    def remove_workspace_user(self, workspace: str, username: str) -> bool:
        """False when there was no such user (nothing changed)."""
        return bool(self._value("SELECT remove_workspace_user(%s, %s)", [workspace, username]))

    def add_group_member(self, workspace: str, group_name: str, username: str) -> None:
        self._rows("SELECT add_group_member(%s, %s, %s)", [workspace, group_name, username])

    def remove_group_member(self, workspace: str, group_name: str, username: str) -> bool:
        """False when the user was not in the group (nothing changed)."""
        return bool(self._value("SELECT remove_group_member(%s, %s, %s)",
                                [workspace, group_name, username]))

    def sync_workspace_directory(self, workspace: str, directory: dict) -> dict:
        """Brings one workspace's directory to exactly ``directory`` (``{"users": [...],
        "groups": {...}, "folders": {...}}``) in one transaction; returns the counts and the
        rows it rejected (docs/integration.md)."""
        return self._value("SELECT sync_workspace_directory(%s, %s)",
                           [workspace, Jsonb(directory)])

    def forget_workspace_user(self, workspace: str, username: str) -> int:
        """The platform's hook when it deletes a user: u/<username> names no one from now on.
        Returns how many tenant lists changed."""
        return int(self._value("SELECT forget_workspace_user(%s, %s)", [workspace, username]))

    def reconcile_directory(self) -> dict:
        """Forgets the u/ keys of people who left the directory (the sweep does it too)."""
        return self._value("SELECT reconcile_directory()", [])

    def set_folder_access(self, workspace: str, folder: str, principal: str,
                          access: str) -> None:
        """principal ``u/<user>`` or ``g/<group>``; access owner, write, read or none."""
        self._rows("SELECT set_folder_access(%s, %s, %s, %s)",
                   [workspace, folder, principal, access])

    # ---- role catalog --------------------------------------------------------------------

    def validate_role_name(self, name: str) -> None:
        """Raises :class:`~datatable_roles.errors.InvalidInput` on an invalid or reserved
        name."""
        self._rows("SELECT validate_role_name(%s)", [name])

    def create_datatable_role(self, name: str) -> int:
        """Creates the catalog role (NOLOGIN: jobs log in as scoped logins that hold it);
        returns its catalog id."""
        return int(self._value("SELECT create_datatable_role(%s)", [name]))

    def rename_datatable_role(self, name: str, new_name: str) -> None:
        self._rows("SELECT rename_datatable_role(%s, %s)", [name, new_name])

    def set_datatable_role_enabled(self, name: str, enabled: bool) -> None:
        self._rows("SELECT set_datatable_role_enabled(%s, %s)", [name, enabled])

    def drop_datatable_role(self, name: str) -> None:
        self._rows("SELECT drop_datatable_role(%s)", [name])

    # ---- data tables ---------------------------------------------------------------------

    def register_datatable(self, workspace: str, name: str, dbname: str, admin_login: str,
                           admin_password: str, server: str = "local") -> int:
        """Registers a data table (default role admin) on ``server`` (docs/servers.md);
        returns its id. The admin password is tried as a login first
        (:class:`~datatable_roles.errors.InvalidPassword` when it does not work), then, on
        ``local``, set again, to the same password, through a verifier the package computes
        (4096 iterations: about 0.2 s). The password reaches the server in no statement text
        and no bind parameter (:meth:`_rows_with_secret`)."""
        return int(self._rows_with_secret(
            f"SELECT register_datatable(%s, %s, %s, %s, {self.SECRET}, %s)",
            [workspace, name, dbname, admin_login, server], admin_password)[0][0])

    def register_datatable_server(self, name: str, host: str, port: int, manager_login: str,
                                  manager_password: str, sslmode: str = "require",
                                  maintenance_db: str = "postgres") -> None:
        """Registers another PostgreSQL server data tables may be on, with its manager login
        (NOSUPERUSER, CREATEROLE, pg_signal_backend), whose password is tried with a real
        login; as :meth:`register_datatable`, it is in no statement text or parameter."""
        self._rows_with_secret(
            f"SELECT register_datatable_server(%s, %s, %s, %s, {self.SECRET}, %s, %s)",
            [name, host, port, manager_login, sslmode, maintenance_db], manager_password)

    def set_datatable_admin_password(self, workspace: str, name: str,
                                     admin_password: str) -> None:
        """Gives the package the admin login's current password (after it was changed outside
        the package: :class:`~datatable_roles.errors.AdminPasswordChanged`). Tried as a login
        first (:class:`~datatable_roles.errors.InvalidPassword` when it does not work). As
        :meth:`register_datatable`, the password is in no statement text or parameter."""
        self._rows_with_secret(f"SELECT set_datatable_admin_password(%s, %s, {self.SECRET})",
                               [workspace, name], admin_password)

    def reference_datatable(self, workspace: str, name: str, governing_workspace: str,
                            governing_name: str) -> int:
        """workspace/name becomes a reference to the governing data table; returns its id."""
        return int(self._value("SELECT reference_datatable(%s, %s, %s, %s)",
                               [workspace, name, governing_workspace, governing_name]))

    def set_datatable_role_tenants(self, workspace: str, datatable: str, role: str,
                                   tenants: Sequence[str]) -> None:
        """Puts ``role`` (or the reserved key ``admin``) in the map with exactly ``tenants``."""
        self._rows("SELECT set_datatable_role_tenants(%s, %s, %s, %s::text[])",
                   [workspace, datatable, role, list(tenants)])

    def remove_datatable_role(self, workspace: str, datatable: str, role: str) -> None:
        self._rows("SELECT remove_datatable_role(%s, %s, %s)", [workspace, datatable, role])

    def set_datatable_default_role(self, workspace: str, datatable: str,
                                   role: str | None) -> list[str]:
        """Sets the default role (a role of the map, ``admin``, or None for no default).
        Returns the server's warnings (setting ``admin`` warns: it bypasses RLS)."""
        warnings: list[str] = []

        def on_notice(diag: psycopg.errors.Diagnostic) -> None:
            if diag.severity_nonlocalized == "WARNING" and diag.message_primary:
                warnings.append(diag.message_primary)

        with self._lock:
            self.conn.add_notice_handler(on_notice)
            try:
                self._rows("SELECT set_datatable_default_role(%s, %s, %s)",
                           [workspace, datatable, role])
            finally:
                self.conn.remove_notice_handler(on_notice)
        return warnings

    # ---- runs ----------------------------------------------------------------------------

    def record_job_start(self, job_id: JobId, workspace: str, permissioned_as: str,
                         origin: str, caller_email: str | None = None,
                         token_job_id: JobId | None = None) -> str | None:
        """Records the job once; returns its viewer (None when it has none)."""
        return self._value(
            "SELECT record_job_start(%s::uuid, %s, %s, %s, %s, %s::uuid)",
            [self._uuid(job_id), workspace, permissioned_as, origin, caller_email,
             None if token_job_id is None else self._uuid(token_job_id)])

    def resolve(self, job_id: JobId, datatable: str, role: str | None = None,
                for_migration: bool = False) -> Resolution:
        """The login the job's connection to ``datatable`` uses; raises
        :class:`~datatable_roles.errors.Refused` when no role serves, and
        :class:`~datatable_roles.errors.AdminPasswordChanged` when the result is the admin
        login and its password was changed outside the package."""
        rows = self._rows(
            "SELECT dbname, login, password, roles, login_kind, host, port, sslmode"
            " FROM resolve_datatable_role(%s::uuid, %s, %s, %s)",
            [self._uuid(job_id), datatable, role, for_migration])
        dbname, login, password, roles, kind, host, port, sslmode = rows[0]
        return Resolution(dbname=dbname, login=login, password=password,
                          roles=tuple(roles or ()), kind=kind, host=host, port=port,
                          sslmode=sslmode)

    def explain(self, job_id: JobId, datatable: str, role: str | None = None) -> dict[str, Any]:
        """The decision, step by step (no side effects): see explain_datatable_role."""
        return dict(self._value("SELECT explain_datatable_role(%s::uuid, %s, %s)",
                                [self._uuid(job_id), datatable, role]))

    def cached_result_path(self, job_id: JobId, runnable: str, args: Any) -> str:
        """The result cache path of this run (it belongs to the run's recorded viewer)."""
        return str(self._value("SELECT cached_result_path(%s::uuid, %s, %s::jsonb)",
                               [self._uuid(job_id), runnable, Jsonb(args)]))

    def usable_datatable_roles(self, workspace: str, datatable: str,
                               username: str) -> list[dict[str, Any]]:
        """The roles ``username`` may name on the data table, then what naming none gives
        (rows of role, source, roles, rule; docs/sql-api.md). The worker may call it."""
        rows = self._rows("SELECT role, source, roles, rule FROM usable_datatable_roles(%s, %s, %s)",
                          [workspace, datatable, username])
        return [dict(zip(("role", "source", "roles", "rule"), r)) for r in rows]

    # ---- operating (owner only) -----------------------------------------------------------

    def grant_worker(self, worker: str) -> None:
        """Lets the platform's worker role run the worker's calls: record_job_start,
        resolve_datatable_role, explain_datatable_role, cached_result_path,
        usable_datatable_roles and heal_refused_login."""
        self._rows("SELECT datatable_roles.grant_worker(%s)", [worker])

    def grant_directory_writer(self, writer: str) -> None:
        """Lets the platform's directory writer run the directory calls (mirror mode:
        docs/integration.md)."""
        self._rows("SELECT datatable_roles.grant_directory_writer(%s)", [writer])

    def grant_acl_editor(self, editor: str) -> None:
        """Lets a role run the grants editor's three calls (docs/acl.md)."""
        self._rows("SELECT datatable_roles.grant_acl_editor(%s)", [editor])

    def renew_link_login(self) -> None:
        """A link login of this instance's own, e.g. after copying the metadata database
        (docs/operating.md)."""
        self._rows("SELECT datatable_roles.renew_link_login()")

    def preview_datatable_role_change(self, change: str, role: str,
                                      workspace: str | None = None,
                                      datatable: str | None = None) -> dict[str, Any]:
        """What ``change`` ('remove', 'disable', 'retire' or 'drop') of ``role`` would
        retire and end; nothing is changed (docs/sql-api.md)."""
        return dict(self._value("SELECT preview_datatable_role_change(%s, %s, %s, %s)",
                                [change, role, workspace, datatable]))

    def status_report(self) -> dict[str, Any]:
        """``datatable_roles.status_report()``: the instance's settings, data tables (with
        roles, tenants and whether the admin password is still the package's), catalog roles
        and scoped logins, as plain data (what ``status
        --json`` prints). No password is in it."""
        return dict(self._value("SELECT datatable_roles.status_report()"))

    def sweep_candidates(self, unused_for: timedelta | str | None = None) -> list[str]:
        """The logins a sweep with ``unused_for`` would examine now, in its order."""
        return [r[0] for r in self._rows(
            "SELECT * FROM datatable_roles.sweep_candidates(%s::interval)", [unused_for])]

    def pgbouncer_userlist(self, dbname: str | None = None) -> list[str]:
        """PgBouncer auth_file lines of the live set logins (of ``dbname``, or all): each
        login with the SCRAM verifier the package set (docs/operating.md, "PgBouncer on
        managed PostgreSQL"). Verifiers, never passwords."""
        return [r[0] for r in self._rows(
            "SELECT * FROM datatable_roles.pgbouncer_userlist(%s)", [dbname])]

    # ---- grants editor (owner, or a role given grant_acl_editor; docs/acl.md) -------------

    def datatable_acl(self, workspace: str, datatable: str,
                      target: dict[str, Any]) -> dict[str, Any]:
        """What the target's grants, owner and default privileges are now (changes
        nothing). ``target``: ``{"database": true}``, ``{"schema": s}`` or ``{"schema": s,
        "table": t}``."""
        return dict(self._value("SELECT datatable_acl(%s, %s, %s)",
                                [workspace, datatable, Jsonb(target)]))

    def plan_datatable_acl(self, workspace: str, datatable: str, target: dict[str, Any],
                           change: dict[str, Any]) -> dict[str, Any]:
        """The statements ``change`` takes on ``target``, and its warnings (changes
        nothing): ``{datatable, target, change, statements, warnings}``."""
        return dict(self._value("SELECT plan_datatable_acl(%s, %s, %s, %s)",
                                [workspace, datatable, Jsonb(target), Jsonb(change)]))

    def apply_datatable_acl(self, workspace: str, datatable: str, target: dict[str, Any],
                            change: dict[str, Any],
                            statements: Sequence[str]) -> dict[str, Any]:
        """Applies ``statements``, the plan the caller showed, and returns the plan with
        ``applied`` and ``audit_id``. The server plans again and refuses with
        :class:`~datatable_roles.errors.WrongState` (55000, CONSTRAINT ``plan_changed``,
        nothing applied) unless its statements are exactly these. It commits at once: the
        connection must be idle (a caller's open transaction, rolled back later, would
        leave the grants applied and the audit row gone)."""
        with self._lock:
            if self.conn.info.transaction_status != pq.TransactionStatus.IDLE:
                raise DatatableRolesError(
                    "apply_datatable_acl needs an idle connection: it commits the audit row "
                    "right after the grants",
                    hint="Commit or roll back the open transaction first.")
            return dict(self._value(
                "SELECT apply_datatable_acl(%s, %s, %s, %s, %s::text[])",
                [workspace, datatable, Jsonb(target), Jsonb(change), list(statements)]))

    # ---- lifecycle -----------------------------------------------------------------------

    def retire(self, role: str) -> int:
        """retire_role_set_logins_of: retires every login holding the role (on every
        database); returns how many were retired."""
        return int(self._value("SELECT retire_role_set_logins_of(%s)", [role]))

    def sweep(self, unused_for: timedelta | str | None = None) -> dict[str, Any]:
        """CALL sweep_unused_role_set_logins in autocommit (it commits per login); returns
        its report ``{"examined", "dropped", "skipped", "unfinished": [...], "rotated",
        "healed"}``. The connection must be idle; ``unused_for`` defaults to the instance's
        setting."""
        with self._lock:
            conn = self.conn
            if conn.info.transaction_status != pq.TransactionStatus.IDLE:
                raise DatatableRolesError(
                    "sweep needs an idle connection: it commits once per login",
                    hint="Commit or roll back the open transaction first.")
            was_autocommit = conn.autocommit
            try:
                conn.autocommit = True
                row = conn.execute("CALL sweep_unused_role_set_logins(NULL, %s::interval)",
                                   [unused_for]).fetchone()
            except psycopg.Error as e:
                raise map_error(e) from None
            finally:
                if not was_autocommit and not conn.closed:
                    conn.autocommit = False
        return dict(row[0]) if row and row[0] else {}

    # ---- internals (owner only; for tests and the bench, not a stable API) ---------------

    def clock_now(self) -> datetime:
        """The package clock (now() plus the settings' clock_offset)."""
        return self._value("SELECT datatable_roles.clock_now()")

    def ensure_set_login(self, dbname: str, role_ids: Sequence[int]) -> str:
        """Makes (or takes back) the scoped login of exactly these catalog role ids on
        database ``dbname``, as a resolve would; returns its name."""
        return str(self._value(
            "SELECT login FROM datatable_roles.ensure_set_login(%s, %s::bigint[])",
            [dbname, list(role_ids)]))

    def member_keys(self, workspace: str, username: str) -> list[str]:
        """The tenant keys that name the user (u/..., g/..., f/...)."""
        return list(self._value("SELECT datatable_roles.member_keys(%s, %s)",
                                [workspace, username]) or [])

    def heal_refused_login(self, login: str) -> str:
        """Report that a connection as ``login`` (from a resolve) was refused: 'healed' (its
        stored password was proven to fail and it was re-keyed), 'works' (it logs in; nothing
        changed) or 'gone' (the next resolve makes it again). Raises 55000 for an admin login
        whose password was changed outside the package."""
        return str(self._value("SELECT heal_refused_login(%s)", [login]))

    # ---- connections to data tables ------------------------------------------------------

    @contextmanager
    def connect(self, job_id: JobId, datatable: str, role: str | None = None,
                for_migration: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """Resolve, then lend a pooled connection to the data table database logged in as
        the resolved login (see :meth:`connection`). When the connection is refused for a
        bad password (28P01: a script gave the login a password of its own), it reports the
        refusal (:meth:`heal_refused_login`, which re-keys the login once a real login attempt
        proved the stored password fails; for an admin login whose password was changed
        outside the package it raises 55000), resolves once more and connects again, logging
        a warning; a second refusal is raised."""
        res = self.resolve(job_id, datatable, role, for_migration)
        try:
            pool, conn = self._checkout(res)
        except DatatableRolesError as e:
            if not is_bad_password(e):
                raise
            log.warning("login %s on %s was refused (%s); healing it and resolving again",
                        res.login, res.dbname, e.message)
            self.heal_refused_login(res.login)
            res = self.resolve(job_id, datatable, role, for_migration)
            pool, conn = self._checkout(res)
        with self._lent(pool, conn) as lent:
            yield lent

    @contextmanager
    def connection(self, res: Resolution) -> Iterator[psycopg.Connection[Any]]:
        """Lend a pooled connection to ``res.dbname`` logged in as ``res.login`` (for a
        one-role login, with :attr:`Resolution.options`, so that the session acts as the
        role). When the block ends it is committed (rolled back on an exception), cleaned
        with DISCARD ALL (so a SET ROLE does not outlive the block; the startup option's
        role is the session's default, which RESET keeps) and returned to the pool. A login
        whose password was re-keyed since its pool was made gets a new pool."""
        pool, conn = self._checkout(res)
        with self._lent(pool, conn) as lent:
            yield lent

    def _checkout(self, res: Resolution) -> tuple[ConnectionPool, psycopg.Connection[Any]]:
        pool = self._pool_for(res)
        try:
            return pool, pool.getconn(timeout=self.pool_timeout)
        except PoolTimeout:
            raise self._connection_error(res) from None

    @staticmethod
    @contextmanager
    def _lent(pool: ConnectionPool,
              conn: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
        try:
            with conn:  # a pooled connection is not closed here, only committed/rolled back
                yield conn
        finally:
            # Cleaned here, not by the pool's reset (run by a pool worker after putconn): so
            # the connection is back in the pool when the block ends, and the next checkout
            # gets it instead of growing the pool.
            try:
                _reset_session(conn)
            except psycopg.Error:
                conn.close()  # the pool replaces a closed connection
            pool.putconn(conn)  # into a pool replaced meanwhile: closed

    def pool_stats(self) -> dict[str, dict[str, int]]:
        """Per ``login@dbname``: psycopg_pool's statistics (sizes, requests)."""
        with self._lock:
            pools = dict(self._pools)
        return {f"{login}@{db}": dict(pool.get_stats()) for (login, db), (_, pool) in
                pools.items()}

    def _conninfo(self, res: Resolution) -> str:
        options = {} if res.options is None else {"options": res.options}
        if res.host is not None:
            options.update(host=res.host, port=res.port, sslmode=res.sslmode)
        else:
            options.update(host=self.host, port=self.port)
        return make_conninfo(dbname=res.dbname, user=res.login,
                             connect_timeout=self.connect_timeout, **options)

    def _pool_for(self, res: Resolution) -> ConnectionPool:
        key = (res.login, res.dbname)
        stale: ConnectionPool | None = None
        with self._lock:
            entry = self._pools.get(key)
            if entry is not None and entry[0] == res.password:
                return entry[1]
            if entry is not None:  # re-keyed: its connections and password are gone
                stale = entry[1]
                del self._pools[key]
            # One direct connection first: a login that cannot log in fails now, with the
            # server's reason, instead of after the pool's timeout.
            try:
                psycopg.connect(self._conninfo(res), password=res.password).close()
            except psycopg.Error as e:
                raise map_error(e, [res.password]) from None
            pool = ConnectionPool(
                self._conninfo(res), kwargs={"password": res.password, "prepare_threshold": None},
                min_size=self.pool_min_size, max_size=self.pool_max_size,
                name=f"datatable-roles {res.login}@{res.dbname}", open=False,
                check=ConnectionPool.check_connection,
                timeout=self.pool_timeout)
            try:
                # Wait for the first connections: a wrong password shows here, and the
                # first checkouts find a connection ready instead of growing the pool.
                pool.open(wait=True, timeout=self.pool_timeout)
            except PoolTimeout:
                pool.close()
                raise self._connection_error(res) from None
            self._pools[key] = (res.password, pool)
        if stale is not None:
            stale.close()
        return pool

    def _connection_error(self, res: Resolution) -> DatatableRolesError:
        """The real reason a pool could not connect (one direct attempt)."""
        try:
            psycopg.connect(self._conninfo(res), password=res.password).close()
        except psycopg.Error as e:
            return map_error(e, [res.password])
        return DatatableRolesError(
            f"no connection to {res.dbname} as {res.login} within {self.pool_timeout}s",
            hint="Raise pool_max_size or pool_timeout.")


def _reset_session(conn: psycopg.Connection[Any]) -> None:
    """Before a lent connection goes back: forget SET ROLE, settings, prepared statements
    and temp tables (DISCARD ALL). Pooled connections never auto-prepare
    (``prepare_threshold=None``): psycopg would not see every DISCARD ALL and would
    execute a statement the server forgot. A block that turned preparing on gives its
    connection up instead."""
    if conn.prepare_threshold is not None:
        raise psycopg.InterfaceError("prepared statements were turned on in a lent connection")
    autocommit = conn.autocommit
    conn.autocommit = True
    try:
        conn.execute("DISCARD ALL")
    finally:
        conn.autocommit = autocommit
