"""The admin password an operator gives (register-datatable, set-admin-password) reaches no
server log: not as statement text, not as a bind parameter with log_statement=all, and not in
the STATEMENT line the server logs for a failed statement (log_min_error_statement), a
mistyped password included. The real CLI, in-process, against the real cluster."""

from __future__ import annotations

import secrets

from psycopg import sql

from datatable_roles import cli
from datatable_roles.scram import scram_sha256_verifier
from support import connect

WS = "acme"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_register_and_set_admin_password_leave_no_password_in_the_log(
        cluster, meta_db, datatable_db, tmp_path, monkeypatch, capsys):
    dt = datatable_db()
    with connect(meta_db.owner_conninfo) as owner:
        owner.execute("SELECT add_workspace(%s)", [WS])
    wrong = secrets.token_hex(16)
    new = secrets.token_hex(16)
    canary = secrets.token_hex(16)
    start = cluster.log_path.stat().st_size
    cluster.set_setting("log_statement", "all")
    try:
        # a mistyped password: refused, and the failed statement is logged
        monkeypatch.setenv("DTR_TEST_ADMIN_PASSWORD", wrong)
        code, out, err = run(capsys, "--dsn", meta_db.owner_conninfo, "register-datatable",
                             WS, "hr", dt.dbname, dt.admin_login,
                             "--password-env", "DTR_TEST_ADMIN_PASSWORD")
        assert code == 1 and out == "" and "InvalidPassword" in err and wrong not in err
        # the right one, from a file
        secret_file = tmp_path / "pw"
        secret_file.write_text(dt.admin_password + "\n")
        code, out, err = run(capsys, "--dsn", meta_db.owner_conninfo, "--json",
                             "register-datatable", WS, "hr", dt.dbname, dt.admin_login,
                             "--password-file", str(secret_file))
        assert code == 0, err
        # the admin password changed outside the package, then given to it
        with connect(cluster.superuser_conninfo(dt.dbname)) as su:
            su.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(dt.admin_login), sql.Literal(scram_sha256_verifier(new))))
        monkeypatch.setenv("DTR_TEST_ADMIN_PASSWORD", new)
        code, out, err = run(capsys, "--dsn", meta_db.owner_conninfo, "set-admin-password",
                             WS, "hr", "--password-env", "DTR_TEST_ADMIN_PASSWORD")
        assert code == 0, err
        assert "the package has the admin login's new password" in out
        # positive control: a value sent as a bind parameter does reach this log
        with connect(meta_db.owner_conninfo) as owner:
            owner.execute("SELECT %s::text", [canary])
    finally:
        cluster.set_setting("log_statement", None)
    log = cluster.log_path.read_bytes()[start:].decode("utf-8", errors="replace")
    assert canary in log and "register_datatable" in log and "ERROR:" in log
    for password in (wrong, dt.admin_password, new):
        assert password not in log


def test_no_terminal_and_no_source_is_a_usage_error(meta_db, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, out, err = run(capsys, "--dsn", meta_db.owner_conninfo, "register-datatable",
                         WS, "hr", "db", "admin")
    assert code == 2 and "no terminal to ask for the password on" in err
    code, out, err = run(capsys, "--dsn", meta_db.owner_conninfo, "set-admin-password", WS,
                         "hr", "--password-env", "DTR_TEST_SURELY_UNSET")
    assert code == 2 and "DTR_TEST_SURELY_UNSET: the variable is not set or empty" in err


def test_register_server_and_a_far_data_table_leave_no_password_in_either_log(
        cluster, meta_db, remote, uid, monkeypatch, capsys):
    """register-server (the manager's password) and register-datatable --server (the admin's
    there): neither password in this cluster's log nor the other server's, a mistyped one
    included."""
    with connect(meta_db.owner_conninfo) as owner:
        owner.execute("SELECT add_workspace(%s)", [WS])
    dbname, admin = f"{uid}_farsecret", f"{uid}_farsecret_admin"
    admin_password = remote.datatable_db(dbname, admin)
    wrong = secrets.token_hex(16)
    starts = (cluster.log_path.stat().st_size, remote.cluster.log_path.stat().st_size)
    for c in (cluster, remote.cluster):
        c.set_setting("log_statement", "all")
    try:
        monkeypatch.setenv("DTR_TEST_MANAGER_PASSWORD", wrong)
        code, out, err = run(capsys, "--dsn", meta_db.owner_conninfo, "register-server", "b",
                             "127.0.0.1", str(remote.cluster.port), "dtr_manager", "--sslmode",
                             "disable", "--password-env", "DTR_TEST_MANAGER_PASSWORD")
        assert code == 1 and "InvalidPassword" in err and wrong not in err, err
        monkeypatch.setenv("DTR_TEST_MANAGER_PASSWORD", remote.manager_password)
        code, out, err = run(capsys, "--dsn", meta_db.owner_conninfo, "register-server", "b",
                             "127.0.0.1", str(remote.cluster.port), "dtr_manager", "--sslmode",
                             "disable", "--password-env", "DTR_TEST_MANAGER_PASSWORD")
        assert code == 0 and "registered server b" in out, err
        monkeypatch.setenv("DTR_TEST_ADMIN_PASSWORD", admin_password)
        code, out, err = run(capsys, "--dsn", meta_db.owner_conninfo, "register-datatable",
                             WS, "far", dbname, admin, "--server", "b",
                             "--password-env", "DTR_TEST_ADMIN_PASSWORD")
        assert code == 0 and "on server b" in out, err
    finally:
        for c in (cluster, remote.cluster):
            c.set_setting("log_statement", None)
        remote.drop(dbname, uid)
    logs = [c.log_path.read_bytes()[start:].decode("utf-8", errors="replace")
            for c, start in zip((cluster, remote.cluster), starts)]
    assert "register_datatable_server" in logs[0] and "GRANT CONNECT" in logs[1]
    for log in logs:
        for password in (wrong, remote.manager_password, admin_password):
            assert password not in log
