"""Ratio 13: a job's whole connection path through PgBouncer against the same path direct to
PostgreSQL, and the check that a set login made after PgBouncer started connects through it
with no reload (docs/operating.md, "PgBouncer"; docs/performance.md, "PgBouncer").

PgBouncer (pgbouncer.py: a real process, transaction pooling, ``auth_type = scram-sha-256``,
``auth_query`` through ``datatable_roles_pgbouncer.lookup``) runs in front of the small
instance's data table database, after the superuser step sql/pgbouncer-auth.sql there.
"""

from __future__ import annotations

import statistics
import time

import psycopg

from datatable_roles.client import Client

from ..pgbouncer import PgBouncer, create_auth_user, install_auth, pgbouncer_version
from .config import log
from .report import Row
from .world import World, connect

RLS_QUERY = "SELECT count(*) FROM orders"

# Target of ratio 13: at most 1.0x. PgBouncer is worth putting in front of a data table
# database only if the path a job takes through it is no slower than connecting directly.
# Both sides do the same resolve and the same SCRAM exchange (client to PgBouncer, or client
# to PostgreSQL); through PgBouncer the server's side is a pooled backend, so the fork and
# start of a backend per job is saved, and one auth_query (a plain function call on a pooled
# connection) is added. Anything above 1.0x means the pooler costs jobs time.
TARGET = 1.0


def _count(conninfo: str) -> int:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return conn.execute(RLS_QUERY).fetchone()[0]


def measure_pgbouncer(world: World, results) -> None:
    """Ratio 13: resolve + connect through PgBouncer (TCP, SCRAM, transaction pooling) +
    ``SELECT count(*) FROM orders`` under RLS / resolve + connect direct to PostgreSQL (TCP,
    SCRAM) + the same query; fresh connections, interleaved, ``cfg.connect_ops`` of each per
    repetition, ``cfg.reps`` repetitions. Before that, a set login made after PgBouncer
    started must connect through it with no reload and see the rows its role may see:
    RuntimeError otherwise."""
    cfg, c, inst = world.cfg, world.c, world.small
    auth_user = f"{world.tag}_pgbouncer"
    auth_password = create_auth_user(c, auth_user)
    install_auth(c, inst.dt_db, auth_user)
    version = pgbouncer_version()
    with PgBouncer(c, [inst.dt_db], auth_user, auth_password) as bouncer:
        no_reload = _new_login_without_reload(world, bouncer)
        log(f"PgBouncer {version} on port {bouncer.port}: {no_reload}")

        def through(res) -> int:
            return _count(bouncer.conninfo(res.login, res.password, res.dbname))

        def direct(res) -> int:
            return _count(c.conninfo(res.login, res.password, res.dbname, tcp=True))

        ratios, per_a, per_b = [], [], []
        with Client(inst.worker_ci) as worker:
            job = inst.jobs["vera"]
            res = worker.resolve(job, "dt_view")
            expected = direct(res)
            if not 0 < expected < 1000 or through(res) != expected:
                raise RuntimeError(f"RLS counts differ or look wrong: direct {expected}, "
                                   f"through PgBouncer {through(res)}")
            for rep in range(cfg.reps):
                t = [0.0, 0.0]
                for op in range(cfg.connect_ops):
                    for side in ((0, 1) if op % 2 == 0 else (1, 0)):
                        t0 = time.perf_counter()
                        res = worker.resolve(job, "dt_view")
                        n = through(res) if side == 0 else direct(res)
                        t[side] += time.perf_counter() - t0
                        if n != expected:
                            raise RuntimeError(f"counted {n} rows, expected {expected}")
                ratios.append(t[0] / t[1])
                per_a.append(t[0] / cfg.connect_ops * 1000)
                per_b.append(t[1] / cfg.connect_ops * 1000)
                log(f"PgBouncer repetition {rep + 1}/{cfg.reps}: {per_a[-1]:.2f} ms through "
                    f"PgBouncer, {per_b[-1]:.2f} ms direct")
    results.rows.append(Row(
        "13 resolve + connect + query through PgBouncer",
        "resolve + connect through PgBouncer (TCP, SCRAM via auth_query, pool_mode = "
        "transaction) + `SELECT count(*) FROM orders` under RLS / resolve + connect direct "
        "to PostgreSQL (TCP, SCRAM) + the same query; fresh connections",
        cfg.reps, ratios, TARGET, False,
        note=(f"per op: {statistics.median(per_a):.2f} ms vs {statistics.median(per_b):.2f} ms;"
              f" PgBouncer {version}; {no_reload}")))


def _new_login_without_reload(world: World, bouncer: PgBouncer) -> str:
    """A data table registered now (dt_pgbouncer: default role a new catalog role allowed the
    latam region) on the instance's database, so that vera's job resolves to a set login that
    did not exist when PgBouncer started; it must connect through PgBouncer at once and count
    the latam rows, as it does directly. Returns the check's sentence."""
    c, inst = world.c, world.small
    role = f"{inst.prefix}pgb"
    with Client(inst.owner_ci) as owner:
        owner.create_datatable_role(role)
        owner.register_datatable("ws", "dt_pgbouncer", inst.dt_db, inst.dt_admin,
                                 inst.dt_admin_password)
        owner.set_datatable_role_tenants("ws", "dt_pgbouncer", role, ["u/alice"])
        owner.set_datatable_default_role("ws", "dt_pgbouncer", role)
    world.allow_region(inst, role, "latam")
    with connect(inst.super_ci) as conn:
        before = {r for (r,) in conn.execute(
            "SELECT rolname FROM pg_roles WHERE rolname LIKE 'wm\\_set\\_%'")}
    ini = bouncer.ini_path.read_text()
    with Client(inst.worker_ci) as worker:
        res = worker.resolve(inst.jobs["vera"], "dt_pgbouncer")
    if list(res.roles) != [role] or res.login in before:
        raise RuntimeError(f"dt_pgbouncer resolved {res.roles} to {res.login}: "
                           "expected a new login of the one new role")
    direct = _count(c.conninfo(res.login, res.password, res.dbname, tcp=True))
    try:
        through = _count(bouncer.conninfo(res.login, res.password, res.dbname))
    except psycopg.OperationalError as e:
        raise RuntimeError(f"a set login made after PgBouncer started did not connect "
                           f"through it: {e}\n{bouncer.log_tail()}") from e
    if through != direct or direct == 0 or bouncer.ini_path.read_text() != ini:
        raise RuntimeError(f"new set login through PgBouncer counted {through} rows, "
                           f"directly {direct}")
    return (f"a set login made after PgBouncer started connected through it with no reload "
            f"and counted its {through} rows: verified")
