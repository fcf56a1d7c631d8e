"""Resolvers, catalog changes, sweeps and backend terminations, all at once (issue 21).

For a while (60 s on PostgreSQL 15 and 17, 15 s on 16 and 18; DTR_SOAK_SECONDS overrides):

- resolver threads, each with its own worker session, resolve the jobs of four viewers on
  three data tables (two on one database, one on another), so that several set logins
  exist on each database;
- a mutator (the only writer of the catalog) puts roles in maps with new tenant lists, takes
  them out, disables and enables them, drops them and creates new ones; after each change
  it reads the catalog's state (the map, what each viewer gets) and logs it with a sequence
  number; a resolve notes the last logged number when it starts and the number of changes
  begun when it returns, so the state it decided in is one of those in between;
- a sweeper moves the injected clock a day on and sweeps logins unused for a day, so that
  logins go stale, are dropped and are made again (and passwords rotate);
- a terminator ends the others' backends now and then (pg_terminate_backend); they
  reconnect, and the mutator reads the state again, whatever the killed change did.

Checked, each by a documented guarantee (docs/lifecycle.md, docs/sql-api.md), so under any
interleaving:

1. every error is a documented SQLSTATE: 40001 (retry), 42501 when some state in the
   resolve's window refuses it (R5), or the connection ended by the terminator;
2. every login returned holds exactly the roles the rules give in some state between the
   resolve's start and its end;
3. in every committed state the mutator reads, and at the end after a last sweep: no live
   row (non-empty password) holds a role that is disabled, dropped or not in the map of a
   data table on its database; a live row's login may log in, a retired one's may not; and
   at the end every live row's password logs in to its database.
"""

from __future__ import annotations

import os
import random
import threading
import time

import psycopg
import pytest

from support import check_rows_authenticate, connect

VIEWERS = ["v1", "v2", "v3", "v4"]
TABLES = ["main", "dt1", "shared"]  # main and shared share a database
SLOTS = 4
RESOLVERS = 4

# Rows breaking the lifecycle's invariant, read in one snapshot: a live row holding a role
# that is disabled, dropped or in no map on its database, or whose login cannot log in; a
# retired row whose login can.
BROKEN_ROWS = """
    SELECT s.login, s.password <> '' AS live, s.role_ids, s.dbname
    FROM datatable_roles.datatable_role_set AS s
    WHERE (s.password <> '' AND (
            EXISTS (
                SELECT FROM unnest(s.role_ids) AS i (id)
                WHERE NOT EXISTS (
                    SELECT FROM datatable_roles.catalog_role AS r
                    JOIN datatable_roles.datatable_role AS m ON m.role_id = r.id
                    JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id
                    WHERE r.id = i.id AND r.enabled AND d.dbname = s.dbname))
            OR NOT EXISTS (
                SELECT FROM pg_roles AS pr WHERE pr.rolname = s.login AND pr.rolcanlogin)))
        OR (s.password = '' AND EXISTS (
            SELECT FROM pg_roles AS pr WHERE pr.rolname = s.login AND pr.rolcanlogin))
"""

STATE = """
    SELECT r.name, r.enabled, d.name, m.tenants
    FROM datatable_roles.catalog_role AS r
    LEFT JOIN datatable_roles.datatable_role AS m ON m.role_id = r.id
    LEFT JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id
"""


def _duration(conn: psycopg.Connection) -> float:
    if os.environ.get("DTR_SOAK_SECONDS"):
        return float(os.environ["DTR_SOAK_SECONDS"])
    return 60.0 if conn.info.server_version // 10000 in (15, 17) else 15.0


def _ended(e: psycopg.Error) -> bool:
    """The error is the terminator's: the session was ended."""
    return isinstance(e, psycopg.OperationalError) and e.sqlstate in (None, "57P01")


class State:
    """One committed state of the catalog: each role's enabled flag and maps, and what
    each viewer gets on each data table (no default role: the enabled roles of the map whose
    tenants name the viewer)."""

    def __init__(self, rows):
        self.enabled = {}
        self.maps: dict[str, dict[str, list[str]]] = {t: {} for t in TABLES}
        for role, enabled, table, tenants in rows:
            self.enabled[role] = enabled
            if table is not None:
                self.maps[table][role] = tenants
        self.gets = {
            (v, t): sorted((r for r, keys in self.maps[t].items()
                            if self.enabled[r] and f"u/{v}" in keys), key=str.encode)
            for v in VIEWERS for t in TABLES}


def test_resolvers_catalog_changes_sweeps_and_terminations(make_world, uid):
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    tenants = {f"s{i}": [f"u/{v}" for v in VIEWERS if rng.random() < 0.6] or ["u/v1"]
               for i in range(SLOTS)}
    w = make_world(users={"publisher": [], **{v: [] for v in VIEWERS}}, admins=["publisher"],
                   tenants=tenants, datatables=2, default=None, jobs=VIEWERS)
    w.register("shared", tenants={w.roles[s]: keys[::-1][:2] for s, keys in tenants.items()},
               default=None)
    duration = _duration(w.su("postgres"))

    lock = threading.Lock()
    stop = threading.Event()
    states: list[State] = []
    counters = {"logged": 0, "started": 0}
    pids: dict[str, int] = {}
    failures: list[str] = []
    resolves: list[tuple] = []  # (viewer, table, first state, last state, roles | sqlstate)
    stats = {"ok": 0, "40001": 0, "42501": 0, "ended": 0, "changes": 0, "sweeps": 0,
             "killed": 0, "terminated": 0, "dropped": 0, "broken_checks": 0}

    def session(name: str, make, old: psycopg.Connection | None = None) -> psycopg.Connection:
        if old is not None:
            old.close()
        conn = make()
        with lock:
            pids[name] = conn.info.backend_pid
        return conn

    def read_state(conn: psycopg.Connection) -> tuple[State, list]:
        """The state and the broken rows, in one snapshot."""
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            state = State(conn.execute(STATE).fetchall())
            broken = conn.execute(BROKEN_ROWS).fetchall()
        return state, broken

    # ---- the mutator ----------------------------------------------------------------------
    names = {i: w.roles[f"s{i}"] for i in range(SLOTS)}
    generation = {i: 0 for i in range(SLOTS)}

    def next_change(state: State):
        i = rng.randrange(SLOTS)
        role = names[i]
        if role not in state.enabled:  # dropped: make the slot's next role
            generation[i] += 1
            names[i] = f"{uid}_s{i}_{generation[i]}"
            return "SELECT create_datatable_role(%s)", [names[i]]
        table = rng.choice(TABLES)
        pick = rng.random()
        if pick < 0.4 or (pick < 0.6 and role not in state.maps[table]):
            keys = [f"u/{v}" for v in VIEWERS if rng.random() < 0.7]
            return ("SELECT set_datatable_role_tenants(%s, %s, %s, %s::text[])",
                    [w.ws, table, role, keys])
        if pick < 0.6:
            return "SELECT remove_datatable_role(%s, %s, %s)", [w.ws, table, role]
        if pick < 0.92:
            return ("SELECT set_datatable_role_enabled(%s, %s)",
                    [role, not state.enabled[role]])
        return "SELECT drop_datatable_role(%s)", [role]

    def mutator():
        conn = session("mutator", w.connect_owner)
        state = None
        while True:
            try:
                state, broken = read_state(conn)
            except psycopg.Error as e:
                if not _ended(e):
                    raise
                stats["killed"] += 1
                conn = session("mutator", w.connect_owner, conn)
                continue
            with lock:
                states.append(state)
                counters["logged"] = len(states) - 1
            if broken:
                failures.append(f"state {len(states) - 1}: broken rows {broken}")
                stats["broken_checks"] += 1
            if stop.is_set():
                return
            statement, args = next_change(state)
            with lock:
                counters["started"] += 1
            try:
                conn.execute(statement, args)
                stats["changes"] += 1
            except psycopg.Error as e:
                if not _ended(e):
                    failures.append(f"change {statement} {args}: {e.sqlstate} {e}")
                    continue
                stats["killed"] += 1
                conn = session("mutator", w.connect_owner, conn)
            time.sleep(rng.uniform(0.02, 0.15))

    # ---- resolvers, sweeper, terminator ---------------------------------------------------
    def resolver(n: int):
        name = f"resolver{n}"
        mine = random.Random(seed + n)
        conn = session(name, w.connect_worker)
        while not stop.is_set():
            viewer, table = mine.choice(VIEWERS), mine.choice(TABLES)
            with lock:
                first = counters["logged"]
            try:
                got = w.resolve(viewer, table, conn=conn)
                outcome = (got.roles, got.login)
            except psycopg.Error as e:
                if _ended(e):
                    stats["ended"] += 1
                    conn = session(name, w.connect_worker, conn)
                    continue
                outcome = (e.sqlstate, str(e).splitlines()[0])
            with lock:
                last = counters["started"]
            resolves.append((viewer, table, first, last, outcome))
            time.sleep(0.002)

    def sweeper():
        conn = session("sweeper", w.connect_owner)
        while not stop.is_set():
            try:
                conn.execute("UPDATE datatable_roles.settings"
                             " SET clock_offset = clock_offset + interval '1 day'")
                report = w.sweep(conn, unused_for="1 day")
                stats["sweeps"] += 1
                stats["dropped"] += report["dropped"]
            except psycopg.Error as e:
                if not _ended(e):
                    failures.append(f"sweep: {e.sqlstate} {e}")
                conn = session("sweeper", w.connect_owner, conn)
            time.sleep(rng.uniform(0.2, 0.6))

    def terminator():
        killer = random.Random(seed - 1)
        with w.cluster.connect_super("postgres") as su:
            while not stop.is_set():
                time.sleep(killer.uniform(0.2, 0.8))
                with lock:
                    victims = sorted(pids.values())
                # mostly a backend in the middle of a statement
                busy = [pid for (pid,) in su.execute(
                    "SELECT pid FROM pg_stat_activity WHERE pid = ANY(%s) AND state = 'active'",
                    [victims]).fetchall()]
                victim = killer.choice(busy if busy and killer.random() < 0.8 else victims)
                su.execute("SELECT pg_terminate_backend(%s)", [victim])
                stats["terminated"] += 1

    # ---- run ------------------------------------------------------------------------------
    threads = ([threading.Thread(target=_guard(mutator, failures), daemon=True)]
               + [threading.Thread(target=_guard(lambda n=n: resolver(n), failures),
                                   daemon=True) for n in range(RESOLVERS)]
               + [threading.Thread(target=_guard(f, failures), daemon=True)
                  for f in (sweeper, terminator)])
    for t in threads:
        t.start()
    time.sleep(duration)
    stop.set()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread did not stop"
    assert failures == [], f"seed {seed}: {failures[:5]}"

    # 1 and 2: every outcome against the states of its window
    wrong = []
    for viewer, table, first, last, outcome in resolves:
        window = states[first:last + 1]
        if isinstance(outcome[0], list):
            stats["ok"] += 1
            if not any(s.gets[viewer, table] == outcome[0] for s in window):
                wrong.append((viewer, table, first, last, outcome,
                              [s.gets[viewer, table] for s in window]))
        elif outcome[0] == "40001":
            stats["40001"] += 1
        elif outcome[0] == "42501" and any(s.gets[viewer, table] == [] for s in window):
            stats["42501"] += 1
        else:
            wrong.append((viewer, table, first, last, outcome))
    assert wrong == [], f"seed {seed}: {len(wrong)} of {len(resolves)}: {wrong[:5]}"

    # 3: after a last sweep, every row as the lifecycle promises, and live ones log in
    w.sweep()
    _state, broken = read_state(w.owner_session())
    assert broken == [], broken
    check_rows_authenticate(w)
    print(f"seed {seed}, {duration:.0f} s, {len(states)} states: {stats}")
    assert stats["ok"] > 0 and stats["changes"] > 0 and stats["sweeps"] > 0, stats


def _guard(fn, failures):
    def run():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            failures.append(f"{fn.__name__}: {type(e).__name__}: {e}")
    return run
