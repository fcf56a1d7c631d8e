"""A copy of a metadata database made an instance of its own by the package
(datatable_roles.become_own_instance): what devcluster's clone_metadata_database, pgTAP's
begin.psql and the hostile-script tests build on."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from support import connect


def settings(conninfo: str) -> tuple:
    with connect(conninfo) as conn:
        return conn.execute(
            "SELECT s.instance_id, s.login_group, datatable_roles.link_login()"
            " FROM datatable_roles.settings AS s").fetchone()


def test_a_copy_gets_its_own_instance_id_link_login_and_login_group(cluster, meta_db):
    template = settings(cluster.owner_conninfo())
    instance, group, link = settings(meta_db.owner_conninfo)
    assert instance != template[0] and group != template[1] and link != template[2]
    with connect(meta_db.owner_conninfo) as conn:
        assert conn.execute("SELECT datatable_roles.login_group_name(%s)",
                            [instance]).fetchone()[0] == group
        assert group.startswith("dtr_logins_") and link.startswith("dtr_link_")
        (rolinherit, rolcanlogin) = conn.execute(
            "SELECT rolinherit, rolcanlogin FROM pg_roles WHERE rolname = %s",
            [group]).fetchone()
        assert (rolinherit, rolcanlogin) == (False, False)
        # CONNECT taken from PUBLIC, as sql/bootstrap.sql leaves a metadata database
        assert not conn.execute(
            "SELECT has_database_privilege('public', current_database(), 'CONNECT')"
        ).fetchone()[0]


def test_the_login_group_is_named_as_migration_0012_names_it(meta_db):
    with connect(meta_db.owner_conninfo) as conn:
        assert conn.execute(
            "SELECT datatable_roles.login_group_name('0123abcd-4567-89ef-0123-456789abcdef')"
        ).fetchone()[0] == "dtr_logins_0123abcd456789ef0123"


def test_only_the_databases_owner_may_make_it_its_own_instance(cluster, meta_db, scratch, uid):
    other = uid + "_other"
    with cluster.connect_super(meta_db.name) as conn:
        conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(other)))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA datatable_roles TO {}").format(
            sql.Identifier(other)))
        conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION datatable_roles.become_own_instance()"
                             " TO {}").format(sql.Identifier(other)))
        before = settings(meta_db.super_conninfo)
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(other)))
        with pytest.raises(psycopg.errors.InsufficientPrivilege,
                           match="only the owner of database"):
            conn.execute("SELECT datatable_roles.become_own_instance()")
        conn.execute("RESET ROLE")
    assert settings(meta_db.super_conninfo) == before
