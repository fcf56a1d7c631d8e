"""No generated password ever reaches the server log (docs/trust.md), even with
log_statement=all and on every error path: every path that creates, re-keys, heals or
rotates a login or hands out a password runs, then the log written meanwhile is searched
for each of them.
"""

from __future__ import annotations

import secrets
import uuid

import pytest
from psycopg import errors, sql

from datatable_roles.scram import scram_sha256_verifier
from support import DT, World, connect


def resolve(conn, job, role=None):
    return conn.execute(
        "SELECT login, password, roles FROM resolve_datatable_role(%s, %s, %s::text)",
        [job, DT, role]).fetchone()


def record_job(w: World, worker, user, origin, caller=None) -> uuid.UUID:
    job = uuid.uuid4()
    worker.execute("SELECT record_job_start(%s, %s, %s, %s, %s::text)",
                   [job, w.ws, f"u/{user}", origin, caller and w.email(caller)])
    return job


def stored_passwords(w: World) -> set[str]:
    """Every password the package keeps right now (read as superuser)."""
    with connect(w.meta.super_conninfo) as conn:
        rows = conn.execute(
            "SELECT password FROM datatable_roles.datatable_role_set"
            " UNION ALL SELECT password FROM datatable_roles.link_credential"
            " UNION ALL SELECT admin_password FROM datatable_roles.datatable").fetchall()
    return {r[0] for r in rows if r[0]}


def test_no_password_in_server_log(cluster, make_world, uid):
    assert cluster.log_path is not None and cluster.log_path.exists()
    # Registered before logging starts: admin_password is the operator's plaintext, an
    # argument of the fixed interface (with log_statement=all the server logs arguments).
    w = make_world(users={"dave": [], "alice": [], "carol": ["both"], "erin": ["ea"],
                          "root": []}, admins=["root"])
    dbname, admin, admin_password = w.dbname, w.admin_login, w.admin_password
    emea, us, apac = f"{uid}_emea", f"{uid}_us", f"{uid}_apac"

    passwords: set[str] = {admin_password}
    canary = secrets.token_hex(32)  # shaped like a generated password
    start = cluster.log_path.stat().st_size
    cluster.set_setting("log_statement", "all")
    try:
        with w.connect_owner() as owner, w.connect_worker() as worker:
            # create_datatable_role (NOLOGIN, no password); set_datatable_role_enabled
            for role in (emea, us, apac):
                owner.execute("SELECT create_datatable_role(%s)", [role])
            passwords |= stored_passwords(w)
            for role, tenants in ((emea, ["u/alice", "g/both", "g/ea"]),
                                  (us, ["g/both"]), (apac, ["g/ea"])):
                owner.execute("SELECT set_datatable_role_tenants(%s, %s, %s, %s::text[])",
                              [w.ws, DT, role, tenants])
            owner.execute("SELECT set_datatable_default_role(%s, %s, NULL)", [w.ws, DT])
            owner.execute("SELECT set_datatable_role_enabled(%s, false)", [apac])
            owner.execute("SELECT set_datatable_role_enabled(%s, true)", [apac])
            passwords |= stored_passwords(w)

            jobs = {u: record_job(w, worker, "dave", "app", u)
                    for u in ("alice", "carol", "erin")}
            jobs["root"] = record_job(w, worker, "root", "run", "root")
            jobs["nobody"] = record_job(w, worker, "dave", "schedule")

            # One-role login, new set, existing set, admin login.
            returned = [resolve(worker, jobs["alice"]), resolve(worker, jobs["carol"]),
                        resolve(worker, jobs["carol"]), resolve(worker, jobs["root"], "admin")]
            assert [r[2] for r in returned] == [[emea], sorted([emea, us]),
                                                sorted([emea, us]), ["admin"]]
            assert returned[3][:2] == (admin, admin_password)
            set_login, set_password = returned[1][:2]
            assert returned[2][:2] == (set_login, set_password)
            passwords |= {r[1] for r in returned} | stored_passwords(w)

            # The set login owns a table in the data table database (the sweep moves it
            # through the link login, whose password is in link_credential).
            with connect(cluster.conninfo(admin, admin_password, dbname)) as conn:
                conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(
                    sql.Identifier(emea)))
            with connect(cluster.conninfo(set_login, set_password, dbname, tcp=True)) as conn:
                conn.execute("CREATE TABLE made_by_set_login (x int)")

            # A set taken back: empty password in its row -> re-keyed on next use.
            owner.execute("UPDATE datatable_roles.datatable_role_set SET password = ''")
            rekeyed = resolve(worker, jobs["carol"])
            assert rekeyed[0] == set_login and rekeyed[1] != set_password
            passwords |= {rekeyed[1]} | stored_passwords(w)
            with connect(cluster.conninfo(set_login, rekeyed[1], dbname, tcp=True)) as conn:
                assert conn.execute("SELECT current_user").fetchone() == (set_login,)

            # A login whose password a script changed: healed when the worker reports the
            # refused connection (a login attempt with the stored password, over dblink).
            with cluster.connect_super() as su:
                su.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(set_login),
                    sql.Literal(scram_sha256_verifier(secrets.token_hex(16)))))
            assert worker.execute("SELECT heal_refused_login(%s)", [set_login]).fetchone() \
                == ("healed",)
            healed = resolve(worker, jobs["carol"])
            assert healed[0] == set_login and healed[1] != rekeyed[1]
            passwords |= {healed[1]} | stored_passwords(w)

            # Error paths: refusals, bad names, injected faults.
            with pytest.raises(errors.InsufficientPrivilege):
                resolve(worker, jobs["nobody"])                       # R5
            with pytest.raises(errors.InsufficientPrivilege):
                resolve(worker, jobs["alice"], us)                    # R1: not a tenant
            with pytest.raises(errors.InsufficientPrivilege):
                resolve(worker, jobs["alice"], "x'); DROP ROLE postgres; --")
            for bad in ("bad name'; --", f"wm_set_{uid}", "admin", "é" * 40):
                with pytest.raises(errors.InvalidParameterValue):
                    owner.execute("SELECT create_datatable_role(%s)", [bad])
            with pytest.raises(errors.InsufficientPrivilege):
                worker.execute("SELECT password FROM datatable_roles.datatable_role_set")

            worker.execute("SET datatable_roles.fault = 'create:after_create_role'")
            with pytest.raises(errors.InternalError, match="fault injected"):
                resolve(worker, jobs["erin"])                          # a new set
            worker.execute("RESET datatable_roles.fault")
            owner.execute("UPDATE datatable_roles.datatable_role_set SET password = ''")
            worker.execute("SET datatable_roles.fault = 'rekey:after_alter_role'")
            with pytest.raises(errors.InternalError, match="fault injected"):
                resolve(worker, jobs["carol"])                         # a re-key
            worker.execute("RESET datatable_roles.fault")
            after_faults = [resolve(worker, jobs["erin"]), resolve(worker, jobs["carol"])]
            assert [r[2] for r in after_faults] == [sorted([emea, apac]), sorted([emea, us])]
            passwords |= {r[1] for r in after_faults} | stored_passwords(w)

            # Rotation: a day later the sweep gives both live sets (and the link login) new
            # passwords.
            owner.execute("UPDATE datatable_roles.settings SET clock_offset = '25 hours'")
            (report,) = owner.execute("CALL sweep_unused_role_set_logins(NULL)").fetchone()
            assert (report["rotated"], report["dropped"]) == (2, 0), report
            passwords |= stored_passwords(w)

            # Sweep after 31 days (alice's one-role login, carol's and erin's sets), then the
            # swept set made again on demand.
            owner.execute("UPDATE datatable_roles.settings SET clock_offset = '31 days'")
            (report,) = owner.execute("CALL sweep_unused_role_set_logins(NULL)").fetchone()
            assert report["dropped"] == 3 and report["unfinished"] == [], report
            again = resolve(worker, jobs["carol"])
            assert again[0] == set_login
            passwords |= {again[1]} | stored_passwords(w)

            # Positive control: a value sent with a statement does reach the log.
            worker.execute("SELECT %s::text", [canary])
        with connect(cluster.conninfo(admin, admin_password, dbname)) as conn:
            assert conn.execute("SELECT tableowner FROM pg_tables"
                                " WHERE tablename = 'made_by_set_login'").fetchone() == (admin,)
    finally:
        cluster.set_setting("log_statement", None)

    log = cluster.log_path.read_bytes()[start:].decode("utf-8", errors="replace")
    for expected in (canary, "statement: ", "create_datatable_role", "set_datatable_role_enabled",
                     "resolve_datatable_role", "sweep_unused_role_set_logins",
                     "fault injected at create:after_create_role",
                     "fault injected at rekey:after_alter_role", "refused by rule R5",
                     "made_by_set_login"):
        assert expected in log, f"the server log lacks {expected!r}"
    # The admin login; the link login's, rotated twice; alice's one-role login; carol's set:
    # made, re-keyed, healed, re-keyed, rotated, made again after the sweep; erin's set:
    # made, rotated.
    assert len(passwords) == 13, len(passwords)
    leaked = sorted(p for p in passwords if p in log)
    assert not leaked, f"{len(leaked)} password(s) found in {cluster.log_path}"
