"""Install or upgrade the package in a metadata database: yoyo migrations, then functions.

The SQL ships inside this Python package (``datatable_roles/sql/``, read through
importlib.resources), so an installed wheel can migrate without the repository:

- ``sql/migrations/NNNN_*.sql``: ordered and append-only (tables, types, indexes, data moves,
  DROP FUNCTION for a changed signature);
- ``sql/functions/*.sql``: the current text of every function, applied by the yoyo
  post-apply hook ``sql/migrations/post-apply.py``;
- ``sql/directory/<name>.sql``: a directory adapter (docs/integration.md), applied by
  ``migrate --directory <name>`` and then by every post-apply of a database that uses it;
- ``sql/bootstrap.sql``: the one superuser step, before the first migration.

yoyo runs post-apply hooks only when some migration was pending, so every change to a
function file ships with a new migration (docs/operating.md, "Changing a function").
:func:`migrate` runs the hook on every call, pending migrations or not.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from urllib.parse import quote, urlencode

from psycopg.conninfo import conninfo_to_dict
from yoyo import get_backend, read_migrations

# yoyo's backend for psycopg 3 (plain postgresql:// would load psycopg2).
YOYO_SCHEME = "postgresql+psycopg"

SQL_DIR = Path(str(resources.files("datatable_roles").joinpath("sql")))
MIGRATIONS_DIR = SQL_DIR / "migrations"
FUNCTIONS_DIR = SQL_DIR / "functions"
DIRECTORY_DIR = SQL_DIR / "directory"
DIRECTORIES = ("builtin", *sorted(p.stem for p in DIRECTORY_DIR.glob("*.sql")))
BOOTSTRAP_SQL = SQL_DIR / "bootstrap.sql"


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


def migrate(conninfo_or_url: str, migrations_dir: str | os.PathLike | None = None,
            directory: str | None = None) -> list[str]:
    """Apply every pending migration, then the functions, under yoyo's lock; return the ids
    of the migrations applied, in order. With ``directory``, read the directory from then on
    through that adapter ('builtin': the package's own tables; see use_directory)."""
    if directory is not None and directory not in DIRECTORIES:
        raise ValueError(f"unknown directory {directory!r}: one of {', '.join(DIRECTORIES)}")
    path = Path(migrations_dir) if migrations_dir is not None else MIGRATIONS_DIR
    if not path.is_dir():
        raise FileNotFoundError(f"migrations directory not found: {path}")
    migrations = read_migrations(str(path))
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
    source = (FUNCTIONS_DIR / "10_directory_seam.sql" if name == "builtin"
              else DIRECTORY_DIR / f"{name}.sql")
    cursor.execute(source.read_text(encoding="utf-8"))
    cursor.execute("UPDATE datatable_roles.settings SET directory = %s", (name,))
    cursor.execute("SELECT public.reconcile_directory()")
