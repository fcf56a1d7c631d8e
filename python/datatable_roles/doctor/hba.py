"""``pg_hba``: which pg_hba.conf line each of the package's connections meets
(:func:`hba_first_match`, as PostgreSQL picks it), and the lines docs/trust.md asks for."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row

from .context import _Context
from .quoting import _hba_cidr, _hba_name, _ident, _names
from .report import Check


# Methods with which a login whose password is a SCRAM verifier authenticates by password
# (md5 lines fall back to SCRAM for SCRAM verifiers). dblink, for a non-superuser, needs a
# password to have been used: trust, peer and the like break the package's link.
PASSWORD_METHODS = ("scram-sha-256", "md5")


# ---- pg_hba.conf ------------------------------------------------------------------------

HOST_TYPES = ("host", "hostssl", "hostnossl", "hostgssenc", "hostnogssenc")


@dataclass(frozen=True)
class HbaRule:
    """One line of ``pg_hba_file_rules``."""

    line: int
    type: str
    databases: tuple[str, ...]
    users: tuple[str, ...]
    address: str | None
    netmask: str | None
    method: str | None
    error: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "HbaRule":
        return cls(line=row.get("line_number") or 0, type=row.get("type") or "",
                   databases=tuple(row.get("database") or ()),
                   users=tuple(row.get("user_name") or ()), address=row.get("address"),
                   netmask=row.get("netmask"), method=row.get("auth_method"),
                   error=row.get("error"))


def _pattern_or_name(pattern: str, value: str) -> bool:
    if pattern.startswith("/"):  # a regular expression (PostgreSQL 16 and later)
        try:
            return re.search(pattern[1:], value) is not None
        except re.error:
            return False
    return pattern == value


def _address_matches(rule: HbaRule, client: ipaddress._BaseAddress | None) -> bool:
    """Whether the rule's address covers ``client``; an address the doctor cannot evaluate
    (a host name, samehost, samenet, or an unknown client) counts as covering it."""
    if rule.address in (None, "", "all") or client is None:
        return True
    try:
        net_addr = ipaddress.ip_address(rule.address)
    except ValueError:
        return True  # samehost, samenet, a host name
    if net_addr.version != client.version:
        return False
    if rule.netmask:
        try:
            prefix = bin(int(ipaddress.ip_address(rule.netmask))).count("1")
        except ValueError:
            return True
    else:
        prefix = net_addr.max_prefixlen
    return client in ipaddress.ip_network(f"{net_addr}/{prefix}", strict=False)


def hba_first_match(rules: Sequence[HbaRule], *, dbname: str, user: str,
                    member_of: Iterable[str] = (), client: str | None = None,
                    local: bool = False) -> HbaRule | None:
    """The first rule (in file order) that a connection of ``user`` to ``dbname`` from
    ``client`` (an IP address; ``local`` for the Unix socket) would use, as PostgreSQL
    picks it, or None (then the server refuses it). ``member_of`` are the roles ``user`` is
    a member of (for ``+group``; the user counts as a member of itself). hostssl and
    hostnossl lines are both taken as possible (the doctor does not know whether the
    connection uses SSL); lines with an error are skipped."""
    roles = set(member_of) | {user}
    try:
        addr = ipaddress.ip_address(client) if client and not local else None
    except ValueError:
        addr = ipaddress.ip_address("127.0.0.1") if client == "localhost" else None
    for rule in rules:
        if rule.error:
            continue
        if local != (rule.type == "local") or (not local and rule.type not in HOST_TYPES):
            continue
        if not any(_db_matches(p, dbname, user, roles) for p in rule.databases):
            continue
        if not any(_user_matches(p, user, roles) for p in rule.users):
            continue
        if not local and not _address_matches(rule, addr):
            continue
        return rule
    return None


def _db_matches(pattern: str, dbname: str, user: str, roles: set[str]) -> bool:
    if pattern == "all":
        return True
    if pattern == "sameuser":
        return dbname == user
    if pattern in ("samerole", "samegroup"):
        return dbname in roles
    if pattern == "replication":
        return False
    return _pattern_or_name(pattern, dbname)


def _user_matches(pattern: str, user: str, roles: set[str]) -> bool:
    if pattern == "all":
        return True
    if pattern.startswith("+"):
        return pattern[1:] in roles
    return _pattern_or_name(pattern, user)


# ---- pg_hba.conf ------------------------------------------------------------------------

def _hba_lines(ctx: _Context, workers: Sequence[str]) -> str:
    """The pg_hba.conf lines docs/trust.md asks for, with this instance's names: the package's
    own logins, each admin login on its database, generated logins (the login group) on the
    data table databases, then the login group refused everywhere else, over the socket as
    over TCP (``host`` covers hostssl): no refused database is named."""
    host = ctx.settings.get("link_host", "127.0.0.1")
    group = "+" + _hba_name(ctx.settings.get("login_group") or "<login group>")
    link = ctx.link_login or "<link login>"
    own = ",".join(_hba_name(n) for n in [ctx.package_owner, *workers, link])
    dbs = ",".join(_hba_name(d) for d in ctx.databases) or "<data table databases>"
    lines = [f"local  all  {own}  scram-sha-256",
             f"host  all  {own}  {_hba_cidr(host)}  scram-sha-256"]
    for d in ctx.datatables:
        lines.append(f"host  {_hba_name(d['dbname'])}  {_hba_name(d['admin_login'])}  "
                     f"{_hba_cidr(host)}  scram-sha-256")
    lines += [f"host  {dbs}  {group}  all  scram-sha-256",
              f"local  all  {group}  reject",
              f"host  all  {group}  all  reject"]
    return "\n".join(dict.fromkeys(lines))


def check_pg_hba(ctx: _Context) -> list[Check]:
    workers = [r[0] for r in ctx.rows(
        "SELECT w.name FROM datatable_roles.worker_role AS w WHERE w.kind = 'worker'"
        " ORDER BY 1")]
    # Where PUBLIC may connect, so may generated logins, unless pg_hba.conf refuses them.
    open_dbs = _other_databases(ctx)
    lines = _hba_lines(ctx, workers)
    try:
        cur = ctx.conn.cursor(row_factory=dict_row)
        raw = cur.execute("SELECT * FROM pg_catalog.pg_hba_file_rules").fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return [Check(
            "pg_hba", True,
            f"not checked: {ctx.user} may not read pg_hba_file_rules (by default only "
            "superusers may)",
            "pg_hba.conf needs, in this order (docs/trust.md):\n" + lines
            + f"\nTo let the doctor check it, as a superuser in database "
            f"{_ident(ctx.database)}: GRANT SELECT ON "
            f"pg_catalog.pg_hba_file_rules TO {_ident(ctx.user)}; GRANT EXECUTE ON FUNCTION "
            f"pg_catalog.pg_hba_file_rules() TO {_ident(ctx.user)};", skipped=True)]
    order = "rule_number" if raw and "rule_number" in raw[0] else "line_number"
    raw.sort(key=lambda r: r.get(order) or 0)
    rules = [HbaRule.from_row(r) for r in raw]
    host = str(ctx.settings.get("link_host", "127.0.0.1"))
    local = host.startswith("/")
    groups = sorted({u[1:] for r in rules for u in r.users if u.startswith("+")})

    def member_of(login: str) -> set[str]:
        if not groups:
            return set()
        return {g for (g,) in ctx.rows(
            "SELECT r.rolname::text FROM pg_roles AS r WHERE r.rolname = ANY(%s)"
            " AND EXISTS (SELECT FROM pg_roles AS u WHERE u.rolname = %s)"
            " AND pg_has_role(%s::name, r.oid, 'MEMBER')", [groups, login, login])}

    group = ctx.settings.get("login_group") or ""
    generated = ctx.value(
        "SELECT s.login FROM datatable_roles.datatable_role_set AS s WHERE s.password <> ''"
        " AND s.server = 'local' ORDER BY s.last_used_at DESC LIMIT 1") or "wm_set_" + "0" * 40
    generated_roles = member_of(generated) | {group}
    problems: list[str] = []
    for rule in rules:
        if rule.error:
            problems.append(f"line {rule.line} has an error ({rule.error}): the server keeps "
                            "its previous rules while the file has errors")

    def must_allow(who: str, login: str, roles: set[str], dbname: str) -> None:
        rule = hba_first_match(rules, dbname=dbname, user=login, member_of=roles,
                               client=host, local=local)
        if rule is None:
            problems.append(f"no line lets {who} {login} connect to {dbname} from {host}")
        elif rule.method not in PASSWORD_METHODS:
            problems.append(f"{who} {login} connecting to {dbname} from {host} meets line "
                            f"{rule.line} ({rule.method}), not scram-sha-256")

    link = ctx.link_login
    link_roles = member_of(link) if link else set()
    for dbname in ctx.databases:
        if link:
            must_allow("the link login", link, link_roles, dbname)
        must_allow("a generated login", generated, generated_roles, dbname)
    for d in ctx.datatables:
        must_allow("the admin login", d["admin_login"], member_of(d["admin_login"]),
                   d["dbname"])
    # Generated logins must be refused where PUBLIC may connect (postgres, template1, ...).
    # Over the socket as over TCP, from any address.
    admitted: dict[HbaRule, list[str]] = {}
    for dbname in open_dbs:
        for over_socket in (False, True):
            rule = hba_first_match(rules, dbname=dbname, user=generated,
                                   member_of=generated_roles, client=None, local=over_socket)
            if rule is not None and rule.method != "reject":
                admitted.setdefault(rule, []).append(dbname)
    for rule, names in admitted.items():
        problems.append(f"generated logins (+{group}) may connect to {_names(names)} (line "
                        f"{rule.line}, {rule.type} {rule.method}): a reject line must come "
                        "before it")
    if problems:
        return [Check("pg_hba", False, "; ".join(problems),
                      "pg_hba.conf needs, in this order (docs/trust.md):\n" + lines
                      + "\nthen, as a superuser: SELECT pg_reload_conf();")]
    return [Check("pg_hba", True,
                  f"the link login, the admin logins and generated logins connect with a "
                  f"password from {host}; generated logins are refused elsewhere, over the "
                  f"socket and TCP ({len(rules)} lines read)")]


def _other_databases(ctx: _Context) -> list[str]:
    """Databases a generated login must not open: postgres, template1, the metadata
    database, and any other one PUBLIC may connect to (then so may every login)."""
    return [r[0] for r in ctx.rows(
        "SELECT d.datname::text FROM pg_database AS d WHERE d.datallowconn"
        " AND NOT d.datname = ANY(%s)"
        " AND (d.datname IN ('postgres', 'template1') OR d.datname = current_database()"
        "  OR has_database_privilege('public', d.oid, 'CONNECT'))"
        " ORDER BY d.datname NOT IN ('postgres', 'template1'), d.datname <> current_database(),"
        " 1", [ctx.databases])]
