"""The pytest support layer: what every test file builds its story on.

conftest.py turns it into fixtures (``cluster``, ``uid``, ``scratch``, ``meta_db``,
``new_meta_db``, ``datatable_db``, ``orders_db``, ``make_world``); test files import the rest:

- :class:`Scratch` -- what one test made on the shared cluster, dropped when it ends: the
  databases it made (metadata databases cloned from the template, data table databases) and
  every role that did not exist when it began (catalog roles, set logins, admin logins, roles
  made by hand), after DROP OWNED in the databases that outlive the test;
- :func:`build_world` / :class:`World` -- one workspace with users and groups, catalog roles
  with tenants on registered data tables, optionally the RLS ``orders`` table, and jobs;
  the world's verbs (``resolve``, ``sweep``, ``call``, ``job``, ...) and its view of the
  cluster (``rows``, ``role_state``, ``table_owner``, ...); ``ACME`` and ``LIFECYCLE`` are the
  worlds several files share;
- logging in with a returned password (:func:`job_session`, :func:`authenticates`,
  :func:`login_error`, :func:`create_table_as`, :func:`check_rows_authenticate`); a one-role
  login (R6) acts as its role when the connection passes the startup option
  ``-c role=<role>`` (``role=`` of these helpers, :func:`session_role`);
- fault injection and threads for the lifecycle tests (:class:`FaultHold`, :func:`arm`,
  :func:`disarm`, :class:`Runner`);
- :class:`Remote` -- the second server of docs/servers.md (conftest's ``remote``): another
  real cluster with a NOSUPERUSER CREATEROLE manager login.

Admin calls run as the package owner, resolves as the worker role, and time moves by
``settings.clock_offset`` (never by sleeping).
"""

from __future__ import annotations

import os
import secrets
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from datatable_roles.client import Client, role_option
from datatable_roles.scram import scram_sha256_verifier
from datatable_roles_lab.devcluster import PG_BIN, PROFILE, Cluster
from datatable_roles.migrate import SQL_DIR, migrate

# Tests of the self-hosted profile's superuser step (its role guard): the metadata databases of
# a managed run (DTR_PROFILE=managed, `make test` 17-managed) have none.
self_hosted_only = pytest.mark.skipif(
    PROFILE == "managed", reason="the superuser step's role guard: self-hosted profile only")

WS = "acme"        # every world's workspace, unless it names another
DT = "main"        # the first data table of every world
EMAIL_DOMAIN = "acme.test"

# The rows of the RLS fixture's orders table (id, region).
ORDERS = [(1, "emea"), (2, "us"), (3, "apac"), (4, "emea"), (5, "us")]


# ---- the second server ----------------------------------------------------------------------

MANAGER = "dtr_manager"  # the manager login of the second server


class Remote:
    """A second cluster (DTR_SECOND_PG_BIN's programs: `make test` gives 17; else the
    version under test) with a manager login NOSUPERUSER CREATEROLE and pg_signal_backend,
    as a managed service's admin role. :meth:`register` registers it in a metadata database."""

    def __init__(self) -> None:
        self.cluster = Cluster(bin_dir=os.environ.get("DTR_SECOND_PG_BIN") or str(PG_BIN))
        self.manager_password = secrets.token_urlsafe(24)

    def start(self) -> "Remote":
        self.cluster.start(build_template=False)
        with self.su() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE NOSUPERUSER PASSWORD {}").format(
                sql.Identifier(MANAGER), sql.Literal(scram_sha256_verifier(self.manager_password))))
            conn.execute(sql.SQL("GRANT pg_signal_backend TO {}").format(sql.Identifier(MANAGER)))
        return self

    def register(self, call, name: str = "b", password: str | None = None) -> None:
        """register_datatable_server through ``call`` (an owner's statement runner)."""
        call("SELECT register_datatable_server(%s, '127.0.0.1', %s, %s, %s, 'disable')",
             [name, self.cluster.port, MANAGER, password or self.manager_password])

    def su(self, dbname: str = "postgres") -> psycopg.Connection:
        return self.cluster.connect_super(dbname)

    def datatable_db(self, dbname: str, admin: str) -> str:
        """A database there owned by a new plain login ``admin``; returns its password."""
        password = secrets.token_urlsafe(24)
        with self.su() as c:
            c.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(admin), sql.Literal(scram_sha256_verifier(password))))
            c.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(dbname), sql.Identifier(admin)))
        return password

    def drop(self, dbname: str, role_prefix: str, *roles: str) -> None:
        """Drop the database and every role named <role_prefix>... or wm_set_... there, then
        ``roles`` (a login group, say)."""
        with self.su() as c:
            c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(dbname)))
            for (name,) in c.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s OR"
                                     " rolname LIKE 'wm\\_set\\_%%'",
                                     [role_prefix + "%"]).fetchall():
                c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
            for name in roles:
                c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))

    def login_conninfo(self, login: str, password: str, dbname: str,
                       role: str | None = None) -> str:
        kw = {"options": role_option(role)} if role else {}
        return make_conninfo(self.cluster.conninfo(login, password, dbname, tcp=True), **kw)

    def role(self, name: str) -> dict | None:
        """{'login': rolcanlogin, 'member_of': [sorted role names]} there, or None."""
        with self.su() as c:
            row = c.execute("SELECT rolcanlogin, ARRAY(SELECT g.rolname FROM pg_auth_members m"
                            " JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid"
                            " ORDER BY 1) FROM pg_roles r WHERE rolname = %s", [name]).fetchone()
        return None if row is None else {"login": row[0], "member_of": row[1]}


# ---- connections --------------------------------------------------------------------------

def connect(conninfo: str, **kw) -> psycopg.Connection:
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=10, **kw)


def sql_exec(conninfo: str, *statements: str | sql.Composable, params=None) -> None:
    with connect(conninfo) as conn:
        for statement in statements:
            conn.execute(statement, params)


def flush_stats(conn: psycopg.Connection) -> None:
    """Flush this backend's pending statistics now (done before the call returns), so that
    they cannot land later in someone else's before/after."""
    conn.execute("SELECT pg_stat_force_next_flush()")


# ---- databases and what a test made ---------------------------------------------------------

@dataclass(frozen=True)
class MetaDB:
    """A metadata database cloned from the template (the package installed)."""

    name: str
    owner_conninfo: str
    worker_conninfo: str
    super_conninfo: str


class DataTableDB(NamedTuple):
    """A data table database and its admin login (unpacks as (dbname, admin, password))."""

    dbname: str
    admin_login: str
    admin_password: str


@dataclass(frozen=True)
class DataTable:
    """A data table registered in a world's workspace under ``name``."""

    name: str
    dbname: str
    admin_login: str
    admin_password: str


# ---- the directory a world writes ----------------------------------------------------------

class PackageDirectory:
    """Mirror mode: the package's directory calls, as the package owner (``call``)."""

    def __init__(self, call):
        self.call = call

    def add_workspace(self, ws: str) -> None:
        self.call("SELECT add_workspace(%s)", [ws])

    def add_user(self, ws: str, user: str, email: str, admin: bool = False,
                 groups: Sequence[str] = ()) -> None:
        self.call("SELECT add_workspace_user(%s, %s, %s, %s)", [ws, user, email, admin])
        for group in groups:
            self.add_group_member(ws, group, user)

    def add_group_member(self, ws: str, group: str, user: str) -> None:
        self.call("SELECT add_group_member(%s, %s, %s)", [ws, group, user])

    def set_folder_access(self, ws: str, folder: str, principal: str, access: str) -> None:
        self.call("SELECT set_folder_access(%s, %s, %s, %s)", [ws, folder, principal, access])


class WindmillDirectory:
    """Windmill's own tables (tests/windmill/windmill_schema.sql), written as Windmill would,
    by a superuser session on the metadata database where the Windmill adapter reads them."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def add_workspace(self, ws: str) -> None:
        self.conn.execute("INSERT INTO workspace (id, name, owner) VALUES (%s, %s, 'admin')"
                          " ON CONFLICT DO NOTHING", [ws, ws])
        self.conn.execute("INSERT INTO group_ (workspace_id, name) VALUES (%s, 'all')"
                          " ON CONFLICT DO NOTHING", [ws])

    def add_user(self, ws: str, user: str, email: str, admin: bool = False,
                 groups: Sequence[str] = (), *, disabled: bool = False,
                 created_at: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO usr (workspace_id, username, email, is_admin, disabled, created_at)"
            " VALUES (%s, %s, %s, %s, %s, coalesce(%s::timestamptz, now()))",
            [ws, user, email, admin, disabled, created_at])
        self.add_group_member(ws, "all", user)
        for group in groups:
            self.add_group_member(ws, group, user)

    def add_group_member(self, ws: str, group: str, user: str) -> None:
        self.conn.execute("INSERT INTO group_ (workspace_id, name) VALUES (%s, %s)"
                          " ON CONFLICT DO NOTHING", [ws, group])
        self.conn.execute("INSERT INTO usr_to_group (workspace_id, group_, usr)"
                          " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", [ws, group, user])

    def set_folder_access(self, ws: str, folder: str, principal: str, access: str) -> None:
        """owner: in ``owners``; write / read: ``extra_perms`` true / false."""
        self.conn.execute(
            "INSERT INTO folder (workspace_id, name, display_name, owners)"
            " VALUES (%s, %s, %s, '{}') ON CONFLICT DO NOTHING", [ws, folder, folder])
        if access == "owner":
            self.conn.execute("UPDATE folder SET owners = array_append(owners, %s)"
                              " WHERE workspace_id = %s AND name = %s", [principal, ws, folder])
        else:
            self.conn.execute(
                "UPDATE folder SET extra_perms = extra_perms || jsonb_build_object(%s::text, %s)"
                " WHERE workspace_id = %s AND name = %s",
                [principal, access == "write", ws, folder])


WINDMILL_SCHEMA = Path(__file__).resolve().parent / "windmill" / "windmill_schema.sql"


def windmill_meta_db(scratch: "Scratch", *, grants: bool = True,
                     install: bool = True) -> tuple[MetaDB, WindmillDirectory]:
    """A metadata database that is also Windmill's: Windmill's directory tables with their
    row-level security, sql/windmill-grants.sql run by the superuser (``grants``), and the
    Windmill adapter installed the documented way, ``migrate --directory windmill``
    (``install``). Returns it and a writer of Windmill's tables."""
    meta = scratch.meta_db()
    c = scratch.cluster
    sql_exec(meta.super_conninfo,
             "DO $$ BEGIN"
             " IF to_regrole('windmill_user') IS NULL THEN CREATE ROLE windmill_user; END IF;"
             " IF to_regrole('windmill_admin') IS NULL THEN CREATE ROLE windmill_admin; END IF;"
             " END $$")
    c.psql_file(WINDMILL_SCHEMA, meta.name)
    if grants:
        c.psql_file(SQL_DIR / "windmill-grants.sql", meta.name, owner=c.owner)
    if install:
        migrate(meta.owner_conninfo, directory="windmill")
    conn = connect(meta.super_conninfo)
    scratch.closing.append(conn)
    return meta, WindmillDirectory(conn)


def roles_now(cluster: Cluster) -> set[str]:
    with cluster.connect_super() as conn:
        return {r for (r,) in conn.execute("SELECT rolname FROM pg_roles")}


class Scratch:
    """What one test (or module) makes on the shared cluster; :meth:`clean` drops it all:
    the databases made through it, then every role that did not exist when it was created,
    with what those roles own or were granted in the databases that remain."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.roles_before = roles_now(cluster)
        self.databases: list[str] = []
        self.closing: list[psycopg.Connection] = []   # sessions to close first

    def meta_db(self) -> MetaDB:
        """The one way to get a metadata database: a clone of the template with its own
        instance id, the worker granted."""
        c = self.cluster
        name = c.clone_metadata_database()
        self.databases.append(name)
        return MetaDB(name=name, owner_conninfo=c.owner_conninfo(name),
                      worker_conninfo=c.worker_conninfo(name),
                      super_conninfo=c.superuser_conninfo(name))

    def datatable_db(self, prefix: str = "dt") -> DataTableDB:
        """A data table database <prefix>_<hex> owned by its admin login <dbname>_admin
        (granted to the package owner), with a random password."""
        dbname = f"{prefix}_{secrets.token_hex(3)}"
        admin = dbname + "_admin"
        self.databases.append(dbname)
        password = self.cluster.create_datatable_database(dbname, admin)
        return DataTableDB(dbname, admin, password)

    def orders_db(self, policies: Mapping[str, str], prefix: str = "dt") -> DataTableDB:
        """The RLS fixture: a data table database whose admin login owns ``orders`` (the rows
        of ORDERS) under row-level security, with a policy per region of ``policies``
        (region -> role name, each role existing already) named after the region."""
        db = self.datatable_db(prefix)
        self.cluster.create_orders_table(db.dbname, db.admin_login, ORDERS, policies)
        return db

    def database(self, name: str) -> str:
        """An empty database (owned by the superuser), no data table's."""
        self.databases.append(name)
        with self.cluster.connect_super() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return name

    def clean(self) -> None:
        c = self.cluster
        for conn in self.closing:
            conn.close()
        self.closing.clear()
        for name in reversed(self.databases):
            c.drop_database(name)
        self.databases.clear()
        new = sorted(roles_now(c) - self.roles_before)
        if not new:
            return
        with c.connect_super() as conn:
            conn.execute("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
                         " WHERE usename = ANY(%s)", [new])
            # where they own objects or hold privileges (dbid 0: on a database, say)
            holding = [d for (d,) in conn.execute(
                "SELECT DISTINCT coalesce(d.datname, 'postgres') FROM pg_shdepend AS s"
                " JOIN pg_roles AS r ON r.oid = s.refobjid"
                " LEFT JOIN pg_database AS d ON d.oid = s.dbid"
                " WHERE r.rolname = ANY(%s) AND (d.oid IS NOT NULL OR s.dbid = 0)", [new])]
        names = sql.SQL(", ").join(map(sql.Identifier, new))
        try:
            for db in holding:
                with c.connect_super(db) as conn:
                    conn.execute(sql.SQL("DROP OWNED BY {}").format(names))
            with c.connect_super() as conn:
                conn.execute(sql.SQL("DROP ROLE {}").format(names))
        except psycopg.Error:
            for name in new:  # one at a time, wherever it holds anything
                drop_role(c, name)


def drop_role(cluster: Cluster, name: str) -> None:
    """End the role's sessions and drop it, with whatever it owns or was granted anywhere."""
    with cluster.connect_super() as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                     " WHERE usename = %s", [name])
        try:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
            return
        except psycopg.errors.DependentObjectsStillExist:
            dbs = [r[0] for r in conn.execute(
                "SELECT datname FROM pg_database WHERE datallowconn")]
    for db in dbs:
        with cluster.connect_super(db) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


# ---- the world -------------------------------------------------------------------------------

class Resolved(NamedTuple):
    """What resolve_datatable_role returned."""

    dbname: str
    login: str
    password: str
    roles: list[str]


def session_role(r: Resolved) -> str | None:
    """The role a resolved one-role login (R6) acts as: its one role (None for the admin
    login and for a set login)."""
    return r.roles[0] if len(r.roles) == 1 and r.login.startswith("wm_set_") else None


@dataclass(eq=False)
class World:
    """One workspace of one metadata database (an instance); see :func:`build_world`.

    ``w.roles`` maps each catalog role's short name to its cluster-wide name, which is also
    ``w.<short name>`` (``w.emea``); ``w.tables`` are the registered data tables, ``w.main``
    the first (``w.dbname``, ``w.admin_login``, ``w.admin_password`` are its); ``w.jobs``
    maps a name (the viewer's, usually) to a recorded job id.

    Connections: ``w.owner`` / ``w.worker`` are package clients (datatable_roles.client);
    ``w.connect_owner()`` / ``w.connect_worker()`` open raw autocommit sessions;
    ``w.su(dbname)`` is a kept superuser session on any database."""

    cluster: Cluster
    scratch: Scratch
    meta: MetaDB
    uid: str
    ws: str
    identity: str
    directory: PackageDirectory | WindmillDirectory | None = None
    roles: dict[str, str] = field(default_factory=dict)
    tables: list[DataTable] = field(default_factory=list)
    jobs: dict[str, uuid.UUID] = field(default_factory=dict)
    _conns: dict[str, psycopg.Connection] = field(default_factory=dict, repr=False)

    def __getattr__(self, name: str) -> str:
        roles = self.__dict__.get("roles") or {}
        if name in roles:
            return roles[name]
        raise AttributeError(name)

    # ---- names -------------------------------------------------------------------------
    @property
    def role_names(self) -> list[str]:
        return list(self.roles.values())

    @property
    def main(self) -> DataTable:
        return self.tables[0]

    @property
    def dbname(self) -> str:
        return self.main.dbname

    @property
    def admin_login(self) -> str:
        return self.main.admin_login

    @property
    def admin_password(self) -> str:
        return self.main.admin_password

    @staticmethod
    def email(user: str) -> str:
        return f"{user}@{EMAIL_DOMAIN}"

    # ---- connections -------------------------------------------------------------------
    def connect_owner(self) -> psycopg.Connection:
        return connect(self.meta.owner_conninfo)

    def connect_worker(self) -> psycopg.Connection:
        return connect(self.meta.worker_conninfo)

    def _kept(self, key: str, make):
        conn = self._conns.get(key)
        if conn is None or conn.closed:
            conn = self._conns[key] = make()
        return conn

    def owner_session(self) -> psycopg.Connection:
        """The owner session the world's own calls use (never armed, never killed)."""
        return self._kept("owner", self.connect_owner)

    def worker_session(self) -> psycopg.Connection:
        """A kept worker session."""
        return self._kept("worker", self.connect_worker)

    def su(self, dbname: str) -> psycopg.Connection:
        return self._kept("su:" + dbname, lambda: self.cluster.connect_super(dbname))

    @cached_property
    def owner(self) -> Client:
        return Client(self.meta.owner_conninfo)

    @cached_property
    def worker(self) -> Client:
        return Client(self.meta.worker_conninfo)

    def login_conninfo(self, login: str, password: str, dbname: str | None = None,
                       tcp: bool = True, role: str | None = None) -> str:
        """A data table database (the main one by default), as ``login``; over TCP with
        SCRAM unless ``tcp=False`` (the socket); with ``role``, the startup option that
        makes the session act as that role (what the platform passes for a one-role
        login)."""
        conninfo = self.cluster.conninfo(login, password, dbname or self.dbname, tcp=tcp)
        if role is not None:
            conninfo = make_conninfo(conninfo, options=role_option(role))
        return conninfo

    def close(self) -> None:
        for key in ("owner", "worker"):
            client = self.__dict__.pop(key, None)
            if client is not None:
                client.close()
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    # ---- package calls (as the owner) ----------------------------------------------------
    def call(self, statement: str, params=None) -> list[tuple]:
        cur = self.owner_session().execute(statement, params)
        return cur.fetchall() if cur.description is not None else []

    def job(self, viewer: str | None, identity: str | None = None, origin: str = "app",
            token_job: uuid.UUID | None = None) -> uuid.UUID:
        """A job started now by ``identity`` (the world's publisher by default) for
        ``viewer`` (a user name, its email recorded; None: no viewer)."""
        job = uuid.uuid4()
        self.call("SELECT record_job_start(%s, %s, %s, %s, %s::text, %s::uuid)",
                  [job, self.ws, identity or self.identity, origin,
                   None if viewer is None else self.email(viewer), token_job])
        return job

    def add_user(self, user: str, groups: Sequence[str] = (), admin: bool = False) -> None:
        """A workspace user (email user@acme.test), member of ``groups``."""
        self.directory.add_user(self.ws, user, self.email(user), admin, groups)

    def new_role(self, suffix: str) -> str:
        """Another catalog role, <uid>_<suffix>, in no data table's map."""
        name = f"{self.uid}_{suffix}"
        self.call("SELECT create_datatable_role(%s)", [name])
        self.roles[suffix] = name
        return name

    def set_tenants(self, datatable: str, role: str, keys: Sequence[str]) -> None:
        self.call("SELECT set_datatable_role_tenants(%s, %s, %s, %s::text[])",
                  [self.ws, datatable, role, list(keys)])

    def set_default(self, datatable: str, role: str | None) -> None:
        self.call("SELECT set_datatable_default_role(%s, %s, %s::text)",
                  [self.ws, datatable, role])

    def register(self, name: str, db: DataTableDB | None = None, *,
                 tenants: Mapping[str, Sequence[str]] | None = None, default="admin",
                 admin_tenants: Sequence[str] | None = None) -> DataTable:
        """Register data table ``name`` (on the main data table's database by default), map
        ``tenants`` (role name -> keys) and the admin's, and set the default role unless it
        stays admin; the owner session's statistics are flushed."""
        db = db or DataTableDB(self.dbname, self.admin_login, self.admin_password)
        self.call("SELECT register_datatable(%s, %s, %s, %s, %s)", [self.ws, name, *db])
        for role, keys in (tenants or {}).items():
            self.set_tenants(name, role, keys)
        if admin_tenants is not None:
            self.set_tenants(name, "admin", admin_tenants)
        if default != "admin":
            self.set_default(name, default)
        flush_stats(self.owner_session())
        table = DataTable(name, *db)
        self.tables.append(table)
        return table

    # ---- run-time calls ------------------------------------------------------------------
    def resolve(self, job: str | uuid.UUID, datatable: str = DT, role: str | None = None,
                for_migration: bool = False, conn: psycopg.Connection | None = None) -> Resolved:
        """resolve_datatable_role as the worker role (a new session unless ``conn``); ``job``
        is a name in ``w.jobs`` or a job id."""
        q = ("SELECT dbname, login, password, roles"
             " FROM resolve_datatable_role(%s, %s, %s, %s)")
        args = [self.jobs[job] if isinstance(job, str) else job, datatable, role, for_migration]
        if conn is not None:
            return Resolved(*conn.execute(q, args).fetchone())
        with self.connect_worker() as c:
            return Resolved(*c.execute(q, args).fetchone())

    def heal(self, login: str) -> str:
        """heal_refused_login as the worker role, as a worker calls it when a connection as
        ``login`` was refused: 'healed', 'works' or 'gone' (or the error it raises)."""
        with self.connect_worker() as c:
            return c.execute("SELECT heal_refused_login(%s)", [login]).fetchone()[0]

    def sweep(self, conn: psycopg.Connection | None = None, unused_for: str | None = None):
        """The sweep's report (a new owner session unless ``conn``)."""
        q = "CALL sweep_unused_role_set_logins(NULL, %s::interval)"
        if conn is not None:
            return conn.execute(q, [unused_for]).fetchone()[0]
        with self.connect_owner() as c:
            return c.execute(q, [unused_for]).fetchone()[0]

    def advance_clock(self, by: str) -> None:
        self.call("UPDATE datatable_roles.settings SET clock_offset = clock_offset + %s::interval",
                  [by])

    # ---- the cluster's view ----------------------------------------------------------------
    def rows(self) -> dict[str, tuple[str, list[int]]]:
        """login -> (password, role_ids) of this instance's datatable_role_set."""
        return {login: (pw, ids) for login, pw, ids in self.call(
            "SELECT login, password, role_ids FROM datatable_roles.datatable_role_set")}

    def row_dbnames(self) -> dict[str, str | None]:
        """login -> the one database of each of this instance's scoped logins."""
        return dict(self.call(
            "SELECT login, dbname FROM datatable_roles.datatable_role_set"))

    def role_state(self, name: str) -> tuple[bool, bool]:
        """(exists, canlogin)"""
        row = self.su("postgres").execute(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", [name]).fetchone()
        return (row is not None, bool(row and row[0]))

    def role_oid(self, name: str) -> int | None:
        row = self.su("postgres").execute("SELECT oid FROM pg_roles WHERE rolname = %s",
                                          [name]).fetchone()
        return row[0] if row else None

    def table_owner(self, table: str, dbname: str | None = None) -> str | None:
        row = self.su(dbname or self.dbname).execute(
            "SELECT tableowner::text FROM pg_tables WHERE tablename = %s", [table]).fetchone()
        return row[0] if row else None

    def table_schema(self, table: str, dbname: str | None = None) -> str | None:
        """The schema of the one table named ``table`` (public, or the quarantine schema a
        sweep or a role's drop moved it to: docs/trust.md)."""
        rows = self.su(dbname or self.dbname).execute(
            "SELECT schemaname::text FROM pg_tables WHERE tablename = %s", [table]).fetchall()
        assert len(rows) <= 1, f"{len(rows)} tables named {table}"
        return rows[0][0] if rows else None

    def table_rows(self, table: str, dbname: str | None = None) -> int:
        """The rows of the one table named ``table``, in whichever schema it is now."""
        schema = self.table_schema(table, dbname)
        assert schema is not None, f"no table {table}"
        return self.su(dbname or self.dbname).execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, table))
        ).fetchone()[0]


def build_world(scratch: Scratch, meta: MetaDB, uid: str, *, ws: str = WS,
                users: Mapping[str, Sequence[str]], admins: Sequence[str] = (),
                roles: Sequence[str] = (), tenants: Mapping[str, Sequence[str]] | None = None,
                datatables: int | Sequence[DataTableDB] = 1, default: str | None = "admin",
                orders: Mapping[str, str] | None = None, role_may_create: bool = False,
                identity: str = "u/publisher", jobs: Sequence[str] = (),
                directory: PackageDirectory | WindmillDirectory | None = None) -> World:
    """A world in metadata database ``meta``:

    - workspace ``ws`` with ``users`` (user -> the groups it is in; emails user@acme.test),
      those in ``admins`` workspace admins;
    - catalog roles <uid>_<short> for each short name of ``roles`` and of ``tenants``;
    - data tables main, dt1, ... on ``datatables`` databases (a count of new ones, or made
      already), each mapping every role of ``tenants`` (short name -> keys), the default role
      left admin or set to ``default`` (a short name, or None); with ``role_may_create`` each
      role may CREATE in each database's schema public;
    - with ``orders`` (region -> short role name), the first database is the RLS fixture;
    - a job per name of ``jobs``, started by ``identity`` for that viewer, in ``w.jobs``;
    - the directory written through the package (mirror mode), or through ``directory``.
    """
    tenants = dict(tenants or {})
    w = World(scratch.cluster, scratch, meta, uid, ws, identity)
    w.directory = directory or PackageDirectory(w.call)
    w.directory.add_workspace(ws)
    for user, groups in users.items():
        w.add_user(user, groups, admin=user in admins)
    for short in dict.fromkeys([*roles, *tenants]):
        w.roles[short] = f"{uid}_{short}"
        w.call("SELECT create_datatable_role(%s)", [w.roles[short]])
    if isinstance(datatables, int):
        policies = {region: w.roles[r] for region, r in (orders or {}).items()}
        dbs = [scratch.orders_db(policies) if i == 0 and orders else scratch.datatable_db()
               for i in range(datatables)]
    else:
        assert not orders, "the orders table is made with its database"
        dbs = list(datatables)
    default_role = w.roles.get(default, default)
    for i, db in enumerate(dbs):
        w.register(DT if i == 0 else f"dt{i}", db, default=default_role,
                   tenants={w.roles[r]: keys for r, keys in tenants.items()})
        if role_may_create and w.roles:
            w.su(db.dbname).execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(
                sql.SQL(", ").join(map(sql.Identifier, w.role_names))))
    for viewer in jobs:
        w.jobs[viewer] = w.job(viewer)
    flush_stats(w.owner_session())
    return w


# The world of the wrapper and CLI tests: orders 1 emea, 2 us, 3 apac, 4 emea, 5 us under a
# policy per region; alice (group emea), bob (group us), carol (groups emea and us), dave (no
# group), publisher (the app identity, tenant of nothing); the default role stays admin.
ACME = dict(
    users={"alice": ["emea"], "bob": ["us"], "carol": ["emea", "us"], "dave": [],
           "publisher": []},
    tenants={"emea": ["g/emea"], "us": ["g/us"]},
    orders={"emea": "emea", "us": "us"},
)

# The world of the lifecycle tests: viewer vic is a tenant of roles a and b, so that vic's
# jobs resolve to a set login; neo is nobody's tenant (yet); the publisher is a workspace
# admin, so it may name any role; no default role; each role may create tables.
LIFECYCLE = dict(
    users={"publisher": [], "vic": [], "neo": []}, admins=["publisher"],
    tenants={"a": ["u/vic"], "b": ["u/vic"]}, default=None, role_may_create=True,
    jobs=["vic", "neo"],
)


# ---- logging in with what a resolve returned ------------------------------------------------

def job_session(w: World, r: Resolved, dbname: str | None = None,
                tcp: bool = True) -> psycopg.Connection:
    """A session as a job's code gets it from the platform: the resolved login and password
    on its database; a one-role login with the startup option, so it acts as its role."""
    return connect(w.login_conninfo(r.login, r.password, dbname or r.dbname, tcp,
                                    role=session_role(r)))


def create_table_as(w: World, login: str, password: str, table: str,
                    dbname: str | None = None, rows: int = 3, role: str | None = None) -> None:
    """``table`` with ``rows`` rows, created by ``login`` (acting as ``role`` when given,
    through the startup option: then the table belongs to the role)."""
    with connect(w.login_conninfo(login, password, dbname, role=role)) as conn:
        assert conn.execute("SELECT current_user, session_user").fetchone() == (
            role or login, login)
        conn.execute(sql.SQL("CREATE TABLE {} (x integer)").format(sql.Identifier(table)))
        conn.execute(sql.SQL("INSERT INTO {} SELECT generate_series(1, %s)").format(
            sql.Identifier(table)), [rows])


def login_error(w: World, login: str, password: str, dbname: str | None = None):
    """None when it logs in, else the psycopg error."""
    try:
        with connect(w.login_conninfo(login, password, dbname)) as conn:
            conn.execute("SELECT 1")
        return None
    except psycopg.OperationalError as e:
        return e


def authenticates(w: World, login: str, password: str, dbname: str | None = None) -> bool:
    try:
        with connect(w.login_conninfo(login, password, dbname)) as conn:
            return conn.execute("SELECT current_user").fetchone()[0] == login
    except psycopg.OperationalError:
        return False


def check_rows_authenticate(w: World) -> None:
    """Every row with a non-empty password names an existing login that logs in with it to
    its database."""
    dbnames = w.row_dbnames()
    for login, (password, _ids) in w.rows().items():
        if password:
            assert w.role_state(login) == (True, True), f"row of {login}: login missing/NOLOGIN"
            err = login_error(w, login, password, dbnames[login])
            assert err is None, f"row of {login} has a password that does not log in: {err}"


# ---- fault injection and threads ------------------------------------------------------------

# The key fault_point's 'wait' action blocks on (same metadata database).
FAULT_LOCK = "SELECT pg_advisory_lock(hashtextextended('datatable_roles.fault', 0))"
FAULT_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended('datatable_roles.fault', 0))"
FAULT_WAITERS = """
    SELECT a.pid FROM pg_stat_activity AS a JOIN pg_locks AS l ON l.pid = a.pid
    WHERE a.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted
        AND l.objid = (hashtextextended('datatable_roles.fault', 0) & 4294967295)::oid
"""


class FaultHold:
    """Holds the fault lock in its own session, so a backend armed with fault_action 'wait'
    blocks at its fault point; wait_for_victim() returns that backend's pid."""

    def __init__(self, w: World):
        self.conn = w.connect_owner()
        self.conn.execute(FAULT_LOCK)
        self.held = True

    def wait_for_victim(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.conn.execute(FAULT_WAITERS).fetchall()
            if rows:
                assert len(rows) == 1, rows
                return rows[0][0]
            time.sleep(0.01)
        raise AssertionError("no backend reached the fault point")

    def terminate(self, pid: int) -> None:
        assert self.conn.execute("SELECT pg_terminate_backend(%s, 10000)", [pid]).fetchone()[0]

    def release(self) -> None:
        if self.held:
            self.conn.execute(FAULT_UNLOCK)
            self.held = False

    def close(self) -> None:
        self.release()
        self.conn.close()


def arm(conn: psycopg.Connection, point: str, action: str) -> None:
    conn.execute("SELECT set_config('datatable_roles.fault', %s, false),"
                 " set_config('datatable_roles.fault_action', %s, false)", [point, action])


def disarm(conn: psycopg.Connection) -> None:
    arm(conn, "", "")


class Runner(threading.Thread):
    """Runs fn() in a thread; .result or .error afterwards."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn = fn
        self.result = None
        self.error: BaseException | None = None

    def run(self):
        try:
            self.result = self.fn()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            self.error = e

    def finish(self, timeout: float = 30.0):
        self.join(timeout)
        assert not self.is_alive(), "the call did not finish"
        return self
