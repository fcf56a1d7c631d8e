"""`make bench`: the speed ratios of README.md, Benchmarks, measured in one run on one cluster.

    python -m datatable_roles_lab.bench [--quick] [--attach]

Starts a throwaway cluster (devcluster.Cluster), builds two metadata databases (a small
directory and a large one) and one data table database, then measures each figure as a ratio
of two things timed in the same run, interleaved (A, B, A, B, ...) over several repetitions,
and prints one table: the median ratio, its spread (min-max over the repetitions), the target
and whether it is met. ``--quick`` is a smaller version (a smoke test, under a minute).
``--attach`` uses the cluster of an enclosing ``devcluster run`` instead (for development).

The exit status is 0 whatever the figures are; it is non-zero only when the bench could not run.

The pieces: config.py (sizes), world.py (what is measured against), measure.py (the
measurements), report.py (the table) and the rows of anchor, directory, scale, security and
pgbouncer.py, servers.py (a second cluster); this module runs them in order.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ..devcluster import Cluster
from .anchor import measure_anchor
from .config import FULL, QUICK, Config, log
from .directory import measure_directory
from .measure import (Pgbench, Results, measure_connect, measure_first_use,
                      measure_resolve, measure_sweep, measure_touch)
from .pgbouncer import measure_pgbouncer
from .report import render_table
from .scale import measure_concurrency, measure_scale_logins
from .security import measure_heal_check, measure_quarantine_sweep, measure_rotation
from .servers import measure_servers
from .world import World

SHARED_CLUSTER_NOTE = ("All instances share the cluster, so its roles (catalog roles, set logins "
                       "of the sweep) are there during every measurement.")


def large_instance_note(world: World) -> str:
    return (f"3: large instance: {world.large_summary}. Users, group memberships, folder "
            "grants, jobs and the bulk data tables' role maps were bulk-loaded as the "
            "owner with INSERT ... SELECT generate_series (the public functions would be "
            "too slow); catalog roles were made with create_datatable_role and data tables "
            "with register_datatable, one call each. The benchmarked data tables have "
            "the same role maps in both instances; each instance's data tables share one "
            "database of its own.")


def run(cluster: Cluster, cfg: Config, command: str, quick: bool) -> str:
    """Build the world, take every measurement, return the report."""
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="dtr-bench-"))
    try:
        world = World(cluster, cfg)
        world.build()
        pgbench = Pgbench(cluster, tmp)
        results = Results()
        measure_resolve(world, pgbench, results)
        results.notes.append(large_instance_note(world))
        measure_first_use(world, results)
        measure_connect(world, results)
        measure_touch(world, pgbench, results)
        measure_sweep(world, results)
        measure_heal_check(world, results)
        measure_rotation(world, results)
        measure_quarantine_sweep(world, results)
        measure_directory(world, pgbench, results)
        measure_pgbouncer(world, results)
        measure_anchor(world, pgbench, results)
        measure_servers(world, pgbench, results)
        measure_concurrency(world, pgbench, results)
        measure_scale_logins(world, pgbench, results)  # last: it leaves its logins
        results.notes.append(SHARED_CLUSTER_NOTE)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.monotonic() - t0
    with cluster.connect_super() as conn:
        (version,) = conn.execute("SHOW server_version").fetchone()
    return render_table(results.rows, results.notes, command=command, server_version=version,
                        elapsed=elapsed, quick=quick)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m datatable_roles_lab.bench",
                                     description="Speed ratios of README.md, Benchmarks.")
    parser.add_argument("--quick", action="store_true", help="a smaller run (smoke test)")
    parser.add_argument("--attach", action="store_true",
                        help="use the cluster of an enclosing `devcluster run`")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    command = "python -m datatable_roles_lab.bench" + (" --quick" if args.quick else "")
    if args.attach:
        cluster = Cluster.from_env()
    else:
        log("starting a throwaway cluster")
        cluster = Cluster().start()
    try:
        print(run(cluster, cfg, command, args.quick), flush=True)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
