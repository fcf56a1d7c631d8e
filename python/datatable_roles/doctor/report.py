"""What the doctor returns: one :class:`Check` per verified thing, in a :class:`DoctorReport`
(rendered as text or JSON)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


# ---- the report -------------------------------------------------------------------------

@dataclass
class Check:
    """One verified thing. ``ok`` is False only for a problem; a check that could not be
    made (``skipped``, e.g. pg_hba.conf not readable) is ok, and its ``fix`` then says what
    to verify by hand. ``subject`` names the data table or database of a per-table check."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    subject: str | None = None
    skipped: bool = False

    @property
    def status(self) -> str:
        """``ok``, ``failed`` or ``skipped``."""
        return "skipped" if self.skipped else ("ok" if self.ok else "failed")

    @property
    def label(self) -> str:
        return f"{self.name} ({self.subject})" if self.subject else self.name

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}


@dataclass
class DoctorReport:
    """What :func:`run_doctor` found: ``checks`` in order, and where it looked."""

    checks: list[Check] = field(default_factory=list)
    database: str = ""
    user: str = ""
    server_version: str = ""

    @property
    def ok(self) -> bool:
        """True when no check failed (skipped checks do not count as failures)."""
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def check(self, name: str, subject: str | None = None) -> Check:
        """The check called ``name`` (and ``subject``, for per-table checks); KeyError when
        there is none."""
        for c in self.checks:
            if c.name == name and (subject is None or c.subject == subject):
                return c
        raise KeyError(name if subject is None else f"{name} ({subject})")

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "database": self.database, "user": self.user,
                "server_version": self.server_version,
                "checks": [c.to_dict() for c in self.checks]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def render(self) -> str:
        """One line per check; each failed (or skipped) check followed by its fix."""
        lines = [f"datatable-roles doctor: database {self.database} as {self.user}, "
                 f"PostgreSQL {self.server_version}"]
        tags = {"ok": "ok  ", "failed": "FAIL", "skipped": "skip"}
        for c in self.checks:
            lines.append(f"  {tags[c.status]}  {c.label}: {c.detail}")
            if c.fix and c.status != "ok":
                prefix = "fix: " if not c.ok else "to check by hand: "
                fix_lines = c.fix.splitlines() or [""]
                lines.append(f"        {prefix}{fix_lines[0]}")
                lines.extend(f"        {' ' * len(prefix)}{x}" for x in fix_lines[1:])
        failed = len(self.failed)
        skipped = sum(c.skipped for c in self.checks)
        lines.append(f"{len(self.checks)} checks: {len(self.checks) - failed - skipped} ok, "
                     f"{failed} failed, {skipped} not checked"
                     + ("" if failed else " (healthy)"))
        return "\n".join(lines)
