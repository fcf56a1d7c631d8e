"""``servers``: each other server data tables are on (docs/servers.md) takes its manager's
login, has applied every role change, and its data tables' admin logins log in."""

from __future__ import annotations

from ..errors import redact
from .context import _Context
from .report import Check


def check_servers(ctx: _Context) -> list[Check]:
    servers = [s for s in (ctx.status or {}).get("servers", []) if s["name"] != "local"]
    if not servers:
        return [Check("servers", True, "no other server registered (every data table is on "
                      "this cluster)")]
    checks = []
    for server in servers:
        name = server["name"]
        failure = ctx.value(
            "SELECT datatable_roles.login_fails_on(sv.name, sv.maintenance_db,"
            " sv.manager_login, sv.manager_password) FROM datatable_roles.server AS sv"
            " WHERE sv.name = %s", [name])
        where = f"{server['host']}:{server['port']}"
        if failure is not None:
            reason = redact(" ".join(str(failure).split())) or "refused"
            checks.append(Check(
                "servers", False,
                f"the manager login {server['manager_login']} cannot log in to server {name} "
                f"({where}): {reason}",
                "Make the server reachable from the metadata database (TCP, its sslmode) and "
                "check the manager's password there; the package's changes for it wait "
                "meanwhile (docs/servers.md).", subject=name))
            continue
        first = server.get("first_pending")
        if server["pending"]:
            checks.append(Check(
                "servers", False,
                f"server {name} has {server['pending']} change(s) not applied (first: "
                f"{first['what']}, tried {first['tries']} times: "
                f"{redact(first.get('last_error') or '') or 'not yet tried'}); its data "
                "tables are refused until they are",
                "Run the sweep (it applies them), or fix what the error says there.",
                subject=name))
            continue
        refused = [f"{d['workspace']}/{d['name']}" for d in ctx.far_datatables
                   if d.get("server") == name and d.get("admin_password_ok") is False]
        if refused:
            checks.append(Check(
                "servers", False,
                f"on server {name}, the admin login of {', '.join(refused)} does not log in "
                "with the password the package holds",
                "As the package owner: datatable-roles set-admin-password WORKSPACE NAME",
                subject=name))
            continue
        count = sum(1 for d in ctx.far_datatables if d.get("server") == name)
        checks.append(Check("servers", True,
                            f"server {name} ({where}): the manager {server['manager_login']} "
                            f"logs in, nothing pending, {count} data table(s)", subject=name))
    return checks
