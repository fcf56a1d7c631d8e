"""PgBouncer in front of a data table's database, with a REAL pgbouncer (Debian's, which `make
test` installs: a missing pgbouncer fails these tests, it does not skip them).

The set logins authenticate through ``auth_query``, which calls
``datatable_roles_pgbouncer.lookup`` (sql/pgbouncer-auth.sql, run by the superuser in the data
table database) as the auth user, in transaction pooling: a login made after PgBouncer started
connects through it with no reload and sees exactly its viewer's rows under RLS; a wrong
password is refused; the auth user reads the verifier of live set logins of this database and
of no other role; a retired (NOLOGIN), rotated or swept (dropped) login no longer connects.
"""

from __future__ import annotations

import secrets

import psycopg
import pytest
from psycopg import sql

from datatable_roles_lab.pgbouncer import (AUTH_QUERY, PgBouncer, create_auth_user, install_auth,
                                           pgbouncer_binary, pgbouncer_version)
from datatable_roles import cli
from datatable_roles.scram import scram_sha256_verifier
from support import World, connect

# Orders 1 emea, 2 us, 3 apac, 4 emea, 5 us; alice is emea's tenant, bob us's, carol (group
# both) both's; no default role. Two data tables: main (the orders database) and dt1 on a
# database of its own, each mapping both roles.
PGB_WORLD = dict(
    users={"dave": [], "alice": [], "bob": [], "carol": ["both"]},
    tenants={"emea": ["u/alice", "g/both"], "us": ["u/bob", "g/both"], "apac": ["g/apac"]},
    default=None, datatables=2,
    orders={"emea": "emea", "us": "us", "apac": "apac"},
    identity="u/dave", jobs=["alice", "bob", "carol"],
)


def order_ids(conn: psycopg.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM orders ORDER BY id")]


@pytest.fixture
def world(make_world) -> World:
    return make_world(**PGB_WORLD)


class Bouncer:
    """The PgBouncer in front of the world's main database, and its auth user."""

    def __init__(self, w: World, pgb: PgBouncer, auth_user: str, auth_password: str):
        self.w, self.pgb = w, pgb
        self.auth_user, self.auth_password = auth_user, auth_password

    def connect(self, login: str, password: str, dbname: str | None = None):
        return connect(self.pgb.conninfo(login, password, dbname or self.w.dbname))

    def refused(self, login: str, password: str) -> str | None:
        """The error text when PgBouncer refuses the login, None when it logs in."""
        try:
            with self.connect(login, password) as conn:
                conn.execute("SELECT 1")
            return None
        except psycopg.OperationalError as e:
            return str(e)

    def lookup(self, name: str) -> list[tuple[str, str]]:
        """What PgBouncer's auth_query returns for ``name``, run as the auth user directly on
        the data table database."""
        conninfo = self.w.cluster.conninfo(self.auth_user, self.auth_password, self.w.dbname,
                                           tcp=True)
        with connect(conninfo) as conn:
            return conn.execute(AUTH_QUERY.replace("$1", "%s"), [name]).fetchall()


@pytest.fixture
def bouncer(world, uid):
    """sql/pgbouncer-auth.sql in the world's main database, then PgBouncer (transaction
    pooling) in front of it, started BEFORE any set login exists."""
    w = world
    auth_user = uid + "_pgbouncer"
    auth_password = create_auth_user(w.cluster, auth_user)
    install_auth(w.cluster, w.dbname, auth_user)
    with PgBouncer(w.cluster, [w.dbname], auth_user, auth_password) as pgb:
        yield Bouncer(w, pgb, auth_user, auth_password)


def stored_verifier(w: World, login: str) -> str | None:
    row = w.su("postgres").execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                   [login]).fetchone()
    return row[0] if row else None


def test_pgbouncer_is_installed():
    """`make test` installs Debian's pgbouncer: without it this fails, it does not skip."""
    binary = pgbouncer_binary()
    major, minor = (int(x) for x in pgbouncer_version(binary).split(".")[:2])
    assert (major, minor) >= (1, 18), f"{binary}: PgBouncer {major}.{minor}"


def test_a_new_set_login_connects_through_pgbouncer_with_no_reload_and_sees_its_rows(
        world, bouncer):
    w, b = world, bouncer
    assert b.pgb.running
    assert w.rows() == {}, "no set login exists before PgBouncer started"
    ini_before = b.pgb.ini_path.read_text()
    carol = w.resolve("carol")   # made now, after PgBouncer started
    alice = w.resolve("alice")
    bob = w.resolve("bob")
    assert carol.login.startswith("wm_set_") and sorted(carol.roles) == sorted([w.emea, w.us])
    assert len({carol.login, alice.login, bob.login}) == 3
    for r, rows in ((carol, [1, 2, 4, 5]), (alice, [1, 4]), (bob, [2, 5])):
        for _ in range(3):  # the second and third reuse PgBouncer's server connection
            with b.connect(r.login, r.password) as conn:
                assert conn.info.port == b.pgb.port
                assert conn.execute("SELECT current_user, session_user").fetchone() == (
                    r.login, r.login)
                # PgBouncer reaches the server over its unix socket: no server address.
                assert conn.execute("SELECT inet_server_addr()").fetchone() == (None,)
                assert order_ids(conn) == rows
                with conn.transaction():  # a transaction of several statements
                    assert conn.execute("SELECT count(*) FROM orders").fetchone() == (
                        len(rows),)
                    assert order_ids(conn) == rows
    assert b.pgb.ini_path.read_text() == ini_before, "PgBouncer was reconfigured"
    assert b.pgb.running
    log = b.pgb.log_path.read_text()
    assert carol.login in log and "new connection to server" in log


def test_a_wrong_password_is_refused_through_pgbouncer(world, bouncer):
    w, b = world, bouncer
    r = w.resolve("carol")
    assert b.refused(r.login, r.password) is None
    err = b.refused(r.login, r.password + "x")
    assert err is not None and "SASL authentication failed" in err, err
    other = w.resolve("alice")
    assert b.refused(r.login, other.password) is not None, "another login's password worked"
    assert b.refused("wm_set_" + "0" * 40, r.password) is not None, "an unknown login worked"
    assert b.refused(r.login, r.password) is None


def test_the_auth_user_reads_verifiers_of_this_databases_live_set_logins_only(
        world, bouncer, uid):
    w, b, c = world, bouncer, world.cluster
    carol, alice = w.resolve("carol"), w.resolve("alice")
    elsewhere = w.resolve("carol", "dt1")   # a set login of the other data table database
    assert elsewhere.login not in (carol.login, alice.login)
    for r in (carol, alice):
        assert b.lookup(r.login) == [(r.login, stored_verifier(w, r.login))]
        assert b.lookup(r.login)[0][1].startswith("SCRAM-SHA-256$")

    # Roles that look like set logins, made by a superuser, each with one thing wrong.
    su = w.su("postgres")
    dbname = w.dbname
    fakes = {
        "super": "SUPERUSER", "createrole": "CREATEROLE", "createdb": "CREATEDB",
        "bypassrls": "BYPASSRLS", "replication": "REPLICATION", "nologin": "NOLOGIN",
        "expired": "VALID UNTIL '2000-01-01'", "in_admin": "", "in_pg_role": "",
        "no_connect": "", "md5": "", "good": "",
    }
    names = {}
    for what, attrs in fakes.items():
        name = "wm_set_" + secrets.token_hex(20)
        names[what] = name
        password = ("md5" + "0" * 32) if what == "md5" else scram_sha256_verifier(
            secrets.token_urlsafe(18))
        login = "" if what == "nologin" else "LOGIN "
        su.execute(sql.SQL("CREATE ROLE {} " + login + attrs + " PASSWORD {}").format(
            sql.Identifier(name), sql.Literal(password)))
        if what != "no_connect":
            su.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                sql.Identifier(dbname), sql.Identifier(name)))
    su.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(w.admin_login),
                                                sql.Identifier(names["in_admin"])))
    su.execute(sql.SQL("GRANT pg_read_all_data TO {}").format(
        sql.Identifier(names["in_pg_role"])))
    # The control: a well-formed role passes (the function judges roles, not who made them).
    assert b.lookup(names["good"]) == [(names["good"], stored_verifier(w, names["good"]))]

    (link_login, login_group) = w.call(
        "SELECT (SELECT login FROM datatable_roles.link_credential),"
        " login_group FROM datatable_roles.settings")[0]
    upper = "WM_SET_" + carol.login[7:].upper()
    su.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
        sql.Identifier(upper), sql.Literal(scram_sha256_verifier("x" * 20))))
    su.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
        sql.Identifier(dbname), sql.Identifier(upper)))
    refused = {
        "the admin login": w.admin_login, "the package owner": c.owner, "the worker": c.worker,
        "the superuser": "postgres", "the link login": link_login,
        "the login group": login_group, "a catalog role": w.emea,
        "the auth user": b.auth_user, "the other database's set login": elsewhere.login,
        "an upper-case look-alike": upper, "no such role": "wm_set_" + "f" * 40,
        "a name with a pattern": "wm_set_%", "the empty name": "", "NULL": None,
        **{f"a look-alike ({k})": v for k, v in names.items() if k != "good"},
    }
    for what, name in refused.items():
        assert b.lookup(name) == [], f"lookup returned {what}"
    # The admin login, with its right password, cannot log in through PgBouncer either.
    assert b.refused(w.admin_login, w.admin_password) is not None

    # Only the auth user may call lookup; it cannot read pg_authid itself.
    auth_ci = c.conninfo(b.auth_user, b.auth_password, dbname, tcp=True)
    with connect(auth_ci) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT rolpassword FROM pg_authid")
    for login, password in ((carol.login, carol.password),
                            (w.admin_login, w.admin_password)):
        with connect(w.login_conninfo(login, password)) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT * FROM datatable_roles_pgbouncer.lookup(%s)", [carol.login])
    with w.su(dbname).cursor() as cur:
        grantees = cur.execute(
            "SELECT p.proowner::regrole::text, p.prosecdef, p.proconfig,"
            " array(SELECT x.grantee::regrole::text FROM aclexplode(p.proacl) AS x"
            "       WHERE x.grantee <> p.proowner ORDER BY 1)"
            " FROM pg_proc AS p WHERE p.oid = 'datatable_roles_pgbouncer.lookup(text)'"
            "::regprocedure").fetchone()
    assert grantees == ("postgres", True, ["search_path=pg_catalog, pg_temp"], [b.auth_user])


def test_the_superuser_step_is_idempotent_and_keeps_one_grantee(world, bouncer, uid):
    w, b = world, bouncer
    other = uid + "_other_auth"
    create_auth_user(w.cluster, other)
    install_auth(w.cluster, w.dbname, other)     # another auth user takes the place
    install_auth(w.cluster, w.dbname, b.auth_user)  # and gives it back
    install_auth(w.cluster, w.dbname, b.auth_user)
    (acl,) = w.su(w.dbname).execute(
        "SELECT array(SELECT x.grantee::regrole::text FROM pg_proc AS p,"
        " aclexplode(p.proacl) AS x WHERE p.oid = 'datatable_roles_pgbouncer.lookup(text)'"
        "::regprocedure AND x.grantee <> p.proowner)").fetchone()
    assert acl == [b.auth_user]
    r = w.resolve("carol")
    with b.connect(r.login, r.password) as conn:
        assert order_ids(conn) == [1, 2, 4, 5]
    # A superuser is refused as the auth user.
    with pytest.raises(Exception):
        install_auth(w.cluster, w.dbname, "postgres")


def test_what_one_job_sets_does_not_reach_the_next_job_of_the_same_login(world, uid):
    """server_reset_query_always = 1 (the documented setting): DISCARD ALL after every
    transaction, so a SET on a pooled server connection is gone for the next client of the
    same login, on the same backend (a pool of one). And the startup option of a one-role
    login is refused by PgBouncer 1.18, not silently dropped."""
    w = world
    auth_user = uid + "_pgbouncer"
    auth_password = create_auth_user(w.cluster, auth_user)
    install_auth(w.cluster, w.dbname, auth_user)
    carol, alice = w.resolve("carol"), w.resolve("alice")
    with PgBouncer(w.cluster, [w.dbname], auth_user, auth_password,
                   settings={"default_pool_size": 1}) as pgb:
        ci = pgb.conninfo(carol.login, carol.password, w.dbname)
        with connect(ci) as conn:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            with conn.transaction():  # session state lasts one transaction through it
                conn.execute("SET statement_timeout = '7s'")
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(w.emea)))
                assert order_ids(conn) == [1, 4]
            conn.execute("SET statement_timeout = '7s'")
            assert conn.execute("SELECT current_user").fetchone() == (carol.login,)
        with connect(ci) as conn:
            assert conn.execute("SELECT pg_backend_pid()").fetchone()[0] == pid
            assert conn.execute("SHOW statement_timeout").fetchone() == ("0",)
            assert conn.execute("SELECT current_user").fetchone() == (carol.login,)
            assert order_ids(conn) == [1, 2, 4, 5]
        with pytest.raises(psycopg.OperationalError, match="unsupported startup parameter"):
            connect(pgb.conninfo(alice.login, alice.password, w.dbname,
                                 options=f"-c role={w.emea}")).close()
        with connect(pgb.conninfo(alice.login, alice.password, w.dbname)) as conn:
            assert order_ids(conn) == [1, 4]  # as the login itself: the same rows


def test_retired_rotated_and_swept_logins_no_longer_connect_through_pgbouncer(world, bouncer):
    w, b = world, bouncer
    carol, alice, bob = w.resolve("carol"), w.resolve("alice"), w.resolve("bob")
    for r in (carol, alice, bob):
        assert b.refused(r.login, r.password) is None  # PgBouncer has a server connection

    # Retired: the role us is taken from dt main's map; bob's and carol's logins hold it.
    w.call("SELECT remove_datatable_role(%s, 'main', %s)", [w.ws, w.us])
    assert w.role_state(bob.login) == (True, False)
    assert w.role_state(carol.login) == (True, False)
    assert stored_verifier(w, bob.login) is not None  # NOLOGIN, the verifier kept
    assert b.lookup(bob.login) == []
    for r in (bob, carol):
        assert b.refused(r.login, r.password) is not None, f"retired {r.login} connected"

    # Rotated: the sweep gives alice's login a new password; the old one stops working
    # through PgBouncer too, the new one works, with no reload.
    w.call("UPDATE datatable_roles.settings"
           " SET clock_offset = clock_offset + rotate_every + interval '1 hour'")
    report = w.sweep()
    assert report["rotated"] >= 1, report
    fresh = w.resolve("alice")
    assert fresh.login == alice.login and fresh.password != alice.password
    assert b.refused(alice.login, alice.password) is not None, "the old password still works"
    with b.connect(fresh.login, fresh.password) as conn:
        assert order_ids(conn) == [1, 4]

    # Swept: unused for longer than unused_after, the login is dropped.
    w.advance_clock("400 days")
    report = w.sweep()
    assert report["dropped"] >= 1 and report["unfinished"] == [], report
    assert w.role_state(alice.login) == (False, False)
    assert b.lookup(alice.login) == []
    assert b.refused(fresh.login, fresh.password) is not None, "a swept login connected"
    assert b.pgb.running


def test_what_a_one_role_connection_makes_through_pgbouncer_passes_to_its_role_when_swept(
        world, bouncer):
    """PgBouncer refuses the startup option ``role=``, so a one-role connection through it
    acts as the login, and the table it makes is the login's. When the login is swept, the
    table passes to its role as it is (R6: the login's sessions may act as the role), not to
    the quarantine, and the role's viewers still read it through the login made next."""
    w, b = world, bouncer
    w.su(w.dbname).execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}")
                           .format(sql.Identifier(w.emea)))
    alice = w.resolve("alice")
    assert alice.roles == [w.emea] and alice.login.startswith("wm_set_")
    with b.connect(alice.login, alice.password) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (alice.login,)
        conn.execute("CREATE TABLE public.emea_notes (id int PRIMARY KEY, note text)")
        conn.execute("INSERT INTO public.emea_notes VALUES (1, 'kept'), (2, 'also kept')")
        conn.commit()

    w.advance_clock("400 days")
    report = w.sweep()
    assert report["dropped"] >= 1 and report["unfinished"] == [], report
    assert w.role_state(alice.login) == (False, False)
    owner, schema = w.su(w.dbname).execute(
        "SELECT c.relowner::regrole::text, n.nspname FROM pg_class AS c"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.relname = 'emea_notes'"
    ).fetchone()
    assert (owner, schema) == (w.emea, "public")

    again = w.resolve("alice")
    assert again.roles == [w.emea]
    with b.connect(again.login, again.password) as conn:
        assert conn.execute("SELECT id, note FROM public.emea_notes ORDER BY id").fetchall() == [
            (1, "kept"), (2, "also kept")]
        assert order_ids(conn) == [1, 4]


def test_an_auth_file_of_verifiers_serves_set_logins_with_no_auth_query(world, capsys):
    """The managed profile's PgBouncer (docs/operating.md, "PgBouncer on managed PostgreSQL"):
    no auth user, no lookup in the database; its auth_file is what `datatable-roles
    pgbouncer-userlist` writes, each live set login with the verifier the package set, and
    PgBouncer logs in to the server with the job's own SCRAM proof. A login is served once
    it is in the file (after a reload), a rotated password once the file is written again,
    and no plaintext password is ever in the file."""
    w = world

    def export() -> str:
        code = cli.main(["--dsn", w.meta.owner_conninfo, "pgbouncer-userlist",
                         "--database", w.dbname, "--output", str(pgb.userlist_path)])
        out, _err = capsys.readouterr()
        assert code == 0 and "set logins" in out, out
        pgb.reload()
        return pgb.userlist_path.read_text()

    with PgBouncer(w.cluster, [w.dbname], None, None) as pgb:
        b = Bouncer(w, pgb, "", "")
        alice, bob = w.resolve("alice"), w.resolve("bob")
        assert b.refused(alice.login, alice.password) is not None, "not in the auth_file yet"
        text = export()
        assert sorted(text.splitlines()) == sorted(
            f'"{r.login}" "{stored_verifier(w, r.login)}"' for r in (alice, bob))
        assert alice.password not in text and bob.password not in text
        for r, rows in ((alice, [1, 4]), (bob, [2, 5])):
            with b.connect(r.login, r.password) as conn:
                assert conn.execute("SELECT current_user").fetchone() == (r.login,)
                assert order_ids(conn) == rows
        assert b.refused(alice.login, alice.password + "x") is not None

        # Rotated by the sweep: the old password is refused at once (the server checks the
        # job's proof), the new one works once the file is written again.
        w.call("UPDATE datatable_roles.settings"
               " SET clock_offset = clock_offset + rotate_every + interval '1 hour'")
        assert w.sweep()["rotated"] >= 1
        fresh = w.resolve("alice")
        assert fresh.login == alice.login and fresh.password != alice.password
        export()
        assert b.refused(alice.login, alice.password) is not None, "the old password works"
        with b.connect(fresh.login, fresh.password) as conn:
            assert order_ids(conn) == [1, 4]


def test_a_one_role_logins_objects_go_to_the_quarantine_once_its_role_is_unmapped_there(
        world, bouncer):
    """one_role_heir's limit: once the role is taken out of the map of the login's database,
    what the login made there is not the role's to keep, and goes to the quarantine of the
    database's admin login like a set login's."""
    w, b = world, bouncer
    w.su(w.dbname).execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}")
                           .format(sql.Identifier(w.emea)))
    alice = w.resolve("alice")
    with b.connect(alice.login, alice.password) as conn:
        conn.execute("CREATE TABLE public.emea_left (id int)")
        conn.commit()
    w.call("SELECT remove_datatable_role(%s, 'main', %s)", [w.ws, w.emea])
    report = w.sweep()
    assert report["unfinished"] == [] and w.role_state(alice.login) == (False, False), report
    owner, schema = w.su(w.dbname).execute(
        "SELECT c.relowner::regrole::text, n.nspname FROM pg_class AS c"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.relname = 'emea_left'"
    ).fetchone()
    assert owner != w.emea and schema.startswith("wm_quarantine_"), (owner, schema)
