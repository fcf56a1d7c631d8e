"""The roles a caller may use, and previews of a change to a role (issue 15, item 5).

- ``usable_datatable_roles(workspace, datatable, username)`` lists exactly the roles R1 lets
  the member name: each one listed resolves, as a job run as that member, and every other
  catalog role (and admin, when unlisted) is refused with R1's error. Its no-role rows say
  what resolving with no role gives the same member, with no viewer and as its own viewer,
  for each kind of default (R2-R5). It shows no tenant key; the worker may call it;
- ``preview_datatable_role_change`` lists exactly the logins the real change then retires
  and the sessions it then ends (real sessions of those logins), and changes nothing: the
  sessions stay alive, the logins keep LOGIN and their passwords, the rows, maps, defaults
  and catalog stay as they were. Its errors are the real call's.
"""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg import errors

from support import DT, LIFECYCLE, WS, connect, create_table_as


def _alive(conn: psycopg.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
        return True
    except psycopg.OperationalError:
        return False


# ---- usable_datatable_roles -------------------------------------------------------------------

USERS = {"vic": ["emea"], "ann": ["us"], "fol": [], "boss": [], "wsadm": [], "nobody": [],
         "both": ["emea", "us"]}


@pytest.fixture
def picker_world(make_world):
    """emea (g/emea), us (g/us, u/ann), fin (f/finance), off (g/emea, disabled), open (*),
    empty (no tenants) mapped on main; unmapped in no map; admin's tenants u/boss; wsadm a
    workspace admin; fol reads folder finance."""
    w = make_world(users=USERS, admins=["wsadm"], roles=["unmapped"],
                   tenants={"emea": ["g/emea"], "us": ["g/us", "u/ann"], "fin": ["f/finance"],
                            "off": ["g/emea"], "open": ["*"], "empty": []})
    w.directory.set_folder_access(WS, "finance", "u/fol", "read")
    w.set_tenants(DT, "admin", ["u/boss"])
    w.call("SELECT set_datatable_role_enabled(%s, false)", [w.off])
    return w


def usable(w, user: str, datatable: str = DT, ws: str = WS) -> list[tuple]:
    """usable_datatable_roles as the worker role."""
    with w.connect_worker() as conn:
        return conn.execute("SELECT role, source, roles, rule FROM usable_datatable_roles(%s, %s, %s)",
                            [ws, datatable, user]).fetchall()


def resolve_or_rule(w, job: uuid.UUID, role: str | None, datatable: str = DT):
    """(roles, None) when resolved, (None, rule) when refused."""
    try:
        return w.resolve(job, datatable, role).roles, None
    except errors.InsufficientPrivilege as e:
        return None, e.diag.constraint_name


@pytest.mark.parametrize("default", ["emea", "off", None, "admin"])
def test_usable_roles_are_exactly_what_resolving_gives(picker_world, default):
    w = picker_world
    w.set_default(DT, w.roles.get(default, default))
    candidates = ["admin", *w.role_names]
    for user in USERS:
        rows = usable(w, user)
        named = [r for r in rows if r[1] == "named"]
        assert all(r[3] == "R1" and r[2] == [r[0]] for r in named), rows
        listed = [r[0] for r in named]
        assert listed == sorted(listed, key=lambda n: (n != "admin", n.encode())), listed
        # as a job run by the member: every listed role resolves, every other one is refused by R1
        job = w.job(None, identity=f"u/{user}", origin="schedule")
        for role in candidates:
            got, rule = resolve_or_rule(w, job, role)
            if role in listed:
                assert got == [role], (user, role, rule)
            else:
                assert rule == "R1", (user, role, got)
        # no role named: with no viewer, and with the member as its own viewer
        own_run = w.job(user, identity=f"u/{user}", origin="run")
        defaults = {r[1]: r for r in rows if r[1] != "named"}
        assert set(defaults) == {"default", "default_as_viewer"}, rows
        for source, j in (("default", job), ("default_as_viewer", own_run)):
            shown, _src, roles, rule = defaults[source]
            assert shown == (default if default in ("admin", None) else w.roles[default])
            got, refused = resolve_or_rule(w, j, None)
            if roles is None:
                assert rule == "R5" and refused == "R5", (user, source, got)
            else:
                assert got == roles, (user, source, refused)
                assert rule == {"admin": "R2", None: "R4"}.get(default, "R3"), (user, rule)


def test_usable_roles_name_the_expected_roles_and_no_tenant_key(picker_world):
    w = picker_world
    w.set_default(DT, w.emea)
    named = lambda user: [r[0] for r in usable(w, user) if r[1] == "named"]  # noqa: E731
    assert named("vic") == [w.emea, w.open]
    assert named("ann") == [w.open, w.us]
    assert named("fol") == [w.fin, w.open]
    assert named("boss") == ["admin", w.open]
    assert named("wsadm") == ["admin", w.emea, w.empty, w.fin, w.open, w.us]  # never a disabled one
    assert named("both") == [w.emea, w.open, w.us]
    rows = {r[1]: r for r in usable(w, "both")}
    assert rows["default"] == (w.emea, "default", [w.emea], "R3")
    assert rows["default_as_viewer"] == (w.emea, "default_as_viewer",
                                         sorted([w.emea, w.open, w.us]), "R3")
    assert rows == {r[1]: r for r in usable(w, "both")}  # stable
    text = json.dumps([usable(w, u) for u in USERS])
    for key in ("g/", "u/", "f/", '"*"', "finance", "@"):
        assert key not in text, f"{key} shown: {text}"


def test_usable_roles_under_a_reference_follow_the_governing_workspace(picker_world):
    w = picker_world
    w.set_default(DT, None)
    w.call("SELECT add_workspace('fork')")
    # the same person (email) in the fork: a member of group emea in acme, of nothing in fork
    w.call("SELECT add_workspace_user('fork', 'victor', %s)", [w.email("vic")])
    w.call("SELECT reference_datatable('fork', 'ref', %s, %s)", [WS, DT])
    rows = usable(w, "victor", "ref", "fork")
    assert [r[0] for r in rows if r[1] == "named"] == [w.emea, w.open]
    job = uuid.uuid4()
    w.call("SELECT record_job_start(%s, 'fork', 'u/victor', 'schedule')", [job])
    for role in ["admin", *w.role_names]:
        got, rule = resolve_or_rule(w, job, role, "ref")
        assert (got == [role]) if role in (w.emea, w.open) else rule == "R1"
    assert {r[1]: r[2:] for r in rows if r[1] != "named"} == {
        "default": (None, "R5"), "default_as_viewer": (sorted([w.emea, w.open]), "R4")}


def test_usable_roles_errors(picker_world):
    w = picker_world
    with w.connect_worker() as conn:
        q = "SELECT * FROM usable_datatable_roles(%s, %s, %s)"
        for args, error in [
            (["nows", DT, "vic"], errors.NoDataFound),
            ([WS, "nodt", "vic"], errors.NoDataFound),
            ([WS, DT, "stranger"], errors.NoDataFound),
            ([WS, DT, "bad name!"], errors.InvalidParameterValue),
            ([WS, DT, None], errors.NullValueNotAllowed),
            ([None, DT, "vic"], errors.NullValueNotAllowed),
        ]:
            with pytest.raises(error):
                conn.execute(q, args)
        # the worker may not preview a change (owner only)
        with pytest.raises(errors.InsufficientPrivilege, match="permission denied for function"):
            conn.execute("SELECT preview_datatable_role_change('disable', %s)", [w.emea])


# ---- preview_datatable_role_change --------------------------------------------------------------

@pytest.fixture
def world(make_world, scratch):
    """LIFECYCLE (vic is a tenant of a and b; no default; the publisher is a workspace admin),
    with a second data table dt1 on another database, mapping a (for vic) too."""
    return make_world(**{**LIFECYCLE, "datatables": 2})


def preview(w, change: str, role: str, ws: str | None = None, dt: str | None = None) -> dict:
    return w.call("SELECT preview_datatable_role_change(%s, %s, %s, %s)",
                  [change, role, ws, dt])[0][0]


def state(w) -> tuple:
    """Everything a change could touch: the set rows, the logins' LOGIN, the maps, defaults,
    the catalog, and the cluster's roles."""
    rows = w.rows()
    return (
        rows,
        {login: w.role_state(login) for login in rows},
        w.call("SELECT datatable_id, role_id, tenants FROM datatable_roles.datatable_role"
               " ORDER BY 1, 2"),
        w.call("SELECT id, default_role FROM datatable_roles.datatable ORDER BY id"),
        w.call("SELECT id, name, enabled FROM datatable_roles.catalog_role ORDER BY id"),
        w.su("postgres").execute("SELECT rolname, rolcanlogin FROM pg_roles ORDER BY 1").fetchall(),
    )


class Sessions:
    """Open sessions as resolved logins on their databases, by login."""

    def __init__(self, w):
        self.w = w
        self.conns: dict[str, list[psycopg.Connection]] = {}

    def open(self, r, role: str | None = None) -> psycopg.Connection:
        conn = connect(self.w.login_conninfo(r.login, r.password, r.dbname, role=role))
        self.conns.setdefault(r.login, []).append(conn)
        return conn

    def pids(self, *logins: str) -> list[int]:
        return sorted(c.info.backend_pid for login in logins for c in self.conns.get(login, []))

    def alive(self) -> dict[str, bool]:
        return {login: all(_alive(c) for c in conns) for login, conns in self.conns.items()}

    def close(self) -> None:
        for conns in self.conns.values():
            for c in conns:
                c.close()


@pytest.fixture
def sessions(world):
    s = Sessions(world)
    yield s
    s.close()


def logins_in_use(w, sessions: Sessions):
    """vic resolves to the set {a, b} on main (two sessions), to a alone and b alone on main,
    and to a alone on dt1; each login gets a session."""
    got = {
        "set": w.resolve("vic"),
        "a": w.resolve("vic", role=w.a),
        "b": w.resolve("vic", role=w.b),
        "a_dt1": w.resolve("vic", "dt1", role=w.a),
    }
    sessions.open(got["set"])
    sessions.open(got["set"])
    sessions.open(got["a"], role=w.a)
    sessions.open(got["b"], role=w.b)
    sessions.open(got["a_dt1"], role=w.a)
    assert len({r.login for r in got.values()}) == 4
    return got


def retired_now(w, before_rows: dict) -> list[str]:
    """The logins that had a password before and have none now."""
    return sorted(login for login, (pw, _ids) in w.rows().items()
                  if pw == "" and before_rows.get(login, ("",))[0] != "")


@pytest.mark.parametrize("change", ["remove", "disable", "retire", "drop"])
def test_preview_lists_what_the_change_then_does_and_changes_nothing(world, sessions, change):
    w = world
    got = logins_in_use(w, sessions)
    if change == "drop":
        create_table_as(w, got["a"].login, got["a"].password, "a_made", role=w.a)
    ws_dt = (WS, DT) if change == "remove" else (None, None)
    before = state(w)

    report = preview(w, change, w.a, *ws_dt)

    # nothing changed, no session ended
    assert state(w) == before
    assert all(sessions.alive().values()), sessions.alive()
    # what it says: the logins holding a (on main's database only, for a removal)
    expected = [got["set"].login, got["a"].login] + (
        [] if change == "remove" else [got["a_dt1"].login])
    assert [x["login"] for x in report["logins"]] == sorted(expected), report
    for x in report["logins"]:
        assert x["live"] is True and x["pids"] == sessions.pids(x["login"]), x
        assert w.a in x["roles"] and x["dbname"] == w.row_dbnames()[x["login"]]
    assert report["retired"] == len(expected)
    assert report["sessions"] == {"count": len(sessions.pids(*expected)),
                                  "pids": sessions.pids(*expected)}
    tables = {(t["workspace"], t["name"]): t for t in report["datatables"]}
    assert set(tables) == {"remove": {(WS, DT)}, "disable": {(WS, DT), (WS, "dt1")},
                           "drop": {(WS, DT), (WS, "dt1")}, "retire": set()}[change]
    assert all(t["default"] is False and t["references"] == [] for t in tables.values())
    if change == "drop":
        assert report["role_sessions"] == []
        # its table on main's database, its CREATE on schema public on both (LIFECYCLE)
        assert report["objects_in"] == sorted(
            ({"dbname": t.dbname, "moved_to": t.admin_login} for t in w.tables),
            key=lambda x: x["dbname"])

    # the real change: exactly those logins retired, exactly those sessions ended
    before_rows = w.rows()
    result = w.call({
        "remove": "SELECT remove_datatable_role(%s, %s, %s)",
        "disable": "SELECT set_datatable_role_enabled(%s, false)",
        "retire": "SELECT retire_role_set_logins_of(%s)",
        "drop": "SELECT drop_datatable_role(%s)",
    }[change], [WS, DT, w.a] if change == "remove" else [w.a])
    if change == "retire":
        assert result == [(report["retired"],)]
    assert retired_now(w, before_rows) == sorted(expected)
    alive = sessions.alive()
    assert {login for login, up in alive.items() if not up} == set(expected), alive
    assert alive[got["b"].login]


def test_preview_of_the_default_and_of_a_role_still_mapped_on_the_database(world, sessions):
    w = world
    got = logins_in_use(w, sessions)
    w.set_default(DT, w.a)
    w.call("SELECT reference_datatable('acme', 'fork_of_main', %s, %s)", [WS, DT])
    report = preview(w, "disable", w.a)
    assert {(t["name"], t["default"]) for t in report["datatables"]} == {(DT, True), ("dt1", False)}
    assert [t["references"] for t in report["datatables"] if t["name"] == DT] == [
        [f"{WS}/fork_of_main"]]
    # dt2 on main's database maps a too: removing a from main retires nothing there
    w.register("dt2", tenants={w.a: ["u/vic"]})
    before = state(w)
    report = preview(w, "remove", w.a, WS, DT)
    assert report["logins"] == [] and report["retired"] == 0
    assert report["sessions"] == {"count": 0, "pids": []}
    assert [(t["name"], t["default"]) for t in report["datatables"]] == [(DT, True)]
    assert state(w) == before and all(sessions.alive().values())
    before_rows = w.rows()
    w.call("SELECT remove_datatable_role(%s, %s, %s)", [WS, DT, w.a])
    assert retired_now(w, before_rows) == [] and all(sessions.alive().values())
    assert got  # (the logins in use)


def test_preview_errors_are_the_real_calls_and_change_nothing(world, sessions):
    w = world
    logins_in_use(w, sessions)
    w.call("SELECT reference_datatable('acme', 'ref', %s, %s)", [WS, DT])
    w.new_role("c")
    before = state(w)
    for args, error in [
        (["disable", "no_such_role"], errors.NoDataFound),
        (["drop", "no_such_role"], errors.NoDataFound),
        (["remove", w.c, WS, DT], errors.NoDataFound),          # not in the map
        (["remove", w.a, WS, "nodt"], errors.NoDataFound),
        (["remove", "admin", WS, DT], errors.InvalidParameterValue),
        (["remove", w.a, WS, "ref"], errors.ObjectNotInPrerequisiteState),
        (["remove", w.a, WS, None], errors.NullValueNotAllowed),
        (["disable", w.a, WS, DT], errors.InvalidParameterValue),
        (["rename", w.a], errors.InvalidParameterValue),
        ([None, w.a], errors.NullValueNotAllowed),
        (["disable", None], errors.NullValueNotAllowed),
    ]:
        with pytest.raises(error):
            preview(w, *args)
    assert state(w) == before and all(sessions.alive().values())


def test_the_switch_does_not_outlive_the_preview_nor_can_it_be_set(world, sessions):
    w = world
    got = logins_in_use(w, sessions)
    with w.connect_owner() as owner:
        # a preview, then the real change, in one transaction: the change ends the sessions
        with owner.transaction():
            owner.execute("SELECT preview_datatable_role_change('retire', %s)", [w.b])
            owner.execute("SELECT retire_role_set_logins_of(%s)", [w.b])
        assert not _alive(sessions.conns[got["b"].login][0])
        # a setting made by hand does not stop a change from ending sessions
        owner.execute("SET datatable_roles.preview = 'on'")
        owner.execute("SELECT set_config('datatable_roles.preview', txid_current()::text, false)")
        owner.execute("SELECT retire_role_set_logins_of(%s)", [w.a])
    assert not any(sessions.alive().values()), sessions.alive()


# ---- the CLI ----------------------------------------------------------------------------------

def test_cli_usable_roles_and_preview_change(world, sessions, capsys):
    from datatable_roles.cli import main

    w = world
    got = logins_in_use(w, sessions)
    # the worker may run usable-roles; vic is a tenant of a and b, and there is no default
    assert main(["--dsn", w.meta.worker_conninfo, "--json", "usable-roles", WS, DT, "vic"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["role"] for r in data if r["source"] == "named"] == [w.a, w.b]
    assert main(["--dsn", w.meta.worker_conninfo, "usable-roles", WS, DT, "vic"]) == 0
    out = capsys.readouterr().out
    assert f"vic may name: {w.a}, {w.b}" in out and "refused [R5; default: none]" in out
    assert main(["--dsn", w.meta.owner_conninfo, "--json", "preview-change", "remove", w.a,
                 "--workspace", WS, "--datatable", DT]) == 0
    assert json.loads(capsys.readouterr().out) == preview(w, "remove", w.a, WS, DT)
    assert main(["--dsn", w.meta.owner_conninfo, "preview-change", "disable", w.b]) == 0
    out = capsys.readouterr().out
    assert (f"disable {w.b} would retire 2 login(s) and end" in out
            and "; nothing was changed" in out and got["b"].login in out)
    assert all(sessions.alive().values())
    # remove names its data table: without it, a usage error naming what is missing
    assert main(["--dsn", w.meta.owner_conninfo, "preview-change", "remove", w.a]) == 2
    assert ("remove needs --workspace and --datatable: the data table to remove the role from"
            in capsys.readouterr().err)
    # the worker may not preview
    assert main(["--dsn", w.meta.worker_conninfo, "preview-change", "disable", w.b]) == 1
    assert "PermissionDenied" in capsys.readouterr().err
