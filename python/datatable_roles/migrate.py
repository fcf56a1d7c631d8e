"""Apply the package's yoyo migrations to a metadata database."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, urlencode

from psycopg.conninfo import conninfo_to_dict
from yoyo import get_backend, read_migrations

# yoyo's backend for psycopg 3 (plain postgresql:// would load psycopg2).
YOYO_SCHEME = "postgresql+psycopg"


def default_migrations_dir() -> Path:
    """$DTR_MIGRATIONS, else the repository's migrations/ next to python/."""
    env = os.environ.get("DTR_MIGRATIONS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "migrations"


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


def migrate(conninfo_or_url: str, migrations_dir: str | os.PathLike | None = None) -> list[str]:
    """Apply every pending migration under a lock; return the ids applied, in order."""
    path = Path(migrations_dir) if migrations_dir is not None else default_migrations_dir()
    if not path.is_dir():
        raise FileNotFoundError(f"migrations directory not found: {path}")
    migrations = read_migrations(str(path))
    backend = get_backend(yoyo_url(conninfo_or_url))
    try:
        with backend.lock():
            pending = backend.to_apply(migrations)
            backend.apply_migrations(pending)
    finally:
        backend.connection.close()
    return [m.id for m in pending]
