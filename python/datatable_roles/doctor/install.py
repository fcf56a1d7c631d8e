"""``bootstrap``, ``migrations`` and ``functions_digest``: what the set-up step leaves, the
migrations applied, and the installed functions being this package's."""

from __future__ import annotations

from yoyo import read_migrations

from ..migrate import BOOTSTRAP_SQL, MANAGED_SQL, MIGRATIONS_DIR, functions_digest
from .context import MIGRATE_FIX, _Context
from .quoting import _ident, _names
from .report import Check


OLD_GUARD = "datatable_roles_guard.verifier_is(text, text)"


# ---- bootstrap --------------------------------------------------------------------------

def check_bootstrap(ctx: _Context) -> list[Check]:
    """The set-up step of the install's profile: self-hosted (sql/bootstrap.sql, a superuser
    step: schema datatable_roles_guard) or managed (sql/managed.sql and the extension step,
    no superuser). Both: dblink in datatable_roles_dblink for the owner alone, and no CONNECT
    for PUBLIC on the metadata database."""
    owner = ctx.package_owner
    problems: list[str] = []
    extra_fixes: list[str] = []
    row = ctx.rows(
        "SELECT to_regnamespace('datatable_roles_guard') IS NOT NULL,"
        " EXISTS (SELECT FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace"
        "  WHERE n.nspname = 'datatable_roles_guard' AND p.proname = 'verifier_is'),"
        " (SELECT e.extnamespace::regnamespace::text FROM pg_extension AS e"
        "  WHERE e.extname = 'dblink'),"
        " to_regnamespace('datatable_roles_dblink') IS NOT NULL"
        "  AND has_schema_privilege(%(owner)s, 'datatable_roles_dblink', 'USAGE'),"
        " to_regnamespace('datatable_roles_dblink') IS NOT NULL"
        "  AND has_schema_privilege('public', 'datatable_roles_dblink', 'USAGE'),"
        " has_database_privilege('public', current_database(), 'CONNECT'),"
        " current_setting('server_version_num')::integer < 160000"
        "  OR (SELECT count(*) FROM pg_proc AS p JOIN pg_namespace AS n"
        "   ON n.oid = p.pronamespace WHERE n.nspname = 'datatable_roles_guard'"
        "   AND p.proname IN ('create_login', 'drop_login', 'sessions_of')) = 3",
        {"owner": owner})[0]
    (self_hosted, old_guard, dblink_schema, owner_dblink, public_dblink, public_connect,
     role_guard) = row
    profile = "self-hosted" if self_hosted else "managed"
    who = "As a superuser" if self_hosted else "As the database owner or the service's admin role"
    if self_hosted and old_guard:
        problems.append(f"the guard {OLD_GUARD} of an earlier bootstrap is still installed "
                        "(nothing uses it; it answers questions about passwords)")
    if self_hosted and not role_guard:
        problems.append("the role guard datatable_roles_guard.create_login/drop_login/"
                        "sessions_of is missing (from an older bootstrap): without it, first "
                        "use and each login the sweep drops cost time that grows with every "
                        "role the owner made")
    if dblink_schema is None:
        problems.append("the dblink extension is not installed")
    elif dblink_schema != "datatable_roles_dblink":
        problems.append(f"dblink is installed in schema {dblink_schema}, not "
                        "datatable_roles_dblink (the package calls it there)")
        extra_fixes.append(f"{who}: ALTER EXTENSION dblink SET SCHEMA "
                           "datatable_roles_dblink; (after creating that schema)")
    else:
        if not owner_dblink:
            problems.append(f"{owner} may not use schema datatable_roles_dblink")
        if public_dblink:
            problems.append("PUBLIC may use schema datatable_roles_dblink (only the owner "
                            "should)")
    if public_connect:
        problems.append(f"PUBLIC has CONNECT on the metadata database {ctx.database} "
                        "(every generated login could connect to it)")
        extra_fixes.append(f"{who}: REVOKE CONNECT ON DATABASE {_ident(ctx.database)}"
                           " FROM PUBLIC; then GRANT CONNECT ON DATABASE ... TO each platform "
                           "login that connects to it")
    if public_dblink:
        extra_fixes.append(f"{who}: REVOKE ALL ON SCHEMA datatable_roles_dblink FROM PUBLIC;")
    if problems:
        fix = (f"As a superuser, run the bootstrap again (it is idempotent): psql -d "
               f"{_ident(ctx.database)} -v owner={owner} -f {BOOTSTRAP_SQL}" if self_hosted else
               f"{who}, run the managed set-up again (it is idempotent): psql -d "
               f"{_ident(ctx.database)} -v owner={owner} -f {MANAGED_SQL}; then, as the role "
               "the service lets create extensions: CREATE EXTENSION IF NOT EXISTS dblink "
               "SCHEMA datatable_roles_dblink;")
        return [Check("bootstrap", False, f"profile {profile}: " + "; ".join(problems),
                      "\n".join([fix, *extra_fixes]))]
    return [Check("bootstrap", True,
                  f"profile {profile} ("
                  + ("the superuser step's role guard makes role changes fast at scale"
                     if self_hosted else "no superuser step; nothing reads pg_authid")
                  + f"), dblink in datatable_roles_dblink for {owner} alone, no CONNECT for "
                  f"PUBLIC on {ctx.database}")]


# ---- migrations and functions -----------------------------------------------------------

def check_migrations(ctx: _Context) -> list[Check]:
    package = [m.id for m in read_migrations(str(MIGRATIONS_DIR))]
    table = ctx.value(
        "SELECT format('%%I.%%I', n.nspname, c.relname) FROM pg_class AS c"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE c.relname = '_yoyo_migration' AND c.relkind IN ('r', 'p')"
        " ORDER BY n.nspname = 'public' DESC LIMIT 1")
    if ctx.installed and not ctx.is_owner:
        return [Check("migrations", True, f"not checked: needs the package owner "
                      f"({ctx.owner}), connected as {ctx.user}", skipped=True)]
    if not ctx.installed or table is None:
        return [Check("migrations", False,
                      "the package is not installed in this database (no schema "
                      "datatable_roles or no migration recorded)",
                      f"Set it up (self-hosted, as a superuser: psql -d {_ident(ctx.database)}"
                      f" -v owner=<owner> -f {BOOTSTRAP_SQL}; managed: {MANAGED_SQL} and the"
                      f" extension step, docs/operating.md), then: {MIGRATE_FIX}")]
    applied = {r[0] for r in ctx.rows(f"SELECT migration_id FROM {table}")}
    pending = [m for m in package if m not in applied]
    unknown = sorted(applied - set(package))
    problems, fixes = [], []
    if pending:
        problems.append(f"{len(pending)} migration(s) of this package not applied: "
                        f"{_names(pending)}")
        fixes.append(MIGRATE_FIX)
    if unknown:
        problems.append(f"{len(unknown)} applied migration(s) this package does not have: "
                        f"{_names(unknown)} (a newer release installed them)")
        fixes.append("Upgrade this package to the release that installed them (pip install "
                     "-U datatable-roles), then run the doctor again.")
    if problems:
        return [Check("migrations", False, "; ".join(problems), "\n".join(fixes))]
    return [Check("migrations", True,
                  f"all {len(package)} migrations applied (newest {package[-1]})")]


def check_functions_digest(ctx: _Context) -> list[Check]:
    expected = functions_digest()
    installed = ctx.settings.get("functions_sha256") if ctx.settings else ctx.value(
        "SELECT functions_sha256 FROM datatable_roles.settings")
    if installed == expected:
        return [Check("functions_digest", True,
                      f"installed functions are this package's ({expected[:12]})")]
    detail = ("no functions digest recorded" if not installed else
              f"installed functions {installed[:12]} are not this package's {expected[:12]}")
    return [Check("functions_digest", False,
                  detail + " (an upgrade whose post-apply hook failed, a function changed by "
                  "hand, or a different release)", MIGRATE_FIX)]
