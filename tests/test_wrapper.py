"""The Python wrapper (datatable_roles.client, datatable_roles.errors) against a real cluster:
every exception class from a real server error, connect() over real logins and its pools (a
one-role login acting as its role through the startup option; one retry, which heals, when a
login's password was changed between the resolve and the connection), a Resolution that
never shows its password."""

from __future__ import annotations

import logging
import secrets
import threading
import time
import uuid

import psycopg
import pytest
from psycopg import sql

from datatable_roles import client as client_module
from datatable_roles.client import Client, Resolution
from datatable_roles.errors import (AdminPasswordChanged, AlreadyExists, DatatableRolesError,
                                    InvalidInput, InvalidPassword, PermissionDenied, Refused, Retry,
                                    StillInUse, UnknownObject, WrongState, map_error, redact)
from datatable_roles.scram import scram_sha256_verifier
from support import ACME, DT, WS, World, connect

ORDERS = "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM orders"


@pytest.fixture
def env(make_world):
    """support.ACME: a metadata database with the package, a data table 'main' in workspace
    'acme' whose orders are 1 emea, 2 us, 3 apac, 4 emea, 5 us under policies per region,
    and: alice (group emea), bob (group us), carol (groups emea and us), dave (no group),
    publisher (the app identity, tenant of nothing). env.owner / env.worker are Clients."""
    return make_world(**ACME)


def backend(conn: psycopg.Connection) -> tuple[int, str]:
    return conn.execute("SELECT pg_backend_pid(), current_user::text").fetchone()


def break_password(env: World, login: str) -> None:
    """What a script handed ``login`` may do: give it a password of its own (here as the
    superuser, a verifier: no plaintext in the statement)."""
    with env.cluster.connect_super() as su:
        su.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(login),
            sql.Literal(scram_sha256_verifier(secrets.token_hex(16)))))


def stored_verifier(env: World, login: str) -> str:
    with env.cluster.connect_super() as su:
        return su.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                          [login]).fetchone()[0]


# ---- Resolution --------------------------------------------------------------------------


def test_resolution_repr_and_str_hide_the_password():
    res = Resolution(dbname="db", login="wm_set_x", password="s3cret-p4ss", roles=("a", "b"),
                     kind="set")
    for text in (repr(res), str(res), f"{res}", f"{res!r}", str([res])):
        assert "s3cret-p4ss" not in text
        assert "wm_set_x" in text
    assert res.kind == "set"  # given (resolve takes it from login_kind), never computed
    with pytest.raises(AttributeError):
        res.password = "other"  # frozen


def test_resolve_returns_a_typed_resolution(env):
    res = env.worker.resolve(env.job("alice"), DT)  # default admin: R2
    assert isinstance(res, Resolution)
    assert (res.dbname, res.login, res.roles, res.kind) == (
        env.dbname, env.admin_login, ("admin",), "admin")
    assert res.password == env.admin_password
    assert env.admin_password not in repr(res)
    env.owner.set_datatable_default_role(WS, DT, None)
    res = env.worker.resolve(env.job("carol"), DT)
    assert res.kind == "set" and res.login.startswith("wm_set_")
    assert res.session_role is None and res.options is None
    alice = env.worker.resolve(env.job("alice"), DT)
    # R6: a scoped login of its own (never the catalog role, which is NOLOGIN), acting as
    # the role through the startup option
    assert (alice.roles, alice.kind) == ((env.emea,), "role")
    assert alice.login.startswith("wm_set_") and alice.login != res.login
    assert (alice.session_role, alice.options) == (env.emea, f"-c role={env.emea}")
    assert res.roles == tuple(sorted([env.emea, env.us]))
    assert res.password not in repr(res) and len(res.password) >= 32


# ---- errors ------------------------------------------------------------------------------


def _retry_case(env: World) -> None:
    """40001: a set login created concurrently, outside the package's lock, by the owner (on
    16+ one made by anyone else is not taken back: tests/test_versions.py)."""
    env.owner.set_datatable_default_role(WS, DT, None)
    (ids,) = env.owner._rows("SELECT array_agg(id) FROM datatable_roles.catalog_role"
                             " WHERE name = ANY(%s)", [[env.emea, env.us]])[0]
    (login,) = env.owner._rows("SELECT datatable_roles.set_login_name(%s, %s::bigint[])",
                               [env.dbname, ids])[0]
    job = env.job("carol")
    errors: list[BaseException] = []
    with psycopg.connect(env.cluster.owner_conninfo()) as rival:
        rival.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(login)))

        def resolve() -> None:
            try:
                env.worker.resolve(job, DT)
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                errors.append(e)

        t = threading.Thread(target=resolve)
        t.start()
        deadline = time.monotonic() + 20
        with env.cluster.connect_super() as watch:
            while time.monotonic() < deadline:
                (waiting,) = watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
                    " AND usename = %s AND wait_event_type = 'Lock'",
                    [env.meta.name, env.cluster.worker]).fetchone()
                if waiting:
                    break
                time.sleep(0.05)
        rival.commit()
        t.join(30)
    assert errors, "the resolve did not fail"
    raise errors[0]


def _still_in_use_case(env: World) -> None:
    """2BP01: what the role holds in its data table database (SELECT on orders) cannot be
    moved, the database taking no connection."""
    with env.cluster.connect_super() as su:
        su.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(
            sql.Identifier(env.dbname)))
    try:
        env.owner.drop_datatable_role(env.emea)
    finally:
        with env.cluster.connect_super() as su:
            su.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS true").format(
                sql.Identifier(env.dbname)))


def _admin_password_changed_case(env: World) -> None:
    """55000, CONSTRAINT admin_password: the admin login's password was changed outside the
    package, and the worker reports its refused connection (R2)."""
    break_password(env, env.admin_login)
    env.worker.heal_refused_login(env.worker.resolve(env.job("dave"), DT).login)


def _invalid_password_case(env: World) -> None:
    """28P01: registering a data table with an admin password that does not log in."""
    env.owner.register_datatable(WS, "other", env.dbname, env.admin_login, "not-the-password")


ERROR_CASES = {
    "refused: no role remains (R5)": (
        Refused, "42501",
        lambda e: (e.owner.set_datatable_default_role(WS, DT, None),
                   e.worker.resolve(e.job("dave"), DT))),
    "refused: a named role the identity may not use (R1)": (
        Refused, "42501", lambda e: e.worker.resolve(e.job("alice"), DT, e.emea)),
    "permission denied: the worker may not create roles": (
        PermissionDenied, "42501", lambda e: e.worker.create_datatable_role(e.uid + "_nope")),
    "invalid: reserved role name": (
        InvalidInput, "22023", lambda e: e.owner.validate_role_name("wm_set_x")),
    "invalid: tenant key": (
        InvalidInput, "22023",
        lambda e: e.owner.set_datatable_role_tenants(WS, DT, e.emea, ["x/y"])),
    "invalid: NULL argument": (InvalidInput, "22004", lambda e: e.owner.add_workspace(None)),
    "unknown: user": (
        UnknownObject, "P0002", lambda e: e.owner.add_group_member(WS, "ops", "nobody")),
    "unknown: job": (UnknownObject, "P0002", lambda e: e.worker.resolve(uuid.uuid4(), DT)),
    "unknown: role": (
        UnknownObject, "P0002", lambda e: e.owner.rename_datatable_role("nope_x", "nope_y")),
    "duplicate role": (
        AlreadyExists, "42710", lambda e: e.owner.create_datatable_role(e.emea)),
    "duplicate email": (
        AlreadyExists, "23505",
        lambda e: e.owner.add_workspace_user(WS, "alice2", "ALICE@acme.test")),
    "job recorded twice": (
        AlreadyExists, "23505",
        lambda e: (lambda j: e.worker.record_job_start(j, WS, "u/publisher", "schedule"))(
            e.job(None, origin="schedule"))),
    "default not in the map": (
        WrongState, "55000",
        lambda e: e.owner.set_datatable_default_role(WS, DT, e.new_role("unmapped"))),
    "editing a reference": (
        WrongState, "55000",
        lambda e: (e.owner.add_workspace("fork"),
                   e.owner.reference_datatable("fork", DT, WS, DT),
                   e.owner.set_datatable_role_tenants("fork", DT, e.emea, ["*"]))),
    "admin password changed outside the package": (
        AdminPasswordChanged, "55000", _admin_password_changed_case),
    "admin password that does not log in": (InvalidPassword, "28P01", _invalid_password_case),
    "role's objects cannot be moved": (StillInUse, "2BP01", _still_in_use_case),
    "concurrent set-login creation": (Retry, "40001", _retry_case),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_each_error_class_from_a_real_server_error(env, case):
    cls, sqlstate, call = ERROR_CASES[case]
    with pytest.raises(cls) as info:
        call(env)
    err = info.value
    assert type(err) is cls and isinstance(err, DatatableRolesError)
    assert err.sqlstate == sqlstate
    assert err.message and "CONTEXT" not in str(err) and "PL/pgSQL" not in err.message
    assert err.__cause__ is None and err.__suppress_context__  # raised from None
    assert env.admin_password not in str(err)


def test_refusal_carries_rule_and_hint(env):
    env.owner.set_datatable_default_role(WS, DT, None)
    with pytest.raises(Refused) as info:
        env.worker.resolve(env.job(None), DT)
    assert info.value.detail == "refused by rule R5"
    assert info.value.rule == "R5"  # from the error's CONSTRAINT field
    assert info.value.to_dict()["rule"] == "R5"
    assert "Name a role" in info.value.hint
    assert f"{WS}/{DT}" in info.value.message
    with pytest.raises(Refused) as info:
        env.worker.resolve(env.job("alice"), DT, env.us)
    assert info.value.rule == "R1"
    with pytest.raises(PermissionDenied) as info:  # a missing privilege: no rule
        env.worker.create_datatable_role(env.uid + "_nope")
    assert info.value.hint.startswith("Connect as the package owner")


def test_after_a_retry_the_same_resolve_works(env):
    with pytest.raises(Retry):
        _retry_case(env)
    res = env.worker.resolve(env.job("carol"), DT)  # the rival's role is taken back
    with env.worker.connection(res) as conn:
        assert conn.execute(ORDERS).fetchone() == ("1,2,4,5",)


def test_unknown_sqlstate_passes_through_as_the_base_class(env):
    with pytest.raises(DatatableRolesError) as info:
        env.worker.resolve("not-a-uuid", DT)
    assert type(info.value) is DatatableRolesError
    assert info.value.sqlstate == "22P02"


def test_errors_never_carry_a_password():
    raw = psycopg.errors.InsufficientPrivilege(
        "could not connect: host=x password=hunter2-secret user=y; "
        "verifier SCRAM-SHA-256$16:c2FsdA==$c3RvcmVk:c2VydmVy; "
        "url postgresql://u:pa55word@h/db; plain top-secret-value")
    err = map_error(raw, ["top-secret-value"])
    assert isinstance(err, PermissionDenied)
    for secret in ("hunter2-secret", "c3RvcmVk", "pa55word", "top-secret-value"):
        assert secret not in str(err) and secret not in repr(err)
        assert secret not in str(err.to_dict())
    assert redact("password='a b c' next") == "password=[redacted] next"


def test_register_datatable_error_hides_the_admin_password(env, datatable_db):
    dbname, admin, password = datatable_db("dtx")
    with pytest.raises(UnknownObject) as info:
        env.owner.register_datatable(WS, "other", dbname + "_missing", admin, password)
    assert password not in str(info.value)


# ---- connect and pools -------------------------------------------------------------------


def test_connect_sees_the_viewers_rows_and_reuses_the_pooled_connection(env):
    env.owner.set_datatable_default_role(WS, DT, None)
    job = env.job("alice")
    alice = env.worker.resolve(job, DT)
    with env.worker.connect(job, DT) as conn:
        pid, user = backend(conn)
        assert user == env.emea  # a one-role login acts as its role
        assert conn.execute(ORDERS).fetchone() == ("1,4",)
    with env.worker.connect(job, DT) as conn:
        assert backend(conn) == (pid, env.emea)  # same backend: the pool reused it
    with env.worker.connect(env.job("bob"), DT) as conn:
        assert backend(conn)[1] == env.us
        assert conn.execute(ORDERS).fetchone() == ("2,5",)
    with env.worker.connect(env.job("carol"), DT) as conn:
        assert backend(conn)[1].startswith("wm_set_")
        assert conn.execute(ORDERS).fetchone() == ("1,2,4,5",)
    stats = env.worker.pool_stats()
    assert f"{alice.login}@{env.dbname}" in stats and len(stats) == 3


def test_a_returned_connection_is_back_in_its_pool_when_the_block_ends(env):
    """Jobs one after another reuse one connection: the block's end cleans the connection
    and puts it back before returning, so the next checkout finds it (a pool reset run
    later by a pool worker let the next checkout grow the pool instead)."""
    env.owner.set_datatable_default_role(WS, DT, None)
    job = env.job("alice")
    pids = set()
    for _ in range(20):
        with env.worker.connect(job, DT) as conn:
            conn.execute("SET statement_timeout = '7s'")
            pids.add(conn.info.backend_pid)
    assert len(pids) == 1
    login = env.worker.resolve(job, DT).login
    assert env.worker.pool_stats()[f"{login}@{env.dbname}"]["pool_size"] == 1


def test_a_block_that_prepares_statements_gives_its_connection_up(env):
    """The reset forgets server-side prepared statements; psycopg would still name them. So
    pooled connections never auto-prepare, and one whose block turned preparing on is closed
    instead of lent again (the pool replaces it)."""
    env.owner.set_datatable_default_role(WS, DT, None)
    job = env.job("alice")
    with env.worker.connect(job, DT) as conn:
        assert conn.prepare_threshold is None
        pid = conn.info.backend_pid
        conn.prepare_threshold = 0
        assert conn.execute(ORDERS).fetchone() == ("1,4",)  # prepared on the server
    for _ in range(3):
        with env.worker.connect(job, DT) as conn:
            assert conn.info.backend_pid != pid and conn.prepare_threshold is None
            conn.prepare_threshold = 0
            assert conn.execute(ORDERS).fetchone() == ("1,4",)
            pid = conn.info.backend_pid


def test_a_one_role_login_acts_as_its_role_through_the_startup_option(env):
    """R6: connect() passes options='-c role=<role>': current_user is the role (the login
    is the session user), what the session creates belongs to the role, and a pooled
    connection given back (DISCARD ALL) acts as the role again. Without the option the same
    login acts as itself, which holds exactly that role: the same rows."""
    env.owner.set_datatable_default_role(WS, DT, None)
    env.su(env.dbname).execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(
        sql.Identifier(env.emea)))
    job = env.job("alice")
    res = env.worker.resolve(job, DT)
    assert res.kind == "role" and res.login.startswith("wm_set_")
    with env.worker.connect(job, DT) as conn:
        pid = conn.info.backend_pid
        assert conn.execute("SELECT current_user::text, session_user::text").fetchone() == (
            env.emea, res.login)
        conn.execute("CREATE TABLE made_by_alice (x integer)")
        conn.execute("SET ROLE NONE")  # a script may leave its role ...
        assert backend(conn)[1] == res.login
    assert env.table_owner("made_by_alice") == env.emea
    with env.worker.connect(job, DT) as conn:
        # ... and the next checkout of that connection acts as the role again
        assert backend(conn) == (pid, env.emea)
        assert conn.execute(ORDERS).fetchone() == ("1,4",)
    with connect(env.login_conninfo(res.login, res.password)) as plain:
        assert plain.execute("SELECT current_user::text").fetchone() == (res.login,)
        assert plain.execute(ORDERS).fetchone() == ("1,4",)
        plain.execute("CREATE TABLE made_by_the_login (x integer)")
    assert env.table_owner("made_by_the_login") == res.login
    # a set login is connected with no option: it acts as itself
    carol = env.worker.resolve(env.job("carol"), DT)
    with env.worker.connection(carol) as conn:
        assert conn.execute("SELECT current_user::text, session_user::text").fetchone() == (
            carol.login, carol.login)


@pytest.mark.parametrize("viewer", ["alice", "carol"])
def test_connect_retries_once_when_the_password_was_changed_after_the_resolve(
        env, viewer, monkeypatch, caplog):
    """A script changed the login's password (ALTER ROLE ... PASSWORD) between the resolve
    and the connection: the connection is refused (28P01), connect() reports it
    (heal_refused_login, which proves the stored password fails and re-keys the login: the
    package's verifier again), resolves again, logs a warning and connects."""
    env.owner.set_datatable_default_role(WS, DT, None)
    job = env.job(viewer)
    w = env.worker
    real_resolve = w.resolve
    given: list[Resolution] = []

    def resolve_then_break(*args, **kwargs):
        res = real_resolve(*args, **kwargs)
        given.append(res)
        if len(given) == 1:
            break_password(env, res.login)
        return res

    monkeypatch.setattr(w, "resolve", resolve_then_break)
    with caplog.at_level(logging.WARNING, logger="datatable_roles.client"):
        with w.connect(job, DT) as conn:
            assert conn.execute(ORDERS).fetchone() == (
                "1,4" if viewer == "alice" else "1,2,4,5",)
    assert len(given) == 2
    first, second = given
    assert second.login == first.login and second.password != first.password
    warned = [r for r in caplog.records if r.name == "datatable_roles.client"]
    assert [r.levelname for r in warned] == ["WARNING"]
    message = warned[0].getMessage()
    assert first.login in message and "password authentication failed" in message
    assert first.password not in message and second.password not in message
    # healed: the stored verifier is the package's again, and the new password logs in
    (package_verifier,) = env.owner._rows(
        "SELECT verifier FROM datatable_roles.datatable_role_set WHERE login = %s",
        [first.login])[0]
    assert stored_verifier(env, first.login) == package_verifier
    with connect(env.login_conninfo(second.login, second.password)) as conn:
        assert conn.execute("SELECT session_user::text").fetchone() == (second.login,)


def test_connect_retries_only_once(env, monkeypatch):
    """Broken again after the second resolve too: the refusal is raised (InvalidPassword),
    after exactly two resolves."""
    env.owner.set_datatable_default_role(WS, DT, None)
    job = env.job("carol")
    w = env.worker
    real_resolve = w.resolve
    given: list[Resolution] = []

    def resolve_then_break(*args, **kwargs):
        res = real_resolve(*args, **kwargs)
        given.append(res)
        break_password(env, res.login)
        return res

    monkeypatch.setattr(w, "resolve", resolve_then_break)
    with pytest.raises(InvalidPassword) as info:
        with w.connect(job, DT):
            pytest.fail("must not get here")
    assert len(given) == 2
    assert info.value.sqlstate == "28P01"
    assert "password authentication failed" in info.value.message
    assert all(r.password not in str(info.value) for r in given)


def test_a_changed_admin_password_is_refused_until_the_package_is_given_it(env):
    job = env.job("dave")  # default admin: R2
    new_password = secrets.token_urlsafe(18)
    with env.cluster.connect_super() as su:
        su.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(env.admin_login), sql.Literal(scram_sha256_verifier(new_password))))
    with pytest.raises(AdminPasswordChanged) as info:
        with env.worker.connect(job, DT):
            pytest.fail("must not get here")
    err = info.value
    assert isinstance(err, WrongState) and err.sqlstate == "55000"
    assert err.login == env.admin_login and env.admin_login in err.message
    assert "set_datatable_admin_password" in err.hint
    assert err.to_dict()["login"] == env.admin_login
    assert env.worker.pool_stats() == {}
    (main,) = [d for d in env.owner.status_report()["datatables"] if d.get("name") == DT]
    assert main["admin_password_ok"] is False
    with pytest.raises(InvalidPassword):  # tried as a login first
        env.owner.set_datatable_admin_password(WS, DT, env.admin_password)
    env.owner.set_datatable_admin_password(WS, DT, new_password)
    res = env.worker.resolve(job, DT)
    assert (res.login, res.password) == (env.admin_login, new_password)
    with env.worker.connect(job, DT) as conn:
        assert backend(conn)[1] == env.admin_login
        assert conn.execute(ORDERS).fetchone() == ("1,2,3,4,5",)
    (main,) = [d for d in env.owner.status_report()["datatables"] if d.get("name") == DT]
    assert main["admin_password_ok"] is True


def test_connect_under_default_admin_is_the_admin_login(env):
    with env.worker.connect(env.job("dave"), DT) as conn:
        assert backend(conn)[1] == env.admin_login
        assert conn.execute(ORDERS).fetchone() == ("1,2,3,4,5",)


def test_a_rekeyed_login_gets_a_new_pool(env):
    env.owner.set_datatable_default_role(WS, DT, None)
    with env.worker.connect(env.job("carol"), DT) as conn:
        pid, login = backend(conn)
    old_password = env.worker._pools[(login, env.dbname)][0]
    assert env.owner.retire(env.emea) == 1  # NOLOGIN, sessions ended, row emptied
    res = env.worker.resolve(env.job("carol"), DT)  # taken back with a new password
    assert res.login == login and res.password != old_password
    with env.worker.connection(res) as conn:
        new_pid, user = backend(conn)
        assert user == login and new_pid != pid
        assert conn.execute(ORDERS).fetchone() == ("1,2,4,5",)
    assert env.worker._pools[(login, env.dbname)][0] == res.password
    # a one-role login re-keyed by disable/enable
    with env.worker.connect(env.job("alice"), DT) as conn:
        pid = backend(conn)[0]
    env.owner.set_datatable_role_enabled(env.emea, False)
    with pytest.raises(Refused):
        env.worker.resolve(env.job("alice"), DT)
    env.owner.set_datatable_role_enabled(env.emea, True)
    with env.worker.connect(env.job("alice"), DT) as conn:
        assert backend(conn)[0] != pid
        assert conn.execute(ORDERS).fetchone() == ("1,4",)


def test_a_returned_connection_forgets_set_role(env):
    env.owner.set_datatable_default_role(WS, DT, None)
    job = env.job("carol")
    with env.worker.connect(job, DT) as conn:
        pid, login = backend(conn)
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(env.us)))
        conn.execute("CREATE TEMP TABLE scratch (x int)")
        assert conn.execute(ORDERS).fetchone() == ("2,5",)
    with env.worker.connect(job, DT) as conn:
        assert backend(conn) == (pid, login)
        assert conn.execute(ORDERS).fetchone() == ("1,2,4,5",)
        assert conn.execute("SELECT to_regclass('pg_temp.scratch')").fetchone() == (None,)


def test_connect_rolls_back_on_error_and_commits_otherwise(env):
    env.owner.set_datatable_default_role(WS, DT, None)
    job = env.job("alice")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        with env.worker.connect(job, DT) as conn:
            conn.execute("DELETE FROM orders")
    with env.worker.connect(job, DT) as conn:
        assert conn.execute(ORDERS).fetchone() == ("1,4",)  # usable again


def test_connect_refused_raises_before_any_connection(env):
    env.owner.set_datatable_default_role(WS, DT, None)
    with pytest.raises(Refused):
        with env.worker.connect(env.job("dave"), DT):
            pytest.fail("must not get here")
    assert env.worker.pool_stats() == {}


def test_a_wrong_password_gives_the_server_reason(env):
    res = env.worker.resolve(env.job("alice"), DT)
    wrong = Resolution(res.dbname, res.login, "not-the-password", res.roles, res.kind)
    t0 = time.monotonic()
    with pytest.raises(DatatableRolesError) as info:
        with env.worker.connection(wrong):
            pass
    assert time.monotonic() - t0 < env.worker.pool_timeout  # no waiting for the pool
    assert "password authentication failed" in info.value.message
    assert isinstance(info.value, InvalidPassword) and info.value.sqlstate == "28P01"
    assert "not-the-password" not in str(info.value)


# ---- the other calls ---------------------------------------------------------------------


def test_every_call_round_trips(env):
    o, w = env.owner, env.worker
    o.add_workspace(WS)  # idempotent
    o.add_workspace_user(WS, "erin", "erin@acme.test", is_admin=True)
    o.add_group_member(WS, "ops", "erin")
    o.remove_group_member(WS, "ops", "erin")
    o.set_folder_access(WS, "reports", "u/erin", "read")
    o.set_folder_access(WS, "reports", "u/erin", "none")
    o.remove_workspace_user(WS, "erin")
    o.validate_role_name("fine-name_1")
    extra = env.new_role("extra")
    o.set_datatable_role_tenants(WS, DT, extra, ["u/dave", "*", "u/dave"])
    assert o.set_datatable_default_role(WS, DT, extra) == []
    o.remove_datatable_role(WS, DT, extra)  # the default becomes none (R11)
    warnings = o.set_datatable_default_role(WS, DT, "admin")
    assert warnings and "admin" in warnings[0]
    o.set_datatable_role_tenants(WS, DT, "admin", ["u/publisher"])
    renamed = extra + "_r"
    o.rename_datatable_role(extra, renamed)
    o.drop_datatable_role(renamed)
    o.set_datatable_admin_password(WS, DT, env.admin_password)
    o.add_workspace("fork")
    ref_id = o.reference_datatable("fork", "main_ref", WS, DT)
    assert isinstance(ref_id, int)

    parent = uuid.uuid4()
    assert w.record_job_start(parent, WS, "u/publisher", "run", "bob@acme.test") \
        == "bob@acme.test"
    child = uuid.uuid4()
    assert w.record_job_start(child, WS, "u/publisher", "job_token",
                              token_job_id=parent) == "bob@acme.test"
    assert w.record_job_start(uuid.uuid4(), WS, "u/publisher", "trigger") is None
    p1 = w.cached_result_path(parent, "f/x", {"a": 1, "b": [1, 2]})
    assert p1 == w.cached_result_path(child, "f/x", {"b": [1, 2], "a": 1})
    assert p1 != w.cached_result_path(env.job("alice"), "f/x", {"a": 1, "b": [1, 2]})

    explained = w.explain(parent, DT, "admin")
    assert explained["roles"] == ["admin"] and explained["login"] == env.admin_login
    assert "password" not in str(explained)
    res = w.resolve(parent, DT, for_migration=True)
    assert res.roles == ("admin",)

    o.set_datatable_default_role(WS, DT, None)
    w.resolve(env.job("carol"), DT)
    assert o.retire(env.us) == 1
    report = o.sweep()
    assert set(report) == {"examined", "dropped", "skipped", "unfinished", "rotated", "healed",
                           "forgotten_user_keys", "servers_pending"}
    second = o.sweep("0 seconds")
    assert second["dropped"] >= 1, (report, second, o.status_report()["set_logins"])
    from datetime import timedelta
    assert o.sweep(timedelta(days=30))["examined"] == 0


def test_a_caller_connection_in_transaction_mode(env):
    with psycopg.connect(env.meta.owner_conninfo) as conn:  # not autocommit
        c = Client(conn)
        c.add_workspace("txmode")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with psycopg.connect(env.meta.owner_conninfo) as other:
            assert other.execute("SELECT count(*) FROM datatable_roles.workspace"
                                 " WHERE name = 'txmode'").fetchone() == (1,)
        assert isinstance(c.sweep(), dict)
        assert conn.autocommit is False
        conn.execute("SELECT 1")  # the caller opens a transaction: sweep refuses
        with pytest.raises(DatatableRolesError, match="idle"):
            c.sweep()
        conn.rollback()
        c.close()
        assert not conn.closed  # a caller's connection is never closed by the client


def test_client_from_env_conninfo_and_migrate_reexport(env, monkeypatch):
    assert client_module.migrate(env.meta.owner_conninfo) == []
    monkeypatch.setenv("PGDATABASE", env.meta.name)
    monkeypatch.setenv("PGUSER", env.cluster.owner)
    monkeypatch.setenv("PGPASSWORD", env.cluster.owner_password)
    with Client() as c:  # "" = libpq's PG* variables
        c.validate_role_name("ok")
        assert c.host == str(env.cluster.host)
