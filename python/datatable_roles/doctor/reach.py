"""``login_reach``: a live generated login tries, through the server (dblink), the databases
it must not open, over the socket and TCP."""

from __future__ import annotations

import psycopg

from ..errors import redact
from .context import _Context
from .hba import _hba_lines, _other_databases
from .quoting import _ident, _names
from .report import Check


# ---- reach, tried -------------------------------------------------------------------------

# A login attempt by the server (dblink), as a live generated login with the password the
# package stores: built in SQL from the table row, so the password is in no statement text.
REACH_SQL = (
    "SELECT datatable_roles_dblink.dblink_connect('datatable_roles_doctor',"
    " pg_catalog.format('host=%%s port=%%s dbname=%%s user=%%s password=%%s connect_timeout=10',"
    "  datatable_roles.conninfo_value(%s), datatable_roles.conninfo_value(current_setting('port')),"
    "  datatable_roles.conninfo_value(%s), datatable_roles.conninfo_value(s.login),"
    "  datatable_roles.conninfo_value(s.password)))"
    " FROM datatable_roles.datatable_role_set AS s WHERE s.login = %s")


def _reach_hosts(ctx: _Context) -> list[tuple[str, str]]:
    """(how, host): the server's first Unix socket directory and a TCP address
    (settings.link_host, or 127.0.0.1 when that is a socket and the server listens)."""
    hosts = []
    try:
        sockets = ctx.value("SELECT current_setting('unix_socket_directories')") or ""
    except psycopg.errors.InsufficientPrivilege:  # pg_read_all_settings: the doctor's own
        sockets = ctx.conn.info.host or ""       # socket, when it connected through one
    socket = next((d.strip() for d in sockets.split(",") if d.strip().startswith("/")), None)
    if socket:
        hosts.append(("socket", socket))
    link_host = str(ctx.settings.get("link_host") or "127.0.0.1")
    if not link_host.startswith("/"):
        hosts.append(("TCP", link_host))
    elif ctx.value("SELECT current_setting('listen_addresses')"):
        hosts.append(("TCP", "127.0.0.1"))
    return hosts


class _NotTried(Exception):
    """Nothing listens there: the attempt says nothing about pg_hba.conf."""


def _try_login(ctx: _Context, host: str, dbname: str, login: str) -> str | None:
    """None when the login was refused; otherwise how it got in."""
    ctx.conn.execute("SELECT datatable_roles_dblink.dblink_disconnect(c) FROM"
                     " unnest(datatable_roles_dblink.dblink_get_connections()) AS c"
                     " WHERE c = 'datatable_roles_doctor'")
    try:
        ctx.conn.execute(REACH_SQL, [host, dbname, login])
    except (psycopg.errors.SqlclientUnableToEstablishSqlconnection,
            psycopg.errors.InvalidPassword, psycopg.errors.InvalidAuthorizationSpecification) as e:
        detail = " ".join(str(getattr(e.diag, "message_detail", "") or "").split())
        if any(w in detail for w in ("No such file", "Connection refused", "timeout expired",
                                     "could not translate host name")):
            raise _NotTried(detail) from None
        return None  # pg_hba.conf rejected it, or it lacks CONNECT there
    except psycopg.errors.ProhibitedSqlStatementAttempted:
        return "without a password"  # in, but dblink refuses a session nobody authenticated
    ctx.conn.execute("SELECT datatable_roles_dblink.dblink_disconnect('datatable_roles_doctor')")
    return "with its password"


def check_login_reach(ctx: _Context) -> list[Check]:
    return _local_login_reach(ctx) + [_far_login_reach(ctx, server, far["public_dbs"])
                                      for server, far in ctx.far.items()]


def _far_login_reach(ctx: _Context, server: str, public_dbs: list[str]) -> Check:
    """On another server: a live login of that server (its stored password) tries each
    database there PUBLIC may connect to, from the metadata database's cluster (dblink). On a
    managed service, where pg_hba.conf is not the operator's, CONNECT is the only fence."""
    login = ctx.value(
        "SELECT s.login FROM datatable_roles.datatable_role_set AS s WHERE s.server = %s"
        " AND s.password <> '' ORDER BY s.last_used_at DESC, s.login LIMIT 1", [server])
    if login is None:
        return Check("login_reach", True, f"on server {server}: not checked: no live generated "
                     "login to try", subject=server, skipped=True)
    reached = []
    for dbname in public_dbs:
        try:
            refused = ctx.value(
                "SELECT datatable_roles.login_fails_on(s.server, %s, s.login, s.password)"
                " FROM datatable_roles.datatable_role_set AS s WHERE s.login = %s",
                [dbname, login]) is not None
        except psycopg.errors.ProhibitedSqlStatementAttempted:
            refused = False  # in, without a password
        if not refused:
            reached.append(dbname)
    if reached:
        return Check(
            "login_reach", False,
            f"on server {server}, generated login {login} logged in to {_names(reached)}: "
            "every job's code can",
            "\n".join(f"On server {server}, as the database's owner (where no other role relies "
                      f"on PUBLIC's CONNECT there; GRANT CONNECT to those that use it): REVOKE "
                      f"CONNECT ON DATABASE {_ident(db)} FROM PUBLIC;" for db in reached)
            + "\n(or, where its pg_hba.conf is yours, refuse the login group there: "
            "docs/trust.md)", subject=server)
    if not public_dbs:
        return Check("login_reach", True, f"on server {server}: PUBLIC may open no database "
                     "there but data table ones (nothing for a login to try)", subject=server)
    return Check("login_reach", True, f"on server {server}: generated login {login} was "
                 f"refused on {_names(public_dbs)}", subject=server)


def _local_login_reach(ctx: _Context) -> list[Check]:
    """Tries it: a live generated login (its stored password) opens none of postgres,
    template1, the metadata database or a database PUBLIC may connect to, over the socket
    or TCP. Whatever pg_hba.conf or CONNECT grants say, this is what a job's code could do."""
    login = ctx.value(
        "SELECT s.login FROM datatable_roles.datatable_role_set AS s WHERE s.password <> ''"
        " AND s.server = 'local' AND EXISTS (SELECT FROM datatable_roles.live_set_login(s.login))"
        " ORDER BY s.last_used_at DESC, s.login LIMIT 1")
    if login is None:
        return [Check("login_reach", True, "not checked: no live generated login to try "
                      "(none has been handed out yet)", skipped=True)]
    others = _other_databases(ctx)
    got_in: dict[str, list[str]] = {}  # database -> how it got in over each path
    tried, not_tried = [], []
    for how, host in _reach_hosts(ctx):
        try:
            for dbname in others:
                if (got := _try_login(ctx, host, dbname, login)) is not None:
                    got_in.setdefault(dbname, []).append(f"{how} ({got})")
            tried.append(how)
        except _NotTried as e:
            not_tried.append(f"{how} ({host}: {redact(str(e))})")
    # postgres and template1 first (_other_databases' order), one entry per database
    reached = [f"{dbname} over the {' and '.join(ways)}" for dbname, ways in got_in.items()]
    if reached:
        workers = [r[0] for r in ctx.rows(
            "SELECT w.name FROM datatable_roles.worker_role AS w WHERE w.kind = 'worker'"
            " ORDER BY 1")]
        return [Check(
            "login_reach", False,
            f"generated login {login} logged in to {_names(reached)}: every job's code can",
            "pg_hba.conf needs, before any line that lets the login group in (docs/trust.md):\n"
            + _hba_lines(ctx, workers)
            + "\nthen, as a superuser: SELECT pg_reload_conf();\nOr, where no other role "
            "relies on PUBLIC's CONNECT there: REVOKE CONNECT ON DATABASE <each one> FROM "
            "PUBLIC, and GRANT CONNECT to the roles that use it.")]
    if not tried:
        return [Check("login_reach", True, "not checked: could not reach the server over "
                      + _names(not_tried), "Run the doctor over the server's Unix socket, or "
                      "GRANT pg_read_all_settings TO the package owner.", skipped=True)]
    note = f"; not tried over the {_names(not_tried)}" if not_tried else ""
    return [Check("login_reach", True,
                  f"generated login {login} was refused on {_names(others)} over the "
                  f"{' and '.join(tried)}{note}")]
