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

from support import connect


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


@pytest.fixture
def privileged(cluster, uid):
    """Logins with a password that verifier_is must not answer for, each held by the owner
    WITH ADMIN OPTION (so that only what they reach stands in the way), and a plain one."""
    su = superuser_name(cluster)
    made = {
        "member_of_superuser": (f"{uid}_msu", "", [su]),
        "indirect_member_of_superuser": (f"{uid}_msu2", "", [f"{uid}_msu"]),
        "replication": (f"{uid}_repl", "REPLICATION", []),
        "bypassrls": (f"{uid}_byp", "BYPASSRLS", []),
        "createrole": (f"{uid}_crr", "CREATEROLE", []),
        "createdb": (f"{uid}_cdb", "CREATEDB", []),
        "member_of_predefined": (f"{uid}_mpd", "", ["pg_read_all_data"]),
        "member_of_a_createrole_role": (f"{uid}_mcr", "", [f"{uid}_crr"]),
        "plain": (f"{uid}_plain", "", []),
    }
    with cluster.connect_super() as conn:
        for role, attrs, member_of in made.values():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN " + attrs + " PASSWORD 'x-secret-1'")
                         .format(sql.Identifier(role)))
            for group in member_of:
                conn.execute(sql.SQL("GRANT {} TO {}").format(
                    sql.Identifier(group), sql.Identifier(role)))
            conn.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION").format(
                sql.Identifier(role), sql.Identifier(cluster.owner)))
    return {k: v[0] for k, v in made.items()}


def superuser_name(cluster) -> str:
    with cluster.connect_super() as conn:
        return conn.execute("SELECT rolname FROM pg_roles WHERE oid = 10").fetchone()[0]


def test_verifier_is_answers_nothing_about_a_role_that_reaches_privilege(
        cluster, meta_db, privileged):
    """The owner asks the guard about a login that is a member (even indirectly) of a
    superuser, of a predefined role or of a CREATEROLE role, or has REPLICATION,
    BYPASSRLS, CREATEROLE or CREATEDB, giving its right verifier: no answer (NULL), so it
    cannot guess their passwords. A plain login the owner holds is answered."""
    with connect(meta_db.owner_conninfo) as conn:
        for kind, role in privileged.items():
            verifier = stored_verifier(cluster, role)
            (answer,) = conn.execute("SELECT datatable_roles_guard.verifier_is(%s, %s)",
                                     [role, verifier]).fetchone()
            (wrapped,) = conn.execute("SELECT datatable_roles.verifier_is(%s, %s)",
                                      [role, verifier]).fetchone()
            if kind == "plain":
                assert (answer, wrapped) == (True, True)
                assert conn.execute("SELECT datatable_roles_guard.verifier_is(%s, 'no')",
                                    [role]).fetchone()[0] is False
            else:
                assert (kind, answer, wrapped) == (kind, None, False)


def test_verifier_is_answers_nothing_about_roles_the_package_did_not_make(
        cluster, meta_db, uid):
    """The worker role, a login the superuser made, and another instance's owner
    (CREATEROLE) and worker: no answer with their right verifiers, on every version."""
    other_owner, other_worker, foreign = f"{uid}_owner2", f"{uid}_worker2", f"{uid}_foreign"
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE PASSWORD 'x-secret-2'").format(
            sql.Identifier(other_owner)))
        for role in (other_worker, foreign):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'x-secret-3'").format(
                sql.Identifier(role)))
    with connect(meta_db.owner_conninfo) as conn:
        for role in (cluster.worker, other_owner, other_worker, foreign, cluster.owner):
            (answer,) = conn.execute("SELECT datatable_roles_guard.verifier_is(%s, %s)",
                                     [role, stored_verifier(cluster, role)]).fetchone()
            assert (role, answer) == (role, None)


def test_verifier_is_still_answers_for_the_link_login(cluster, meta_db):
    """The link login, which the owner made: answered (its rotation depends on it)."""
    with connect(meta_db.owner_conninfo) as conn:
        (link,) = conn.execute("SELECT datatable_roles.link_login()").fetchone()
        (answer,) = conn.execute("SELECT datatable_roles_guard.verifier_is(%s, %s)",
                                 [link, stored_verifier(cluster, link)]).fetchone()
    assert answer is True


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
