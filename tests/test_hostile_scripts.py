"""Hostile scripts (issue 11, docs/trust.md): each attack of the issue's findings 2 to 8,
tried as a job's code would try it (logged in with the login and password a resolve handed
out, real connections against the real cluster), and shown to do no harm now.

Finding 1 (objects left behind) has its own file. Admin calls run as the package owner,
resolves as the worker role; time moves by settings.clock_offset, never by sleeping.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
import time
import uuid

import psycopg
import pytest
from psycopg import errors, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from datatable_roles.scram import scram_sha256_verifier
from support import (MANAGER, 
    FaultHold, MetaDB, Resolved, Runner, Scratch, World, arm, authenticates, connect,
    create_table_as, flush_stats,
)


@pytest.fixture(scope="module")
def operator_template(cluster) -> str:
    """A metadata database made once as an operator makes one (sql/bootstrap.sql as the
    superuser, then the migrations as the owner), kept as this module's template."""
    made = Scratch(cluster)
    name = "dtr_hostile_" + secrets.token_hex(4)
    made.databases.append(name)
    cluster.create_metadata_database(name)
    yield name
    made.clean()


@pytest.fixture
def meta_db(operator_template, cluster, scratch) -> MetaDB:
    """A copy of the operator-made metadata database, made an instance of its own by the
    package (datatable_roles.become_own_instance, then grant_worker), overriding conftest's
    copy of the harness's template: what findings 4 and 6 are about (CONNECT on the metadata
    database taken from PUBLIC, the instance's own login group and link login) is then the
    package's doing, not the harness's re-creation of it."""
    name = cluster.clone_metadata_database(template=operator_template)
    scratch.databases.append(name)
    return MetaDB(name=name, owner_conninfo=cluster.owner_conninfo(name),
                  worker_conninfo=cluster.worker_conninfo(name),
                  super_conninfo=cluster.superuser_conninfo(name))


def order_ids(conn: psycopg.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM orders ORDER BY id")]


def script(w: World, r: Resolved, dbname: str | None = None,
           tcp: bool = True) -> psycopg.Connection:
    """A session as the job's code gets it: the resolved login and password; a one-role
    login acts as its role (the startup option the platform passes, R6)."""
    kw = {}
    if len(r.roles) == 1 and r.roles != ["admin"]:
        kw["options"] = f"-c role={r.roles[0]}"
    return connect(w.login_conninfo(r.login, r.password, dbname or r.dbname, tcp), **kw)


def connect_error(w: World, login: str, password: str, dbname: str, tcp: bool = True) -> str:
    """The server's reason for refusing the connection ('' when it connected)."""
    try:
        with connect(w.login_conninfo(login, password, dbname, tcp)) as conn:
            conn.execute("SELECT 1")
        return ""
    except psycopg.OperationalError as e:
        return str(e)


def alter_self(conn: psycopg.Connection, clause: sql.Composable) -> None:
    """What a script runs on its own login: back to the login itself, then ALTER ROLE."""
    conn.execute("SET ROLE NONE")
    conn.execute(sql.SQL("ALTER ROLE CURRENT_USER ") + clause)


def role_settings(w: World, login: str) -> list[tuple[str | None, list[str]]]:
    """(database or None for every database, settings) of the login, as the superuser."""
    return w.su("postgres").execute(
        "SELECT d.datname, rs.setconfig FROM pg_db_role_setting AS rs"
        " JOIN pg_roles AS r ON r.oid = rs.setrole"
        " LEFT JOIN pg_database AS d ON d.oid = rs.setdatabase"
        " WHERE r.rolname = %s ORDER BY 1", [login]).fetchall()


def status(w: World) -> dict:
    return w.call("SELECT datatable_roles.status_report()")[0][0]


def advance_past_rotation(w: World) -> None:
    w.call("UPDATE datatable_roles.settings"
           " SET clock_offset = clock_offset + rotate_every + interval '1 hour'")


def login_group(w: World) -> str:
    return w.call("SELECT login_group FROM datatable_roles.settings")[0][0]


def plain_login(w: World, name: str) -> str:
    """A LOGIN role of nobody's, with a password (returned); dropped by the scratch."""
    password = secrets.token_urlsafe(18)
    w.su("postgres").execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
        sql.Identifier(name), sql.Literal(scram_sha256_verifier(password))))
    return password


# ---- the world of findings 2, 4 and 6 -------------------------------------------------------

# Orders 1 emea, 2 us, 3 apac, 4 emea, 5 us; emea's policy shows its rows to finance, us's to
# ops. vic and val are tenants of finance alone (one login, R6), sue and sid of finance and
# ops (one set login, R7); the publisher starts their jobs; no default role.
HOSTILE = dict(
    users={"pub": [], "vic": [], "val": [], "sue": [], "sid": []},
    tenants={"finance": ["u/vic", "u/val", "u/sue", "u/sid"], "ops": ["u/sue", "u/sid"]},
    orders={"emea": "finance", "us": "ops"},
    default=None, identity="u/pub", jobs=["vic", "val", "sue", "sid"],
)

# (attacker, another viewer of the same login, the rows that login reads)
SHARED = {
    "role": ("vic", "val", [1, 4]),
    "set": ("sue", "sid", [1, 2, 4, 5]),
}
KINDS = pytest.mark.parametrize("kind", list(SHARED))


@pytest.fixture
def world(make_world) -> World:
    return make_world(**HOSTILE)


# ---- finding 2: a login that re-keys or reconfigures itself ---------------------------------

@KINDS
def test_a_login_that_rekeys_itself_is_healed_when_its_next_connection_is_refused(world, kind):
    """Nothing reads pg_authid (issue 24): the next resolve hands out the stored password,
    the job's connection is refused, and the worker's heal_refused_login proves the stored
    password fails with a real login before it re-keys the login."""
    w = world
    attacker, other, rows = SHARED[kind]
    r = w.resolve(attacker)
    private = "mine-" + secrets.token_hex(8)
    with script(w, r) as conn:
        assert order_ids(conn) == rows
        alter_self(conn, sql.SQL("PASSWORD {}").format(sql.Literal(private)))
    # what the attack did: the stored password is dead, the script's author holds the login
    assert not authenticates(w, r.login, r.password)
    assert authenticates(w, r.login, private)

    stale = w.resolve(other)
    assert stale == r, "the hot path reads no password: the stored one is handed out"
    assert not authenticates(w, stale.login, stale.password)  # the one refused connection
    assert w.heal(r.login) == "healed"
    healed = w.resolve(other)
    assert healed.login == r.login and healed.roles == r.roles
    assert healed.password not in (r.password, private)
    with script(w, healed) as conn:
        assert order_ids(conn) == rows
    assert not authenticates(w, r.login, private), "the script's private password still works"
    assert not authenticates(w, r.login, r.password)
    assert w.rows()[r.login][0] == healed.password
    # and the attacker's own next job gets the same, working login
    again = w.resolve(attacker)
    assert again == healed


@KINDS
def test_a_spurious_heal_request_never_rekeys_a_working_login(world, kind):
    """A worker (or anyone granted the call) reporting a login that logs in changes
    nothing: the stored password is proven to work first."""
    w = world
    attacker, _other, rows = SHARED[kind]
    r = w.resolve(attacker)
    assert w.heal(r.login) == "works"
    assert w.heal(r.login) == "works"
    assert w.resolve(attacker) == r
    assert w.rows()[r.login][0] == r.password
    with script(w, r) as conn:
        assert order_ids(conn) == rows


def test_a_heal_request_for_a_login_the_instance_does_not_hand_out_is_refused(world):
    w = world
    for name in (w.cluster.owner, "postgres", "no_such_login_" + secrets.token_hex(4)):
        with pytest.raises(errors.UndefinedObject):
            w.heal(name)


SETTINGS = {
    "statement_timeout": ("statement_timeout", "1ms", "0"),
    "read_only": ("default_transaction_read_only", "on", "off"),
}


@KINDS
@pytest.mark.parametrize("where", ["global", "in_database"])
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_setting_a_login_gives_itself_is_gone_at_the_next_resolve(world, kind, where, setting):
    w = world
    attacker, other, rows = SHARED[kind]
    name, value, default = SETTINGS[setting]
    r = w.resolve(attacker)
    with script(w, r) as conn:
        scope = sql.SQL("IN DATABASE {} ").format(sql.Identifier(r.dbname)) \
            if where == "in_database" else sql.SQL("")
        alter_self(conn, scope + sql.SQL("SET {} = {}").format(sql.Identifier(name),
                                                               sql.Literal(value)))
    expected_db = r.dbname if where == "in_database" else None
    assert role_settings(w, r.login) == [(expected_db, [f"{name}={value}"])], \
        "the attack did not stick: nothing to heal"

    healed = w.resolve(other)
    assert healed.login == r.login and healed.password != r.password
    assert role_settings(w, r.login) == []
    with script(w, healed) as conn:
        assert conn.execute("SELECT current_setting(%s)", [name]).fetchone() == (default,)
        conn.execute("SELECT pg_sleep(0.01)")  # longer than the planted statement_timeout
        assert order_ids(conn) == rows
        conn.execute("CREATE TEMP TABLE scratch_pad (x integer)")  # writes again
        conn.execute("INSERT INTO scratch_pad VALUES (1)")
    assert not authenticates(w, r.login, r.password)


# The two settings PostgreSQL refuses to set or reset inside a SECURITY DEFINER function
# (what resolve runs in), each as the login's own name for it: one of its roles, or itself.
IDENTITY_SETTINGS = {
    "role": lambda r: r.roles[-1],
    "session_authorization": lambda r: r.login,
}


@KINDS
@pytest.mark.parametrize("where", ["global", "in_database"])
@pytest.mark.parametrize("setting", list(IDENTITY_SETTINGS))
def test_a_role_or_session_authorization_a_login_gives_itself_is_gone_at_the_next_resolve(
        world, kind, where, setting):
    """Issue 21 item 8: `ALTER ROLE CURRENT_USER SET role = ...` (or session_authorization)
    made every resolve of the login fail with 42501 until a sweep."""
    w = world
    attacker, other, rows = SHARED[kind]
    r = w.resolve(attacker)
    value = IDENTITY_SETTINGS[setting](r)
    with script(w, r) as conn:
        scope = sql.SQL("IN DATABASE {} ").format(sql.Identifier(r.dbname)) \
            if where == "in_database" else sql.SQL("")
        alter_self(conn, scope + sql.SQL("SET {} = {}").format(sql.Identifier(setting),
                                                               sql.Literal(value)))
    expected_db = r.dbname if where == "in_database" else None
    assert role_settings(w, r.login) == [(expected_db, [f"{setting}={value}"])], \
        "the attack did not stick: nothing to heal"

    healed = w.resolve(other)
    assert healed.login == r.login and healed.password != r.password
    assert role_settings(w, r.login) == []
    with script(w, healed) as conn:
        assert order_ids(conn) == rows
        assert conn.execute("SELECT session_user").fetchone() == (r.login,)
    assert not authenticates(w, r.login, r.password)
    assert w.resolve(attacker) == healed


@KINDS
@pytest.mark.parametrize("setting", list(IDENTITY_SETTINGS))
def test_a_login_that_sets_its_role_and_changes_its_password_is_healed_at_the_next_resolve(
        world, kind, setting):
    """The package cannot log in as the login to reset the setting: it is made again."""
    w = world
    attacker, other, rows = SHARED[kind]
    r = w.resolve(attacker)
    private = "mine-" + secrets.token_hex(8)
    with script(w, r) as conn:
        alter_self(conn, sql.SQL("SET {} = {}").format(
            sql.Identifier(setting), sql.Literal(IDENTITY_SETTINGS[setting](r))))
        alter_self(conn, sql.SQL("IN DATABASE {} SET {} = {}").format(
            sql.Identifier(r.dbname), sql.Identifier(setting),
            sql.Literal(IDENTITY_SETTINGS[setting](r))))
        alter_self(conn, sql.SQL("PASSWORD {}").format(sql.Literal(private)))
    assert len(role_settings(w, r.login)) == 2

    healed = w.resolve(other)
    assert healed.login == r.login and healed.roles == r.roles
    assert role_settings(w, r.login) == []
    with script(w, healed) as conn:
        assert order_ids(conn) == rows
        assert conn.execute("SELECT session_user").fetchone() == (r.login,)
    assert not authenticates(w, r.login, private)
    assert w.resolve(attacker) == healed


def test_a_login_that_sets_its_role_changes_its_password_and_owns_something_is_named(world):
    """The limit: such a login can be neither reset as itself nor dropped, so the resolve
    says so (55000, CONSTRAINT login_settings) instead of a misleading 42501, and the sweep
    takes it back."""
    w = world
    attacker, other, rows = SHARED["set"]
    r = w.resolve(attacker)
    with script(w, r) as conn:
        conn.execute("CREATE TEMP TABLE kept (x integer)")  # owned while this session lives
        alter_self(conn, sql.SQL("SET role = {}").format(sql.Literal(r.roles[-1])))
        alter_self(conn, sql.SQL("PASSWORD {}").format(sql.Literal("mine-" + secrets.token_hex(8))))
        with pytest.raises(errors.ObjectNotInPrerequisiteState) as e:
            w.resolve(other)
        assert e.value.diag.constraint_name == "login_settings"
        assert "sweep" in e.value.diag.message_hint
        report = w.sweep()
    assert report["healed"] == 1, report
    assert role_settings(w, r.login) == []
    healed = w.resolve(other)
    with script(w, healed) as conn:
        assert order_ids(conn) == rows


@KINDS
def test_a_role_setting_a_login_gives_itself_in_another_database_is_healed_by_the_sweep(
        world, kind):
    w = world
    attacker, other, rows = SHARED[kind]
    r = w.resolve(attacker)
    with script(w, r) as conn:
        alter_self(conn, sql.SQL("IN DATABASE postgres SET role = {}").format(
            sql.Literal(r.roles[-1])))
        alter_self(conn, sql.SQL("IN DATABASE postgres SET session_authorization = {}").format(
            sql.Literal(r.login)))
    assert [db for db, _ in role_settings(w, r.login)] == ["postgres"]

    report = w.sweep()
    assert report["healed"] == 1, report
    assert report["unfinished"] == [], report
    assert role_settings(w, r.login) == []
    healed = w.resolve(other)
    with script(w, healed) as conn:
        assert order_ids(conn) == rows


@KINDS
def test_a_setting_a_login_gives_itself_in_another_database_is_healed_by_the_sweep(
        world, kind, meta_db):
    w = world
    attacker, other, rows = SHARED[kind]
    r = w.resolve(attacker)
    with script(w, r) as conn:
        for db in ("postgres", meta_db.name):
            alter_self(conn, sql.SQL("IN DATABASE {} SET statement_timeout = '1ms'").format(
                sql.Identifier(db)))
    assert sorted(db for db, _ in role_settings(w, r.login)) == sorted(["postgres", meta_db.name])

    report = w.sweep()
    assert report["healed"] == 1, report
    assert report["unfinished"] == [], report
    assert role_settings(w, r.login) == []
    assert not authenticates(w, r.login, r.password), "healing gives a new password"
    healed = w.resolve(other)
    assert healed.login == r.login and healed.password != r.password
    with script(w, healed) as conn:
        assert order_ids(conn) == rows
    assert w.sweep()["healed"] == 0


@KINDS
def test_the_sweep_rotates_passwords_older_than_rotate_every_and_ends_no_session(world, kind):
    w = world
    attacker, other, rows = SHARED[kind]
    r = w.resolve(attacker)
    kept = script(w, r)  # opened before the rotation, by the script that saw the password
    try:
        assert w.sweep()["rotated"] == 0, "nothing is due before rotate_every"
        advance_past_rotation(w)
        report = w.sweep()
        assert report["rotated"] == 1 and report["healed"] == 0, report
        assert report["dropped"] == 0 and report["unfinished"] == [], report
        assert not authenticates(w, r.login, r.password), "the old password still works"
        assert order_ids(kept) == rows, "the rotation ended a session"
        fresh = w.resolve(other)
        assert fresh.login == r.login and fresh.password != r.password
        with script(w, fresh) as conn:
            assert order_ids(conn) == rows
        assert w.sweep()["rotated"] == 0, "rotated twice in one period"
    finally:
        kept.close()


# R2 world: the default stays admin; alice's and bob's jobs get the admin login.
ADMIN_WORLD = dict(users={"pub": [], "alice": [], "bob": []}, tenants={"emea": ["u/alice"]},
                   orders={"emea": "emea"}, identity="u/pub", jobs=["alice", "bob"])


def test_an_admin_password_a_job_changed_is_refused_by_name_until_the_operator_gives_it_again(
        make_world):
    w = make_world(**ADMIN_WORLD)
    r = w.resolve("alice")
    assert r.roles == ["admin"] and r.login == w.admin_login
    assert [t["admin_password_ok"] for t in status(w)["datatables"]] == [True]
    assert w.heal(w.admin_login) == "works"  # a spurious report changes nothing
    taken = "admin-" + secrets.token_hex(8)
    with script(w, r) as conn:
        assert order_ids(conn) == [1, 2, 3, 4, 5]
        conn.execute(sql.SQL("ALTER ROLE CURRENT_USER PASSWORD {}").format(sql.Literal(taken)))
    assert not authenticates(w, w.admin_login, w.admin_password)

    # the stored password is handed out; the refused connection is reported, and named
    assert w.resolve("bob").password == w.admin_password
    with pytest.raises(errors.ObjectNotInPrerequisiteState) as refused:
        w.heal(w.admin_login)
    assert refused.value.sqlstate == "55000"
    assert refused.value.diag.constraint_name == "admin_password"
    assert w.admin_login in refused.value.diag.message_primary
    assert "set_datatable_admin_password" in (refused.value.diag.message_hint or "")
    assert taken not in str(refused.value)
    [entry] = status(w)["datatables"]
    assert entry["admin_login"] == w.admin_login and entry["admin_password_ok"] is False

    # a wrong password is refused and changes nothing
    with pytest.raises(errors.InvalidPassword):
        w.call("SELECT set_datatable_admin_password(%s, %s, %s)", [w.ws, "main", "wrong"])
    with pytest.raises(errors.ObjectNotInPrerequisiteState):
        w.heal(w.admin_login)

    w.call("SELECT set_datatable_admin_password(%s, %s, %s)", [w.ws, "main", taken])
    assert w.heal(w.admin_login) == "works"
    back = w.resolve("bob")
    assert back.login == w.admin_login and back.password == taken
    with script(w, back) as conn:
        assert order_ids(conn) == [1, 2, 3, 4, 5]
    assert [t["admin_password_ok"] for t in status(w)["datatables"]] == [True]


# ---- finding 3: connection strings ---------------------------------------------------------

@contextlib.contextmanager
def listener():
    """A TCP port on 127.0.0.1 where nobody should ever connect: yields (port, calls()). A
    thread accepts and at once closes each connection (so a client sent here fails fast
    instead of waiting for a server), and counts it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.settimeout(0.1)
    seen: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                c, peer = s.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            seen.append(peer)
            c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield s.getsockname()[1], lambda: len(seen)
    finally:
        stop.set()
        t.join(5)
        s.close()


HOSTILE_DBNAMES = [
    "x\\ host=127.0.0.1 port={port} application_name=\\",
    "x' host=127.0.0.1 port={port} dbname='postgres",
    "main host=127.0.0.1",
    "a=b",
    'dq"{port}',
    "back\\slash",
    "-c{port}",
    "tab\there",
]


@pytest.mark.parametrize("template", HOSTILE_DBNAMES)
def test_a_database_name_that_could_rewrite_a_connection_string_is_refused_at_registration(
        make_world, scratch, uid, template):
    w = make_world(users={"pub": []})
    with listener() as (port, calls):
        dbname = template.format(port=port)
        admin = f"{uid}_evil_admin"
        scratch.databases.append(dbname)
        password = w.cluster.create_datatable_database(dbname, admin)
        su = w.su("postgres")
        before_acl = su.execute("SELECT datacl FROM pg_database WHERE datname = %s",
                                [dbname]).fetchone()
        before_rows = w.call("SELECT id, workspace, name, dbname FROM datatable_roles.datatable"
                             " ORDER BY id")
        link = w.call("SELECT datatable_roles.link_login()")[0][0]
        with pytest.raises(errors.InvalidParameterValue) as refused:
            w.call("SELECT register_datatable(%s, %s, %s, %s, %s)",
                   [w.ws, "evil", dbname, admin, password])
        assert refused.value.sqlstate == "22023"
        assert password not in str(refused.value)
        assert calls() == 0, "the package connected where the database name pointed"
    assert w.call("SELECT id, workspace, name, dbname FROM datatable_roles.datatable"
                  " ORDER BY id") == before_rows
    assert su.execute("SELECT datacl FROM pg_database WHERE datname = %s",
                      [dbname]).fetchone() == before_acl
    assert not su.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", [link, admin]).fetchone()[0]
    assert authenticates(w, admin, password, dbname), "the admin password was changed"


CONNINFO_VALUES = [
    "x\\ host=127.0.0.1 port=1 application_name=\\",
    "it's",
    "'",
    "\\",
    "\\'",
    "a b=c",
    " leading and trailing ",
    "dbname=postgres",
    "E'x'",
    "tab\there",
    "ünïcødé",
    "end\\",
]


@pytest.mark.parametrize("value", CONNINFO_VALUES)
def test_the_conninfo_the_package_builds_reads_back_unchanged_in_libpq(make_world, value):
    w = make_world(users={"pub": []})
    (quoted,) = w.call("SELECT datatable_roles.conninfo_value(%s)", [value])[0]
    assert conninfo_to_dict(f"dbname={quoted}") == {"dbname": value}
    assert conninfo_to_dict(f"dbname={quoted} user=u") == {"dbname": value, "user": "u"}
    (built,) = w.call("SELECT datatable_roles.conninfo_for(%s, %s, %s)",
                      [value, value + "L", "p" + value])[0]
    (host, port) = w.call("SELECT link_host, current_setting('port') FROM"
                          " datatable_roles.settings")[0]
    assert conninfo_to_dict(built) == {"host": host, "port": port, "dbname": value,
                                       "user": value + "L", "password": "p" + value}


def test_the_package_login_attempt_goes_where_the_conninfo_says_whatever_the_password(
        make_world):
    """login_fails (register's admin check, over dblink) with passwords built to add conninfo
    keywords: libpq takes each whole as the password, so the attempt goes to this server and
    fails there; nothing connects to the port the password names."""
    w = make_world(users={"pub": []})
    with listener() as (port, calls):
        for evil in (f"x\\ host=127.0.0.1 port={port} user=postgres \\",
                     f"x' host=127.0.0.1 port={port} '",
                     f"' host=127.0.0.1 port={port}"):
            (reason,) = w.call("SELECT datatable_roles.login_fails(%s, %s, %s)",
                               [w.dbname, w.admin_login, evil])[0]
            assert reason is not None, evil
            assert evil not in reason
        assert calls() == 0, "the password rewrote the connection string"
    assert w.call("SELECT datatable_roles.login_fails(%s, %s, %s)",
                  [w.dbname, w.admin_login, w.admin_password]) == [(None,)]
    assert authenticates(w, w.admin_login, w.admin_password)


# ---- finding 4: a login reaches one database ------------------------------------------------

@pytest.fixture
def two_workspaces(make_world, scratch) -> tuple[World, Resolved]:
    """Workspace acme (the HOSTILE world, its own database) and workspace wsb, whose data
    table on another database maps the same finance (policy emea TO finance) with tenant bea.
    Returns the world and bea's resolve in wsb."""
    w = make_world(**HOSTILE)
    db_b = scratch.orders_db({"emea": w.finance}, prefix="dtb")
    w.call("SELECT add_workspace('wsb')")
    w.call("SELECT add_workspace_user('wsb', 'bea', 'bea@acme.test', false)")
    w.call("SELECT add_workspace_user('wsb', 'pub', 'pub@acme.test', false)")
    w.call("SELECT register_datatable('wsb', 'main', %s, %s, %s)", list(db_b))
    w.call("SELECT set_datatable_role_tenants('wsb', 'main', %s, '{u/bea}')", [w.finance])
    w.call("SELECT set_datatable_default_role('wsb', 'main', NULL)")
    job = uuid.uuid4()
    w.call("SELECT record_job_start(%s, 'wsb', 'u/pub', 'app', 'bea@acme.test')", [job])
    flush_stats(w.owner_session())
    rb = w.resolve(job)
    assert rb.dbname == db_b.dbname and rb.roles == [w.finance]
    return w, rb


@KINDS
def test_a_login_handed_out_in_one_workspace_cannot_reach_another_workspaces_database(
        two_workspaces, kind):
    w, rb = two_workspaces
    attacker, _other, rows = SHARED[kind]
    r = w.resolve(attacker)
    assert r.dbname == w.dbname and r.login != rb.login
    with script(w, r) as conn:
        assert order_ids(conn) == rows
    for tcp in (True, False):
        reason = connect_error(w, r.login, r.password, rb.dbname, tcp)
        assert "permission denied for database" in reason, reason
    with script(w, rb) as conn:  # B's own viewer is unaffected
        assert order_ids(conn) == [1, 4]
    # a script acting as finance may give the catalog role a password: it still cannot log in
    with script(w, r) as conn:
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(w.finance)))
        conn.execute("ALTER ROLE CURRENT_USER PASSWORD 'finance-pw'")
    for db in (w.dbname, rb.dbname, "postgres"):
        reason = connect_error(w, w.finance, "finance-pw", db)
        assert "is not permitted to log in" in reason, reason


def test_catalog_roles_cannot_log_in_and_have_connect_on_no_data_table_database(two_workspaces):
    w, rb = two_workspaces
    su = w.su("postgres")
    for role in (w.finance, w.ops):
        assert su.execute("SELECT rolcanlogin, rolpassword IS NULL FROM pg_authid"
                          " WHERE rolname = %s", [role]).fetchone() == (False, True)
        for db in (w.dbname, rb.dbname, w.meta.name):
            assert not su.execute("SELECT has_database_privilege(%s, %s, 'CONNECT')",
                                  [role, db]).fetchone()[0], (role, db)
        for db in (w.dbname, rb.dbname):
            reason = connect_error(w, role, "", db)
            assert reason, f"{role} logged in to {db}"
    # a scoped login's only direct privilege: CONNECT on its one database
    r = w.resolve("sue")
    granted = [db for (db,) in su.execute(
        "SELECT datname FROM pg_database, aclexplode(datacl) AS a"
        " WHERE a.grantee = (SELECT oid FROM pg_roles WHERE rolname = %s)", [r.login])]
    assert granted == [w.dbname]


@KINDS
def test_removing_a_role_from_a_map_retires_its_logins_there_and_ends_their_sessions(
        two_workspaces, kind):
    w, rb = two_workspaces
    attacker, _other, rows = SHARED[kind]
    r = w.resolve(attacker)
    open_a = script(w, r)
    open_b = script(w, rb)
    try:
        assert order_ids(open_a) == rows
        w.call("SELECT remove_datatable_role(%s, 'main', %s)", [w.ws, w.finance])
        with pytest.raises(psycopg.OperationalError):
            order_ids(open_a)
        reason = connect_error(w, r.login, r.password, w.dbname)
        assert reason, "the retired login still logs in"
        assert w.role_state(r.login) == (True, False)
        assert order_ids(open_b) == [1, 4], "B's session was ended too"
        with script(w, rb) as conn:
            assert order_ids(conn) == [1, 4]
    finally:
        open_a.close()
        open_b.close()
    if kind == "role":
        with pytest.raises(errors.InsufficientPrivilege):  # finance was vic's only role
            w.resolve(attacker)
    else:
        r2 = w.resolve(attacker)  # ops alone now: another login, without finance
        assert r2.roles == [w.ops] and r2.login != r.login
        with script(w, r2) as conn:
            assert order_ids(conn) == [2, 5]


# ---- finding 5: the result cache -------------------------------------------------------------

def test_the_result_cache_path_belongs_to_the_job_identity_as_well_as_the_viewer(make_world):
    w = make_world(users={"root": [], "rex": [], "vic": []}, admins=["root"],
                   tenants={"finance": ["u/vic"]}, orders={"emea": "finance"}, default=None)
    root_1 = w.job(None, identity="u/root", origin="schedule")
    root_2 = w.job(None, identity="u/root", origin="schedule")
    rex = w.job(None, identity="u/rex", origin="schedule")
    # the two identities resolve differently: root may name finance, rex is refused
    assert w.resolve(root_1, role=w.finance).roles == [w.finance]
    with pytest.raises(errors.InsufficientPrivilege):
        w.resolve(rex, role=w.finance)

    def path(job, args):
        with w.connect_worker() as conn:
            return conn.execute("SELECT cached_result_path(%s, %s, %s)",
                                [job, "f/reports/orders", Jsonb(args)]).fetchone()[0]

    args = {"region": "emea", "limit": 10}
    assert path(root_1, args) != path(rex, args), "rex would read root's cached result"
    assert path(root_1, args) == path(root_2, args), "one identity, no viewer: one entry"
    assert path(root_1, args) == path(root_2, {"limit": 10, "region": "emea"})
    assert path(root_1, args) != path(root_1, {"region": "us", "limit": 10})


# ---- finding 6: the metadata database, postgres, and what a login leaves there --------------

@KINDS
def test_a_resolved_login_cannot_connect_to_the_metadata_database_and_is_in_the_login_group(
        world, kind):
    w = world
    attacker, _other, _rows = SHARED[kind]
    r = w.resolve(attacker)
    for tcp in (True, False):
        reason = connect_error(w, r.login, r.password, w.meta.name, tcp)
        assert "permission denied for database" in reason, reason
    group = login_group(w)
    su = w.su("postgres")
    assert su.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = %s",
                      [group]).fetchone() == (False,)
    grant = su.execute(
        "SELECT to_jsonb(am) FROM pg_auth_members AS am"
        " WHERE am.roleid = (SELECT oid FROM pg_roles WHERE rolname = %s)"
        " AND am.member = (SELECT oid FROM pg_roles WHERE rolname = %s)",
        [group, r.login]).fetchone()
    assert grant is not None, f"{r.login} is not in the login group {group}"
    set_group = sql.SQL("SET ROLE {}").format(sql.Identifier(group))
    with script(w, r) as conn:
        if "inherit_option" in grant[0]:  # 16+: a membership that carries nothing
            assert grant[0]["inherit_option"] is False and grant[0]["set_option"] is False
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(set_group)
        else:  # 15 has no SET option: the group may be set, and reaches nothing
            conn.execute(set_group)
            with pytest.raises(errors.InsufficientPrivilege):
                order_ids(conn)


def _hba_file(cluster) -> tuple[str, str]:
    with cluster.connect_super() as conn:
        return conn.execute("SELECT current_setting('hba_file'),"
                            " pg_read_file(current_setting('hba_file'))").fetchone()


def _write_hba(cluster, path: str, text: str) -> None:
    """Write pg_hba.conf as the superuser (server-side lo_export: the server's own file
    permissions, byte for byte), check it parses, and reload."""
    with cluster.connect_super() as conn:
        with conn.transaction():
            (oid,) = conn.execute("SELECT lo_from_bytea(0, convert_to(%s, 'UTF8'))",
                                  [text]).fetchone()
            conn.execute("SELECT lo_export(%s, %s)", [oid, path])
            conn.execute("SELECT lo_unlink(%s)", [oid])
        bad = conn.execute("SELECT line_number, error FROM pg_hba_file_rules"
                           " WHERE error IS NOT NULL").fetchall()
        assert not bad, bad
        conn.execute("SELECT pg_reload_conf()")


def _wait_for(check, what: str, timeout: float = 15.0) -> None:
    """Poll until the postmaster has loaded the new pg_hba.conf (a reload is asynchronous)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"pg_hba.conf reload: {what} not seen in {timeout} s")
        time.sleep(0.05)


@contextlib.contextmanager
def login_group_rule(w: World, uid: str):
    """The operator's pg_hba.conf lines of docs/trust.md, before every other line: the
    owner's, the worker's and the link login's own lines (names as `status` shows them),
    the login group let into the data table database, then refused everywhere else, naming
    no database; for the socket as for TCP. Restored, and reloaded, when the block ends. A probe login in the group
    tells when the postmaster has loaded each version."""
    c = w.cluster
    report = status(w)
    group = report["login_group"]
    accepted = ",".join([c.owner, c.worker, report["link_login"]])
    probe = f"{uid}_probe"
    probe_pw = plain_login(w, probe)
    w.su("postgres").execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group),
                                                              sql.Identifier(probe)))
    lines = [
        f"local all {accepted} scram-sha-256",
        f"host all {accepted} 127.0.0.1/32 scram-sha-256",
        f"local {w.dbname} +{group} scram-sha-256",
        f"host {w.dbname} +{group} all scram-sha-256",
        f"local all +{group} reject",
        f"host all +{group} all reject",
    ]
    path, original = _hba_file(c)

    def probe_refused() -> bool:
        return "pg_hba.conf rejects" in connect_error(w, probe, probe_pw, "postgres")

    _write_hba(c, path, "\n".join(lines) + "\n" + original)
    try:
        _wait_for(probe_refused, "the reject rule")
        yield
    finally:
        _write_hba(c, path, original)
        _wait_for(lambda: not probe_refused(), "the original file")


@KINDS
def test_a_pg_hba_rule_on_the_login_group_keeps_generated_logins_out_of_postgres(
        world, uid, kind):
    w = world
    attacker, _other, rows = SHARED[kind]
    r = w.resolve(attacker)
    other = f"{uid}_plain"
    other_pw = plain_login(w, other)
    assert connect_error(w, r.login, r.password, "postgres") == "", \
        "postgres is open to the login before the rule (PUBLIC's CONNECT)"
    with login_group_rule(w, uid):
        for tcp in (True, False):
            reason = connect_error(w, r.login, r.password, "postgres", tcp)
            assert "pg_hba.conf rejects" in reason, reason
            for db in (w.meta.name, "template1"):
                reason = connect_error(w, r.login, r.password, db, tcp)
                assert "pg_hba.conf rejects" in reason, reason
            assert connect_error(w, other, other_pw, "postgres", tcp) == ""
        # the platform goes on: the owner and the worker reach the metadata database, the
        # login its data table
        with w.connect_owner() as conn:
            assert conn.execute("SELECT count(*) FROM datatable_roles.datatable"
                                ).fetchone() == (1,)
        again = w.resolve(attacker)
        with script(w, again) as conn:
            assert order_ids(conn) == rows


@pytest.mark.parametrize("under_rule", [False, True], ids=["no_rule", "login_group_rule"])
def test_a_large_object_left_in_postgres_blocks_neither_the_sweep_nor_a_role_drop(
        world, uid, under_rule):
    """Before the operator's rule, a one-role login (acting as finance) and a set login each
    connect to postgres and create large objects there, as themselves and as finance. Under
    the rule, the sweep of both logins finishes, then drop_datatable_role(finance) does, and
    the objects in postgres are gone (postgres is no data table's: nothing there is kept)."""
    w = world
    one, many = w.resolve("vic"), w.resolve("sue")
    made: dict[int, str] = {}
    for r in (one, many):
        with script(w, r, dbname="postgres") as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(w.finance)))
            (oid,) = conn.execute("SELECT lo_from_bytea(0, 'as the role')").fetchone()
            made[oid] = w.finance
            conn.execute("SET ROLE NONE")
            (oid,) = conn.execute("SELECT lo_from_bytea(0, 'as the login')").fetchone()
            made[oid] = r.login
    su = w.su("postgres")

    def owners() -> dict[int, str]:
        return dict(su.execute("SELECT oid::bigint, lomowner::regrole::text"
                               " FROM pg_largeobject_metadata WHERE oid = ANY(%s::oid[])",
                               [list(made)]).fetchall())

    assert owners() == made
    with login_group_rule(w, uid) if under_rule else contextlib.nullcontext():
        w.advance_clock("31 days")
        report = w.sweep()
        assert report["unfinished"] == [], report
        assert report["dropped"] == 2, report
        assert w.role_state(one.login)[0] is False and w.role_state(many.login)[0] is False
        assert set(owners().values()) == {w.finance}
        w.call("SELECT drop_datatable_role(%s)", [w.finance])
        assert w.role_state(w.finance)[0] is False
        assert owners() == {}


def _backends_of(w: World, login: str) -> int:
    return w.su("postgres").execute(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE usesysid = (SELECT oid FROM pg_roles WHERE rolname = %s)", [login]).fetchone()[0]


@pytest.mark.parametrize("step", ["sweep", "sweep_once_the_sessions_are_gone",
                                  "drop_datatable_role"])
def test_temporary_objects_of_open_sessions_block_neither_the_sweep_nor_a_role_drop(
        world, step):
    """Two sessions of a one-role login hold temporary objects in its data table database,
    one as finance, one as the login itself, and are open when the sweep comes for the login
    (which ends them: as it goes, or stopped after ending them until they are gone), or while
    finance is dropped."""
    w = world
    r = w.resolve("vic")
    sessions = [script(w, r), script(w, r)]
    try:
        sessions[0].execute("CREATE TEMP TABLE held_as_role (x integer)")
        sessions[1].execute("SET ROLE NONE")
        sessions[1].execute("CREATE TEMP TABLE held_as_login (x integer)")
        for s in sessions:
            s.execute("CREATE TEMP SEQUENCE held_seq")
        if step == "sweep":
            w.advance_clock("31 days")
            report = w.sweep()
            assert report["unfinished"] == [], report
            assert report["dropped"] == 1, report
            assert w.role_state(r.login)[0] is False
        elif step == "sweep_once_the_sessions_are_gone":
            w.advance_clock("31 days")
            victim = w.connect_owner()
            hold = FaultHold(w)
            try:
                arm(victim, "sweep:after_take_away", "wait")
                run = Runner(lambda: w.sweep(victim))
                run.start()
                hold.wait_for_victim()
                deadline = time.monotonic() + 15
                while _backends_of(w, r.login) and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert _backends_of(w, r.login) == 0, "the sweep did not end the sessions"
                hold.release()
                run.finish()
            finally:
                hold.close()
                victim.close()
            assert run.error is None, run.error
            report = run.result
            assert report["unfinished"] == [], report
            assert report["dropped"] == 1, report
            assert w.role_state(r.login)[0] is False
        else:
            w.call("SELECT drop_datatable_role(%s)", [w.finance])
            assert w.role_state(w.finance)[0] is False
            assert w.role_state(r.login) == (True, False)
            assert w.rows()[r.login][0] == ""
        for s in sessions:
            with pytest.raises(psycopg.OperationalError):
                s.execute("SELECT 1")
    finally:
        for s in sessions:
            s.close()


# ---- finding 7: shadowing through the owner's search_path -----------------------------------

# Functions and operators planted in schema public of the metadata database with exactly the
# signatures of pg_catalog's, so that with search_path 'public, pg_catalog' each one wins over
# pg_catalog's wherever a name is not pinned. Each records current_user, then does the real
# thing. (name, argument types, result type)
TRAP_FUNCTIONS = [
    ("lower", ["text"], "text"),
    ("upper", ["text"], "text"),
    ("cardinality", ["anyarray"], "integer"),
    ("array_length", ["anyarray", "integer"], "integer"),
    ("array_to_string", ["anyarray", "text"], "text"),
    ("jsonb_array_length", ["jsonb"], "integer"),
    ("to_jsonb", ["anyelement"], "jsonb"),
    ("replace", ["text", "text", "text"], "text"),
    ("left", ["text", "integer"], "text"),
    ("substr", ["text", "integer"], "text"),
    ("split_part", ["text", "text", "integer"], "text"),
    ("starts_with", ["text", "text"], "boolean"),
    ("length", ["text"], "integer"),
    ("octet_length", ["text"], "integer"),
    ("quote_ident", ["text"], "text"),
    ("quote_literal", ["text"], "text"),
    ("encode", ["bytea", "text"], "text"),
    ("decode", ["text", "text"], "bytea"),
    ("sha256", ["bytea"], "bytea"),
    ("convert_to", ["text", "name"], "bytea"),
    ("now", [], "timestamp with time zone"),
    ("current_setting", ["text"], "text"),
    ("current_setting", ["text", "boolean"], "text"),
    ("set_config", ["text", "text", "boolean"], "text"),
    ("gen_random_uuid", [], "uuid"),
    ("hashtextextended", ["text", "bigint"], "bigint"),
    ("pg_advisory_xact_lock", ["bigint"], "void"),
    ("pg_backend_pid", [], "integer"),
    ("pg_terminate_backend", ["integer", "bigint"], "boolean"),
    ("pg_has_role", ["name", "name", "text"], "boolean"),
    ("pg_has_role", ["name", "text"], "boolean"),
    ("has_function_privilege", ["text", "text"], "boolean"),
    ("unnest", ["anyarray"], "SETOF anyelement"),
]

# (operator, left type, right type, result type)
TRAP_OPERATORS = [
    ("=", "text", "text", "boolean"),
    ("<>", "text", "text", "boolean"),
    ("=", "bigint", "bigint", "boolean"),
    ("<>", "bigint", "bigint", "boolean"),
    ("=", "integer", "integer", "boolean"),
    ("=", "anyarray", "anyarray", "boolean"),
    ("@>", "anyarray", "anyarray", "boolean"),
    ("&&", "anyarray", "anyarray", "boolean"),
    ("||", "text", "text", "text"),
    ("||", "jsonb", "jsonb", "jsonb"),
    ("->>", "jsonb", "text", "text"),
    ("->>", "jsonb", "integer", "text"),
    ("->", "jsonb", "text", "jsonb"),
    ("->", "jsonb", "integer", "jsonb"),
    ("~", "text", "text", "boolean"),
    ("!~", "text", "text", "boolean"),
    ("~~", "text", "text", "boolean"),
    ("<", "timestamp with time zone", "timestamp with time zone", "boolean"),
    (">=", "timestamp with time zone", "timestamp with time zone", "boolean"),
    ("-", "timestamp with time zone", "interval", "timestamp with time zone"),
    ("+", "timestamp with time zone", "interval", "timestamp with time zone"),
    ("+", "integer", "integer", "integer"),
]


def _trap(conn: psycopg.Connection, signature: str, result: str, real: str,
          what: str) -> None:
    """public.<signature>: records (current_user, what), then returns ``real`` (the real
    thing, pg_catalog-qualified, over $1, $2, ...)."""
    if result == "void":
        body = f"PERFORM {real}; RETURN;"
    elif result.startswith("SETOF"):
        body = f"RETURN QUERY SELECT {real};"
    else:
        body = f"RETURN {real};"
    conn.execute(
        f"CREATE FUNCTION public.{signature} RETURNS {result} LANGUAGE plpgsql"
        " SET search_path = pg_catalog, pg_temp AS $trap$ BEGIN"
        f" INSERT INTO public.dtr_trap (who, what) VALUES (current_user, '{what}');"
        f" {body} END $trap$")


def plant_traps(w: World) -> None:
    """As the superuser: the trap table (INSERT for PUBLIC) and every trap of TRAP_FUNCTIONS
    and TRAP_OPERATORS in schema public of the metadata database."""
    with connect(w.meta.super_conninfo) as conn:
        conn.execute("CREATE TABLE public.dtr_trap (who text, what text,"
                     " at timestamptz DEFAULT clock_timestamp())")
        conn.execute("GRANT INSERT ON public.dtr_trap TO PUBLIC")
        for name, args, result in TRAP_FUNCTIONS:
            quoted = sql.Identifier(name).as_string(conn)
            dollars = ", ".join(f"${i + 1}" for i in range(len(args)))
            _trap(conn, f"{quoted}({', '.join(args)})", result,
                  f"pg_catalog.{quoted}({dollars})", f"{name}({', '.join(args)})")
        for i, (op, left, right, result) in enumerate(TRAP_OPERATORS):
            fname = f"dtr_trap_op_{i}"
            _trap(conn, f"{fname}({left}, {right})", result,
                  f"$1 OPERATOR(pg_catalog.{op}) $2", f"{op}({left}, {right})")
            conn.execute(f"CREATE OPERATOR public.{op} (LEFTARG = {left}, RIGHTARG = {right},"
                         f" FUNCTION = public.{fname})")


def trapped(w: World) -> list[tuple[str, str]]:
    with connect(w.meta.super_conninfo) as conn:
        return conn.execute("SELECT who, what FROM public.dtr_trap ORDER BY at").fetchall()


def test_no_entry_point_runs_a_function_or_operator_planted_in_public(make_world, scratch, uid,
                                                                    remote):
    w = make_world(users={"pub": []})
    plant_traps(w)
    # The owner's own session, with public searched before pg_catalog.
    owner = w.connect_owner()
    owner.execute("SET search_path = public, pg_catalog")
    try:
        # the traps work: an unqualified name or operator in this session runs them
        owner.execute("SELECT lower('X'), cardinality(ARRAY['a']), 'a'::text = 'b'::text,"
                      " ARRAY['a'] = ARRAY['b']")
        assert {what for _who, what in trapped(w)} >= {
            "lower(text)", "cardinality(anyarray)", "=(text, text)", "=(anyarray, anyarray)"}
        with connect(w.meta.super_conninfo) as conn:
            conn.execute("DELETE FROM public.dtr_trap")

        _run_every_entry_point(w, owner, scratch, uid, remote)
    finally:
        owner.close()
        remote.drop(uid + "_far7", uid)
    assert trapped(w) == [], "a planted function or operator ran inside the package"


def _run_every_entry_point(w: World, s: psycopg.Connection, scratch, uid: str,
                           remote) -> None:
    called: set[str] = set()

    def call(fn: str, args: list, schema: str = "") -> list[tuple]:
        called.add(fn)
        marks = ", ".join(["%s"] * len(args))
        cur = s.execute(f"SELECT {schema}{fn}({marks})", args)
        return cur.fetchall()

    def resolve(job, role=None) -> Resolved:
        called.add("resolve_datatable_role")
        row = s.execute("SELECT dbname, login, password, roles"
                        " FROM resolve_datatable_role(%s, %s, %s)", [job, "dt7", role]).fetchone()
        return Resolved(*row)

    def sweep() -> dict:
        called.add("sweep_unused_role_set_logins")
        return s.execute("CALL sweep_unused_role_set_logins(NULL)").fetchone()[0]

    def advance(by: str) -> None:  # not an entry point: through the world's own session
        w.advance_clock(by)

    ws = "ws7"
    r1, r2, r3, r4, r4b = (f"{uid}_q{i}" for i in ("1", "2", "3", "4", "4b"))
    db = scratch.datatable_db("dt7")
    call("validate_role_name", [r1])
    call("add_workspace", [ws])
    call("add_workspace_user", [ws, "ann", "ann@acme.test", True])
    call("add_workspace_user", [ws, "bob", "bob@acme.test", False])
    call("add_workspace_user", [ws, "cid", "cid@acme.test", False])
    call("add_group_member", [ws, "grp", "bob"])
    call("add_group_member", [ws, "grp", "cid"])
    call("set_folder_access", [ws, "fold", "g/grp", "read"])
    for r in (r1, r2, r3, r4):
        call("create_datatable_role", [r])
    call("rename_datatable_role", [r4, r4b])
    call("set_datatable_role_enabled", [r4b, False])
    call("set_datatable_role_enabled", [r4b, True])
    call("register_datatable", [ws, "dt7", *db])
    call("reference_datatable", [ws, "ref7", ws, "dt7"])
    for r in (r1, r2, r3, r4b):
        call("set_datatable_role_tenants", [ws, "dt7", r, ["u/ann", "g/grp", "f/fold"]])
    call("set_datatable_role_tenants", [ws, "dt7", "admin", ["u/ann"]])
    call("set_datatable_default_role", [ws, "dt7", r1])
    call("set_datatable_default_role", [ws, "dt7", None])
    ann, bob = uuid.uuid4(), uuid.uuid4()
    call("record_job_start", [ann, ws, "u/ann", "run", "ann@acme.test", None])
    call("record_job_start", [bob, ws, "u/ann", "app", "bob@acme.test", None])
    call("explain_datatable_role", [bob, "dt7", None])
    call("explain_datatable_role", [ann, "dt7", r1])
    call("cached_result_path", [bob, "f/x", Jsonb({"a": 1, "b": [1, 2]})])

    la = resolve(ann, r1)          # made
    assert resolve(ann, r1) == la  # handed out as it is
    lb = resolve(ann, r2)
    resolve(ann, r3)
    ls = resolve(bob)              # the set login of all four
    assert len(ls.roles) == 4
    assert resolve(ann, "admin").roles == ["admin"]
    w.su(db.dbname).execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(
        sql.Identifier(r1)))
    create_table_as(w, la.login, la.password, f"{uid}_left_behind", db.dbname)

    advance("31 days")
    resolve(ann, r3)               # touched: due for rotation, not for the sweep
    resolve(bob)                   # touched too
    lb = resolve(ann, r2)          # touched
    with connect(w.login_conninfo(lb.login, lb.password, db.dbname)) as conn:
        conn.execute("ALTER ROLE CURRENT_USER PASSWORD 'stolen-key'")
    assert call("heal_refused_login", [lb.login]) == [("healed",)]  # the refused connection
    healed = resolve(ann, r2)
    assert healed.login == lb.login and healed.password != lb.password
    with connect(w.login_conninfo(ls.login, ls.password, db.dbname)) as conn:
        conn.execute("ALTER ROLE CURRENT_USER IN DATABASE postgres SET work_mem = '64kB'")
    call("set_datatable_admin_password", [ws, "dt7", db.admin_password])
    call("usable_datatable_roles", [ws, "dt7", "ann"])
    call("preview_datatable_role_change", ["remove", r2, ws, "dt7"])
    target, change = Jsonb({"schema": "public"}), Jsonb({"grant": ["USAGE"], "to": r3})
    call("datatable_acl", [ws, "dt7", target])
    (plan,), = call("plan_datatable_acl", [ws, "dt7", target, change])
    call("apply_datatable_acl", [ws, "dt7", target, change, plan["statements"]])
    call("status_report", [], schema="datatable_roles.")
    call("grant_worker", [w.cluster.worker], schema="datatable_roles.")

    # A data table on another server (docs/servers.md): its role and login made there,
    # then a removal retiring the login there.
    far_db, far_admin = f"{uid}_far7", f"{uid}_far7_admin"
    far_pw = remote.datatable_db(far_db, far_admin)
    call("register_datatable_server", ["b7", "127.0.0.1", remote.cluster.port, MANAGER,
                                       remote.manager_password, "disable", "postgres"])
    call("register_datatable", [ws, "far7", far_db, far_admin, far_pw, "b7"])
    call("set_datatable_role_tenants", [ws, "far7", r3, ["u/ann"]])
    called.add("resolve_datatable_role")
    far = s.execute("SELECT login, password FROM resolve_datatable_role(%s, 'far7', %s)",
                    [ann, r3]).fetchone()
    (group,), = s.execute("SELECT login_group FROM datatable_roles.settings").fetchall()
    assert remote.role(far[0]) == {"login": True, "member_of": sorted([r3, group])}
    call("remove_datatable_role", [ws, "far7", r3])
    assert remote.role(far[0])["login"] is False

    report = sweep()
    assert report["unfinished"] == [], report
    assert report["dropped"] >= 1 and report["healed"] >= 1 and report["rotated"] >= 1, report
    assert w.role_state(la.login)[0] is False

    call("remove_datatable_role", [ws, "dt7", r2])
    call("retire_role_set_logins_of", [r3])
    call("drop_datatable_role", [r1])
    call("remove_group_member", [ws, "grp", "cid"])
    call("remove_workspace_user", [ws, "cid"])
    call("forget_workspace_user", [ws, "cid"])
    call("reconcile_directory", [])
    call("sync_workspace_directory", [ws + "_sync", Jsonb({
        "users": [{"username": "sam", "email": "sam@x.io"}], "groups": {"grp": ["sam"]},
        "folders": {"fo": {"g/grp": "read"}}})])
    advance("31 days")
    report = sweep()  # the retired logins
    assert report["unfinished"] == [], report

    entry_points = {name for (name,) in s.execute(
        "SELECT p.proname FROM pg_catalog.pg_proc AS p"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace"
        " WHERE n.nspname OPERATOR(pg_catalog.=) 'public'"
        " AND p.proowner OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles AS r"
        "   WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)")}
    assert entry_points - called == set(), "an entry point this test does not call"


# ---- finding 8: reserved role-spec words ------------------------------------------------------

RESERVED = ["current_user", "CURRENT_ROLE", "session_user", "user", "all", "none", "Public",
            "Current_User", "NONE", "ALL", "USER", "Session_User", "current_role"]


@pytest.mark.parametrize("name", RESERVED)
def test_a_role_spec_word_is_refused_as_a_role_name_and_creates_nothing(make_world, name):
    w = make_world(users={"pub": []})
    su = w.su("postgres")
    roles_before = su.execute("SELECT count(*) FROM pg_roles").fetchone()
    catalog_before = w.call("SELECT count(*) FROM datatable_roles.catalog_role")
    for statement in ("SELECT validate_role_name(%s)", "SELECT create_datatable_role(%s)"):
        with pytest.raises(errors.InvalidParameterValue) as refused:
            w.call(statement, [name])
        assert refused.value.sqlstate == "22023"
    assert su.execute("SELECT count(*) FROM pg_roles").fetchone() == roles_before
    assert su.execute("SELECT count(*) FROM pg_roles WHERE lower(rolname) = lower(%s)",
                      [name]).fetchone() == (0,)
    assert w.call("SELECT count(*) FROM datatable_roles.catalog_role") == catalog_before
