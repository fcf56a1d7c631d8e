"""Resolved logins against a real cluster: the returned password authenticates (TCP with
SCRAM and the socket), RLS shows each login its rows, a one-role login (R6) acts as its role
with the startup option, SET ROLE narrows and nothing else, many workers racing for one new
set share one login, two instances never share a set-login name, the cheap path (R10) reads
no directory table, and last_used_at is written at most once a day.

Admin calls run as the package owner, run-time calls as the worker role.
"""

from __future__ import annotations

import datetime
import threading

import psycopg
import pytest
from psycopg import errors, sql

from support import DT, Resolved, World, connect, flush_stats, session_role

DIRECTORY_TABLES = ("workspace_user", "group_member", "folder_access")


def order_ids(conn: psycopg.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM orders ORDER BY id")]


# ---- the world: three catalog roles, an orders table under RLS ------------------------------

# Orders 1 emea, 2 us, 3 apac, 4 emea, 5 us; emea's tenants are alice and group both
# (carol), us's bob and both, apac's a group nobody is in; no default role. dave starts
# alice's and carol's jobs (an app), root (a workspace admin) runs its own.
RLS_WORLD = dict(
    users={"dave": [], "alice": [], "bob": [], "carol": ["both"], "root": []},
    admins=["root"],
    tenants={"emea": ["u/alice", "g/both"], "us": ["u/bob", "g/both"], "apac": ["g/apac"]},
    default=None,
    orders={"emea": "emea", "us": "us", "apac": "apac"},
    identity="u/dave", jobs=["alice", "carol"],
)


@pytest.fixture
def world(make_world) -> World:
    w = make_world(**RLS_WORLD)
    w.jobs["root"] = w.job("root", identity="u/root", origin="run")
    flush_stats(w.owner_session())
    return w


# ---- the returned password authenticates ----------------------------------------------------

def resolved_kind(w: World, worker, kind: str):
    """(what the worker got, the roles and the orders that login must have)"""
    if kind == "role":
        return w.resolve("alice", conn=worker), [w.emea], [1, 4]
    if kind == "set":
        return w.resolve("carol", conn=worker), sorted([w.emea, w.us]), [1, 2, 4, 5]
    return w.resolve("root", role="admin", conn=worker), ["admin"], [1, 2, 3, 4, 5]


@pytest.mark.parametrize("kind", ["role", "set", "admin"])
def test_returned_password_authenticates_over_tcp_and_socket(world, kind):
    w = world
    with w.connect_worker() as worker:
        r, roles, rows = resolved_kind(w, worker, kind)
    assert r.roles == roles
    assert r.dbname == w.dbname
    if kind == "admin":
        assert r.login == w.admin_login
    else:  # R6 and R7: a scoped login, never the catalog role (NOLOGIN)
        assert r.login.startswith("wm_set_") and len(r.login.encode()) <= 63
        assert r.login not in roles
    with w.cluster.connect_super() as conn:
        (stored,) = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                 [r.login]).fetchone()
        catalog_can_login = conn.execute(
            "SELECT bool_or(rolcanlogin OR rolpassword IS NOT NULL) FROM pg_authid"
            " WHERE rolname = ANY(%s)", [[w.emea, w.us, w.apac]]).fetchone()[0]
    assert stored.startswith("SCRAM-SHA-256$")
    assert catalog_can_login is False
    role = session_role(r)
    assert role == (w.emea if kind == "role" else None)
    for tcp in (True, False):
        with connect(w.login_conninfo(r.login, r.password, tcp=tcp)) as conn:
            if tcp:
                assert conn.info.host == "127.0.0.1"
            assert conn.execute("SELECT current_user, session_user").fetchone() == (
                r.login, r.login)
            assert order_ids(conn) == rows
        if role is not None:  # with the startup option the platform passes, as the role
            with connect(w.login_conninfo(r.login, r.password, tcp=tcp, role=role)) as conn:
                assert conn.execute("SELECT current_user, session_user").fetchone() == (
                    role, r.login)
                assert order_ids(conn) == rows
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        connect(w.login_conninfo(r.login, r.password + "x", tcp=True)).close()


# ---- SET ROLE / RESET ROLE ------------------------------------------------------------------

def test_set_role_narrows_reset_returns_and_other_roles_fail(world, cluster):
    w = world
    with w.connect_worker() as worker:
        s = w.resolve("carol", conn=worker)
        one = w.resolve("alice", conn=worker)
    login = s.login
    with w.cluster.connect_super() as conn:
        held = [r[0] for r in conn.execute(
            "SELECT g.rolname FROM pg_auth_members am"
            " JOIN pg_roles g ON g.oid = am.roleid JOIN pg_roles u ON u.oid = am.member"
            " WHERE u.rolname = %s ORDER BY 1", [login])]
        (inherits,) = conn.execute("SELECT rolinherit FROM pg_roles WHERE rolname = %s",
                                   [login]).fetchone()
    (group,) = w.call("SELECT login_group FROM datatable_roles.settings")[0]
    assert held == sorted([w.emea, w.us, group]) and inherits  # its roles and the login group

    with connect(w.login_conninfo(login, s.password, tcp=False)) as conn:
        assert order_ids(conn) == [1, 2, 4, 5]
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(w.emea)))
        assert conn.execute("SELECT current_user").fetchone() == (w.emea,)
        assert order_ids(conn) == [1, 4]
        conn.execute("RESET ROLE")
        assert conn.execute("SELECT current_user").fetchone() == (login,)
        assert order_ids(conn) == [1, 2, 4, 5]
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(w.us)))
        assert order_ids(conn) == [2, 5]
        conn.execute("RESET ROLE")
        for other in (w.apac, w.admin_login, cluster.owner, "postgres"):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(other)))
            assert conn.execute("SELECT current_user").fetchone() == (login,)
        assert order_ids(conn) == [1, 2, 4, 5]

    # a one-role login started as its role: RESET ROLE returns to the role (the startup
    # option is the session's default), SET ROLE NONE to the login, which holds only it
    with connect(w.login_conninfo(one.login, one.password, tcp=False, role=w.emea)) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (w.emea,)
        for other in (w.us, w.admin_login, login, cluster.owner):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(other)))
        assert order_ids(conn) == [1, 4]
        conn.execute("RESET ROLE")
        assert conn.execute("SELECT current_user").fetchone() == (w.emea,)
        conn.execute("SET ROLE NONE")
        assert conn.execute("SELECT current_user").fetchone() == (one.login,)
        assert order_ids(conn) == [1, 4]
    # and a one-role login may not start as any other role
    for other in (w.us, w.admin_login):
        with pytest.raises(psycopg.OperationalError, match="permission denied to set role"):
            connect(w.login_conninfo(one.login, one.password, role=other)).close()


# ---- many workers, one new set --------------------------------------------------------------

def test_32_threads_resolving_one_new_set_share_one_login(world):
    w = world
    n = 32
    with w.cluster.connect_super() as conn:
        (before,) = conn.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'wm\\_set\\_%'").fetchone()
    conns = [w.connect_worker() for _ in range(n)]
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def run(i):
        try:
            barrier.wait(timeout=30)
            results[i] = w.resolve("carol", conn=conns[i])
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
    errors_seen = [r for r in results if not isinstance(r, Resolved)]
    assert not errors_seen, errors_seen
    assert {(r.login, r.password) for r in results} == {(results[0].login, results[0].password)}
    login = results[0].login
    assert login.startswith("wm_set_")
    assert results[0].roles == sorted([w.emea, w.us])
    with w.cluster.connect_super() as conn:
        (after,) = conn.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'wm\\_set\\_%'").fetchone()
        assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                            [login]).fetchone() == (1,)
    assert after - before == 1
    assert list(w.rows()) == [login]

    def login_once(i):
        try:
            conninfo = w.login_conninfo(login, results[i].password, tcp=bool(i % 2))
            with connect(conninfo) as c:
                results[i] = (c.execute("SELECT current_user").fetchone()[0], order_ids(c))
        except BaseException as e:  # noqa: BLE001
            results[i] = e

    threads = [threading.Thread(target=login_once, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [(login, [1, 2, 4, 5])] * n


# ---- two instances on one cluster -----------------------------------------------------------

def test_two_instances_never_share_a_set_login(make_world, meta_db, new_meta_db):
    """Two instances, each with roles x and y whose tenant is vera: the same catalog ids,
    different set logins."""
    instances = []
    for tag, meta in (("a", meta_db), ("b", new_meta_db())):
        w = make_world(meta=meta, tag=tag, users={"dave": [], "vera": []},
                       tenants={"x": ["u/vera"], "y": ["u/vera"]}, default=None,
                       identity="u/dave", jobs=["vera"])
        r = w.resolve("vera")
        assert r.roles == sorted([w.x, w.y])
        ids = [i for (i,) in w.call("SELECT id FROM datatable_roles.catalog_role ORDER BY id")]
        (instance_id,) = w.call("SELECT instance_id FROM datatable_roles.settings")[0]
        instances.append((w, ids, instance_id, r))

    (wa, ids_a, inst_a, ra), (wb, ids_b, inst_b, rb) = instances
    assert inst_a != inst_b
    assert ids_a == ids_b, "precondition: both instances use the same catalog ids"
    assert ra.login != rb.login
    for w, r in ((wa, ra), (wb, rb)):
        (forward,) = w.call("SELECT datatable_roles.set_login_name(%s, %s::bigint[])",
                            [w.dbname, ids_a])[0]
        (backward,) = w.call("SELECT datatable_roles.set_login_name(%s, %s::bigint[])",
                             [w.dbname, ids_a[::-1]])[0]
        assert forward == backward  # over the sorted ids
        assert forward == r.login

    # Instance B sweeping its own logins leaves A's working.
    wb.advance_clock("31 days")
    report = wb.sweep()
    assert report["dropped"] == 1, report
    assert wb.role_state(rb.login) == (False, False)
    with connect(wa.login_conninfo(ra.login, ra.password)) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (ra.login,)


# ---- R10: the cheap path reads no directory table -------------------------------------------

def scan_counts(w: World) -> dict[str, int]:
    with connect(w.meta.super_conninfo) as conn:
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
    if case == "default_role_held":
        w.register("dt", default=w.emea,
                   tenants={w.emea: ["u/dave"], w.us: []}, admin_tenants=["u/root"])
    elif case == "default_admin":
        w.register("dt", default="admin",
                   tenants={w.emea: ["u/alice", "g/both"], w.us: ["u/bob"]})
    elif case == "viewer_role":
        w.register("dt", default=None, tenants={w.emea: ["u/alice"], w.us: []})
    else:
        w.register("dt", default=w.emea, tenants={w.emea: ["u/alice"], w.us: []})
    job = w.job("alice")  # started by dave
    flush_stats(w.owner_session())
    with w.connect_worker() as worker:
        before = scan_counts(w)
        r = w.resolve(job, "dt", conn=worker)
        flush_stats(worker)
        after = scan_counts(w)
    assert r.roles == [{"emea": w.emea, "admin": "admin"}[roles_key]]
    delta = {t: after.get(t, 0) - before.get(t, 0) for t in after}
    # The counters do move for this resolve: it looked its job up.
    assert delta["job_perms"] >= 1, (before, after)
    directory = {t: delta[t] for t in DIRECTORY_TABLES}
    if reads_directory:
        assert directory["workspace_user"] >= 1, directory
    else:
        assert directory == dict.fromkeys(DIRECTORY_TABLES, 0), directory


# ---- last_used_at: at most once a day -------------------------------------------------------

def set_row_state(w: World, login: str):
    with connect(w.meta.super_conninfo) as conn:
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
                PERFORM * FROM resolve_datatable_role({job}::uuid, {dt});
                IF i % 250 = 0 THEN COMMIT; END IF;
            END LOOP;
        END
        $$""").format(times=sql.Literal(times), job=sql.Literal(str(job)), dt=sql.Literal(DT)))


def test_last_used_at_written_at_most_once_a_day(world):
    w = world
    job = w.jobs["carol"]
    with w.connect_worker() as worker:
        first = w.resolve(job, conn=worker)
        flush_stats(worker)
        login = first.login
        assert login.startswith("wm_set_")
        xmin0, used0, pw0, upd0 = set_row_state(w, login)
        assert pw0 == first.password

        resolve_many(worker, job, 10_000)
        again = w.resolve(job, conn=worker)
        flush_stats(worker)
        xmin1, used1, pw1, upd1 = set_row_state(w, login)
        assert again.login == login and again.password == first.password
        assert upd1 - upd0 <= 1
        assert (xmin1, used1, pw1) == (xmin0, used0, pw0)

        w.advance_clock("1 day 1 minute")
        nextday = w.resolve(job, conn=worker)
        flush_stats(worker)
        xmin2, used2, pw2, upd2 = set_row_state(w, login)
        assert upd2 - upd1 == 1
        assert xmin2 != xmin1
        assert used2 - used1 >= datetime.timedelta(days=1)
        assert nextday.password == pw2 == first.password  # a touch, not a re-key

        resolve_many(worker, job, 1_000)
        flush_stats(worker)
        xmin3, used3, _, upd3 = set_row_state(w, login)
        assert (upd3, xmin3, used3) == (upd2, xmin2, used2)
    with connect(w.login_conninfo(login, first.password, tcp=True)) as conn:
        assert order_ids(conn) == [1, 2, 4, 5]
