"""A real PgBouncer in front of a devcluster.Cluster, for tests and the bench.

Library::

    password = create_auth_user(cluster, "dtr_pgbouncer")      # a LOGIN role, nothing else
    install_auth(cluster, "sales_data", "dtr_pgbouncer")        # sql/pgbouncer-auth.sql
    with PgBouncer(cluster, ["sales_data"], "dtr_pgbouncer", password) as bouncer:
        psycopg.connect(bouncer.conninfo(login, login_password, "sales_data"))

PgBouncer (Debian's ``pgbouncer``, 1.18 on Debian 12; ``$DTR_PGBOUNCER`` names another
binary) runs in the foreground as a child of this process, from a fresh directory under
``$DTR_TMPDIR`` (default /tmp) holding its pgbouncer.ini, its auth_file (the auth user's
password, mode 0600), its log, its pid file and its unix socket; it listens on a free port of
127.0.0.1. As root it runs as the ``postgres`` OS user, like the cluster's server. It reaches
the server over the cluster's unix socket. Clients authenticate with SCRAM against the
verifier ``auth_query`` returns (docs/operating.md, "PgBouncer"), so a set login made after
PgBouncer started logs in through it with no reload. :meth:`PgBouncer.stop` ends it (SIGTERM,
then SIGKILL after a timeout) and removes the directory.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from psycopg import sql
from psycopg.conninfo import make_conninfo

from datatable_roles.migrate import SQL_DIR
from datatable_roles.scram import scram_sha256_verifier

from .devcluster import Cluster, _free_port, _is_root

PGBOUNCER_AUTH_SQL = SQL_DIR / "pgbouncer-auth.sql"
AUTH_QUERY = "SELECT usename, passwd FROM datatable_roles_pgbouncer.lookup($1)"


def pgbouncer_binary() -> str:
    """``$DTR_PGBOUNCER``, else ``pgbouncer`` on PATH, else Debian's /usr/sbin/pgbouncer;
    FileNotFoundError when there is none (`make test` installs Debian's package)."""
    candidates = [os.environ.get("DTR_PGBOUNCER"), shutil.which("pgbouncer"),
                  "/usr/sbin/pgbouncer"]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise FileNotFoundError("pgbouncer not found (apt-get install pgbouncer, which `make test` "
                            "does; or set DTR_PGBOUNCER)")


def pgbouncer_version(binary: str | None = None) -> str:
    out = subprocess.run([binary or pgbouncer_binary(), "--version"], capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()[0].split()[-1]


def create_auth_user(cluster: Cluster, name: str, password: str | None = None) -> str:
    """The auth role PgBouncer's auth_query runs as: LOGIN and nothing else (its password set
    as a SCRAM verifier, so no plaintext is sent). Returns the password."""
    password = password or secrets.token_urlsafe(24)
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE"
                             " NOINHERIT PASSWORD {}").format(
            sql.Identifier(name), sql.Literal(scram_sha256_verifier(password))))
    return password


def install_auth(cluster: Cluster, dbname: str, auth_user: str) -> None:
    """The superuser step in one data table database: sql/pgbouncer-auth.sql with
    ``-v auth_user=<auth_user>``."""
    cluster.psql_file(PGBOUNCER_AUTH_SQL, dbname, auth_user=auth_user)


def _ini_value(value: object) -> str:
    text = str(value)
    if "\n" in text:
        raise ValueError(f"a pgbouncer.ini value may not hold a line break: {text!r}")
    return text


def _quote_userlist(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


class PgBouncer:
    """One PgBouncer process serving ``databases`` of ``cluster`` (see the module doc).

    ``settings`` are added to (or override) the [pgbouncer] section; the defaults are those
    of docs/operating.md, "PgBouncer": pool_mode = transaction, auth_type = scram-sha-256,
    auth_user and auth_query, server_reset_query_always = 1.
    """

    def __init__(self, cluster: Cluster, databases: Iterable[str], auth_user: str | None,
                 auth_password: str | None, *, pool_mode: str = "transaction",
                 settings: Mapping[str, object] | None = None, keep: bool = False,
                 start_timeout: float = 15.0) -> None:
        self.cluster = cluster
        self.databases = list(databases)
        self.auth_user = auth_user
        self._auth_password = auth_password
        self.pool_mode = pool_mode
        self.settings = dict(settings or {})
        self.keep = keep
        self.start_timeout = start_timeout
        self.binary = pgbouncer_binary()
        self.base: Path | None = None
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None

    # ---- paths and connection strings ----------------------------------------------------

    @property
    def ini_path(self) -> Path:
        return self.base / "pgbouncer.ini"

    @property
    def log_path(self) -> Path:
        return self.base / "pgbouncer.log"

    @property
    def sockdir(self) -> Path:
        return self.base

    def conninfo(self, user: str, password: str | None, dbname: str, **kw: object) -> str:
        """libpq conninfo of ``dbname`` through PgBouncer, over TCP 127.0.0.1 (SCRAM)."""
        return make_conninfo(host="127.0.0.1", port=self.port, user=user, password=password,
                             dbname=dbname, **kw)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except (OSError, TypeError):
            return ""
        return "--- pgbouncer log (tail) ---\n" + "\n".join(text) + "\n"

    # ---- configuration -------------------------------------------------------------------

    def config_text(self) -> str:
        c = self.cluster
        lines = ["[databases]"]
        for db in self.databases:
            lines.append(f"{db} = host={c.host} port={c.port} dbname={db}")
        settings: dict[str, object] = {
            "listen_addr": "127.0.0.1",
            "listen_port": self.port,
            "unix_socket_dir": self.sockdir,
            "auth_type": "scram-sha-256",
            "auth_file": self.userlist_path,
            # Without an auth user: the auth_file alone (the managed profile's way).
            **({"auth_user": self.auth_user, "auth_query": AUTH_QUERY}
               if self.auth_user is not None else {}),
            "pool_mode": self.pool_mode,
            "logfile": self.log_path,
            "pidfile": self.base / "pgbouncer.pid",
            "max_client_conn": 200,
            "default_pool_size": 10,
            # After every transaction, not only when a session pooling client leaves: what
            # one job SETs on a pooled server connection must not reach the next job of the
            # same login (docs/operating.md, "PgBouncer").
            "server_reset_query": "DISCARD ALL",
            "server_reset_query_always": 1,
            # psycopg sends none of these; other drivers send extra_float_digits.
            "ignore_startup_parameters": "extra_float_digits",
            **self.settings,
        }
        lines.append("[pgbouncer]")
        lines += [f"{k} = {_ini_value(v)}" for k, v in settings.items()]
        return "\n".join(lines) + "\n"

    @property
    def userlist_path(self) -> Path:
        return self.base / "userlist.txt"

    def _write_files(self) -> None:
        self.ini_path.write_text(self.config_text())
        fd = os.open(self.userlist_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            if self.auth_user is not None:
                f.write(f"{_quote_userlist(self.auth_user)} "
                        f"{_quote_userlist(self._auth_password)}\n")
        if _is_root():
            pw = pwd.getpwnam("postgres")
            for p in (self.ini_path, self.userlist_path):
                os.chown(p, pw.pw_uid, pw.pw_gid)

    def reload(self, timeout: float = 10.0) -> None:
        """SIGHUP: PgBouncer reads its configuration and auth_file again. Returns once its
        log says so."""
        marker = "got SIGHUP, re-reading config"
        seen = self.log_path.read_text(errors="replace").count(marker)
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while self.log_path.read_text(errors="replace").count(marker) <= seen:
            if time.monotonic() > deadline:
                raise RuntimeError(f"pgbouncer did not reload:\n{self.log_tail()}")
            time.sleep(0.05)

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self) -> "PgBouncer":
        tmp_root = os.environ.get("DTR_TMPDIR", "/tmp")
        self.base = Path(tempfile.mkdtemp(prefix="dtr-pgbouncer-", dir=tmp_root))
        try:
            if _is_root():
                pw = pwd.getpwnam("postgres")
                os.chown(self.base, pw.pw_uid, pw.pw_gid)
            for attempt in range(3):  # a port picked as free may be taken before it binds
                self.port = _free_port()
                self._write_files()
                if self._spawn():
                    return self
                if attempt == 2:
                    raise RuntimeError(f"pgbouncer did not start:\n{self.log_tail()}")
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self) -> bool:
        """Start the process; True once it accepts TCP connections, False if it exited."""
        kw: dict = {}
        if _is_root():
            pw = pwd.getpwnam("postgres")
            kw = dict(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
        log = open(self.base / "pgbouncer.stderr", "ab")
        try:
            # Foreground (no -d): the process is this Popen's, so stop() ends exactly it.
            self.proc = subprocess.Popen([self.binary, str(self.ini_path)], cwd=self.base,
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True, **kw)
        finally:
            log.close()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return True
            except OSError:
                time.sleep(0.05)
        self._terminate()
        raise RuntimeError(f"pgbouncer did not accept connections within "
                           f"{self.start_timeout:g}s:\n{self.log_tail()}")

    def _terminate(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)  # immediate shutdown: clients are dropped
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)

    def stop(self) -> None:
        """End the process (SIGTERM, SIGKILL after 10 s) and remove its directory."""
        self._terminate()
        if self.base is not None and not self.keep:
            shutil.rmtree(self.base, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> "PgBouncer":
        return self if self.proc is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
