"""Ratios 16a-16b: a data table on another server (docs/servers.md), against the same on
this cluster.

A second throwaway cluster (``DTR_SECOND_PG_BIN``'s programs, else the first's) runs beside
the first, with a manager login NOSUPERUSER CREATEROLE; the small instance registers it as
server ``b`` and puts data tables there shaped as its local ones:

- 16a: resolving an existing set login on a remote data table makes no remote call, so it
  should cost what the same resolve costs on a local one (target: within 10%);
- 16b: first use there makes the login over the manager session the worker's backend keeps
  open, so it should cost at most a local first use plus one round trip to the server
  (counted as a new connection and one statement: what reaching a server costs when
  nothing is kept; the first first use of a backend pays it). The note also gives one
  statement over the kept session, as the package runs it.
"""

from __future__ import annotations

import os
import secrets
import statistics
import time
import uuid

import psycopg
from psycopg import sql

from datatable_roles.client import Client
from datatable_roles.scram import scram_sha256_verifier

from ..devcluster import PG_BIN, Cluster
from .config import log
from .measure import Pgbench, Results, interleaved_tps, resolve_script
from .report import Row
from .world import World, connect

MANAGER = "bench_manager"


def start_second_server() -> tuple[Cluster, str]:
    c = Cluster(bin_dir=os.environ.get("DTR_SECOND_PG_BIN") or str(PG_BIN))
    c.start(build_template=False)
    password = secrets.token_urlsafe(24)
    with c.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE PASSWORD {}").format(
            sql.Identifier(MANAGER), sql.Literal(scram_sha256_verifier(password))))
        conn.execute(sql.SQL("GRANT pg_signal_backend TO {}").format(sql.Identifier(MANAGER)))
    return c, password


def build_remote(world: World, remote: Cluster, manager_password: str) -> tuple[list, str]:
    """On b, a database named as the small instance's local one, with the same orders
    table; data tables dt_far (shaped as dt_view) and dt_far_first / dt_near_first (no
    default; viewer qv<i> a tenant of exactly one pair of roles, on b and here). Returns the
    first-use jobs and the remote admin's conninfo."""
    inst, cfg = world.small, world.cfg
    admin, admin_pw = f"{world.tag}_far_admin", secrets.token_urlsafe(24)
    with remote.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(admin), sql.Literal(scram_sha256_verifier(admin_pw, 4096))))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(inst.dt_db), sql.Identifier(admin)))
    ops = cfg.first_use_ops * cfg.reps
    m = 2
    while m * (m - 1) // 2 < ops:
        m += 1
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m)][:ops]
    qroles = [f"{inst.prefix}q{i}" for i in range(m)]
    r = inst.roles
    jobs = []
    with Client(inst.owner_ci) as owner:
        owner.register_datatable_server("b", "127.0.0.1", remote.port, MANAGER, manager_password,
                                        sslmode="disable")
        for dt in ("dt_far", "dt_far_first"):
            owner.register_datatable("ws", dt, inst.dt_db, admin, admin_pw, server="b")
        owner.register_datatable("ws", "dt_near_first", inst.dt_db, inst.dt_admin,
                                 inst.dt_admin_password)
        for role, keys in ((r["def"], ["u/alice"]), (r["emea"], ["g/sales"]),
                           (r["us"], ["f/usf"])):
            owner.set_datatable_role_tenants("ws", "dt_far", role, keys)
        owner.set_datatable_default_role("ws", "dt_far", r["def"])
        for role in qroles:
            owner.create_datatable_role(role)
        tenants: dict[int, list[str]] = {i: [] for i in range(m)}
        for i, (a, b) in enumerate(pairs):
            owner.add_workspace_user("ws", f"qv{i}", f"qv{i}@example.com")
            tenants[a].append(f"u/qv{i}")
            tenants[b].append(f"u/qv{i}")
        for dt in ("dt_far_first", "dt_near_first"):
            owner.set_datatable_default_role("ws", dt, None)
            for i, role in enumerate(qroles):
                owner.set_datatable_role_tenants("ws", dt, role, tenants[i])
        for i in range(len(pairs)):
            job = str(uuid.uuid4())
            owner.record_job_start(job, "ws", "u/alice", "run", f"qv{i}@example.com")
            jobs.append(job)
    with psycopg.connect(remote.conninfo(admin, admin_pw, inst.dt_db, tcp=True),
                         autocommit=True) as conn:
        conn.execute("CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL)")
        conn.execute("INSERT INTO orders SELECT i, (array['emea','us','apac','latam'])"
                     "[i % 4 + 1] FROM generate_series(1, 1000) AS i")
    return jobs, remote.conninfo(MANAGER, manager_password, "postgres", tcp=True)


def measure_servers(world: World, pgbench: Pgbench, results: Results) -> None:
    cfg, inst = world.cfg, world.small
    remote, manager_password = start_second_server()
    try:
        jobs, manager_ci = build_remote(world, remote, manager_password)
        with remote.connect_super() as conn:
            (version,) = conn.execute("SHOW server_version").fetchone()
        # 16a: the set login {def, emea, us} exists on both (made here, not timed).
        with Client(inst.worker_ci) as worker:
            far = worker.resolve(inst.jobs["vera"], "dt_far")
            near = worker.resolve(inst.jobs["vera"], "dt_view")
            assert far.host == "127.0.0.1" and far.login != near.login, (far, near)
        tps = interleaved_tps(pgbench, {
            "near": (inst, resolve_script(inst.jobs["vera"], "dt_view")),
            "far": (inst, resolve_script(inst.jobs["vera"], "dt_far")),
        }, cfg, "servers")
        ratios = [n / f for n, f in zip(tps["near"], tps["far"])]
        results.rows.append(Row(
            "16a resolve, existing set login, data table on another server",
            "local-data-table resolve TPS / remote-data-table resolve TPS (viewer path, "
            "pgbench -M prepared -c 1, worker role): no remote call",
            cfg.reps, ratios, 1.1, False,
            note=f"per transaction: remote {1e6 / statistics.median(tps['far']):.0f} µs, "
                 f"local {1e6 / statistics.median(tps['near']):.0f} µs"))
        # 16b: first use there, against a local first use plus one round trip there.
        per = {"far": [], "near": [], "trip": [], "dblink": []}
        ratios = []
        with Client(inst.worker_ci) as worker, connect(inst.owner_ci) as owner:
            i = 0
            for _ in range(cfg.reps):
                t = dict.fromkeys(per, 0.0)
                for _ in range(cfg.first_use_ops):
                    for side in (("far", "near", "trip", "dblink") if i % 2 == 0
                                 else ("dblink", "trip", "near", "far")):
                        t0 = time.perf_counter()
                        if side == "trip":
                            with connect(manager_ci) as conn:
                                conn.execute("SELECT 1")
                        elif side == "dblink":  # one statement in the kept session
                            owner.execute("SELECT datatable_roles.exec_as_manager('b',"
                                          " 'SET datatable_roles.bench = 1')")
                        else:
                            res = worker.resolve(jobs[i], f"dt_{side}_first")
                            assert res.kind == "set", res
                        t[side] += time.perf_counter() - t0
                    i += 1
                ratios.append(t["far"] / (t["near"] + t["trip"]))
                for k in per:
                    per[k].append(t[k] / cfg.first_use_ops * 1000)
        results.rows.append(Row(
            "16b first use of a new set, data table on another server",
            "resolve making a 2-role set login there / (the same here + a new connection "
            "to that server and one statement), per op, one connection each",
            cfg.reps, ratios, 1.0, False,
            note=f"per op: remote {statistics.median(per['far']):.2f} ms, local "
                 f"{statistics.median(per['near']):.2f} ms, round trip "
                 f"{statistics.median(per['trip']):.2f} ms; one statement in the manager "
                 f"session the package keeps there: {statistics.median(per['dblink']):.2f} ms"))
        results.notes.append(f"16: the second server is PostgreSQL {version} on this machine "
                             "(127.0.0.1, no TLS).")
        log("servers: " + ", ".join(f"{k} {statistics.median(v):.2f} ms"
                                    for k, v in per.items()))
    finally:
        remote.stop()
