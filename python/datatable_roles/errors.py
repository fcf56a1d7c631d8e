"""Exceptions of the Python wrapper, one class per documented SQLSTATE class.

Every public SQL function raises with a documented SQLSTATE (docs/sql-api.md, Errors); ``map_error``
turns the psycopg error into the matching class below. A 42501 is one of two things: a
refusal by a rule, which names its rule (``R1`` .. ``R12``) in the error's CONSTRAINT field
and becomes :class:`Refused` (``Refused.rule``), or a missing privilege (no rule: a function
the role may not call, a database it may not connect to), which becomes
:class:`PermissionDenied`. A 55000 whose CONSTRAINT is
``admin_password`` (the admin login's password was changed outside the package) becomes
:class:`AdminPasswordChanged`. A connection refused for a bad password (28P01, or libpq's
"password authentication failed") becomes :class:`InvalidPassword`. Only the server's
primary message, detail and hint are kept: never the CONTEXT (an EXECUTE'd statement shows
its whole text there) and never the statement or its parameters. Anything that still looks like a password
(``password=...`` in a conninfo, a SCRAM verifier, or a secret the caller names) is redacted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import psycopg

__all__ = [
    "DatatableRolesError",
    "Refused",
    "PermissionDenied",
    "NotInstalled",
    "InvalidInput",
    "UnknownObject",
    "AlreadyExists",
    "WrongState",
    "AdminPasswordChanged",
    "InvalidPassword",
    "StillInUse",
    "Retry",
    "SQLSTATE_CLASSES",
    "error_class_for",
    "is_bad_password",
    "map_error",
    "redact",
]


class DatatableRolesError(Exception):
    """Base class. ``sqlstate`` is the server's SQLSTATE (None for a client-side failure,
    such as a connection that could not be made)."""

    sqlstate: str | None
    message: str
    hint: str | None
    detail: str | None

    def __init__(self, message: str, *, sqlstate: str | None = None, hint: str | None = None,
                 detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate
        self.hint = hint
        self.detail = detail

    def __str__(self) -> str:
        text = self.message
        if self.detail:
            text += f" (detail: {self.detail})"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, sqlstate={self.sqlstate!r})"

    def to_dict(self) -> dict[str, str | None]:
        """The error as plain data (what ``--json`` prints)."""
        return {"class": type(self).__name__, "sqlstate": self.sqlstate,
                "message": self.message, "detail": self.detail, "hint": self.hint}


class Refused(DatatableRolesError):
    """42501 with a rule: the resolution was refused. ``rule`` is the rule that refused
    (``R1``, ``R5``, ``R8``, ...: the server sets it as the error's CONSTRAINT field)."""

    rule: str | None

    def __init__(self, message: str, *, rule: str | None = None, **kwargs: str | None) -> None:
        super().__init__(message, **kwargs)
        self.rule = rule

    def to_dict(self) -> dict[str, str | None]:
        return {**super().to_dict(), "rule": self.rule}


class PermissionDenied(DatatableRolesError):
    """42501 without a rule: the role lacks a privilege (an owner-only function called by the
    worker role, a database it may not connect to, an owner without the grants it needs).
    Without a hint from the server, the hint is :data:`OWNER_HINT`."""


class NotInstalled(DatatableRolesError):
    """The database has no package, or not the set-up step it needs (checked from the
    catalogs before anything runs; no SQLSTATE): the hint names the command that fixes it."""


class InvalidInput(DatatableRolesError):
    """22023 (invalid name, tenant key or parameter) and 22004 (a NULL argument)."""


class UnknownObject(DatatableRolesError):
    """P0002: unknown workspace, user, data table, role or job."""


class AlreadyExists(DatatableRolesError):
    """42710 (duplicate role or data table) and 23505 (duplicate email, job already
    recorded)."""


class WrongState(DatatableRolesError):
    """55000: the object is not in the state the call needs (editing a reference, a default
    role that is not in the map)."""


class AdminPasswordChanged(WrongState):
    """55000 with CONSTRAINT ``admin_password``: the data table's admin login no longer has
    the password the package set (someone changed it outside the package), so a resolve that
    would hand the admin login out refuses rather than hand out a password that fails. The
    operator gives the package the current one: ``set_datatable_admin_password(workspace,
    name, admin_password)``. ``login`` is the admin login, when the message names it."""

    login: str | None

    def __init__(self, message: str, *, login: str | None = None,
                 **kwargs: str | None) -> None:
        super().__init__(message, **kwargs)
        self.login = login

    def to_dict(self) -> dict[str, str | None]:
        return {**super().to_dict(), "login": self.login}


class InvalidPassword(DatatableRolesError):
    """28P01: a password that does not log in: ``register_datatable`` or
    ``set_datatable_admin_password`` given an admin password that does not work, or a
    connection refused with "password authentication failed" (``sqlstate`` is then 28P01
    too, though libpq reports none)."""


class StillInUse(DatatableRolesError):
    """2BP01: a role still owns objects or holds privileges somewhere."""


class Retry(DatatableRolesError):
    """40001: a concurrent creation of the same set login won; calling again succeeds."""


SQLSTATE_CLASSES: dict[str, type[DatatableRolesError]] = {
    "42501": PermissionDenied,
    "22023": InvalidInput,
    "22004": InvalidInput,
    "P0002": UnknownObject,
    "42710": AlreadyExists,
    "23505": AlreadyExists,
    "55000": WrongState,
    "28P01": InvalidPassword,
    "2BP01": StillInUse,
    "40001": Retry,
}

_REDACTED = "[redacted]"
_PATTERNS = (
    # password=secret, password='se cret', "password": "x" (conninfo and JSON alike)
    re.compile(r"""(?i)(["']?password["']?\s*[=:]\s*)('(?:[^'\\]|\\.|'')*'|"[^"]*"|[^\s,;)]+)"""),
    # a SCRAM verifier: SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>
    re.compile(r"SCRAM-SHA-256\$[0-9]+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+"),
    # postgresql://user:secret@host
    re.compile(r"(?i)(postgres(?:ql)?://[^:/@\s]*:)([^@\s]+)(@)"),
)


def redact(text: str | None, secrets: Iterable[str] = ()) -> str | None:
    """``text`` with password-looking parts and each of ``secrets`` replaced."""
    if text is None:
        return None
    for secret in secrets:
        if secret:
            text = text.replace(secret, _REDACTED)
    text = _PATTERNS[0].sub(lambda m: m.group(1) + _REDACTED, text)
    text = _PATTERNS[1].sub("SCRAM-SHA-256$" + _REDACTED, text)
    text = _PATTERNS[2].sub(lambda m: m.group(1) + _REDACTED + m.group(3), text)
    return text


# libpq's text for a connection refused by password authentication (the server's FATAL
# 28P01, which libpq reports as a connection failure with no SQLSTATE).
_BAD_PASSWORD = "password authentication failed"

# libpq's text for a connection refused for a missing privilege (FATAL 42501: no CONNECT).
_NO_PRIVILEGE = "permission denied"

# A rule's name in the CONSTRAINT field of a refusal (42501).
_RULE = re.compile(r"R[0-9]+")

# The hint of a PermissionDenied the server gave none.
OWNER_HINT = ("Connect as the package owner: the worker role may only call record_job_start, "
              "resolve_datatable_role, explain_datatable_role, cached_result_path, "
              "usable_datatable_roles and heal_refused_login (grant_worker).")

# What names the metadata database, for a connection that could not be opened.
CONNECT_HINT = ("Name the metadata database and its login: a conninfo or URL (the CLI's --dsn, "
                "e.g. --dsn 'host=db.internal dbname=windmill user=datatable_roles_owner'), or "
                "the PG* variables (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD or "
                "PGPASSFILE).")

# The admin login named by the message of a 55000 admin_password refusal.
_ADMIN_LOGIN = re.compile(r"the password of its admin login (\S+) was changed")


def error_class_for(sqlstate: str | None,
                    constraint: str | None = None) -> type[DatatableRolesError]:
    """The class for a SQLSTATE (and the error's CONSTRAINT field, which tells a rule's
    :class:`Refused` from other 42501s, and :class:`AdminPasswordChanged` from other
    55000s); unknown ones (and None) get the base class."""
    if sqlstate == "42501" and _RULE.fullmatch(constraint or ""):
        return Refused
    if sqlstate == "55000" and constraint == "admin_password":
        return AdminPasswordChanged
    return SQLSTATE_CLASSES.get(sqlstate or "", DatatableRolesError)


def is_bad_password(err: BaseException) -> bool:
    """Whether a connection was refused for a bad password (28P01)."""
    if isinstance(err, InvalidPassword):
        return True
    sqlstate = getattr(err, "sqlstate", None)
    return sqlstate == "28P01" or _BAD_PASSWORD in str(err)


def map_error(err: psycopg.Error, secrets: Iterable[str] = ()) -> DatatableRolesError:
    """The wrapper exception for a psycopg error. Raise it ``from None``: the psycopg error
    carries the server's CONTEXT, which may quote statement text."""
    secrets = tuple(secrets)
    diag = getattr(err, "diag", None)
    primary = diag.message_primary if diag is not None else None
    if not primary:
        # Client-side errors (a failed connection) have no diagnostics; their text is one
        # libpq message. Keep its first line only (CONTEXT, if any, follows).
        primary = (str(err).splitlines() or [type(err).__name__])[0]
    constraint = diag.constraint_name if diag is not None else None
    sqlstate = err.sqlstate
    if sqlstate is None and _BAD_PASSWORD in primary:
        sqlstate = "28P01"  # a connection refused by the server's password check
    elif sqlstate is None and _NO_PRIVILEGE in primary:
        sqlstate = "42501"  # a connection refused for a missing privilege (CONNECT)
    cls = error_class_for(sqlstate, constraint)
    hint = redact(diag.message_hint if diag is not None else None, secrets)
    extra: dict[str, str | None] = {}
    if issubclass(cls, Refused):
        extra["rule"] = constraint
    if issubclass(cls, PermissionDenied) and not hint:
        hint = OWNER_HINT
    if issubclass(cls, AdminPasswordChanged):
        m = _ADMIN_LOGIN.search(primary)
        extra["login"] = m.group(1) if m else None
    return cls(redact(primary, secrets) or "", sqlstate=sqlstate, hint=hint,
               detail=redact(diag.message_detail if diag is not None else None, secrets),
               **extra)


def connect_error(err: psycopg.OperationalError) -> DatatableRolesError:
    """The wrapper exception for a metadata connection that could not be opened: libpq's
    message whole (its second line says what to check, e.g. "Is the server running ...?"),
    and a hint naming what chooses the database."""
    mapped = map_error(err)
    lines = [line.strip() for line in str(err).splitlines()[1:] if line.strip()]
    if lines and not mapped.detail:
        mapped.detail = redact(" ".join(lines))
    if not mapped.hint or mapped.hint == OWNER_HINT:
        mapped.hint = CONNECT_HINT
    return mapped
