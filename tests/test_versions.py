"""What differs between PostgreSQL 15 and 16+ (docs/operating.md, "PostgreSQL versions").

From 16 on, a CREATEROLE owner may grant a role only with ADMIN OPTION on it, and may alter
only the roles it holds with ADMIN OPTION (those it made). So on 16+:
- registering a data table needs the owner to hold its admin login WITH ADMIN OPTION, and a
  registration without it is refused with the grant to make;
- a set login made by someone else is not taken back (adopted): the resolve is refused with
  what the operator can do, and works once the operator did it.
On 15 both work as before.
"""

from __future__ import annotations

import secrets

import psycopg
import pytest
from psycopg import sql

from datatable_roles.scram import scram_sha256_verifier
from support import LIFECYCLE


def pg16_or_later(cluster) -> bool:
    with cluster.connect_super() as conn:
        return int(conn.execute("SHOW server_version_num").fetchone()[0]) >= 160000


def test_registering_a_data_table_needs_admin_option_on_16(cluster, make_world, scratch):
    w = make_world(**LIFECYCLE)
    dbname = "dtv_" + w.uid
    admin = dbname + "_admin"
    password = secrets.token_urlsafe(18)  # register_datatable logs in with it
    scratch.databases.append(dbname)
    with cluster.connect_super() as su:
        su.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(admin), sql.Literal(scram_sha256_verifier(password))))
        su.execute(sql.SQL("GRANT {} TO {}").format(  # no ADMIN OPTION
            sql.Identifier(admin), sql.Identifier(cluster.owner)))
        su.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(dbname), sql.Identifier(admin)))
    register = ("SELECT register_datatable(%s, 'versions', %s, %s, %s)",
                [w.ws, dbname, admin, password])
    with psycopg.connect(cluster.owner_conninfo(w.meta.name), autocommit=True) as owner:
        if pg16_or_later(cluster):
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
                owner.execute(*register)
            assert "WITH ADMIN OPTION" in refused.value.diag.message_hint
            with cluster.connect_super() as su:
                su.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION").format(
                    sql.Identifier(admin), sql.Identifier(cluster.owner)))
        owner.execute(*register)
        link_holds_admin = owner.execute(
            "SELECT pg_has_role(datatable_roles.link_login(), %s, 'USAGE')", [admin]).fetchone()
    assert link_holds_admin == (True,)


def test_a_set_login_made_by_someone_else_is_adopted_on_15_and_refused_on_16(cluster,
                                                                              make_world):
    w = make_world(**LIFECYCLE)
    job = w.job("vic")
    (login,) = w.owner._rows(
        "SELECT datatable_roles.set_login_name(%s, array_agg(id))"
        " FROM datatable_roles.catalog_role WHERE name = ANY(%s)", [w.dbname, [w.a, w.b]])[0]
    with cluster.connect_super() as su:
        su.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(login)))
    if pg16_or_later(cluster):
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
            w.resolve(job)
        assert login in str(refused.value)
        assert "WITH ADMIN OPTION" in refused.value.diag.message_hint
        with cluster.connect_super() as su:
            su.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION").format(
                sql.Identifier(login), sql.Identifier(cluster.owner)))
    res = w.resolve(job)
    assert res.login == login
    with psycopg.connect(cluster.conninfo(res.login, res.password, res.dbname)) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (login,)
    # taken back as the package makes its logins: exactly its roles and the login group
    (group,) = w.call("SELECT login_group FROM datatable_roles.settings")[0]
    with cluster.connect_super() as su:
        held = [r for (r,) in su.execute(
            "SELECT g.rolname::text FROM pg_auth_members AS m"
            " JOIN pg_roles AS g ON g.oid = m.roleid JOIN pg_roles AS u ON u.oid = m.member"
            " WHERE u.rolname = %s ORDER BY 1", [login])]
    assert held == sorted([w.a, w.b, group])
