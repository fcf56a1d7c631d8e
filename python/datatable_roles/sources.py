"""Where the package's SQL lives, in the order it is installed, and its digest.

- ``sql/functions/<tier>/NN_*.sql``: every function, applied in file-name order (the number
  prefixes are unique across the tiers) by the post-apply hook;
- ``sql/functions/remote/scripts/*.sql``: scripts run in a data table's database, stored in
  ``datatable_roles.remote_script`` by the same hook;
- ``sql/directory/<name>.sql``: the directory adapters.

The digest (``settings.functions_sha256``, and the ``-- functions:`` line ``make migration``
stamps) covers all three: a change to any of them ships with a new migration.
    python -m datatable_roles.sources        prints the digest
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

SQL_DIR = Path(str(resources.files("datatable_roles").joinpath("sql")))
MIGRATIONS_DIR = SQL_DIR / "migrations"
FUNCTIONS_DIR = SQL_DIR / "functions"
SCRIPTS_DIR = FUNCTIONS_DIR / "remote" / "scripts"
DIRECTORY_DIR = SQL_DIR / "directory"
BOOTSTRAP_SQL = SQL_DIR / "bootstrap.sql"
MANAGED_SQL = SQL_DIR / "managed.sql"


# Each takes the sql/ directory to read (the post-apply hook passes its own, so that a copy of
# an older release installs that release's files).

def function_files(sql_dir: Path = SQL_DIR) -> list[Path]:
    """The function sources of every tier, in install order (by file name)."""
    scripts = sql_dir / SCRIPTS_DIR.relative_to(SQL_DIR)
    files = [p for p in (sql_dir / "functions").rglob("*.sql") if scripts not in p.parents]
    return sorted(files, key=lambda p: p.name)


def script_files(sql_dir: Path = SQL_DIR) -> list[Path]:
    return sorted((sql_dir / SCRIPTS_DIR.relative_to(SQL_DIR)).glob("*.sql"))


def adapter_files(sql_dir: Path = SQL_DIR) -> list[Path]:
    return sorted((sql_dir / "directory").glob("*.sql"))


def functions_digest(sql_dir: Path = SQL_DIR) -> str:
    """sha256 over the function files, then the scripts, then the directory adapters."""
    files = function_files(sql_dir) + script_files(sql_dir) + adapter_files(sql_dir)
    return hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()


if __name__ == "__main__":
    print(functions_digest())
