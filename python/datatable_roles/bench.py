"""`make bench`: the speed ratios of SPEC section 14, measured in one run on one cluster.

    python -m datatable_roles.bench [--quick] [--attach]

Starts a throwaway cluster (devcluster.Cluster), builds two metadata databases (a small
directory and a large one) and one data table database, then measures each figure as a ratio
of two things timed in the same run, interleaved (A, B, A, B, ...) over several repetitions,
and prints one table: the median ratio, its spread (min-max over the repetitions), the target
and whether it is met. ``--quick`` is a smaller version (a smoke test, under a minute).
``--attach`` uses the cluster of an enclosing ``devcluster run`` instead (for development).

The exit status is 0 whatever the figures are; it is non-zero only when the bench could not run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from .devcluster import PG_BIN, Cluster
from .scram import scram_sha256_verifier

PGBENCH = PG_BIN / "pgbench"


@dataclass(frozen=True)
class Config:
    reps: int               # repetitions of every interleaved pair
    pgbench_seconds: int    # -T of each pgbench run
    catalog_roles: int      # catalog roles of the large instance (real logins)
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


FULL = Config(reps=5, pgbench_seconds=3, catalog_roles=10_000, users=100_000, groups=2_000,
              datatables=1_000, first_use_ops=40, connect_ops=20, sweep_logins=10_000,
              sweep_cap_seconds=10.0)
QUICK = Config(reps=3, pgbench_seconds=1, catalog_roles=1_000, users=10_000, groups=200,
               datatables=100, first_use_ops=10, connect_ops=6, sweep_logins=300,
               sweep_cap_seconds=1.5)


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


@dataclass
class Row:
    label: str
    compares: str
    reps: int
    values: list[float]
    target: float
    higher_is_better: bool
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def met(self) -> bool:
        m = self.median
        return m >= self.target if self.higher_is_better else m <= self.target


@dataclass
class Instance:
    """One metadata database with the bench's setups."""

    name: str
    prefix: str          # prefix of its catalog role names (roles are cluster-wide)
    owner_ci: str
    worker_ci: str
    super_ci: str
    roles: dict[str, str] = field(default_factory=dict)   # short name -> role name
    jobs: dict[str, str] = field(default_factory=dict)    # short name -> job id


class Bench:
    def __init__(self, cluster: Cluster, cfg: Config, quick: bool):
        self.c = cluster
        self.cfg = cfg
        self.quick = quick
        self.tag = "b" + secrets.token_hex(3)  # unique names, also on an attached cluster
        self.rows: list[Row] = []
        self.notes: list[str] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="dtr-bench-"))

    # ---- connections ---------------------------------------------------------------------

    def connect(self, conninfo: str) -> psycopg.Connection:
        return psycopg.connect(conninfo, autocommit=True)

    # ---- setup ---------------------------------------------------------------------------

    def new_instance(self, label: str) -> Instance:
        name = f"{self.tag}_{label}"
        with self.c.connect_super() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
                sql.Identifier(name), sql.Identifier(self.c.template),
                sql.Identifier(self.c.owner)))
        with self.c.connect_super(name) as conn:
            conn.execute("UPDATE datatable_roles.settings SET instance_id = gen_random_uuid()")
        inst = Instance(name=name, prefix=f"{self.tag}{label[0]}_",
                        owner_ci=self.c.owner_conninfo(name),
                        worker_ci=self.c.worker_conninfo(name),
                        super_ci=self.c.superuser_conninfo(name))
        with self.connect(inst.owner_ci) as conn:
            conn.execute("SELECT datatable_roles.grant_worker(%s)", [self.c.worker])
        return inst

    def make_datatable_db(self) -> None:
        """One data table database for both instances: an admin login (password set as a
        4096-iteration verifier, like any login whose password the server hashed) owning an
        orders table of 1,000 rows under row-level security."""
        self.dt_db = f"{self.tag}_dt"
        self.dt_admin = f"{self.tag}_dt_admin"
        self.dt_admin_password = secrets.token_urlsafe(24)
        with self.c.connect_super() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(self.dt_admin),
                sql.Literal(scram_sha256_verifier(self.dt_admin_password, 4096))))
            conn.execute(sql.SQL("GRANT {} TO {}").format(
                sql.Identifier(self.dt_admin), sql.Identifier(self.c.owner)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(self.dt_db), sql.Identifier(self.dt_admin)))
        with self.c.connect_super(self.dt_db) as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(self.dt_admin)))
            conn.execute("CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL)")
            conn.execute("INSERT INTO orders SELECT i, (array['emea','us','apac','latam'])"
                         "[i % 4 + 1] FROM generate_series(1, 1000) AS i")
            conn.execute("ALTER TABLE orders ENABLE ROW LEVEL SECURITY")

    def allow_region(self, role: str, region: str) -> None:
        with self.c.connect_super(self.dt_db) as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(self.dt_admin)))
            conn.execute(sql.SQL("GRANT SELECT ON orders TO {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL(
                "CREATE POLICY {} ON orders FOR SELECT"
                " USING (region = {} AND pg_has_role(current_user, {}, 'member'))").format(
                    sql.Identifier(f"{role}_{region}"), sql.Literal(region), sql.Literal(role)))

    def build_common(self, inst: Instance) -> None:
        """The setups both instances have, through the public functions:
        dt_admin  default admin (R2); its map has a viewer role with tenants, unused by R2
        dt_r10    default role `def` with tenant u/alice, nothing else has tenants (R10)
        dt_view   default `def` (u/alice) + `emea` (g/sales) + `us` (f/usf): vera resolves
                  to the set login {def, emea, us}, walt (sales only) to {def, emea}
        """
        p = inst.prefix
        inst.roles = {k: p + k for k in ("def", "emea", "us")}
        with self.connect(inst.owner_ci) as conn:
            conn.execute("SELECT add_workspace('ws')")
            for user in ("alice", "vera", "walt"):
                conn.execute("SELECT add_workspace_user('ws', %s, %s)", [user, f"{user}@example.com"])
            conn.execute("SELECT add_group_member('ws', 'sales', 'vera')")
            conn.execute("SELECT add_group_member('ws', 'sales', 'walt')")
            conn.execute("SELECT set_folder_access('ws', 'usf', 'u/vera', 'read')")
            for role in inst.roles.values():
                conn.execute("SELECT create_datatable_role(%s)", [role])
            for dt in ("dt_admin", "dt_r10", "dt_view"):
                conn.execute("SELECT register_datatable('ws', %s, %s, %s, %s)",
                             [dt, self.dt_db, self.dt_admin, self.dt_admin_password])
            r = inst.roles
            tenants = [("dt_admin", r["emea"], ["g/sales"]),
                       ("dt_r10", r["def"], ["u/alice"]),
                       ("dt_view", r["def"], ["u/alice"]),
                       ("dt_view", r["emea"], ["g/sales"]),
                       ("dt_view", r["us"], ["f/usf"])]
            for dt, role, keys in tenants:
                conn.execute("SELECT set_datatable_role_tenants('ws', %s, %s, %s)", [dt, role, keys])
            for dt in ("dt_r10", "dt_view"):
                conn.execute("SELECT set_datatable_default_role('ws', %s, %s)", [dt, r["def"]])
            for name, viewer in (("vera", "vera@example.com"), ("walt", "walt@example.com")):
                job = str(uuid.uuid4())
                conn.execute("SELECT record_job_start(%s, 'ws', 'u/alice', 'run', %s)", [job, viewer])
                inst.jobs[name] = job
        for key, region in (("def", "apac"), ("emea", "emea"), ("us", "us")):
            self.allow_region(inst.roles[key], region)

    def build_first_use(self, inst: Instance) -> None:
        """dt_first: no default (R4), m roles, viewer fv<i> a tenant of exactly one pair of them,
        so that every job of a distinct viewer resolves to a new set login of two roles."""
        ops = self.cfg.first_use_ops * self.cfg.reps
        m = 2
        while m * (m - 1) // 2 < ops:
            m += 1
        pairs = [(a, b) for a in range(m) for b in range(a + 1, m)][:ops]
        froles = [f"{inst.prefix}f{i}" for i in range(m)]
        tenants: dict[int, list[str]] = {i: [] for i in range(m)}
        self.first_jobs: list[str] = []
        self.first_pairs = [(froles[a], froles[b]) for a, b in pairs]
        with self.connect(inst.owner_ci) as conn:
            conn.execute("SELECT register_datatable('ws', 'dt_first', %s, %s, %s)",
                         [self.dt_db, self.dt_admin, self.dt_admin_password])
            conn.execute("SELECT set_datatable_default_role('ws', 'dt_first', NULL)")
            for role in froles:
                conn.execute("SELECT create_datatable_role(%s)", [role])
            for i, (a, b) in enumerate(pairs):
                user = f"fv{i}"
                conn.execute("SELECT add_workspace_user('ws', %s, %s)", [user, f"{user}@example.com"])
                tenants[a].append(f"u/{user}")
                tenants[b].append(f"u/{user}")
            for i, role in enumerate(froles):
                conn.execute("SELECT set_datatable_role_tenants('ws', 'dt_first', %s, %s)",
                             [role, tenants[i]])
            for i in range(len(pairs)):
                job = str(uuid.uuid4())
                conn.execute("SELECT record_job_start(%s, 'ws', 'u/alice', 'run', %s)",
                             [job, f"fv{i}@example.com"])
                self.first_jobs.append(job)

    def build_large_directory(self, inst: Instance) -> None:
        cfg = self.cfg
        t0 = time.monotonic()
        with self.connect(inst.owner_ci) as conn:
            (have,) = conn.execute("SELECT count(*) FROM datatable_roles.catalog_role").fetchone()
            # Real logins, through the public function (one transaction).
            conn.execute(sql.SQL(
                "DO $$ BEGIN FOR i IN 1..{} LOOP PERFORM create_datatable_role({} || i); END LOOP; END $$"
            ).format(sql.Literal(cfg.catalog_roles - have), sql.Literal(inst.prefix + "bulk")))
            n_users, n_groups = cfg.users, cfg.groups
            with conn.transaction():
                conn.execute(
                    "INSERT INTO datatable_roles.workspace_user (workspace, username, email)"
                    " SELECT 'ws', 'u' || i, 'u' || i || '@example.com'"
                    " FROM generate_series(1, %s) AS i", [n_users - 3])
                # Every user in three groups.
                conn.execute(
                    "INSERT INTO datatable_roles.group_member (workspace, group_name, username)"
                    " SELECT DISTINCT 'ws', 'grp' || ((i * 7 + k * 131) %% %s), 'u' || i"
                    " FROM generate_series(1, %s) AS i, generate_series(0, 2) AS k",
                    [n_groups, n_users - 3])
                # The viewer: in `sales` and 49 more groups.
                conn.execute(
                    "INSERT INTO datatable_roles.group_member (workspace, group_name, username)"
                    " SELECT 'ws', 'grp' || g, 'vera' FROM generate_series(0, %s) AS g",
                    [cfg.viewer_groups - 2])
                # Folders: a home folder per user, a team folder for every fifth group (read),
                # and direct grants of the viewer.
                conn.execute(
                    "INSERT INTO datatable_roles.folder_access (workspace, folder, principal, access)"
                    " SELECT 'ws', 'home' || i, 'u/u' || i, 'owner' FROM generate_series(1, %s) AS i",
                    [n_users - 3])
                conn.execute(
                    "INSERT INTO datatable_roles.folder_access (workspace, folder, principal, access)"
                    " SELECT 'ws', 'team' || g, 'g/grp' || g, 'read'"
                    " FROM generate_series(0, %s - 1, 5) AS g", [n_groups])
                # vera: usf (already) + team folders of her groups + direct ones, 20 in all.
                (teams,) = conn.execute(
                    "SELECT count(*) FROM generate_series(0, %s, 5) AS g",
                    [cfg.viewer_groups - 2]).fetchone()
                conn.execute(
                    "INSERT INTO datatable_roles.folder_access (workspace, folder, principal, access)"
                    " SELECT 'ws', 'shared' || i, 'u/vera', 'write' FROM generate_series(1, %s) AS i",
                    [cfg.viewer_folders - 1 - teams])
                # Jobs: one job_perms row per job run so far.
                conn.execute(
                    "INSERT INTO datatable_roles.job_perms (job_id, workspace, permissioned_as, email,"
                    " is_admin, groups, folders, end_user_email, origin)"
                    " SELECT gen_random_uuid(), 'ws', 'u/u' || i, 'u' || i || '@example.com', false,"
                    " '{}', '{}', CASE WHEN i %% 2 = 0 THEN 'u' || (i + 1) || '@example.com' END,"
                    " 'run' FROM generate_series(1, %s) AS i", [n_users])
            # Data tables, through the public function, all on the one data table database.
            conn.execute(sql.SQL(
                "DO $$ BEGIN FOR i IN 1..{} LOOP"
                " PERFORM register_datatable('ws', 'bulk_dt' || i, {}, {}, {}); END LOOP; END $$"
            ).format(sql.Literal(cfg.datatables - 4), sql.Literal(self.dt_db),
                     sql.Literal(self.dt_admin), sql.Literal(self.dt_admin_password)))
            # Each bulk data table maps ten bulk roles, with tenants naming groups, users and
            # folders (bulk-loaded: set_datatable_role_tenants re-syncs CONNECT per call).
            conn.execute(
                "INSERT INTO datatable_roles.datatable_role (datatable_id, role_id, tenants)"
                " SELECT d.id, ids.a[(d.id * 10 + j) %% cardinality(ids.a) + 1],"
                " array['g/grp' || ((d.id * 13 + j) %% %s), 'u/u' || ((d.id * 31 + j) %% %s + 1),"
                " 'f/team' || ((d.id + j) %% %s * 5)]"
                " FROM datatable_roles.datatable AS d,"
                " (SELECT array_agg(c.id ORDER BY c.id) AS a FROM datatable_roles.catalog_role AS c"
                "  WHERE c.name LIKE %s) AS ids, generate_series(0, 9) AS j"
                " WHERE d.name LIKE 'bulk_dt%%'",
                [n_groups, n_users - 3, max(n_groups // 5, 1), inst.prefix + "bulk%"])
            for table in ("workspace_user", "group_member", "folder_access", "job_perms",
                          "datatable", "datatable_role", "catalog_role"):
                conn.execute(sql.SQL("ANALYZE datatable_roles.{}").format(sql.Identifier(table)))
            keys = conn.execute("SELECT datatable_roles.member_keys('ws', 'vera')").fetchone()[0]
            counts = conn.execute(
                "SELECT (SELECT count(*) FROM datatable_roles.catalog_role),"
                " (SELECT count(*) FROM datatable_roles.workspace_user),"
                " (SELECT count(*) FROM datatable_roles.group_member),"
                " (SELECT count(*) FROM datatable_roles.folder_access),"
                " (SELECT count(*) FROM datatable_roles.datatable),"
                " (SELECT count(*) FROM datatable_roles.datatable_role),"
                " (SELECT count(*) FROM datatable_roles.job_perms)").fetchone()
        groups = sum(1 for k in keys if k.startswith("g/"))
        folders = sum(1 for k in keys if k.startswith("f/"))
        self.large_summary = (
            f"{counts[0]:,} catalog roles (real logins), {counts[1]:,} users, "
            f"{counts[2]:,} group memberships, {counts[3]:,} folder grants, "
            f"{counts[4]:,} data tables with {counts[5]:,} role-map entries, {counts[6]:,} jobs; "
            f"the viewer is in {groups} groups and {folders} folders")
        log(f"large directory built in {time.monotonic() - t0:.1f}s: {self.large_summary}")

    def make_stale_logins(self, inst: Instance) -> None:
        """Set logins for the sweep (ratio 6), made by ensure_set_login over distinct pairs of
        bulk catalog ids, and as many bare roles of the same shape for the DROP baseline."""
        n = self.cfg.sweep_logins
        t0 = time.monotonic()
        verifier = scram_sha256_verifier(secrets.token_hex(16), 16)
        with self.connect(inst.owner_ci) as conn:
            conn.execute(sql.SQL(
                "DO $$ DECLARE ids bigint[] := ARRAY(SELECT r.id FROM datatable_roles.catalog_role"
                " AS r WHERE r.name LIKE {} ORDER BY r.id); m int := cardinality(ids);"
                " BEGIN FOR k IN 1..{} LOOP"
                " PERFORM datatable_roles.ensure_set_login(array[ids[(k - 1) % m + 1], ids[(k + (k - 1) / m) % m + 1]]);"
                " END LOOP; END $$").format(sql.Literal(inst.prefix + "bulk%"), sql.Literal(n)))
            self.sweep_set_logins = [r[0] for r in conn.execute(
                "SELECT s.login FROM datatable_roles.datatable_role_set AS s"
                " WHERE s.role_ids[1] IN (SELECT r.id FROM datatable_roles.catalog_role AS r"
                " WHERE r.name LIKE %s) ORDER BY s.login", [inst.prefix + "bulk%"])]
            conn.execute(sql.SQL(
                "DO $$ DECLARE names text[] := ARRAY(SELECT r.name FROM datatable_roles.catalog_role"
                " AS r WHERE r.name LIKE {} ORDER BY r.id); m int := cardinality(names);"
                " BEGIN FOR k IN 1..{} LOOP"
                " EXECUTE format('CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE"
                " NOREPLICATION PASSWORD %L IN ROLE %I, %I', {} || k, {},"
                " names[(k - 1) % m + 1], names[(k + (k - 1) / m) % m + 1]);"
                " END LOOP; END $$").format(
                    sql.Literal(inst.prefix + "bulk%"), sql.Literal(n),
                    sql.Literal(f"{self.tag}_bare_drop_"), sql.Literal(verifier)))
        self.bare_drop_roles = [f"{self.tag}_bare_drop_{k}" for k in range(1, n + 1)]
        log(f"{len(self.sweep_set_logins):,} set logins and {n:,} bare roles made in "
            f"{time.monotonic() - t0:.1f}s")

    # ---- measuring -----------------------------------------------------------------------

    def pgbench(self, inst: Instance, script: str, seconds: int | None = None,
                transactions: int | None = None) -> float:
        path = self.tmp / f"s{abs(hash(script))}.sql"
        path.write_text(script + "\n")
        cmd = [str(PGBENCH), "-n", "-M", "prepared", "-c", "1", "-f", str(path),
               "-h", self.c.host, "-p", str(self.c.port), "-U", self.c.worker]
        cmd += ["-T", str(seconds)] if transactions is None else ["-t", str(transactions)]
        cmd.append(inst.name)
        env = dict(os.environ, PGPASSWORD=self.c.worker_password)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"pgbench failed:\n{proc.stdout}{proc.stderr}")
        m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", proc.stdout)
        if not m:
            raise RuntimeError(f"pgbench output not understood:\n{proc.stdout}")
        return float(m.group(1))

    @staticmethod
    def resolve_sql(job: str, datatable: str) -> str:
        return f"SELECT * FROM resolve_datatable_role('{job}'::uuid, '{datatable}');"

    def warm_up(self, inst: Instance) -> None:
        """Resolve each setup once (so the set logins exist) and check what it gives."""
        with self.connect(inst.worker_ci) as conn:
            for dt, job, want in (("dt_admin", "vera", ["admin"]),
                                  ("dt_r10", "vera", [inst.roles["def"]]),
                                  ("dt_view", "vera", sorted(inst.roles.values())),
                                  ("dt_view", "walt", sorted([inst.roles["def"], inst.roles["emea"]]))):
                row = conn.execute("SELECT login, roles FROM resolve_datatable_role(%s, %s)",
                                   [inst.jobs[job], dt]).fetchone()
                if list(row[1]) != want:
                    raise RuntimeError(f"{inst.name} {dt}: resolved {row[1]}, expected {want}")

    def bench_resolve(self, small: Instance, large: Instance) -> None:
        cfg = self.cfg
        scripts = {
            "select1": (small, "SELECT 1;"),
            "s_r2": (small, self.resolve_sql(small.jobs["vera"], "dt_admin")),
            "s_r10": (small, self.resolve_sql(small.jobs["vera"], "dt_r10")),
            "s_view": (small, self.resolve_sql(small.jobs["vera"], "dt_view")),
            "l_r2": (large, self.resolve_sql(large.jobs["vera"], "dt_admin")),
            "l_r10": (large, self.resolve_sql(large.jobs["vera"], "dt_r10")),
            "l_view": (large, self.resolve_sql(large.jobs["vera"], "dt_view")),
        }
        names = list(scripts)
        tps: dict[str, list[float]] = {k: [] for k in names}
        for rep in range(cfg.reps):
            order = names[rep % len(names):] + names[:rep % len(names)]
            for k in order:
                inst, script = scripts[k]
                tps[k].append(self.pgbench(inst, script, seconds=cfg.pgbench_seconds))
            log(f"pgbench repetition {rep + 1}/{cfg.reps}: "
                + ", ".join(f"{k} {tps[k][-1]:.0f}" for k in names))
        self.tps = tps

        def ratio(a: str, b: str) -> list[float]:
            return [x / y for x, y in zip(tps[a], tps[b])]

        run = f"pgbench -M prepared -c 1 -T {cfg.pgbench_seconds}, worker role, TPS"
        self.rows += [
            Row("1a resolve, cheap path R2 (default admin)",
                f"resolve TPS / SELECT 1 TPS ({run})", cfg.reps, ratio("s_r2", "select1"), 0.5, True),
            Row("1b resolve, cheap path R10 (default role, no viewer roles)",
                f"resolve TPS / SELECT 1 TPS ({run})", cfg.reps, ratio("s_r10", "select1"), 0.5, True),
            Row("2  resolve, viewer path, existing set login",
                f"resolve TPS / SELECT 1 TPS ({run})", cfg.reps, ratio("s_view", "select1"), 0.35, True),
            Row("3a large directory: cheap path R2",
                "large-instance resolve TPS / small-instance resolve TPS", cfg.reps,
                ratio("l_r2", "s_r2"), 0.9, True),
            Row("3b large directory: cheap path R10",
                "large-instance resolve TPS / small-instance resolve TPS", cfg.reps,
                ratio("l_r10", "s_r10"), 0.9, True),
            Row("3c large directory: viewer path",
                "large-instance resolve TPS / small-instance resolve TPS", cfg.reps,
                ratio("l_view", "s_view"), 0.9, True),
        ]

    def bench_first_use(self, inst: Instance) -> None:
        cfg = self.cfg
        verifier = scram_sha256_verifier(secrets.token_hex(16), 16)
        ratios = []
        per_a: list[float] = []
        per_b: list[float] = []
        with self.connect(inst.worker_ci) as worker, self.connect(inst.owner_ci) as owner:
            i = 0
            for rep in range(cfg.reps):
                ta = tb = 0.0
                for _ in range(cfg.first_use_ops):
                    job, (ra, rb) = self.first_jobs[i], self.first_pairs[i]
                    stmt = sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}, {}").format(
                        sql.Identifier(f"{self.tag}_bare_new_{i}"), sql.Literal(verifier),
                        sql.Identifier(ra), sql.Identifier(rb)).as_string(owner)
                    first = (i % 2 == 0)
                    for side in ((0, 1) if first else (1, 0)):
                        t0 = time.perf_counter()
                        if side == 0:
                            row = worker.execute(
                                "SELECT login, roles FROM resolve_datatable_role(%s, 'dt_first')",
                                [job]).fetchone()
                            ta += time.perf_counter() - t0
                            if not row[0].startswith("wm_set_") or sorted(row[1]) != sorted([ra, rb]):
                                raise RuntimeError(f"first use resolved {row}")
                        else:
                            owner.execute(stmt)
                            tb += time.perf_counter() - t0
                    i += 1
                ratios.append(ta / tb)
                per_a.append(ta / cfg.first_use_ops * 1000)
                per_b.append(tb / cfg.first_use_ops * 1000)
        self.rows.append(Row(
            "4  first use of a new set (creates the set login)",
            "resolve making a 2-role set login / bare CREATE ROLE .. LOGIN PASSWORD '<SCRAM>' "
            "IN ROLE a, b (per op, one connection each, autocommit)",
            cfg.reps, ratios, 3.0, False,
            note=f"per op: {statistics.median(per_a):.2f} ms vs {statistics.median(per_b):.2f} ms"))

    def rls_query(self) -> str:
        return "SELECT count(*) FROM orders"

    def bench_connect(self, inst: Instance) -> None:
        """Ratio 5 at the instance's scram_iterations (vera's login) and at 4096 (walt's login,
        re-keyed at 4096), each against connecting as the admin login, interleaved."""
        cfg = self.cfg
        with self.connect(inst.owner_ci) as owner:
            (iters,) = owner.execute(
                "SELECT scram_iterations FROM datatable_roles.settings").fetchone()
            walt_login = owner.execute(
                "SELECT login FROM resolve_datatable_role(%s, 'dt_view')",
                [inst.jobs["walt"]]).fetchone()[0]
            owner.execute("UPDATE datatable_roles.settings SET scram_iterations = 4096")
            owner.execute("UPDATE datatable_roles.datatable_role_set SET password = ''"
                          " WHERE login = %s", [walt_login])
            owner.execute("SELECT * FROM resolve_datatable_role(%s, 'dt_view')",
                          [inst.jobs["walt"]])  # re-key at 4096
            owner.execute("UPDATE datatable_roles.settings SET scram_iterations = %s", [iters])
        with self.c.connect_super() as conn:
            stored = dict(conn.execute(
                "SELECT rolname, split_part(split_part(rolpassword, '$', 2), ':', 1)"
                " FROM pg_authid WHERE rolname IN (%s, %s, %s)",
                [walt_login, self.dt_admin,
                 self.resolve_login(inst, "vera")]).fetchall())
        self.iter_note = (f"stored verifiers: viewer logins {stored[self.resolve_login(inst, 'vera')]}"
                          f" and {stored[walt_login]} iterations, admin login "
                          f"{stored[self.dt_admin]}")
        query = self.rls_query()
        expected = {}

        def viewer_once(worker: psycopg.Connection, job: str) -> int:
            r = worker.execute("SELECT dbname, login, password FROM resolve_datatable_role(%s,"
                               " 'dt_view')", [job]).fetchone()
            with psycopg.connect(self.c.conninfo(r[1], r[2], r[0], tcp=True)) as conn:
                return conn.execute(query).fetchone()[0]

        def admin_once() -> int:
            with psycopg.connect(self.c.conninfo(self.dt_admin, self.dt_admin_password,
                                                 self.dt_db, tcp=True)) as conn:
                return conn.execute(query).fetchone()[0]

        r16, r4096 = [], []
        with self.connect(inst.worker_ci) as worker:
            expected["vera"] = viewer_once(worker, inst.jobs["vera"])
            expected["walt"] = viewer_once(worker, inst.jobs["walt"])
            if not (0 < expected["walt"] < expected["vera"] < admin_once()):
                raise RuntimeError(f"RLS counts look wrong: {expected}")
            for rep in range(cfg.reps):
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
        self.rows.append(Row(f"5a resolve+connect+RLS query, set login at {iters} iterations",
                             what, cfg.reps, r16, 1.3, False))
        self.rows.append(Row("5b resolve+connect+RLS query, set login at 4096 iterations",
                             what, cfg.reps, r4096, 1.3, False))

    def resolve_login(self, inst: Instance, job: str) -> str:
        with self.connect(inst.worker_ci) as conn:
            return conn.execute("SELECT login FROM resolve_datatable_role(%s, 'dt_view')",
                                [inst.jobs[job]]).fetchone()[0]

    def bench_touch(self, inst: Instance) -> None:
        """Ratio 7: writes to datatable_role_set while one login is resolved 10,000 times in
        one day, starting from a row last used over a day ago (so the daily touch falls in)."""
        login = self.resolve_login(inst, "vera")
        with self.connect(inst.owner_ci) as owner:
            owner.execute("UPDATE datatable_roles.datatable_role_set"
                          " SET last_used_at = last_used_at - interval '25 hours' WHERE login = %s",
                          [login])
            owner.execute("SELECT pg_stat_force_next_flush()")
        time.sleep(0.2)

        def snapshot() -> tuple[int, str]:
            with self.connect(inst.super_ci) as conn:
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
        n = self.cfg.touch_resolves
        self.pgbench(inst, self.resolve_sql(inst.jobs["vera"], "dt_view"), transactions=n)
        deadline = time.monotonic() + 5
        while True:  # the pgbench backend flushes its counters as it exits
            w1, x1 = snapshot()
            if w1 != w0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.rows.append(Row(
            f"7  writes to datatable_role_set per {n:,} resolves of one login in one day",
            "Δ(n_tup_ins+n_tup_upd+n_tup_del) over the run (row last used 25 h before)",
            1, [float(w1 - w0)], 1.0, False,
            note=f"row xmin {'changed once' if x0 != x1 else 'unchanged'} ({x0} -> {x1})"))

    def bench_sweep(self, inst: Instance) -> None:
        """Ratio 6. The stale set logins are split into `reps` chunks by last use (chunk k used
        k days after the others); sweep k moves the clock so that exactly chunk k (and what an
        earlier capped sweep left) is older than 30 days, then CALL sweep_unused_role_set_logins
        (NULL) as the owner, autocommit, with statement_timeout as a cap. Interleaved with a DO
        loop of bare DROP ROLE + COMMIT over as many roles of the same shape."""
        cfg = self.cfg
        logins = self.sweep_set_logins
        chunks = [logins[k::cfg.reps] for k in range(cfg.reps)]
        bare = self.bare_drop_roles
        bare_chunks = [bare[k::cfg.reps] for k in range(cfg.reps)]
        with self.connect(inst.owner_ci) as owner:
            # Every other set login of this instance stays in use throughout.
            owner.execute("UPDATE datatable_roles.datatable_role_set SET last_used_at ="
                          " datatable_roles.clock_now() + interval '1000 days'"
                          " WHERE NOT login = ANY(%s)", [logins])
            for k, chunk in enumerate(chunks):
                owner.execute("UPDATE datatable_roles.datatable_role_set SET last_used_at ="
                              " last_used_at + %s * interval '1 day' WHERE login = ANY(%s)",
                              [k, chunk])
            (offset0,) = owner.execute(
                "SELECT clock_offset FROM datatable_roles.settings").fetchone()
            ratios, per_sweep, per_drop, done, capped, none_dropped = [], [], [], 0, 0, 0
            for k in range(cfg.reps):
                owner.execute("UPDATE datatable_roles.settings SET clock_offset = %s"
                              " + %s * interval '1 day' + interval '30 days 12 hours'", [offset0, k])
                (before,) = owner.execute(
                    "SELECT count(*) FROM datatable_roles.datatable_role_set").fetchone()
                owner.execute(sql.SQL("SET statement_timeout = {}").format(
                    sql.Literal(f"{int(cfg.sweep_cap_seconds * 1000)}ms")))
                t0 = time.perf_counter()
                try:
                    owner.execute("CALL sweep_unused_role_set_logins(NULL)")
                except psycopg.errors.QueryCanceled:
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
        self.rows.append(Row(
            f"6  sweep of {n:,} stale set logins ({cfg.reps} sweeps of {n // cfg.reps:,})",
            "sweep time per login dropped / bare DROP ROLE + COMMIT per role (DO loop)",
            cfg.reps, ratios, 3.0, False, note=note))

    # ---- the whole run -------------------------------------------------------------------

    def run(self) -> None:
        t0 = time.monotonic()
        self.make_datatable_db()
        small = self.new_instance("small")
        large = self.new_instance("large")
        for inst in (small, large):
            self.build_common(inst)
        self.build_first_use(small)
        self.build_large_directory(large)
        self.make_stale_logins(large)
        for inst in (small, large):
            self.warm_up(inst)
        log(f"setup done in {time.monotonic() - t0:.1f}s")
        self.bench_resolve(small, large)
        self.bench_first_use(small)
        self.bench_connect(small)
        self.bench_touch(small)
        self.bench_sweep(large)
        self.elapsed = time.monotonic() - t0

    def table(self, command: str) -> str:
        out = []
        now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        with self.c.connect_super() as conn:
            (version,) = conn.execute("SHOW server_version").fetchone()
        out.append(f"datatable-roles bench, {now}: `{command}`")
        out.append(f"PostgreSQL {version}, {os.cpu_count()} CPUs, one throwaway cluster "
                   f"(fsync off); whole run {self.elapsed:.0f}s"
                   + (" (--quick: smaller sizes, fewer repetitions)" if self.quick else ""))
        out.append("")
        head = ("#  figure", "compares (A / B)", "reps", "median", "spread (min–max)",
                "target", "result")
        body = []
        for r in self.rows:
            fmt = (lambda v: f"{v:.0f}") if r.label.startswith("7") else (
                lambda v: f"{v:.2f}x" if v < 100 else f"{v:,.0f}x")
            target = (f">= {r.target:g}x" if r.higher_is_better else
                      (f"<= {r.target:g}" if r.label.startswith("7") else f"<= {r.target:g}x"))
            body.append((r.label, r.compares, str(r.reps), fmt(r.median),
                         f"{fmt(min(r.values))}–{fmt(max(r.values))}", target,
                         "met" if r.met else "NOT MET"))
        widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
        out.append(line(head))
        out.append(line(tuple("-" * w for w in widths)))
        out.extend(line(b) for b in body)
        out.append("")
        out.append("Notes:")
        for r in self.rows:
            if r.note:
                out.append(f"  {r.label.split()[0]}: {r.note}")
        out.append(f"  1-3: median TPS: " + ", ".join(
            f"{k} {statistics.median(v):,.0f}" for k, v in self.tps.items())
            + f" (SELECT 1: {1e6 / statistics.median(self.tps['select1']):.0f} µs a transaction;"
            " the lower it is, the more the ratios show server work rather than round trips)")
        out.append(f"  3: large instance: {self.large_summary}. Users, group memberships, folder "
                   "grants, jobs and the bulk data tables' role maps were bulk-loaded as the "
                   "owner with INSERT ... SELECT generate_series (the public functions would be "
                   "too slow); catalog roles were made with create_datatable_role and data tables "
                   "with register_datatable, each in a DO loop. The benchmarked data tables have "
                   "the same role maps in both instances; all data tables share one database.")
        out.append(f"  5: {self.iter_note}; the 4096 login was re-keyed by setting "
                   "settings.scram_iterations = 4096 and emptying its row's password.")
        out.append("  All instances share the cluster, so its roles (catalog roles, set logins "
                   "of the sweep) are there during every measurement.")
        return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m datatable_roles.bench",
                                     description="Speed ratios of SPEC section 14.")
    parser.add_argument("--quick", action="store_true", help="a smaller run (smoke test)")
    parser.add_argument("--attach", action="store_true",
                        help="use the cluster of an enclosing `devcluster run`")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    command = "python -m datatable_roles.bench" + (" --quick" if args.quick else "")
    if args.attach:
        cluster = Cluster.from_env()
    else:
        log("starting a throwaway cluster")
        cluster = Cluster().start()
    bench = None
    try:
        bench = Bench(cluster, cfg, args.quick)
        bench.run()
        print(bench.table(command), flush=True)
    finally:
        cluster.stop()
        if bench is not None:
            shutil.rmtree(bench.tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
