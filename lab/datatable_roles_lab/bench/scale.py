"""The bench's scale figures (issue 14): the same measurements with many set logins in the
cluster, and resolution under concurrent clients.

- :func:`measure_scale_logins` (14a-14c): resolve TPS (viewer path and R10) and the sweep's
  time per login dropped, first as the world is, then with ``cfg.scale_logins`` (100,000 in a
  full run) more set logins in the cluster, in the same run. The extra logins are made in
  bulk between the two sides and are **left in the cluster** afterwards (dropping 100,000
  roles takes long, and the cluster is a throwaway one): call it last.
- :func:`measure_concurrency` (14d): resolve TPS (viewer path) against ``SELECT 1`` TPS, both
  with ``cfg.scale_clients`` (32) pgbench clients on 2 threads, interleaved; the figure row 2
  gives for one client. It leaves nothing behind; called after
  :func:`measure_scale_logins`, it runs with the extra logins in the cluster.

The extra logins are what the package would have made (make_login, ensure_set_login): a
``wm_set_...`` role named by ``set_login_of`` over a pair of the large instance's bulk catalog
roles, LOGIN with a SCRAM verifier of a password of its own, member of its two roles and of
the instance's login group, with CONNECT on the large instance's data table database (the
database the sweep's logins are on), and its row in ``datatable_role_set``. The package would
make them one resolve at a time; here they are made as the package owner in bulk: one
COPY of the rows (the login names computed by set_login_of; a random password each, and its
verifier at the instance's scram_iterations computed by scram.py, sent as COPY data, so
that no password is in any statement's text), then a DO loop of CREATE ROLE
with a COMMIT and one GRANT of the login group and of CONNECT per batch of logins. Their rows
are "in use" (last used and rotated 1,000 days ahead), so that no sweep here takes or
rotates them; every sweep still examines them.
"""

from __future__ import annotations

import secrets
import statistics
import time
from datetime import timedelta

from psycopg import sql

from datatable_roles.client import Client
from datatable_roles.errors import DatatableRolesError
from datatable_roles.scram import scram_sha256_verifier

from .config import Config, log
from .measure import Pgbench, Results, interleaved_tps, resolve_script
from .report import Row
from .world import Instance, World, connect, map_on_database

LOGIN_BATCH = 1_000          # logins per COMMIT (and per GRANT) of the bulk build
EMPTY_SWEEP_CAP_FACTOR = 10  # a sweep with nothing to drop may run this many sweep caps
THREADS = 2                  # pgbench -j of ratio 14d
WARMUP = 2                   # seconds of each 14d run left out (new backends' first calls)


def _count_label(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 and n >= 1000 else f"{n:,}"


# ---- the extra set logins -------------------------------------------------------------------


def _bulk_ids(conn, inst: Instance) -> list[int]:
    return [r[0] for r in conn.execute(
        "SELECT r.id FROM datatable_roles.catalog_role AS r WHERE r.name LIKE %s"
        " ORDER BY r.id", [inst.prefix + "bulk%"])]


def add_scale_logins(world: World, n: int) -> str:
    """Makes ``n`` set logins of pairs of the large instance's bulk catalog roles on its data
    table database (see the module doc); returns a summary of the build (also logged).

    The pairs are (k mod m, k mod m + d) with gaps d from above those of the sweep's stale
    logins (world.make_stale_logins, gap 1 + (k - 1) // m), so that no pair is a set
    login the world already has."""
    inst, cfg = world.large, world.cfg
    t0 = time.monotonic()
    with connect(inst.owner_ci) as conn:
        m = len(_bulk_ids(conn, inst))
        d0 = 2 + cfg.sweep_logins // m
        if d0 + n // m >= m // 2:
            raise RuntimeError(f"{n:,} pairs of {m:,} roles with gaps from {d0}: too many")
        (roles_before,) = conn.execute("SELECT count(*) FROM pg_roles").fetchone()
        # The logins and their role ids, as the package names them (set_login_of).
        pairs = conn.execute(
            "SELECT n.login, p.role_ids"
            " FROM (SELECT array_agg(r.id ORDER BY r.id) AS a"
            "       FROM datatable_roles.catalog_role AS r WHERE r.name LIKE %(pat)s) AS ids"
            " CROSS JOIN generate_series(0, %(n)s - 1) AS k"
            " CROSS JOIN LATERAL (SELECT ARRAY[least(x, y), greatest(x, y)] AS role_ids FROM"
            "   (SELECT ids.a[k %% %(m)s + 1] AS x,"
            "           ids.a[(k %% %(m)s + %(d0)s + k / %(m)s) %% %(m)s + 1] AS y) AS xy) AS p"
            " CROSS JOIN LATERAL datatable_roles.set_login_of(%(db)s, p.role_ids) AS n",
            {"db": inst.dt_db, "pat": inst.prefix + "bulk%", "n": n, "m": m,
             "d0": d0}).fetchall()
        (iters,) = conn.execute(
            "SELECT scram_iterations FROM datatable_roles.settings").fetchone()
        (now,) = conn.execute("SELECT datatable_roles.clock_now()").fetchone()
        later = now + timedelta(days=1000)
        # A password of its own each, and its verifier at the instance's iterations, computed
        # here and sent as COPY data: no password is in any statement's text.
        with conn.cursor().copy(
                "COPY datatable_roles.datatable_role_set (login, role_ids, dbname, password,"
                " verifier, created_at, last_used_at, rotated_at) FROM STDIN") as copy:
            for login, role_ids in pairs:
                password = secrets.token_hex(32)
                copy.write_row((login, role_ids, inst.dt_db, password,
                                scram_sha256_verifier(password, iters), now, later, later))
        t_rows = time.monotonic() - t0
        log(f"scale: {n:,} rows of datatable_role_set (with passwords and verifiers) in "
            f"{t_rows:.1f}s")
        t1 = time.monotonic()
        conn.execute(sql.SQL("""
DO $$
DECLARE
    grp text := datatable_roles.login_group();
    opts text := CASE WHEN datatable_roles.pg16_or_later()
        THEN ' WITH INHERIT FALSE, SET FALSE' ELSE '' END;
    batch text[] := '{{}}';
    r record;
BEGIN
    FOR r IN
        SELECT s.login, s.verifier, (
            SELECT string_agg(quote_ident(c.name), ', ' ORDER BY c.name COLLATE "C")
            FROM datatable_roles.catalog_role AS c WHERE c.id = ANY(s.role_ids)) AS names
        FROM datatable_roles.datatable_role_set AS s
        WHERE s.dbname = {db} AND NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = s.login)
        ORDER BY s.login
    LOOP
        EXECUTE format('CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE'
            ' NOREPLICATION PASSWORD %L IN ROLE %s', r.login, r.verifier, r.names);
        batch := batch || r.login;
        IF cardinality(batch) >= {batch} THEN
            EXECUTE format('GRANT %I TO %s%s', grp,
                (SELECT string_agg(quote_ident(b), ', ') FROM unnest(batch) AS b), opts);
            EXECUTE format('GRANT CONNECT ON DATABASE %I TO %s', {db},
                (SELECT string_agg(quote_ident(b), ', ') FROM unnest(batch) AS b));
            batch := '{{}}';
            COMMIT;
        END IF;
    END LOOP;
    IF cardinality(batch) > 0 THEN
        EXECUTE format('GRANT %I TO %s%s', grp,
            (SELECT string_agg(quote_ident(b), ', ') FROM unnest(batch) AS b), opts);
        EXECUTE format('GRANT CONNECT ON DATABASE %I TO %s', {db},
            (SELECT string_agg(quote_ident(b), ', ') FROM unnest(batch) AS b));
    END IF;
END $$""").format(db=sql.Literal(inst.dt_db), batch=sql.Literal(LOGIN_BATCH)))
        t_roles = time.monotonic() - t1
        conn.execute("ANALYZE datatable_roles.datatable_role_set")
        (roles_after,) = conn.execute("SELECT count(*) FROM pg_roles").fetchone()
        made = roles_after - roles_before
        # A sample of them must be intact, or every sweep would heal them.
        sample = [p[0] for p in pairs[::max(n // 20, 1)][:20]]
        (intact,) = conn.execute(
            "SELECT count(*) FROM (SELECT s.* FROM datatable_roles.datatable_role_set AS s"
            "  WHERE s.login = ANY(%s)) AS s"
            " WHERE EXISTS (SELECT FROM datatable_roles.login_intact(s.login, s.dbname))", [sample]).fetchone()
        (rows,) = conn.execute(
            "SELECT count(*) FROM datatable_roles.datatable_role_set").fetchone()
    if made != n or intact != len(sample):
        raise RuntimeError(f"scale logins: {made:,} roles made of {n:,}, "
                           f"{intact} of {len(sample)} intact")
    total = time.monotonic() - t0
    summary = (f"{n:,} set logins made in {total:.0f}s ({t_rows:.0f}s their rows with "
               f"passwords and verifiers, {t_roles:.0f}s the roles, {LOGIN_BATCH:,} a COMMIT); "
               f"the cluster then had {roles_after:,} roles, the large instance "
               f"{rows:,} set-login rows")
    log(f"scale: {summary}")
    return summary


# ---- the sweep, one side --------------------------------------------------------------------


def _make_stale(world: World, owner, step: int, count: int) -> tuple[list[str], float]:
    """``count`` new set logins of triples (i, i + step, i + 2 step) of bulk roles (no other
    login of the world has three roles), made by ensure_set_login as a resolve would; returns
    them and the time per login made (ms)."""
    client = Client(owner)
    ids = _bulk_ids(owner, world.large)
    m = len(ids)
    if count > m or 2 * step >= m // 2:
        raise RuntimeError(f"{count} stale triples of {m} roles with step {step}")
    map_on_database(owner, world.dt_db, ids)
    t0 = time.perf_counter()
    made = [client.ensure_set_login(world.dt_db,
                                    sorted([ids[i], ids[(i + step) % m], ids[(i + 2 * step) % m]]))
            for i in range(count)]
    per = (time.perf_counter() - t0) / count * 1000
    if len(set(made)) != count:
        raise RuntimeError(f"stale logins: {len(set(made))} distinct of {count}")
    return sorted(made), per


def _sweep_side(world: World, stale: list[str], side: str) -> dict:
    """The sweeps of one side of 14b, as measure_sweep does them: ``stale`` split into
    ``cfg.reps`` chunks by last use (chunk k used k days after the others); sweep k moves the
    clock so that chunk k (and what an earlier capped sweep left) is older than 30 days, then
    sweeps as the owner with statement_timeout as a cap; per login = time / logins dropped.
    Before them, one sweep with nothing due (the clock where it was), under a longer cap: what
    a sweep costs whatever it drops. Every other login is in use and not due for rotation."""
    cfg, inst = world.cfg, world.large
    chunks = [stale[k::cfg.reps] for k in range(cfg.reps)]
    out = {"per_login": [], "dropped": 0, "capped": 0, "none_dropped": 0}
    with connect(inst.owner_ci) as owner:
        client = Client(owner)
        now = client.clock_now()
        owner.execute("UPDATE datatable_roles.datatable_role_set SET"
                      " last_used_at = %(now)s + interval '1000 days',"
                      " rotated_at = %(now)s + interval '1000 days'"
                      " WHERE NOT login = ANY(%(stale)s) AND"
                      " (last_used_at < %(now)s + interval '500 days'"
                      "  OR rotated_at < %(now)s + interval '500 days')",
                      {"now": now, "stale": stale})
        owner.execute("UPDATE datatable_roles.datatable_role_set SET"
                      " rotated_at = %s + interval '1000 days' WHERE login = ANY(%s)",
                      [now, stale])
        for k, chunk in enumerate(chunks):
            owner.execute("UPDATE datatable_roles.datatable_role_set SET last_used_at ="
                          " last_used_at + %s * interval '1 day' WHERE login = ANY(%s)",
                          [k, chunk])
        (offset0,) = owner.execute(
            "SELECT clock_offset FROM datatable_roles.settings").fetchone()

        def count() -> int:
            return owner.execute(
                "SELECT count(*) FROM datatable_roles.datatable_role_set").fetchone()[0]

        def timed_sweep(cap: float) -> tuple[float, bool]:
            owner.execute(sql.SQL("SET statement_timeout = {}").format(
                sql.Literal(f"{int(cap * 1000)}ms")))
            capped = False
            t0 = time.perf_counter()
            try:
                client.sweep()
            except DatatableRolesError as e:
                if e.sqlstate != "57014":  # query_canceled: the cap
                    raise
                capped = True
            t = time.perf_counter() - t0
            owner.execute("RESET statement_timeout")
            return t, capped

        # First a sweep with nothing due (the stale logins are fresh yet), under a longer
        # cap; it drops only what a capped sweep of the other side may have left retired.
        before = count()
        t, capped = timed_sweep(cfg.sweep_cap_seconds * EMPTY_SWEEP_CAP_FACTOR)
        out["empty"], out["empty_capped"], out["empty_dropped"] = t, capped, before - count()
        log(f"scale sweep ({side}), nothing due: {t:.2f}s{' (capped)' if capped else ''}"
            f", {out['empty_dropped']} dropped")
        try:
            for k in range(cfg.reps):
                owner.execute("UPDATE datatable_roles.settings SET clock_offset = %s"
                              " + %s * interval '1 day' + interval '30 days 12 hours'",
                              [offset0, k])
                before = count()
                t, capped = timed_sweep(cfg.sweep_cap_seconds)
                dropped = before - count()
                out["dropped"] += dropped
                out["capped"] += capped
                out["none_dropped"] += dropped == 0  # counted as one login: a lower bound
                out["per_login"].append(t / max(dropped, 1) * 1000)
                log(f"scale sweep ({side}) {k + 1}/{cfg.reps}: {dropped} dropped in {t:.2f}s"
                    f" ({out['per_login'][-1]:.2f} ms/login){' (capped)' if capped else ''}")
        finally:
            owner.execute("UPDATE datatable_roles.settings SET clock_offset = %s", [offset0])
        # What the capped sweeps left is put in use, so that the other side does not sweep it.
        owner.execute("UPDATE datatable_roles.datatable_role_set SET"
                      " last_used_at = %s + interval '1000 days' WHERE login = ANY(%s)",
                      [now, stale])
    return out


# ---- 14a-14c --------------------------------------------------------------------------------


def _resolve_side(world: World, pgbench: Pgbench, side: str) -> dict[str, list[float]]:
    large = world.large
    scripts = {
        "select1": (large, "SELECT 1;"),
        "view": (large, resolve_script(large.jobs["vera"], "dt_view")),
        "r10": (large, resolve_script(large.jobs["vera"], "dt_r10")),
    }
    return interleaved_tps(pgbench, scripts, world.cfg, f"scale pgbench ({side})")


def measure_scale_logins(world: World, pgbench: Pgbench, results: Results) -> None:
    """14a-14c: resolve TPS (viewer path, R10; large instance, pgbench -c 1) and the sweep's
    time per login dropped, with ``cfg.scale_logins`` more set logins in the cluster against
    the same just before they were made (see :func:`_sweep_side`). The two sides cannot be
    interleaved (the logins are made between them): repetition k of one side is paired with
    repetition k of the other, and ``SELECT 1`` TPS, measured with the resolves on both
    sides, shows how much the host itself drifted. Leaves the logins in the cluster: call it
    last."""
    cfg: Config = world.cfg
    n = cfg.scale_logins
    count = cfg.scale_sweep_logins
    label = _count_label(n)
    with connect(world.large.owner_ci) as owner:
        stale0, make0 = _make_stale(world, owner, 1, count)
    log(f"scale: {count} stale logins (without) made, {make0:.2f} ms each")
    tps0 = _resolve_side(world, pgbench, "without")
    sweep0 = _sweep_side(world, stale0, "without")
    build = add_scale_logins(world, n)
    with connect(world.large.owner_ci) as owner:
        stale1, make1 = _make_stale(world, owner, 2, count)
    log(f"scale: {count} stale logins (with {label}) made, {make1:.2f} ms each")
    tps1 = _resolve_side(world, pgbench, f"with {label}")
    sweep1 = _sweep_side(world, stale1, f"with {label}")

    def ratio(a: list[float], b: list[float]) -> list[float]:
        return [x / y for x, y in zip(a, b)]

    def med(v: list[float]) -> float:
        return statistics.median(v)

    def norm(tps: dict[str, list[float]], k: str) -> list[float]:
        return ratio(tps[k], tps["select1"])

    drift = med(ratio(tps1["select1"], tps0["select1"]))
    tps_note = (f"median TPS with / without: viewer {med(tps1['view']):,.0f} / "
                f"{med(tps0['view']):,.0f}, R10 {med(tps1['r10']):,.0f} / "
                f"{med(tps0['r10']):,.0f}, SELECT 1 {med(tps1['select1']):,.0f} / "
                f"{med(tps0['select1']):,.0f} ({drift:.2f}x: the host's drift between the "
                "sides); divided by SELECT 1 TPS of the same repetition, the viewer path is "
                f"{med(ratio(norm(tps1, 'view'), norm(tps0, 'view'))):.2f}x, R10 "
                f"{med(ratio(norm(tps1, 'r10'), norm(tps0, 'r10'))):.2f}x")
    run = f"pgbench -M prepared -c 1 -T {cfg.pgbench_seconds}, worker role, large instance"
    compares = (f"resolve TPS with {n:,} more set logins in the cluster / without, same run, "
                f"before-after ({run})")

    def sweep_note(s: dict) -> str:
        note = f"{med(s['per_login']):.2f} ms per login ({s['dropped']} of {count} dropped"
        if s["capped"]:
            note += f", {s['capped']} of {cfg.reps} sweeps capped"
        if s["none_dropped"]:
            note += f", {s['none_dropped']} dropped none"
        note += f"); a sweep with nothing due {s['empty']:.2f}s"
        if s["empty_dropped"]:
            note += f" (it dropped {s['empty_dropped']} left retired by a capped sweep)"
        if s["empty_capped"]:
            note += f" (capped at {cfg.sweep_cap_seconds * EMPTY_SWEEP_CAP_FACTOR:g}s)"
        return note

    sweep = ratio(sweep1["per_login"], sweep0["per_login"])
    capped = sweep0["capped"] + sweep1["capped"]
    sweep_text = (f"with: {sweep_note(sweep1)}; without: {sweep_note(sweep0)}")
    if capped:
        sweep_text += (f"; a capped sweep hit the {cfg.sweep_cap_seconds:g}s cap "
                       "(statement_timeout), per login = time / logins dropped, one when "
                       "none (so a lower bound)")
    results.rows += [
        Row(f"14a resolve, viewer path, {label} set logins in the cluster / none",
            compares, cfg.reps, ratio(tps1["view"], tps0["view"]), 0.9, True, note=tps_note),
        Row(f"14b sweep per login, {label} set logins in the cluster / none",
            f"sweep time per login dropped with {n:,} more set logins / without ({cfg.reps} "
            f"sweeps of {count // cfg.reps} stale logins a side, same run, before-after)",
            cfg.reps, sweep, 1.5, False, note=sweep_text),
        Row(f"14c resolve, cheap path R10, {label} set logins in the cluster / none",
            compares, cfg.reps, ratio(tps1["r10"], tps0["r10"]), 0.9, True,
            note=f"making a set login (ensure_set_login, 3 roles): {make1:.2f} ms with, "
                 f"{make0:.2f} ms without"),
    ]
    results.notes.append(
        f"14a-14c: {build}. They are pairs of the large instance's bulk catalog roles, all "
        "on its data table database (the sweep's), each with its row, LOGIN, a SCRAM "
        "verifier, its two roles and the login group, and CONNECT on that database; made in "
        "bulk as the owner and left in the cluster. The 'without' side ran just before they "
        "were made, the 'with' side just after.")


# ---- 14d ------------------------------------------------------------------------------------


def _wait_sessions_gone(world: World, inst: Instance, timeout: float = 30.0) -> int:
    """Waits until no session of the worker is left in ``inst``'s database (pgbench's
    backends end just after it exits); returns how many were still there at the start."""
    deadline = time.monotonic() + timeout
    first = None
    with world.c.connect_super() as conn:
        conn.autocommit = True
        while True:
            (left,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND usename = %s"
                " AND pid <> pg_backend_pid()", [inst.name, world.c.worker]).fetchone()
            first = left if first is None else first
            if left == 0:
                return first
            if time.monotonic() > deadline:
                raise RuntimeError(f"{left} pgbench sessions still in {inst.name} "
                                   f"after {timeout:g}s")
            time.sleep(0.05)


def measure_concurrency(world: World, pgbench: Pgbench, results: Results) -> None:
    """14d: resolve TPS (viewer path, existing set login, small instance) against ``SELECT 1``
    TPS, each with ``cfg.scale_clients`` pgbench clients on THREADS threads, interleaved
    over ``cfg.reps`` repetitions (the order alternating); the target is row 2's. Each run
    starts 32 new backends, whose first resolve is dear (~70 ms: the functions are compiled
    and the catalog caches filled): the figure is the TPS of the ``cfg.pgbench_seconds``
    after the first WARMUP seconds (Pgbench ``warmup``); the note gives the whole runs' too.
    After each run, waits until every pgbench session has ended, so that no run overlaps the
    next."""
    cfg, inst = world.cfg, world.small
    clients = cfg.scale_clients
    scripts = {"select1": "SELECT 1;", "view": resolve_script(inst.jobs["vera"], "dt_view")}
    tps: dict[str, list[float]] = {k: [] for k in scripts}
    whole: dict[str, list[float]] = {k: [] for k in scripts}
    lingering = 0
    _wait_sessions_gone(world, inst)

    def run(k: str) -> float:
        return pgbench(inst, scripts[k], seconds=cfg.pgbench_seconds, clients=clients,
                       threads=THREADS, warmup=WARMUP)

    for rep in range(cfg.reps):
        order = list(scripts) if rep % 2 == 0 else list(reversed(scripts))
        for k in order:
            try:
                tps[k].append(run(k))
            except RuntimeError as e:
                log(f"{k} -c {clients}: {str(e).strip()[:200]}; retrying once")
                _wait_sessions_gone(world, inst)
                tps[k].append(run(k))
            whole[k].append(pgbench.last_whole_tps)
            lingering = max(lingering, _wait_sessions_gone(world, inst))
        log(f"pgbench -c {clients} repetition {rep + 1}/{cfg.reps}: "
            + ", ".join(f"{k} {tps[k][-1]:.0f} (whole run {whole[k][-1]:.0f})"
                        for k in scripts))
    ratios = [a / b for a, b in zip(tps["view"], tps["select1"])]
    whole_ratio = statistics.median(a / b for a, b in zip(whole["view"], whole["select1"]))
    med = statistics.median
    results.rows.append(Row(
        f"14d resolve, viewer path, {clients} concurrent clients",
        f"resolve TPS / SELECT 1 TPS (pgbench -M prepared -c {clients} -j {THREADS} -P 1, "
        f"the {cfg.pgbench_seconds} s after the first {WARMUP} s, worker role, small instance)",
        cfg.reps, ratios, 0.35, True,
        note=(f"median TPS: resolve {med(tps['view']):,.0f}, SELECT 1 "
              f"{med(tps['select1']):,.0f}; over the whole runs (-T "
              f"{cfg.pgbench_seconds + WARMUP + 1}, each backend's first resolves included) "
              f"{med(whole['view']):,.0f} and {med(whole['select1']):,.0f}, "
              f"{whole_ratio:.2f}x; at most {lingering} sessions were still ending after a "
              "run (each run waited for them)")))
