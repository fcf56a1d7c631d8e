"""Migrations: empty to head works, is idempotent, and matches the committed sql/schema.sql."""

from __future__ import annotations

import difflib
import secrets
from pathlib import Path

import pytest
from psycopg import sql

from datatable_roles.devcluster import schema_snapshot
from datatable_roles.migrate import migrate

SNAPSHOT = Path(__file__).resolve().parents[1] / "sql" / "schema.sql"


def test_migrations_apply_once(cluster):
    dbname = "dtr_mig_" + secrets.token_hex(4)
    try:
        assert cluster.create_metadata_database(dbname), "no migration was applied"
        assert migrate(cluster.owner_conninfo(dbname)) == []
    finally:
        with cluster.connect_super() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(dbname)))


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
