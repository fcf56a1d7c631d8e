"""``servers``: each other server data tables are on (docs/servers.md) takes its manager's
login, has applied every role change, and its data tables' admin logins log in. For each
server that passes, what the manager reads there (:data:`FAR_CATALOG`) is kept in
``ctx.far`` for the connect_grants, login_reach and policies checks."""

from __future__ import annotations

import json
from typing import Any

from psycopg import sql

from ..errors import redact
from .context import _Context
from .report import Check


# What the CONNECT, reach and policy checks need from a server, read there by its manager in
# one statement (value_as_manager, in the package's kept session): data table databases
# PUBLIC may open ('open'), other databases PUBLIC may open ('public_dbs'), CONNECT held
# by catalog roles ('role_grants'), each live login's CONNECT on its database and elsewhere
# ('logins'), and every role name there ('roles').
FAR_CATALOG = sql.SQL("""SELECT json_build_object(
 'open', (SELECT coalesce(json_agg(d.datname::text ORDER BY d.datname), '[]')
   FROM pg_database AS d WHERE d.datname::text = ANY({dbs})
   AND has_database_privilege('public', d.oid, 'CONNECT')),
 'public_dbs', (SELECT coalesce(json_agg(d.datname::text ORDER BY d.datname), '[]')
   FROM pg_database AS d WHERE d.datallowconn AND NOT d.datname::text = ANY({dbs})
   AND has_database_privilege('public', d.oid, 'CONNECT')),
 'role_grants', (SELECT coalesce(json_agg(json_build_array(pr.rolname::text, d.datname::text)
   ORDER BY pr.rolname, d.datname), '[]')
   FROM pg_roles AS pr JOIN pg_database AS d ON true CROSS JOIN LATERAL aclexplode(d.datacl) AS a
   WHERE pr.rolname::text = ANY({roles}) AND a.grantee = pr.oid AND a.privilege_type = 'CONNECT'),
 'logins', (SELECT coalesce(json_agg(json_build_array(l.login, l.db,
   NOT EXISTS (SELECT FROM pg_database AS d WHERE d.datname::text = l.db)
   OR has_database_privilege(r.oid, l.db, 'CONNECT'),
   ARRAY(SELECT d.datname::text FROM pg_database AS d CROSS JOIN LATERAL aclexplode(d.datacl) AS a
    WHERE a.grantee = r.oid AND a.privilege_type = 'CONNECT' AND d.datname::text <> l.db
    ORDER BY 1)) ORDER BY l.login), '[]')
   FROM json_to_recordset({logins}) AS l (login text, db text)
   JOIN pg_roles AS r ON r.rolname::text = l.login WHERE r.rolcanlogin),
 'roles', (SELECT json_agg(r.rolname::text) FROM pg_roles AS r))::text""")


def _json_array(values: list[str]) -> sql.Composable:
    return sql.SQL("ARRAY(SELECT json_array_elements_text({}::json))").format(
        sql.Literal(json.dumps(values)))


def read_far_catalog(ctx: _Context, server: str) -> dict[str, Any]:
    dbs = sorted({d["dbname"] for d in ctx.far_datatables if d.get("server") == server})
    roles = [r[0] for r in ctx.rows(
        "SELECT r.name FROM datatable_roles.server_role AS sr"
        " JOIN datatable_roles.catalog_role AS r ON r.id = sr.role_id"
        " WHERE sr.server = %s ORDER BY 1", [server])]
    logins = [{"login": login, "db": db} for login, db in ctx.rows(
        "SELECT s.login, s.dbname FROM datatable_roles.datatable_role_set AS s"
        " WHERE s.server = %s AND s.password <> '' ORDER BY 1", [server])]
    query = FAR_CATALOG.format(dbs=_json_array(dbs), roles=_json_array(roles),
                               logins=sql.Literal(json.dumps(logins)))
    return json.loads(ctx.value("SELECT datatable_roles.value_as_manager(%s, %s)",
                                [server, query.as_string(ctx.conn)]))


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
        ctx.far[name] = read_far_catalog(ctx, name)
        checks.append(Check("servers", True,
                            f"server {name} ({where}): the manager {server['manager_login']} "
                            f"logs in, nothing pending, {count} data table(s)", subject=name))
    return checks
