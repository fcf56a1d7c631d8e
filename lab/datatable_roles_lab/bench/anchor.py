"""Ratio 15: each resolve path against an anchor that does not move with the host.

``SELECT 1`` measures the round trip more than the server: on a host where it takes 33 µs
the resolve ratios of rows 1-2 look worse than where it takes 70 µs, for the same server
work. The anchor is a PL/pgSQL function entered the way ``resolve_datatable_role`` is
(SECURITY DEFINER, ``SET search_path``, one prepared statement from pgbench) that does as
many index lookups as the resolve path does: counted, not guessed, as the growth of
``idx_scan`` over every table (the catalogs included) across a pgbench run of that path,
divided by its transactions. Each lookup is a primary-key read of ``pg_class``. A resolve
within 1.3x of its anchor (issue 24) does little more than its index lookups cost.
"""

from __future__ import annotations

import statistics
import time

from psycopg import sql

from .config import log
from .measure import Pgbench, Results, interleaved_tps, resolve_script
from .report import Row
from .world import Instance, World, connect

ANCHOR = """
CREATE OR REPLACE FUNCTION public.bench_anchor(k integer)
RETURNS integer
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    name_read name;
    n integer := 0;
BEGIN
    FOR i IN 1..k LOOP
        SELECT c.relname INTO name_read FROM pg_catalog.pg_class AS c
        WHERE c.oid = 1259 + i % 2;  -- pg_class itself, or its neighbour: an index scan
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$
"""

# (row, the row it re-measures, the path, its data table)
PATHS = (("15a", "1a", "R2 (default admin)", "dt_admin"),
         ("15b", "1b", "R10 (default role)", "dt_r10"),
         ("15c", "2", "viewer path", "dt_view"))
COUNT_TRANSACTIONS = 2000


def index_scans(inst: Instance) -> int:
    with connect(inst.super_ci) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        (n,) = conn.execute("SELECT sum(idx_scan)::bigint FROM pg_stat_all_tables").fetchone()
    return int(n or 0)


def index_scans_per_call(pgbench: Pgbench, inst: Instance, script: str) -> float:
    """idx_scan growth over a pgbench run of ``script``, per transaction (pgbench's backend
    flushes its counters as it exits)."""
    before = index_scans(inst)
    pgbench(inst, script, transactions=COUNT_TRANSACTIONS)
    deadline = time.monotonic() + 5
    after = index_scans(inst)
    while after == before and time.monotonic() < deadline:
        time.sleep(0.1)
        after = index_scans(inst)
    return (after - before) / COUNT_TRANSACTIONS


def measure_anchor(world: World, pgbench: Pgbench, results: Results) -> None:
    cfg, inst = world.cfg, world.small
    with connect(inst.owner_ci) as conn:
        conn.execute(ANCHOR)
        # The package's default privileges take EXECUTE from PUBLIC.
        conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION public.bench_anchor(integer) TO {}")
                     .format(sql.Identifier(world.c.worker)))
    job = inst.jobs["vera"]
    lookups: dict[str, int] = {}
    counted: list[str] = []
    for key, _, _, dt in PATHS:
        per_call = index_scans_per_call(pgbench, inst, resolve_script(job, dt))
        lookups[key] = max(1, round(per_call))
        anchor_per_call = index_scans_per_call(
            pgbench, inst, f"SELECT public.bench_anchor({lookups[key]});")
        counted.append(f"{key} {per_call:.1f} (anchor {anchor_per_call:.1f})")
    scripts = {}
    for key, _, _, dt in PATHS:
        scripts[f"resolve_{key}"] = (inst, resolve_script(job, dt))
        scripts[f"anchor_{key}"] = (inst, f"SELECT public.bench_anchor({lookups[key]});")
    tps = interleaved_tps(pgbench, scripts, cfg, "anchor")
    for key, row, what, _ in PATHS:
        ratios = [a / r for a, r in zip(tps[f"anchor_{key}"], tps[f"resolve_{key}"])]
        us = 1e6 / statistics.median(tps[f"resolve_{key}"])
        anchor_us = 1e6 / statistics.median(tps[f"anchor_{key}"])
        results.rows.append(Row(
            f"{key} resolve, {what} (row {row}) / its anchor ({lookups[key]} index lookups)",
            "anchor TPS / resolve TPS (pgbench -M prepared -c 1, worker role): the resolve's "
            "time in units of a PL/pgSQL entry point doing as many index lookups",
            cfg.reps, ratios, 1.3, False,
            note=f"per transaction: resolve {us:.0f} µs, anchor {anchor_us:.0f} µs"))
    results.notes.append("15: index lookups per call, counted as idx_scan growth over "
                         f"{COUNT_TRANSACTIONS:,} pgbench transactions: " + ", ".join(counted))
    log("anchor: " + ", ".join(counted))
