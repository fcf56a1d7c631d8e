"""The bench's measurements: each times two things in the same run, interleaved (A, B, A, B,
...) over ``cfg.reps`` repetitions, and adds its figure(s) to the :class:`Results`.

Resolution speed is measured with pgbench scripts that call ``resolve_datatable_role``
directly (pgbench cannot call Python); everything else calls the package through
:class:`~datatable_roles.client.Client`.
"""

from __future__ import annotations

import os
import re
import secrets
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from datatable_roles.client import Client
from datatable_roles.errors import DatatableRolesError
from datatable_roles.scram import scram_sha256_verifier

from ..devcluster import PG_CLIENT_BIN, Cluster
from .config import Config, log
from .report import Row
from .world import Instance, World, connect

PGBENCH = PG_CLIENT_BIN / "pgbench"
RLS_QUERY = "SELECT count(*) FROM orders"


@dataclass
class Results:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Pgbench:
    """Runs pgbench as the worker role against an instance; returns TPS."""

    def __init__(self, cluster: Cluster, tmp: Path) -> None:
        self.c = cluster
        self.tmp = tmp

    def __call__(self, inst: Instance, script: str, seconds: int | None = None,
                 transactions: int | None = None, clients: int = 1, threads: int = 1,
                 warmup: int = 0) -> float:
        """TPS of ``script`` over ``clients`` connections (-c) run by ``threads`` threads
        (-j); with ``transactions``, that many per client (-t). With ``warmup`` (and
        ``seconds``), returns the mean TPS of the ``seconds`` one-second intervals after the
        first ``warmup`` seconds (pgbench -P 1, -T warmup + seconds + 1: no progress is
        printed for the last second), leaving out each new backend's first calls;
        ``last_whole_tps`` is pgbench's TPS over the whole run."""
        path = self.tmp / f"s{abs(hash(script))}.sql"
        path.write_text(script + "\n")
        cmd = [str(PGBENCH), "-n", "-M", "prepared", "-c", str(clients), "-j", str(threads),
               "-f", str(path),
               "-h", self.c.host, "-p", str(self.c.port), "-U", self.c.worker]
        if transactions is None:
            cmd += (["-T", str(seconds + warmup + 1), "-P", "1"] if warmup
                    else ["-T", str(seconds)])
        else:
            cmd += ["-t", str(transactions)]
        cmd.append(inst.name)
        env = dict(os.environ, PGPASSWORD=self.c.worker_password)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"pgbench failed:\n{proc.stdout}{proc.stderr}")
        m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", proc.stdout)
        if not m:
            raise RuntimeError(f"pgbench output not understood:\n{proc.stdout}")
        self.last_whole_tps = float(m.group(1))
        if not warmup:
            return self.last_whole_tps
        steady = [float(tps) for t, tps in re.findall(r"progress: ([0-9.]+) s, ([0-9.]+) tps",
                                                       proc.stderr)
                  if warmup < float(t) <= warmup + seconds]
        if not steady:
            raise RuntimeError(f"pgbench progress not understood:\n{proc.stderr}")
        return sum(steady) / len(steady)


def resolve_script(job: str, datatable: str) -> str:
    """A pgbench script: one resolve (values are the bench's own, so inlined)."""
    return f"SELECT * FROM resolve_datatable_role('{job}'::uuid, '{datatable}');"


# ---- 1-3: resolve TPS ---------------------------------------------------------------------


def interleaved_tps(pgbench: "Pgbench", scripts: dict, cfg: Config, label: str) -> dict[str, list[float]]:
    """TPS of each script (name -> (instance, SQL)), cfg.reps times, the order rotated each
    repetition so that no script always runs first. A pgbench run that ends with no summary
    (seen once) is retried once."""
    names = list(scripts)
    tps: dict[str, list[float]] = {k: [] for k in names}
    for rep in range(cfg.reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for k in order:
            inst, script = scripts[k]
            try:
                tps[k].append(pgbench(inst, script, seconds=cfg.pgbench_seconds))
            except RuntimeError as e:
                log(f"{k}: {str(e).strip()[:200]}; retrying once")
                tps[k].append(pgbench(inst, script, seconds=cfg.pgbench_seconds))
        log(f"{label} repetition {rep + 1}/{cfg.reps}: "
            + ", ".join(f"{k} {tps[k][-1]:.0f}" for k in names))
    return tps


def measure_resolve(world: World, pgbench: Pgbench, results: Results) -> None:
    """Ratios 1-3: resolve TPS against SELECT 1 TPS (small instance), and large-instance
    resolve TPS against small-instance resolve TPS."""
    cfg, small, large = world.cfg, world.small, world.large
    scripts = {
        "select1": (small, "SELECT 1;"),
        "s_r2": (small, resolve_script(small.jobs["vera"], "dt_admin")),
        "s_r10": (small, resolve_script(small.jobs["vera"], "dt_r10")),
        "s_view": (small, resolve_script(small.jobs["vera"], "dt_view")),
        "l_r2": (large, resolve_script(large.jobs["vera"], "dt_admin")),
        "l_r10": (large, resolve_script(large.jobs["vera"], "dt_r10")),
        "l_view": (large, resolve_script(large.jobs["vera"], "dt_view")),
    }
    tps = interleaved_tps(pgbench, scripts, cfg, "pgbench")

    def ratio(a: str, b: str) -> list[float]:
        return [x / y for x, y in zip(tps[a], tps[b])]

    run = f"pgbench -M prepared -c 1 -T {cfg.pgbench_seconds}, worker role, TPS"
    per_select1 = f"resolve TPS / SELECT 1 TPS ({run})"
    large_small = "large-instance resolve TPS / small-instance resolve TPS"
    results.rows += [
        Row("1a resolve, cheap path R2 (default admin)",
            per_select1, cfg.reps, ratio("s_r2", "select1"), 0.5, True),
        Row("1b resolve, cheap path R10 (default role, no viewer roles)",
            per_select1, cfg.reps, ratio("s_r10", "select1"), 0.5, True),
        Row("2  resolve, viewer path, existing set login",
            per_select1, cfg.reps, ratio("s_view", "select1"), 0.35, True),
        Row("3a large directory: cheap path R2",
            large_small, cfg.reps, ratio("l_r2", "s_r2"), 0.9, True),
        Row("3b large directory: cheap path R10",
            large_small, cfg.reps, ratio("l_r10", "s_r10"), 0.9, True),
        Row("3c large directory: viewer path",
            large_small, cfg.reps, ratio("l_view", "s_view"), 0.9, True),
    ]
    results.notes.append(
        "1-3: median TPS: " + ", ".join(f"{k} {statistics.median(v):,.0f}"
                                        for k, v in tps.items())
        + f" (SELECT 1: {1e6 / statistics.median(tps['select1']):.0f} µs a transaction;"
        " the lower it is, the more the ratios show server work rather than round trips)")


# ---- 4: first use of a new set ------------------------------------------------------------


def measure_first_use(world: World, results: Results) -> None:
    """Ratio 4: a resolve that makes a new 2-role set login against a bare CREATE ROLE of
    the same shape, one connection each, autocommit."""
    cfg, inst = world.cfg, world.small
    verifier = scram_sha256_verifier(secrets.token_hex(16), 16)
    ratios: list[float] = []
    per_a: list[float] = []
    per_b: list[float] = []
    with Client(inst.worker_ci) as worker, connect(inst.owner_ci) as owner:
        i = 0
        for _ in range(cfg.reps):
            ta = tb = 0.0
            for _ in range(cfg.first_use_ops):
                job, (ra, rb) = world.first_jobs[i], world.first_pairs[i]
                stmt = sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}, {}").format(
                    sql.Identifier(f"{world.tag}_bare_new_{i}"), sql.Literal(verifier),
                    sql.Identifier(ra), sql.Identifier(rb)).as_string(owner)
                for side in ((0, 1) if i % 2 == 0 else (1, 0)):
                    t0 = time.perf_counter()
                    if side == 0:
                        res = worker.resolve(job, "dt_first")
                        ta += time.perf_counter() - t0
                        if res.kind != "set" or sorted(res.roles) != sorted([ra, rb]):
                            raise RuntimeError(f"first use resolved {res}")
                    else:
                        owner.execute(stmt)
                        tb += time.perf_counter() - t0
                i += 1
            ratios.append(ta / tb)
            per_a.append(ta / cfg.first_use_ops * 1000)
            per_b.append(tb / cfg.first_use_ops * 1000)
    results.rows.append(Row(
        "4  first use of a new set (creates the set login)",
        "resolve making a 2-role set login / bare CREATE ROLE .. LOGIN PASSWORD '<SCRAM>' "
        "IN ROLE a, b (per op, one connection each, autocommit)",
        cfg.reps, ratios, 3.0, False,
        note=f"per op: {statistics.median(per_a):.2f} ms vs {statistics.median(per_b):.2f} ms"))


# ---- 5: resolve + connect + a query under RLS ---------------------------------------------


def measure_connect(world: World, results: Results) -> None:
    """Ratio 5 at the instance's scram_iterations (vera's login) and at 4096 (walt's login,
    re-keyed at 4096), each against connecting as the admin login, interleaved."""
    cfg, c, inst = world.cfg, world.c, world.small
    with connect(inst.owner_ci) as conn:
        owner = Client(conn)
        (iters,) = conn.execute(
            "SELECT scram_iterations FROM datatable_roles.settings").fetchone()
        walt_login = owner.resolve(inst.jobs["walt"], "dt_view").login
        conn.execute("UPDATE datatable_roles.settings SET scram_iterations = 4096")
        conn.execute("UPDATE datatable_roles.datatable_role_set SET password = ''"
                     " WHERE login = %s", [walt_login])
        owner.resolve(inst.jobs["walt"], "dt_view")  # re-key at 4096
        conn.execute("UPDATE datatable_roles.settings SET scram_iterations = %s", [iters])
    vera_login = world.resolve_login(inst, "vera")
    with c.connect_super() as conn:
        stored = dict(conn.execute(
            "SELECT rolname, split_part(split_part(rolpassword, '$', 2), ':', 1)"
            " FROM pg_authid WHERE rolname IN (%s, %s, %s)",
            [walt_login, inst.dt_admin, vera_login]).fetchall())
    iter_note = (f"stored verifiers: viewer logins {stored[vera_login]} and {stored[walt_login]}"
                 f" iterations, admin login {stored[inst.dt_admin]}")

    def viewer_once(worker: Client, job: str) -> int:
        res = worker.resolve(job, "dt_view")
        with psycopg.connect(c.conninfo(res.login, res.password, res.dbname, tcp=True)) as vc:
            return vc.execute(RLS_QUERY).fetchone()[0]

    def admin_once() -> int:
        with psycopg.connect(c.conninfo(inst.dt_admin, inst.dt_admin_password,
                                        inst.dt_db, tcp=True)) as ac:
            return ac.execute(RLS_QUERY).fetchone()[0]

    r16, r4096 = [], []
    with Client(inst.worker_ci) as worker:
        expected = {"vera": viewer_once(worker, inst.jobs["vera"]),
                    "walt": viewer_once(worker, inst.jobs["walt"])}
        if not (0 < expected["walt"] < expected["vera"] < admin_once()):
            raise RuntimeError(f"RLS counts look wrong: {expected}")
        for _ in range(cfg.reps):
            t = [0.0, 0.0, 0.0]
            for op in range(cfg.connect_ops):
                kinds = [0, 1, 2]
                kinds = kinds[op % 3:] + kinds[:op % 3]
                for k in kinds:
                    t0 = time.perf_counter()
                    if k == 0:
                        viewer_once(worker, inst.jobs["vera"])
                    elif k == 1:
                        viewer_once(worker, inst.jobs["walt"])
                    else:
                        admin_once()
                    t[k] += time.perf_counter() - t0
            r16.append(t[0] / t[2])
            r4096.append(t[1] / t[2])
    what = ("resolve + connect (TCP, SCRAM) + `SELECT count(*) FROM orders` under RLS / connect "
            "as the admin login (verifier at 4096) + the same query; fresh connections")
    results.rows.append(Row(f"5a resolve+connect+RLS query, set login at {iters} iterations",
                            what, cfg.reps, r16, 1.3, False))
    results.rows.append(Row("5b resolve+connect+RLS query, set login at 4096 iterations",
                            what, cfg.reps, r4096, 1.3, False))
    results.notes.append(f"5: {iter_note}; the 4096 login was re-keyed by setting "
                         "settings.scram_iterations = 4096 and emptying its row's password.")


# ---- 7: writes per resolve ----------------------------------------------------------------


def measure_touch(world: World, pgbench: Pgbench, results: Results) -> None:
    """Ratio 7: writes to datatable_role_set while one login is resolved 10,000 times in
    one day, starting from a row last used over a day ago (so the daily touch falls in)."""
    inst = world.small
    login = world.resolve_login(inst, "vera")
    with connect(inst.owner_ci) as owner:
        owner.execute("UPDATE datatable_roles.datatable_role_set"
                      " SET last_used_at = last_used_at - interval '25 hours' WHERE login = %s",
                      [login])
        owner.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(0.2)

    def snapshot() -> tuple[int, str]:
        with connect(inst.super_ci) as conn:
            conn.execute("SELECT pg_stat_force_next_flush()")
            conn.execute("SELECT pg_stat_clear_snapshot()")
            (writes,) = conn.execute(
                "SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables"
                " WHERE relid = 'datatable_roles.datatable_role_set'::regclass").fetchone()
            (xmin,) = conn.execute(
                "SELECT xmin::text FROM datatable_roles.datatable_role_set WHERE login = %s",
                [login]).fetchone()
        return writes, xmin

    w0, x0 = snapshot()
    n = world.cfg.touch_resolves
    pgbench(inst, resolve_script(inst.jobs["vera"], "dt_view"), transactions=n)
    deadline = time.monotonic() + 5
    while True:  # the pgbench backend flushes its counters as it exits
        w1, x1 = snapshot()
        if w1 != w0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    results.rows.append(Row(
        f"7  writes to datatable_role_set per {n:,} resolves of one login in one day",
        "Δ(n_tup_ins+n_tup_upd+n_tup_del) over the run (row last used 25 h before)",
        1, [float(w1 - w0)], 1.0, False,
        note=f"row xmin {'changed once' if x0 != x1 else 'unchanged'} ({x0} -> {x1})"))


# ---- 6: the sweep -------------------------------------------------------------------------


def measure_sweep(world: World, results: Results) -> None:
    """Ratio 6. The stale set logins are split into `reps` chunks by last use (chunk k used
    k days after the others); sweep k moves the clock so that exactly chunk k (and what an
    earlier capped sweep left) is older than 30 days, then sweeps (Client.sweep: CALL
    sweep_unused_role_set_logins as the owner, autocommit) with statement_timeout as a cap.
    Interleaved with a DO loop of bare DROP ROLE + COMMIT over as many roles of the same
    shape."""
    cfg, inst = world.cfg, world.large
    logins = world.sweep_set_logins
    chunks = [logins[k::cfg.reps] for k in range(cfg.reps)]
    bare = world.bare_drop_roles
    bare_chunks = [bare[k::cfg.reps] for k in range(cfg.reps)]
    with connect(inst.owner_ci) as owner:
        client = Client(owner)
        # Every other set login of this instance stays in use throughout.
        owner.execute("UPDATE datatable_roles.datatable_role_set SET last_used_at ="
                      " %s + interval '1000 days' WHERE NOT login = ANY(%s)",
                      [client.clock_now(), logins])
        for k, chunk in enumerate(chunks):
            owner.execute("UPDATE datatable_roles.datatable_role_set SET last_used_at ="
                          " last_used_at + %s * interval '1 day' WHERE login = ANY(%s)",
                          [k, chunk])
        (offset0,) = owner.execute(
            "SELECT clock_offset FROM datatable_roles.settings").fetchone()
        ratios, per_sweep, per_drop, done, capped, none_dropped = [], [], [], 0, 0, 0
        for k in range(cfg.reps):
            owner.execute("UPDATE datatable_roles.settings SET clock_offset = %s"
                          " + %s * interval '1 day' + interval '30 days 12 hours'",
                          [offset0, k])
            (before,) = owner.execute(
                "SELECT count(*) FROM datatable_roles.datatable_role_set").fetchone()
            owner.execute(sql.SQL("SET statement_timeout = {}").format(
                sql.Literal(f"{int(cfg.sweep_cap_seconds * 1000)}ms")))
            t0 = time.perf_counter()
            try:
                client.sweep()
            except DatatableRolesError as e:
                if e.sqlstate != "57014":  # query_canceled: the cap
                    raise
                capped += 1
            ta = time.perf_counter() - t0
            owner.execute("RESET statement_timeout")
            (after,) = owner.execute(
                "SELECT count(*) FROM datatable_roles.datatable_role_set").fetchone()
            dropped = before - after
            done += dropped
            t0 = time.perf_counter()
            owner.execute(sql.SQL(
                "DO $$ DECLARE r text; BEGIN FOREACH r IN ARRAY {}::text[] LOOP"
                " EXECUTE format('DROP ROLE %I', r); COMMIT; END LOOP; END $$").format(
                    sql.Literal(bare_chunks[k])))
            tb = time.perf_counter() - t0
            if dropped == 0:
                none_dropped += 1  # counted as one login: a lower bound
            a, b = ta / max(dropped, 1), tb / len(bare_chunks[k])
            per_sweep.append(a * 1000)
            per_drop.append(b * 1000)
            ratios.append(a / b)
            log(f"sweep {k + 1}/{cfg.reps}: {dropped} dropped in {ta:.2f}s"
                f" ({a * 1000:.2f} ms/login); bare DROP {b * 1000:.3f} ms/login")
        owner.execute("UPDATE datatable_roles.settings SET clock_offset = %s", [offset0])
    n = len(logins)
    note = (f"per login: {statistics.median(per_sweep):.2f} ms vs "
            f"{statistics.median(per_drop):.3f} ms; {done:,} of {n:,} swept")
    if capped:
        note += (f"; {capped} of {cfg.reps} sweeps hit the {cfg.sweep_cap_seconds:g}s cap "
                 f"(statement_timeout), per login = time / logins dropped")
    if none_dropped:
        note += (f"; {none_dropped} sweep(s) dropped none before the cap, counted as one "
                 "login (a lower bound)")
    results.rows.append(Row(
        f"6  sweep of {n:,} stale set logins ({cfg.reps} sweeps of {n // cfg.reps:,})",
        "sweep time per login dropped / bare DROP ROLE + COMMIT per role (DO loop)",
        cfg.reps, ratios, 3.0, False, note=note))
