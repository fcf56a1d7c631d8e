"""The bench's figures for what the hostile-scripts work added (docs/trust.md): the heal check
a resolve makes before handing out a login, rotation by the sweep, and the sweep of logins
whose objects are made inert (quarantine) before they pass to the admin login. Each is timed
against a bare operation of the same shape in the same run, interleaved."""

from __future__ import annotations

import secrets
import statistics
import time

from psycopg import sql

from datatable_roles.client import Client
from datatable_roles.scram import scram_sha256_verifier

from .config import log
from .measure import Results
from .report import Row
from .world import World, connect, map_on_database

HEAL_CALLS = 2_000


def measure_heal_check(world: World, results: Results) -> None:
    """8: datatable_roles.login_intact (the login's attributes and settings, as any role may
    read them), the check a resolve makes on every hand-out, against
    reading the login's row alone; HEAL_CALLS prepared calls each, one owner connection."""
    inst = world.small
    login = world.resolve_login(inst, "vera")
    check = ("SELECT EXISTS (SELECT FROM datatable_roles.login_intact(s.login, s.dbname))"
             " FROM datatable_roles.datatable_role_set AS s WHERE s.login = %s")
    bare = "SELECT s.verifier FROM datatable_roles.datatable_role_set AS s WHERE s.login = %s"
    ratios, per_a, per_b = [], [], []
    with connect(inst.owner_ci) as conn:
        if conn.execute(check, [login]).fetchone() != (True,):
            raise RuntimeError(f"{login} is not intact")
        for rep in range(world.cfg.reps):
            times = {}
            for q in ((check, bare) if rep % 2 == 0 else (bare, check)):
                t0 = time.perf_counter()
                for _ in range(HEAL_CALLS):
                    conn.execute(q, [login], prepare=True).fetchone()
                times[q] = time.perf_counter() - t0
            ratios.append(times[check] / times[bare])
            per_a.append(times[check] / HEAL_CALLS * 1e6)
            per_b.append(times[bare] / HEAL_CALLS * 1e6)
    results.rows.append(Row(
        "8  heal check of a login before it is handed out",
        "login_intact(login) per call / reading the login's row alone (prepared, one owner "
        "connection)", world.cfg.reps, ratios, 3.0, False,
        note=f"per call: {statistics.median(per_a):.0f} µs vs {statistics.median(per_b):.0f} µs"))


def one_role_logins(world: World, conn, count: int, offset: int) -> list[str]:
    """`count` one-role logins on the data table database, made by ensure_set_login over
    the large instance's bulk catalog roles (from the end, apart from the sweep's pairs)."""
    client = Client(conn)
    ids = [r[0] for r in conn.execute(
        "SELECT r.id FROM datatable_roles.catalog_role AS r WHERE r.name LIKE %s"
        " ORDER BY r.id DESC OFFSET %s LIMIT %s", [world.large.prefix + "bulk%", offset, count])]
    map_on_database(conn, world.dt_db, ids)
    return [client.ensure_set_login(world.dt_db, [i]) for i in ids]


def measure_rotation(world: World, results: Results) -> None:
    """9: the sweep rotating live logins whose password is older than rotate_every, per
    login, against a bare ALTER ROLE .. PASSWORD '<SCRAM verifier>' + COMMIT per role."""
    cfg = world.cfg
    n = max(cfg.sweep_logins // 50, 20)
    verifier = scram_sha256_verifier(secrets.token_hex(16), 16)
    bare = [f"{world.tag}_bare_rot_{k}" for k in range(n)]
    ratios, per_a, per_b = [], [], []
    with connect(world.large.owner_ci) as owner, connect(world.c.superuser_conninfo()) as su:
        logins = one_role_logins(world, owner, n, 0)
        for b in bare:
            su.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(b), sql.Literal(verifier)))
        client = Client(owner)
        for rep in range(cfg.reps):
            # Only these logins are due: every other live login was rotated "in the future".
            now = client.clock_now()
            owner.execute("UPDATE datatable_roles.datatable_role_set SET rotated_at ="
                          " CASE WHEN login = ANY(%s) THEN %s - interval '2 days'"
                          " ELSE %s + interval '1000 days' END", [logins, now, now])
            t0 = time.perf_counter()
            report = client.sweep(unused_for="100000 days")
            ta = time.perf_counter() - t0
            if report["rotated"] != n or report["dropped"] != 0:
                raise RuntimeError(f"rotation sweep: {report}")
            t0 = time.perf_counter()
            su.execute(sql.SQL(
                "DO $$ DECLARE r text; BEGIN FOREACH r IN ARRAY {}::text[] LOOP"
                " EXECUTE format('ALTER ROLE %I PASSWORD %L', r, {}); COMMIT; END LOOP; END $$"
            ).format(sql.Literal(bare), sql.Literal(verifier)))
            tb = time.perf_counter() - t0
            ratios.append(ta / tb)
            per_a.append(ta / n * 1000)
            per_b.append(tb / n * 1000)
            log(f"rotation {rep + 1}/{cfg.reps}: {n} logins in {ta:.2f}s")
        for b in bare:
            su.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(b)))
    results.rows.append(Row(
        f"9  rotation of {n} live logins by the sweep",
        "sweep time per login rotated / bare ALTER ROLE .. PASSWORD '<SCRAM>' + COMMIT",
        cfg.reps, ratios, 3.0, False,
        note=f"per login: {statistics.median(per_a):.2f} ms vs {statistics.median(per_b):.3f} ms"))


OBJECTS = ("CREATE TABLE {t} (id integer PRIMARY KEY, note text);"
           " INSERT INTO {t} VALUES (1, 'kept');"
           " CREATE VIEW {v} AS SELECT * FROM {t};"
           " CREATE FUNCTION {f}() RETURNS integer LANGUAGE sql SECURITY DEFINER AS 'SELECT 1';"
           " GRANT SELECT ON {v} TO PUBLIC")


def plant(su_dt, role: str, k: int, tag: str) -> None:
    """As `role` (SET ROLE, superuser session in the data table database): a table with a
    row, a view on it granted to PUBLIC, and a SECURITY DEFINER function."""
    names = {x: sql.Identifier(f"{tag}_{x}{k}") for x in "tvf"}
    su_dt.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    su_dt.execute(sql.SQL(OBJECTS).format(**names))
    su_dt.execute("RESET ROLE")


def measure_quarantine_sweep(world: World, results: Results) -> None:
    """10: the sweep of stale logins that each own a table, a view granted to PUBLIC and a
    SECURITY DEFINER function, made inert and passed to the admin login, per login, against
    a bare REASSIGN OWNED + DROP OWNED + DROP ROLE (+ COMMIT) of roles owning the same."""
    cfg = world.cfg
    n = max(cfg.sweep_logins // 50, 20)
    verifier = scram_sha256_verifier(secrets.token_hex(16), 16)
    ratios, per_a, per_b = [], [], []
    with connect(world.large.owner_ci) as owner, \
            connect(world.c.superuser_conninfo(world.dt_db)) as su_dt:
        client = Client(owner)
        su_dt.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")
        for rep in range(cfg.reps):
            logins = one_role_logins(world, owner, n, n * (rep + 1))
            bare = [f"{world.tag}_bare_q{rep}_{k}" for k in range(n)]
            for k, (login, b) in enumerate(zip(logins, bare)):
                su_dt.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(b), sql.Literal(verifier)))
                plant(su_dt, login, k, f"{world.tag}q{rep}l")
                plant(su_dt, b, k, f"{world.tag}q{rep}b")
            now = client.clock_now()
            owner.execute("UPDATE datatable_roles.datatable_role_set SET last_used_at ="
                          " CASE WHEN login = ANY(%s) THEN %s - interval '40 days'"
                          " ELSE %s + interval '1000 days' END,"
                          " rotated_at = %s + interval '1000 days'", [logins, now, now, now])
            t0 = time.perf_counter()
            report = client.sweep()
            ta = time.perf_counter() - t0
            if report["dropped"] != n or report["unfinished"]:
                raise RuntimeError(f"quarantine sweep: {report}")
            t0 = time.perf_counter()
            su_dt.execute(sql.SQL(
                "DO $$ DECLARE r text; BEGIN FOREACH r IN ARRAY {}::text[] LOOP"
                " EXECUTE format('REASSIGN OWNED BY %1$I TO %2$I; DROP OWNED BY %1$I;"
                " DROP ROLE %1$I', r, {}); COMMIT; END LOOP; END $$").format(
                    sql.Literal(bare), sql.Literal(world.dt_admin)))
            tb = time.perf_counter() - t0
            ratios.append(ta / tb)
            per_a.append(ta / n * 1000)
            per_b.append(tb / n * 1000)
            log(f"quarantine sweep {rep + 1}/{cfg.reps}: {n} logins in {ta:.2f}s")
        su_dt.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    results.rows.append(Row(
        f"10 sweep of {n} stale logins owning objects (made inert, then moved)",
        "sweep time per login / bare REASSIGN OWNED + DROP OWNED + DROP ROLE + COMMIT",
        cfg.reps, ratios, 3.0, False,
        note=f"per login: {statistics.median(per_a):.2f} ms vs {statistics.median(per_b):.3f} ms"))
