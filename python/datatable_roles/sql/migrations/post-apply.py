"""yoyo post-apply hook: the functions, from sql/functions/<tier>/*.sql.

After the numbered migrations: forget the entry points (each api/ file records its own again),
(re)create every function of the package from its readable source, in file-name order (each
file is CREATE OR REPLACE, so this is idempotent), store the scripts that run in a data
table's database (sql/functions/remote/scripts/*.sql, in datatable_roles.remote_script), then
the directory adapter the database uses (settings.directory, sql/directory/<name>.sql: it
replaces the seam functions of 10_directory_seam.sql), grant the recorded worker, directory
writer and ACL editor roles again what a function dropped by a migration lost, and record
which sources are installed (settings.functions_sha256, datatable_roles.sources).

yoyo runs post-apply hooks only when some migration was pending, and knows a migration by its
file name: a change to a function file therefore ships with a new migration whose header
names the new digest (`-- functions: <sha256>`); tests/test_migrations.py fails until it
does. `datatable-roles migrate` runs this hook every time.
"""

from pathlib import Path

from datatable_roles import sources
from yoyo import step

SQL = Path(__file__).resolve().parent.parent


def store_scripts(conn):
    cursor = conn.cursor()
    cursor.execute("DELETE FROM datatable_roles.remote_script")
    for path in sources.script_files(SQL):
        cursor.execute("INSERT INTO datatable_roles.remote_script (name, body) VALUES (%s, %s)",
                       (path.stem, path.read_text(encoding="utf-8")))


def apply_adapter(conn):
    """The adapter this database reads its directory through, if any (docs/integration.md)."""
    cursor = conn.cursor()
    cursor.execute("SELECT directory FROM datatable_roles.settings")
    (name,) = cursor.fetchone()
    if name != "builtin":
        cursor.execute((SQL / "directory" / f"{name}.sql").read_text(encoding="utf-8"))


steps = [step("DELETE FROM datatable_roles.entry_point")] + [
    step(p.read_text(encoding="utf-8")) for p in sources.function_files(SQL)] + [
    step(store_scripts),
    step(apply_adapter),
    step("DO $$ BEGIN PERFORM datatable_roles.grant_calls(w.name, w.kind)"
         " FROM datatable_roles.worker_role AS w JOIN pg_roles AS pr ON pr.rolname = w.name"
         " ORDER BY w.name, w.kind; END $$"),
    step(f"UPDATE datatable_roles.settings SET functions_sha256 = '{sources.functions_digest(SQL)}'"),
]
