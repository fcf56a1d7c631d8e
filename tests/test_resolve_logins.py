"""Resolved logins against a real cluster: the returned password authenticates (TCP with
SCRAM and the socket), RLS shows each login its rows, SET ROLE narrows and nothing else,
many workers racing for one new set share one login, two instances never share a set-login
name, the cheap path (R10) reads no directory table, and last_used_at is written at most
once a day.

Admin calls run as the package owner, run-time calls as the worker role.
"""

from __future__ import annotations

import contextlib
import datetime
import secrets
import threading
import uuid
from dataclasses import dataclass, field

import psycopg
import pytest
from psycopg import errors, sql

from conftest import MetaDB, drop_database, drop_role

WS = "w1"
DIRECTORY_TABLES = ("workspace_user", "group_member", "folder_access")


# ---- small helpers ---------------------------------------------------------------------------

def connect(conninfo: str) -> psycopg.Connection:
    return psycopg.connect(conninfo, autocommit=True)


def call(conn: psycopg.Connection, fn: str, *args, casts: dict[int, str] | None = None):
    """SELECT fn($1, ...) with optional casts per argument position; returns the cursor."""
    casts = casts or {}
    placeholders = ", ".join(f"%s{casts.get(i, '')}" for i in range(len(args)))
    return conn.execute(f"SELECT {fn}({placeholders})", list(args))


def resolve(conn, job, datatable="main", role=None, for_migration=False):
    row = conn.execute(
        "SELECT dbname, login, password, roles FROM resolve_datatable_role(%s, %s, %s, %s)",
        [job, datatable, role, for_migration]).fetchone()
    return dict(zip(("dbname", "login", "password", "roles"), row))


def flush_stats(conn: psycopg.Connection) -> None:
    """Flush this backend's pending statistics now (done before the call returns)."""
    conn.execute("SELECT pg_stat_force_next_flush()")


def order_ids(conn: psycopg.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM orders ORDER BY id")]


def set_tenants(owner, datatable, role, tenants):
    call(owner, "set_datatable_role_tenants", WS, datatable, role, tenants,
         casts={3: "::text[]"})


def set_default(owner, datatable, role):
    call(owner, "set_datatable_default_role", WS, datatable, role, casts={2: "::text"})


def record_job(worker, permissioned_as, origin, caller_email=None, token_job=None,
               workspace=WS) -> uuid.UUID:
    job = uuid.uuid4()
    worker.execute("SELECT record_job_start(%s, %s, %s, %s, %s::text, %s::uuid)",
                   [job, workspace, permissioned_as, origin, caller_email, token_job])
    return job


@contextlib.contextmanager
def clone_meta_db(cluster):
    """Like the meta_db fixture: a fresh clone of the template with its own instance id."""
    name = "dtr_meta_" + secrets.token_hex(4)
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(cluster.template),
            sql.Identifier(cluster.owner)))
    try:
        with cluster.connect_super(name) as conn:
            conn.execute("UPDATE datatable_roles.settings SET instance_id = gen_random_uuid()")
        yield MetaDB(name=name, owner_conninfo=cluster.owner_conninfo(name),
                     worker_conninfo=cluster.worker_conninfo(name),
                     super_conninfo=cluster.superuser_conninfo(name))
    finally:
        drop_database(cluster, name)


def drop_package_roles(cluster, meta: MetaDB) -> None:
    """Drop the cluster-wide roles a metadata database made: set logins and catalog roles."""
    try:
        with connect(meta.super_conninfo) as conn:
            names = [r[0] for r in conn.execute(
                "SELECT login FROM datatable_roles.datatable_role_set"
                " UNION ALL SELECT name FROM datatable_roles.catalog_role")]
    except psycopg.Error:
        return
    for name in names:
        drop_role(cluster, name)


# ---- the world: one workspace, three catalog roles, an orders table under RLS -----------------

ORDERS = [(1, "emea"), (2, "us"), (3, "apac"), (4, "emea")]


@dataclass
class World:
    cluster: object
    meta: MetaDB
    uid: str
    dbname: str
    admin: str
    admin_password: str
    emea: str
    us: str
    apac: str
    jobs: dict[str, uuid.UUID] = field(default_factory=dict)

    def owner(self):
        return connect(self.meta.owner_conninfo)

    def worker(self):
        return connect(self.meta.worker_conninfo)

    def data_conninfo(self, login, password, tcp=False):
        return self.cluster.conninfo(login, password, self.dbname, tcp=tcp)

    def register(self, owner, name, default=None, tenants=None, admin_tenants=None):
        """Another data table entry of the workspace on the same database."""
        call(owner, "register_datatable", WS, name, self.dbname, self.admin, self.admin_password)
        for role, keys in (tenants or {}).items():
            set_tenants(owner, name, role, keys)
        if admin_tenants is not None:
            set_tenants(owner, name, "admin", admin_tenants)
        if default != "admin":
            set_default(owner, name, default)


def build_world(cluster, meta: MetaDB, make_datatable, uid: str) -> World:
    dbname, admin, admin_password = make_datatable()
    w = World(cluster, meta, uid, dbname, admin, admin_password,
              f"{uid}_emea", f"{uid}_us", f"{uid}_apac")
    with w.owner() as owner:
        call(owner, "add_workspace", WS)
        for user, is_admin in (("dave", False), ("alice", False), ("bob", False),
                               ("carol", False), ("root", True)):
            call(owner, "add_workspace_user", WS, user, f"{user}@example.com", is_admin)
        call(owner, "add_group_member", WS, "both", "carol")
        for role in (w.emea, w.us, w.apac):
            call(owner, "create_datatable_role", role)
        call(owner, "register_datatable", WS, "main", dbname, admin, admin_password)
        set_tenants(owner, "main", w.emea, ["u/alice", "g/both"])
        set_tenants(owner, "main", w.us, ["u/bob", "g/both"])
        set_tenants(owner, "main", w.apac, ["g/apac"])  # a group nobody is in
        set_default(owner, "main", None)
        flush_stats(owner)
    with connect(cluster.conninfo(admin, admin_password, dbname)) as conn:
        conn.execute("CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL)")
        conn.cursor().executemany("INSERT INTO orders VALUES (%s, %s)", ORDERS)
        conn.execute("ALTER TABLE orders ENABLE ROW LEVEL SECURITY")
        for role, region in ((w.emea, "emea"), (w.us, "us"), (w.apac, "apac")):
            conn.execute(sql.SQL("GRANT SELECT ON orders TO {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL(
                "CREATE POLICY {} ON orders FOR SELECT"
                " USING (region = {} AND pg_has_role(current_user, {}, 'member'))").format(
                sql.Identifier(f"p_{region}"), sql.Literal(region), sql.Literal(role)))
    with w.worker() as worker:
        w.jobs["alice"] = record_job(worker, "u/dave", "app", "alice@example.com")
        w.jobs["carol"] = record_job(worker, "u/dave", "app", "carol@example.com")
        w.jobs["root"] = record_job(worker, "u/root", "run", "root@example.com")
        flush_stats(worker)
    return w


@pytest.fixture
def world(cluster, meta_db, datatable_db, uid):
    w = build_world(cluster, meta_db, datatable_db, uid)
    yield w
    drop_package_roles(cluster, meta_db)


# ---- the returned password authenticates ----------------------------------------------------

def resolved_kind(w: World, worker, kind: str):
    if kind == "role":
        return resolve(worker, w.jobs["alice"]), [w.emea], [1, 4]
    if kind == "set":
        return resolve(worker, w.jobs["carol"]), sorted([w.emea, w.us]), [1, 2, 4]
    return resolve(worker, w.jobs["root"], role="admin"), ["admin"], [1, 2, 3, 4]


@pytest.mark.parametrize("kind", ["role", "set", "admin"])
def test_returned_password_authenticates_over_tcp_and_socket(world, kind):
    w = world
    with w.worker() as worker:
        r, roles, rows = resolved_kind(w, worker, kind)
    assert r["roles"] == roles
    assert r["dbname"] == w.dbname
    expected_login = {"role": w.emea, "admin": w.admin}.get(kind)
    if expected_login:
        assert r["login"] == expected_login
    else:
        assert r["login"].startswith("wm_set_") and len(r["login"].encode()) <= 63
    with w.cluster.connect_super() as conn:
        (stored,) = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                 [r["login"]]).fetchone()
    assert stored.startswith("SCRAM-SHA-256$")
    for tcp in (True, False):
        with connect(w.data_conninfo(r["login"], r["password"], tcp=tcp)) as conn:
            if tcp:
                assert conn.info.host == "127.0.0.1"
            assert conn.execute("SELECT current_user, session_user").fetchone() == (
                r["login"], r["login"])
            assert order_ids(conn) == rows
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        connect(w.data_conninfo(r["login"], r["password"] + "x", tcp=True)).close()


# ---- SET ROLE / RESET ROLE ------------------------------------------------------------------

def test_set_role_narrows_reset_returns_and_other_roles_fail(world, cluster):
    w = world
    with w.worker() as worker:
        s = resolve(worker, w.jobs["carol"])
        one = resolve(worker, w.jobs["alice"])
    login = s["login"]
    with w.cluster.connect_super() as conn:
        held = [r[0] for r in conn.execute(
            "SELECT g.rolname FROM pg_auth_members am"
            " JOIN pg_roles g ON g.oid = am.roleid JOIN pg_roles u ON u.oid = am.member"
            " WHERE u.rolname = %s ORDER BY 1", [login])]
        (inherits,) = conn.execute("SELECT rolinherit FROM pg_roles WHERE rolname = %s",
                                   [login]).fetchone()
    assert held == sorted([w.emea, w.us]) and inherits

    with connect(w.data_conninfo(login, s["password"])) as conn:
        assert order_ids(conn) == [1, 2, 4]
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(w.emea)))
        assert conn.execute("SELECT current_user").fetchone() == (w.emea,)
        assert order_ids(conn) == [1, 4]
        conn.execute("RESET ROLE")
        assert conn.execute("SELECT current_user").fetchone() == (login,)
        assert order_ids(conn) == [1, 2, 4]
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(w.us)))
        assert order_ids(conn) == [2]
        conn.execute("RESET ROLE")
        for other in (w.apac, w.admin, cluster.owner, "postgres"):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(other)))
            assert conn.execute("SELECT current_user").fetchone() == (login,)
        assert order_ids(conn) == [1, 2, 4]

    with connect(w.data_conninfo(one["login"], one["password"])) as conn:
        for other in (w.us, w.admin, login):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(other)))
        assert order_ids(conn) == [1, 4]


# ---- many workers, one new set --------------------------------------------------------------

def test_32_threads_resolving_one_new_set_share_one_login(world):
    w = world
    n = 32
    with w.cluster.connect_super() as conn:
        (before,) = conn.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'wm\\_set\\_%'").fetchone()
    conns = [w.worker() for _ in range(n)]
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def run(i):
        try:
            barrier.wait(timeout=30)
            results[i] = resolve(conns[i], w.jobs["carol"])
        except BaseException as e:  # noqa: BLE001 - reported below
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        for c in conns:
            c.close()
    errors_seen = [r for r in results if not isinstance(r, dict)]
    assert not errors_seen, errors_seen
    assert {(r["login"], r["password"]) for r in results} == {
        (results[0]["login"], results[0]["password"])}
    login = results[0]["login"]
    assert login.startswith("wm_set_")
    assert results[0]["roles"] == sorted([w.emea, w.us])
    with w.cluster.connect_super() as conn:
        (after,) = conn.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'wm\\_set\\_%'").fetchone()
        assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                            [login]).fetchone() == (1,)
    assert after - before == 1
    with connect(w.meta.super_conninfo) as conn:
        assert conn.execute("SELECT login FROM datatable_roles.datatable_role_set").fetchall() \
            == [(login,)]

    def login_once(i):
        try:
            with connect(w.data_conninfo(login, results[i]["password"], tcp=bool(i % 2))) as c:
                results[i] = (c.execute("SELECT current_user").fetchone()[0], order_ids(c))
        except BaseException as e:  # noqa: BLE001
            results[i] = e

    threads = [threading.Thread(target=login_once, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [(login, [1, 2, 4])] * n


# ---- two instances on one cluster -----------------------------------------------------------

def test_two_instances_never_share_a_set_login(cluster, datatable_db, uid):
    made = []
    with contextlib.ExitStack() as stack:
        instances = []
        for tag in ("a", "b"):
            meta = stack.enter_context(clone_meta_db(cluster))
            stack.callback(drop_package_roles, cluster, meta)
            dbname, admin, admin_password = datatable_db()
            x, y = f"{uid}_{tag}_x", f"{uid}_{tag}_y"
            with connect(meta.owner_conninfo) as owner:
                call(owner, "add_workspace", WS)
                call(owner, "add_workspace_user", WS, "dave", "dave@example.com", False)
                call(owner, "add_workspace_user", WS, "vera", "vera@example.com", False)
                ids = [call(owner, "create_datatable_role", r).fetchone()[0] for r in (x, y)]
                call(owner, "register_datatable", WS, "main", dbname, admin, admin_password)
                for r in (x, y):
                    call(owner, "set_datatable_role_tenants", WS, "main", r, ["u/vera"],
                         casts={3: "::text[]"})
                call(owner, "set_datatable_default_role", WS, "main", None,
                     casts={2: "::text"})
                (instance_id,) = owner.execute(
                    "SELECT instance_id FROM datatable_roles.settings").fetchone()
            with connect(meta.worker_conninfo) as worker:
                job = record_job(worker, "u/dave", "app", "vera@example.com")
                r = resolve(worker, job)
            assert r["roles"] == sorted([x, y])
            instances.append((meta, sorted(ids), instance_id, r, dbname))
            made.append(r["login"])

        (meta_a, ids_a, inst_a, ra, db_a), (meta_b, ids_b, inst_b, rb, db_b) = instances
        assert inst_a != inst_b
        assert ids_a == ids_b, "precondition: both instances use the same catalog ids"
        assert ra["login"] != rb["login"]
        names = {}
        for meta in (meta_a, meta_b):
            with connect(meta.owner_conninfo) as owner:
                forward = owner.execute("SELECT datatable_roles.set_login_name(%s::bigint[])",
                                        [ids_a]).fetchone()[0]
                backward = owner.execute("SELECT datatable_roles.set_login_name(%s::bigint[])",
                                         [ids_a[::-1]]).fetchone()[0]
            assert forward == backward  # over the sorted ids
            names[meta.name] = forward
        assert names[meta_a.name] == ra["login"] and names[meta_b.name] == rb["login"]

        # Instance B sweeping its own logins leaves A's working.
        with connect(meta_b.owner_conninfo) as owner:
            owner.execute("UPDATE datatable_roles.settings SET clock_offset = '31 days'")
            (report,) = owner.execute("CALL sweep_unused_role_set_logins(NULL)").fetchone()
        assert report["dropped"] == 1, report
        with cluster.connect_super() as conn:
            assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                                [rb["login"]]).fetchone() == (0,)
        with connect(cluster.conninfo(ra["login"], ra["password"], db_a, tcp=True)) as conn:
            assert conn.execute("SELECT current_user").fetchone() == (ra["login"],)


# ---- R10: the cheap path reads no directory table -------------------------------------------

def scan_counts(cluster, meta: MetaDB) -> dict[str, int]:
    with connect(meta.super_conninfo) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        return dict(conn.execute(
            "SELECT relname, coalesce(idx_scan, 0) + coalesce(seq_scan, 0)"
            " FROM pg_stat_user_tables WHERE schemaname = 'datatable_roles'"
            " AND relname = ANY(%s)",
            [list(DIRECTORY_TABLES) + ["job_perms"]]).fetchall())


@pytest.mark.parametrize("case, roles_key, reads_directory", [
    ("default_role_held", "emea", False),       # only the default (and admin) has tenants
    ("default_admin", "admin", False),          # R2, though another role names the viewer
    ("viewer_role", "emea", True),              # no default; a role names the viewer
    ("default_unusable_viewer", "emea", True),  # identity may not use D; viewer may
])
def test_r10_cheap_path_reads_no_directory_table(world, case, roles_key, reads_directory):
    w = world
    with w.owner() as owner:
        if case == "default_role_held":
            w.register(owner, "dt", default=w.emea,
                       tenants={w.emea: ["u/dave"], w.us: []}, admin_tenants=["u/root"])
        elif case == "default_admin":
            w.register(owner, "dt", default="admin",
                       tenants={w.emea: ["u/alice", "g/both"], w.us: ["u/bob"]})
        elif case == "viewer_role":
            w.register(owner, "dt", default=None, tenants={w.emea: ["u/alice"], w.us: []})
        else:
            w.register(owner, "dt", default=w.emea, tenants={w.emea: ["u/alice"], w.us: []})
        flush_stats(owner)
    with w.worker() as worker:
        job = record_job(worker, "u/dave", "app", "alice@example.com")
        flush_stats(worker)
        before = scan_counts(w.cluster, w.meta)
        r = resolve(worker, job, "dt")
        flush_stats(worker)
        after = scan_counts(w.cluster, w.meta)
    assert r["roles"] == [{"emea": w.emea, "admin": "admin"}[roles_key]]
    delta = {t: after.get(t, 0) - before.get(t, 0) for t in after}
    # The counters do move for this resolve: it looked its job up.
    assert delta["job_perms"] >= 1, (before, after)
    directory = {t: delta[t] for t in DIRECTORY_TABLES}
    if reads_directory:
        assert directory["workspace_user"] >= 1, directory
    else:
        assert directory == dict.fromkeys(DIRECTORY_TABLES, 0), directory


# ---- last_used_at: at most once a day -------------------------------------------------------

def set_row_state(meta: MetaDB, login: str):
    with connect(meta.super_conninfo) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        (xmin, last_used, password) = conn.execute(
            "SELECT xmin::text, last_used_at, password FROM datatable_roles.datatable_role_set"
            " WHERE login = %s", [login]).fetchone()
        (updates,) = conn.execute(
            "SELECT n_tup_upd FROM pg_stat_user_tables WHERE schemaname = 'datatable_roles'"
            " AND relname = 'datatable_role_set'").fetchone()
    return xmin, last_used, password, updates


def resolve_many(worker, job, times: int) -> None:
    """`times` resolves on the server, committing every 250 (so the clock moves)."""
    worker.execute(sql.SQL("""
        DO $$
        BEGIN
            FOR i IN 1..{times} LOOP
                PERFORM * FROM resolve_datatable_role({job}::uuid, 'main');
                IF i % 250 = 0 THEN COMMIT; END IF;
            END LOOP;
        END
        $$""").format(times=sql.Literal(times), job=sql.Literal(str(job))))


def test_last_used_at_written_at_most_once_a_day(world):
    w = world
    job = w.jobs["carol"]
    with w.worker() as worker:
        first = resolve(worker, job)
        flush_stats(worker)
        login = first["login"]
        assert login.startswith("wm_set_")
        xmin0, used0, pw0, upd0 = set_row_state(w.meta, login)
        assert pw0 == first["password"]

        resolve_many(worker, job, 10_000)
        again = resolve(worker, job)
        flush_stats(worker)
        xmin1, used1, pw1, upd1 = set_row_state(w.meta, login)
        assert again["login"] == login and again["password"] == first["password"]
        assert upd1 - upd0 <= 1
        assert (xmin1, used1, pw1) == (xmin0, used0, pw0)

        with w.owner() as owner:
            owner.execute("UPDATE datatable_roles.settings SET clock_offset = '1 day 1 minute'")
        nextday = resolve(worker, job)
        flush_stats(worker)
        xmin2, used2, pw2, upd2 = set_row_state(w.meta, login)
        assert upd2 - upd1 == 1
        assert xmin2 != xmin1
        assert used2 - used1 >= datetime.timedelta(days=1)
        assert nextday["password"] == pw2 == first["password"]  # a touch, not a re-key

        resolve_many(worker, job, 1_000)
        flush_stats(worker)
        xmin3, used3, _, upd3 = set_row_state(w.meta, login)
        assert (upd3, xmin3, used3) == (upd2, xmin2, used2)
    with connect(w.data_conninfo(login, first["password"], tcp=True)) as conn:
        assert order_ids(conn) == [1, 2, 4]
