"""The managed install profile (issue 24): a metadata database set up as on Amazon RDS, Cloud
SQL, Azure, Supabase or Neon, where nobody is superuser. The package owner owns the database
(as the service's admin role could make it), runs sql/managed.sql itself, and the one act a
superuser does here is the extension step, which those services let their admin role do. Runs
on every version whatever DTR_PROFILE says; `make test`'s 17-managed run puts every other test
on such databases too."""

from __future__ import annotations

import secrets

import psycopg
import pytest
from psycopg import sql

from datatable_roles.errors import NotInstalled
from datatable_roles.migrate import MANAGED_SQL, check_can_migrate, migrate
from support import ACME, MetaDB, authenticates, connect

EXTENSION_STEP = "CREATE EXTENSION IF NOT EXISTS dblink SCHEMA datatable_roles_dblink"


@pytest.fixture
def managed_meta(cluster, scratch, uid) -> MetaDB:
    """A metadata database installed the managed way, the worker granted."""
    db = f"{uid}_managed"
    scratch.databases.append(db)
    with cluster.connect_super() as su:
        su.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(db), sql.Identifier(cluster.owner)))
    owner = cluster.owner_conninfo(db)
    cluster.psql_file(MANAGED_SQL, db, conninfo=owner, owner=cluster.owner)
    with connect(owner) as conn:  # before the extension step, migrate says what is missing
        with pytest.raises(NotInstalled) as missing:
            check_can_migrate(conn)
    assert "managed.sql" in missing.value.hint and EXTENSION_STEP in missing.value.hint
    with cluster.connect_super(db) as su:
        su.execute(EXTENSION_STEP)
    migrate(owner)
    with connect(owner) as conn:
        conn.execute("SELECT datatable_roles.grant_worker(%s)", [cluster.worker])
    return MetaDB(name=db, owner_conninfo=owner, worker_conninfo=cluster.worker_conninfo(db),
                  super_conninfo=cluster.superuser_conninfo(db))


def superuser_code(conninfo: str) -> list[str]:
    """Functions in the database owned by a superuser, but PostgreSQL's own and those of
    extensions (dblink)."""
    with connect(conninfo) as conn:
        return [name for (name,) in conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc AS p"
            " JOIN pg_roles AS r ON r.oid = p.proowner"
            " WHERE r.rolsuper AND p.pronamespace NOT IN"
            "  ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)"
            " AND NOT EXISTS (SELECT FROM pg_depend AS d WHERE d.classid = 'pg_proc'::regclass"
            "  AND d.objid = p.oid AND d.deptype = 'e') ORDER BY 1")]


def test_a_managed_install_has_no_superuser_code_and_says_its_profile(managed_meta):
    assert superuser_code(managed_meta.super_conninfo) == []
    with connect(managed_meta.owner_conninfo) as conn:
        assert conn.execute("SELECT to_regnamespace('datatable_roles_guard')").fetchone() == (
            None,)
        assert conn.execute("SELECT datatable_roles.status_report() ->> 'profile'"
                            ).fetchone() == ("managed",)
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                            ).fetchone() == (False,)
        # PUBLIC may not connect to the metadata database: managed.sql took it
        assert conn.execute("SELECT has_database_privilege('public', current_database(),"
                            " 'CONNECT')").fetchone() == (False,)


def test_a_managed_install_serves_viewers_and_heals_a_rekeyed_login(managed_meta, make_world):
    """The main job on a managed install: per-viewer rows through real RLS, and a login a
    script re-keyed healed by the worker's report of the refused connection."""
    w = make_world(meta=managed_meta, **ACME)
    w.set_default("main", None)
    for viewer, rows in (("alice", "1,4"), ("bob", "2,5"), ("carol", "1,2,4,5")):
        r = w.resolve(w.job(viewer))
        with psycopg.connect(w.login_conninfo(r.login, r.password, r.dbname),
                             autocommit=True) as conn:
            if len(r.roles) == 1:
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(r.roles[0])))
            got = conn.execute("SELECT string_agg(id::text, ',' ORDER BY id) FROM orders"
                               ).fetchone()[0]
        assert got == rows, viewer
    job = w.job("carol")
    r = w.resolve(job)
    private = "mine-" + secrets.token_hex(8)
    with psycopg.connect(w.login_conninfo(r.login, r.password, r.dbname),
                         autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER ROLE CURRENT_USER PASSWORD {}").format(
            sql.Literal(private)))
    assert w.resolve(job) == r  # handed out as stored: nothing reads pg_authid
    assert w.heal(r.login) == "healed"
    healed = w.resolve(job)
    assert healed.login == r.login and authenticates(w, healed.login, healed.password)
    assert not authenticates(w, r.login, private)
    assert w.heal(r.login) == "works"
    report = w.sweep()
    assert report["unfinished"] == [], report


# ---- login keepers (16+ without the guard) ---------------------------------------------------

def keeper_of(w, login: str) -> str:
    return w.call("SELECT datatable_roles.login_keeper(%s)", [login])[0][0]


def test_the_sweep_acts_on_a_login_as_its_keeper(managed_meta, make_world):
    """From 16 on, each login is made with a keeper holding ADMIN OPTION on it, and the sweep
    changes the login as the keeper, so that PostgreSQL's check walks the keeper's few
    memberships, not every role the owner made. Seen where it leaves a trace: the sweep's
    first step, for a login that owns a table, makes the link login a member of it, and the
    grant's grantor is the keeper. The owner's session is the owner again after each step,
    and the sweep then drops the login."""
    w = make_world(meta=managed_meta, **ACME)
    w.set_default("main", None)
    r = w.resolve(w.job("carol"))
    su = w.su("postgres")
    if int(su.execute("SHOW server_version_num").fetchone()[0]) < 160000:
        assert w.call("SELECT datatable_roles.ensure_login_keeper(%s)", [r.login]) == [(None,)]
        pytest.skip("ADMIN OPTION is needed from PostgreSQL 16 on: no keepers on 15")
    keeper = keeper_of(w, r.login)
    assert su.execute(
        "SELECT m.admin_option, m.grantor::regrole::text FROM pg_auth_members AS m"
        " WHERE m.roleid = %s::regrole AND m.member = %s::regrole",
        [r.login, keeper]).fetchone() == (True, w.cluster.owner)
    w.su(w.dbname).execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(
        sql.Identifier(r.login)))
    with psycopg.connect(w.login_conninfo(r.login, r.password, r.dbname),
                         autocommit=True) as conn:
        conn.execute("CREATE TABLE carol_notes (note text)")
    w.advance_clock("40 days")
    link = w.call("SELECT datatable_roles.link_login()")[0][0]
    with w.connect_owner() as owner:
        with owner.transaction():
            assert owner.execute(
                "SELECT datatable_roles.sweep_take_away(%s,"
                " datatable_roles.sweep_cutoff(NULL))", [r.login]).fetchone() == (True,)
            assert owner.execute("SELECT current_user, current_setting('role')").fetchone() \
                == (w.cluster.owner, "none")
        assert su.execute(
            "SELECT m.grantor::regrole::text FROM pg_auth_members AS m"
            " WHERE m.roleid = %s::regrole AND m.member = %s::regrole",
            [r.login, link]).fetchone() == (keeper,)
        assert w.role_state(r.login) == (True, False)
        report = w.sweep(owner)
        assert report["dropped"] == 1 and report["unfinished"] == [], report
        assert owner.execute("SELECT current_user, current_setting('role')").fetchone() == (
            w.cluster.owner, "none")
    assert w.role_state(r.login) == (False, False)
    assert w.table_owner("carol_notes") == w.admin_login


def test_a_keeper_gives_no_one_a_privilege(managed_meta, make_world):
    """A keeper is NOLOGIN, NOINHERIT, and the owner its only member (SET, no INHERIT, so
    the owner inherits nothing through it): it holds none of its logins' privileges, and no
    login reaches it."""
    w = make_world(meta=managed_meta, **ACME)
    w.set_default("main", None)
    r = w.resolve(w.job("carol"))
    su = w.su("postgres")
    if int(su.execute("SHOW server_version_num").fetchone()[0]) < 160000:
        pytest.skip("no keepers on 15")
    keeper = keeper_of(w, r.login)
    assert su.execute(
        "SELECT rolcanlogin, rolinherit, rolcreaterole, rolsuper FROM pg_roles"
        " WHERE rolname = %s", [keeper]).fetchone() == (False, False, True, False)
    assert su.execute(
        "SELECT array_agg(format('%%s:%%s:%%s', m.member::regrole, m.inherit_option,"
        " m.set_option) ORDER BY m.member::regrole::text) FROM pg_auth_members AS m"
        " WHERE m.roleid = %s::regrole AND m.set_option", [keeper]).fetchone()[0] == [
        f"{w.cluster.owner}:f:t"]
    data = w.su(w.dbname)
    assert data.execute("SELECT has_table_privilege(%s, 'orders', 'SELECT')",
                        [keeper]).fetchone() == (False,)
    assert data.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", [r.login, keeper]
                        ).fetchone() == (False,)
    with psycopg.connect(w.login_conninfo(r.login, r.password, r.dbname),
                         autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(keeper)))


def test_a_role_made_first_under_a_keepers_name_is_not_used(managed_meta, make_world, uid):
    """Keepers are named predictably (<login group>_k<2 hex digits>), so another CREATEROLE
    role, such as another instance's owner, could make one first and administer every login
    made with it. A role of that name that is not the package's (another member than the
    owner) is passed over: the login is made without a keeper, its memberships name no
    stranger, and the sweep still drops it as the owner."""
    w = make_world(meta=managed_meta, **ACME)
    w.set_default("main", None)
    su = w.su("postgres")
    if int(su.execute("SHOW server_version_num").fetchone()[0]) < 160000:
        pytest.skip("no keepers on 15")
    intruder = f"{uid}_intruder"
    su.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(intruder)))
    names = [n for (n,) in w.call(
        "SELECT datatable_roles.login_keeper('wm_set_' || lpad(to_hex(i), 2, '0'))"
        " FROM generate_series(0, 255) AS i")]
    for name in names:   # as another CREATEROLE role would: NOLOGIN, the intruder its member
        su.execute(sql.SQL("CREATE ROLE {} NOLOGIN NOINHERIT CREATEROLE ROLE {}").format(
            sql.Identifier(name), sql.Identifier(intruder)))
    r = w.resolve(w.job("carol"))
    assert w.call("SELECT datatable_roles.ensure_login_keeper(%s)", [r.login]) == [(None,)]
    assert su.execute(
        "SELECT count(*) FROM pg_auth_members AS m WHERE m.roleid = %s::regrole"
        " AND m.member::regrole::text = ANY(%s)", [r.login, names]).fetchone() == (0,)
    w.advance_clock("40 days")
    report = w.sweep()
    assert report["dropped"] == 1 and report["unfinished"] == [], report


def test_what_a_keeper_may_not_do_the_owner_does(managed_meta, make_world):
    """The sweep's re-keying names only the attributes to take away: NOCREATEDB for a login someone gave
    CREATEDB. PostgreSQL lets only a CREATEDB role name it, which a keeper is not: the
    statement then runs as the owner (here given CREATEDB, as a managed service's admin role
    has it), and the login is re-keyed and stripped as before keepers."""
    w = make_world(meta=managed_meta, **ACME)
    w.set_default("main", None)
    su = w.su("postgres")
    if int(su.execute("SHOW server_version_num").fetchone()[0]) < 160000:
        pytest.skip("no keepers on 15")
    r = w.resolve(w.job("carol"))
    owner = sql.Identifier(w.cluster.owner)
    su.execute(sql.SQL("ALTER ROLE {} CREATEDB").format(owner))
    try:
        su.execute(sql.SQL("ALTER ROLE {} CREATEDB").format(sql.Identifier(r.login)))
        w.advance_clock("2 days")   # past rotate_every, well before unused_after
        report = w.sweep()
        # Healed (its attributes changed) or rotated: re-keyed by make_login either way.
        assert report["healed"] + report["rotated"] >= 1 and report["unfinished"] == [], report
    finally:
        su.execute(sql.SQL("ALTER ROLE {} NOCREATEDB").format(owner))
    assert su.execute("SELECT rolcreatedb FROM pg_roles WHERE rolname = %s",
                      [r.login]).fetchone() == (False,)
    again = w.resolve(w.job("carol"))
    assert again.login == r.login and again.password != r.password
    assert authenticates(w, again.login, again.password)
