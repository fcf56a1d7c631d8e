"""The sweep's progress bar on stderr.

:class:`ProgressBar` draws ``sweep [#####-----]  12/40 logins``; :func:`watching_sweep` keeps
it up to date from a second session while the sweep runs in the first. The sweep commits once
per login, so the second session sees each login leave ``sweep_candidates`` as it is dropped
(or found in use meanwhile).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TextIO

from .client import Client
from .errors import DatatableRolesError


class ProgressBar:
    """A plain-text bar on a stream: ``sweep [#####-----]  12/40 logins``, redrawn in place
    on a terminal; elsewhere (a log) one line per quarter done."""

    def __init__(self, total: int, stream: TextIO, width: int = 30, label: str = "sweep"):
        self.total, self.stream, self.width, self.label = total, stream, width, label
        self.shown = -1
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.lock = threading.Lock()

    def _text(self, done: int) -> str:
        filled = int(self.width * done / self.total) if self.total else self.width
        return (f"{self.label} [{'#' * filled}{'-' * (self.width - filled)}]"
                f" {done:>{len(str(self.total))}}/{self.total} logins")

    def update(self, done: int) -> None:
        done = max(0, min(done, self.total))
        with self.lock:
            if done == self.shown:
                return
            if self.tty:
                self.stream.write("\r" + self._text(done))
            elif self.shown < 0 or 4 * done // max(self.total, 1) > \
                    4 * self.shown // max(self.total, 1):
                self.stream.write(self._text(done) + "\n")
            self.shown = done
            self.stream.flush()

    def finish(self) -> None:
        self.update(self.total)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _watch(dsn: str, logins: list[str], unused_for: timedelta | str | None, bar: ProgressBar,
           stop: threading.Event) -> None:
    """Every 0.1 s: how many of ``logins`` are no longer sweep candidates."""
    wanted = set(logins)
    try:
        with Client(dsn) as client:
            while not stop.wait(0.1):
                left = wanted.intersection(client.sweep_candidates(unused_for))
                bar.update(len(wanted) - len(left))
    except DatatableRolesError:
        pass  # the bar is a courtesy; the sweep's report is what counts


@contextmanager
def watching_sweep(dsn: str, logins: list[str], unused_for: timedelta | str | None,
                   bar: ProgressBar) -> Iterator[None]:
    """Show ``bar`` filling while the block runs the sweep of ``logins``; full at the end."""
    bar.update(0)
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(dsn, logins, unused_for, bar, stop),
                               daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(5)
        bar.finish()
