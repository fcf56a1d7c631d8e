"""The bench's result: one :class:`Row` per figure, and the table ``make bench`` prints."""

from __future__ import annotations

import datetime as _dt
import os
import statistics
from dataclasses import dataclass


@dataclass
class Row:
    """One figure: a ratio A / B measured ``reps`` times (``values``), and its target."""

    label: str
    compares: str
    reps: int
    values: list[float]
    target: float
    higher_is_better: bool
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def met(self) -> bool:
        m = self.median
        return m >= self.target if self.higher_is_better else m <= self.target


def render_table(rows: list[Row], notes: list[str], *, command: str, server_version: str,
                 elapsed: float, quick: bool) -> str:
    """The report: a heading, one line per figure (median, spread, target, met or not), then
    each row's note and the run's ``notes``."""
    out = []
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    out.append(f"datatable-roles bench, {now}: `{command}`")
    out.append(f"PostgreSQL {server_version}, {os.cpu_count()} CPUs, one throwaway cluster "
               f"(fsync off); whole run {elapsed:.0f}s"
               + (" (--quick: smaller sizes, fewer repetitions)" if quick else ""))
    out.append("")
    head = ("#  figure", "compares (A / B)", "reps", "median", "spread (min–max)",
            "target", "result")
    body = []
    for r in rows:
        fmt = (lambda v: f"{v:.0f}") if r.label.startswith("7") else (
            lambda v: f"{v:.2f}x" if v < 100 else f"{v:,.0f}x")
        target = (f">= {r.target:g}x" if r.higher_is_better else
                  (f"<= {r.target:g}" if r.label.startswith("7") else f"<= {r.target:g}x"))
        body.append((r.label, r.compares, str(r.reps), fmt(r.median),
                     f"{fmt(min(r.values))}–{fmt(max(r.values))}", target,
                     "met" if r.met else "NOT MET"))
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    out.append(line(head))
    out.append(line(tuple("-" * w for w in widths)))
    out.extend(line(b) for b in body)
    out.append("")
    out.append("Notes:")
    for r in rows:
        if r.note:
            out.append(f"  {r.label.split()[0]}: {r.note}")
    out.extend(f"  {note}" for note in notes)
    return "\n".join(out)
