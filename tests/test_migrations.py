"""Migrations: empty to head, the committed schema snapshot, and the rules that make a change
reach every install (docs/operating.md, "Changing the package").

- Migrations are append-only: yoyo knows a migration by its file name, so a committed
  migration that changes never reaches a database that applied it.
- Functions live in sql/functions/ and are applied by the post-apply hook, which yoyo runs
  only when some migration is pending: a change to a function file ships with a new
  migration whose header names the new digest.
"""

from __future__ import annotations

import difflib
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from psycopg import sql

from datatable_roles_lab.devcluster import dump_schema, schema_snapshot
from datatable_roles.migrate import (MIGRATIONS_DIR, SQL_DIR, functions_digest, migrate,
                                     yoyo_url)

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = SQL_DIR / "schema.sql"
# Release 0.1.0: migrations 0001-0009 as they were installed (see tests/test_upgrade.py).
RELEASE_0_1_0 = "845082076a3c246927a9b81430a4c5b0bd88f851"
STAMP = re.compile(r"^-- functions: ([0-9a-f]{64})$", re.M)


def numbered_migrations() -> list[Path]:
    return sorted(p for p in MIGRATIONS_DIR.glob("[0-9]*.sql"))


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def fresh_db(cluster):
    dbname = "dtr_mig_" + secrets.token_hex(4)
    yield dbname
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(dbname)))


def test_migrations_apply_once_and_record_the_functions_installed(cluster, fresh_db):
    assert cluster.create_metadata_database(fresh_db), "no migration was applied"
    assert migrate(cluster.owner_conninfo(fresh_db)) == []
    with cluster.connect_super(fresh_db) as conn:
        (installed,) = conn.execute(
            "SELECT functions_sha256 FROM datatable_roles.settings").fetchone()
    assert installed == functions_digest()


def test_plain_yoyo_apply_installs_the_same_schema(cluster, fresh_db):
    """The README's other way in: `yoyo apply` on the top-level migrations/ of a checkout
    (its post-apply hook applies the functions, since every migration is pending)."""
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(fresh_db), sql.Identifier(cluster.owner)))
    cluster.psql_file(SQL_DIR / "bootstrap.sql", fresh_db, owner=cluster.owner)
    yoyo = Path(sys.executable).with_name("yoyo")
    subprocess.run([str(yoyo), "apply", "--batch", "--no-config-file", "--database",
                    yoyo_url(cluster.owner_conninfo(fresh_db)), str(REPO / "migrations")],
                   check=True, capture_output=True, text=True)
    with cluster.connect_super(fresh_db) as conn:
        (installed,) = conn.execute(
            "SELECT functions_sha256 FROM datatable_roles.settings").fetchone()
    assert installed == functions_digest()
    assert dump_schema(cluster, fresh_db) == SNAPSHOT.read_text()


def test_schema_matches_snapshot(cluster):
    actual = schema_snapshot(cluster)
    expected = SNAPSHOT.read_text() if SNAPSHOT.exists() else ""
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            "sql/schema.sql (committed)", "schema from migrations (fresh database)"))
        pytest.fail(
            "The schema built by the migrations differs from sql/schema.sql."
            " If the change is intended, run `make schema` and commit sql/schema.sql.\n"
            + diff, pytrace=False)


def test_a_function_change_ships_with_a_new_migration():
    """The newest migration that names a functions digest names the current one: otherwise a
    database that already applied every migration would never see the changed functions."""
    stamped = [(p, m.group(1)) for p in numbered_migrations()
               for m in [STAMP.search(p.read_text())] if m]
    assert stamped, "no migration names a functions digest (-- functions: <sha256>)"
    newest, digest = stamped[-1]
    if digest != functions_digest():
        pytest.fail(
            f"sql/functions/ changed since {newest.name} (its digest {digest[:12]}…, the files'"
            f" {functions_digest()[:12]}…). Add a new migration, e.g. `make migration"
            f" NAME=<what changed>`, which writes `-- functions: {functions_digest()}`;"
            " never edit a migration that was committed.", pytrace=False)


# Commits of main that landed (CI accepted them), so installs may hold their migrations:
# release 0.1.0 first. Add main's commit here once a submission lands.
LANDED = [RELEASE_0_1_0,
          "1a164d3966cc362ecb2ee7d31849cb6c06409b6e",  # issues 9-10: 0010, 0011
          "b7ec28a69a03e958224f89b89809d9a543be0127",  # issue 11: 0012
          "d0e83787077cbe7300bf88aa2b5adae05944a7de",  # issues 12-13: 0013, 0014
          "d5dc48cc99158237c00568d0ab54bd17c0087b45",  # issues 14-15: 0015, 0016
          "20dd12800fe2f943a732720e95946323f36741b8",  # issues 21-22: 0017
          "4e43dce854519f42b6ea1e435f6a138c157fc33c",  # issue 23: 0018
          "8a5ca02476936a82339017f4a5d106ad3299a7a0",  # issue 23 fix: 0019
          "4040788492dc4e78b056213c0aa60848183b450d",  # issue 24 part 1: 0020
          "0e473c169ce4704e2b4a8c390b0185ef6fb4712d",  # issue 24 part 2: 0021
          "e8af36fb86dc24003c8d2c524c822043d58ab93d",  # issue 24 part 3: 0022
          "41fbba775625b32845d779df2aa40bc42ffebcc9"]  # issue 25 parts 1-2: 0023
# Landed migrations changed since, each with why installs that ran the old text end up the
# same (tests/test_upgrade.py shows it).
CHANGED_SINCE_LANDED = {
    "0009_lifecycle.sql": "PostgreSQL 16 refuses its link login's IN ROLE <owner>;"
                          " 0011_link_memberships gives both kinds of install the same grants",
    "0012_scoped_logins.sql": "it refused to run without the superuser step's guard"
                              " datatable_roles_guard.verifier_is, which nothing uses since 0020"
                              " (issue 24: managed PostgreSQL has no superuser); the check was"
                              " all it dropped, so what it makes is the same",
}


def landed_text(commit: str, name: str) -> str | None:
    for folder in ("python/datatable_roles/sql/migrations", "migrations"):
        try:
            return git("show", f"{commit}:{folder}/{name}")
        except subprocess.CalledProcessError:
            continue
    return None


def test_landed_migrations_never_change():
    """A migration of a landed commit of main is byte for byte what landed: yoyo knows a
    migration by its file name, so a changed file never reaches a database that has it."""
    changed = []
    for path in numbered_migrations():
        if path.name in CHANGED_SINCE_LANDED:
            continue
        for commit in LANDED:
            text = landed_text(commit, path.name)
            if text is not None and text != path.read_text():
                changed.append(f"{path.name} (landed in {commit[:8]})")
    assert changed == [], f"landed migrations changed: {changed}; add a new one instead"
