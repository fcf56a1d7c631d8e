"""The bench's world: what the measurements run against, built once per run.

Two metadata databases cloned from the cluster's template (each with an instance id, a link
login and a login group of its own: Cluster.clone_metadata_database), each with a data table
database of its own (an orders table under row-level security; every data table of the
instance is on it). Two instances do not share an admin login: registering a data table sets
the admin login's password verifier again, which the other instance would then see as a
password changed outside the package:

- ``small``: the common setups (:meth:`World.build_common`) and the first-use data table;
- ``large``: the same setups inside a large directory (10,000 catalog roles, 100,000 users,
  ... in a full run) and the stale set logins the sweep measurement drops.

Package functions are called through :class:`~datatable_roles.client.Client`; what would take
too long through them (users, group memberships, folder grants, jobs, role-map entries of the
bulk data tables) is bulk-loaded into the package's tables as the owner.
"""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from datatable_roles.client import Client
from datatable_roles.scram import scram_sha256_verifier

from ..devcluster import Cluster
from .config import Config, log


@dataclass
class Instance:
    """One metadata database with the bench's setups."""

    name: str
    prefix: str          # prefix of its catalog role names (roles are cluster-wide)
    owner_ci: str
    worker_ci: str
    super_ci: str
    dt_db: str = ""      # its data table database, owned by dt_admin
    dt_admin: str = ""
    dt_admin_password: str = field(default="", repr=False)
    roles: dict[str, str] = field(default_factory=dict)   # short name -> role name
    jobs: dict[str, str] = field(default_factory=dict)    # short name -> job id


def map_on_database(conn: psycopg.Connection, dbname: str, role_ids: list[int]) -> None:
    """Puts these catalog roles (with no tenants) in the map of the first data table on
    `dbname` where they are in none there: a login is only made for roles mapped on its
    database (ensure_set_login refuses others with 40001, as a resolve racing a removal)."""
    conn.execute(
        "INSERT INTO datatable_roles.datatable_role (datatable_id, role_id)"
        " SELECT (SELECT min(d.id) FROM datatable_roles.datatable AS d WHERE d.dbname = %s), r.id"
        " FROM unnest(%s::bigint[]) AS r (id)"
        " WHERE NOT EXISTS (SELECT FROM datatable_roles.datatable_role AS m"
        "  JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id"
        "  WHERE m.role_id = r.id AND d.dbname = %s)", [dbname, role_ids, dbname])


def connect(conninfo: str) -> psycopg.Connection:
    return psycopg.connect(conninfo, autocommit=True)


class World:
    """Builds and holds the bench's databases, logins and jobs (see the module doc)."""

    def __init__(self, cluster: Cluster, cfg: Config) -> None:
        self.c = cluster
        self.cfg = cfg
        self.tag = "b" + secrets.token_hex(3)  # unique names, also on an attached cluster
        self.small: Instance | None = None
        self.large: Instance | None = None
        self.first_jobs: list[str] = []                 # one new viewer each (ratio 4)
        self.first_pairs: list[tuple[str, str]] = []    # the two roles each job resolves to
        self.sweep_set_logins: list[str] = []           # stale set logins (ratio 6)
        self.bare_drop_roles: list[str] = []            # roles of the same shape (ratio 6)
        self.large_summary = ""

    # The large instance's data table database (the sweep's logins are there).
    @property
    def dt_db(self) -> str:
        assert self.large is not None
        return self.large.dt_db

    @property
    def dt_admin(self) -> str:
        assert self.large is not None
        return self.large.dt_admin

    @property
    def dt_admin_password(self) -> str:
        assert self.large is not None
        return self.large.dt_admin_password

    def build(self) -> None:
        t0 = time.monotonic()
        self.small = self.new_instance("small")
        self.large = self.new_instance("large")
        for inst in (self.small, self.large):
            self.make_datatable_db(inst)
            self.build_common(inst)
        self.build_first_use(self.small)
        self.build_large_directory(self.large)
        self.make_stale_logins(self.large)
        for inst in (self.small, self.large):
            self.warm_up(inst)
        log(f"setup done in {time.monotonic() - t0:.1f}s")

    # ---- databases -------------------------------------------------------------------------

    def new_instance(self, label: str) -> Instance:
        name = f"{self.tag}_{label}"
        self.c.clone_metadata_database(name)  # the worker granted
        return Instance(name=name, prefix=f"{self.tag}{label[0]}_",
                        owner_ci=self.c.owner_conninfo(name),
                        worker_ci=self.c.worker_conninfo(name),
                        super_ci=self.c.superuser_conninfo(name),
                        dt_db=f"{self.tag}_{label[0]}dt",
                        dt_admin=f"{self.tag}_{label[0]}dt_admin",
                        dt_admin_password=secrets.token_urlsafe(24))

    def make_datatable_db(self, inst: Instance) -> None:
        """The instance's data table database: an admin login (password set as a
        4096-iteration verifier, like any login whose password the server hashed) owning an
        orders table of 1,000 rows under row-level security."""
        with self.c.connect_super() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(inst.dt_admin),
                sql.Literal(scram_sha256_verifier(inst.dt_admin_password, 4096))))
            conn.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION").format(
                sql.Identifier(inst.dt_admin), sql.Identifier(self.c.owner)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(inst.dt_db), sql.Identifier(inst.dt_admin)))
        with self.c.connect_super(inst.dt_db) as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(inst.dt_admin)))
            conn.execute("CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL)")
            conn.execute("INSERT INTO orders SELECT i, (array['emea','us','apac','latam'])"
                         "[i % 4 + 1] FROM generate_series(1, 1000) AS i")
            conn.execute("ALTER TABLE orders ENABLE ROW LEVEL SECURITY")

    def allow_region(self, inst: Instance, role: str, region: str) -> None:
        with self.c.connect_super(inst.dt_db) as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(inst.dt_admin)))
            conn.execute(sql.SQL("GRANT SELECT ON orders TO {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL(
                "CREATE POLICY {} ON orders FOR SELECT"
                " USING (region = {} AND pg_has_role(current_user, {}, 'member'))").format(
                    sql.Identifier(f"{role}_{region}"), sql.Literal(region), sql.Literal(role)))

    # ---- setups ----------------------------------------------------------------------------

    def build_common(self, inst: Instance) -> None:
        """The setups both instances have, through the public functions:
        dt_admin  default admin (R2); its map has a viewer role with tenants, unused by R2
        dt_r10    default role `def` with tenant u/alice, nothing else has tenants (R10)
        dt_view   default `def` (u/alice) + `emea` (g/sales) + `us` (f/usf): vera resolves
                  to the set login {def, emea, us}, walt (sales only) to {def, emea}
        """
        p = inst.prefix
        inst.roles = {k: p + k for k in ("def", "emea", "us")}
        r = inst.roles
        with Client(inst.owner_ci) as owner:
            owner.add_workspace("ws")
            for user in ("alice", "vera", "walt"):
                owner.add_workspace_user("ws", user, f"{user}@example.com")
            owner.add_group_member("ws", "sales", "vera")
            owner.add_group_member("ws", "sales", "walt")
            owner.set_folder_access("ws", "usf", "u/vera", "read")
            for role in r.values():
                owner.create_datatable_role(role)
            for dt in ("dt_admin", "dt_r10", "dt_view"):
                owner.register_datatable("ws", dt, inst.dt_db, inst.dt_admin,
                                         inst.dt_admin_password)
            for dt, role, keys in (("dt_admin", r["emea"], ["g/sales"]),
                                   ("dt_r10", r["def"], ["u/alice"]),
                                   ("dt_view", r["def"], ["u/alice"]),
                                   ("dt_view", r["emea"], ["g/sales"]),
                                   ("dt_view", r["us"], ["f/usf"])):
                owner.set_datatable_role_tenants("ws", dt, role, keys)
            for dt in ("dt_r10", "dt_view"):
                owner.set_datatable_default_role("ws", dt, r["def"])
            for name in ("vera", "walt"):
                job = str(uuid.uuid4())
                owner.record_job_start(job, "ws", "u/alice", "run", f"{name}@example.com")
                inst.jobs[name] = job
        for key, region in (("def", "apac"), ("emea", "emea"), ("us", "us")):
            self.allow_region(inst, r[key], region)

    def build_first_use(self, inst: Instance) -> None:
        """dt_first: no default (R4), m roles, viewer fv<i> a tenant of exactly one pair of
        them, so that every job of a distinct viewer resolves to a new set login of two
        roles."""
        ops = self.cfg.first_use_ops * self.cfg.reps
        m = 2
        while m * (m - 1) // 2 < ops:
            m += 1
        pairs = [(a, b) for a in range(m) for b in range(a + 1, m)][:ops]
        froles = [f"{inst.prefix}f{i}" for i in range(m)]
        tenants: dict[int, list[str]] = {i: [] for i in range(m)}
        self.first_pairs = [(froles[a], froles[b]) for a, b in pairs]
        with Client(inst.owner_ci) as owner:
            owner.register_datatable("ws", "dt_first", inst.dt_db, inst.dt_admin,
                                     inst.dt_admin_password)
            owner.set_datatable_default_role("ws", "dt_first", None)
            for role in froles:
                owner.create_datatable_role(role)
            for i, (a, b) in enumerate(pairs):
                user = f"fv{i}"
                owner.add_workspace_user("ws", user, f"{user}@example.com")
                tenants[a].append(f"u/{user}")
                tenants[b].append(f"u/{user}")
            for i, role in enumerate(froles):
                owner.set_datatable_role_tenants("ws", "dt_first", role, tenants[i])
            for i in range(len(pairs)):
                job = str(uuid.uuid4())
                owner.record_job_start(job, "ws", "u/alice", "run", f"fv{i}@example.com")
                self.first_jobs.append(job)

    def build_large_directory(self, inst: Instance) -> None:
        cfg = self.cfg
        t0 = time.monotonic()
        with connect(inst.owner_ci) as conn:
            owner = Client(conn)
            (have,) = conn.execute("SELECT count(*) FROM datatable_roles.catalog_role").fetchone()
            for i in range(1, cfg.catalog_roles - have + 1):  # real roles (NOLOGIN)
                owner.create_datatable_role(f"{inst.prefix}bulk{i}")
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
                    "INSERT INTO datatable_roles.folder_access (workspace, folder, principal,"
                    " access) SELECT 'ws', 'home' || i, 'u/u' || i, 'owner'"
                    " FROM generate_series(1, %s) AS i", [n_users - 3])
                conn.execute(
                    "INSERT INTO datatable_roles.folder_access (workspace, folder, principal,"
                    " access) SELECT 'ws', 'team' || g, 'g/grp' || g, 'read'"
                    " FROM generate_series(0, %s - 1, 5) AS g", [n_groups])
                # vera: usf (already) + team folders of her groups + direct ones, 20 in all.
                (teams,) = conn.execute(
                    "SELECT count(*) FROM generate_series(0, %s, 5) AS g",
                    [cfg.viewer_groups - 2]).fetchone()
                conn.execute(
                    "INSERT INTO datatable_roles.folder_access (workspace, folder, principal,"
                    " access) SELECT 'ws', 'shared' || i, 'u/vera', 'write'"
                    " FROM generate_series(1, %s) AS i", [cfg.viewer_folders - 1 - teams])
                # Jobs: one job_perms row per job run so far.
                conn.execute(
                    "INSERT INTO datatable_roles.job_perms (job_id, workspace, permissioned_as,"
                    " email, is_admin, groups, folders, end_user_email, origin)"
                    " SELECT gen_random_uuid(), 'ws', 'u/u' || i, 'u' || i || '@example.com',"
                    " false, '{}', '{}',"
                    " CASE WHEN i %% 2 = 0 THEN 'u' || (i + 1) || '@example.com' END, 'run'"
                    " FROM generate_series(1, %s) AS i", [n_users])
            # Data tables, through the public function, all on the instance's data table
            # database.
            for i in range(1, cfg.datatables - 4 + 1):
                owner.register_datatable("ws", f"bulk_dt{i}", inst.dt_db, inst.dt_admin,
                                         inst.dt_admin_password)
            # Each bulk data table maps ten bulk roles, with tenants naming groups, users and
            # folders (bulk-loaded: 10,000 calls of set_datatable_role_tenants take long).
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
            keys = owner.member_keys("ws", "vera")
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
            f"{counts[0]:,} catalog roles (real NOLOGIN roles), {counts[1]:,} users, "
            f"{counts[2]:,} group memberships, {counts[3]:,} folder grants, "
            f"{counts[4]:,} data tables with {counts[5]:,} role-map entries, {counts[6]:,} jobs; "
            f"the viewer is in {groups} groups and {folders} folders")
        log(f"large directory built in {time.monotonic() - t0:.1f}s: {self.large_summary}")

    def make_stale_logins(self, inst: Instance) -> None:
        """Set logins on the data table database for the sweep (ratio 6), made by
        ensure_set_login over distinct pairs of bulk catalog ids, and as many bare roles of
        the same memberships for the DROP baseline."""
        n = self.cfg.sweep_logins
        t0 = time.monotonic()
        verifier = scram_sha256_verifier(secrets.token_hex(16), 16)
        with connect(inst.owner_ci) as conn:
            owner = Client(conn)
            ids = [r[0] for r in conn.execute(
                "SELECT r.id FROM datatable_roles.catalog_role AS r WHERE r.name LIKE %s"
                " ORDER BY r.id", [inst.prefix + "bulk%"])]
            m = len(ids)
            map_on_database(conn, inst.dt_db, ids)
            made = {owner.ensure_set_login(inst.dt_db,
                                           [ids[(k - 1) % m], ids[(k + (k - 1) // m) % m]])
                    for k in range(1, n + 1)}
            self.sweep_set_logins = sorted(made)
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

    def warm_up(self, inst: Instance) -> None:
        """Resolve each setup once (so the set logins exist) and check what it gives."""
        r = inst.roles
        with Client(inst.worker_ci) as worker:
            for dt, job, want in (("dt_admin", "vera", ["admin"]),
                                  ("dt_r10", "vera", [r["def"]]),
                                  ("dt_view", "vera", sorted(r.values())),
                                  ("dt_view", "walt", sorted([r["def"], r["emea"]]))):
                res = worker.resolve(inst.jobs[job], dt)
                if list(res.roles) != want:
                    raise RuntimeError(f"{inst.name} {dt}: resolved {res.roles}, expected {want}")

    def resolve_login(self, inst: Instance, job: str, datatable: str = "dt_view") -> str:
        """The login ``job`` of ``inst`` resolves to on ``datatable`` (as the worker)."""
        with Client(inst.worker_ci) as worker:
            return worker.resolve(inst.jobs[job], datatable).login
