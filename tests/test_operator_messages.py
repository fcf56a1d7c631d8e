"""What an operator is told (issue 13): a refusal names what is wrong, and what a call changed
beyond its own tables is said in a NOTICE."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg import errors, sql

from support import DT, WS, connect


def notices_of(conn: psycopg.Connection) -> list[str]:
    """The primary messages of the notices this session gets from now on (a Diagnostic is
    valid only inside the handler)."""
    seen: list[str] = []
    conn.add_notice_handler(lambda diag: seen.append(diag.message_primary))
    return seen


@pytest.mark.parametrize("attribute", ["CREATEDB", "CREATEROLE", "BYPASSRLS"])
def test_a_non_plain_admin_login_is_refused_by_name_of_its_attribute(make_world, scratch, attribute):
    w = make_world(users={}, datatables=0)
    db = scratch.datatable_db()
    w.su("postgres").execute(sql.SQL("ALTER ROLE {} " + attribute).format(
        sql.Identifier(db.admin_login)))
    with pytest.raises(errors.InsufficientPrivilege, match=f"it has {attribute}"):
        w.call("SELECT register_datatable(%s, 'x', %s, %s, %s)", [WS, *db])


def test_register_says_that_it_revoked_connect_from_public_and_it_did(make_world, scratch, uid):
    w = make_world(users={}, datatables=0)
    db = scratch.datatable_db()
    bystander = f"{uid}_bystander"
    w.su("postgres").execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'pw-bystander'").format(
        sql.Identifier(bystander)))
    w.su(db.dbname).execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO PUBLIC").format(
        sql.Identifier(db.dbname)))
    with connect(w.login_conninfo(bystander, "pw-bystander", db.dbname)):
        pass  # connects through PUBLIC's CONNECT
    owner = w.connect_owner()
    seen = notices_of(owner)
    owner.execute("SELECT register_datatable(%s, 'x', %s, %s, %s)", [WS, *db])
    owner.close()
    assert any("REVOKE CONNECT ON DATABASE" in n and "can no longer connect" in n
               for n in seen), seen
    with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
        connect(w.login_conninfo(bystander, "pw-bystander", db.dbname))


def test_a_viewer_email_of_no_member_is_recorded_with_a_notice(make_world):
    w = make_world(users={"publisher": [], "alice": []})
    owner = w.connect_owner()
    seen = notices_of(owner)
    owner.execute("SELECT record_job_start(%s, %s, 'u/publisher', 'run', 'nobody@else.org')",
                  [uuid.uuid4(), WS])
    owner.execute("SELECT record_job_start(%s, %s, 'u/publisher', 'run', %s)",
                  [uuid.uuid4(), WS, w.email("alice").upper()])
    owner.close()
    assert seen == [
        f"the viewer 'nobody@else.org' is not a member of workspace '{WS}':"
        " viewer roles of its data tables will not apply"]


def test_a_mistyped_role_gets_a_did_you_mean(make_world):
    w = make_world(users={"publisher": []}, admins=["publisher"], tenants={"sales_emea": ["*"]},
                   jobs=[None])
    mistyped = w.sales_emea[:-2] + "ae"
    with w.connect_worker() as worker:
        with pytest.raises(errors.InsufficientPrivilege) as e:
            worker.execute("SELECT * FROM resolve_datatable_role(%s, %s, %s)",
                           [w.jobs[None], DT, mistyped])
    assert e.value.diag.message_hint.startswith(f"Did you mean '{w.sales_emea}'?")
    with pytest.raises(errors.NoDataFound) as e:
        w.call("SELECT set_datatable_role_enabled(%s, false)", [mistyped])
    assert e.value.diag.message_hint.startswith(f"Did you mean '{w.sales_emea}'?")


def test_grant_calls_refuses_an_unknown_kind_and_grants_nothing(make_world, uid):
    w = make_world(users={})
    role = f"{uid}_platform"
    w.su("postgres").execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
    with pytest.raises(errors.InvalidParameterValue, match="invalid kind of calls"):
        w.call("SELECT datatable_roles.grant_calls(%s, 'admin')", [role])
    assert w.call("SELECT count(*) FROM datatable_roles.worker_role WHERE name = %s",
                  [role]) == [(0,)]


def test_a_role_near_no_other_gets_no_empty_did_you_mean(make_world):
    """No name near the one given: the hint says only what fixes it, never "Did you mean ?"."""
    w = make_world(users={"publisher": []}, admins=["publisher"], tenants={"sales_emea": ["*"]},
                   jobs=[None])
    far = "qqqqqqqqqqqqqqqqqqqqqqqq"
    with w.connect_worker() as worker:
        with pytest.raises(errors.InsufficientPrivilege) as e:
            worker.execute("SELECT * FROM resolve_datatable_role(%s, %s, %s)",
                           [w.jobs[None], DT, far])
    assert e.value.diag.message_hint == (
        "Name a role of the map, or add the role to the map with set_datatable_role_tenants.")
    with pytest.raises(errors.NoDataFound) as e:
        w.call("SELECT set_datatable_role_enabled(%s, false)", [far])
    assert e.value.diag.message_hint == "Create it with create_datatable_role."
