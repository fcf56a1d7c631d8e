"""``connect_grants``: who has CONNECT where (docs/trust.md): no PUBLIC on data table
databases, no catalog role anywhere, each generated login on its own database only."""

from __future__ import annotations

from .context import _Context
from .quoting import _ident, _names
from .report import Check


# ---- CONNECT ----------------------------------------------------------------------------

def check_connect_grants(ctx: _Context) -> list[Check]:
    problems, fixes = [], []
    dbs = ctx.databases
    # Data table databases PUBLIC may connect to (register_datatable revoked it).
    open_dbs = [r[0] for r in ctx.rows(
        "SELECT d.datname::text FROM pg_database AS d WHERE d.datname = ANY(%s)"
        " AND has_database_privilege('public', d.oid, 'CONNECT') ORDER BY 1", [dbs])]
    if open_dbs:
        problems.append(f"PUBLIC has CONNECT on data table database(s) {_names(open_dbs)}: "
                        "every generated login reaches them")
        fixes += [f"As the package owner or a superuser: REVOKE CONNECT ON DATABASE "
                  f"{_ident(db)} FROM PUBLIC;" for db in open_dbs]
    # Catalog roles have CONNECT nowhere: a grant would follow every login holding the role.
    role_grants = ctx.rows(
        "SELECT r.name, d.datname::text FROM datatable_roles.catalog_role AS r"
        " JOIN pg_roles AS pr ON pr.rolname = r.name"
        " JOIN pg_database AS d ON true"
        " CROSS JOIN LATERAL aclexplode(d.datacl) AS a"
        " WHERE a.grantee = pr.oid AND a.privilege_type = 'CONNECT'"
        " ORDER BY 1, 2")
    if role_grants:
        problems.append("catalog role(s) with CONNECT: " + _names(
            f"{r} on {d}" for r, d in role_grants) + " (every login holding them reaches it)")
        fixes += [f"As a superuser: REVOKE CONNECT ON DATABASE {_ident(d)} FROM {_ident(r)};"
                  for r, d in role_grants]
    # Live generated logins: CONNECT on their one database, nowhere else, in the login group.
    group = ctx.settings.get("login_group")
    live = ctx.rows(
        "SELECT s.login, s.dbname,"
        " s.dbname IS NULL OR NOT EXISTS (SELECT FROM pg_database WHERE datname = s.dbname)"
        "  OR has_database_privilege(r.oid, s.dbname, 'CONNECT'),"
        " ARRAY(SELECT d.datname::text FROM pg_database AS d"
        "  CROSS JOIN LATERAL aclexplode(d.datacl) AS a"
        "  WHERE a.grantee = r.oid AND a.privilege_type = 'CONNECT'"
        "   AND d.datname IS DISTINCT FROM s.dbname ORDER BY 1),"
        " %s::text IS NULL OR EXISTS (SELECT FROM pg_auth_members AS m"
        "  JOIN pg_roles AS g ON g.oid = m.roleid"
        "  WHERE m.member = r.oid AND g.rolname = %s)"
        " FROM datatable_roles.datatable_role_set AS s JOIN pg_roles AS r ON r.rolname = s.login"
        " WHERE s.password <> '' AND r.rolcanlogin ORDER BY s.login", [group, group])
    no_connect = [(login, db) for login, db, has, _, _ in live if not has]
    elsewhere = [(login, db) for login, _, _, others, _ in live for db in others]
    outside = [login for login, _, _, _, member in live if not member]
    if no_connect:
        problems.append("generated login(s) without CONNECT on their database: " + _names(
            f"{login} on {db}" for login, db in no_connect))
        fixes += [f"As the package owner: GRANT CONNECT ON DATABASE {_ident(db)} TO "
                  f"{_ident(login)};" for login, db in no_connect]
    if elsewhere:
        problems.append("generated login(s) with CONNECT on another database: " + _names(
            f"{login} on {db}" for login, db in elsewhere))
        fixes += [f"As a superuser: REVOKE CONNECT ON DATABASE {_ident(db)} FROM "
                  f"{_ident(login)};" for login, db in elsewhere]
    if outside:
        opts = " WITH INHERIT FALSE, SET FALSE" if ctx.pg16 else ""
        problems.append(f"generated login(s) not in the login group {group} (pg_hba.conf "
                        f"cannot refuse them elsewhere): {_names(outside)}")
        fixes += [f"As the package owner: GRANT {_ident(group)} TO {_ident(login)}{opts};"
                  for login in outside]
    link = ctx.link_login
    if link is not None and not ctx.value(
            "SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = %s)"
            " AND has_database_privilege(%s, current_database(), 'CONNECT')", [link, link]):
        problems.append(f"the link login {link} lacks CONNECT on {ctx.database} (the sweep "
                        "cleans up there)")
        fixes.append(f"As the package owner: GRANT CONNECT ON DATABASE {_ident(ctx.database)} "
                     f"TO {_ident(link)};")
    if problems:
        checks = [Check("connect_grants", False, "; ".join(problems), "\n".join(fixes))]
    else:
        checks = [Check("connect_grants", True,
                        f"PUBLIC has no CONNECT on {len(dbs)} data table database(s); no catalog "
                        f"role has CONNECT; {len(live)} live generated login(s) reach their own "
                        f"database only, in login group {group}")]
    return checks + [_far_connect_grants(server, far) for server, far in ctx.far.items()]


def _far_connect_grants(server: str, far: dict) -> Check:
    """The same on another server, from what its manager read there (servers.FAR_CATALOG).
    The fixes there run as the data table's admin login (it owns the database) or the
    manager."""
    problems, fixes = [], []
    if far["open"]:
        problems.append(f"PUBLIC has CONNECT on data table database(s) {_names(far['open'])}")
        fixes += [f"On server {server}, as the database's admin login: REVOKE CONNECT ON "
                  f"DATABASE {_ident(db)} FROM PUBLIC;" for db in far["open"]]
    if far["role_grants"]:
        problems.append("catalog role(s) with CONNECT: " + _names(
            f"{r} on {d}" for r, d in far["role_grants"]))
        fixes += [f"On server {server}, as the database's owner: REVOKE CONNECT ON DATABASE "
                  f"{_ident(d)} FROM {_ident(r)};" for r, d in far["role_grants"]]
    no_connect = [(login, db) for login, db, has, _ in far["logins"] if not has]
    elsewhere = [(login, db) for login, _, _, others in far["logins"] for db in others]
    if no_connect:
        problems.append("generated login(s) without CONNECT on their database: " + _names(
            f"{login} on {db}" for login, db in no_connect))
        fixes += [f"On server {server}, as its manager: GRANT CONNECT ON DATABASE {_ident(db)} "
                  f"TO {_ident(login)};" for login, db in no_connect]
    if elsewhere:
        problems.append("generated login(s) with CONNECT on another database: " + _names(
            f"{login} on {db}" for login, db in elsewhere))
        fixes += [f"On server {server}, as the database's owner: REVOKE CONNECT ON DATABASE "
                  f"{_ident(db)} FROM {_ident(login)};" for login, db in elsewhere]
    if problems:
        return Check("connect_grants", False, f"on server {server}: " + "; ".join(problems),
                     "\n".join(fixes), subject=server)
    return Check("connect_grants", True,
                 f"on server {server}: PUBLIC has no CONNECT on its data table database(s); no "
                 f"catalog role has CONNECT; {len(far['logins'])} live generated login(s) "
                 "reach their own database only", subject=server)
