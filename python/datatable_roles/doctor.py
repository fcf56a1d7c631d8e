"""``doctor``: a health check of one install, for what operators get wrong.

:func:`run_doctor` connects to the metadata database as the package owner and returns a
:class:`DoctorReport`: one :class:`Check` per thing it verified, each failure with the
statement or command that fixes it. A failed check never raises; only a metadata database
that cannot be reached does (:class:`~datatable_roles.errors.DatatableRolesError`).

The checks, in order (``name``, and ``subject`` where there is one per data table):

- ``owner``: the connected role holds the package owner's privileges (it is the owner of
  schema datatable_roles, a member of it, or a superuser), the server is PostgreSQL 15 or
  later, and the owner (read by name) is NOSUPERUSER, with CREATEROLE,
  ``pg_signal_backend``, CREATE on the metadata database and its schema public, CONNECT on
  it WITH GRANT OPTION, and membership in each data table's admin login (WITH ADMIN OPTION
  on PostgreSQL 16 and later): docs/operating.md, "Privileges";
- ``bootstrap``: what sql/bootstrap.sql leaves (the guard ``datatable_roles_guard.verifier_is``
  owned by a superuser and executable by the owner alone, dblink in
  ``datatable_roles_dblink`` usable by the owner alone, no CONNECT for PUBLIC on the
  metadata database);
- ``migrations``: every migration of this package applied, none unknown to it;
- ``functions_digest``: ``settings.functions_sha256`` is the digest of this package's
  function sources (what sql/migrations/post-apply.py records);
- ``worker_grants``: each worker role of ``worker_role`` may run the worker's calls (the
  ``'worker'`` rows of ``datatable_roles.entry_point``) and connect to the metadata
  database, and reads nothing else (no superuser, not a member of the owner);
- ``datatable_link`` (per data table database): the package's link login logs in there,
  as the package's own dblink sessions do (``datatable_roles.login_fails``), and holds each
  admin login of that database;
- ``admin_password`` (per data table): ``status_report``'s ``admin_password_ok``, then a
  login attempt with the stored password from ``settings.link_host``;
- ``connect_grants``: no CONNECT for PUBLIC on data table databases, none for catalog
  roles anywhere, each live generated login CONNECT on its own database only and in the
  login group, and CONNECT on the metadata database for the link login (docs/trust.md);
- ``pg_hba``: from ``pg_hba_file_rules`` when the connected role may read it (by default
  only superusers may: then the check is *skipped*, not failed, and its fix says which
  lines the file needs and how to let the doctor read it): the first matching line lets the
  link login, each admin login and a generated login into the data table databases with a
  password from ``settings.link_host``, and refuses generated logins on postgres,
  template1, the metadata database and every other database PUBLIC may connect to, over
  the socket (``local``) as over TCP (:func:`hba_first_match` picks the line);
- ``login_reach``: tries it, whatever the file says: the server (dblink) logs in as a live
  generated login, with the password the package stores, to each of those databases over
  its Unix socket and over TCP; any attempt that gets in fails the check;
- ``policies`` (per data table database): policies naming, as text, a role that does not
  exist (the tokenizer of :mod:`datatable_roles.policy_lint`), read through the link login;
  names of existing roles (rename hazards) are noted, not failed.

Nothing here prints a password: the link login's and the admin logins' passwords stay in
the database (the login attempts and the dblink sessions are built from the table rows in
SQL).

The CLI's ``doctor`` command: ``datatable-roles --dsn <owner's metadata DSN> doctor
[--json]`` prints :meth:`DoctorReport.render` (or :meth:`DoctorReport.to_dict`) and exits 0
when every check passed, 1 otherwise.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row
from yoyo import read_migrations

from .errors import map_error, redact
from .migrate import BOOTSTRAP_SQL, MIGRATIONS_DIR, functions_digest

from .policy_lint import policy_findings

__all__ = ["Check", "DoctorReport", "run_doctor", "HbaRule", "hba_first_match"]

GUARD = "datatable_roles_guard.verifier_is(text, text)"
# Methods with which a login whose password is a SCRAM verifier authenticates by password
# (md5 lines fall back to SCRAM for SCRAM verifiers). dblink, for a non-superuser, needs a
# password to have been used: trust, peer and the like break the package's link.
PASSWORD_METHODS = ("scram-sha-256", "md5")
# A statement of the doctor never waits longer than this (a login attempt to a host that
# does not answer, a lock).
STATEMENT_TIMEOUT = "60s"
# Lists in a check's detail stop after this many names.
LIST_LIMIT = 5

MIGRATE_FIX = ("As the package owner: datatable-roles --dsn <metadata DSN> migrate (it also "
               "re-creates every function and records their digest)")


# ---- the report -------------------------------------------------------------------------

@dataclass
class Check:
    """One verified thing. ``ok`` is False only for a problem; a check that could not be
    made (``skipped``, e.g. pg_hba.conf not readable) is ok, and its ``fix`` then says what
    to verify by hand. ``subject`` names the data table or database of a per-table check."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    subject: str | None = None
    skipped: bool = False

    @property
    def status(self) -> str:
        """``ok``, ``failed`` or ``skipped``."""
        return "skipped" if self.skipped else ("ok" if self.ok else "failed")

    @property
    def label(self) -> str:
        return f"{self.name} ({self.subject})" if self.subject else self.name

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}


@dataclass
class DoctorReport:
    """What :func:`run_doctor` found: ``checks`` in order, and where it looked."""

    checks: list[Check] = field(default_factory=list)
    database: str = ""
    user: str = ""
    server_version: str = ""

    @property
    def ok(self) -> bool:
        """True when no check failed (skipped checks do not count as failures)."""
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def check(self, name: str, subject: str | None = None) -> Check:
        """The check called ``name`` (and ``subject``, for per-table checks); KeyError when
        there is none."""
        for c in self.checks:
            if c.name == name and (subject is None or c.subject == subject):
                return c
        raise KeyError(name if subject is None else f"{name} ({subject})")

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "database": self.database, "user": self.user,
                "server_version": self.server_version,
                "checks": [c.to_dict() for c in self.checks]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def render(self) -> str:
        """One line per check; each failed (or skipped) check followed by its fix."""
        lines = [f"datatable-roles doctor: database {self.database} as {self.user}, "
                 f"PostgreSQL {self.server_version}"]
        tags = {"ok": "ok  ", "failed": "FAIL", "skipped": "skip"}
        for c in self.checks:
            lines.append(f"  {tags[c.status]}  {c.label}: {c.detail}")
            if c.fix and c.status != "ok":
                prefix = "fix: " if not c.ok else "to check by hand: "
                fix_lines = c.fix.splitlines() or [""]
                lines.append(f"        {prefix}{fix_lines[0]}")
                lines.extend(f"        {' ' * len(prefix)}{x}" for x in fix_lines[1:])
        failed = len(self.failed)
        skipped = sum(c.skipped for c in self.checks)
        lines.append(f"{len(self.checks)} checks: {len(self.checks) - failed - skipped} ok, "
                     f"{failed} failed, {skipped} not checked"
                     + ("" if failed else " (healthy)"))
        return "\n".join(lines)


# ---- quoting and small helpers ----------------------------------------------------------

# PostgreSQL's reserved key words: a name that is one of these is quoted in fix texts.
_RESERVED = frozenset("""
all analyse analyze and any array as asc asymmetric authorization binary both case cast check
collate collation column concurrently constraint create cross current_catalog current_date
current_role current_schema current_time current_timestamp current_user default deferrable
desc distinct do else end except false fetch for foreign freeze from full grant group having
ilike in initially inner intersect into is isnull join lateral leading left like limit
localtime localtimestamp natural not notnull null offset on only or order outer overlaps
placing primary references returning right select session_user similar some symmetric
system_user table tablesample then to trailing true union unique user using variadic verbose
when where window with
""".split())


def _ident(name: str) -> str:
    """``name`` as an SQL identifier in a fix text (quoted only when it must be)."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) and name not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _hba_name(name: str) -> str:
    """A database or role name in a pg_hba.conf line."""
    return name if re.fullmatch(r"[A-Za-z0-9_.$-]+", name) else '"' + name + '"'


def _names(items: Iterable[str], limit: int = LIST_LIMIT) -> str:
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _error_text(e: psycopg.Error) -> str:
    diag = getattr(e, "diag", None)
    text = diag.message_primary if diag is not None else None
    if not text:
        lines = str(e).strip().splitlines()
        text = lines[0] if lines else type(e).__name__
    return redact(text) or type(e).__name__


# ---- pg_hba.conf ------------------------------------------------------------------------

HOST_TYPES = ("host", "hostssl", "hostnossl", "hostgssenc", "hostnogssenc")


@dataclass(frozen=True)
class HbaRule:
    """One line of ``pg_hba_file_rules``."""

    line: int
    type: str
    databases: tuple[str, ...]
    users: tuple[str, ...]
    address: str | None
    netmask: str | None
    method: str | None
    error: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "HbaRule":
        return cls(line=row.get("line_number") or 0, type=row.get("type") or "",
                   databases=tuple(row.get("database") or ()),
                   users=tuple(row.get("user_name") or ()), address=row.get("address"),
                   netmask=row.get("netmask"), method=row.get("auth_method"),
                   error=row.get("error"))


def _pattern_or_name(pattern: str, value: str) -> bool:
    if pattern.startswith("/"):  # a regular expression (PostgreSQL 16 and later)
        try:
            return re.search(pattern[1:], value) is not None
        except re.error:
            return False
    return pattern == value


def _address_matches(rule: HbaRule, client: ipaddress._BaseAddress | None) -> bool:
    """Whether the rule's address covers ``client``; an address the doctor cannot evaluate
    (a host name, samehost, samenet, or an unknown client) counts as covering it."""
    if rule.address in (None, "", "all") or client is None:
        return True
    try:
        net_addr = ipaddress.ip_address(rule.address)
    except ValueError:
        return True  # samehost, samenet, a host name
    if net_addr.version != client.version:
        return False
    if rule.netmask:
        try:
            prefix = bin(int(ipaddress.ip_address(rule.netmask))).count("1")
        except ValueError:
            return True
    else:
        prefix = net_addr.max_prefixlen
    return client in ipaddress.ip_network(f"{net_addr}/{prefix}", strict=False)


def hba_first_match(rules: Sequence[HbaRule], *, dbname: str, user: str,
                    member_of: Iterable[str] = (), client: str | None = None,
                    local: bool = False) -> HbaRule | None:
    """The first rule (in file order) that a connection of ``user`` to ``dbname`` from
    ``client`` (an IP address; ``local`` for the Unix socket) would use, as PostgreSQL
    picks it, or None (then the server refuses it). ``member_of`` are the roles ``user`` is
    a member of (for ``+group``; the user counts as a member of itself). hostssl and
    hostnossl lines are both taken as possible (the doctor does not know whether the
    connection uses SSL); lines with an error are skipped."""
    roles = set(member_of) | {user}
    try:
        addr = ipaddress.ip_address(client) if client and not local else None
    except ValueError:
        addr = ipaddress.ip_address("127.0.0.1") if client == "localhost" else None
    for rule in rules:
        if rule.error:
            continue
        if local != (rule.type == "local") or (not local and rule.type not in HOST_TYPES):
            continue
        if not any(_db_matches(p, dbname, user, roles) for p in rule.databases):
            continue
        if not any(_user_matches(p, user, roles) for p in rule.users):
            continue
        if not local and not _address_matches(rule, addr):
            continue
        return rule
    return None


def _db_matches(pattern: str, dbname: str, user: str, roles: set[str]) -> bool:
    if pattern == "all":
        return True
    if pattern == "sameuser":
        return dbname == user
    if pattern in ("samerole", "samegroup"):
        return dbname in roles
    if pattern == "replication":
        return False
    return _pattern_or_name(pattern, dbname)


def _user_matches(pattern: str, user: str, roles: set[str]) -> bool:
    if pattern == "all":
        return True
    if pattern.startswith("+"):
        return pattern[1:] in roles
    return _pattern_or_name(pattern, user)


# ---- the run ----------------------------------------------------------------------------

@dataclass
class _Context:
    conn: psycopg.Connection
    user: str
    version_num: int
    version: str
    database: str
    owner: str | None          # the package owner (owner of schema datatable_roles)
    owner_privileges: bool     # the connected role has the owner's (the owner, a member)
    installed: bool            # datatable_roles.settings exists
    settings: dict[str, Any] = field(default_factory=dict)
    link_login: str | None = None
    status: dict[str, Any] | None = None
    status_error: str | None = None
    reachable: dict[str, bool] = field(default_factory=dict)   # dbname -> link logs in

    @property
    def is_owner(self) -> bool:
        """The connected role can act as the package owner (it is the owner, or holds its
        privileges: a member, a superuser)."""
        return self.owner is not None and self.owner_privileges

    @property
    def pg16(self) -> bool:
        return self.version_num >= 160000

    @property
    def package_owner(self) -> str:
        return self.owner or self.user

    @property
    def datatables(self) -> list[dict[str, Any]]:
        """The data tables that are not references (they have a database)."""
        return [d for d in (self.status or {}).get("datatables", []) if d.get("dbname")]

    @property
    def databases(self) -> list[str]:
        return sorted({d["dbname"] for d in self.datatables})

    def rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(query, params).fetchall()

    def value(self, query: str, params: Sequence[Any] = ()) -> Any:
        row = self.conn.execute(query, params).fetchone()
        return row[0] if row else None


def run_doctor(dsn: str) -> DoctorReport:
    """Check the install reached by ``dsn`` (libpq conninfo or URL of the metadata database,
    as the package owner; empty: the PG* environment variables). Raises
    :class:`~datatable_roles.errors.DatatableRolesError` only when it cannot connect."""
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.Error as e:
        raise map_error(e) from None
    with conn:
        try:
            conn.execute("SET search_path = pg_catalog, pg_temp")
            conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
            ctx = _load(conn)
        except psycopg.Error as e:
            raise map_error(e) from None
        report = DoctorReport(database=ctx.database, user=ctx.user,
                              server_version=ctx.version)
        for name, fn, needs in _CHECKS:
            report.checks.extend(_run_check(ctx, name, fn, needs))
    return report


def _load(conn: psycopg.Connection) -> _Context:
    row = conn.execute(
        "SELECT current_user::text,"
        " current_setting('server_version_num')::int, current_setting('server_version'),"
        " current_database()::text,"
        " (SELECT pg_get_userbyid(n.nspowner)::text FROM pg_namespace AS n"
        "  WHERE n.nspname = 'datatable_roles'),"
        " coalesce((SELECT pg_has_role(n.nspowner, 'USAGE') FROM pg_namespace AS n"
        "  WHERE n.nspname = 'datatable_roles'), false),"
        " EXISTS (SELECT FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        "  WHERE n.nspname = 'datatable_roles' AND c.relname = 'settings')"
        ).fetchone()
    ctx = _Context(conn, *row)
    if ctx.installed and ctx.is_owner:
        try:
            cur = conn.cursor(row_factory=dict_row)
            ctx.settings = cur.execute("SELECT * FROM datatable_roles.settings").fetchone() or {}
            ctx.link_login = conn.execute(
                "SELECT login FROM datatable_roles.link_credential").fetchone()[0]
        except (psycopg.Error, TypeError):
            pass
        try:
            ctx.status = dict(conn.execute(
                "SELECT datatable_roles.status_report()").fetchone()[0])
        except psycopg.Error as e:
            ctx.status_error = _error_text(e)
    return ctx


def _run_check(ctx: _Context, name: str, fn: Callable[[_Context], list[Check]],
               needs: str) -> list[Check]:
    """Runs one check function; what it needs missing makes it skipped, an error failed."""
    if needs in ("owner", "status") and not ctx.installed:
        return [Check(name, True, "not checked: the package is not installed in this database",
                      skipped=True)]
    if needs in ("owner", "status") and not ctx.is_owner:
        return [Check(name, True, f"not checked: needs the package owner ({ctx.owner}), "
                      f"connected as {ctx.user}", skipped=True)]
    if needs == "status" and ctx.status is None:
        return [Check(name, False, f"could not read status_report(): {ctx.status_error}",
                      MIGRATE_FIX)]
    try:
        return fn(ctx)
    except psycopg.Error as e:
        return [Check(name, False, f"could not check: {_error_text(e)}",
                      "Run the doctor as the package owner; the error says what is missing.")]
    except Exception as e:  # noqa: BLE001 - one check's bug must not hide the others
        return [Check(name, False, f"could not check: {type(e).__name__}: "
                      f"{redact(str(e)) or ''}", "Report this as a bug of the doctor.")]


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


# ---- bootstrap --------------------------------------------------------------------------

def check_bootstrap(ctx: _Context) -> list[Check]:
    owner = ctx.package_owner
    problems: list[str] = []
    extra_fixes: list[str] = []
    row = ctx.rows(
        "WITH g AS (SELECT p.oid, p.prosecdef, r.rolsuper FROM pg_proc AS p"
        "  JOIN pg_namespace AS n ON n.oid = p.pronamespace"
        "  JOIN pg_roles AS r ON r.oid = p.proowner"
        "  WHERE n.nspname = 'datatable_roles_guard' AND p.proname = 'verifier_is'"
        "   AND p.proargtypes = '25 25'::oidvector)"
        " SELECT to_regnamespace('datatable_roles_guard') IS NOT NULL,"
        " EXISTS (SELECT FROM g), (SELECT g.rolsuper FROM g), (SELECT g.prosecdef FROM g),"
        " coalesce((SELECT has_function_privilege(%(owner)s, g.oid, 'EXECUTE') FROM g), false)"
        "  AND has_schema_privilege(%(owner)s, 'datatable_roles_guard', 'USAGE'),"
        " coalesce((SELECT has_function_privilege('public', g.oid, 'EXECUTE') FROM g), false)"
        "  AND has_schema_privilege('public', 'datatable_roles_guard', 'USAGE'),"
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
    (guard_schema, guard_fn, guard_super, guard_definer, owner_exec, public_exec,
     dblink_schema, owner_dblink, public_dblink, public_connect, role_guard) = row
    if not guard_schema or not guard_fn:
        problems.append("the guard datatable_roles_guard.verifier_is(text, text) is missing")
    else:
        if not guard_super:
            problems.append("the guard is not owned by a superuser (it cannot read pg_authid)")
        if not guard_definer:
            problems.append("the guard is not SECURITY DEFINER")
        if not owner_exec:
            problems.append(f"{owner} may not execute the guard")
        if public_exec:
            problems.append("PUBLIC may execute the guard (anyone may test verifiers)")
    if guard_schema and not role_guard:
        problems.append("the role guard datatable_roles_guard.create_login/drop_login/"
                        "sessions_of is missing (from an older bootstrap): without it, first "
                        "use and each login the sweep drops cost time that grows with every "
                        "role the owner made")
    if dblink_schema is None:
        problems.append("the dblink extension is not installed")
    elif dblink_schema != "datatable_roles_dblink":
        problems.append(f"dblink is installed in schema {dblink_schema}, not "
                        "datatable_roles_dblink (the package calls it there)")
        extra_fixes.append(f"As a superuser: ALTER EXTENSION dblink SET SCHEMA "
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
        extra_fixes.append(f"As a superuser: REVOKE CONNECT ON DATABASE {_ident(ctx.database)}"
                           " FROM PUBLIC; then GRANT CONNECT ON DATABASE ... TO each platform "
                           "login that connects to it")
    if public_dblink:
        extra_fixes.append("As a superuser: REVOKE ALL ON SCHEMA datatable_roles_dblink "
                           "FROM PUBLIC;")
    if public_exec:
        extra_fixes.append(f"As a superuser: REVOKE ALL ON FUNCTION {GUARD} FROM PUBLIC; "
                           "REVOKE ALL ON SCHEMA datatable_roles_guard FROM PUBLIC;")
    if problems:
        fix = (f"As a superuser, run the bootstrap again (it is idempotent): psql -d "
               f"{_ident(ctx.database)} -v owner={owner} -f {BOOTSTRAP_SQL}")
        return [Check("bootstrap", False, "; ".join(problems),
                      "\n".join([fix, *extra_fixes]))]
    return [Check("bootstrap", True,
                  f"guard datatable_roles_guard.verifier_is executable by {owner} alone, dblink "
                  f"in datatable_roles_dblink for {owner} alone, no CONNECT for PUBLIC on "
                  f"{ctx.database}")]


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
                      f"As a superuser, bootstrap it (psql -d {_ident(ctx.database)} -v "
                      f"owner=<owner> -f {BOOTSTRAP_SQL}), then: {MIGRATE_FIX}")]
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


# ---- the worker -------------------------------------------------------------------------

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


def _hba_cidr(host: str) -> str:
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return host
    return f"{addr}/{addr.max_prefixlen}"


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
                f"admin login {admin}'s password was changed outside the package: a resolve "
                "that would hand it out is refused (55000)", set_fix, subject=subject))
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
        return [Check("connect_grants", False, "; ".join(problems), "\n".join(fixes))]
    return [Check("connect_grants", True,
                  f"PUBLIC has no CONNECT on {len(dbs)} data table database(s); no catalog role "
                  f"has CONNECT; {len(live)} live generated login(s) reach their own database "
                  f"only, in login group {group}")]


# ---- pg_hba.conf ------------------------------------------------------------------------

def _hba_lines(ctx: _Context, workers: Sequence[str]) -> str:
    """The pg_hba.conf lines docs/trust.md asks for, with this instance's names: the package's
    own logins, each admin login on its database, generated logins (the login group) on the
    data table databases, then the login group refused everywhere else, over the socket as
    over TCP (``host`` covers hostssl): no refused database is named."""
    host = ctx.settings.get("link_host", "127.0.0.1")
    group = "+" + _hba_name(ctx.settings.get("login_group") or "<login group>")
    link = ctx.link_login or "<link login>"
    own = ",".join(_hba_name(n) for n in [ctx.package_owner, *workers, link])
    dbs = ",".join(_hba_name(d) for d in ctx.databases) or "<data table databases>"
    lines = [f"local  all  {own}  scram-sha-256",
             f"host  all  {own}  {_hba_cidr(host)}  scram-sha-256"]
    for d in ctx.datatables:
        lines.append(f"host  {_hba_name(d['dbname'])}  {_hba_name(d['admin_login'])}  "
                     f"{_hba_cidr(host)}  scram-sha-256")
    lines += [f"host  {dbs}  {group}  all  scram-sha-256",
              f"local  all  {group}  reject",
              f"host  all  {group}  all  reject"]
    return "\n".join(dict.fromkeys(lines))


def check_pg_hba(ctx: _Context) -> list[Check]:
    workers = [r[0] for r in ctx.rows(
        "SELECT w.name FROM datatable_roles.worker_role AS w WHERE w.kind = 'worker'"
        " ORDER BY 1")]
    # Where PUBLIC may connect, so may generated logins, unless pg_hba.conf refuses them.
    open_dbs = _other_databases(ctx)
    lines = _hba_lines(ctx, workers)
    try:
        cur = ctx.conn.cursor(row_factory=dict_row)
        raw = cur.execute("SELECT * FROM pg_catalog.pg_hba_file_rules").fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return [Check(
            "pg_hba", True,
            f"not checked: {ctx.user} may not read pg_hba_file_rules (by default only "
            "superusers may)",
            "pg_hba.conf needs, in this order (docs/trust.md):\n" + lines
            + f"\nTo let the doctor check it, as a superuser in database "
            f"{_ident(ctx.database)}: GRANT SELECT ON "
            f"pg_catalog.pg_hba_file_rules TO {_ident(ctx.user)}; GRANT EXECUTE ON FUNCTION "
            f"pg_catalog.pg_hba_file_rules() TO {_ident(ctx.user)};", skipped=True)]
    order = "rule_number" if raw and "rule_number" in raw[0] else "line_number"
    raw.sort(key=lambda r: r.get(order) or 0)
    rules = [HbaRule.from_row(r) for r in raw]
    host = str(ctx.settings.get("link_host", "127.0.0.1"))
    local = host.startswith("/")
    groups = sorted({u[1:] for r in rules for u in r.users if u.startswith("+")})

    def member_of(login: str) -> set[str]:
        if not groups:
            return set()
        return {g for (g,) in ctx.rows(
            "SELECT r.rolname::text FROM pg_roles AS r WHERE r.rolname = ANY(%s)"
            " AND EXISTS (SELECT FROM pg_roles AS u WHERE u.rolname = %s)"
            " AND pg_has_role(%s::name, r.oid, 'MEMBER')", [groups, login, login])}

    group = ctx.settings.get("login_group") or ""
    generated = ctx.value(
        "SELECT s.login FROM datatable_roles.datatable_role_set AS s WHERE s.password <> ''"
        " ORDER BY s.last_used_at DESC LIMIT 1") or "wm_set_" + "0" * 40
    generated_roles = member_of(generated) | {group}
    problems: list[str] = []
    for rule in rules:
        if rule.error:
            problems.append(f"line {rule.line} has an error ({rule.error}): the server keeps "
                            "its previous rules while the file has errors")

    def must_allow(who: str, login: str, roles: set[str], dbname: str) -> None:
        rule = hba_first_match(rules, dbname=dbname, user=login, member_of=roles,
                               client=host, local=local)
        if rule is None:
            problems.append(f"no line lets {who} {login} connect to {dbname} from {host}")
        elif rule.method not in PASSWORD_METHODS:
            problems.append(f"{who} {login} connecting to {dbname} from {host} meets line "
                            f"{rule.line} ({rule.method}), not scram-sha-256")

    link = ctx.link_login
    link_roles = member_of(link) if link else set()
    for dbname in ctx.databases:
        if link:
            must_allow("the link login", link, link_roles, dbname)
        must_allow("a generated login", generated, generated_roles, dbname)
    for d in ctx.datatables:
        must_allow("the admin login", d["admin_login"], member_of(d["admin_login"]),
                   d["dbname"])
    # Generated logins must be refused where PUBLIC may connect (postgres, template1, ...).
    # Over the socket as over TCP, from any address.
    admitted: dict[HbaRule, list[str]] = {}
    for dbname in open_dbs:
        for over_socket in (False, True):
            rule = hba_first_match(rules, dbname=dbname, user=generated,
                                   member_of=generated_roles, client=None, local=over_socket)
            if rule is not None and rule.method != "reject":
                admitted.setdefault(rule, []).append(dbname)
    for rule, names in admitted.items():
        problems.append(f"generated logins (+{group}) may connect to {_names(names)} (line "
                        f"{rule.line}, {rule.type} {rule.method}): a reject line must come "
                        "before it")
    if problems:
        return [Check("pg_hba", False, "; ".join(problems),
                      "pg_hba.conf needs, in this order (docs/trust.md):\n" + lines
                      + "\nthen, as a superuser: SELECT pg_reload_conf();")]
    return [Check("pg_hba", True,
                  f"the link login, the admin logins and generated logins connect with a "
                  f"password from {host}; generated logins are refused elsewhere, over the "
                  f"socket and TCP ({len(rules)} lines read)")]


def _other_databases(ctx: _Context) -> list[str]:
    """Databases a generated login must not open: postgres, template1, the metadata
    database, and any other one PUBLIC may connect to (then so may every login)."""
    return [r[0] for r in ctx.rows(
        "SELECT d.datname::text FROM pg_database AS d WHERE d.datallowconn"
        " AND NOT d.datname = ANY(%s)"
        " AND (d.datname IN ('postgres', 'template1') OR d.datname = current_database()"
        "  OR has_database_privilege('public', d.oid, 'CONNECT'))"
        " ORDER BY d.datname NOT IN ('postgres', 'template1'), d.datname <> current_database(),"
        " 1", [ctx.databases])]


# ---- reach, tried -------------------------------------------------------------------------

# A login attempt by the server (dblink), as a live generated login with the password the
# package stores: built in SQL from the table row, so the password is in no statement text.
REACH_SQL = (
    "SELECT datatable_roles_dblink.dblink_connect('datatable_roles_doctor',"
    " pg_catalog.format('host=%%s port=%%s dbname=%%s user=%%s password=%%s connect_timeout=10',"
    "  datatable_roles.conninfo_value(%s), datatable_roles.conninfo_value(current_setting('port')),"
    "  datatable_roles.conninfo_value(%s), datatable_roles.conninfo_value(s.login),"
    "  datatable_roles.conninfo_value(s.password)))"
    " FROM datatable_roles.datatable_role_set AS s WHERE s.login = %s")


def _reach_hosts(ctx: _Context) -> list[tuple[str, str]]:
    """(how, host): the server's first Unix socket directory and a TCP address
    (settings.link_host, or 127.0.0.1 when that is a socket and the server listens)."""
    hosts = []
    try:
        sockets = ctx.value("SELECT current_setting('unix_socket_directories')") or ""
    except psycopg.errors.InsufficientPrivilege:  # pg_read_all_settings: the doctor's own
        sockets = ctx.conn.info.host or ""       # socket, when it connected through one
    socket = next((d.strip() for d in sockets.split(",") if d.strip().startswith("/")), None)
    if socket:
        hosts.append(("socket", socket))
    link_host = str(ctx.settings.get("link_host") or "127.0.0.1")
    if not link_host.startswith("/"):
        hosts.append(("TCP", link_host))
    elif ctx.value("SELECT current_setting('listen_addresses')"):
        hosts.append(("TCP", "127.0.0.1"))
    return hosts


class _NotTried(Exception):
    """Nothing listens there: the attempt says nothing about pg_hba.conf."""


def _try_login(ctx: _Context, host: str, dbname: str, login: str) -> str | None:
    """None when the login was refused; otherwise how it got in."""
    ctx.conn.execute("SELECT datatable_roles_dblink.dblink_disconnect(c) FROM"
                     " unnest(datatable_roles_dblink.dblink_get_connections()) AS c"
                     " WHERE c = 'datatable_roles_doctor'")
    try:
        ctx.conn.execute(REACH_SQL, [host, dbname, login])
    except (psycopg.errors.SqlclientUnableToEstablishSqlconnection,
            psycopg.errors.InvalidPassword, psycopg.errors.InvalidAuthorizationSpecification) as e:
        detail = " ".join(str(getattr(e.diag, "message_detail", "") or "").split())
        if any(w in detail for w in ("No such file", "Connection refused", "timeout expired",
                                     "could not translate host name")):
            raise _NotTried(detail) from None
        return None  # pg_hba.conf rejected it, or it lacks CONNECT there
    except psycopg.errors.ProhibitedSqlStatementAttempted:
        return "without a password"  # in, but dblink refuses a session nobody authenticated
    ctx.conn.execute("SELECT datatable_roles_dblink.dblink_disconnect('datatable_roles_doctor')")
    return "with its password"


def check_login_reach(ctx: _Context) -> list[Check]:
    """Tries it: a live generated login (its stored password) opens none of postgres,
    template1, the metadata database or a database PUBLIC may connect to, over the socket
    or TCP. Whatever pg_hba.conf or CONNECT grants say, this is what a job's code could do."""
    login = ctx.value(
        "SELECT s.login FROM datatable_roles.datatable_role_set AS s WHERE s.password <> ''"
        " AND EXISTS (SELECT FROM datatable_roles.live_set_login(s.login))"
        " ORDER BY s.last_used_at DESC, s.login LIMIT 1")
    if login is None:
        return [Check("login_reach", True, "not checked: no live generated login to try "
                      "(none has been handed out yet)", skipped=True)]
    others = _other_databases(ctx)
    got_in: dict[str, list[str]] = {}  # database -> how it got in over each path
    tried, not_tried = [], []
    for how, host in _reach_hosts(ctx):
        try:
            for dbname in others:
                if (got := _try_login(ctx, host, dbname, login)) is not None:
                    got_in.setdefault(dbname, []).append(f"{how} ({got})")
            tried.append(how)
        except _NotTried as e:
            not_tried.append(f"{how} ({host}: {redact(str(e))})")
    # postgres and template1 first (_other_databases' order), one entry per database
    reached = [f"{dbname} over the {' and '.join(ways)}" for dbname, ways in got_in.items()]
    if reached:
        workers = [r[0] for r in ctx.rows(
            "SELECT w.name FROM datatable_roles.worker_role AS w WHERE w.kind = 'worker'"
            " ORDER BY 1")]
        return [Check(
            "login_reach", False,
            f"generated login {login} logged in to {_names(reached)}: every job's code can",
            "pg_hba.conf needs, before any line that lets the login group in (docs/trust.md):\n"
            + _hba_lines(ctx, workers)
            + "\nthen, as a superuser: SELECT pg_reload_conf();\nOr, where no other role "
            "relies on PUBLIC's CONNECT there: REVOKE CONNECT ON DATABASE <each one> FROM "
            "PUBLIC, and GRANT CONNECT to the roles that use it.")]
    if not tried:
        return [Check("login_reach", True, "not checked: could not reach the server over "
                      + _names(not_tried), "Run the doctor over the server's Unix socket, or "
                      "GRANT pg_read_all_settings TO the package owner.", skipped=True)]
    note = f"; not tried over the {_names(not_tried)}" if not_tried else ""
    return [Check("login_reach", True,
                  f"generated login {login} was refused on {_names(others)} over the "
                  f"{' and '.join(tried)}{note}")]


# ---- policies ---------------------------------------------------------------------------

POLICIES_SQL = (
    "SELECT t.* FROM datatable_roles.link_credential AS c,"
    " LATERAL datatable_roles_dblink.dblink("
    "  datatable_roles.conninfo_for(%s, c.login, c.password),"
    "  'SELECT schemaname::text, tablename::text, policyname::text, cmd, qual, with_check"
    "   FROM pg_catalog.pg_policies ORDER BY 1, 2, 3')"
    " AS t (schemaname text, tablename text, policyname text, cmd text, qual text,"
    "       with_check text)")


def check_policies(ctx: _Context) -> list[Check]:
    if not ctx.datatables:
        return [Check("policies", True, "no data table registered yet")]
    existing = {r[0] for r in ctx.rows("SELECT rolname::text FROM pg_roles")}
    checks = []
    for dbname in ctx.databases:
        if not ctx.reachable.get(dbname):
            checks.append(Check("policies", True, "not checked: the link login cannot reach "
                                "it (see datatable_link)", subject=dbname, skipped=True))
            continue
        try:
            rows = ctx.rows(POLICIES_SQL, [dbname])
        except psycopg.Error as e:
            checks.append(Check("policies", False, f"could not read policies: "
                                f"{_error_text(e)}", "See datatable_link.", subject=dbname))
            continue
        findings, hazards = policy_findings(dbname, rows, existing)
        if not findings:
            note = (f"; {len(hazards)} clause(s) name an existing role as text, which a "
                    "rename would break (lint-policies lists them)") if hazards else ""
            checks.append(Check("policies", True, f"{len(rows)} policies, none names a "
                                f"missing role{note}", subject=dbname))
            continue
        detail = "; ".join(f"policy {f['policy']} on {f['table']} ({f['clause']}) names "
                           f"missing role {f['role']}" for f in findings[:LIST_LIMIT])
        if len(findings) > LIST_LIMIT:
            detail += f"; and {len(findings) - LIST_LIMIT} more"
        fixes = [f"In database {dbname}, as its admin login, recreate each such policy naming "
                 "an existing role, or drop it (a rename leaves the old name in the text: "
                 "docs/policies.md):"]
        for f in dict.fromkeys((f["policy"], f["table"]) for f in findings):
            schema, table = f[1].split(".", 1)
            fixes.append(f"DROP POLICY {_ident(f[0])} ON {_ident(schema)}.{_ident(table)};"
                         " -- then CREATE POLICY ... naming an existing role")
        checks.append(Check("policies", False, detail + " (queries it applies to fail)",
                            "\n".join(fixes), subject=dbname))
    return checks


# name, function, what it needs: "" (any connection), "owner" (the package, as its owner),
# "status" (also status_report()).
_CHECKS: list[tuple[str, Callable[[_Context], list[Check]], str]] = [
    ("owner", check_owner, ""),
    ("bootstrap", check_bootstrap, ""),
    ("migrations", check_migrations, ""),
    ("functions_digest", check_functions_digest, "owner"),
    ("worker_grants", check_worker_grants, "owner"),
    ("datatable_link", check_datatable_link, "status"),
    ("admin_password", check_admin_password, "status"),
    ("connect_grants", check_connect_grants, "status"),
    ("pg_hba", check_pg_hba, "status"),
    ("login_reach", check_login_reach, "status"),
    ("policies", check_policies, "status"),
]
