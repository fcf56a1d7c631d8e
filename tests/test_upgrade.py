"""Upgrade: a database installed from release 0.1.0, in use, migrated to head.

Release 0.1.0 is migrations 0001-0009 exactly as released, read from git history (commit
RELEASE_0_1_0), applied with yoyo as 0.1.0's `migrate` applied them (it had no post-apply
hook). The world is made through 0.1.0's own functions: catalog roles, a data table under
row-level security, jobs, the logins their resolves handed out (a role's login and two set
logins), and a table owned by a set login. After the upgrade:

- the schema equals a fresh install's (the comparison tests/test_migrations.py makes);
- every login handed out before still authenticates;
- resolve gives the same answers;
- retirement and the sweep work on the old logins, and the swept login's table passes to
  the admin login with its rows.

Every later change proves that it reaches 0.1.0 installs here.
"""

from __future__ import annotations

import secrets
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from yoyo import get_backend, read_migrations

from datatable_roles.devcluster import dump_schema
from datatable_roles.migrate import migrate, yoyo_url

from test_migrations import RELEASE_0_1_0, git


def install_release(cluster, dbname: str, commit: str, workdir: Path) -> list[str]:
    """A metadata database installed from the migrations of `commit`, as that release did:
    bootstrap as superuser, then its migrations as the owner (no post-apply hook)."""
    release = workdir / "release"
    (release / "migrations").mkdir(parents=True)
    names = git("ls-tree", "--name-only", f"{commit}:migrations").split()
    for name in names:
        (release / "migrations" / name).write_text(git("show", f"{commit}:migrations/{name}"))
    (release / "bootstrap.sql").write_text(git("show", f"{commit}:sql/bootstrap.sql"))
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(dbname), sql.Identifier(cluster.owner)))
    cluster.psql_file(release / "bootstrap.sql", dbname, owner=cluster.owner)
    migrations = read_migrations(str(release / "migrations"))
    assert not migrations.post_apply, "release 0.1.0 had no post-apply hook"
    backend = get_backend(yoyo_url(cluster.owner_conninfo(dbname)))
    try:
        with backend.lock():
            pending = backend.to_apply(migrations)
            backend.apply_migrations_only(pending)
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
        self.worker = psycopg.connect(cluster.worker_conninfo(dbname), autocommit=True)
        self.jobs: dict[str, uuid.UUID] = {}

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
        tenants = {"emea": ["g/emea"], "us": ["u/bob", "u/carol", "u/dave"], "apac": ["u/dave"]}
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
        self.worker.close()


def server_version(cluster) -> int:
    with cluster.connect_super() as conn:
        return int(conn.execute("SHOW server_version_num").fetchone()[0])


@pytest.fixture
def release(cluster, scratch, orders_db, uid, tmp_path):
    """The 0.1.0 install with its world; None on PostgreSQL 16 and later, where 0.1.0 does
    not install (asserted here): its installs reach 16+ only through pg_upgrade
    (tests/test_pg_upgrade.py)."""
    dbname = "dtr_up_" + secrets.token_hex(4)
    scratch.databases.append(dbname)
    if server_version(cluster) >= 160000:
        with pytest.raises(psycopg.errors.InsufficientPrivilege,
                           match="Only roles with the ADMIN option"):
            install_release(cluster, dbname, RELEASE_0_1_0, tmp_path)
        yield None
        return
    applied = install_release(cluster, dbname, RELEASE_0_1_0, tmp_path)
    assert applied[-1] == "0009_lifecycle" and len(applied) == 9
    world = Release(cluster, dbname, uid)
    try:
        world.build(orders_db)
        yield world
    finally:
        world.close()


def test_an_install_of_release_0_1_0_in_use_upgrades_to_head(cluster, release):
    if release is None:  # PostgreSQL 16+: 0.1.0 was refused, as the fixture asserted
        return
    w = release
    before = {v: w.resolve(v) for v in ("alice", "bob", "carol", "dave")}
    before["legacy"] = w.resolve("alice", "legacy")
    assert before["alice"][3] == [w.role("emea")]
    assert before["carol"][3] == sorted([w.role("emea"), w.role("us")])
    assert before["carol"][1].startswith("wm_set_") and before["dave"][1].startswith("wm_set_")
    assert before["legacy"][1:4:2] == (w.admin, ["admin"])
    # A set login owns what it creates.
    carol_db, carol_login, carol_password, _ = before["carol"]
    with psycopg.connect(cluster.conninfo(carol_login, carol_password, carol_db)) as conn:
        conn.execute("CREATE TABLE carol_notes (note text)")
        conn.execute("INSERT INTO carol_notes VALUES ('kept'), ('across the upgrade')")

    assert migrate(cluster.owner_conninfo(w.db)) == ["0010_functions_apart",
                                                     "0011_link_memberships"]

    # The schema is exactly a fresh install's, the worker's grants included (resolve was
    # dropped and made anew on the way).
    assert dump_schema(cluster, w.db) == fresh_schema_with_worker(cluster)
    # The link login holds what a fresh install's holds: every catalog role and the admin
    # login, and no longer the package owner.
    with cluster.connect_super(w.db) as su:
        assert {r for (r,) in su.execute(
            "SELECT g.rolname FROM pg_auth_members AS m JOIN pg_roles AS g ON g.oid = m.roleid"
            " WHERE m.member = (SELECT login FROM datatable_roles.link_credential)::regrole"
        )} == {w.role("emea"), w.role("us"), w.role("apac"), w.admin}
    # Every login handed out before still authenticates, and sees the same rows.
    assert {v: w.sees(*before[v][:3]) for v in before} == {
        "alice": "1,4", "bob": "2,5", "carol": "1,2,4,5", "dave": "2,3,5", "legacy": "1,2,3,4,5"}
    # Resolve gives the same answers (nothing was due for rotation).
    assert {v: w.resolve(v) for v in ("alice", "bob", "carol", "dave")} == {
        v: before[v] for v in ("alice", "bob", "carol", "dave")}
    assert w.resolve("alice", "legacy") == before["legacy"]
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
        w.resolve("anonymous")
    assert refused.value.diag.constraint_name == "R5"

    # Retirement reaches an old set login: dave's loses its password, and dave now
    # resolves to the one role left to him.
    w.owner.execute("SELECT set_datatable_role_enabled(%s, false)", [w.role("apac")])
    with pytest.raises(psycopg.OperationalError):
        w.sees(*before["dave"][:3])
    assert w.resolve("dave")[1:4:2] == (w.role("us"), [w.role("us")])

    # The sweep reaches old set logins: 31 days on, carol's and dave's go, and carol's
    # table passes to the admin login with its rows.
    with cluster.connect_super(w.db) as su:
        su.execute("UPDATE datatable_roles.settings SET clock_offset = '31 days'")
    (report,) = w.owner.execute("CALL sweep_unused_role_set_logins(NULL)").fetchone()
    assert report["dropped"] == 2 and report["unfinished"] == [], report
    with cluster.connect_super(carol_db) as su:
        assert su.execute(
            "SELECT tableowner, (SELECT count(*) FROM carol_notes) FROM pg_tables"
            " WHERE tablename = 'carol_notes'").fetchone() == (w.admin, 2)
        assert su.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                          [carol_login]).fetchone() == (0,)
    # Carol's set login is made again on demand, under the same name, and works.
    again = w.resolve("carol")
    assert again[1] == carol_login and again[2] != carol_password
    assert w.sees(*again[:3]) == "1,2,4,5"
