"""datatable-roles: per-viewer PostgreSQL logins for data tables (SQL-first package)."""

__version__ = "0.1.0"
