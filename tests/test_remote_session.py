"""The one way the package opens a session in another database (sql/functions/remote/
03_session.sql, and link_session_open in 05_link_login.sql): session_open, session_exec,
session_close, and exec_in_database on top of them (issue 23).

A session opens as the login it names (current_user there is that login), a failed open
raises dblink's 08001 with libpq's reason and never the password, every session is closed
after use (no dblink connection name is left in the caller's session), and what one
exec_in_database runs commits there all or nothing.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors

NAME = "dtr_test_session"


@pytest.fixture
def world(make_world):
    return make_world(users={"alice": []})


def open_names(conn: psycopg.Connection) -> list[str]:
    (names,) = conn.execute("SELECT datatable_roles_dblink.dblink_get_connections()").fetchone()
    return names or []


def remote_user(conn: psycopg.Connection) -> str:
    return conn.execute("SELECT u FROM datatable_roles_dblink.dblink(%s, 'SELECT current_user')"
                        " AS v (u text)", [NAME]).fetchone()[0]


def test_opens_as_the_link_login_and_closes(world):
    conn = world.owner_session()
    (link,) = conn.execute("SELECT datatable_roles.link_login()").fetchone()
    (name,) = conn.execute("SELECT datatable_roles.link_session_open(%s, %s)",
                           [NAME, world.dbname]).fetchone()
    assert name == NAME
    assert remote_user(conn) == link
    # Opening the same name again closes the leftover first (no "duplicate connection name").
    conn.execute("SELECT datatable_roles.link_session_open(%s, %s)", [NAME, world.dbname])
    assert open_names(conn) == [NAME]
    conn.execute("SELECT datatable_roles.session_close(%s)", [NAME])
    assert open_names(conn) == []
    conn.execute("SELECT datatable_roles.session_close(%s)", [NAME])   # a no-op when closed


def test_opens_as_the_admin_login_with_options(world):
    conn = world.owner_session()
    conn.execute("SELECT datatable_roles.session_open(%s, %s, %s, %s, %s)",
                 [NAME, world.dbname, world.admin_login, world.admin_password,
                  "-c statement_timeout=4321"])
    try:
        assert remote_user(conn) == world.admin_login
        (timeout,) = conn.execute(
            "SELECT t FROM datatable_roles_dblink.dblink(%s, 'SHOW statement_timeout')"
            " AS v (t text)", [NAME]).fetchone()
        assert timeout == "4321ms"
    finally:
        conn.execute("SELECT datatable_roles.session_close(%s)", [NAME])
    assert open_names(conn) == []


def test_a_failed_open_raises_08001_without_the_password(world):
    conn = world.owner_session()
    wrong = "not-the-password-" + world.admin_password[:8]
    with pytest.raises(errors.SqlclientUnableToEstablishSqlconnection) as caught:
        conn.execute("SELECT datatable_roles.session_open(%s, %s, %s, %s)",
                     [NAME, world.dbname, world.admin_login, wrong])
    diag = caught.value.diag
    said = " ".join(str(x) for x in (diag.message_primary, diag.message_detail,
                                      diag.message_hint, diag.context) if x)
    assert wrong not in said and world.admin_password not in said
    assert open_names(conn) == []
    (why,) = conn.execute("SELECT datatable_roles.login_fails(%s, %s, %s)",
                          [world.dbname, world.admin_login, wrong]).fetchone()
    assert why and wrong not in why
    assert conn.execute("SELECT datatable_roles.login_fails(%s, %s, %s)",
                        [world.dbname, world.admin_login, world.admin_password]
                        ).fetchone() == (None,)
    assert open_names(conn) == []


def test_exec_in_database_commits_all_or_nothing_and_closes(world, uid):
    conn = world.owner_session()
    su = world.su(world.dbname)
    schema = uid + "_kept"
    # The statements run as the link login (a member of the admin login, which owns the
    # database), in one implicit transaction of their own.
    with pytest.raises(errors.DuplicateSchema):
        conn.execute("SELECT datatable_roles.exec_in_database(%s, %s)",
                     [world.dbname, f"CREATE SCHEMA {schema}; CREATE SCHEMA {schema}"])
    assert open_names(conn) == []
    assert su.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s",
                      [schema]).fetchone() == (0,)
    conn.execute("SELECT datatable_roles.exec_in_database(%s, %s)",
                 [world.dbname, f"CREATE SCHEMA {schema}"])
    assert open_names(conn) == []
    assert su.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s",
                      [schema]).fetchone() == (1,)


def test_session_exec_closes_the_session_on_error(world):
    conn = world.owner_session()
    conn.execute("SELECT datatable_roles.session_open(%s, %s, %s, %s)",
                 [NAME, world.dbname, world.admin_login, world.admin_password])
    conn.execute("SELECT datatable_roles.session_exec(%s, 'SET search_path = pg_catalog')",
                 [NAME])
    assert open_names(conn) == [NAME]
    with pytest.raises(errors.UndefinedTable):
        conn.execute("SELECT datatable_roles.session_exec(%s, 'SELECT FROM no_such_table')",
                     [NAME])
    assert open_names(conn) == []


def test_a_script_not_stored_is_a_clear_55000(world):
    """The scripts run elsewhere come from datatable_roles.remote_script (the post-apply hook
    stores sql/functions/remote/scripts/*.sql): without its row, the quarantine and the
    grants editor's read say to run migrate instead of running nothing."""
    conn = world.owner_session()
    (body,) = conn.execute("SELECT datatable_roles.remote_script_body('quarantine')").fetchone()
    assert "DO" in body and "quarantine_victim" in body
    conn.execute("BEGIN")
    conn.execute("DELETE FROM datatable_roles.remote_script WHERE name = 'quarantine'")
    with pytest.raises(errors.ObjectNotInPrerequisiteState) as e:
        conn.execute("SELECT datatable_roles.quarantine_statements('a', 'b')")
    assert "'quarantine' is not installed" in str(e.value)
    assert "migrate" in e.value.diag.message_hint
    conn.execute("ROLLBACK")
