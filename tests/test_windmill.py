"""The Windmill adapter (docs/integration.md) on Windmill's real table shapes
(tests/windmill/windmill_schema.sql: its tables, indexes and row-level security), installed
the documented way: sql/windmill-grants.sql as the superuser, then
``migrate --directory windmill`` as the package owner.

Every viewer here reads rows of the RLS ``orders`` table as the login resolved for them. The
resolution model of section 4 also runs over this adapter (test_resolve_model.py, param
``windmill``). Each point of issue 12's "What broke" has its test below.
"""

from __future__ import annotations

import uuid

import pytest
from psycopg import errors

from datatable_roles.migrate import SQL_DIR, migrate
from support import DT, WS, connect, job_session, sql_exec, windmill_meta_db

# alice (group emea), bob (us), carol (instance group emea, not a workspace group), dave (no
# group), publisher (the app identity); roles emea, us (tenants g/emea, g/us) and rep
# (tenant f/reports); no default role.
USERS = {"alice": ["emea"], "bob": ["us"], "carol": [], "dave": [], "publisher": []}


@pytest.fixture
def wm(scratch, make_world):
    meta, directory = windmill_meta_db(scratch)
    w = make_world(meta=meta, directory=directory, users=USERS, default=None,
                   tenants={"emea": ["g/emea"], "us": ["g/us"], "rep": ["f/reports"]},
                   orders={"emea": "emea", "us": "us"})
    directory.conn.execute("INSERT INTO instance_group (name) VALUES ('emea')")
    directory.conn.execute("INSERT INTO email_to_igroup (email, igroup) VALUES (%s, 'emea')",
                           [w.email("carol")])
    return w


def order_ids(w, job) -> list[int]:
    r = w.resolve(job)
    with job_session(w, r) as s:
        return [i for (i,) in s.execute("SELECT id FROM orders ORDER BY id")]


def refused(w, job) -> str:
    with pytest.raises(errors.InsufficientPrivilege) as e:
        w.resolve(job)
    return e.value.diag.message_detail or ""


def _record(w, email: str | None) -> uuid.UUID:
    """A job of the publisher whose viewer is this email (recorded as given, any case)."""
    job = uuid.uuid4()
    w.call("SELECT record_job_start(%s, %s, 'u/publisher', 'app', %s::text)", [job, WS, email])
    return job


# ---- install -----------------------------------------------------------------------------

def test_install_refuses_loudly_until_the_owner_can_read_every_row(scratch, cluster):
    meta, _ = windmill_meta_db(scratch, grants=False, install=False)
    with pytest.raises(errors.InsufficientPrivilege) as e:
        migrate(meta.owner_conninfo, directory="windmill")
    assert "may not read public.usr" in str(e.value)
    assert "windmill-grants.sql" in (e.value.diag.message_hint or "")

    # SELECT alone: Windmill's row-level security (TO windmill_user) would show the owner no
    # folder and no membership, and the lower(email) index is missing: refused, by name.
    sql_exec(meta.super_conninfo,
             f'GRANT SELECT ON workspace, usr, usr_to_group, email_to_igroup, folder'
             f' TO "{cluster.owner}"')
    with connect(meta.owner_conninfo) as owner:
        sql_exec(meta.super_conninfo, "INSERT INTO workspace (id, name, owner)"
                 " VALUES ('w1', 'w1', 'x')", "INSERT INTO folder (workspace_id, name,"
                 " display_name, owners) VALUES ('w1', 'f', 'f', '{u/a}')")
        assert owner.execute("SELECT count(*) FROM public.folder").fetchone()[0] == 0
    with pytest.raises(errors.InsufficientPrivilege) as e:
        migrate(meta.owner_conninfo, directory="windmill")
    message = str(e.value)
    assert "row-level security on public.folder" in message
    assert "row-level security on public.usr_to_group" in message
    assert "index usr (workspace_id, lower(email)) is missing" in message
    with connect(meta.owner_conninfo) as owner:
        assert owner.execute("SELECT directory FROM datatable_roles.settings").fetchone() == (
            "builtin",)

    cluster.psql_file(SQL_DIR / "windmill-grants.sql", meta.name, owner=cluster.owner)
    migrate(meta.owner_conninfo, directory="windmill")
    with connect(meta.owner_conninfo) as owner:
        assert owner.execute("SELECT directory FROM datatable_roles.settings").fetchone() == (
            "windmill",)
        assert owner.execute("SELECT count(*) FROM public.folder").fetchone()[0] == 1
        # A later migrate re-checks: a policy dropped since is named, not read around.
        sql_exec(meta.super_conninfo, "DROP POLICY datatable_roles_read ON folder")
        with pytest.raises(errors.InsufficientPrivilege, match="public.folder"):
            migrate(meta.owner_conninfo)


def test_directory_calls_refuse_when_the_platform_is_the_directory(wm):
    with pytest.raises(errors.ObjectNotInPrerequisiteState, match="windmill adapter"):
        wm.call("SELECT add_workspace_user(%s, 'zed', 'zed@acme.test')", [WS])
    with pytest.raises(errors.ObjectNotInPrerequisiteState):
        wm.call("SELECT sync_workspace_directory(%s, %s)",
                [WS, '{"users": [], "groups": {}, "folders": {}}'])
    assert wm.call("SELECT count(*) FROM datatable_roles.workspace_user")[0][0] == 0


# ---- who is who ----------------------------------------------------------------------------

def test_each_viewer_reads_their_own_rows_through_windmill_groups(wm):
    assert order_ids(wm, _record(wm, wm.email("alice"))) == [1, 4]
    assert order_ids(wm, _record(wm, wm.email("bob"))) == [2, 5]
    assert "R5" in refused(wm, _record(wm, wm.email("dave")))


def test_instance_groups_count_as_groups(wm):
    assert order_ids(wm, _record(wm, wm.email("carol"))) == [1, 4]


def test_emails_match_in_any_case(wm):
    assert order_ids(wm, _record(wm, wm.email("alice").upper())) == [1, 4]


def test_an_email_two_users_share_names_no_one(wm):
    d = wm.directory
    d.add_user(WS, "erin", "erin@acme.test", groups=["emea"])
    d.add_user(WS, "erin2", "ERIN@acme.test", groups=["emea"])
    job = _record(wm, "erin@acme.test")
    assert "R5" in refused(wm, job)
    (plan,) = wm.call("SELECT explain_datatable_role(%s, %s)", [job, DT])[0]
    assert [s for s in plan["steps"] if s["step"] == "viewer"][0]["member"] is False
    # Once one of them is disabled, the email names the other.
    d.conn.execute("UPDATE usr SET disabled = true WHERE username = 'erin2'")
    assert order_ids(wm, job) == [1, 4]


def test_folder_owners_and_extra_perms_read_and_write_all_reach_the_folder(wm):
    d = wm.directory
    for user in ("olga", "wendy", "rita", "gina"):
        d.add_user(WS, user, f"{user}@acme.test", groups=["readers"] if user == "gina" else [])
    d.set_folder_access(WS, "reports", "u/olga", "owner")
    d.set_folder_access(WS, "reports", "u/wendy", "write")
    d.set_folder_access(WS, "reports", "u/rita", "read")
    d.set_folder_access(WS, "reports", "g/readers", "read")
    for user in ("olga", "wendy", "rita", "gina"):
        assert wm.resolve(_record(wm, f"{user}@acme.test")).roles == [wm.rep], user
    assert "R5" in refused(wm, _record(wm, wm.email("dave")))


def test_a_disabled_user_is_no_one(wm):
    wm.directory.conn.execute("UPDATE usr SET disabled = true WHERE username = 'alice'")
    assert "R5" in refused(wm, _record(wm, wm.email("alice")))
    with pytest.raises(errors.NoDataFound, match="not a member"):
        wm.call("SELECT record_job_start(gen_random_uuid(), %s, 'u/alice', 'schedule')", [WS])


def test_a_deleted_workspace_has_no_members_and_starts_no_job(wm):
    job = _record(wm, wm.email("alice"))
    wm.directory.conn.execute("UPDATE workspace SET deleted = true WHERE id = %s", [WS])
    assert "R5" in refused(wm, job)
    with pytest.raises(errors.NoDataFound, match="workspace"):
        _record(wm, wm.email("alice"))


def test_an_instance_superadmin_outside_usr_is_no_one(wm):
    wm.directory.conn.execute("INSERT INTO password (email, login_type, super_admin)"
                              " VALUES ('root@acme.test', 'password', true)")
    assert "R5" in refused(wm, _record(wm, "root@acme.test"))


def test_a_unicode_username_is_a_job_identity_and_a_tenant_key(wm):
    wm.directory.add_user(WS, "josé", "jose@acme.test")
    wm.set_tenants(DT, wm.emea, ["g/emea", "u/josé"])
    assert order_ids(wm, _record(wm, "jose@acme.test")) == [1, 4]
    wm.call("SELECT record_job_start(gen_random_uuid(), %s, 'u/josé', 'schedule')", [WS])


def test_a_reused_username_never_inherits_tenant_keys(wm):
    d = wm.directory
    d.add_user(WS, "nick", "nick@acme.test", created_at="2026-01-01")
    wm.set_tenants(DT, wm.us, ["g/us", "u/nick"])
    assert order_ids(wm, _record(wm, "nick@acme.test")) == [2, 5]
    # Windmill deletes nick; later someone else gets the username (no hook was called).
    d.conn.execute("DELETE FROM usr_to_group WHERE usr = 'nick'")
    d.conn.execute("DELETE FROM usr WHERE username = 'nick'")
    d.add_user(WS, "nick", "nicole@acme.test", created_at="2026-06-01")
    assert "R5" in refused(wm, _record(wm, "nicole@acme.test"))
    # The reconciliation (run by every sweep, and on demand) forgets the old key.
    (report,) = wm.call("SELECT reconcile_directory()")[0]
    assert report["forgotten"] == [f"{WS}/nick"]
    assert wm.call("SELECT tenants FROM datatable_roles.datatable_role AS m"
                   " JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id"
                   " WHERE r.name = %s", [wm.us])[0][0] == ["g/us"]
    # Named again on purpose, u/nick names the new person.
    wm.set_tenants(DT, wm.us, ["g/us", "u/nick"])
    assert order_ids(wm, _record(wm, "nicole@acme.test")) == [2, 5]


def test_the_platform_hook_forgets_a_deleted_user_at_once(wm):
    wm.set_tenants(DT, wm.us, ["g/us", "u/dave"])
    assert wm.call("SELECT forget_workspace_user(%s, 'dave')", [WS])[0][0] == 1
    assert "R5" in refused(wm, _record(wm, wm.email("dave")))


def test_the_sweep_reconciles_the_directory(wm):
    wm.set_tenants(DT, wm.us, ["g/us", "u/dave"])
    wm.directory.conn.execute("DELETE FROM usr_to_group WHERE usr = 'dave'")
    wm.directory.conn.execute("DELETE FROM usr WHERE username = 'dave'")
    assert wm.sweep()["forgotten_user_keys"] == [f"{WS}/dave"]


# ---- indexes -------------------------------------------------------------------------------

@pytest.mark.parametrize("call, index", [
    ("SELECT * FROM datatable_roles.directory_member_by_email(%s, 'Alice@acme.test')",
     "usr_workspace_lower_email_idx"),
    ("SELECT * FROM datatable_roles.directory_folders(%s, 'alice', '{emea,all}')",
     "folder_owners"),
    ("SELECT * FROM datatable_roles.directory_folders(%s, 'alice', '{emea,all}')",
     "folder_extra_perms"),
])
def test_the_adapter_finds_members_and_folders_by_index(wm, call, index):
    """The adapter's queries can use the indexes it requires (the issue: through a view, the
    GIN indexes could not be): with 3,000 users and 3,000 folders, and sequential scans
    priced out, the plan names each index."""
    su = wm.directory.conn
    su.execute("INSERT INTO usr (workspace_id, username, email)"
               " SELECT %s, 'x' || i, 'x' || i || '@acme.test'"
               " FROM generate_series(1, 3000) AS i", [WS])
    su.execute("INSERT INTO folder (workspace_id, name, display_name, owners, extra_perms)"
               " SELECT %s, 'f' || i, 'f', ARRAY['u/x' || i], jsonb_build_object('g/g' || i, false)"
               " FROM generate_series(1, 3000) AS i", [WS])
    su.execute("ANALYZE usr, folder")
    with connect(wm.meta.owner_conninfo) as owner:
        owner.execute("SET enable_seqscan = off")
        plan = "\n".join(r for (r,) in owner.execute("EXPLAIN " + call, [WS]))
    assert index in plan, plan


def test_windmill_world_is_really_under_rls(wm):
    """The fixture is Windmill's: as windmill_user for a user with no folder, RLS hides the
    folder the package owner reads."""
    wm.directory.set_folder_access(WS, "reports", "u/alice", "owner")
    with connect(wm.meta.super_conninfo) as su:
        su.execute("SET ROLE windmill_user")
        su.execute("SELECT set_config('session.user', 'dave', false),"
                   " set_config('session.pgroups', 'g/none', false)")
        assert su.execute("SELECT count(*) FROM folder").fetchone()[0] == 0
    with connect(wm.meta.owner_conninfo) as owner:
        assert owner.execute("SELECT count(*) FROM folder").fetchone()[0] == 1
