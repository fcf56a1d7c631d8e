"""``owner``: the package owner's attributes and privileges (docs/operating.md,
"Privileges")."""

from __future__ import annotations

from .context import _Context
from .quoting import _ident
from .report import Check


# ---- owner ------------------------------------------------------------------------------

def check_owner(ctx: _Context) -> list[Check]:
    """The package owner's attributes and privileges (docs/operating.md, "Privileges"),
    read by name, so that they are those of the owner whoever connected."""
    me, db = ctx.package_owner, ctx.database
    problems: list[str] = []
    fixes: list[str] = []
    if ctx.version_num < 150000:
        problems.append(f"PostgreSQL {ctx.version} is older than 15, the oldest supported")
        fixes.append("Upgrade the server (docs/operating.md, \"PostgreSQL versions\").")
    if not ctx.is_owner and ctx.owner is not None:
        problems.append(f"connected as {ctx.user}, which does not hold the privileges of the "
                        f"package owner {ctx.owner}")
        fixes.append(f"Run the doctor with the DSN of the package owner {ctx.owner}.")
    (superuser, createrole, signal, create_db, public_exists, create_public,
     connect_grant) = ctx.rows(
        "SELECT r.rolsuper, r.rolcreaterole,"
        " pg_has_role(r.oid, 'pg_signal_backend', 'USAGE'),"
        " has_database_privilege(r.oid, current_database(), 'CREATE'),"
        " n.oid IS NOT NULL, n.oid IS NOT NULL AND has_schema_privilege(r.oid, n.oid, 'CREATE'),"
        " has_database_privilege(r.oid, current_database(), 'CONNECT WITH GRANT OPTION')"
        " FROM pg_roles AS r LEFT JOIN pg_namespace AS n ON n.nspname = 'public'"
        " WHERE r.rolname = %s", [me])[0]
    if superuser:
        problems.append(f"{me} is a superuser: the package must run as a NOSUPERUSER owner "
                        "(the guard answers nothing about superusers' passwords, and "
                        "PostgreSQL 16's rules for CREATEROLE are what the package is built on)")
        fixes.append(f"As a superuser: ALTER ROLE {_ident(me)} NOSUPERUSER;")
    if not createrole:
        problems.append(f"{me} lacks CREATEROLE")
        fixes.append(f"As a superuser: ALTER ROLE {_ident(me)} CREATEROLE;")
    if not signal:
        problems.append(f"{me} is not a member of pg_signal_backend")
        fixes.append(f"As a superuser: GRANT pg_signal_backend TO {_ident(me)};")
    if not create_db:
        problems.append(f"{me} lacks CREATE on database {db}")
        fixes.append(f"As a superuser: GRANT CREATE ON DATABASE {_ident(db)} TO {_ident(me)};")
    if public_exists and not create_public:
        problems.append(f"{me} lacks CREATE on schema public")
        fixes.append(f"As a superuser: GRANT CREATE ON SCHEMA public TO {_ident(me)};")
    if not connect_grant:
        problems.append(f"{me} lacks CONNECT WITH GRANT OPTION on database {db} "
                        "(grant_worker passes CONNECT on)")
        fixes.append(f"As a superuser: GRANT CONNECT ON DATABASE {_ident(db)} TO {_ident(me)}"
                     " WITH GRANT OPTION;")
    admins: list[str] = []
    if ctx.installed and ctx.is_owner:
        # The owner needs the privileges of each admin login, and (16+) ADMIN OPTION on it.
        for admin, exists, usage, admin_opt in ctx.rows(
                "SELECT a.admin_login, r.oid IS NOT NULL,"
                " r.oid IS NOT NULL AND pg_has_role(%(me)s::name, r.oid, 'USAGE'),"
                " r.oid IS NOT NULL AND pg_has_role(%(me)s::name, r.oid,"
                "   'USAGE WITH ADMIN OPTION')"
                " FROM (SELECT DISTINCT d.admin_login FROM datatable_roles.datatable AS d"
                "       WHERE d.governing_id IS NULL) AS a"
                " LEFT JOIN pg_roles AS r ON r.rolname = a.admin_login"
                " ORDER BY 1", {"me": me}):
            admins.append(admin)
            if not exists:
                continue  # admin_password says so, with its fix
            with_admin = " WITH ADMIN OPTION" if ctx.pg16 else ""
            if not usage:
                problems.append(f"{me} does not hold the privileges of admin login {admin}")
                fixes.append(f"As a superuser: GRANT {_ident(admin)} TO {_ident(me)}"
                             f"{with_admin};")
            elif ctx.pg16 and not admin_opt:
                problems.append(f"{me} holds admin login {admin} without ADMIN OPTION "
                                "(PostgreSQL 16+: needed to set its password and grant it)")
                fixes.append(f"As a superuser: GRANT {_ident(admin)} TO {_ident(me)}"
                             " WITH ADMIN OPTION;")
    if problems:
        return [Check("owner", False, "; ".join(problems), "\n".join(fixes))]
    held = (f"member of {len(admins)} admin login(s)"
            + (" WITH ADMIN OPTION" if ctx.pg16 else "")) if admins else "no admin login yet"
    via = "" if ctx.user == me else f" (connected as {ctx.user}, which holds its privileges)"
    return [Check("owner", True,
                  f"{me}: NOSUPERUSER, CREATEROLE, pg_signal_backend, CREATE on {db} and "
                  f"schema public, CONNECT WITH GRANT OPTION, {held}{via}")]
