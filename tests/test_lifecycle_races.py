"""Races of the set-login lifecycle (docs/lifecycle.md), against real logins.

- a resolve racing a sweep of the same login gets a password that logs in right away, or a
  clear error; the one exception is the sweep's rotation, which gives a live login a new
  password without ending its sessions: a password resolved just before it fails once, and
  the next resolve (what the wrapper's one retry does) gets one that works;
- a resolve racing retirement (disable/enable, retire_role_set_logins_of) likewise, except
  that a retirement committing after the resolve read the row may of course retire what it
  returned; a login being made while its role is disabled or dropped is retired too;
- retirement ends the sessions of the retired logins (the set logins and one-role logins
  holding the role), and no other;
- two instances on one cluster never share a set login, and neither's sweep or retirement
  touches the other's;
- the sweep's report, and a sweep that cannot finish with a login;
- remove_datatable_role retires the logins holding the role on that database only.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from psycopg import sql

from support import (
    DT, LIFECYCLE, FaultHold, Runner, arm, authenticates, check_rows_authenticate, connect,
    create_table_as, login_error,
)

NOTHING_DONE = {"examined": 0, "dropped": 0, "skipped": 0, "unfinished": [], "rotated": 0,
                "healed": 0, "forgotten_user_keys": [], "servers_pending": []}


@pytest.fixture
def world(make_world):
    return make_world(**LIFECYCLE)


def _alive(conn: psycopg.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
        return True
    except psycopg.OperationalError:
        return False


# ---- the sweep -------------------------------------------------------------------------------

ITERATIONS = 12
RESOLVERS = 4


def test_resolve_racing_sweep_gets_a_working_password_or_a_clear_error(world):
    w = world
    _db, login, password, _r = w.resolve("vic")
    create_table_as(w, login, password, "made")
    outcomes = {"ok": 0, "error": [], "rotated_away": 0}
    sweeps = {"dropped": 0, "kept": 0}
    for i in range(ITERATIONS):
        w.advance_clock("31 days")  # the login is stale again
        oid_before = w.role_oid(login)
        barrier = threading.Barrier(RESOLVERS + 1)
        failures: list[str] = []
        rotated_away: list[str] = []

        def resolver():
            with w.connect_worker() as conn:
                barrier.wait()
                if i % 4 == 0:
                    time.sleep(0.02)  # the sweep's head start: each order is run, not only one
                for _ in range(3):
                    try:
                        _db, got, pw, _roles = w.resolve("vic", conn=conn)
                    except psycopg.Error as e:
                        if e.sqlstate is None or e.sqlstate.startswith("XX"):
                            failures.append(f"unclear error: {e.sqlstate} {e}")
                        outcomes["error"].append(e.sqlstate)
                        continue
                    err = login_error(w, got, pw)
                    if err is None:
                        outcomes["ok"] += 1
                        continue
                    if "password authentication failed" not in str(err):
                        failures.append(f"resolve returned a login that fails: {err}")
                        continue
                    # only a rotation committed after this resolve may do that; then the
                    # next resolve (the wrapper's retry) works at once
                    rotated_away.append(got)
                    _db, got2, pw2, _roles = w.resolve("vic", conn=conn)
                    err = login_error(w, got2, pw2)
                    if err is not None or pw2 == pw:
                        failures.append(f"the resolve after a rotation fails too: {err}")

        def sweeper():
            with w.connect_owner() as conn:
                barrier.wait()
                if i % 2:
                    time.sleep(0.002 * (i % 5))  # vary who goes first
                return w.sweep(conn)

        threads = [Runner(resolver) for _ in range(RESOLVERS)]
        sweep = Runner(sweeper)
        for t in threads + [sweep]:
            t.start()
        for t in threads + [sweep]:
            t.finish(60)
        assert failures == []
        assert all(t.error is None for t in threads), [t.error for t in threads]
        assert sweep.error is None, sweep.error
        report = sweep.result
        assert report["unfinished"] == [], report
        if rotated_away:
            assert report["rotated"] == 1, (report, rotated_away)
            outcomes["rotated_away"] += len(rotated_away)
        # the report tells the truth: a login reported dropped was dropped (it may have been
        # made again since, as another role with the same name); one skipped, or not
        # examined (a resolve used it before the sweep looked), was not
        if report["dropped"] == 1:
            assert w.role_oid(login) != oid_before
            assert w.table_owner("made") == w.admin_login
            sweeps["dropped"] += 1
        else:
            assert report["skipped"] + (1 - report["examined"]) == 1, report
            assert w.role_oid(login) == oid_before
            sweeps["kept"] += 1
        check_rows_authenticate(w)
        assert w.table_rows("made") == 3
        assert w.table_owner("made") in {login, w.admin_login}
    assert outcomes["ok"] > 0
    assert sweeps["dropped"] > 0, sweeps  # the race was run, not just avoided


def test_login_taken_back_during_a_sweep_is_skipped_and_keeps_its_objects(world):
    """A resolve takes the login back (new password) between the sweep's take-away and its
    move: the sweep must neither move that login's objects nor report it dropped."""
    w = world
    _db, login, password, _r = w.resolve("vic")
    create_table_as(w, login, password, "made")
    oid = w.role_oid(login)
    w.advance_clock("31 days")
    hold = FaultHold(w)
    sweeper = w.connect_owner()
    try:
        arm(sweeper, "sweep:after_take_away", "wait")
        sweep = Runner(lambda: w.sweep(sweeper))
        sweep.start()
        hold.wait_for_victim()
        assert w.rows()[login][0] == "" and w.role_state(login) == (True, False)
        _db, got, new_password, _r = w.resolve("vic")  # taken back
        assert got == login and new_password != password
        with connect(w.login_conninfo(login, new_password)) as conn:
            assert conn.execute("SELECT count(*) FROM made").fetchone()[0] == 3
        hold.release()
        sweep.finish()
    finally:
        hold.close()
        sweeper.close()
    assert sweep.error is None, sweep.error
    assert sweep.result == {"examined": 1, "dropped": 0, "skipped": 1, "unfinished": [],
                            "rotated": 0, "healed": 0,
                            "forgotten_user_keys": [], "servers_pending": []}
    assert w.role_oid(login) == oid and authenticates(w, login, new_password)
    assert w.table_owner("made") == login


def test_cancelled_sweep_leaves_its_session_usable(world):
    """statement_timeout fires while a move waits for a lock in the data table database:
    the move is cancelled there too (before, on PostgreSQL 17 and later, it went on waiting
    and committed once the lock was free, after the sweep had rolled back), and the same
    session's next sweep works (no dblink connection left behind)."""
    w = world
    _db, login, password, _r = w.resolve("vic")
    create_table_as(w, login, password, "made")
    w.advance_clock("31 days")
    locker = w.cluster.connect_super(w.dbname)
    locker.autocommit = False
    locker.execute("LOCK TABLE made IN ACCESS EXCLUSIVE MODE")
    sweeper = w.connect_owner()
    try:
        sweeper.execute("SET statement_timeout = '300ms'")
        sweep = Runner(lambda: w.sweep(sweeper))
        sweep.start()
        time.sleep(0.8)
        locker.rollback()
        sweep.finish()
        assert isinstance(sweep.error, psycopg.errors.QueryCanceled), sweep.error
        # A move still pending there is ahead of this lock in the queue: once we hold the
        # lock, whatever that move would have done is done.
        with w.cluster.connect_super(w.dbname) as after, after.transaction():
            after.execute("LOCK TABLE public.made IN ACCESS EXCLUSIVE MODE")
        assert (w.table_schema("made"), w.table_owner("made")) == ("public", login)
        sweeper.execute("RESET statement_timeout")
        report = w.sweep(sweeper)
        assert report["unfinished"] == [] and report["dropped"] == 1, report
    finally:
        locker.close()
        sweeper.close()
    assert not w.role_state(login)[0]
    assert w.table_owner("made") == w.admin_login
    assert w.rows() == {}


# ---- retirement ------------------------------------------------------------------------------

def test_resolve_racing_retirement(world):
    """Resolvers hammer one set while a retirer cycles: retire_role_set_logins_of(a),
    set_datatable_role_enabled(a, false), (a, true). A password that does not log in is only
    acceptable when a retirement that had not finished when the resolve started has begun
    by the time the login failed; every error is a clear one."""
    w = world
    a, b = w.a, w.b
    lock = threading.Lock()
    counters = {"started": 0, "finished": 0}
    stop = threading.Event()
    failures: list[str] = []
    stats = {"ok": 0, "excused": 0, "refused": 0}

    def retirer():
        with w.connect_owner() as conn:
            calls = [("SELECT retire_role_set_logins_of(%s)", [a]),
                     ("SELECT set_datatable_role_enabled(%s, false)", [a]),
                     ("SELECT set_datatable_role_enabled(%s, true)", [a])]
            for i in range(30):
                statement, args = calls[i % 3]
                with lock:
                    counters["started"] += 1
                conn.execute(statement, args)
                with lock:
                    counters["finished"] += 1
                time.sleep(0.02)  # quiet time: every resolve in it must work
        stop.set()

    def resolver():
        with w.connect_worker() as conn:
            while not stop.is_set():
                with lock:
                    finished_before = counters["finished"]
                try:
                    _db, login, pw, _roles = w.resolve("vic", conn=conn)
                except psycopg.Error as e:
                    if e.sqlstate in ("42501", "40001"):  # refused while a was off; retry
                        stats["refused"] += 1
                    else:
                        failures.append(f"unclear error: {e.sqlstate} {e}")
                    continue
                err = login_error(w, login, pw)
                if err is None:
                    stats["ok"] += 1
                    continue
                with lock:
                    started_now = counters["started"]
                if started_now > finished_before:
                    stats["excused"] += 1
                else:
                    failures.append(f"{login}: password failed with no retirement: {err}")

    threads = [Runner(resolver) for _ in range(RESOLVERS)] + [Runner(retirer)]
    for t in threads:
        t.start()
    for t in threads:
        t.finish(120)
    assert [t.error for t in threads if t.error] == []
    assert failures == []
    assert stats["ok"] > 0, stats
    check_rows_authenticate(w)
    _db, login, pw, roles = w.resolve("vic")
    assert roles == sorted([a, b]) and authenticates(w, login, pw)


@pytest.mark.parametrize("retirement", ["disable", "drop", "remove"])
def test_role_retired_while_its_set_login_is_being_made(world, retirement):
    """A resolve is between CREATE ROLE and its commit when the role is disabled (or
    dropped, or taken out of the map): the retirement must see that login and retire it,
    not miss it."""
    w = world
    a, b = w.a, w.b
    hold = FaultHold(w)
    worker = w.connect_worker()
    owner = w.connect_owner()
    try:
        arm(worker, "create:after_create_role", "wait")
        resolve = Runner(lambda: w.resolve("vic", conn=worker))
        resolve.start()
        hold.wait_for_victim()
        statement, args = {
            "disable": ("SELECT set_datatable_role_enabled(%s, false)", [a]),
            "drop": ("SELECT drop_datatable_role(%s)", [a]),
            "remove": ("SELECT remove_datatable_role(%s, %s, %s)", [w.ws, DT, a]),
        }[retirement]
        retire = Runner(lambda: owner.execute(statement, args).fetchone())
        retire.start()
        # the retirement waits for the resolve (or, without that, finishes first)
        retire.join(1.0)
        hold.release()
        resolve.finish()
        retire.finish()
    finally:
        hold.close()
        worker.close()
        owner.close()
    assert retire.error is None, retire.error
    assert resolve.error is None, resolve.error
    _db, login, pw, roles = resolve.result
    assert roles == sorted([a, b])
    # retired after it was made: its row has no password, it cannot log in
    assert w.rows().get(login, ("",))[0] == ""
    assert w.role_state(login)[1] is False
    assert login_error(w, login, pw) is not None
    check_rows_authenticate(w)
    dangling = w.su("postgres").execute(
        "SELECT count(*) FROM pg_auth_members AS m WHERE NOT EXISTS"
        " (SELECT FROM pg_roles AS r WHERE r.oid = m.roleid)").fetchone()[0]
    assert dangling == 0, "a membership in a dropped role was left behind"
    if retirement == "disable":
        w.call("SELECT set_datatable_role_enabled(%s, true)", [a])
        _db, again, pw2, _r = w.resolve("vic")
        assert again == login and authenticates(w, login, pw2)
    else:
        _db, again, pw2, roles2 = w.resolve("vic")
        assert roles2 == [b] and authenticates(w, again, pw2)


def test_retirement_ends_sessions_of_retired_logins_and_of_the_disabled_role(world):
    w = world
    a, b = w.a, w.b
    _db, login, pw, _r = w.resolve("vic")
    _db, a_login, a_pw, _r = w.resolve("vic", role=a)
    _db, b_login, b_pw, _r = w.resolve("vic", role=b)
    assert len({login, a_login, b_login}) == 3 and a_login.startswith("wm_set_")
    set_conn = connect(w.login_conninfo(login, pw))
    role_conn = connect(w.login_conninfo(a_login, a_pw, role=a))  # acting as a
    b_conn = connect(w.login_conninfo(b_login, b_pw, role=b))
    try:
        assert _alive(set_conn) and _alive(role_conn) and _alive(b_conn)
        assert w.call("SELECT count(*) FROM pg_stat_activity WHERE usename = %s",
                      [a])[0] == (0,), "a catalog role is never logged in as"
        w.call("SELECT set_datatable_role_enabled(%s, false)", [a])
        assert not _alive(set_conn), "the retired set login's session goes on"
        assert not _alive(role_conn), "the session acting as the disabled role goes on"
        assert _alive(b_conn), "another role's session was ended"
        for retired in (login, a_login):
            assert w.role_state(retired) == (True, False) and w.rows()[retired][0] == ""
        assert w.role_state(b_login) == (True, True) and w.rows()[b_login][0] == b_pw
        assert w.role_state(a) == (True, False)  # NOLOGIN, as every catalog role
    finally:
        for c in (set_conn, role_conn, b_conn):
            c.close()
    # enabled again: taken back with a new password; retire_role_set_logins_of alone
    w.call("SELECT set_datatable_role_enabled(%s, true)", [a])
    _db, again, pw2, _r = w.resolve("vic")
    assert again == login and pw2 != pw
    set_conn = connect(w.login_conninfo(login, pw2))
    b_conn = connect(w.login_conninfo(b_login, b_pw, role=b))
    try:
        # both logins holding b: the set login and b's one-role login
        assert w.call("SELECT retire_role_set_logins_of(%s)", [b]) == [(2,)]
        assert not _alive(set_conn) and not _alive(b_conn)
    finally:
        set_conn.close()
        b_conn.close()
    for retired in (login, b_login):
        assert w.role_state(retired) == (True, False) and w.rows()[retired][0] == ""
    assert authenticates(w, *w.resolve("vic")[1:3])


def test_session_slipping_in_before_retirement_commits_is_ended_by_the_sweep(world):
    """Retirement ends sessions before it commits; a client that logs in again in between
    (the login can still log in until the commit) is ended by the next sweep."""
    w = world
    a = w.a
    _db, login, pw, _r = w.resolve("vic")
    hold = FaultHold(w)
    owner = w.connect_owner()
    try:
        arm(owner, "retire:after_end_sessions", "wait")
        retire = Runner(lambda: owner.execute(
            "SELECT set_datatable_role_enabled(%s, false)", [a]).fetchone())
        retire.start()
        hold.wait_for_victim()
        sneaky = connect(w.login_conninfo(login, pw))  # before the retirement commits
        hold.release()
        retire.finish()
    finally:
        hold.close()
        owner.close()
    try:
        assert retire.error is None, retire.error
        assert w.role_state(login) == (True, False)
        assert _alive(sneaky)  # PostgreSQL: NOLOGIN disconnects nobody
        report = w.sweep()
        assert report == NOTHING_DONE
        assert not _alive(sneaky), "the sweep leaves a retired login's session"
    finally:
        sneaky.close()


# ---- two instances ---------------------------------------------------------------------------

def test_two_instances_on_one_cluster(make_world, new_meta_db, uid):
    w1 = make_world(**LIFECYCLE, tag="i1")
    w2 = make_world(**LIFECYCLE, tag="i2", meta=new_meta_db())
    stranger = f"wm_set_{uid}"  # a wm_set_ login of nobody's rows
    w1.su("postgres").execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(stranger)))
    ids1 = w1.call("SELECT id FROM datatable_roles.catalog_role ORDER BY id")
    ids2 = w2.call("SELECT id FROM datatable_roles.catalog_role ORDER BY id")
    assert ids1 == ids2  # the same catalog ids: only the instance id tells them apart
    _db, l1, p1, _r = w1.resolve("vic")
    _db, l2, p2, _r = w2.resolve("vic")
    assert l1 != l2 and l1.startswith("wm_set_") and l2.startswith("wm_set_")
    oid2 = w2.role_oid(l2)
    with connect(w2.login_conninfo(l2, p2)) as s2:

        def untouched():
            assert w2.role_oid(l2) == oid2 and w2.role_state(l2) == (True, True)
            assert w2.rows()[l2][0] == p2 and authenticates(w2, l2, p2) and _alive(s2)
            assert w1.role_state(stranger) == (True, True)

        assert w1.call("SELECT retire_role_set_logins_of(%s)", [w1.a]) == [(1,)]
        assert w1.role_state(l1) == (True, False)
        untouched()
        w1.call("SELECT set_datatable_role_enabled(%s, false)", [w1.b])
        untouched()
        w1.advance_clock("31 days")
        report = w1.sweep()
        assert report == {"examined": 1, "dropped": 1, "skipped": 0, "unfinished": [],
                          "rotated": 0, "healed": 0,
                          "forgotten_user_keys": [], "servers_pending": []}
        assert not w1.role_state(l1)[0]
        untouched()
        report2 = w2.sweep()
        assert report2 == NOTHING_DONE
        untouched()
        w1.call("SELECT drop_datatable_role(%s)", [w1.a])
        untouched()
        # instance 2's own sweep, when its login is stale, drops only its own
        w2.advance_clock("31 days")
        assert w2.sweep()["dropped"] == 1
        assert not w2.role_state(l2)[0] and w1.role_state(stranger) == (True, True)


# ---- the report, and a sweep that cannot finish ---------------------------------------------

def _unreachable_object(w, scratch, login: str) -> str:
    """A table owned by ``login`` in a database that is no data table's and takes no
    connection (as the superuser): what the login holds there cannot be dropped, so a sweep
    cannot finish with it. Returns the database."""
    other = scratch.database(f"{w.uid}_other")
    with w.cluster.connect_super(other) as conn:
        conn.execute("CREATE TABLE foreign_thing (x integer)")
        conn.execute(sql.SQL("ALTER TABLE foreign_thing OWNER TO {}").format(
            sql.Identifier(login)))
    _allow_connections(w, other, False)
    return other


def _allow_connections(w, dbname: str, allowed: bool) -> None:
    w.su("postgres").execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS {}").format(
        sql.Identifier(dbname), sql.SQL("true" if allowed else "false")))


def test_sweep_report_shape(world, scratch):
    """Three stale logins: one dropped, one used while the sweep runs (skipped), one owning
    something in a database that takes no connection (unfinished)."""
    w = world
    a, b = w.a, w.b
    c = w.new_role("c")
    w.add_user("zed")
    w.set_tenants(DT, a, ["u/vic", "u/neo"])
    w.set_tenants(DT, b, ["u/vic", "u/zed"])
    w.set_tenants(DT, c, ["u/neo", "u/zed"])
    w.jobs["zed"] = w.job("zed")
    logins = {w.resolve(job)[1]: job for job in ("vic", "neo", "zed")}
    assert len(logins) == 3
    first, unfinishable, touched = sorted(logins)
    other = _unreachable_object(w, scratch, unfinishable)
    w.advance_clock("31 days")
    hold = FaultHold(w)
    sweeper = w.connect_owner()
    try:
        arm(sweeper, "sweep:after_take_away", "wait")
        sweep = Runner(lambda: w.sweep(sweeper))
        sweep.start()
        hold.wait_for_victim()  # at the first login, in login order
        w.resolve(logins[touched])  # used now: no longer unused
        hold.release()
        sweep.finish()
    finally:
        hold.close()
        sweeper.close()
    assert sweep.error is None, sweep.error
    report = sweep.result
    assert set(report) == {"examined", "dropped", "skipped", "unfinished", "rotated", "healed",
                           "forgotten_user_keys", "servers_pending"}
    assert all(isinstance(report[k], int)
               for k in ("examined", "dropped", "skipped", "rotated", "healed"))
    assert (report["examined"], report["dropped"], report["skipped"]) == (3, 1, 1)
    # the touched login, used now, stays; its password, 31 days old, is rotated
    assert (report["rotated"], report["healed"]) == (1, 0)
    assert isinstance(report["unfinished"], list) and len(report["unfinished"]) == 1
    item = report["unfinished"][0]
    assert set(item) == {"login", "reason"} and item["login"] == unfinishable
    assert other in item["reason"] and "could not establish connection" in item["reason"]
    assert "password" not in item["reason"].lower()
    assert not w.role_state(first)[0]
    assert w.role_state(touched) == (True, True)
    check_rows_authenticate(w)  # the touched login logs in with its new password


def test_sweep_that_cannot_finish_keeps_the_row_and_carries_on(world, scratch):
    w = world
    a = w.a
    c = w.new_role("c")
    w.set_tenants(DT, c, ["u/neo"])
    w.set_tenants(DT, a, ["u/vic", "u/neo"])
    _db, stuck, pw, _r = w.resolve("vic")
    _db, fine, _p, _r = w.resolve("neo")
    create_table_as(w, stuck, pw, "made")
    other = _unreachable_object(w, scratch, stuck)
    w.advance_clock("31 days")
    report = w.sweep()
    assert report["examined"] == 2 and report["dropped"] == 1, report
    assert [u["login"] for u in report["unfinished"]] == [stuck]
    assert "could not establish connection" in report["unfinished"][0]["reason"]
    assert not w.role_state(fine)[0], "the sweep carries on with the others"
    assert w.rows()[stuck][0] == "", "left with an empty password"
    assert w.role_state(stuck) == (True, False)
    assert w.table_owner("made") == w.admin_login  # what could move, moved
    assert w.table_rows("made") == 3
    check_rows_authenticate(w)
    # the next sweep finds it again
    again = w.sweep()
    assert again["examined"] == 1 and [u["login"] for u in again["unfinished"]] == [stuck]
    # once the database takes connections again, the sweep finishes with it: what the login
    # had there is dropped (nothing outside the data table databases is kept)
    _allow_connections(w, other, True)
    assert w.sweep() == {"examined": 1, "dropped": 1, "skipped": 0, "unfinished": [],
                         "rotated": 0, "healed": 0,
                         "forgotten_user_keys": [], "servers_pending": []}
    assert w.rows() == {} and not w.role_state(stuck)[0]
    with w.cluster.connect_super(other) as conn:
        assert conn.execute("SELECT to_regclass('foreign_thing')").fetchone() == (None,)
    _db, back, pw2, _r = w.resolve("vic")
    assert back == stuck and authenticates(w, back, pw2)


# ---- remove_datatable_role -------------------------------------------------------------------

def test_remove_datatable_role_retires_the_logins_holding_it_on_that_database(
        make_world, datatable_db):
    """vic, a tenant of a and b on two data tables (two databases), has a set login on each
    and, naming a, a one-role login on main's. Taking a out of main's map retires the two
    logins of main's database holding a (sessions ended), not dt1's; unless another data
    table on main's database still maps a. The next resolve on main gives b alone; the
    sweep drops the retired logins at once (no data table on their database maps a)."""
    w = make_world(**LIFECYCLE | dict(datatables=2))
    a, b = w.a, w.b
    main_set = w.resolve("vic")
    dt1_set = w.resolve("vic", "dt1")
    main_a = w.resolve("vic", role=a)
    assert len({main_set.login, dt1_set.login, main_a.login}) == 3
    # another data table on main's database mapping a keeps the logins
    shared = w.register("shared", tenants={a: ["u/vic"]})
    w.call("SELECT remove_datatable_role(%s, %s, %s)", [w.ws, DT, a])
    assert all(pw for pw, _ids in w.rows().values())
    sessions = {r.login: connect(w.login_conninfo(r.login, r.password, r.dbname,
                                                  role=a if r is main_a else None))
                for r in (main_set, dt1_set, main_a)}
    try:
        # the last data table on main's database mapping a lets it go, sessions open
        w.call("SELECT remove_datatable_role(%s, %s, %s)", [w.ws, shared.name, a])
        rows = w.rows()
        for r in (main_set, main_a):
            assert rows[r.login][0] == "" and w.role_state(r.login) == (True, False)
            assert not _alive(sessions[r.login])
        assert rows[dt1_set.login][0] == dt1_set.password and _alive(sessions[dt1_set.login])
        assert authenticates(w, dt1_set.login, dt1_set.password, dt1_set.dbname)
    finally:
        for conn in sessions.values():
            conn.close()
    now = w.resolve("vic")
    assert now.roles == [b] and now.login not in (main_set.login, main_a.login)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        w.resolve("vic", role=a)  # R1: a is not in main's map
    report = w.sweep()  # no clock moved: retired for good is enough
    assert (report["examined"], report["dropped"], report["unfinished"]) == (2, 2, []), report
    assert not w.role_state(main_set.login)[0] and not w.role_state(main_a.login)[0]
    check_rows_authenticate(w)


# ---- a resolve racing a removal from the map (issue 21, item 10) ------------------------------

def _wait_until_blocked(w, pid: int, timeout: float = 20.0) -> None:
    """Until backend ``pid`` waits for a lock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = w.su("postgres").execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.01)
    raise AssertionError(f"backend {pid} never waited for a lock")


def _live_rows_holding(w, role_id: int) -> list[str]:
    return [login for login, (pw, ids) in w.rows().items() if pw and role_id in ids]


@pytest.mark.parametrize("login_before", ["none", "untouched"])
def test_resolve_deciding_before_a_removal_commits_hands_out_no_login_holding_it(
        world, login_before):
    """A resolve reads the map (a is in it) while remove_datatable_role(a) is uncommitted,
    and goes on to make (or take back) vic's set login after the removal committed. It must
    not hand out, nor leave live, a login holding a: it fails with 40001 (retry), and the
    next resolve gives b alone."""
    w = world
    a, b = w.a, w.b
    a_id = w.call("SELECT id FROM datatable_roles.catalog_role WHERE name = %s", [a])[0][0]
    if login_before == "untouched":
        # a live login, last used more than touch_every ago: the resolve must touch it
        first = w.resolve("vic")
        w.advance_clock("2 days")
    owner = w.connect_owner()
    worker = w.connect_worker()
    try:
        owner.execute("BEGIN")
        owner.execute("SELECT remove_datatable_role(%s, %s, %s)", [w.ws, DT, a])
        resolve = Runner(lambda: w.resolve("vic", conn=worker))
        resolve.start()
        _wait_until_blocked(w, worker.info.backend_pid)
        owner.execute("COMMIT")
        resolve.join(30)
        assert not resolve.is_alive()
    finally:
        owner.close()
        worker.close()
    live = _live_rows_holding(w, a_id)
    assert live == [], f"live logins still holding the removed role: {live}"
    if resolve.error is None:
        _db, login, pw, roles = resolve.result
        assert a not in roles, f"handed out {login} holding the removed role {a}"
    else:
        assert getattr(resolve.error, "sqlstate", None) == "40001", resolve.error
    if login_before == "untouched":
        assert login_error(w, first.login, first.password) is not None
    now = w.resolve("vic")
    assert now.roles == [b] and authenticates(w, now.login, now.password)
    check_rows_authenticate(w)


# ---- first uses racing each other and the sweep on one database (issue 21, item 11) -----------

FIRST_USE_ROLES = 6
FIRST_USE_ROUNDS = 25


def test_first_uses_and_sweeps_on_one_database_raise_only_documented_errors(world):
    """Several one-role logins of one database are made (or taken back) at the same moment,
    each granted CONNECT on it, while a sweep drops others there (REVOKE ALL ON DATABASE):
    each writes the database's access list. Every resolve gets a login or 40001 (retry),
    never XX000 "tuple concurrently updated"."""
    w = world
    roles = [w.new_role(f"f{i}") for i in range(FIRST_USE_ROLES)]
    for r in roles:
        w.set_tenants(DT, r, ["u/vic"])
    errors: list[str] = []
    made = {"ok": 0, "retry": 0}
    conns = [w.connect_worker() for _ in roles]
    sweeper = w.connect_owner()
    try:
        for rnd in range(FIRST_USE_ROUNDS):
            barrier = threading.Barrier(len(roles) + 1)

            def resolver(i):
                barrier.wait()
                try:
                    w.resolve("vic", role=roles[i], conn=conns[i])
                    made["ok"] += 1
                except psycopg.Error as e:
                    if e.sqlstate == "40001":
                        made["retry"] += 1
                    else:
                        errors.append(f"{e.sqlstate}: {e}")

            def sweep():
                barrier.wait()
                try:
                    w.sweep(conn=sweeper, unused_for="0 seconds")
                except psycopg.Error as e:
                    errors.append(f"sweep: {e.sqlstate}: {e}")

            threads = [Runner(lambda i=i: resolver(i)) for i in range(len(roles))]
            threads.append(Runner(sweep))
            for t in threads:
                t.start()
            for t in threads:
                t.finish(60)
            assert [t.error for t in threads if t.error] == []
            if rnd % 2:  # every other round takes back retired logins instead of making new ones
                for r in roles:
                    w.call("SELECT retire_role_set_logins_of(%s)", [r])
    finally:
        for conn in conns + [sweeper]:
            conn.close()
    assert errors == [], errors[:5]
    assert made["ok"] > 0, made
    check_rows_authenticate(w)


def test_two_removals_of_a_role_on_one_database_retire_its_logins(world):
    """a is in the maps of two data tables on one database, and vic's set login holds it.
    Two owners take a out of each map at the same time: each saw the other's map row still
    there, and neither retired the login. The second now waits for the first and retires."""
    w = world
    a, b = w.a, w.b
    a_id = w.call("SELECT id FROM datatable_roles.catalog_role WHERE name = %s", [a])[0][0]
    w.register("shared", tenants={a: ["u/vic"]}, default=None)
    held = w.resolve("vic")
    assert held.roles == sorted([a, b])
    first, second = w.connect_owner(), w.connect_owner()
    try:
        first.execute("BEGIN")
        first.execute("SELECT remove_datatable_role(%s, %s, %s)", [w.ws, DT, a])
        other = Runner(lambda: second.execute(
            "SELECT remove_datatable_role(%s, %s, %s)", [w.ws, "shared", a]).fetchone())
        other.start()
        deadline = time.monotonic() + 5
        while other.is_alive() and time.monotonic() < deadline:
            row = w.su("postgres").execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                [second.info.backend_pid]).fetchone()
            if row and row[0] == "Lock":
                break
            time.sleep(0.01)
        first.execute("COMMIT")
        other.finish()
    finally:
        first.close()
        second.close()
    assert other.error is None, other.error
    assert _live_rows_holding(w, a_id) == []
    assert login_error(w, held.login, held.password) is not None
    check_rows_authenticate(w)
