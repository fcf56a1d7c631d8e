"""The superuser step's role guard (sql/bootstrap.sql): datatable_roles_guard.create_login,
rekey_login, disable_login and drop_login change, as the superuser, only roles the package
owner holds directly WITH ADMIN OPTION and that carry no attribute only a superuser may give.
They exist so that first use and the sweep do not walk every role the owner made
(PostgreSQL 16+, docs/performance.md); they must give the owner nothing it could not do
itself.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from support import connect, self_hosted_only

pytestmark = self_hosted_only


def version(cluster) -> int:
    with cluster.connect_super() as conn:
        return int(conn.execute("SHOW server_version_num").fetchone()[0])


def exists(cluster, role: str) -> tuple[bool, bool] | None:
    """(exists, can log in) of ``role``."""
    with cluster.connect_super() as conn:
        row = conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = %s",
                           [role]).fetchone()
    return row[0] if row else None


@pytest.fixture
def roles(cluster, meta_db, uid):
    """Roles of every kind the owner might aim the guard at, made for this test."""
    made = {
        "owners": f"{uid}_owners",          # made by the owner: it holds ADMIN OPTION (16+)
        "foreign": f"{uid}_foreign",        # made by the superuser, not granted to the owner
        "bypass": f"{uid}_bypass",          # BYPASSRLS, granted to the owner WITH ADMIN OPTION
        "superuser": f"{uid}_super",        # a superuser, granted likewise
    }
    with connect(meta_db.owner_conninfo) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(made["owners"])))
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(made["foreign"])))
        for key, attr in (("bypass", "BYPASSRLS"), ("superuser", "SUPERUSER")):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN " + attr).format(
                sql.Identifier(made[key])))
            conn.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION").format(
                sql.Identifier(made[key]), sql.Identifier(cluster.owner)))
    yield made
    with cluster.connect_super() as conn:
        for role in made.values():
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.mark.parametrize("call", ["disable_login", "drop_login"])
def test_the_guard_refuses_roles_the_owner_does_not_administer(cluster, meta_db, roles, call):
    """A role the superuser made, one with BYPASSRLS, a superuser, the owner itself and
    the worker role: refused with 42501, and left as they were."""
    targets = [roles["foreign"], roles["bypass"], roles["superuser"], cluster.owner,
               cluster.worker]
    before = {t: exists(cluster, t) for t in targets}
    with connect(meta_db.owner_conninfo) as conn:
        for target in targets:
            with pytest.raises(psycopg.errors.InsufficientPrivilege,
                               match="does not hold role .* with ADMIN OPTION"):
                conn.execute(f"SELECT datatable_roles_guard.{call}(%s)", [target])
    assert {t: exists(cluster, t) for t in targets} == before


def test_the_guard_makes_no_login_in_a_role_the_owner_does_not_administer(
        cluster, meta_db, roles, uid):
    """create_login refuses a membership the owner could not grant itself (a role the
    superuser made, a predefined role), and rekey_login a login it does not administer:
    42501, and nothing made or changed."""
    verifier = "SCRAM-SHA-256$4096:c2FsdA==$a2V5:a2V5"
    group = roles["owners"]
    with connect(meta_db.owner_conninfo) as conn:
        for wanted in ([roles["foreign"]], ["pg_read_all_data"], [group, roles["bypass"]]):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT datatable_roles_guard.create_login(%s, %s, %s, %s)",
                             [f"{uid}_new", verifier, wanted, group])
            assert exists(cluster, f"{uid}_new") is None
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT datatable_roles_guard.rekey_login(%s, %s)",
                         [roles["foreign"], verifier])
    with cluster.connect_super() as conn:
        (stored,) = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                 [roles["foreign"]]).fetchone()
    assert stored is None


@pytest.mark.parametrize("call", ["disable_login", "drop_login", "owner_administers"])
def test_only_the_owner_may_call_the_guard(meta_db, roles, call):
    with connect(meta_db.worker_conninfo) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"SELECT datatable_roles_guard.{call}(%s)", [roles["owners"]])


def test_the_guard_changes_what_the_owner_made_on_16_and_later(cluster, meta_db, roles):
    """On 16+ the owner holds what it made WITH ADMIN OPTION: the guard disables and drops
    it, as the owner could. On 15 the owner holds no such grant (CREATEROLE alone lets it
    change any non-superuser role there), so the guard refuses and the package does not
    use it."""
    role = roles["owners"]
    with connect(meta_db.owner_conninfo) as conn:
        (uses_guard,) = conn.execute("SELECT datatable_roles.guard_changes_roles()").fetchone()
        if version(cluster) < 160000:
            assert uses_guard is False
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT datatable_roles_guard.disable_login(%s)", [role])
            assert exists(cluster, role) is True
            return
        assert uses_guard is True
        conn.execute("SELECT datatable_roles_guard.disable_login(%s)", [role])
        assert exists(cluster, role) is False
        conn.execute("SELECT datatable_roles_guard.drop_login(%s)", [role])
        assert exists(cluster, role) is None


def test_a_hostile_name_is_quoted(cluster, meta_db, uid):
    """A role the owner made under a name built to break out of the statement is dropped
    as that one role (16+; refused on 15), and nothing else happens."""
    name = f'{uid}"; DROP ROLE {cluster.worker}; --'
    with connect(meta_db.owner_conninfo) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        try:
            if version(cluster) < 160000:
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute("SELECT datatable_roles_guard.drop_login(%s)", [name])
                assert exists(cluster, name) is True
            else:
                conn.execute("SELECT datatable_roles_guard.drop_login(%s)", [name])
                assert exists(cluster, name) is None
        finally:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
    assert exists(cluster, cluster.worker) is not None


def stored_verifier(cluster, role: str) -> str:
    with cluster.connect_super() as conn:
        return conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                            [role]).fetchone()[0]


def test_no_guard_function_answers_questions_about_passwords(meta_db):
    """The guard of earlier releases, verifier_is, read pg_authid for the owner; the
    bootstrap drops it, and no function of the guard takes a password or verifier to compare
    (issue 24). create_login and rekey_login take the verifier they set."""
    with connect(meta_db.owner_conninfo) as conn:
        names = [n for (n,) in conn.execute(
            "SELECT p.proname::text FROM pg_proc AS p JOIN pg_namespace AS n"
            " ON n.oid = p.pronamespace WHERE n.nspname = 'datatable_roles_guard'"
            " ORDER BY 1")]
    assert "verifier_is" not in names
    assert set(names) <= {"create_login", "rekey_login", "disable_login", "drop_login",
                          "sessions_of", "owner_administers", "require_administered"}


def test_rekey_leaves_createdb_alone_when_the_owner_lacks_it(cluster, meta_db, uid):
    """A role with CREATEDB that the owner holds WITH ADMIN OPTION: the owner, without
    CREATEDB, could not take it away, so rekey_login refuses (42501) and the role keeps
    CREATEDB and its password."""
    role = f"{uid}_cdb"
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEDB PASSWORD 'x-secret-4'").format(
            sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION").format(
            sql.Identifier(role), sql.Identifier(cluster.owner)))
        assert not conn.execute("SELECT rolcreatedb FROM pg_roles WHERE rolname = %s",
                                [cluster.owner]).fetchone()[0]
    before = stored_verifier(cluster, role)
    with connect(meta_db.owner_conninfo) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT datatable_roles_guard.rekey_login(%s, %s)",
                         [role, "SCRAM-SHA-256$4096:c2FsdA==$a2V5:a2V5"])
    with cluster.connect_super() as conn:
        assert conn.execute("SELECT rolcreatedb FROM pg_roles WHERE rolname = %s",
                            [role]).fetchone()[0]
    assert stored_verifier(cluster, role) == before
