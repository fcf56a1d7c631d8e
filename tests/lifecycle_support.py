"""Shared helpers of tests/test_lifecycle_crash.py and tests/test_lifecycle_races.py.

A "world" is one metadata database (an instance) with a data table whose viewer `vic` is a
tenant of two catalog roles, so that vic's jobs resolve to a set login. Admin calls run as the
package owner, resolves as the worker role, the sweep as the owner in autocommit mode, and
time moves by `settings.clock_offset` (never by sleeping).
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from conftest import MetaDB, drop_role
from datatable_roles.scram import scram_sha256_verifier

# The key fault_point's 'wait' action blocks on (same metadata database).
FAULT_LOCK = "SELECT pg_advisory_lock(hashtextextended('datatable_roles.fault', 0))"
FAULT_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended('datatable_roles.fault', 0))"
FAULT_WAITERS = """
    SELECT a.pid FROM pg_stat_activity AS a JOIN pg_locks AS l ON l.pid = a.pid
    WHERE a.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted
        AND l.objid = (hashtextextended('datatable_roles.fault', 0) & 4294967295)::oid
"""


def connect(conninfo: str, **kw) -> psycopg.Connection:
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=10, **kw)


@dataclass
class DataTable:
    name: str          # the data table's name in workspace ws
    dbname: str
    admin: str
    admin_password: str


@dataclass
class World:
    cluster: object
    meta: MetaDB
    uid: str
    tables: list[DataTable]
    roles: list[str]
    jobs: dict[str, uuid.UUID] = field(default_factory=dict)
    ws: str = "ws"
    names: dict[str, str] = field(default_factory=dict)
    _conns: dict[str, psycopg.Connection] = field(default_factory=dict)

    # ---- connections -----------------------------------------------------------------
    def owner(self) -> psycopg.Connection:
        return connect(self.meta.owner_conninfo)

    def _cached(self, key: str, make) -> psycopg.Connection:
        conn = self._conns.get(key)
        if conn is None or conn.closed:
            conn = self._conns[key] = make()
        return conn

    def owner_session(self) -> psycopg.Connection:
        """One owner session kept for the checks (never armed, never killed)."""
        return self._cached("owner", self.owner)

    def su(self, dbname: str) -> psycopg.Connection:
        return self._cached("su:" + dbname, lambda: self.cluster.connect_super(dbname))

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def worker(self) -> psycopg.Connection:
        return connect(self.meta.worker_conninfo)

    def superuser(self, dbname: str | None = None) -> psycopg.Connection:
        return self.cluster.connect_super(dbname or self.meta.name)

    def login_conninfo(self, login: str, password: str, dbname: str | None = None) -> str:
        return self.cluster.conninfo(login, password, dbname or self.tables[0].dbname, tcp=True)

    # ---- package calls ----------------------------------------------------------------
    def call(self, statement: str, params=None):
        cur = self.owner_session().execute(statement, params)
        return cur.fetchall() if cur.description is not None else []

    def resolve(self, job: str = "vic", datatable: str | None = None, role: str | None = None,
                conn: psycopg.Connection | None = None):
        """(dbname, login, password, roles) as the worker role."""
        q = "SELECT dbname, login, password, roles FROM resolve_datatable_role(%s, %s, %s)"
        args = [self.jobs[job], datatable or self.tables[0].name, role]
        if conn is not None:
            return conn.execute(q, args).fetchone()
        with self.worker() as c:
            return c.execute(q, args).fetchone()

    def sweep(self, conn: psycopg.Connection | None = None, unused_for: str | None = None):
        q = "CALL sweep_unused_role_set_logins(NULL, %s::interval)"
        if conn is not None:
            return conn.execute(q, [unused_for]).fetchone()[0]
        with self.owner() as c:
            return c.execute(q, [unused_for]).fetchone()[0]

    def set_clock(self, offset: str) -> None:
        self.call("UPDATE datatable_roles.settings SET clock_offset = %s::interval", [offset])

    def advance_clock(self, by: str) -> None:
        self.call("UPDATE datatable_roles.settings SET clock_offset = clock_offset + %s::interval",
                  [by])

    def rows(self) -> dict[str, tuple[str, list[int]]]:
        """login -> (password, role_ids) of this instance's datatable_role_set."""
        return {login: (pw, ids) for login, pw, ids in self.call(
            "SELECT login, password, role_ids FROM datatable_roles.datatable_role_set")}

    # ---- the cluster's view ---------------------------------------------------------
    def role_state(self, name: str):
        """(exists, canlogin)"""
        row = self.su("postgres").execute(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", [name]).fetchone()
        return (row is not None, bool(row and row[0]))

    def table_owner(self, table: str, dbname: str | None = None):
        row = self.su(dbname or self.tables[0].dbname).execute(
            "SELECT tableowner::text FROM pg_tables WHERE tablename = %s", [table]).fetchone()
        return row[0] if row else None

    def table_rows(self, table: str, dbname: str | None = None) -> int:
        return self.su(dbname or self.tables[0].dbname).execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]


def make_datatable_dbs(cluster, prefix: str, n: int) -> list[DataTable]:
    """n data table databases, each owned by an admin login granted to the package owner
    (like conftest's datatable_db), named main, dt1, ...; drop with drop_datatable_dbs."""
    out = []
    for i in range(n):
        base = f"{prefix}_{secrets.token_hex(3)}"
        dbname, admin, password = base, base + "_admin", secrets.token_urlsafe(24)
        with cluster.connect_super() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(admin), sql.Literal(scram_sha256_verifier(password))))
            conn.execute(sql.SQL("GRANT {} TO {}").format(
                sql.Identifier(admin), sql.Identifier(cluster.owner)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(dbname), sql.Identifier(admin)))
        out.append(DataTable("main" if i == 0 else f"dt{i}", dbname, admin, password))
    return out


def drop_datatable_dbs(cluster, tables: list[DataTable]) -> None:
    for t in tables:
        with cluster.connect_super() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(t.dbname)))
        drop_role(cluster, t.admin)


def make_world(cluster, meta: MetaDB, datatable_db, uid: str, n_tables: int = 1,
               tenants: dict[str, list[str]] | None = None,
               tables: list[DataTable] | None = None, ws: str = "ws") -> World:
    """A workspace `ws` with users pub (the publisher, a workspace admin, so it may name any
    role), vic and neo (viewers), catalog roles <uid>_<r> with the given tenants (default: a and b, both {u/vic}), data tables main
    (and dt1, ...) with no default role, and a job per viewer (jobs['vic'], jobs['neo']).
    Each role may CREATE in each data table's schema public."""
    tenants = tenants or {"a": ["u/vic"], "b": ["u/vic"]}
    roles = tuple(tenants)
    if tables is None:
        tables = []
        for i in range(n_tables):
            dbname, admin, pw = datatable_db(uid + "dt")
            tables.append(DataTable("main" if i == 0 else f"dt{i}", dbname, admin, pw))
    role_names = [f"{uid}_{r}" for r in roles]
    w = World(cluster, meta, uid, tables, role_names, ws=ws)
    with w.owner() as conn:
        conn.execute("SELECT add_workspace(%s)", [ws])
        conn.execute("SELECT add_workspace_user(%s, 'pub', 'pub@x.io', true)", [ws])
        conn.execute("SELECT add_workspace_user(%s, 'vic', 'vic@x.io')", [ws])
        conn.execute("SELECT add_workspace_user(%s, 'neo', 'neo@x.io')", [ws])
        for r in role_names:
            conn.execute("SELECT create_datatable_role(%s)", [r])
        for t in tables:
            conn.execute("SELECT register_datatable(%s, %s, %s, %s, %s)",
                         [ws, t.name, t.dbname, t.admin, t.admin_password])
            for r, keys in zip(role_names, tenants.values()):
                conn.execute("SELECT set_datatable_role_tenants(%s, %s, %s, %s)",
                             [ws, t.name, r, keys])
            conn.execute("SELECT set_datatable_default_role(%s, %s, NULL)", [ws, t.name])
    for t in tables:
        w.su(t.dbname).execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(
            sql.SQL(", ").join(map(sql.Identifier, role_names))))
    w.jobs["vic"] = new_job(w, "vic@x.io")
    w.jobs["neo"] = new_job(w, "neo@x.io")
    return w


def new_job(w: World, viewer: str | None) -> uuid.UUID:
    job = uuid.uuid4()
    w.call("SELECT record_job_start(%s, %s, 'u/pub', 'app', %s)", [job, w.ws, viewer])
    return job


def create_table_as(w: World, login: str, password: str, table: str,
                    dbname: str | None = None, rows: int = 3) -> None:
    with connect(w.login_conninfo(login, password, dbname)) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == login
        conn.execute(sql.SQL("CREATE TABLE {} (x integer)").format(sql.Identifier(table)))
        conn.execute(sql.SQL("INSERT INTO {} SELECT generate_series(1, %s)").format(
            sql.Identifier(table)), [rows])


def authenticates(w: World, login: str, password: str, dbname: str | None = None) -> bool:
    try:
        with connect(w.login_conninfo(login, password, dbname)) as conn:
            return conn.execute("SELECT current_user").fetchone()[0] == login
    except psycopg.OperationalError:
        return False


def login_error(w: World, login: str, password: str, dbname: str | None = None):
    """None when it logs in, else the psycopg error."""
    try:
        with connect(w.login_conninfo(login, password, dbname)) as conn:
            conn.execute("SELECT 1")
        return None
    except psycopg.OperationalError as e:
        return e


def check_rows_authenticate(w: World) -> None:
    """Every row with a non-empty password names an existing login that logs in with it."""
    for login, (password, _ids) in w.rows().items():
        if password:
            assert w.role_state(login) == (True, True), f"row of {login}: login missing/NOLOGIN"
            err = login_error(w, login, password)
            assert err is None, f"row of {login} has a password that does not log in: {err}"


class FaultHold:
    """Holds the fault lock in its own session, so a backend armed with fault_action 'wait'
    blocks at its fault point; wait_for_victim() returns that backend's pid."""

    def __init__(self, w: World):
        self.w = w
        self.conn = w.owner()
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


def wait_until(predicate, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def backend_waiting_on_lock(w: World, pid: int) -> bool:
    with w.cluster.connect_super() as conn:
        row = conn.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                           [pid]).fetchone()
    return bool(row and row[0] == "Lock")


def drop_new_roles(cluster, before: set[str], dbnames: list[str] = ()) -> None:
    """Drop the cluster-wide roles a test made (its catalog roles and set logins): what they
    own or were granted in dbnames goes first (DROP OWNED), then the roles."""
    new = sorted(roles_now(cluster) - before)
    if not new:
        return
    names = sql.SQL(", ").join(map(sql.Identifier, new))
    for db in dbnames:
        with cluster.connect_super(db) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(names))
    with cluster.connect_super() as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                     " WHERE usename = ANY(%s)", [new])
        try:
            conn.execute(sql.SQL("DROP ROLE {}").format(names))
            return
        except psycopg.Error:
            pass
    for name in new:  # one of them still holds something elsewhere
        try:
            drop_role(cluster, name)
        except psycopg.Error:
            pass


def roles_now(cluster) -> set[str]:
    with cluster.connect_super() as conn:
        return {r for (r,) in conn.execute("SELECT rolname FROM pg_roles")}


def second_meta_db(cluster) -> MetaDB:
    """Another metadata database made like the meta_db fixture makes one."""
    name = "dtr_meta_" + secrets.token_hex(4)
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(cluster.template),
            sql.Identifier(cluster.owner)))
    with cluster.connect_super(name) as conn:
        conn.execute("UPDATE datatable_roles.settings SET instance_id = gen_random_uuid()")
    return MetaDB(name=name, owner_conninfo=cluster.owner_conninfo(name),
                  worker_conninfo=cluster.worker_conninfo(name),
                  super_conninfo=cluster.superuser_conninfo(name))
