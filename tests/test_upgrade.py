"""Upgrade: a database installed from any landed state of main, in use, migrated to head.

Each commit of test_migrations.LANDED (release 0.1.0 first) is installed as it was: its
bootstrap as superuser, then its migrations with yoyo as its `migrate` applied them (0.1.0
had no post-apply hook; later commits ship one, with the function sources beside it). The
world is made through that install's own functions: catalog roles, a data table under
row-level security, jobs, the logins their resolves handed out (a role's login and two set
logins), and a table owned by a set login. Then the operator's upgrade: head's
sql/bootstrap.sql again as superuser, and `migrate`. After it:

- the schema equals a fresh install's (the comparison tests/test_migrations.py makes);
- every login handed out before is refused (issue 11: a role's own login and a set login
  reached every database where their roles were mapped): fewer rows, never more;
- resolve gives the same roles and the same rows, through logins scoped to the database;
- the sweep drops the old set logins at once, and the swept login's table passes to the
  admin login with its rows, inert.

Every later change proves that it reaches every landed state here.
"""

from __future__ import annotations

import secrets
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from yoyo import get_backend, read_migrations

from datatable_roles_lab.devcluster import dump_schema
from datatable_roles.migrate import MIGRATIONS_DIR, SQL_DIR, migrate, yoyo_url

from test_migrations import LANDED, RELEASE_0_1_0, git


def release_path(commit: str, name: str) -> str:
    """Where `name` (migrations, functions, bootstrap.sql) lived at `commit`: in the
    package since issue 9, before that at the top (migrations/, sql/)."""
    packaged = f"python/datatable_roles/sql/{name}"
    try:
        git("cat-file", "-e", f"{commit}:{packaged}")
        return packaged
    except subprocess.CalledProcessError:
        return "sql/bootstrap.sql" if name == "bootstrap.sql" else name


def install_release(cluster, dbname: str, commit: str, workdir: Path) -> list[str]:
    """A metadata database installed from the migrations of `commit`, as that state of main
    did: its bootstrap as superuser, then its migrations as the owner, with its post-apply
    hook when it had one."""
    release = workdir / commit[:8]
    for name in ("migrations", "functions"):
        folder = release_path(commit, name)
        try:
            names = git("ls-tree", "-r", "--name-only", f"{commit}:{folder}").split()
        except subprocess.CalledProcessError:
            continue
        for n in names:
            if "__pycache__" not in n:
                (release / name / n).parent.mkdir(parents=True, exist_ok=True)
                (release / name / n).write_text(git("show", f"{commit}:{folder}/{n}"))
    (release / "bootstrap.sql").write_text(git("show", f"{commit}:{release_path(commit, 'bootstrap.sql')}"))
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(dbname), sql.Identifier(cluster.owner)))
    cluster.psql_file(release / "bootstrap.sql", dbname, owner=cluster.owner)
    migrations = read_migrations(str(release / "migrations"))
    assert bool(migrations.post_apply) == (commit != RELEASE_0_1_0)
    backend = get_backend(yoyo_url(cluster.owner_conninfo(dbname)))
    try:
        with backend.lock():
            pending = backend.to_apply(migrations)
            backend.apply_migrations_only(pending)
            if migrations.post_apply:
                backend.run_post_apply(migrations)
    finally:
        backend.connection.close()
    return [m.id for m in pending]


def fresh_schema_with_worker(cluster) -> str:
    """The schema of a fresh install at head whose worker role was granted."""
    dbname = "dtr_fresh_" + secrets.token_hex(4)
    try:
        cluster.create_metadata_database(dbname)
        with psycopg.connect(cluster.owner_conninfo(dbname), autocommit=True) as conn:
            conn.execute("SELECT datatable_roles.grant_worker(%s)", [cluster.worker])
        return dump_schema(cluster, dbname)
    finally:
        with cluster.connect_super() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(dbname)))


class Release:
    """The 0.1.0 install and the world in it, driven through the public SQL functions."""

    def __init__(self, cluster, dbname: str, uid: str):
        self.cluster, self.db, self.uid = cluster, dbname, uid
        self.owner = psycopg.connect(cluster.owner_conninfo(dbname), autocommit=True)
        self._worker: psycopg.Connection | None = None
        self.jobs: dict[str, uuid.UUID] = {}

    @property
    def worker(self) -> psycopg.Connection:
        """The worker's session, opened on first use: since 0012 the worker may connect only
        once grant_worker ran."""
        if self._worker is None:
            self._worker = psycopg.connect(self.cluster.worker_conninfo(self.db),
                                           autocommit=True)
        return self._worker

    def role(self, name: str) -> str:
        return f"{self.uid}_{name}"

    def build(self, orders_db) -> None:
        o = self.owner
        o.execute("SELECT datatable_roles.grant_worker(%s)", [self.cluster.worker])
        o.execute("SELECT add_workspace('ws')")
        for user in ("pub", "alice", "bob", "carol", "dave"):
            o.execute("SELECT add_workspace_user('ws', %s, %s)", [user, f"{user}@x.io"])
        for user in ("alice", "carol"):
            o.execute("SELECT add_group_member('ws', 'emea', %s)", [user])
        o.execute("SELECT set_folder_access('ws', 'apacdocs', 'u/dave', 'read')")
        tenants = {"emea": ["g/emea"], "us": ["u/bob", "u/carol", "u/dave"],
                   "apac": ["f/apacdocs", "u/dave"]}
        for name in tenants:
            o.execute("SELECT create_datatable_role(%s)", [self.role(name)])
        # The RLS fixture: orders 1 emea, 2 us, 3 apac, 4 emea, 5 us, a policy per role.
        self.dt_db, self.admin, admin_password = orders_db({n: self.role(n) for n in tenants})
        with self.cluster.connect_super(self.dt_db) as su:
            su.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(
                sql.Identifier(self.role("emea"))))
        for name in ("main", "legacy"):
            o.execute("SELECT register_datatable('ws', %s, %s, %s, %s)",
                      [name, self.dt_db, self.admin, admin_password])
        for name, keys in tenants.items():
            o.execute("SELECT set_datatable_role_tenants('ws', 'main', %s, %s)",
                      [self.role(name), keys])
        o.execute("SELECT set_datatable_default_role('ws', 'main', NULL)")
        for viewer in ("alice", "bob", "carol", "dave", None):
            job = uuid.uuid4()
            o.execute("SELECT record_job_start(%s, 'ws', 'u/pub', 'app', %s)",
                      [job, f"{viewer}@x.io" if viewer else None])
            self.jobs[viewer or "anonymous"] = job

    def resolve(self, viewer: str, datatable: str = "main") -> tuple:
        return self.worker.execute(
            "SELECT dbname, login, password, roles FROM resolve_datatable_role(%s, %s)",
            [self.jobs[viewer], datatable]).fetchone()

    def sees(self, dbname: str, login: str, password: str) -> str:
        """Log in as the login and return which orders it sees ('' for none)."""
        with psycopg.connect(self.cluster.conninfo(login, password, dbname)) as conn:
            (ids,) = conn.execute(
                "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM orders"
            ).fetchone()
        return ids

    def close(self) -> None:
        self.owner.close()
        if self._worker is not None:
            self._worker.close()


def server_version(cluster) -> int:
    with cluster.connect_super() as conn:
        return int(conn.execute("SHOW server_version_num").fetchone()[0])


# Landed states whose logins were the roles' own and unscoped set logins (before 0012).
BEFORE_SCOPED_LOGINS = set(LANDED[:2])


@pytest.fixture(params=LANDED, ids=lambda c: c[:8])
def release(request, cluster, scratch, orders_db, uid, tmp_path):
    """A landed install with its world; None where it does not install: 0.1.0 on
    PostgreSQL 16 and later (asserted here), whose installs reach 16+ only through
    pg_upgrade (tests/pg_upgrade_check.py)."""
    commit = request.param
    dbname = "dtr_up_" + secrets.token_hex(4)
    scratch.databases.append(dbname)
    if commit == RELEASE_0_1_0 and server_version(cluster) >= 160000:
        with pytest.raises(psycopg.errors.InsufficientPrivilege,
                           match="Only roles with the ADMIN option"):
            install_release(cluster, dbname, commit, tmp_path)
        yield None
        return
    applied = install_release(cluster, dbname, commit, tmp_path)
    assert applied[0] == "0001_tables" and "0009_lifecycle" in applied
    world = Release(cluster, dbname, uid)
    world.commit = commit
    world.installed = applied
    try:
        world.build(orders_db)
        yield world
    finally:
        world.close()


def test_a_landed_install_in_use_upgrades_to_head(cluster, release):
    if release is None:  # 0.1.0 on PostgreSQL 16+: refused, as the fixture asserted
        return
    w = release
    before = {v: w.resolve(v) for v in ("alice", "bob", "carol", "dave")}
    before["legacy"] = w.resolve("alice", "legacy")
    assert before["alice"][3] == [w.role("emea")]
    if w.commit in BEFORE_SCOPED_LOGINS:  # a role's result was the role's own login
        assert before["alice"][1] == w.role("emea")
    assert before["carol"][3] == sorted([w.role("emea"), w.role("us")])
    assert before["carol"][1].startswith("wm_set_") and before["dave"][1].startswith("wm_set_")
    assert before["legacy"][1:4:2] == (w.admin, ["admin"])
    # A set login owns what it creates.
    carol_db, carol_login, carol_password, _ = before["carol"]
    with psycopg.connect(cluster.conninfo(carol_login, carol_password, carol_db)) as conn:
        conn.execute("CREATE TABLE carol_notes (note text)")
        conn.execute("INSERT INTO carol_notes VALUES ('kept'), ('across the upgrade')")

    # The operator's upgrade: bootstrap again (it gained the guard), then migrate.
    cluster.psql_file(SQL_DIR / "bootstrap.sql", w.db, owner=cluster.owner)
    newest = sorted(p.stem for p in MIGRATIONS_DIR.glob("[0-9]*.sql"))[-1]
    # Nothing is pending when the landed commit had the newest migration already.
    assert (migrate(cluster.owner_conninfo(w.db)) or w.installed)[-1] == newest

    # The schema is exactly a fresh install's, the worker's grants included.
    assert dump_schema(cluster, w.db) == fresh_schema_with_worker(cluster)
    # The folders the lists named before are noted (0022), so jobs still capture them.
    assert w.owner.execute("SELECT workspace, folder FROM datatable_roles.tenant_folder"
                           ).fetchall() == [("ws", "apacdocs")]
    # Every data table and login of before is on the server local (0023), the only one.
    assert w.owner.execute(
        "SELECT array_agg(DISTINCT name) FROM datatable_roles.server UNION ALL"
        " SELECT array_agg(DISTINCT server) FROM datatable_roles.datatable UNION ALL"
        " SELECT array_agg(DISTINCT server) FROM datatable_roles.datatable_role_set"
    ).fetchall() == [(["local"],)] * 3
    if w.commit not in BEFORE_SCOPED_LOGINS:
        # Installed with scoped logins (0012): the logins handed out before still work,
        # and resolve gives the same logins, roles and rows (here through the directory
        # seam of 0013, u/ keys bound to their users by the migration).
        after = {v: w.resolve(v) for v in ("alice", "bob", "carol", "dave")}
        assert {v: after[v][1:4:2] for v in after} == {
            v: before[v][1:4:2] for v in before if v != "legacy"}
        assert {v: w.sees(*after[v][:3]) for v in after} == {
            "alice": "1,4", "bob": "2,5", "carol": "1,2,4,5", "dave": "2,3,5"}
        return
    # Every login handed out before is refused now, the role's own login included;
    # the admin login, which the operator owns, still works.
    for v in ("alice", "bob", "carol", "dave"):
        with pytest.raises(psycopg.OperationalError):
            w.sees(*before[v][:3])
    assert w.sees(*before["legacy"][:3]) == "1,2,3,4,5"
    # Resolve gives the same roles and rows, through logins scoped to the database.
    after = {v: w.resolve(v) for v in ("alice", "bob", "carol", "dave")}
    assert {v: after[v][3] for v in after} == {v: before[v][3] for v in before if v != "legacy"}
    assert all(after[v][1].startswith("wm_set_") and after[v][1] != before[v][1] for v in after)
    assert {v: w.sees(*after[v][:3]) for v in after} == {
        "alice": "1,4", "bob": "2,5", "carol": "1,2,4,5", "dave": "2,3,5"}
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
        w.resolve("anonymous")
    assert refused.value.diag.constraint_name == "R5"

    # The sweep drops the old set logins at once (retired for good: no database),
    # and carol's table passes to the admin login with its rows, out of every
    # search path.
    (report,) = w.owner.execute("CALL sweep_unused_role_set_logins(NULL)").fetchone()
    assert report["dropped"] == 2 and report["unfinished"] == [], report
    with cluster.connect_super(carol_db) as su:
        schema, owner = su.execute(
            "SELECT schemaname, tableowner FROM pg_tables WHERE tablename = 'carol_notes'"
        ).fetchone()
        assert owner == w.admin and schema.startswith("wm_quarantine_")
        assert su.execute(sql.SQL("SELECT count(*) FROM {}.carol_notes").format(
            sql.Identifier(schema))).fetchone() == (2,)
        assert su.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                          [carol_login]).fetchone() == (0,)
