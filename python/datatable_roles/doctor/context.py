"""What every check reads: the connection and what :func:`_load` found once (the owner,
the settings, the link login, ``status_report()``), and the fix that a migrate is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from .quoting import _error_text


MIGRATE_FIX = ("As the package owner: datatable-roles --dsn <metadata DSN> migrate (it also "
               "re-creates every function and records their digest)")


# ---- the run ----------------------------------------------------------------------------

@dataclass
class _Context:
    conn: psycopg.Connection
    user: str
    version_num: int
    version: str
    database: str
    owner: str | None          # the package owner (owner of schema datatable_roles)
    owner_privileges: bool     # the connected role has the owner's (the owner, a member)
    installed: bool            # datatable_roles.settings exists
    settings: dict[str, Any] = field(default_factory=dict)
    link_login: str | None = None
    status: dict[str, Any] | None = None
    status_error: str | None = None
    reachable: dict[str, bool] = field(default_factory=dict)   # dbname -> link logs in
    # server -> what its manager read there (servers.read_far_catalog), for the servers
    # that passed the servers check
    far: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def is_owner(self) -> bool:
        """The connected role can act as the package owner (it is the owner, or holds its
        privileges: a member, a superuser)."""
        return self.owner is not None and self.owner_privileges

    @property
    def pg16(self) -> bool:
        return self.version_num >= 160000

    @property
    def package_owner(self) -> str:
        return self.owner or self.user

    @property
    def datatables(self) -> list[dict[str, Any]]:
        """The data tables on this cluster that are not references (they have a database);
        those on other servers are the ``servers`` check's (:attr:`far_datatables`)."""
        return [d for d in self.all_datatables if d.get("server", "local") == "local"]

    @property
    def far_datatables(self) -> list[dict[str, Any]]:
        """The data tables on other servers (docs/servers.md)."""
        return [d for d in self.all_datatables if d.get("server", "local") != "local"]

    @property
    def all_datatables(self) -> list[dict[str, Any]]:
        return [d for d in (self.status or {}).get("datatables", []) if d.get("dbname")]

    @property
    def databases(self) -> list[str]:
        return sorted({d["dbname"] for d in self.datatables})

    def rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(query, params).fetchall()

    def value(self, query: str, params: Sequence[Any] = ()) -> Any:
        row = self.conn.execute(query, params).fetchone()
        return row[0] if row else None


def _load(conn: psycopg.Connection) -> _Context:
    row = conn.execute(
        "SELECT current_user::text,"
        " current_setting('server_version_num')::int, current_setting('server_version'),"
        " current_database()::text,"
        " (SELECT pg_get_userbyid(n.nspowner)::text FROM pg_namespace AS n"
        "  WHERE n.nspname = 'datatable_roles'),"
        " coalesce((SELECT pg_has_role(n.nspowner, 'USAGE') FROM pg_namespace AS n"
        "  WHERE n.nspname = 'datatable_roles'), false),"
        " EXISTS (SELECT FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        "  WHERE n.nspname = 'datatable_roles' AND c.relname = 'settings')"
        ).fetchone()
    ctx = _Context(conn, *row)
    if ctx.installed and ctx.is_owner:
        try:
            cur = conn.cursor(row_factory=dict_row)
            ctx.settings = cur.execute("SELECT * FROM datatable_roles.settings").fetchone() or {}
            ctx.link_login = conn.execute(
                "SELECT login FROM datatable_roles.link_credential").fetchone()[0]
        except (psycopg.Error, TypeError):
            pass
        try:
            ctx.status = dict(conn.execute(
                "SELECT datatable_roles.status_report()").fetchone()[0])
        except psycopg.Error as e:
            ctx.status_error = _error_text(e)
    return ctx
