"""Per data table: ``datatable_link`` (the link login logs in to its database and holds its
admin logins) and ``admin_password`` (the admin login has the package's password, and logs
in with it)."""

from __future__ import annotations

from ..errors import redact
from .context import _Context
from .quoting import _hba_cidr, _hba_name, _ident, _literal, _names
from .report import Check


# ---- data tables: the link, the admin password ------------------------------------------

def _link_fix(ctx: _Context, dbname: str, reason: str) -> str:
    link = ctx.link_login or "<link login>"
    host = ctx.settings.get("link_host", "127.0.0.1")
    low = reason.lower()
    if "password authentication failed" in low:
        return ("The link login's password is not the package's (changed outside it?). As "
                "the package owner: SELECT datatable_roles.rotate_link_login(); (or run the "
                "sweep, which rotates it)")
    if "pg_hba.conf" in low:
        return (f"pg_hba.conf must let the link login in with a password from "
                f"settings.link_host ({host}), before any reject line, e.g.:\n"
                f"host  {_hba_name(dbname)}  {_hba_name(link)}  {_hba_cidr(host)}  "
                "scram-sha-256\nthen reload (SELECT pg_reload_conf() as a superuser).")
    if "permission denied" in low or "connect privilege" in low:
        return ("The link login may not connect there: it connects through its membership "
                f"in the database's admin login. As the package owner: GRANT <admin login> "
                f"TO {_ident(link)};")
    if "does not exist" in low and "database" in low:
        return (f"Database {dbname} is gone: create it again, owned by its admin login (the "
                "package has no call that unregisters a data table).")
    return (f"Check that the server accepts TCP connections at settings.link_host ({host}) on "
            "its own port, and that pg_hba.conf lets the link login in with scram-sha-256; "
            "as the package owner: UPDATE datatable_roles.settings SET link_host = '<address>'"
            " changes where the package connects.")


def check_datatable_link(ctx: _Context) -> list[Check]:
    if not ctx.datatables:
        return [Check("datatable_link", True, "no data table registered yet")]
    if ctx.link_login is None:
        return [Check("datatable_link", False, "the package has no link login",
                      "As the package owner: SELECT datatable_roles.renew_link_login();")]
    checks = []
    for dbname in ctx.databases:
        admins = sorted({d["admin_login"] for d in ctx.datatables if d["dbname"] == dbname})
        failure = ctx.value(
            "SELECT datatable_roles.login_fails(%s, c.login, c.password)"
            " FROM datatable_roles.link_credential AS c", [dbname])
        ctx.reachable[dbname] = failure is None
        if failure is not None:
            reason = redact(" ".join(str(failure).split())) or "refused"
            checks.append(Check("datatable_link", False,
                                f"the link login {ctx.link_login} cannot log in to {dbname}: "
                                f"{reason}", _link_fix(ctx, dbname, reason), subject=dbname))
            continue
        not_held = [a for a in admins if not ctx.value(
            "SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = %s)"
            " AND datatable_roles.link_holds(%s)", [a, a])]
        if not_held:
            checks.append(Check(
                "datatable_link", False,
                f"the link login {ctx.link_login} does not hold admin login(s) "
                f"{_names(not_held)} (objects of swept logins cannot move to them)",
                "\n".join(f"As the package owner: GRANT {_ident(a)} TO "
                          f"{_ident(ctx.link_login)};" for a in not_held)
                + "\n(after pg_upgrade from 15: run sql/after-pg-upgrade.sql as a superuser)",
                subject=dbname))
            continue
        checks.append(Check("datatable_link", True,
                            f"the link login {ctx.link_login} logs in from "
                            f"{ctx.settings.get('link_host', '?')} and holds {_names(admins)}",
                            subject=dbname))
    return checks


def check_admin_password(ctx: _Context) -> list[Check]:
    if not ctx.datatables:
        return [Check("admin_password", True, "no data table registered yet")]
    checks = []
    for d in ctx.datatables:
        ws, name, dbname, admin = d["workspace"], d["name"], d["dbname"], d["admin_login"]
        subject = f"{ws}/{name}"
        set_fix = (f"As the package owner: SELECT set_datatable_admin_password("
                   f"{_literal(ws)}, {_literal(name)}, '<the current password of {admin}>');")
        ok = d.get("admin_password_ok")
        if ok is False:
            checks.append(Check(
                "admin_password", False,
                f"admin login {admin} does not log in with the password the package holds "
                "(changed outside the package?): a job's connection as admin is refused, and "
                "heal_refused_login reports 55000", set_fix, subject=subject))
            continue
        if ok is None:
            exists, superuser, verifier = ctx.rows(
                "SELECT r.oid IS NOT NULL, coalesce(r.rolsuper, false),"
                " d.admin_verifier IS NOT NULL FROM datatable_roles.datatable AS d"
                " LEFT JOIN pg_roles AS r ON r.rolname = d.admin_login"
                " WHERE d.workspace = %s AND d.name = %s", [ws, name])[0]
            if not exists:
                why, fix = (f"admin login {admin} does not exist",
                            f"As a superuser, create {admin} again (LOGIN, owning {dbname}), "
                            f"grant it to the owner, then: {set_fix}")
            elif superuser:
                why, fix = (f"admin login {admin} is a superuser: the package neither checks "
                            "nor hands out such a login safely",
                            f"As a superuser: ALTER ROLE {_ident(admin)} NOSUPERUSER; then: "
                            f"{set_fix}")
            elif not verifier:
                why, fix = ("the package has not set the admin login's password (registered "
                            "before 0012), so it cannot tell if it changes", set_fix)
            else:
                why, fix = "the admin password could not be verified", set_fix
            checks.append(Check("admin_password", False, why, fix, subject=subject))
            continue
        # The verifier is the package's: does the stored password log in from link_host?
        failure = ctx.value(
            "SELECT datatable_roles.login_fails(d.dbname, d.admin_login, d.admin_password)"
            " FROM datatable_roles.datatable AS d WHERE d.workspace = %s AND d.name = %s",
            [ws, name])
        if failure is not None:
            reason = redact(" ".join(str(failure).split())) or "refused"
            host = ctx.settings.get("link_host", "127.0.0.1")
            checks.append(Check(
                "admin_password", False,
                f"admin login {admin} has the package's password but cannot log in to "
                f"{dbname} from {host}: {reason}",
                f"pg_hba.conf must let {admin} in with scram-sha-256 from settings.link_host, "
                f"e.g.:\nhost  {_hba_name(dbname)}  {_hba_name(admin)}  {_hba_cidr(host)}  "
                "scram-sha-256", subject=subject))
            continue
        checks.append(Check("admin_password", True,
                            f"admin login {admin} has the password the package set, and logs "
                            f"in to {dbname}", subject=subject))
    return checks
