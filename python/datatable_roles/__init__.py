"""datatable-roles: per-viewer PostgreSQL logins for data tables (SQL-first package)."""

# The package version, and its only home: python/pyproject.toml reads it from here. It moves
# with every release, each with its section in CHANGELOG.md (versions.py: what --version and
# status print beside it).
__version__ = "0.12.0"
