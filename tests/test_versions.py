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

import psycopg
import pytest
from psycopg import sql

from support import LIFECYCLE


def pg16_or_later(cluster) -> bool:
    with cluster.connect_super() as conn:
        return int(conn.execute("SHOW server_version_num").fetchone()[0]) >= 160000


def test_registering_a_data_table_needs_admin_option_on_16(cluster, make_world, scratch):
    w = make_world(**LIFECYCLE)
    dbname = "dtv_" + w.uid
    admin = dbname + "_admin"
    scratch.databases.append(dbname)
    with cluster.connect_super() as su:
        su.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(admin)))
        su.execute(sql.SQL("GRANT {} TO {}").format(  # no ADMIN OPTION
            sql.Identifier(admin), sql.Identifier(cluster.owner)))
        su.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(dbname), sql.Identifier(admin)))
    register = ("SELECT register_datatable(%s, 'versions', %s, %s, 'x')",
                [w.ws, dbname, admin])
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
        "SELECT datatable_roles.set_login_name(array_agg(id)) FROM datatable_roles.catalog_role"
        " WHERE name = ANY(%s)", [[w.a, w.b]])[0]
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
