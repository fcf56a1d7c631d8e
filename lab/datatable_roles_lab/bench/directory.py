"""The bench's figures at platform scale (issue 12, "Speed at platform scale"): the directory
read through the Windmill adapter (sql/directory/windmill.sql, over Windmill's own tables)
against the package's built-in tables, with the same directory in both.

Two metadata databases cloned from the template (Cluster.clone_metadata_database), holding the
same directory (``cfg.dir_users`` users, ``cfg.dir_groups`` groups, ``cfg.dir_folders``
folders, the viewer in ``cfg.viewer_groups`` groups):

- ``built-in``: the package's workspace, workspace_user, group_member and folder_access,
  bulk-loaded as the owner with INSERT ... SELECT generate_series;
- ``windmill``: Windmill's tables (tests/windmill/windmill_schema.sql: workspace, group_, usr,
  usr_to_group, folder) bulk-loaded by the superuser from the same SELECTs, after
  sql/windmill-grants.sql and ``migrate(directory="windmill")``, as tests/support.py's
  windmill_meta_db installs it.

Windmill puts every user in group ``all``; the built-in directory gets the same memberships,
so that both give the same tenant keys (checked: the viewer's member_keys are equal). Both
instances register one data table each on one shared data table database.

11: resolve, viewer path (no default role, a map of catalog roles whose tenant lists mix g/,
    f/ and u/ keys), measured as row 2 is: pgbench -M prepared as the worker, interleaved.
12: record_job_start (an identity in ``cfg.viewer_groups`` groups, origin run) against a plain
    INSERT of a job row of the same values (a table LIKE job_perms INCLUDING ALL), in each
    database, every call with a new job id (gen_random_uuid()).
"""

from __future__ import annotations

import statistics
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

from datatable_roles.client import Client
from datatable_roles.migrate import SQL_DIR, migrate

from .config import log
from .measure import Pgbench, Results, interleaved_tps
from .report import Row
from .world import Instance, World, connect

WINDMILL_SCHEMA = (Path(__file__).resolve().parents[3] / "tests" / "windmill"
                   / "windmill_schema.sql")
WS = "ws"
VIEWER = "vera"
VIEWER_EMAIL = "vera@example.com"
IDENTITY = "u1"                 # row 11's job identity (a plain user; the default is no role)
CALLER = "u2@example.com"      # row 12's caller (the job's viewer)

# The directory, as rows, the same for both databases. Parameters: users, groups, folders,
# vgroups (the viewer's groups). Every user is in group `all` (as in Windmill).
USERS = ("SELECT 'u' || i AS username, 'u' || i || '@example.com' AS email"
         " FROM generate_series(1, %(users)s) AS i"
         " UNION ALL SELECT 'vera', 'vera@example.com'")
# Every user in three groups, the viewer in grp0 .. grp<vgroups - 1>, everyone in `all`.
MEMBERS = ("SELECT DISTINCT 'grp' || ((i * 7 + k * 131) %% %(groups)s) AS group_name,"
           " 'u' || i AS username"
           " FROM generate_series(1, %(users)s) AS i, generate_series(0, 2) AS k"
           " UNION ALL SELECT 'grp' || g, 'vera' FROM generate_series(0, %(vgroups)s - 1) AS g"
           " UNION ALL SELECT 'all', u.username FROM (" + USERS + ") AS u")
# Each folder owned by one user (one in 500 by the viewer), and 1-3 more grants (write for the
# first, read for the others), two in three to a group, the others to a user.
GRANTS = ("SELECT 'fld' || i AS folder,"
          " CASE WHEN i %% 500 = 0 THEN 'u/vera' ELSE 'u/u' || (i * 37 %% %(users)s + 1) END"
          " AS principal, 'owner' AS access"
          " FROM generate_series(1, %(folders)s) AS i"
          " UNION ALL SELECT 'fld' || i,"
          " CASE WHEN (i + j) %% 3 = 0 THEN 'u/u' || ((i * 13 + j) %% %(users)s + 1)"
          " ELSE 'g/grp' || ((i * 31 + j * 17) %% %(groups)s) END,"
          " CASE WHEN j = 0 THEN 'write' ELSE 'read' END"
          " FROM generate_series(1, %(folders)s) AS i, generate_series(0, i %% 3) AS j")


def dir_params(cfg) -> dict[str, int]:
    return {"users": cfg.dir_users, "groups": cfg.dir_groups, "folders": cfg.dir_folders,
            "vgroups": cfg.viewer_groups}


def new_instance(world: World, label: str) -> Instance:
    c = world.c
    name = f"{world.tag}_dir_{label}"
    c.clone_metadata_database(name)
    return Instance(name=name, prefix=f"{world.tag}d{label[0]}_",
                    owner_ci=c.owner_conninfo(name), worker_ci=c.worker_conninfo(name),
                    super_ci=c.superuser_conninfo(name))


def load_builtin(inst: Instance, params: dict[str, int]) -> None:
    with connect(inst.owner_ci) as conn, conn.transaction():
        conn.execute("INSERT INTO datatable_roles.workspace (name) VALUES (%s)", [WS])
        conn.execute("INSERT INTO datatable_roles.workspace_user (workspace, username, email)"
                     " SELECT 'ws', u.username, u.email FROM (" + USERS + ") AS u", params)
        conn.execute("INSERT INTO datatable_roles.group_member (workspace, group_name, username)"
                     " SELECT 'ws', m.group_name, m.username FROM (" + MEMBERS + ") AS m",
                     params)
        conn.execute("INSERT INTO datatable_roles.folder_access (workspace, folder, principal,"
                     " access) SELECT 'ws', g.folder, g.principal, g.access"
                     " FROM (" + GRANTS + ") AS g ON CONFLICT DO NOTHING", params)
    with connect(inst.owner_ci) as conn:
        for table in ("workspace", "workspace_user", "group_member", "folder_access"):
            conn.execute(sql.SQL("VACUUM ANALYZE datatable_roles.{}").format(
                sql.Identifier(table)))


def install_windmill(world: World, inst: Instance) -> None:
    """Windmill's tables, the grants, then the adapter (tests/support.py windmill_meta_db)."""
    c = world.c
    with connect(inst.super_ci) as conn:
        conn.execute("DO $$ BEGIN"
                     " IF to_regrole('windmill_user') IS NULL THEN CREATE ROLE windmill_user;"
                     " END IF;"
                     " IF to_regrole('windmill_admin') IS NULL THEN CREATE ROLE windmill_admin;"
                     " END IF; END $$")
    c.psql_file(WINDMILL_SCHEMA, inst.name)
    c.psql_file(SQL_DIR / "windmill-grants.sql", inst.name, owner=c.owner)
    migrate(inst.owner_ci, directory="windmill")


def load_windmill(inst: Instance, params: dict[str, int]) -> None:
    with connect(inst.super_ci) as conn, conn.transaction():
        conn.execute("INSERT INTO public.workspace (id, name, owner) VALUES (%s, %s, 'admin')",
                     [WS, WS])
        conn.execute("INSERT INTO public.group_ (workspace_id, name)"
                     " SELECT 'ws', 'grp' || g FROM generate_series(0, %(groups)s - 1) AS g"
                     " UNION ALL SELECT 'ws', 'all'", params)
        conn.execute("INSERT INTO public.usr (workspace_id, username, email)"
                     " SELECT 'ws', u.username, u.email FROM (" + USERS + ") AS u", params)
        conn.execute("INSERT INTO public.usr_to_group (workspace_id, group_, usr)"
                     " SELECT 'ws', m.group_name, m.username FROM (" + MEMBERS + ") AS m",
                     params)
        conn.execute(
            "INSERT INTO public.folder (workspace_id, name, display_name, owners, extra_perms)"
            " SELECT 'ws', g.folder, g.folder,"
            " array_agg(g.principal) FILTER (WHERE g.access = 'owner')::varchar[],"
            " coalesce(jsonb_object_agg(g.principal, g.access = 'write')"
            "  FILTER (WHERE g.access <> 'owner'), '{}')"
            " FROM (" + GRANTS + ") AS g GROUP BY g.folder", params)
    with connect(inst.super_ci) as conn:
        for table in ("workspace", "group_", "usr", "usr_to_group", "folder"):
            # VACUUM too: it empties the GIN indexes' pending lists (folder's owners and
            # extra_perms), as autovacuum would have long since; a plain ANALYZE does not.
            conn.execute(sql.SQL("VACUUM ANALYZE public.{}").format(sql.Identifier(table)))


def pick_keys(cfg, viewer_keys: list[str]) -> tuple[list[list[str]], set[int]]:
    """The role map of ratio 11: tenant lists mixing g/, f/ and u/ keys; the indexes of the
    roles whose lists name the viewer (by a group, a folder reached through a group, its u/
    key, and a group after a folder it does not reach)."""
    reached = {k[2:] for k in viewer_keys if k.startswith("f/")}
    # Folders with four grants (owner + three), reached through a group only, or not at all.
    via_group = [f"fld{i}" for i in range(2, cfg.dir_folders + 1, 3)
                 if f"fld{i}" in reached and i % 500 != 0]
    missed = [f"fld{i}" for i in range(2, cfg.dir_folders + 1, 3) if f"fld{i}" not in reached]
    if not via_group or len(missed) < 6:
        raise RuntimeError(f"directory too small for ratio 11: {len(reached)} folders reached")
    g = cfg.dir_groups
    other = [f"g/grp{g - 1 - k}" for k in range(7)]      # groups the viewer is not in
    tenants = [
        [f"f/{missed[0]}", other[0], "u/u2"],
        ["g/grp10", "u/u3"],                                   # the viewer, by a group
        [f"f/{via_group[len(via_group) // 2]}", other[1]],     # by a folder
        [f"u/{VIEWER}", f"f/{missed[1]}"],                     # by its u/ key
        [f"f/{missed[2]}", f"f/{missed[3]}", other[2], other[3], "u/u4"],
        [other[4], "u/u5"],
        [f"f/{missed[4]}", "g/grp30"],                         # by a group, after a folder
        [f"f/{missed[5]}", other[5], other[6], "u/u6"],
    ]
    return tenants, {1, 2, 3, 6}


def setup_datatable(inst: Instance, dt_db: str, dt_admin: str, dt_password: str,
                    tenants: list[list[str]]) -> tuple[str, list[str]]:
    """Catalog roles, the data table (no default) and its role map; a job for the viewer,
    resolved once (the set login made). Returns the job id and the role names."""
    roles = [f"{inst.prefix}r{k}" for k in range(len(tenants))]
    job = str(uuid.uuid4())
    with Client(inst.owner_ci) as owner:
        for role in roles:
            owner.create_datatable_role(role)
        owner.register_datatable(WS, "dt_dir", dt_db, dt_admin, dt_password)
        for role, keys in zip(roles, tenants):
            owner.set_datatable_role_tenants(WS, "dt_dir", role, keys)
        owner.set_datatable_default_role(WS, "dt_dir", None)
        owner.record_job_start(job, WS, f"u/{IDENTITY}", "run", VIEWER_EMAIL)
    return job, roles


def job_row_table(world: World, inst: Instance, conn: psycopg.Connection) -> str:
    """The baseline of ratio 12: a table like job_perms (its keys and defaults) that the
    worker may insert into, and the INSERT of one job row of the values record_job_start
    writes for the identity (a new job id each)."""
    conn.execute("CREATE SCHEMA bench")
    conn.execute("CREATE TABLE bench.job_row (LIKE datatable_roles.job_perms INCLUDING ALL)")
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA bench TO {}").format(
        sql.Identifier(world.c.worker)))
    conn.execute(sql.SQL("GRANT INSERT ON bench.job_row TO {}").format(
        sql.Identifier(world.c.worker)))
    with Client(inst.owner_ci) as owner:
        job = str(uuid.uuid4())
        owner.record_job_start(job, WS, f"u/{VIEWER}", "run", CALLER)
    row = conn.execute("SELECT email, is_admin, groups, folders FROM datatable_roles.job_perms"
                       " WHERE job_id = %s", [job]).fetchone()
    return sql.SQL(
        "INSERT INTO bench.job_row (job_id, workspace, permissioned_as, email, is_admin,"
        " groups, folders, end_user_email, origin) VALUES (gen_random_uuid(), {}, {}, {}, {},"
        " {}::text[], {}::text[], {}, 'run');").format(
            sql.Literal(WS), sql.Literal(f"u/{VIEWER}"), sql.Literal(row[0]),
            sql.Literal(row[1]), sql.Literal(row[2]), sql.Literal(row[3]),
            sql.Literal(CALLER)).as_string(conn)


def measure_directory(world: World, pgbench: Pgbench, results: Results) -> None:
    """Ratios 11 and 12 (see the module doc)."""
    cfg, c = world.cfg, world.c
    if not WINDMILL_SCHEMA.is_file():
        results.notes.append(f"11-12: not measured: {WINDMILL_SCHEMA} is missing (Windmill's "
                             "table shapes ship with the repository's tests, not the package).")
        return
    t0 = time.monotonic()
    params = dir_params(cfg)
    builtin = new_instance(world, "builtin")
    windmill = new_instance(world, "windmill")
    install_windmill(world, windmill)
    load_builtin(builtin, params)
    load_windmill(windmill, params)

    keys = {}
    for inst in (builtin, windmill):
        with Client(inst.owner_ci) as owner:
            keys[inst.name] = owner.member_keys(WS, VIEWER)
    if keys[builtin.name] != keys[windmill.name]:
        raise RuntimeError("the two directories differ: the viewer's keys are "
                           f"{len(keys[builtin.name])} vs {len(keys[windmill.name])}")
    viewer_keys = keys[builtin.name]
    n_groups = sum(1 for k in viewer_keys if k.startswith("g/"))
    n_folders = sum(1 for k in viewer_keys if k.startswith("f/"))
    tenants, names_viewer = pick_keys(cfg, viewer_keys)

    dt_db, dt_admin = f"{world.tag}_dirdt", f"{world.tag}_dirdt_admin"
    dt_password = c.create_datatable_database(dt_db, dt_admin)
    jobs, scripts_12 = {}, {}
    for inst in (builtin, windmill):
        job, roles = setup_datatable(inst, dt_db, dt_admin, dt_password, tenants)
        jobs[inst.name] = job
        with Client(inst.worker_ci) as worker:
            res = worker.resolve(job, "dt_dir")
        want = sorted(roles[k] for k in names_viewer)
        if res.kind != "set" or sorted(res.roles) != want:
            raise RuntimeError(f"{inst.name}: dt_dir resolved to {res}, expected {want}")
        with connect(inst.super_ci) as conn:
            scripts_12[inst.name] = job_row_table(world, inst, conn)
    with connect(builtin.owner_ci) as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM datatable_roles.workspace_user),"
            " (SELECT count(DISTINCT group_name) FROM datatable_roles.group_member),"
            " (SELECT count(*) FROM datatable_roles.group_member),"
            " (SELECT count(DISTINCT folder) FROM datatable_roles.folder_access),"
            " (SELECT count(*) FROM datatable_roles.folder_access)").fetchone()
    summary = (f"{counts[0]:,} users, {counts[1]:,} groups (with `all`), {counts[2]:,} "
               f"memberships, {counts[3]:,} folders with {counts[4]:,} grants (owner + 1-3 "
               f"extra_perms each); the viewer is in {n_groups} groups (with `all`) and reaches "
               f"{n_folders} folders")
    log(f"platform-scale directories built in {time.monotonic() - t0:.1f}s: {summary}")

    rjs = f"SELECT record_job_start(gen_random_uuid(), 'ws', 'u/{VIEWER}', 'run', '{CALLER}');"
    scripts = {
        "b_resolve": (builtin, f"SELECT * FROM resolve_datatable_role("
                               f"'{jobs[builtin.name]}'::uuid, 'dt_dir');"),
        "w_resolve": (windmill, f"SELECT * FROM resolve_datatable_role("
                                f"'{jobs[windmill.name]}'::uuid, 'dt_dir');"),
        "b_record": (builtin, rjs),
        "b_insert": (builtin, scripts_12[builtin.name]),
        "w_record": (windmill, rjs),
        "w_insert": (windmill, scripts_12[windmill.name]),
    }
    tps = interleaved_tps(pgbench, scripts, cfg, "directory pgbench")

    def ratio(a: str, b: str) -> list[float]:  # time of b / time of a
        return [x / y for x, y in zip(tps[a], tps[b])]

    def per_call(k: str) -> str:
        return f"{1e6 / statistics.median(tps[k]):,.0f} µs"

    run = f"pgbench -M prepared -c 1 -T {cfg.pgbench_seconds}, worker role"
    results.rows += [
        Row("11 resolve, viewer path, Windmill adapter vs built-in directory",
            f"resolve time through the Windmill adapter / through the built-in tables "
            f"(same directory; {run})", cfg.reps, ratio("b_resolve", "w_resolve"), 1.2, False,
            note=f"per resolve: {per_call('w_resolve')} vs {per_call('b_resolve')}"),
        Row("12a record_job_start, built-in directory",
            f"record_job_start time / plain INSERT of the same job row ({run})",
            cfg.reps, ratio("b_insert", "b_record"), 3.0, False,
            note=f"per call: {per_call('b_record')} vs {per_call('b_insert')}"),
        Row("12b record_job_start, Windmill adapter",
            f"record_job_start time / plain INSERT of the same job row ({run})",
            cfg.reps, ratio("w_insert", "w_record"), 3.0, False,
            note=f"per call: {per_call('w_record')} vs {per_call('w_insert')}"),
    ]
    results.notes.append(
        f"11-12: two metadata databases with the same directory: {summary}. The built-in one "
        "bulk-loaded as the owner (workspace_user, group_member, folder_access), the Windmill "
        "one by the superuser into Windmill's tables (workspace, group_, usr, usr_to_group, "
        "folder: owners and extra_perms) after sql/windmill-grants.sql and migrate "
        "--directory windmill; both VACUUM ANALYZEd; the viewer's member_keys are equal in both. "
        f"11: data table with no default and {len(tenants)} catalog roles whose tenant lists "
        f"mix g/, f/ and u/ keys, {len(names_viewer)} naming the viewer (a {len(names_viewer)}"
        f"-role set login, made before timing); the job's identity is u/{IDENTITY}. "
        f"12: identity u/{VIEWER}, origin run, caller {CALLER}, a new gen_random_uuid() job id "
        "per call; the baseline inserts the same values into bench.job_row (LIKE job_perms "
        "INCLUDING ALL). Median TPS: "
        + ", ".join(f"{k} {statistics.median(v):,.0f}" for k, v in tps.items()))
