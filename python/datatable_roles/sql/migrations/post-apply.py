"""yoyo post-apply hook: the functions, from sql/functions/*.sql.

After the numbered migrations, (re)create every function of the package from its readable
source, in file-name order (each file is CREATE OR REPLACE, so this is idempotent), then the
directory adapter the database uses (settings.directory, sql/directory/<name>.sql: it
replaces the seam functions of sql/functions/10_directory_seam.sql), grant the recorded
worker and directory writer roles again what a function dropped by a migration lost, and
record which function sources are installed (settings.functions_sha256: the function files,
then the adapters).

yoyo runs post-apply hooks only when some migration was pending, and knows a migration by its
file name: a change to a function file therefore ships with a new migration whose header
names the new digest (`-- functions: <sha256>`); tests/test_migrations.py fails until it
does. `datatable-roles migrate` runs this hook every time.
"""

import hashlib
from pathlib import Path

from yoyo import step

SQL = Path(__file__).resolve().parent.parent
SOURCES = sorted((SQL / "functions").glob("*.sql"))
ADAPTERS = sorted((SQL / "directory").glob("*.sql"))
DIGEST = hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES + ADAPTERS)).hexdigest()


def apply_adapter(conn):
    """The adapter this database reads its directory through, if any (docs/integration.md)."""
    cursor = conn.cursor()
    cursor.execute("SELECT directory FROM datatable_roles.settings")
    (name,) = cursor.fetchone()
    if name != "builtin":
        cursor.execute((SQL / "directory" / f"{name}.sql").read_text(encoding="utf-8"))


steps = [step(p.read_text(encoding="utf-8")) for p in SOURCES] + [
    step(apply_adapter),
    step("DO $$ BEGIN PERFORM datatable_roles.grant_calls(w.name, w.kind)"
         " FROM datatable_roles.worker_role AS w JOIN pg_roles AS pr ON pr.rolname = w.name"
         " ORDER BY w.name, w.kind; END $$"),
    step(f"UPDATE datatable_roles.settings SET functions_sha256 = '{DIGEST}'"),
]
