"""Names and values in the fix texts (quoted only when they must be), short lists, and an
error's text without a password."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

import psycopg

from ..errors import redact


# Lists in a check's detail stop after this many names.
LIST_LIMIT = 5


# ---- quoting and small helpers ----------------------------------------------------------

# PostgreSQL's reserved key words: a name that is one of these is quoted in fix texts.
_RESERVED = frozenset("""
all analyse analyze and any array as asc asymmetric authorization binary both case cast check
collate collation column concurrently constraint create cross current_catalog current_date
current_role current_schema current_time current_timestamp current_user default deferrable
desc distinct do else end except false fetch for foreign freeze from full grant group having
ilike in initially inner intersect into is isnull join lateral leading left like limit
localtime localtimestamp natural not notnull null offset on only or order outer overlaps
placing primary references returning right select session_user similar some symmetric
system_user table tablesample then to trailing true union unique user using variadic verbose
when where window with
""".split())


def _ident(name: str) -> str:
    """``name`` as an SQL identifier in a fix text (quoted only when it must be)."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) and name not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _hba_name(name: str) -> str:
    """A database or role name in a pg_hba.conf line."""
    return name if re.fullmatch(r"[A-Za-z0-9_.$-]+", name) else '"' + name + '"'


def _names(items: Iterable[str], limit: int = LIST_LIMIT) -> str:
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _error_text(e: psycopg.Error) -> str:
    diag = getattr(e, "diag", None)
    text = diag.message_primary if diag is not None else None
    if not text:
        lines = str(e).strip().splitlines()
        text = lines[0] if lines else type(e).__name__
    return redact(text) or type(e).__name__


def _hba_cidr(host: str) -> str:
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return host
    return f"{addr}/{addr.max_prefixlen}"
