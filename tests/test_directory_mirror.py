"""Mirror mode (settings.directory = 'builtin'): the platform writes the package's own
directory tables through the SQL calls of sql/functions/api/96_directory.sql, and the rules read
them through the seam. Against the real cluster:

- removals are idempotent: removing what is absent returns false and changes nothing, so a
  platform's own transaction that removes something twice still commits;
- sync_workspace_directory brings one workspace to exactly the state given, in one call,
  rejecting bad rows into its report instead of raising;
- a u/ tenant key is bound to the person it named: removing a user forgets their keys in the
  same transaction, and a username given to someone else (with or without the removal call)
  never passes the old person's roles on; reconcile_directory and forget_workspace_user
  clean up after a platform that forgot the hook;
- grant_directory_writer gives a platform role the directory calls and nothing else;
- user, group and folder names take Unicode letters and refuse spaces, controls and bidi.

Admin calls run as the package owner, resolves as the worker role; the directory tables are
read as the owner (who owns them), or written behind the package's back as the superuser.
"""

from __future__ import annotations

import secrets
import time
import uuid

import psycopg
import pytest
from psycopg import errors, sql
from psycopg.types.json import Jsonb

from datatable_roles.scram import scram_sha256_verifier
from support import DT, WS, MetaDB, World, connect

JOSE = "jos\u00e9"
NIHONGO = "\u65e5\u672c\u8a9e"          # 日本語
RLO = chr(8238)                          # U+202E RIGHT-TO-LEFT OVERRIDE

# The world of the u/ key tests: bob is the one tenant of role r on data table main; no
# default role, so a viewer who is nobody's tenant is refused (R4); the publisher starts
# every job.
BOB_WORLD = dict(users={"publisher": [], "bob": []}, tenants={"r": ["u/bob"]}, default=None)
BOB_EMAIL = "bob@acme.test"
NEW_BOB_EMAIL = "bob.new@acme.test"


# ---- reading the directory ------------------------------------------------------------------

DIRECTORY_TABLES = {
    "workspace": "SELECT name FROM datatable_roles.workspace",
    "workspace_user": "SELECT workspace, username, email, is_admin, incarnation"
                      " FROM datatable_roles.workspace_user",
    "group_member": "SELECT workspace, group_name, username FROM datatable_roles.group_member",
    "folder_access": "SELECT workspace, folder, principal, access"
                     " FROM datatable_roles.folder_access",
    "tenant_user": "SELECT workspace, username, incarnation FROM datatable_roles.tenant_user",
}


def directory_rows(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    """Every row of every directory table (incarnations included), sorted."""
    return {table: sorted(conn.execute(q).fetchall()) for table, q in DIRECTORY_TABLES.items()}


def directory_state(conn: psycopg.Connection, ws: str) -> dict:
    """One workspace's tables in the shape sync_workspace_directory takes (users as a dict by
    username, members sorted)."""
    users = {u: {"email": e, "is_admin": a} for u, e, a in conn.execute(
        "SELECT username, email, is_admin FROM datatable_roles.workspace_user"
        " WHERE workspace = %s", [ws])}
    groups: dict[str, list[str]] = {}
    for g, u in conn.execute("SELECT group_name, username FROM datatable_roles.group_member"
                             " WHERE workspace = %s", [ws]):
        groups.setdefault(g, []).append(u)
    folders: dict[str, dict[str, str]] = {}
    for f, p, a in conn.execute("SELECT folder, principal, access"
                                " FROM datatable_roles.folder_access WHERE workspace = %s", [ws]):
        folders.setdefault(f, {})[p] = a
    return {"users": users, "groups": {g: sorted(m) for g, m in groups.items()},
            "folders": folders}


def expected_state(directory: dict) -> dict:
    """What directory_state should read after a clean sync of ``directory``."""
    return {
        "users": {u["username"]: {"email": u["email"], "is_admin": u.get("is_admin", False)}
                  for u in directory["users"]},
        "groups": {g: sorted(m) for g, m in directory["groups"].items() if m},
        "folders": {f: dict(p) for f, p in directory["folders"].items() if p},
    }


def incarnation(conn: psycopg.Connection, ws: str, username: str) -> int | None:
    row = conn.execute("SELECT incarnation FROM datatable_roles.workspace_user"
                       " WHERE workspace = %s AND username = %s", [ws, username]).fetchone()
    return row[0] if row else None


def bound_to(conn: psycopg.Connection, ws: str, username: str) -> str | None:
    """The incarnation u/<username> is bound to (tenant_user), None when unbound."""
    row = conn.execute("SELECT incarnation FROM datatable_roles.tenant_user"
                       " WHERE workspace = %s AND username = %s", [ws, username]).fetchone()
    return row[0] if row else None


def tenants(conn: psycopg.Connection, datatable: str, role: str, ws: str = WS) -> list[str]:
    """The tenant list of ``role`` on ``datatable`` (the admin's when role is 'admin')."""
    if role == "admin":
        q = ("SELECT admin_tenants FROM datatable_roles.datatable"
             " WHERE workspace = %s AND name = %s")
        return conn.execute(q, [ws, datatable]).fetchone()[0]
    return conn.execute(
        "SELECT m.tenants FROM datatable_roles.datatable_role AS m"
        " JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id"
        " JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id"
        " WHERE d.workspace = %s AND d.name = %s AND r.name = %s",
        [ws, datatable, role]).fetchone()[0]


# ---- writing it -----------------------------------------------------------------------------

def sync(conn: psycopg.Connection, ws: str, directory: dict) -> dict:
    return conn.execute("SELECT sync_workspace_directory(%s, %s)",
                        [ws, Jsonb(directory)]).fetchone()[0]


def user(username: str, email: str, is_admin: bool = False) -> dict:
    return {"username": username, "email": email, "is_admin": is_admin}


def bob_world_directory(bob_email: str | None) -> dict:
    """BOB_WORLD's directory as a platform would sync it: the publisher, and bob with this
    email (None: no bob)."""
    users = [user("publisher", "publisher@acme.test")]
    if bob_email is not None:
        users.append(user("bob", bob_email))
    return {"users": users, "groups": {}, "folders": {}}


def counts(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in ("workspace", "rejected")}


def owner_db(meta: MetaDB, ws: str = WS) -> psycopg.Connection:
    """An owner session on a metadata database in which workspace ``ws`` exists."""
    conn = connect(meta.owner_conninfo)
    conn.execute("SELECT add_workspace(%s)", [ws])
    return conn


# ---- resolving for a viewer -----------------------------------------------------------------

def viewer_roles(w: World, viewer_email: str) -> list[str] | None:
    """The roles resolve_datatable_role gives an app job of the publisher watched by
    ``viewer_email`` on data table main (job recorded and resolved as the worker); None when
    the resolve is refused (42501)."""
    job = uuid.uuid4()
    with w.connect_worker() as conn:
        conn.execute("SELECT record_job_start(%s, %s, 'u/publisher', 'app', %s)",
                     [job, w.ws, viewer_email])
        try:
            return conn.execute("SELECT roles FROM resolve_datatable_role(%s, %s)",
                                [job, DT]).fetchone()[0]
        except errors.InsufficientPrivilege as e:
            assert "refused by rule" in (e.diag.message_detail or ""), e
            return None


def reuse_username_behind_the_packages_back(w: World, username: str, email: str) -> None:
    """What a platform that forgot the hook does: the row deleted and inserted again (a new
    incarnation), as the superuser, with no directory call."""
    su = w.su(w.meta.name)
    su.execute("DELETE FROM datatable_roles.workspace_user WHERE workspace = %s"
               " AND username = %s", [w.ws, username])
    su.execute("INSERT INTO datatable_roles.workspace_user (workspace, username, email)"
               " VALUES (%s, %s, %s)", [w.ws, username, email])


# ---- 1. removals are idempotent -------------------------------------------------------------

@pytest.fixture
def small_directory(meta_db) -> psycopg.Connection:
    """An owner session on a metadata database whose workspace acme has alice (group emea,
    folder finance's owner) and bob (no group), emea reading folder reports."""
    conn = owner_db(meta_db)
    sync(conn, WS, {
        "users": [user("alice", "alice@acme.test"), user("bob", "bob@acme.test")],
        "groups": {"emea": ["alice"]},
        "folders": {"finance": {"u/alice": "owner"}, "reports": {"g/emea": "read"}},
    })
    yield conn
    conn.close()


def test_removing_an_absent_membership_or_user_returns_false_and_changes_nothing(
        small_directory):
    conn = small_directory
    before = directory_rows(conn)
    absent = [
        ("SELECT remove_group_member(%s, 'emea', 'bob')", [WS]),      # bob is in no group
        ("SELECT remove_group_member(%s, 'nogroup', 'alice')", [WS]),  # no such group
        ("SELECT remove_group_member(%s, 'emea', 'ghost')", [WS]),     # no such user
        ("SELECT remove_workspace_user(%s, 'ghost')", [WS]),
    ]
    for statement, args in absent:
        assert conn.execute(statement, args).fetchone()[0] is False, statement
        assert conn.execute(statement, args).fetchone()[0] is False, statement + " (again)"
    assert directory_rows(conn) == before
    # an unknown workspace is still an error
    for statement in ("SELECT remove_workspace_user('nows', 'alice')",
                      "SELECT remove_group_member('nows', 'emea', 'alice')"):
        with pytest.raises(errors.NoDataFound):
            conn.execute(statement)
    assert directory_rows(conn) == before


def test_removing_a_present_membership_or_user_returns_true(small_directory):
    conn = small_directory
    assert conn.execute("SELECT remove_group_member(%s, 'emea', 'alice')",
                        [WS]).fetchone()[0] is True
    assert directory_state(conn, WS)["groups"] == {}
    assert conn.execute("SELECT remove_group_member(%s, 'emea', 'alice')",
                        [WS]).fetchone()[0] is False

    conn.execute("SELECT add_group_member(%s, 'emea', 'alice')", [WS])
    assert conn.execute("SELECT remove_workspace_user(%s, 'alice')", [WS]).fetchone()[0] is True
    # alice is gone with her membership and her own folder grant; the group's grant stays
    assert directory_state(conn, WS) == {
        "users": {"bob": {"email": "bob@acme.test", "is_admin": False}},
        "groups": {},
        "folders": {"reports": {"g/emea": "read"}},
    }
    assert conn.execute("SELECT remove_workspace_user(%s, 'alice')", [WS]).fetchone()[0] is False


def test_removing_something_absent_inside_the_platforms_transaction_lets_it_commit(
        small_directory, meta_db):
    before = directory_rows(small_directory)
    with psycopg.connect(meta_db.owner_conninfo) as conn:   # not autocommit: one transaction
        # the platform's own change ...
        conn.execute("SELECT add_workspace_user(%s, 'carol', 'carol@acme.test')", [WS])
        conn.execute("SELECT add_group_member(%s, 'emea', 'carol')", [WS])
        # ... and its removal hooks, for what is not there (removed before, never added)
        assert conn.execute("SELECT remove_group_member(%s, 'emea', 'bob')",
                            [WS]).fetchone()[0] is False
        assert conn.execute("SELECT remove_workspace_user(%s, 'ghost')",
                            [WS]).fetchone()[0] is False
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        conn.commit()
    after = directory_state(small_directory, WS)
    assert after["users"]["carol"] == {"email": "carol@acme.test", "is_admin": False}
    assert after["groups"] == {"emea": ["alice", "carol"]}
    # and nothing else changed: bob and alice as they were
    assert [r for r in directory_rows(small_directory)["workspace_user"] if r[1] != "carol"] \
        == before["workspace_user"]


# ---- 2. sync_workspace_directory ------------------------------------------------------------

FIRST = {
    "users": [user("ann", "ann@x.io", True), user("bob", "bob@x.io"),
              user(JOSE, "jose@x.io"), user("carol", "carol@x.io")],
    "groups": {"emea": ["ann", JOSE], "us": ["bob"], NIHONGO: [JOSE]},
    "folders": {"finance": {"u/ann": "owner", "g/emea": "read"},
                "ops": {"g/us": "write", "u/" + JOSE: "read"}},
}

# carol removed, josé out of emea, emea's grant on finance read -> write, ann and bob swap emails
SECOND = {
    "users": [user("ann", "bob@x.io", True), user("bob", "ann@x.io"), user(JOSE, "jose@x.io")],
    "groups": {"emea": ["ann"], "us": ["bob"], NIHONGO: [JOSE]},
    "folders": {"finance": {"u/ann": "owner", "g/emea": "write"},
                "ops": {"g/us": "write", "u/" + JOSE: "read"}},
}


@pytest.fixture
def owner(meta_db) -> psycopg.Connection:
    """An owner session on a fresh metadata database (no workspace yet)."""
    with connect(meta_db.owner_conninfo) as conn:
        yield conn


def test_sync_from_empty_makes_the_tables_equal_the_state(owner):
    report = sync(owner, WS, FIRST)
    assert report["rejected"] == []
    assert counts(report) == {
        "users": {"added": 4, "updated": 0, "removed": 0},
        "group_members": {"added": 4, "removed": 0},
        "folder_grants": {"added_or_changed": 4, "removed": 0},
    }
    assert directory_state(owner, WS) == expected_state(FIRST)
    # the same state again changes nothing
    before = directory_rows(owner)
    report = sync(owner, WS, FIRST)
    assert counts(report) == {
        "users": {"added": 0, "updated": 0, "removed": 0},
        "group_members": {"added": 0, "removed": 0},
        "folder_grants": {"added_or_changed": 0, "removed": 0},
    }
    assert directory_rows(owner) == before


def test_sync_again_removes_changes_and_swaps_emails_to_equal_the_new_state(owner):
    sync(owner, WS, FIRST)
    kept = {u: incarnation(owner, WS, u) for u in ("ann", "bob", JOSE)}
    report = sync(owner, WS, SECOND)
    assert report["rejected"] == []
    assert counts(report) == {
        "users": {"added": 0, "updated": 2, "removed": 1},
        "group_members": {"added": 0, "removed": 1},
        "folder_grants": {"added_or_changed": 1, "removed": 0},
    }
    assert directory_state(owner, WS) == expected_state(SECOND)
    # an email swap is an update, not someone new: the users keep their incarnations
    assert {u: incarnation(owner, WS, u) for u in kept} == kept


def test_sync_lists_rejected_rows_with_a_reason_and_applies_the_rest(owner):
    directory = {
        "users": [
            user("ann", "ann@x.io"),
            user("a b", "ab@x.io"),                 # invalid username
            user("ev" + RLO + "il", "evil@x.io"),   # invalid username (bidi control)
            user("nobody", "nope"),                 # invalid email
            user("dup", "dup1@x.io"), user("dup", "dup2@x.io"),   # username given twice
            user("sam", "Sam@X.io"), user("sue", "sam@x.IO"),     # one email, two users
        ],
        "groups": {"g1": ["ann", "ghost"]},        # ghost is no user
        "folders": {"f1": {"u/ann": "admin", "g/g1": "read", "x/y": "read"}},
    }
    report = sync(owner, WS, directory)

    want = [  # (kind, item, a word of the reason)
        ("user", user("a b", "ab@x.io"), "username"),
        ("user", user("ev" + RLO + "il", "evil@x.io"), "username"),
        ("user", user("nobody", "nope"), "email"),
        ("user", user("dup", "dup1@x.io"), "more than once"),
        ("user", user("dup", "dup2@x.io"), "more than once"),
        ("user", user("sam", "Sam@X.io"), "email"),
        ("user", user("sue", "sam@x.IO"), "email"),
        ("group_member", {"group": "g1", "member": "ghost"}, "not a user"),
        ("folder_grant", {"folder": "f1", "principal": "u/ann", "access": "admin"}, "access"),
        ("folder_grant", {"folder": "f1", "principal": "x/y", "access": "read"}, "principal"),
    ]
    got = report["rejected"]
    assert len(got) == len(want), got
    for kind, item, word in want:
        match = [r for r in got if r["kind"] == kind and r["item"] == item]
        assert len(match) == 1, (kind, item, got)
        reason = match[0]["reason"]
        assert isinstance(reason, str) and word in reason, (item, reason)

    assert directory_state(owner, WS) == {
        "users": {"ann": {"email": "ann@x.io", "is_admin": False}},
        "groups": {"g1": ["ann"]},
        "folders": {"f1": {"g/g1": "read"}},
    }
    assert counts(report) == {
        "users": {"added": 1, "updated": 0, "removed": 0},
        "group_members": {"added": 1, "removed": 0},
        "folder_grants": {"added_or_changed": 1, "removed": 0},
    }


def test_sync_takes_an_empty_group_and_an_empty_folder_without_rejecting_them(owner):
    directory = {"users": [user("ann", "ann@x.io")],
                 "groups": {"nobody-yet": [], "g1": ["ann"]},
                 "folders": {"unshared": {}, "f1": {"u/ann": "owner"}}}
    report = sync(owner, WS, directory)
    assert directory_state(owner, WS) == expected_state(directory)
    assert report["rejected"] == []


def test_sync_of_a_directory_without_groups_raises_22023_and_changes_nothing(owner):
    sync(owner, WS, FIRST)
    before = directory_rows(owner)
    for ws in (WS, "newws"):
        with pytest.raises(errors.InvalidParameterValue):
            sync(owner, ws, {"users": [user("ann", "ann@x.io")], "folders": {}})
    assert directory_rows(owner) == before      # newws not created either


def test_sync_backfills_2000_users_with_a_few_invalid_in_one_call(owner):
    users = [user(f"u{i:04d}", f"u{i:04d}@x.io") for i in range(2000)]
    invalid = {10: user("bad user", "bad@x.io"), 20: user("bi" + RLO + "di", "bidi@x.io"),
               30: user("u0030", "nope"), 40: user("u0040", "u0040@")}
    for i, row in invalid.items():
        users[i] = row
    valid = [u["username"] for i, u in enumerate(users) if i not in invalid]
    directory = {"users": users, "groups": {"everyone": valid},
                 "folders": {"shared": {"g/everyone": "read"}}}

    started = time.monotonic()
    report = sync(owner, WS, directory)
    elapsed = time.monotonic() - started

    assert sorted(r["item"]["username"] for r in report["rejected"]) == sorted(
        r["username"] for r in invalid.values())
    assert all(r["kind"] == "user" for r in report["rejected"])
    assert counts(report) == {
        "users": {"added": 1996, "updated": 0, "removed": 0},
        "group_members": {"added": 1996, "removed": 0},
        "folder_grants": {"added_or_changed": 1, "removed": 0},
    }
    valid_rows = [u for i, u in enumerate(users) if i not in invalid]
    assert directory_state(owner, WS) == expected_state({**directory, "users": valid_rows})
    print(f"backfill of 2000 users: {elapsed:.2f}s")


# ---- 3. a removed user's u/ keys go with them -----------------------------------------------

@pytest.mark.parametrize("removal", ["sync", "remove_workspace_user"])
def test_a_removed_user_loses_u_keys_at_once_and_a_new_bob_does_not_inherit_them(
        make_world, removal):
    w = make_world(**BOB_WORLD)
    assert viewer_roles(w, BOB_EMAIL) == [w.r]
    old_incarnation = incarnation(w.owner_session(), WS, "bob")
    assert bound_to(w.owner_session(), WS, "bob") == str(old_incarnation)

    with psycopg.connect(w.meta.owner_conninfo) as conn:    # one transaction
        if removal == "sync":
            report = sync(conn, WS, bob_world_directory(None))
            assert report["users"]["removed"] == 1
        else:
            assert conn.execute("SELECT remove_workspace_user(%s, 'bob')",
                                [WS]).fetchone()[0] is True
        # in the same transaction: bob's key is out of every list and bound to no one
        assert tenants(conn, DT, w.r) == []
        assert bound_to(conn, WS, "bob") is None
        conn.commit()

    # the username is given to someone else
    sync(w.owner_session(), WS, bob_world_directory(NEW_BOB_EMAIL))
    new_incarnation = incarnation(w.owner_session(), WS, "bob")
    assert new_incarnation != old_incarnation
    roles = viewer_roles(w, NEW_BOB_EMAIL)
    assert roles is None or w.r not in roles

    # u/bob written again names the new bob
    w.set_tenants(DT, w.r, ["u/bob"])
    assert bound_to(w.owner_session(), WS, "bob") == str(new_incarnation)
    assert viewer_roles(w, NEW_BOB_EMAIL) == [w.r]


# ---- 4. a username reused with no removal call ----------------------------------------------

def test_a_reused_username_without_removal_gets_no_old_u_keys_and_reconcile_forgets_them(
        make_world):
    w = make_world(**BOB_WORLD)
    assert viewer_roles(w, BOB_EMAIL) == [w.r]
    reuse_username_behind_the_packages_back(w, "bob", NEW_BOB_EMAIL)
    owner = w.owner_session()
    assert tenants(owner, DT, w.r) == ["u/bob"]        # nobody told the package ...
    roles = viewer_roles(w, NEW_BOB_EMAIL)
    assert roles is None or w.r not in roles         # ... still the key names no one

    report = owner.execute("SELECT reconcile_directory()").fetchone()[0]
    assert report == {"forgotten": [f"{WS}/bob"], "bound": 0}
    assert tenants(owner, DT, w.r) == []
    assert bound_to(owner, WS, "bob") is None
    assert owner.execute("SELECT reconcile_directory()").fetchone()[0] == {
        "forgotten": [], "bound": 0}


def test_a_u_key_written_again_after_a_reuse_names_the_new_person(make_world):
    w = make_world(**BOB_WORLD)
    reuse_username_behind_the_packages_back(w, "bob", NEW_BOB_EMAIL)
    w.set_tenants(DT, w.r, ["u/bob"])      # the operator names bob again, no reconcile
    owner = w.owner_session()
    assert bound_to(owner, WS, "bob") == str(incarnation(owner, WS, "bob"))
    assert viewer_roles(w, NEW_BOB_EMAIL) == [w.r]


def test_forget_workspace_user_takes_u_keys_out_of_every_list_and_counts_them(make_world):
    w = make_world(**BOB_WORLD)
    # two more lists with u/bob on a second data table (same database): r's and the admin's
    w.register("second", tenants={w.r: ["u/bob", "g/ops"]}, admin_tenants=["u/bob"])
    reuse_username_behind_the_packages_back(w, "bob", NEW_BOB_EMAIL)
    owner = w.owner_session()

    assert owner.execute("SELECT forget_workspace_user(%s, 'bob')", [WS]).fetchone()[0] == 3
    assert tenants(owner, DT, w.r) == []
    assert tenants(owner, "second", w.r) == ["g/ops"]
    assert tenants(owner, "second", "admin") == []
    assert bound_to(owner, WS, "bob") is None
    assert viewer_roles(w, NEW_BOB_EMAIL) is None
    assert owner.execute("SELECT forget_workspace_user(%s, 'bob')", [WS]).fetchone()[0] == 0


# ---- 5. the directory writer ----------------------------------------------------------------

def new_login(w: World, name: str) -> str:
    """A LOGIN role of nobody's with a password (returned); dropped by the scratch."""
    password = secrets.token_urlsafe(18)
    w.su("postgres").execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
        sql.Identifier(name), sql.Literal(scram_sha256_verifier(password))))
    return password


def test_a_directory_writer_may_call_the_directory_calls_and_nothing_else(make_world, uid):
    w = make_world(**BOB_WORLD)
    job = w.job("bob")
    writer = f"{uid}_writer"
    password = new_login(w, writer)
    conninfo = w.cluster.conninfo(writer, password, w.meta.name, tcp=True)
    with pytest.raises(psycopg.OperationalError):     # no CONNECT before the grant
        connect(conninfo).close()

    w.call("SELECT datatable_roles.grant_directory_writer(%s)", [writer])
    with connect(conninfo) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == writer
        conn.execute("SELECT add_workspace_user(%s, 'zed', 'zed@acme.test')", [WS])
        conn.execute("SELECT add_group_member(%s, 'ops', 'zed')", [WS])
        conn.execute("SELECT set_folder_access(%s, 'f1', 'g/ops', 'read')", [WS])
        assert conn.execute("SELECT remove_group_member(%s, 'ops', 'zed')",
                            [WS]).fetchone()[0] is True
        assert conn.execute("SELECT remove_workspace_user(%s, 'zed')",
                            [WS]).fetchone()[0] is True
        directory = bob_world_directory(BOB_EMAIL)
        directory["users"].append(user("zoe", "zoe@acme.test"))
        report = sync(conn, WS, directory)
        assert report["users"]["added"] == 1 and report["rejected"] == []
        assert conn.execute("SELECT forget_workspace_user(%s, 'bob')",
                            [WS]).fetchone()[0] == 1
        assert conn.execute("SELECT reconcile_directory()").fetchone()[0] == {
            "forgotten": [], "bound": 0}

        refused = [
            ("SELECT * FROM resolve_datatable_role(%s, %s)", [job, DT],
             "function resolve_datatable_role"),
            ("SELECT * FROM datatable_roles.workspace_user", None, "permission denied"),
            ("SELECT create_datatable_role(%s)", [f"{uid}_nope"],
             "function create_datatable_role"),
        ]
        for statement, args, message in refused:
            with pytest.raises(errors.InsufficientPrivilege, match=message):
                conn.execute(statement, args)
    assert "zoe" in directory_state(w.owner_session(), WS)["users"]
    assert w.role_state(f"{uid}_nope") == (False, False)


# ---- names ----------------------------------------------------------------------------------

GOOD_NAMES = [JOSE, NIHONGO, "a.b", "x-y_z", "\u00d8re"]
BAD_NAMES = ["a b", "a\tb", "ev" + RLO + "il", "x\u200fy", ".hidden", "", "a\u00a0b"]


def test_user_group_and_folder_names_take_unicode_letters(owner):
    owner.execute("SELECT add_workspace(%s)", [WS])
    for i, name in enumerate(GOOD_NAMES):
        owner.execute("SELECT add_workspace_user(%s, %s, %s)", [WS, name, f"n{i}@x.io"])
        owner.execute("SELECT add_group_member(%s, %s, %s)", [WS, name, name])
        owner.execute("SELECT set_folder_access(%s, %s, %s, 'read')", [WS, name, "u/" + name])
    state = directory_state(owner, WS)
    assert sorted(state["users"]) == sorted(GOOD_NAMES)
    assert state["groups"] == {n: [n] for n in GOOD_NAMES}
    assert state["folders"] == {n: {"u/" + n: "read"} for n in GOOD_NAMES}


def test_names_with_spaces_controls_or_bidi_characters_are_refused(owner):
    owner.execute("SELECT add_workspace(%s)", [WS])
    owner.execute("SELECT add_workspace_user(%s, 'ann', 'ann@x.io')", [WS])
    before = directory_rows(owner)
    for name in BAD_NAMES:
        for statement, args in [
            ("SELECT add_workspace_user(%s, %s, 'bad@x.io')", [WS, name]),
            ("SELECT add_group_member(%s, %s, 'ann')", [WS, name]),
            ("SELECT set_folder_access(%s, %s, 'u/ann', 'read')", [WS, name]),
        ]:
            with pytest.raises(errors.InvalidParameterValue):
                owner.execute(statement, args)
    assert directory_rows(owner) == before
