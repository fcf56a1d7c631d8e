"""Data tables on another PostgreSQL server (SPEC section 17, docs/servers.md).

A second, real cluster (17 when `make test` fetched it) runs beside the metadata database's,
with a manager login that is NOSUPERUSER CREATEROLE (and pg_signal_backend), as a managed
service's admin role. Each test registers it in its own metadata database as server ``b``,
puts a data table there, and checks what a job's login can do there, against real RLS.
"""

from __future__ import annotations

import secrets

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from datatable_roles.doctor import run_doctor
from datatable_roles.render import render_status
from datatable_roles.scram import scram_sha256_verifier
from support import MANAGER, ORDERS, Remote
from test_doctor import documented_hba

def register_server(w, remote: Remote, name: str = "b", password: str | None = None):
    remote.register(w.call, name, password)


@pytest.fixture
def far(make_world, remote, uid):
    """A world whose data table `far` is on server b, in a database named as the world's
    local one (main's): roles emea and us mapped there (viewer keys u/alice and u/bob), no
    default, and the orders table under RLS."""
    w = make_world(users={"alice": [], "bob": [], "publisher": []},
                   tenants={"emea": ["u/alice"], "us": ["u/bob"]})
    register_server(w, remote)
    # The database there has the name of the world's local one: two databases, two logins.
    admin, dbname = f"{uid}_badmin", w.dbname
    admin_pw = remote.datatable_db(dbname, admin)
    w.call("SELECT register_datatable(%s, 'far', %s, %s, %s, 'b')", [w.ws, dbname, admin, admin_pw])
    for short, user in (("emea", "alice"), ("us", "bob")):
        w.set_tenants("far", w.roles[short], [f"u/{user}"])
    w.set_default("far", None)
    with psycopg.connect(remote.cluster.conninfo(admin, admin_pw, dbname, tcp=True),
                         autocommit=True) as c:
        c.execute("CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL)")
        with c.cursor() as cur:
            cur.executemany("INSERT INTO orders VALUES (%s, %s)", ORDERS)
        c.execute("ALTER TABLE orders ENABLE ROW LEVEL SECURITY")
        for region in ("emea", "us"):
            role = w.roles[region]
            c.execute(sql.SQL("GRANT SELECT ON orders TO {}").format(sql.Identifier(role)))
            c.execute(sql.SQL("CREATE POLICY {} ON orders FOR SELECT TO {} USING (region = {})"
                              ).format(sql.Identifier(region), sql.Identifier(role),
                                       sql.Literal(region)))
    w.far_db, w.far_admin, w.far_admin_password = dbname, admin, admin_pw
    (w.group,), = w.call("SELECT login_group FROM datatable_roles.settings")
    yield w
    remote.drop(dbname, uid, w.group)


def resolve_far(w, viewer: str, role: str | None = None):
    with w.connect_worker() as c:
        return c.execute("SELECT dbname, login, password, roles, host, port"
                         " FROM resolve_datatable_role(%s, 'far', %s)",
                         [w.job(viewer), role]).fetchone()


def rows_as(remote: Remote, res, role: str | None = None) -> list[int]:
    dbname, login, password = res[:3]
    with psycopg.connect(remote.login_conninfo(login, password, dbname, role)) as c:
        return [r[0] for r in c.execute("SELECT id FROM orders ORDER BY id")]


def test_registering_a_server_tries_the_manager(make_world, remote):
    w = make_world(users={"publisher": []})
    with pytest.raises(psycopg.errors.InvalidPassword):
        register_server(w, remote, password="wrong")
    with remote.su() as c:
        c.execute(sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(
            sql.Identifier(w.uid + "_su"), sql.Literal(scram_sha256_verifier("pw-su-1234"))))
    try:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="SUPERUSER"):
            w.call("SELECT register_datatable_server('s', '127.0.0.1', %s, %s, 'pw-su-1234',"
                   " 'disable')", [remote.cluster.port, w.uid + "_su"])
    finally:
        with remote.su() as c:
            c.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(w.uid + "_su")))
    # A name that would end the $dtr$ blocks the package runs there is refused first.
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        w.call("SELECT register_datatable_server('s', '127.0.0.1', %s, 'm$dtr$; DROP ROLE x',"
               " 'pw', 'disable')", [remote.cluster.port])
    assert w.call("SELECT name FROM datatable_roles.server ORDER BY name") == [("local",)]
    register_server(w, remote)
    with pytest.raises(psycopg.errors.DuplicateObject):
        register_server(w, remote)


def test_a_viewer_gets_their_rows_on_the_other_server(far, remote):
    w = far
    alice = resolve_far(w, "alice")
    assert alice[4:] == ("127.0.0.1", remote.cluster.port)
    assert alice[3] == [w.roles["emea"]]
    assert rows_as(remote, alice) == [1, 4]
    bob = resolve_far(w, "bob")
    assert rows_as(remote, bob) == [2, 5]
    # The login exists there only, holding exactly its role, and not here.
    # (and the instance's login group, with no privilege, for pg_hba.conf rules as here)
    assert remote.role(alice[1]) == {"login": True,
                                     "member_of": sorted([w.roles["emea"], w.group])}
    assert w.call("SELECT count(*) FROM pg_roles WHERE rolname = %s", [alice[1]]) == [(0,)]
    # main, on local, has a database of the same name: alice's login there is another.
    assert w.resolve(w.job("alice", "u/alice"), "main", w.roles["emea"]).login != alice[1]
    # bob's was made by the first use's plain statements (the group exists by then), alice's
    # by the whole block: both are in the group with no privilege of it (16+: no INHERIT, no
    # SET; 15: the group is NOINHERIT and has none).
    with remote.su() as c:
        if c.info.server_version >= 160000:
            assert c.execute(
                "SELECT array_agg(DISTINCT (inherit_option, set_option)::text) FROM pg_auth_members"
                " WHERE roleid = %s::regrole AND member IN (%s::regrole, %s::regrole)",
                [w.group, alice[1], bob[1]]).fetchone() == (["(f,f)"],)
    assert remote.role(bob[1]) == {"login": True, "member_of": sorted([w.roles["us"], w.group])}
    # The catalog roles were made there as NOLOGIN roles.
    assert remote.role(w.roles["emea"]) == {"login": False, "member_of": []}


def test_resolving_an_existing_login_makes_no_remote_call(far, remote):
    w = far
    first = resolve_far(w, "alice")
    remote.cluster.pause()
    try:
        again = resolve_far(w, "alice")
    finally:
        remote.cluster.resume()
    assert again[1:3] == first[1:3]
    assert rows_as(remote, again) == [1, 4]


def manager_sessions(remote: Remote) -> set[int]:
    """The backends of the package's manager sessions there."""
    with remote.su() as c:
        return {pid for (pid,) in c.execute(
            "SELECT pid FROM pg_stat_activity WHERE usename = %s"
            " AND application_name = 'datatable_roles'", [MANAGER])}


def test_first_uses_in_one_backend_share_a_kept_manager_session(far, remote):
    """A worker backend keeps its manager session there open for its next first uses (no
    new connection each time); one found gone is opened again, once; the worker itself
    cannot use it (dblink is the owner's alone)."""
    w = far
    before = manager_sessions(remote)
    with w.connect_worker() as c:
        def first_use(viewer: str) -> str:
            return c.execute("SELECT login FROM resolve_datatable_role(%s, 'far')",
                             [w.job(viewer)]).fetchone()[0]
        first_use("alice")
        kept = manager_sessions(remote) - before
        assert len(kept) == 1
        first_use("bob")
        assert manager_sessions(remote) - before == kept
        # It closes itself once idle for five minutes there.
        with remote.su() as su:
            su.execute("SELECT pg_terminate_backend(%s)", [kept.pop()])
        w.set_tenants("far", w.roles["us"], ["u/bob", "u/alice"])
        alice = c.execute("SELECT dbname, login, password, roles FROM"
                          " resolve_datatable_role(%s, 'far')", [w.job("alice")]).fetchone()
        assert sorted(alice[3]) == sorted([w.roles["emea"], w.roles["us"]])
        assert rows_as(remote, alice) == [1, 2, 4, 5]
        again = manager_sessions(remote) - before
        assert len(again) == 1 and again.isdisjoint(kept)
        for attempt in ("SELECT datatable_roles_dblink.dblink_get_connections()",
                        "SELECT datatable_roles_dblink.dblink_exec("
                        "'datatable_roles_manager b', 'ALTER ROLE x SUPERUSER')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(attempt)
    with remote.su() as su:
        assert su.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)",
                          [list(again)]).fetchone() == (0,)  # gone with its backend


def test_a_kept_manager_session_is_not_taken_for_another_registration(make_world, remote):
    """The kept session is named by the server's row version: one opened for a
    registration that was rolled back is not used for a later one of the same name."""
    w = make_world(users={"publisher": []})
    other = w.uid + "_m2"
    with remote.su() as su:
        su.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE PASSWORD {}").format(
            sql.Identifier(other), sql.Literal(scram_sha256_verifier("pw-m2-12345"))))
        su.execute(sql.SQL("GRANT pg_signal_backend TO {}").format(sql.Identifier(other)))
    try:
        with w.connect_owner() as c:
            who = "SELECT datatable_roles.value_as_manager('b', 'SELECT current_user::text')"
            with c.transaction(force_rollback=True):
                remote.register(c.execute)
                assert c.execute(who).fetchone() == (MANAGER,)
            c.execute("SELECT register_datatable_server('b', '127.0.0.1', %s, %s,"
                      " 'pw-m2-12345', 'disable')", [remote.cluster.port, other])
            assert c.execute(who).fetchone() == (other,)
            assert c.execute("SELECT datatable_roles.value_as_manager('b',"
                             " 'SELECT current_setting(''idle_session_timeout'')')"
                             ).fetchone() == ("5min",)
    finally:
        with remote.su() as su:
            su.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(other)))


def test_usable_roles_and_a_preview_there_change_nothing(far, remote):
    """usable_datatable_roles and preview_datatable_role_change work for a data table there:
    the preview names the login the removal would retire there, and the change it would
    send, and neither the login there nor the queue changes."""
    w = far
    alice = resolve_far(w, "alice")
    emea = w.roles["emea"]
    assert w.call("SELECT role, source, roles FROM usable_datatable_roles(%s, 'far', 'alice')",
                  [w.ws]) == [(emea, "named", [emea]), (None, "default", None),
                               (None, "default_as_viewer", [emea])]
    (report,), = w.call("SELECT preview_datatable_role_change('remove', %s, %s, 'far')",
                        [emea, w.ws])
    assert report["logins"] == [{"login": alice[1], "dbname": w.far_db, "server": "b",
                                 "roles": [emea], "live": True, "pids": []}]
    assert report["server_changes"] == [{"server": "b",
                                         "change": f"retirement of login {alice[1]}"}]
    assert remote.role(alice[1])["login"] is True
    assert w.call("SELECT count(*) FROM datatable_roles.server_change") == [(0,)]
    assert rows_as(remote, alice) == [1, 4]


def test_a_removal_while_the_server_is_down_is_pending_and_refuses(far, remote):
    w = far
    alice = resolve_far(w, "alice")
    remote.cluster.pause()
    try:
        w.call("SELECT remove_datatable_role(%s, 'far', %s)", [w.ws, w.roles["emea"]])
        assert w.call("SELECT what FROM datatable_roles.server_change") == [
            (f"retirement of login {alice[1]}",)]
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as e:
            resolve_far(w, "bob")
        assert e.value.diag.constraint_name == "server_pending"
    finally:
        remote.cluster.resume()
    # Back: the next resolve applies the change, then serves.
    bob = resolve_far(w, "bob")
    assert rows_as(remote, bob) == [2, 5]
    assert w.call("SELECT count(*) FROM datatable_roles.server_change") == [(0,)]
    assert remote.role(alice[1])["login"] is False
    with pytest.raises(psycopg.OperationalError):
        rows_as(remote, alice)


def test_disabling_a_role_retires_its_logins_there_and_enabling_it_takes_them_back(far, remote):
    w = far
    alice = resolve_far(w, "alice")
    w.call("SELECT set_datatable_role_enabled(%s, false)", [w.roles["emea"]])
    assert remote.role(alice[1])["login"] is False
    with pytest.raises(psycopg.OperationalError):
        rows_as(remote, alice)
    w.call("SELECT set_datatable_role_enabled(%s, true)", [w.roles["emea"]])
    again = resolve_far(w, "alice")
    # The same login there (its name is its set's), taken back with a new password.
    assert again[1] == alice[1] and again[2] != alice[2]
    assert remote.role(again[1]) == {"login": True,
                                     "member_of": sorted([w.roles["emea"], w.group])}
    assert rows_as(remote, again) == [1, 4]
    with pytest.raises(psycopg.OperationalError):
        rows_as(remote, alice)


def test_the_sweep_applies_pending_changes_and_reports_the_others(far, remote):
    w = far
    resolve_far(w, "alice")
    remote.cluster.pause()
    try:
        w.call("SELECT set_datatable_role_enabled(%s, false)", [w.roles["emea"]])
        report = w.sweep()
        assert report["servers_pending"] == ["b"]
    finally:
        remote.cluster.resume()
    report = w.sweep()
    assert report["servers_pending"] == []
    assert w.call("SELECT count(*) FROM datatable_roles.server_change") == [(0,)]


def test_a_rename_reaches_the_server(far, remote):
    w = far
    resolve_far(w, "alice")
    new = w.uid + "_emea2"
    w.call("SELECT rename_datatable_role(%s, %s)", [w.roles["emea"], new])
    assert remote.role(w.roles["emea"]) is None
    assert remote.role(new) == {"login": False, "member_of": []}
    # The policy names the role in TO: it follows the rename (docs/policies.md).
    again = resolve_far(w, "alice")
    assert again[3] == [new] and remote.role(again[1])["member_of"] == sorted([new, w.group])
    assert rows_as(remote, again) == [1, 4]


def test_the_sweep_drops_unused_logins_there_and_their_objects_pass_inert(far, remote):
    w = far
    alice = resolve_far(w, "alice")
    with remote.su(w.far_db) as c:
        c.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(
            sql.Identifier(w.roles["emea"])))
    # Without the role option, the one-role login's table is its own.
    with psycopg.connect(remote.login_conninfo(*alice[1:3], w.far_db), autocommit=True) as c:
        c.execute("CREATE TABLE scratch (n int)")
        c.execute("CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE sql"
                  " SECURITY DEFINER AS 'SELECT 1::text'")
    w.advance_clock("40 days")
    report = w.sweep()
    assert report["dropped"] == 1 and report["unfinished"] == [], report
    assert remote.role(alice[1]) is None
    assert w.rows() == {}
    schema, owner = quarantined(remote, w.far_db, "scratch")
    assert owner == w.far_admin and schema.startswith("wm_quarantine_")
    with remote.su(w.far_db) as c:
        assert c.execute("SELECT prosecdef FROM pg_proc WHERE proname = 'lower'"
                         " AND pronamespace <> 'pg_catalog'::regnamespace").fetchall() == [(False,)]
    assert remote.role(w.far_admin)["member_of"] == []


def test_a_role_made_there_by_someone_else_is_not_adopted(far, remote):
    w = far
    stranger = w.new_role("stranger")
    with remote.su() as c:
        c.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(stranger)))
    with pytest.raises(psycopg.errors.DuplicateObject):
        w.set_tenants("far", stranger, ["u/alice"])
    assert w.call("SELECT count(*) FROM datatable_roles.datatable_role m"
                  " JOIN datatable_roles.catalog_role r ON r.id = m.role_id"
                  " WHERE r.name = %s", [stranger]) == [(0,)]


def test_no_password_crosses_in_statement_text(far, remote):
    w = far
    remote.cluster.set_setting("log_statement", "all")
    try:
        alice = resolve_far(w, "alice")
        w.advance_clock("2 days")
        w.sweep()  # rotation there
    finally:
        remote.cluster.set_setting("log_statement", "none")
    log = remote.cluster.log_path.read_text(errors="replace")
    assert alice[2] not in log
    assert remote.manager_password not in log


def test_first_use_or_a_first_map_on_an_unreachable_server_changes_nothing(far, remote):
    w = far
    late = w.new_role("late")
    remote.cluster.pause()
    try:
        with pytest.raises(psycopg.errors.SqlclientUnableToEstablishSqlconnection):
            resolve_far(w, "alice")
        with pytest.raises(psycopg.errors.SqlclientUnableToEstablishSqlconnection):
            w.set_tenants("far", late, ["u/alice"])
    finally:
        remote.cluster.resume()
    assert w.rows() == {}
    assert w.call("SELECT count(*) FROM datatable_roles.server_change") == [(0,)]
    assert rows_as(remote, resolve_far(w, "alice")) == [1, 4]


def test_a_script_on_a_far_login_cannot_widen_or_keep_its_own_password(far, remote):
    w = far
    alice = resolve_far(w, "alice")
    dbname, login, password = alice[:3]
    with psycopg.connect(remote.login_conninfo(login, password, dbname),
                         autocommit=True) as c:
        for target in (w.roles["us"], w.far_admin, MANAGER):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(target)))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(w.roles["us"]),
                                                     sql.Identifier(login)))
        c.execute("ALTER ROLE CURRENT_USER PASSWORD 'the-scripts-own-1'")
    with pytest.raises(psycopg.OperationalError):
        rows_as(remote, alice)
    assert w.heal(login) == "healed"
    again = resolve_far(w, "alice")
    assert again[1] == login and rows_as(remote, again) == [1, 4]
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(remote.login_conninfo(login, "the-scripts-own-1", dbname)).close()


def test_settings_a_script_gives_its_login_there_are_gone_after_the_next_sweep(far, remote):
    """Resolves make no remote call, so the sweep looks there: a login some script gave a
    setting (in its database, everywhere, or in another database) is re-keyed and made
    exact again; the others keep their passwords, and a server that is down is left for
    the next sweep."""
    w = far
    alice, bob = resolve_far(w, "alice"), resolve_far(w, "bob")
    dbname, login, password = alice[:3]
    with psycopg.connect(remote.login_conninfo(login, password, dbname), autocommit=True) as c:
        c.execute("ALTER ROLE CURRENT_USER SET search_path = nowhere")
        c.execute(sql.SQL("ALTER ROLE CURRENT_USER IN DATABASE {} SET work_mem = '64kB'").format(
            sql.Identifier(dbname)))
        c.execute("ALTER ROLE CURRENT_USER IN DATABASE postgres SET statement_timeout = 1")

    def settings(login: str) -> int:
        with remote.su() as c:
            return c.execute("SELECT count(*) FROM pg_db_role_setting WHERE setrole = %s::regrole",
                             [login]).fetchone()[0]

    assert settings(alice[1]) == 3
    remote.cluster.pause()
    try:
        assert w.sweep()["healed"] == 0  # nothing here says so, and there is not reachable
    finally:
        remote.cluster.resume()
    assert settings(alice[1]) == 3
    assert w.sweep()["healed"] == 1
    assert settings(alice[1]) == 0
    with pytest.raises(psycopg.OperationalError):  # re-keyed: the old password is refused
        rows_as(remote, alice)
    again = resolve_far(w, "alice")
    assert again[1] == alice[1] and rows_as(remote, again) == [1, 4]
    assert remote.role(again[1]) == {"login": True,
                                     "member_of": sorted([w.roles["emea"], w.group])}
    assert resolve_far(w, "bob")[2] == bob[2] and rows_as(remote, bob) == [2, 5]
    assert w.sweep()["healed"] == 0


def test_a_rename_and_a_drop_while_the_server_is_down_are_applied_in_order(far, remote):
    w = far
    alice = resolve_far(w, "alice")
    renamed = w.uid + "_emea3"
    remote.cluster.pause()
    try:
        w.call("SELECT rename_datatable_role(%s, %s)", [w.roles["emea"], renamed])
        w.call("SELECT drop_datatable_role(%s)", [renamed])
        queued = [what for (what,) in w.call(
            "SELECT what FROM datatable_roles.server_change ORDER BY id")]
        assert queued == [f"rename of role {w.roles['emea']} to {renamed}",
                          f"retirement of login {alice[1]}",
                          f"membership of {w.far_admin} in role {renamed} for its drop",
                          f"objects and privileges of role {renamed} in database {w.far_db}",
                          f"end of membership of {w.far_admin} in role {renamed}",
                          f"drop of role {renamed}"]
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
            resolve_far(w, "bob")
    finally:
        remote.cluster.resume()
    assert rows_as(remote, resolve_far(w, "bob")) == [2, 5]
    assert remote.role(w.roles["emea"]) is None and remote.role(renamed) is None
    assert remote.role(alice[1])["login"] is False
    # Its policy went with it (DROP OWNED, run by the admin login, which now holds no role).
    with remote.su(w.far_db) as c:
        assert c.execute("SELECT polname FROM pg_policy").fetchall() == [("us",)]
    assert remote.role(w.far_admin)["member_of"] == []


def quarantined(remote: Remote, dbname: str, table: str) -> tuple[str, str] | None:
    """(schema, owner) of ``table`` there, or None."""
    with remote.su(dbname) as c:
        return c.execute("SELECT schemaname, tableowner FROM pg_tables WHERE tablename = %s",
                         [table]).fetchone()


def test_a_dropped_role_s_objects_there_pass_to_the_admin_login_inert(far, remote):
    w = far
    us = w.roles["us"]
    with remote.su(w.far_db) as c:
        c.execute("CREATE TABLE notes (n text)")
        c.execute("INSERT INTO notes VALUES ('kept')")
        c.execute(sql.SQL("ALTER TABLE notes OWNER TO {}").format(sql.Identifier(us)))
        c.execute(sql.SQL("GRANT SELECT ON notes TO PUBLIC"))
    w.call("SELECT drop_datatable_role(%s)", [us])
    assert remote.role(us) is None
    schema, owner = quarantined(remote, w.far_db, "notes")
    assert owner == w.far_admin and schema.startswith("wm_quarantine_")
    with remote.su(w.far_db) as c:
        assert c.execute(sql.SQL("SELECT n FROM {}.notes").format(sql.Identifier(schema))
                         ).fetchall() == [("kept",)]
        # inert: the grant to PUBLIC went with the move
        assert c.execute("SELECT has_table_privilege('public', %s, 'SELECT')",
                         [f"{schema}.notes"]).fetchone() == (False,)
    assert remote.role(w.far_admin)["member_of"] == []
    assert w.call("SELECT count(*) FROM datatable_roles.server_change") == [(0,)]
    assert rows_as(remote, resolve_far(w, "alice")) == [1, 4]


def test_status_shows_the_server_and_what_it_has_not_applied(far, remote):
    w = far
    resolve_far(w, "alice")
    remote.cluster.pause()
    try:
        w.call("SELECT set_datatable_role_enabled(%s, false)", [w.roles["emea"]])
        (report,) = w.call("SELECT datatable_roles.status_report()")[0]
    finally:
        remote.cluster.resume()
    servers = {sv["name"]: sv for sv in report["servers"]}
    assert servers["local"]["host"] is None and servers["local"]["pending"] == 0
    b = servers["b"]
    assert (b["host"], b["port"], b["manager_login"], b["pending"]) == (
        "127.0.0.1", remote.cluster.port, MANAGER, 1)
    assert b["first_pending"]["what"].startswith("retirement of login wm_set_")
    assert remote.manager_password not in str(report)
    far_entry = next(d for d in report["datatables"] if d["name"] == "far")
    assert far_entry["server"] == "b"
    text = render_status(report)
    assert "Other servers" in text and "1, first: retirement of login wm_set_" in text


def test_two_instances_share_the_server_each_with_its_own_logins(far, remote, make_world,
                                                                  new_meta_db, uid):
    """A second instance (its own metadata database) registers the same server with the
    same manager: its roles and logins there are its own, and the first instance's sweep
    and drops leave them alone."""
    w = far
    other = make_world(meta=new_meta_db(), tag="o", users={"alice": [], "publisher": []},
                       tenants={"emea": ["u/alice"]})
    remote.register(other.call)
    admin, dbname = f"{uid}o_badmin", f"{uid}o_far"
    password = remote.datatable_db(dbname, admin)
    try:
        other.call("SELECT register_datatable(%s, 'far', %s, %s, %s, 'b')",
                   [other.ws, dbname, admin, password])
        other.set_tenants("far", other.roles["emea"], ["u/alice"])
        other.set_default("far", None)
        mine, theirs = resolve_far(w, "alice"), resolve_far(other, "alice")
        assert mine[1] != theirs[1]
        (group,), = other.call("SELECT login_group FROM datatable_roles.settings")
        assert group != w.group
        assert remote.role(theirs[1]) == {"login": True,
                                          "member_of": sorted([other.roles["emea"], group])}
        # The first instance drops its emea role and sweeps everything: the other's stay.
        w.call("SELECT drop_datatable_role(%s)", [w.roles["emea"]])
        w.advance_clock("40 days")
        assert w.sweep()["unfinished"] == []
        assert remote.role(mine[1]) is None
        assert remote.role(theirs[1])["login"] is True
        with psycopg.connect(remote.login_conninfo(*theirs[1:3], dbname)) as c:
            assert c.execute("SELECT current_user").fetchone() == (theirs[1],)
    finally:
        remote.drop(dbname, uid + "o")


def test_a_rotation_the_server_cannot_take_leaves_the_sweep_going(far, remote):
    w = far
    alice = resolve_far(w, "alice")
    w.advance_clock("2 days")
    remote.cluster.pause()
    try:
        report = w.sweep()
    finally:
        remote.cluster.resume()
    assert report["rotated"] == 0
    assert [u["login"] for u in report["unfinished"]] == [alice[1]]
    assert "rotation" in report["unfinished"][0]["reason"]
    # Its password is unchanged and still logs in; the next sweep rotates it.
    assert rows_as(remote, alice) == [1, 4]
    assert w.sweep()["rotated"] == 1
    assert resolve_far(w, "alice")[2] != alice[2]


def test_a_login_group_made_there_by_someone_else_is_not_joined(far, remote):
    w = far
    with remote.su(w.far_db) as c:
        c.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(w.group)))
        c.execute(sql.SQL("GRANT SELECT ON orders TO {}").format(sql.Identifier(w.group)))
    with pytest.raises(psycopg.errors.DuplicateObject):
        resolve_far(w, "alice")
    with remote.su() as c:
        assert c.execute("SELECT count(*) FROM pg_auth_members WHERE roleid = %s::regrole",
                         [w.group]).fetchone() == (0,)
    assert w.rows() == {}


def test_the_doctor_checks_the_server_and_says_what_is_pending(far, remote):
    w = far
    resolve_far(w, "alice")

    def servers_check() -> tuple[bool, str]:
        (check,) = [c for c in run_doctor(w.meta.owner_conninfo).checks if c.name == "servers"]
        assert check.subject == "b"
        return check.ok, check.detail

    ok, detail = servers_check()
    assert ok and detail.startswith("server b (127.0.0.1:") and "nothing pending" in detail
    remote.cluster.pause()
    try:
        w.call("SELECT set_datatable_role_enabled(%s, false)", [w.roles["emea"]])
        ok, detail = servers_check()
    finally:
        remote.cluster.resume()
    assert not ok and detail.startswith("the manager login dtr_manager cannot log in to server b")
    ok, detail = servers_check()
    assert not ok and detail.startswith("server b has 1 change(s) not applied (first: retirement")
    w.sweep()
    assert servers_check()[0]


def test_the_doctor_checks_connect_reach_and_policies_there(far, remote, uid):
    """The doctor's connect_grants, login_reach and policies checks read the other server
    too (as its manager, a live login of it, and the data table's admin login there), and
    say what is wrong there, with fixes to run there."""
    w = far
    alice = resolve_far(w, "alice")
    # This cluster's login_reach does not try a login of the other server (it would be
    # refused here for not existing: a pass that proves nothing).
    (here,) = [c for c in run_doctor(w.meta.owner_conninfo).checks
               if c.name == "login_reach" and c.subject is None]
    assert alice[1] not in here.detail and here.skipped
    gone = f"{uid}_gone"
    w.su("postgres").execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(gone)))

    def far_checks() -> dict[str, object]:
        return {c.name: c for c in run_doctor(w.meta.owner_conninfo).checks
                if c.subject in ("b", f"b/{w.far_db}")}

    try:
        with remote.su() as su:
            for db in ("postgres", "template1"):  # open to PUBLIC, as a new cluster has them
                su.execute(sql.SQL("REVOKE CONNECT ON DATABASE {} FROM PUBLIC").format(
                    sql.Identifier(db)))
            su.execute(sql.SQL("GRANT CONNECT ON DATABASE postgres TO {}").format(
                sql.Identifier(MANAGER)))
        checks = far_checks()
        assert {n: c.ok for n, c in checks.items()} == {
            "servers": True, "connect_grants": True, "login_reach": True, "policies": True}
        # Break each there.
        with remote.su() as su:
            su.execute("GRANT CONNECT ON DATABASE postgres TO PUBLIC")
            su.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO PUBLIC, {}").format(
                sql.Identifier(w.far_db), sql.Identifier(w.roles["emea"])))
        with psycopg.connect(remote.cluster.conninfo(w.far_admin, w.far_admin_password,
                                                     w.far_db, tcp=True),
                             autocommit=True) as c:
            c.execute(sql.SQL("CREATE POLICY ghostly ON orders FOR SELECT"
                              " USING (pg_has_role(current_user, {}, 'member'))").format(
                sql.Literal(gone)))  # a role of that name is here, not there
        checks = far_checks()
        grants, reach, policies = (checks[n] for n in ("connect_grants", "login_reach",
                                                       "policies"))
        assert not grants.ok and grants.detail.startswith(
            f"on server b: PUBLIC has CONNECT on data table database(s) {w.far_db}")
        assert f"catalog role(s) with CONNECT: {w.roles['emea']} on {w.far_db}" in grants.detail
        assert f"REVOKE CONNECT ON DATABASE {w.far_db} FROM PUBLIC;" in grants.fix
        assert not reach.ok and "logged in to postgres" in reach.detail
        assert not policies.ok and f"names missing role {gone}" in policies.detail
        assert f"In database {w.far_db} on server b" in policies.fix
    finally:
        with remote.su() as su:
            for db in ("postgres", "template1"):
                su.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO PUBLIC").format(
                    sql.Identifier(db)))
        w.su("postgres").execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(gone)))


def test_the_pg_hba_check_judges_a_login_of_this_cluster(far, remote, uid):
    """The pg_hba check weighs this cluster's rules against a generated login of this cluster
    and its memberships here, even when the last login used is on another server (unknown
    here: it would be judged as a member of the login group alone, and pass)."""
    w = far
    local = w.resolve(w.job("alice", "u/alice"), "main", w.roles["emea"])
    resolve_far(w, "bob")  # used last, on server b
    owner = w.cluster.owner
    su = w.su(w.meta.name)  # privileges on a catalog view are the database's
    su.execute(sql.SQL("GRANT SELECT ON pg_catalog.pg_hba_file_rules TO {};"
                       " GRANT EXECUTE ON FUNCTION pg_catalog.pg_hba_file_rules() TO {}").format(
        sql.Identifier(owner), sql.Identifier(owner)))
    try:
        # The operator keeps emea's logins out of the local data table's database.
        with documented_hba(w, uid, first=[f"host  {w.dbname}  +{w.roles['emea']}  all  reject"]):
            check = run_doctor(w.meta.owner_conninfo).check("pg_hba")
    finally:
        su.execute(sql.SQL("REVOKE SELECT ON pg_catalog.pg_hba_file_rules FROM {};"
                           " REVOKE EXECUTE ON FUNCTION pg_catalog.pg_hba_file_rules() FROM {}"
                           ).format(sql.Identifier(owner), sql.Identifier(owner)))
    assert not check.ok and not check.skipped
    assert f"a generated login {local.login} connecting to {w.dbname}" in check.detail
    assert "(reject), not scram-sha-256" in check.detail


def test_the_grants_editor_plans_and_applies_there_as_the_admin_login(far, remote):
    w = far
    with psycopg.connect(remote.cluster.conninfo(w.far_admin, w.far_admin_password, w.far_db,
                                                 tcp=True), autocommit=True) as c:
        c.execute("CREATE TABLE targets (region text PRIMARY KEY, target int)")
        c.execute("INSERT INTO targets VALUES ('emea', 5), ('us', 7)")
    alice = resolve_far(w, "alice")

    def targets(res) -> str:
        try:
            with psycopg.connect(remote.login_conninfo(*res[1:3], w.far_db)) as c:
                return str(c.execute("SELECT count(*) FROM targets").fetchone()[0])
        except psycopg.errors.InsufficientPrivilege:
            return "denied"

    assert targets(alice) == "denied"
    target = Jsonb({"schema": "public", "table": "targets"})
    change = Jsonb({"grant": ["SELECT"], "to": w.roles["emea"]})
    (plan,), = w.call("SELECT plan_datatable_acl(%s, 'far', %s, %s)", [w.ws, target, change])
    assert plan["statements"] == [f"GRANT SELECT ON TABLE public.targets TO {w.roles['emea']}"]
    (done,), = w.call("SELECT apply_datatable_acl(%s, 'far', %s, %s, %s)",
                      [w.ws, target, change, plan["statements"]])
    assert done["applied"] == 1
    assert targets(alice) == "2"
    # The admin login there holds no role after the apply, and the audit row names it.
    assert remote.role(w.far_admin)["member_of"] == []
    assert w.call("SELECT count(*) FROM datatable_roles.acl_change WHERE datatable = 'far'") \
        == [(1,)]
    (shown,), = w.call("SELECT datatable_acl(%s, 'far', %s)", [w.ws, target])
    assert any(g.get("role") == w.roles["emea"] for g in shown["grants"]), shown
