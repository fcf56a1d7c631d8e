"""The bench's sizes (full run and ``--quick``) and its log line on stderr."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
    reps: int               # repetitions of every interleaved pair
    pgbench_seconds: int    # -T of each pgbench run
    catalog_roles: int      # catalog roles of the large instance (real NOLOGIN roles)
    users: int              # workspace users of the large instance
    groups: int             # groups of the large instance
    datatables: int         # data tables of the large instance
    first_use_ops: int      # new sets per repetition (ratio 4)
    connect_ops: int        # connections per repetition and kind (ratio 5)
    sweep_logins: int       # stale set logins swept (ratio 6), in `reps` sweeps
    sweep_cap_seconds: float  # longest one sweep may run (statement_timeout)
    touch_resolves: int = 10_000  # resolves of one login in one day (ratio 7)
    viewer_groups: int = 50
    viewer_folders: int = 20
    dir_users: int = 50_000   # platform-scale directory (ratios 11-12), in both databases
    dir_groups: int = 1_000
    dir_folders: int = 5_000
    scale_logins: int = 100_000     # extra set logins in the cluster (ratios 14a-14c)
    scale_sweep_logins: int = 100   # stale set logins swept per side of ratio 14b
    scale_clients: int = 32         # concurrent pgbench clients (ratio 14d)


FULL = Config(reps=5, pgbench_seconds=3, catalog_roles=10_000, users=100_000, groups=2_000,
              datatables=1_000, first_use_ops=40, connect_ops=20, sweep_logins=10_000,
              sweep_cap_seconds=10.0)
QUICK = Config(reps=3, pgbench_seconds=1, catalog_roles=1_000, users=10_000, groups=200,
               datatables=100, first_use_ops=10, connect_ops=6, sweep_logins=300,
               sweep_cap_seconds=1.5, dir_users=5_000, dir_groups=500, dir_folders=500,
               scale_logins=10_000, scale_sweep_logins=60)


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)
