"""Property test: resolve_datatable_role (as the worker) against a small pure-Python model of
docs/rules.md (R1-R5, R8, R9, R11, and R10 which never changes an answer).

One metadata database and one pool of catalog roles per test run; every example gets a fresh
workspace (directory, data table entry, role map, default, jobs) and remaps the pool. It runs
three times: over the package's own directory (mirror mode, written with the directory calls),
over Windmill's tables through the Windmill adapter (written as Windmill writes them; there
every member is also in group ``all``), and with the data table on a second server
(docs/servers.md), where each login's memberships there are checked too.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
import psycopg
from psycopg import errors

from support import windmill_meta_db


POOL_SIZE = 4
ORIGINS = ("app_viewer", "app_anonymous", "run", "schedule", "job_token")
_workspaces = itertools.count()


# ---- the model ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Directory:
    users: tuple[tuple[str, bool], ...]             # (username, is_admin)
    groups: tuple[tuple[str, frozenset[str]], ...]  # (group, members)
    folders: tuple[tuple[str, str, str], ...]       # (folder, principal u/x | g/x, access)
    implicit_all: bool = False                       # Windmill: every member is in g/all

    def email(self, user: str) -> str:
        return f"{user}@example.com"

    def is_admin(self, user: str) -> bool:
        return dict(self.users)[user]

    def keys(self, user: str) -> frozenset[str]:
        """docs/rules.md: *, u/<user>, g/<groups>, f/<folders owned/readable/writable directly or
        through a group>."""
        groups = {g for g, members in self.groups if user in members}
        groups |= {"all"} if self.implicit_all else set()
        principals = {f"u/{user}"} | {f"g/{g}" for g in groups}
        folders = {f for f, principal, _ in self.folders if principal in principals}
        return frozenset({"*", f"u/{user}"} | {f"g/{g}" for g in groups}
                         | {f"f/{f}" for f in folders})

    def with_member(self, group: str, user: str) -> "Directory":
        groups = dict(self.groups)
        groups[group] = groups.get(group, frozenset()) | {user}
        return Directory(self.users, tuple(sorted(groups.items())), self.folders,
                         self.implicit_all)

    def user_by_email(self, email: str | None) -> str | None:
        for user, _ in self.users:
            if email is not None and self.email(user) == email:
                return user
        return None


def model(*, roles_in_map: dict[str, frozenset[str]], enabled: dict[str, bool],
          admin_tenants: frozenset[str], default: str | None, ident_admin: bool,
          ident_keys: frozenset[str], viewer_keys: frozenset[str] | None,
          named: str | None, for_migration: bool) -> tuple[str, list[str] | str]:
    """('ok', sorted role names) or ('refused', rule)."""
    def may_use(role: str) -> bool:
        tenants = admin_tenants if role == "admin" else roles_in_map[role]
        return ident_admin or bool(tenants & ident_keys)

    if named is not None:                                          # R1
        if named == "admin":
            return ("ok", ["admin"]) if may_use("admin") else ("refused", "R1")
        if named in roles_in_map and enabled[named] and may_use(named):
            return "ok", [named]
        return "refused", "R1"
    if for_migration:                                              # R8
        if default == "admin" or may_use("admin"):
            return "ok", ["admin"]
        return "refused", "R8"
    if default == "admin":                                         # R2
        return "ok", ["admin"]
    result = set()
    if default is not None and enabled[default] and may_use(default):  # R3
        result.add(default)
    if viewer_keys is not None:                                    # R3/R4 viewer_roles; R9
        result |= {r for r, t in roles_in_map.items() if enabled[r] and t & viewer_keys}
    if not result:                                                 # R5
        return "refused", "R5"
    return "ok", sorted(result)


# ---- strategies -----------------------------------------------------------------------------

@st.composite
def scenarios(draw):
    n_users = draw(st.integers(2, 4))
    users = tuple((f"u{i}", draw(st.booleans())) for i in range(n_users))
    names = [u for u, _ in users]
    group_names = [f"g{i}" for i in range(draw(st.integers(0, 2)))]
    groups = tuple((g, frozenset(draw(st.sets(st.sampled_from(names))))) for g in group_names)
    principals = [f"u/{u}" for u in names] + [f"g/{g}" for g in group_names]
    folders = []
    for f in (f"f{i}" for i in range(draw(st.integers(0, 2)))):
        for p in draw(st.sets(st.sampled_from(principals), max_size=2)):
            folders.append((f, p, draw(st.sampled_from(["owner", "write", "read"]))))
    directory = Directory(users, groups, tuple(folders))

    valid_keys = (["*", "g/all"] + [f"u/{u}" for u in names]
                  + [f"g/{g}" for g in group_names]
                  + sorted({f"f/{f}" for f, _, _ in folders}))

    def tenant_list():  # each valid key with probability 1/2 ('*' 1/6), so lists vary
        return frozenset(k for k in valid_keys
                         if draw(st.sampled_from([True] + [False] * (5 if k == "*" else 1))))

    n_roles = draw(st.integers(2, POOL_SIZE))
    role_idx = list(range(n_roles))
    enabled = {i: draw(st.sampled_from([True, False, True])) for i in role_idx}
    mapped = {i for i in role_idx if draw(st.sampled_from([True, True, False]))}
    tenants = {i: tenant_list() for i in sorted(mapped)}
    admin_tenants = tenant_list()
    default = draw(st.sampled_from([None, "admin", None, "role", "role"]))
    if default == "role":
        default = draw(st.sampled_from(sorted(mapped))) if mapped else None
    # R11: the default role taken out of the map leaves no default.
    remove_default = isinstance(default, int) and draw(st.sampled_from([False, True, False]))

    identity = draw(st.sampled_from(names))
    origin = draw(st.sampled_from(ORIGINS + ("app_viewer", "run")))  # viewers more often
    emails = [directory.email(u) for u in names] + ["stranger@elsewhere.org"]
    caller = draw(st.sampled_from(emails))
    parent_origin = draw(st.sampled_from(["app_viewer", "app_anonymous", "schedule"]))
    # Mostly no role named and no migration, so that R2-R5 and set logins get their share.
    named = draw(st.sampled_from([None] * 9 + ["admin", "missing", "pool"]))
    if named == "pool":
        named = draw(st.sampled_from(list(range(POOL_SIZE))))
    for_migration = draw(st.sampled_from([False, False, False, False, True]))
    # A directory change after the job started: the identity's memberships were captured
    # at start (docs/rules.md), the viewer's are always the current ones.
    later = None
    if group_names and draw(st.booleans()):
        who = draw(st.sampled_from(["identity", "viewer", "anyone"]))
        if who == "identity":
            user = identity
        elif who == "viewer":
            user = directory.user_by_email(caller) or identity
        else:
            user = draw(st.sampled_from(names))
        later = (draw(st.sampled_from(group_names)), user)
    return dict(directory=directory, n_roles=n_roles, enabled=enabled, tenants=tenants,
                admin_tenants=admin_tenants, default=default, remove_default=remove_default,
                identity=identity, origin=origin, caller=caller, parent_origin=parent_origin,
                named=named, for_migration=for_migration, later=later)


# ---- the database side ----------------------------------------------------------------------

def q(conn, query, *args):
    return conn.execute(query, list(args))


def record(worker, ws, user, origin, caller, parent=None) -> uuid.UUID:
    job = uuid.uuid4()
    args = {
        "app_viewer": ("app", caller, None),
        "app_anonymous": ("app", None, None),
        "run": ("run", caller, None),
        "schedule": ("schedule", None, None),
        "job_token": ("job_token", None, parent),
    }[origin]
    q(worker, "SELECT record_job_start(%s, %s, %s, %s, %s::text, %s::uuid)",
      job, ws, f"u/{user}", *args)
    return job


@pytest.fixture(params=["builtin", "windmill", "other-server"])
def pool(request, make_world, scratch, uid):
    """Catalog roles r0..r3 created once; the data table database shared by every example
    (the world registers it as its own data table main, with no tenants); the directory
    the examples write. other-server: the package's directory, and the examples' data
    table on the second server (docs/servers.md), in a database named as the local one."""
    if request.param == "windmill":
        meta, directory = windmill_meta_db(scratch)
        w = make_world(meta=meta, directory=directory, users={},
                       roles=[f"r{i}" for i in range(POOL_SIZE)])
    else:
        w = make_world(users={}, roles=[f"r{i}" for i in range(POOL_SIZE)])
    db, server, remote = (w.dbname, w.admin_login, w.admin_password), "local", None
    if request.param == "other-server":
        remote = request.getfixturevalue("remote")
        remote.register(w.call)
        admin = f"{uid}_radmin"
        db, server = (w.dbname, admin, remote.datatable_db(w.dbname, admin)), "b"
    yield dict(owner=w.owner_session(), worker=w.worker_session(), names=w.role_names,
               db=db, server=server, remote=remote, directory=w.directory,
               login_group=w.call("SELECT login_group FROM datatable_roles.settings")[0][0],
               windmill=request.param == "windmill",
               state={"enabled": dict.fromkeys(w.role_names, True)})
    if remote is not None:
        remote.drop(w.dbname, uid)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(sc=scenarios())
def test_resolve_matches_the_model(pool, uid, sc):
    owner, worker, names = pool["owner"], pool["worker"], pool["names"]
    writer = pool["directory"]
    d: Directory = sc["directory"]
    if pool["windmill"]:
        d = Directory(d.users, d.groups, d.folders, implicit_all=True)
    ws = f"m{next(_workspaces)}_{uid}"

    # Directory.
    writer.add_workspace(ws)
    for user, is_admin in d.users:
        writer.add_user(ws, user, d.email(user), is_admin)
    for group, members in d.groups:
        for user in sorted(members):
            writer.add_group_member(ws, group, user)
    for folder, principal, access in d.folders:
        writer.set_folder_access(ws, folder, principal, access)

    # Catalog state and the role map.
    role = {i: names[i] for i in range(POOL_SIZE)}
    enabled = {role[i]: sc["enabled"].get(i, True) for i in range(POOL_SIZE)}
    for name, want in enabled.items():
        if pool["state"]["enabled"][name] != want:
            q(owner, "SELECT set_datatable_role_enabled(%s, %s)", name, want)
            pool["state"]["enabled"][name] = want
    q(owner, "SELECT register_datatable(%s, 'main', %s, %s, %s, %s)", ws, *pool["db"],
      pool["server"])
    roles_in_map = {role[i]: frozenset(t) for i, t in sc["tenants"].items()}
    for name, tenants in roles_in_map.items():
        q(owner, "SELECT set_datatable_role_tenants(%s, 'main', %s, %s::text[])",
          ws, name, sorted(tenants))
    q(owner, "SELECT set_datatable_role_tenants(%s, 'main', 'admin', %s::text[])",
      ws, sorted(sc["admin_tenants"]))
    default = sc["default"]
    default_name = role[default] if isinstance(default, int) else default
    if default_name != "admin":
        q(owner, "SELECT set_datatable_default_role(%s, 'main', %s::text)", ws, default_name)
    if sc["remove_default"]:
        q(owner, "SELECT remove_datatable_role(%s, 'main', %s)", ws, default_name)
        del roles_in_map[default_name]
        default_name = None

    # The job (and its parent for a token job), then a directory change.
    parent = None
    if sc["origin"] == "job_token":
        parent = record(worker, ws, sc["identity"], sc["parent_origin"], sc["caller"])
    job = record(worker, ws, sc["identity"], sc["origin"], sc["caller"], parent)
    if sc["origin"] in ("app_viewer", "run") or (
            sc["origin"] == "job_token" and sc["parent_origin"] == "app_viewer"):
        viewer_email = sc["caller"]
    else:
        viewer_email = None
    ident_keys = d.keys(sc["identity"])
    ident_admin = d.is_admin(sc["identity"])
    if sc["later"] is not None:
        group, user = sc["later"]
        writer.add_group_member(ws, group, user)
        d = d.with_member(group, user)
    viewer = d.user_by_email(viewer_email)
    viewer_keys = d.keys(viewer) if viewer is not None else None

    named = sc["named"]
    named_name = {None: None, "admin": "admin", "missing": f"{uid}_missing"}.get(
        named, role.get(named))
    expected = model(roles_in_map=roles_in_map, enabled=enabled,
                     admin_tenants=frozenset(sc["admin_tenants"]), default=default_name,
                     ident_admin=ident_admin, ident_keys=ident_keys, viewer_keys=viewer_keys,
                     named=named_name, for_migration=sc["for_migration"])

    # resolve_datatable_role, as the worker.
    try:
        login, password, got_roles, kind = q(
            worker, "SELECT login, password, roles, login_kind"
            " FROM resolve_datatable_role(%s, 'main', %s::text, %s)",
            job, named_name, sc["for_migration"]).fetchone()
        actual = ("ok", got_roles)
    except errors.InsufficientPrivilege as e:
        detail = e.diag.message_detail or ""
        actual = ("refused", detail.removeprefix("refused by rule "))
        login = password = None
    path = ("R1" if named_name is not None else "R8" if sc["for_migration"]
            else "R2" if default_name == "admin" else "R3" if default_name else "R4")
    event(f"{path}: {actual[1] if actual[0] == 'refused' else min(len(actual[1]), 2)}")
    assert actual == expected, (sc, viewer_email)

    if actual[0] == "ok":
        assert password
        if got_roles == ["admin"]:
            assert (login, kind) == (pool["db"][1], "admin")       # admin's own login
        elif len(got_roles) == 1:
            assert login.startswith("wm_set_") and kind == "role"  # R6: a scoped login
        else:
            assert login.startswith("wm_set_") and kind == "set"   # R7
        if pool["remote"] is not None and got_roles != ["admin"]:
            # There, the login holds exactly its roles and logs in with its password.
            assert pool["remote"].role(login) == {
                "login": True, "member_of": sorted([*got_roles, pool["login_group"]])}
            with psycopg.connect(pool["remote"].login_conninfo(login, password, pool["db"][0])):
                pass

    # explain says the same, without resolving (named role only; it has no for_migration).
    if not sc["for_migration"]:
        (plan,) = q(worker, "SELECT explain_datatable_role(%s, 'main', %s::text)",
                    job, named_name).fetchone()
        explained = (("refused", plan["refused"]["rule"]) if "refused" in plan
                     else ("ok", plan["roles"]))
        assert explained == expected, plan
