"""``doctor`` (datatable_roles.doctor.run_doctor): a healthy install passes every check; each
thing an operator gets wrong, done to it one at a time, fails the check that names it, with a
fix, and applying that fix makes the install healthy again. Failed checks never raise."""

from __future__ import annotations

import contextlib
import json
import secrets
import time
import uuid
from collections.abc import Sequence

import pytest
import psycopg
from psycopg import sql

from datatable_roles.doctor import Check, DoctorReport, HbaRule, hba_first_match, run_doctor
from datatable_roles.errors import DatatableRolesError
from datatable_roles.migrate import BOOTSTRAP_SQL, functions_digest, migrate
from datatable_roles.scram import scram_sha256_verifier
from support import ACME, DT, WS, self_hosted_only

ALL_CHECKS = ["owner", "bootstrap", "migrations", "functions_digest", "worker_grants",
              "datatable_link", "admin_password", "servers", "connect_grants", "pg_hba",
              "login_reach", "policies"]


@pytest.fixture
def bare_env(make_world):
    """support.ACME with a one-role login (alice) and a set login (carol) handed out, under
    the throwaway cluster's pg_hba.conf (which lets every login in everywhere)."""
    w = make_world(**ACME)
    w.owner.set_datatable_default_role(WS, DT, None)
    w.worker.resolve(w.job("alice"), DT)
    w.worker.resolve(w.job("carol"), DT)
    return w


@pytest.fixture
def env(bare_env, uid):
    """bare_env with docs/trust.md's pg_hba.conf lines for its instance in place."""
    with documented_hba(bare_env, uid):
        yield bare_env


def _hba_file(cluster) -> tuple[str, str]:
    with cluster.connect_super() as conn:
        return conn.execute("SELECT current_setting('hba_file'),"
                            " pg_read_file(current_setting('hba_file'))").fetchone()


def _write_hba(cluster, path: str, text: str) -> None:
    """pg_hba.conf written by the server (lo_export), checked to parse, and reloaded."""
    with cluster.connect_super() as conn:
        with conn.transaction():
            (oid,) = conn.execute("SELECT lo_from_bytea(0, convert_to(%s, 'UTF8'))",
                                  [text]).fetchone()
            conn.execute("SELECT lo_export(%s, %s)", [oid, path])
            conn.execute("SELECT lo_unlink(%s)", [oid])
        bad = conn.execute("SELECT line_number, error FROM pg_hba_file_rules"
                           " WHERE error IS NOT NULL").fetchall()
        assert not bad, bad
        conn.execute("SELECT pg_reload_conf()")


def _socket_refuses(w, login: str, password: str) -> bool:
    try:
        psycopg.connect(w.cluster.conninfo(login, password, "postgres"), connect_timeout=5).close()
        return False
    except psycopg.OperationalError as e:
        return "pg_hba.conf rejects" in str(e)


@contextlib.contextmanager
def documented_hba(w, uid: str, socket_line: bool = True, first: Sequence[str] = ()):
    """docs/trust.md's lines, with the instance's names, before the cluster's own (and the
    lines ``first`` before them); restored when the block ends. A probe login in the login
    group tells when each file is loaded (a reload is asynchronous)."""
    report = w.owner.status_report()
    group, link = report["login_group"], report["link_login"]
    c = w.cluster
    own = ",".join([c.owner, c.worker, link])
    lines = [
        *first,
        f"local  all  {own}  scram-sha-256",
        f"host  all  {own}  127.0.0.1/32  scram-sha-256",
        f"host  {w.dbname}  {w.admin_login}  127.0.0.1/32  scram-sha-256",
        f"host  {w.dbname}  +{group}  all  scram-sha-256",
        f"local  all  +{group}  reject",
        f"host  all  +{group}  all  reject",
    ]
    if not socket_line:  # what trust.md said before issue 21: host lines only
        lines.remove(f"local  all  +{group}  reject")
    probe, probe_pw = f"{uid}_hba_{secrets.token_hex(3)}", secrets.token_hex(12)
    w.su("postgres").execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}").format(
        sql.Identifier(probe), sql.Literal(scram_sha256_verifier(probe_pw)),
        sql.Identifier(group)))
    path, original = _hba_file(c)

    def wait_for(refused: bool) -> None:
        deadline = time.monotonic() + 15
        while _socket_refuses(w, probe, probe_pw) != refused:
            if not socket_line and refused:  # the socket stays open: wait for TCP instead
                try:
                    psycopg.connect(w.cluster.conninfo(probe, probe_pw, "postgres", tcp=True),
                                    connect_timeout=5).close()
                except psycopg.OperationalError as e:
                    if "pg_hba.conf rejects" in str(e):
                        return
            assert time.monotonic() < deadline, "pg_hba.conf reload not seen"
            time.sleep(0.05)

    _write_hba(c, path, "\n".join(lines) + "\n" + original)
    try:
        wait_for(True)
        yield lines
    finally:
        _write_hba(c, path, original)
        wait_for(False)


def doctor(w) -> DoctorReport:
    return run_doctor(w.meta.owner_conninfo)


def failed(report: DoctorReport) -> list[str]:
    return [c.label for c in report.checks if not c.ok]


def assert_healthy(report: DoctorReport) -> None:
    assert report.ok, report.render()
    assert failed(report) == []


def only_failure(report: DoctorReport, name: str, subject: str | None = None) -> Check:
    """The one failed check, which must be ``name`` (``subject``), with a fix."""
    check = report.check(name, subject)
    assert not check.ok and not report.ok, report.render()
    assert failed(report) == [check.label], report.render()
    assert check.fix, check
    text = report.render()
    assert f"FAIL  {check.label}: " in text and "fix: " in text
    return check


# ---- healthy ----------------------------------------------------------------------------


def test_a_healthy_install_passes_every_check(env):
    report = doctor(env)
    assert_healthy(report)
    assert [c.name for c in report.checks if c.subject is None] == [
        n for n in ALL_CHECKS if n not in ("datatable_link", "admin_password", "policies")]
    assert report.check("datatable_link", env.dbname).ok
    assert report.check("admin_password", f"{WS}/{DT}").ok
    assert report.check("policies", env.dbname).detail.startswith("2 policies")
    assert "2 live generated login(s)" in report.check("connect_grants").detail
    # The owner may not read pg_hba_file_rules: not checked, with the lines to add.
    hba = report.check("pg_hba")
    assert hba.ok and hba.skipped and hba.status == "skipped"
    link = env.owner.status_report()["link_login"]
    group = env.owner.status_report()["login_group"]
    assert f"+{group}  all  reject" in hba.fix and link in hba.fix
    assert "GRANT SELECT ON pg_catalog.pg_hba_file_rules" in hba.fix
    text = report.render()
    assert text.splitlines()[-1].endswith("0 failed, 1 not checked (healthy)")
    assert "skip  pg_hba" in text and "to check by hand:" in text
    data = json.loads(report.to_json())
    assert data["ok"] is True and [c["name"] for c in data["checks"]][:5] == ALL_CHECKS[:5]
    assert report.to_dict()["checks"][0]["status"] == "ok"
    # nothing prints a password
    for secret in (env.admin_password, env.cluster.owner_password):
        assert secret not in text and secret not in report.to_json()


# ---- broken one thing at a time, then fixed ---------------------------------------------


def test_worker_without_execute_on_resolve(env):
    worker = env.cluster.worker
    env.call(f"REVOKE EXECUTE ON FUNCTION public.resolve_datatable_role(uuid, text, text,"
             f" boolean) FROM {worker}")
    check = only_failure(doctor(env), "worker_grants")
    assert f"worker {worker} lacks resolve_datatable_role" in check.detail
    assert check.fix == f"As the package owner: SELECT datatable_roles.grant_worker('{worker}');"
    env.call("SELECT datatable_roles.grant_worker(%s)", [worker])  # the fix
    assert_healthy(doctor(env))


def test_admin_password_changed_outside_the_package(env):
    new_password = uuid.uuid4().hex
    env.su("postgres").execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
        sql.Identifier(env.admin_login), sql.Literal(scram_sha256_verifier(new_password))))
    check = only_failure(doctor(env), "admin_password", f"{WS}/{DT}")
    assert "changed outside the package" in check.detail and env.admin_login in check.detail
    assert f"SELECT set_datatable_admin_password('{WS}', '{DT}', " in check.fix
    env.owner.set_datatable_admin_password(WS, DT, new_password)  # the fix
    assert_healthy(doctor(env))


def test_connect_granted_to_public_on_a_data_table_database(env):
    env.su("postgres").execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO PUBLIC").format(
        sql.Identifier(env.dbname)))
    check = only_failure(doctor(env), "connect_grants")
    assert f"PUBLIC has CONNECT on data table database(s) {env.dbname}" in check.detail
    statement = f"REVOKE CONNECT ON DATABASE {env.dbname} FROM PUBLIC;"
    assert statement in check.fix
    env.call(statement)  # the fix, as the package owner
    assert_healthy(doctor(env))


def test_policy_naming_a_dropped_role(env, uid):
    gone = f"{uid}_gone"
    su = env.su("postgres")
    su.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(gone)))
    with env.cluster.connect_super(env.dbname) as conn:
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(env.admin_login)))
        conn.execute(sql.SQL(
            "CREATE POLICY ghostly ON orders FOR SELECT"
            " USING (pg_has_role(current_user, {}, 'member'))").format(sql.Literal(gone)))
    assert_healthy(doctor(env))  # the role exists yet
    su.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(gone)))
    check = only_failure(doctor(env), "policies", env.dbname)
    assert (f"policy ghostly on public.orders (USING) names missing role {gone}"
            in check.detail)
    assert "DROP POLICY ghostly ON public.orders;" in check.fix
    with env.cluster.connect_super(env.dbname) as conn:  # the fix
        conn.execute("DROP POLICY ghostly ON orders")
    assert_healthy(doctor(env))


def test_functions_digest_changed(env):
    env.su(env.meta.name).execute("UPDATE datatable_roles.settings SET functions_sha256 = 'x'")
    check = only_failure(doctor(env), "functions_digest")
    assert f"installed functions x are not this package's {functions_digest()[:12]}" in (
        check.detail)
    assert "datatable-roles --dsn <metadata DSN> migrate" in check.fix
    migrate(env.meta.owner_conninfo)  # the fix
    assert_healthy(doctor(env))


@self_hosted_only
def test_a_bootstrap_without_the_role_guard(env):
    """An install bootstrapped before the role guard: on 16+ the bootstrap check names it
    (the sweep still works, as the owner, but slower with every role it made); running the
    bootstrap again is the fix. On 15 the package does not use the guard."""
    su = env.su(env.meta.name)
    su.execute("DROP FUNCTION datatable_roles_guard.drop_login(text)")
    report = doctor(env)
    if int(su.execute("SHOW server_version_num").fetchone()[0]) < 160000:
        assert_healthy(report)
    else:
        check = only_failure(report, "bootstrap")
        assert "the role guard datatable_roles_guard.create_login/drop_login/sessions_of is " \
            "missing" in check.detail
        assert f"-v owner={env.cluster.owner} -f " in check.fix
    env.cluster.psql_file(BOOTSTRAP_SQL, env.meta.name, owner=env.cluster.owner)  # the fix
    assert_healthy(doctor(env))


def test_link_login_password_changed(env):
    """The package's own dblink sessions fail: the link check says why, the policies of that
    database are not checked, and rotating the link login's password heals it."""
    link = env.owner.status_report()["link_login"]
    env.su("postgres").execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
        sql.Identifier(link), sql.Literal(scram_sha256_verifier(uuid.uuid4().hex))))
    report = doctor(env)
    check = only_failure(report, "datatable_link", env.dbname)
    assert "password authentication failed" in check.detail
    assert "SELECT datatable_roles.rotate_link_login();" in check.fix
    policies = report.check("policies", env.dbname)
    assert policies.ok and policies.skipped
    env.call("SELECT datatable_roles.rotate_link_login()")  # the fix
    assert_healthy(doctor(env))


def test_owner_without_the_admin_login(env):
    owner = env.cluster.owner
    env.su("postgres").execute(sql.SQL("REVOKE {} FROM {} CASCADE").format(
        sql.Identifier(env.admin_login), sql.Identifier(owner)))
    report = doctor(env)
    check = report.check("owner")
    assert not check.ok, report.render()
    assert (f"{owner} does not hold the privileges of admin login {env.admin_login}"
            in check.detail)
    assert f"GRANT {env.admin_login} TO {owner}" in check.fix


def test_owner_without_admin_option_on_16(env):
    """PostgreSQL 16 and later: membership alone is not enough (docs/operating.md)."""
    if int(env.su("postgres").execute("SHOW server_version_num").fetchone()[0]) < 160000:
        pytest.skip("ADMIN OPTION is needed from PostgreSQL 16 on")
    owner = env.cluster.owner
    env.su("postgres").execute(sql.SQL("REVOKE ADMIN OPTION FOR {} FROM {} CASCADE").format(
        sql.Identifier(env.admin_login), sql.Identifier(owner)))
    report = doctor(env)
    check = report.check("owner")
    assert not check.ok, report.render()
    assert f"holds admin login {env.admin_login} without ADMIN OPTION" in check.detail
    assert f"GRANT {env.admin_login} TO {owner} WITH ADMIN OPTION;" in check.fix


def test_pg_hba_read_when_the_owner_may(bare_env):
    """With pg_hba_file_rules readable, the rules are evaluated: the throwaway cluster's
    pg_hba.conf lets everyone in with scram-sha-256 and rejects no generated login, so
    generated logins reach database postgres over the socket and TCP (docs/trust.md's reject
    lines are missing); the fix names no refused database."""
    env = bare_env
    owner = env.cluster.owner
    su = env.su(env.meta.name)  # privileges on a catalog view are the database's
    su.execute(sql.SQL("GRANT SELECT ON pg_catalog.pg_hba_file_rules TO {};"
                       " GRANT EXECUTE ON FUNCTION pg_catalog.pg_hba_file_rules() TO {}").format(
        sql.Identifier(owner), sql.Identifier(owner)))
    try:
        report = doctor(env)
    finally:
        su.execute(sql.SQL("REVOKE SELECT ON pg_catalog.pg_hba_file_rules FROM {};"
                           " REVOKE EXECUTE ON FUNCTION pg_catalog.pg_hba_file_rules() FROM {}"
                           ).format(sql.Identifier(owner), sql.Identifier(owner)))
    assert failed(report) == ["pg_hba", "login_reach"], report.render()
    check = report.check("pg_hba")
    assert not check.skipped
    group = env.owner.status_report()["login_group"]
    assert f"generated logins (+{group}) may connect to " in check.detail
    assert "postgres" in check.detail
    assert "(line 2, local scram-sha-256)" in check.detail
    assert "(line 3, host scram-sha-256)" in check.detail
    assert "no line lets" not in check.detail  # the link, admin and set logins get in
    assert f"local  all  +{group}  reject" in check.fix
    assert f"host  all  +{group}  all  reject" in check.fix
    assert "postgres" not in check.fix and "template1" not in check.fix


def test_a_generated_login_that_opens_postgres_over_the_socket_is_reported(bare_env, uid):
    """Issue 21 item 12: with trust.md's old host-only lines, doctor said healthy while a
    generated login opened postgres and template1 over the local socket. It now tries: a
    real login attempt, over the socket and TCP, as a live generated login."""
    env = bare_env
    group = env.owner.status_report()["login_group"]
    # the cluster's own pg_hba.conf: in everywhere, both ways
    check = only_failure(doctor(env), "login_reach")
    for db in ("postgres", "template1"):
        assert (f"{db} over the socket (with its password) and TCP (with its password)"
                in check.detail), check.detail
    assert f"local  all  +{group}  reject" in check.fix
    assert "postgres" not in check.fix and "template1" not in check.fix
    # host lines only: the socket still lets it in, and that is what is reported
    with documented_hba(env, uid, socket_line=False):
        check = only_failure(doctor(env), "login_reach")
        assert "postgres over the socket" in check.detail
        assert "over the TCP" not in check.detail
    # the documented lines: refused everywhere but its own database
    with documented_hba(env, uid):
        report = doctor(env)
        assert_healthy(report)
        reach = report.check("login_reach")
        assert "refused on" in reach.detail and "over the socket and TCP" in reach.detail
        assert "postgres" in reach.detail and "template1" in reach.detail


# ---- who connects -------------------------------------------------------------------------


def test_not_the_owner_is_reported_not_raised(env):
    report = run_doctor(env.meta.worker_conninfo)
    assert not report.ok
    owner = report.check("owner")
    assert not owner.ok and "does not hold the privileges of the package owner" in owner.detail
    assert report.check("bootstrap").ok
    skipped = [c.name for c in report.checks if c.skipped]
    assert skipped == ALL_CHECKS[2:]


def test_a_superuser_may_run_it(bare_env):
    env = bare_env
    report = run_doctor(env.meta.super_conninfo)
    assert report.check("owner").ok, report.render()
    assert "connected as postgres, which holds its privileges" in report.check("owner").detail
    # a superuser reads pg_hba.conf: the missing reject lines show, as does the reach
    assert failed(report) == ["pg_hba", "login_reach"], report.render()


def test_a_database_without_the_package(cluster, scratch, uid):
    """Before the bootstrap: what is missing is reported (with the commands), not raised."""
    dbname = scratch.database(f"{uid}_empty")
    report = run_doctor(cluster.owner_conninfo(dbname))
    assert failed(report) == ["owner", "bootstrap", "migrations"], report.render()
    assert f"lacks CREATE on database {dbname}" in report.check("owner").detail
    assert f"-v owner={cluster.owner} -f " in report.check("bootstrap").fix
    assert "migrate" in report.check("migrations").fix
    assert all(c.skipped for c in report.checks[3:])


def test_an_unreachable_metadata_database_raises():
    with pytest.raises(DatatableRolesError):
        run_doctor("host=/nonexistent/dir port=1 connect_timeout=2")


# ---- the CLI ------------------------------------------------------------------------------


def test_cli_doctor(env, capsys):
    """`datatable-roles doctor [--json]`: exit 0 when healthy, 3 when a check failed."""
    from datatable_roles import cli
    dsn = env.meta.owner_conninfo
    assert cli.main(["--dsn", dsn, "doctor"]) == 0
    out = capsys.readouterr().out
    assert "ok    worker_grants: " in out and out.rstrip().endswith("(healthy)")
    env.call(f"REVOKE EXECUTE ON FUNCTION public.cached_result_path(uuid, text, jsonb)"
             f" FROM {env.cluster.worker}")
    assert cli.main(["--dsn", dsn, "doctor", "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert [c["name"] for c in data["checks"] if not c["ok"]] == ["worker_grants"]


# ---- pg_hba matching, without a server ----------------------------------------------------------


def rule(line, type_, dbs, users, address=None, netmask=None, method="scram-sha-256"):
    return HbaRule(line, type_, tuple(dbs), tuple(users), address, netmask, method)


def test_hba_first_match():
    rules = [
        rule(1, "local", ["all"], ["postgres"], method="trust"),
        rule(2, "host", ["all"], ["dtr_owner", "dtr_link_1"], "127.0.0.1", "255.255.255.255"),
        rule(3, "host", ["postgres", "template1", "meta"], ["+dtr_logins_1"], "all",
             method="reject"),
        rule(4, "hostssl", ["/^dt_"], ["all"], "10.0.0.0", "255.0.0.0", method="md5"),
        rule(5, "host", ["all"], ["all"], "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
        rule(6, "host", ["all"], ["all"], "127.0.0.1", "255.255.255.255", method="trust"),
    ]
    first = lambda **kw: (hba_first_match(rules, **kw) or rule(0, "", [], [])).line  # noqa: E731
    assert first(dbname="dt_x", user="dtr_link_1", client="127.0.0.1") == 2
    # a generated login: refused on postgres, by membership in the login group
    assert first(dbname="postgres", user="wm_set_ab", member_of={"dtr_logins_1"},
                 client="127.0.0.1") == 3
    assert first(dbname="postgres", user="wm_set_ab", client="127.0.0.1") == 6
    assert first(dbname="dt_x", user="wm_set_ab", member_of={"dtr_logins_1"},
                 client="10.1.2.3") == 4
    assert first(dbname="other", user="wm_set_ab", client="10.1.2.3") == 0  # no line
    assert first(dbname="dt_x", user="u", client="::1") == 5
    assert first(dbname="dt_x", user="u", client="localhost") == 6
    assert first(dbname="x", user="postgres", local=True) == 1
    broken = [HbaRule(1, "host", ("all",), ("all",), "all", None, None, error="bad"),
              rule(2, "host", ["all"], ["all"], "all", method="reject")]
    assert hba_first_match(broken, dbname="d", user="u", client="1.2.3.4").line == 2
