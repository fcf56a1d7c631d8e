"""yoyo post-apply hook: the functions, from sql/functions/*.sql.

After the numbered migrations, (re)create every function of the package from its readable
source, in file-name order (each file is CREATE OR REPLACE, so this is idempotent), grant the
recorded worker roles again what a function dropped by a migration lost, and record which
function sources are installed (settings.functions_sha256).

yoyo runs post-apply hooks only when some migration was pending, and knows a migration by its
file name: a change to a function file therefore ships with a new migration whose header
names the new digest (`-- functions: <sha256>`); tests/test_migrations.py fails until it
does. `datatable-roles migrate` runs this hook every time.
"""

import hashlib
from pathlib import Path

from yoyo import step

FUNCTIONS = Path(__file__).resolve().parent.parent / "functions"
SOURCES = sorted(FUNCTIONS.glob("*.sql"))
DIGEST = hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES)).hexdigest()

steps = [step(p.read_text(encoding="utf-8")) for p in SOURCES] + [
    step("DO $$ BEGIN PERFORM datatable_roles.grant_worker(w.name)"
         " FROM datatable_roles.worker_role AS w JOIN pg_roles AS pr ON pr.rolname = w.name"
         " ORDER BY w.name; END $$"),
    step(f"UPDATE datatable_roles.settings SET functions_sha256 = '{DIGEST}'"),
]
