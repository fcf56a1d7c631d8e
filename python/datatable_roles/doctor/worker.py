"""``worker_grants``: each worker role may run the worker's calls (the ``'worker'`` rows of
``datatable_roles.entry_point``) and connect to the metadata database, and reads nothing
else."""

from __future__ import annotations

from .context import MIGRATE_FIX, _Context
from .quoting import _ident, _literal, _names
from .report import Check


def worker_functions(ctx: _Context) -> list[str]:
    """The calls grant_worker gives: the 'worker' rows of datatable_roles.entry_point, which
    sql/functions/api/95_worker.sql records (none before migration 0018)."""
    if not ctx.value("SELECT to_regclass('datatable_roles.entry_point') IS NOT NULL"):
        return []
    return [s for (s,) in ctx.rows("SELECT e.signature FROM datatable_roles.entry_point AS e"
                                   " WHERE e.caller = 'worker' ORDER BY e.signature")]


def check_worker_grants(ctx: _Context) -> list[Check]:
    worker_fns = worker_functions(ctx)
    if not worker_fns:
        return [Check("worker_grants", False,
                      "no run-time function is recorded (datatable_roles.entry_point)",
                      MIGRATE_FIX)]
    missing_fns = [f for f in worker_fns
                   if ctx.value("SELECT to_regprocedure(%s) IS NULL", [f])]
    workers = ctx.rows(
        "SELECT w.name, r.oid IS NOT NULL, coalesce(r.rolsuper, false),"
        " r.oid IS NOT NULL AND pg_has_role(r.oid, %s::name, 'USAGE'),"
        " r.oid IS NOT NULL AND has_database_privilege(r.oid, current_database(), 'CONNECT')"
        " FROM datatable_roles.worker_role AS w LEFT JOIN pg_roles AS r ON r.rolname = w.name"
        " WHERE w.kind = 'worker' ORDER BY w.name", [ctx.package_owner])
    if missing_fns:
        return [Check("worker_grants", False,
                      f"run-time function(s) missing: {_names(missing_fns)}", MIGRATE_FIX)]
    if not workers:
        return [Check("worker_grants", False,
                      "no worker role was granted the run-time calls",
                      "As the package owner: SELECT datatable_roles.grant_worker("
                      "'<worker role>');")]
    problems, fixes, live, gone = [], [], [], []
    for name, exists, superuser, holds_owner, connect in workers:
        if not exists:
            gone.append(name)
            continue
        live.append(name)
        lacking = [f.split("(")[0].removeprefix("public.") for f in worker_fns
                   if not ctx.value("SELECT has_function_privilege(%s, %s, 'EXECUTE')",
                                    [name, f])]
        if not connect:
            lacking.append(f"CONNECT on database {ctx.database}")
        if lacking:
            problems.append(f"worker {name} lacks {_names(lacking, 10)}")
            fixes.append(f"As the package owner: SELECT datatable_roles.grant_worker("
                         f"{_literal(name)});")
        if superuser or holds_owner:
            why = ("is a superuser" if superuser
                   else f"holds the privileges of the package owner {ctx.package_owner}")
            problems.append(f"worker {name} {why}: it can read the package's password columns")
            fixes.append(f"As a superuser: ALTER ROLE {_ident(name)} NOSUPERUSER;" if superuser
                         else f"As a superuser: REVOKE {_ident(ctx.package_owner)} FROM "
                         f"{_ident(name)};")
    if not live:
        problems.append(f"no recorded worker role exists ({_names(gone)} was dropped)")
        fixes.append("As the package owner: SELECT datatable_roles.grant_worker("
                     "'<worker role>');")
    if problems:
        return [Check("worker_grants", False, "; ".join(problems), "\n".join(fixes))]
    note = f" (recorded role(s) {_names(gone)} no longer exist)" if gone else ""
    return [Check("worker_grants", True,
                  f"{_names(live)}: EXECUTE on record_job_start, resolve_datatable_role, "
                  f"explain_datatable_role, cached_result_path, usable_datatable_roles and "
                  f"CONNECT on {ctx.database}"
                  + note)]
