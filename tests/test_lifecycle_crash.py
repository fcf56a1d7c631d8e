"""Crash safety of the set-login lifecycle (docs/lifecycle.md).

For every fault point of creation, re-key, retirement, the sweep and drop_datatable_role, the
step is run with the point armed and either killed there (fault_action 'wait', then
pg_terminate_backend from a second session) or failed there (fault_action 'error'), three
times each. Afterwards:

- every datatable_role_set row with a non-empty password names a login that logs in with it
  to its database;
- no login whose row had a password was dropped without its row going in the same commit;
- no data table object is lost: what a set login (or a dropped role) created still exists,
  with its rows, owned by that login (role) or, once swept (dropped), by the data table's
  admin login (moved to a quarantine schema: docs/trust.md);
- the next resolve heals (returns a password that logs in), and a sweep later finishes with
  nothing unfinished, leaving the objects with the admin login; a dropped login is made again
  on demand.
"""

from __future__ import annotations

import psycopg
import pytest

from support import (
    LIFECYCLE, FaultHold, Runner, Scratch, World, arm, authenticates, check_rows_authenticate,
    create_table_as, disarm,
)

RUNS = 3

# (fault point, step): every fault point of the lifecycle, with the step that reaches it.
CASES = [
    ("create:after_create_role", "resolve_new"),
    ("create:after_row", "resolve_new"),
    ("rekey:after_alter_role", "resolve_retired"),
    ("create:after_row", "resolve_retired"),          # the re-key writes its row there too
    ("retire:after_row", "retire_role_set_logins_of"),
    ("retire:after_row", "disable_role"),
    ("retire:after_end_sessions", "retire_role_set_logins_of"),
    ("retire:after_end_sessions", "disable_role"),
    ("sweep:after_take_away", "sweep"),
    ("move:after_database", "sweep"),                 # between the per-database moves
    ("sweep:after_move", "sweep"),
    ("sweep:after_drop_role", "sweep"),
    ("drop_role:after_move", "drop_datatable_role"),
    ("move:after_database", "drop_datatable_role"),
]

PARAMS = [
    pytest.param(point, step, action, id=f"{point}-{step}-{action}-x{RUNS}")
    for point, step in CASES
    for action in ("kill", "error")
]


@pytest.fixture(scope="module")
def shared_tables(cluster):
    """Two data table databases, shared by the tests of this file (each run registers them in
    its own workspace, with its own roles and tables)."""
    scratch = Scratch(cluster)
    yield [scratch.datatable_db("crashdt") for _ in range(2)]
    scratch.clean()


def _world(make_world, run, tables) -> tuple[World, dict]:
    """Run `run` of a test: its own workspace ws<run> and roles <uid>r<run>_{a,b,c} in the
    test's metadata database. On each data table's database, vic resolves to the set login
    of {a, b} there (one per database), which creates table <uid>r<run>_made; vic naming
    role b gets b's one-role login there, which, acting as b (the startup option), creates
    <uid>r<run>_b_made, so that it belongs to b. neo is a tenant of a, b and c: a set nobody
    resolved yet. Returns the world and those names (set_login: database -> login)."""
    w = make_world(**LIFECYCLE | dict(
        tag=f"r{run}", ws=f"ws{run}", datatables=tables,
        tenants={"a": ["u/vic", "u/neo"], "b": ["u/vic", "u/neo"], "c": ["u/neo"]}))
    prefix = w.uid
    set_logins: dict[str, str] = {}
    for t in w.tables:
        dbname, login, password, roles = w.resolve("vic", t.name)
        assert login.startswith("wm_set_") and roles == sorted([w.a, w.b])
        assert dbname == t.dbname and login not in set_logins.values()
        set_logins[t.dbname] = login
        create_table_as(w, login, password, f"{prefix}_made", t.dbname)
        _db, b_login, b_password, b_roles = w.resolve("vic", t.name, role=w.b)
        assert b_roles == [w.b] and b_login.startswith("wm_set_")
        create_table_as(w, b_login, b_password, f"{prefix}_b_made", t.dbname, rows=2,
                        role=w.b)
    return w, {"set_login": set_logins, "b_login": w.b,
               "made": f"{prefix}_made", "b_made": f"{prefix}_b_made"}


def _run_step(w: World, step: str, conn: psycopg.Connection):
    a, b = w.a, w.b
    if step == "resolve_new":
        return w.resolve("neo", conn=conn)
    if step == "resolve_retired":
        return w.resolve("vic", conn=conn)
    if step == "retire_role_set_logins_of":
        return conn.execute("SELECT retire_role_set_logins_of(%s)", [a]).fetchone()
    if step == "disable_role":
        return conn.execute("SELECT set_datatable_role_enabled(%s, false)", [a]).fetchone()
    if step == "sweep":
        return w.sweep(conn)
    if step == "drop_datatable_role":
        return conn.execute("SELECT drop_datatable_role(%s)", [b]).fetchone()
    raise AssertionError(step)


def _prepare(w: World, step: str) -> None:
    if step == "resolve_retired":
        # the set login's row loses its password (and the login LOGIN): the next resolve
        # takes it back with a new password, the step the fault points interrupt
        w.call("SELECT retire_role_set_logins_of(%s)", [w.a])
    if step == "sweep":
        w.advance_clock("31 days")


def _check_invariants(w: World, names: dict, pw_before: dict[str, str]) -> None:
    check_rows_authenticate(w)
    rows = w.rows()
    for login in pw_before:
        exists, _ = w.role_state(login)
        if not exists:
            assert login not in rows, f"{login} was dropped while its row remained"
    b_login = names["b_login"]
    for t in w.tables:
        set_login = names["set_login"][t.dbname]
        for table, creator, n in ((names["made"], set_login, 3), (names["b_made"], b_login, 2)):
            owner = w.table_owner(table, t.dbname)
            assert owner is not None, f"{table} in {t.dbname} was lost"
            assert w.table_rows(table, t.dbname) == n
            allowed = {t.admin_login} | ({creator} if w.role_state(creator)[0] else set())
            assert owner in allowed, f"{table} in {t.dbname} belongs to {owner}"


def _heal(w: World, names: dict, step: str, conn: psycopg.Connection) -> None:
    """The next use, and then a sweep, heal whatever the interrupted step left."""
    a, b = w.a, w.b
    if step == "drop_datatable_role":
        conn.execute("SELECT drop_datatable_role(%s)", [b])
        assert not w.role_state(b)[0]
    if step == "disable_role":
        conn.execute("SELECT set_datatable_role_enabled(%s, true)", [a])
    for job in ("vic", "neo"):
        _db, login, password, _roles = w.resolve(job)
        assert authenticates(w, login, password), f"resolve of {job} after the crash"
    check_rows_authenticate(w)
    # long after: every set login is stale; the sweep finishes with all of them
    w.advance_clock("400 days")
    report = w.sweep(conn)
    assert report["unfinished"] == [], report
    assert w.rows() == {}, "a finished sweep of stale logins leaves no row"
    for login in names["set_login"].values():
        assert not w.role_state(login)[0]
    for t in w.tables:
        assert w.table_owner(names["made"], t.dbname) == t.admin_login
        assert w.table_rows(names["made"], t.dbname) == 3
        expected_b = t.admin_login if step == "drop_datatable_role" else names["b_login"]
        assert w.table_owner(names["b_made"], t.dbname) == expected_b
        assert w.table_rows(names["b_made"], t.dbname) == 2
    again = w.sweep(conn)
    assert again == {"examined": 0, "dropped": 0, "skipped": 0, "unfinished": [],
                     "rotated": 0, "healed": 0,
                     "forgotten_user_keys": [], "servers_pending": []}
    # made again on demand, then swept again, so the next run starts from no row
    _db, login, password, _roles = w.resolve("vic")
    assert authenticates(w, login, password)
    w.advance_clock("400 days")
    assert w.sweep(conn)["unfinished"] == []
    assert w.rows() == {}


@pytest.mark.parametrize(("point", "step", "action"), PARAMS)
def test_crash_at_fault_point(make_world, shared_tables, point, step, action):
    for run in range(1, RUNS + 1):
        w, names = _world(make_world, run, shared_tables)
        _crash_once(w, names, point, step, action)


def _crash_once(w: World, names: dict[str, str], point: str, step: str, action: str) -> None:
    _prepare(w, step)
    pw_before = {login: pw for login, (pw, _ids) in w.rows().items() if pw}
    victim = w.connect_worker() if step.startswith("resolve") else w.connect_owner()
    try:
        if action == "error":
            arm(victim, point, "error")
            outcome = Runner(lambda: _run_step(w, step, victim))
            outcome.run()
            disarm(victim)
            if point == "sweep:after_drop_role":
                # caught per login: the sweep carries on and reports each (every stale
                # login: the set logins and b's one-role logins, on both databases)
                report = outcome.result
                assert outcome.error is None, outcome.error
                assert [u["login"] for u in report["unfinished"]] == sorted(pw_before)
                for item in report["unfinished"]:
                    assert "fault injected at sweep:after_drop_role" in item["reason"], item
            else:
                assert isinstance(outcome.error, psycopg.errors.InternalError_), outcome.error
                assert f"fault injected at {point}" in str(outcome.error)
            if step.startswith("resolve"):
                assert w.resolve("vic", conn=victim)[1]  # the failed session goes on working
            heal_conn = None if step.startswith("resolve") else victim
        else:
            hold = FaultHold(w)
            try:
                arm(victim, point, "wait")
                outcome = Runner(lambda: _run_step(w, step, victim))
                outcome.start()
                pid = hold.wait_for_victim()
                hold.terminate(pid)
                outcome.finish()
            finally:
                hold.close()
            assert isinstance(outcome.error, psycopg.OperationalError), outcome.error
            heal_conn = None
        _check_invariants(w, names, pw_before)
        if heal_conn is None:
            with w.connect_owner() as conn:
                _heal(w, names, step, conn)
        else:
            _heal(w, names, step, heal_conn)
    finally:
        victim.close()
