"""The package's version and migration level, and an install's migration level.

- The package version is ``datatable_roles.__version__`` (python/pyproject.toml reads it
  from there); CHANGELOG.md has a section for each version, with its migrations.
- A migration level is the id of the newest migration (its file name without ``.sql``):
  the package's, read from the migration files it ships, never written down elsewhere; an
  install's, read from the migrations yoyo recorded in the database (``_yoyo_migration``).

``datatable-roles --version`` prints :func:`version_text`; ``status`` adds
:func:`schema_level` of the metadata database, which says when the install is behind the
package (run migrate) or ahead of it (a newer release migrated it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from . import __version__
from .migrate import MIGRATIONS_DIR

MIGRATION_FILE = re.compile(r"^\d{4}_\w+\.sql$")

# Where yoyo keeps what it applied: the table it created in the first schema of the
# migrating role's search_path (public, as a rule). None: no such table.
_YOYO_TABLE = """
SELECT n.nspname::text, c.relname::text, pg_catalog.has_table_privilege(c.oid, 'SELECT')
FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.relname = '_yoyo_migration' AND c.relkind IN ('r', 'p')
ORDER BY pg_catalog.array_position(pg_catalog.current_schemas(false), n.nspname)
    NULLS LAST, n.nspname = 'public' DESC
LIMIT 1
"""


def package_migrations(path: str | Path = MIGRATIONS_DIR) -> list[str]:
    """The ids of the migrations the package ships, oldest first."""
    return sorted(p.stem for p in Path(path).iterdir() if MIGRATION_FILE.match(p.name))


def version_text() -> str:
    """What ``--version`` prints after the program's name: ``0.6.0 (schema 0017_...)``."""
    return f"{__version__} (schema {package_migrations()[-1]})"


@dataclass(frozen=True)
class SchemaLevel:
    """An install's migrations against the package's."""

    package_version: str
    package_schema: str
    installed_schema: str | None   # newest migration applied; None: none, or not readable
    readable: bool                 # yoyo's table exists and the role may read it
    pending: tuple[str, ...]       # the package's migrations not applied there
    unknown: tuple[str, ...]       # applied there, not in this package (a newer release)

    @property
    def state(self) -> str:
        """'current', 'behind' (run migrate), 'ahead' (upgrade the package) or 'unknown'."""
        if not self.readable:
            return "unknown"
        if self.unknown:
            return "ahead"
        return "behind" if self.pending else "current"

    def as_dict(self) -> dict[str, Any]:
        return {"package_version": self.package_version,
                "package_schema": self.package_schema,
                "installed_schema": self.installed_schema, "state": self.state,
                "pending": list(self.pending), "unknown": list(self.unknown)}


def compare_levels(package: list[str], applied: list[str] | None,
                   version: str = __version__) -> SchemaLevel:
    """``applied`` (None: not readable) against the package's migrations."""
    done = set(applied or ())
    return SchemaLevel(version, package[-1], max(done) if done else None,
                       applied is not None,
                       tuple(m for m in package if m not in done),
                       tuple(sorted(done - set(package))))


def applied_migrations(conn: psycopg.Connection) -> list[str] | None:
    """The migrations yoyo applied in ``conn``'s database; None when its table is missing
    or the connected role may not read it. Reads only; runs in autocommit or the caller's
    transaction."""
    row = conn.execute(_YOYO_TABLE).fetchone()
    if row is None or not row[2]:
        return None
    query = sql.SQL("SELECT migration_id FROM {}").format(sql.Identifier(row[0], row[1]))
    return [r[0] for r in conn.execute(query).fetchall()]


def schema_level(conn: psycopg.Connection) -> SchemaLevel:
    """The migration level of ``conn``'s database against this package's."""
    return compare_levels(package_migrations(), applied_migrations(conn))
