"""Install or upgrade the package in a metadata database: yoyo migrations, then functions.

The SQL ships inside this Python package (``datatable_roles/sql/``, read through
importlib.resources), so an installed wheel can migrate without the repository:

- ``sql/migrations/NNNN_*.sql``: ordered and append-only (tables, types, indexes, data moves,
  DROP FUNCTION for a changed signature);
- ``sql/functions/*.sql``: the current text of every function, applied by the yoyo
  post-apply hook ``sql/migrations/post-apply.py``;
- ``sql/directory/<name>.sql``: a directory adapter (docs/integration.md), applied by
  ``migrate --directory <name>`` and then by every post-apply of a database that uses it;
- ``sql/bootstrap.sql`` (self-hosted, as a superuser) or ``sql/managed.sql`` and the extension
  step (managed PostgreSQL, no superuser): the set-up, before the first migration.

yoyo runs post-apply hooks only when some migration was pending, so every change to a
function file ships with a new migration (docs/operating.md, "Changing a function").
:func:`migrate` runs the hook on every call, pending migrations or not.

Before yoyo starts, :func:`check_can_migrate` reads the catalogs and says at once what is
missing (the set-up step, or a privilege of the role migrating) and the command that fixes
it; yoyo itself would retry its lock for 10 s and then report that ``yoyo_lock`` does not
exist. :func:`check_installed` is the same reading for the commands that need an install.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

import psycopg
from psycopg.conninfo import conninfo_to_dict
from yoyo import get_backend, read_migrations

from .errors import NotInstalled, PermissionDenied
from .sources import (BOOTSTRAP_SQL, DIRECTORY_DIR, MANAGED_SQL, MIGRATIONS_DIR, SQL_DIR,  # noqa: F401
                      function_files, functions_digest)

# yoyo's backend for psycopg 3 (plain postgresql:// would load psycopg2).
YOYO_SCHEME = "postgresql+psycopg"

DIRECTORIES = ("builtin", *sorted(p.stem for p in DIRECTORY_DIR.glob("*.sql")))


def yoyo_url(conninfo_or_url: str) -> str:
    """Turn a libpq conninfo (``key=value`` or ``postgresql://``) into a yoyo URL.

    Every parameter except the database name goes into the query string, which yoyo hands to
    psycopg.connect() as keywords; that keeps unix socket directories intact.
    """
    if conninfo_or_url.startswith(YOYO_SCHEME + "://"):
        return conninfo_or_url
    params = conninfo_to_dict(conninfo_or_url)
    dbname = params.pop("dbname", "") or ""
    query = urlencode({k: str(v) for k, v in params.items() if v is not None})
    return f"{YOYO_SCHEME}:///{quote(str(dbname), safe='')}" + (f"?{query}" if query else "")


def libpq_conninfo(conninfo_or_url: str) -> str:
    """The libpq form of a conninfo or of a yoyo URL (``postgresql+psycopg://...``)."""
    if conninfo_or_url.startswith(YOYO_SCHEME + "://"):
        return "postgresql" + conninfo_or_url[len(YOYO_SCHEME):]
    return conninfo_or_url


def migrate(conninfo_or_url: str, migrations_dir: str | os.PathLike | None = None,
            directory: str | None = None) -> list[str]:
    """Apply every pending migration, then the functions, under yoyo's lock; return the ids
    of the migrations applied, in order. First :func:`check_can_migrate` (raises
    :class:`~datatable_roles.errors.NotInstalled` or
    :class:`~datatable_roles.errors.PermissionDenied`, and nothing is changed). With
    ``directory``, read the directory from then on through that adapter ('builtin': the
    package's own tables; see use_directory)."""
    if directory is not None and directory not in DIRECTORIES:
        raise ValueError(f"unknown directory {directory!r}: one of {', '.join(DIRECTORIES)}")
    path = Path(migrations_dir) if migrations_dir is not None else MIGRATIONS_DIR
    if not path.is_dir():
        raise FileNotFoundError(f"migrations directory not found: {path}")
    migrations = read_migrations(str(path))
    with psycopg.connect(libpq_conninfo(conninfo_or_url), autocommit=True) as conn:
        check_can_migrate(conn)
    backend = get_backend(yoyo_url(conninfo_or_url))
    try:
        with backend.lock():
            pending = backend.to_apply(migrations)
            backend.apply_migrations_only(pending)
            backend.run_post_apply(migrations)
            if directory is not None:
                with backend.transaction():
                    use_directory(backend.cursor(), directory)
    finally:
        backend.connection.close()
    return [m.id for m in pending]


def use_directory(cursor, name: str) -> None:
    """Switch the seam to a directory (the caller's transaction makes it one step): an
    adapter's file checks what it needs (grants, row-level security, indexes) and refuses
    loudly before it replaces the seam functions; 'builtin' puts the package's own seam back.
    Then the u/ tenant keys are reconciled with the directory now read
    (docs/integration.md)."""
    source = (next(p for p in function_files() if p.name == "10_directory_seam.sql")
              if name == "builtin" else DIRECTORY_DIR / f"{name}.sql")
    cursor.execute(source.read_text(encoding="utf-8"))
    cursor.execute("UPDATE datatable_roles.settings SET directory = %s", (name,))
    cursor.execute("SELECT public.reconcile_directory()")


# ---- what an install needs, read from the catalogs (every role may read them) --------------

_INSTALL_STATE = """
SELECT current_database(), current_user::text, r.rolsuper,
    (SELECT n.nspowner::regrole::text FROM pg_namespace AS n
        WHERE n.nspname = 'datatable_roles'),
    coalesce((SELECT pg_has_role(n.nspowner, 'USAGE') FROM pg_namespace AS n
        WHERE n.nspname = 'datatable_roles'), false),
    EXISTS (SELECT FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'dblink' AND n.nspname = 'datatable_roles_dblink'),
    (SELECT has_schema_privilege(n.oid, 'USAGE') FROM pg_namespace AS n
        WHERE n.nspname = 'datatable_roles_dblink'),
    EXISTS (SELECT FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
        WHERE n.nspname = 'datatable_roles_guard' AND p.proname = 'drop_login'),
    has_database_privilege(current_database(), 'CREATE'),
    coalesce((SELECT has_schema_privilege(n.oid, 'CREATE') FROM pg_namespace AS n
        WHERE n.nspname = 'public'), false)
FROM pg_roles AS r WHERE r.rolname = current_user
"""


@dataclass(frozen=True)
class InstallState:
    """One database's install, as the connected role sees it."""

    dbname: str
    user: str
    superuser: bool
    package_owner: str | None   # owner of schema datatable_roles; None: never migrated
    is_package_owner: bool      # the role has the package owner's privileges
    bootstrapped: bool          # a set-up step ran: dblink in schema datatable_roles_dblink
    profile: str                # 'self-hosted' (sql/bootstrap.sql's role guard) or 'managed'
    missing: tuple[str, ...]    # privileges the role lacks that migrate needs

    def bootstrap_command(self) -> str:
        """The set-up steps for this database, as README.md gives them (the files' paths
        are the package's own, so they work from a checkout and from an install): the
        self-hosted superuser step, or the managed one and its extension step."""
        owner = self.package_owner or ("<package owner>" if self.superuser else self.user)
        db = shlex.quote(self.dbname)
        return (f"self-hosted, as a superuser: psql -d {db} -v owner={shlex.quote(owner)}"
                f" -f {shlex.quote(str(BOOTSTRAP_SQL))}; managed, as the database owner or the"
                f" service's admin role: psql -d {db} -v owner={shlex.quote(owner)}"
                f" -f {shlex.quote(str(MANAGED_SQL))}, then CREATE EXTENSION IF NOT EXISTS"
                " dblink SCHEMA datatable_roles_dblink")

    def migrate_command(self) -> str:
        """The CLI's migrate of this database (host, port and password as you connect)."""
        owner = self.package_owner or ("<package owner>" if self.superuser else self.user)
        return (f"datatable-roles --dsn {shlex.quote(f'dbname={self.dbname} user={owner}')}"
                " migrate")


def install_state(conn: psycopg.Connection) -> InstallState:
    (db, user, superuser, owner, is_owner, extension, dblink, role_guard, create_db,
     create_public) = conn.execute(_INSTALL_STATE).fetchone()
    wanted = (("USAGE on schema datatable_roles_dblink", dblink),
              (f"CREATE on database {db}", create_db),
              ("CREATE on schema public", create_public))
    return InstallState(db, user, superuser, owner, is_owner,
                        bootstrapped=extension and dblink is not None,
                        profile="self-hosted" if role_guard else "managed",
                        missing=tuple(what for what, held in wanted if not held))


def check_installed(conn: psycopg.Connection) -> None:
    """Raise :class:`NotInstalled` when ``conn``'s database has no package: never migrated,
    or not the metadata database at all."""
    state = install_state(conn)
    if state.package_owner is not None:
        return
    steps = "" if state.bootstrapped else f"{state.bootstrap_command()}; then "
    raise NotInstalled(
        f"database {state.dbname!r} has no datatable-roles install (no schema "
        "datatable_roles): it was never migrated, or it is not the metadata database",
        hint=f"If it is the metadata database, install the package: {steps}as the package "
             f"owner, {state.migrate_command()}. Otherwise connect to the metadata database.")


def check_can_migrate(conn: psycopg.Connection) -> None:
    """Raise, before anything runs, when ``conn``'s database lacks the set-up step
    (:class:`NotInstalled`) or the connected role may not migrate it
    (:class:`PermissionDenied`): each says what is missing and the command that fixes it."""
    state = install_state(conn)
    if not state.bootstrapped:
        raise NotInstalled(
            f"the set-up step has not been run in database {state.dbname!r} (no extension "
            "dblink in schema datatable_roles_dblink)",
            hint=f"{state.bootstrap_command()}; then migrate again as the package owner.")
    if state.package_owner is not None and not state.is_package_owner:
        raise PermissionDenied(
            f"role {state.user!r} may not migrate database {state.dbname!r}: the package "
            f"there belongs to {state.package_owner!r}",
            hint=f"Connect as the package owner {state.package_owner}.")
    if state.missing:
        raise PermissionDenied(
            f"role {state.user!r} may not install the package in database "
            f"{state.dbname!r}: it lacks {', '.join(state.missing)}",
            hint="Migrate as the package owner. The set-up step gives it these: "
                 f"{state.bootstrap_command()}.")
