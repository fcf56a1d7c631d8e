"""A throwaway PostgreSQL 15 cluster for tests and demos.

Library::

    with Cluster() as c:                 # initdb, start, bootstrap roles, build dtr_template
        psycopg.connect(c.conninfo(c.owner, c.owner_password, c.template))

Command line::

    python -m datatable_roles_lab.devcluster run [--keep] [--log-statement all] -- CMD...
    python -m datatable_roles_lab.devcluster schema --output sql/schema.sql

The cluster lives in a fresh directory under /tmp (``$DTR_TMPDIR``) owned by ``postgres``.
As root, only initdb and pg_ctl run as ``postgres`` (via runuser); everything that reads the
repository (yoyo, psql, pg_dump) runs as the caller and talks to the server over its socket,
so the repository may sit where ``postgres`` cannot read.

The template ``dtr_template`` is built like any metadata database (create_metadata_database:
CREATE DATABASE owned by dtr_owner, the install profile's set-up step (``DTR_PROFILE``:
sql/bootstrap.sql as superuser, or sql/managed.sql as dtr_owner and CREATE EXTENSION dblink),
then migrate() as dtr_owner). Test-only additions (pgTAP and its helpers) are the test harness's business.
Tests, the demo and the bench build on it: clone_metadata_database (a copy of the template
with its own instance id, the worker granted), create_datatable_database (an admin login
owning a database) and create_orders_table (a sample table under row-level security, a
policy per region).
"""

from __future__ import annotations

import argparse
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from datatable_roles.migrate import BOOTSTRAP_SQL, MANAGED_SQL, SQL_DIR, migrate
from datatable_roles.scram import scram_sha256_verifier

# Server programs (initdb, pg_ctl, postgres) of the version under test, and client programs
# (psql, pg_dump, pgbench) at least as new as the server: pg_dump refuses newer servers.
# `make test PG=17` sets both (Makefile, tools/fetch-postgres.sh).
PG_BIN = Path(os.environ.get("DTR_PG_BIN", "/usr/lib/postgresql/15/bin"))
PG_CLIENT_BIN = Path(os.environ.get("DTR_PG_CLIENT_BIN", str(PG_BIN)))

# The install profile of the metadata databases made here (docs/operating.md):
# 'self-hosted' (sql/bootstrap.sql as superuser) or 'managed' (sql/managed.sql as the
# package owner, which owns the database as on a managed service, then the extension step,
# the one superuser act). `make test PROFILE=managed` sets it.
PROFILE = os.environ.get("DTR_PROFILE", "self-hosted")
if PROFILE not in ("self-hosted", "managed"):
    raise SystemExit(f"DTR_PROFILE={PROFILE!r}: use self-hosted or managed")

SUPERUSER = "postgres"
OWNER = "dtr_owner"
WORKER = "dtr_worker"
TEMPLATE = "dtr_template"

PG_HBA = """\
local all postgres trust
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""

# yoyo's bookkeeping tables live in public; they are not part of the package's schema.
YOYO_TABLES = ("public._yoyo_*", "public.yoyo_lock")


def _is_root() -> bool:
    return os.geteuid() == 0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf_value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


class Cluster:
    """A private PostgreSQL cluster, either started here or attached to via environment."""

    def __init__(self, log_statement: str = "none", settings: dict | None = None,
                 migrations_dir: str | os.PathLike | None = None, keep: bool = False,
                 bin_dir: str | os.PathLike | None = None):
        self.bin_dir = Path(bin_dir) if bin_dir is not None else PG_BIN
        self.log_statement = log_statement
        self.settings = dict(settings or {})
        self.migrations_dir = migrations_dir
        self.keep = keep
        self.base: Path | None = None
        self.pgdata: Path | None = None
        self.sockdir: Path | None = None
        self.log_path: Path | None = None
        self.port: int | None = None
        self.owner, self.worker, self.template = OWNER, WORKER, TEMPLATE
        self.owner_password = secrets.token_urlsafe(24)
        self.worker_password = secrets.token_urlsafe(24)
        self.owned = True  # False when attached to a cluster someone else started
        self.profile = PROFILE

    # ---- attaching -------------------------------------------------------------------------

    @classmethod
    def from_env(cls, env=os.environ) -> "Cluster":
        """Attach to the cluster described by the variables ``devcluster run`` exports."""
        c = cls()
        c.owned = False
        c.sockdir = Path(env["PGHOST"])
        c.port = int(env["PGPORT"])
        c.owner, c.owner_password = env["DTR_OWNER"], env["DTR_OWNER_PASSWORD"]
        c.worker, c.worker_password = env["DTR_WORKER"], env["DTR_WORKER_PASSWORD"]
        c.template = env.get("DTR_TEMPLATE_DB", TEMPLATE)
        c.pgdata = Path(env["DTR_PGDATA"]) if env.get("DTR_PGDATA") else None
        c.log_path = Path(env["DTR_LOG"]) if env.get("DTR_LOG") else None
        return c

    @staticmethod
    def env_present(env=os.environ) -> bool:
        return all(env.get(k) for k in ("PGHOST", "PGPORT", "DTR_OWNER", "DTR_OWNER_PASSWORD",
                                        "DTR_WORKER", "DTR_WORKER_PASSWORD"))

    def env(self) -> dict[str, str]:
        """The variables a command run against this cluster gets."""
        return {
            "PGHOST": str(self.sockdir), "PGPORT": str(self.port),
            "PGUSER": SUPERUSER, "PGDATABASE": "postgres",
            "DTR_OWNER": self.owner, "DTR_OWNER_PASSWORD": self.owner_password,
            "DTR_WORKER": self.worker, "DTR_WORKER_PASSWORD": self.worker_password,
            "DTR_TEMPLATE_DB": self.template,
            "DTR_PGDATA": str(self.pgdata), "DTR_LOG": str(self.log_path),
            "DTR_PG_BIN": str(self.bin_dir), "DTR_PG_CLIENT_BIN": str(PG_CLIENT_BIN),
            "DTR_PROFILE": self.profile,
        }

    # ---- connection strings ----------------------------------------------------------------

    @property
    def host(self) -> str:
        """The unix socket directory (what PGHOST is set to)."""
        return str(self.sockdir)

    def conninfo(self, user: str = SUPERUSER, password: str | None = None,
                 dbname: str = "postgres", tcp: bool = False) -> str:
        """libpq conninfo over the unix socket, or over TCP 127.0.0.1 with ``tcp=True``."""
        host = "127.0.0.1" if tcp else str(self.sockdir)
        return make_conninfo(host=host, port=self.port, user=user, password=password,
                             dbname=dbname)

    def superuser_conninfo(self, dbname: str = "postgres") -> str:
        return self.conninfo(SUPERUSER, None, dbname)

    def owner_conninfo(self, dbname: str | None = None) -> str:
        return self.conninfo(self.owner, self.owner_password, dbname or self.template)

    def worker_conninfo(self, dbname: str | None = None) -> str:
        return self.conninfo(self.worker, self.worker_password, dbname or self.template)

    def connect_super(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.superuser_conninfo(dbname), autocommit=True)

    # ---- running server programs ---------------------------------------------------------

    def _as_postgres(self, *argv: str | os.PathLike,
                     cwd: str | os.PathLike = "/") -> subprocess.CompletedProcess:
        cmd = [str(a) for a in argv]
        if _is_root():
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        # cwd=/ by default: the caller's directory may be unreadable for postgres.
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                               f"{proc.stdout}{proc.stderr}{self._log_tail()}")
        return proc

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except (OSError, AttributeError):
            return ""
        return "--- server log (tail) ---\n" + "\n".join(text) + "\n"

    def psql_file(self, path: str | os.PathLike, dbname: str = "postgres",
                  conninfo: str | None = None, **variables: str) -> None:
        """Run a SQL file with psql as superuser (or as ``conninfo`` says), over the socket."""
        cmd = [str(PG_CLIENT_BIN / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1"]
        for k, v in variables.items():
            cmd += ["-v", f"{k}={v}"]
        subprocess.run(cmd + ["-d", conninfo or self.superuser_conninfo(dbname),
                              "-f", str(path)], check=True)

    def set_up_metadata_database(self, dbname: str, profile: str | None = None) -> None:
        """The install profile's set-up step. Self-hosted: sql/bootstrap.sql as superuser.
        Managed: sql/managed.sql as the package owner (it owns the database, as the service's
        admin role would), then the extension step, the one act a superuser does here (on a
        managed service the admin role may do it)."""
        if (profile or self.profile) == "self-hosted":
            self.psql_file(BOOTSTRAP_SQL, dbname, owner=self.owner)
            return
        self.psql_file(MANAGED_SQL, dbname, conninfo=self.owner_conninfo(dbname),
                       owner=self.owner)
        with self.connect_super(dbname) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS dblink SCHEMA datatable_roles_dblink")

    def create_metadata_database(self, dbname: str,
                                 migrations_dir: str | os.PathLike | None = None,
                                 profile: str | None = None) -> list[str]:
        """CREATE DATABASE owned by the package owner, the set-up step of ``profile`` (the
        cluster's by default: set_up_metadata_database), then the migrations as the owner;
        return the ids."""
        with self.connect_super() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(dbname), sql.Identifier(self.owner)))
        self.set_up_metadata_database(dbname, profile)
        return migrate(self.owner_conninfo(dbname), migrations_dir or self.migrations_dir)

    def clone_metadata_database(self, dbname: str | None = None,
                                grant_worker: bool = True, template: str | None = None) -> str:
        """A metadata database copied from the template (or ``template``: CREATE DATABASE ...
        TEMPLATE, owned by the package owner) and made an instance of its own by the package,
        datatable_roles.become_own_instance() run by the owner (an instance id, a link login
        and a login group of its own, CONNECT taken from PUBLIC as sql/bootstrap.sql does);
        unless ``grant_worker`` is false, the run-time calls (and CONNECT) granted to the
        worker role. Returns its name (``dtr_meta_<hex>`` when not given). Drop it with
        :meth:`drop_database`."""
        dbname = dbname or "dtr_meta_" + secrets.token_hex(4)
        with self.connect_super() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
                sql.Identifier(dbname), sql.Identifier(template or self.template),
                sql.Identifier(self.owner)))
        with self.connect_super(dbname) as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(self.owner)))
            conn.execute("SELECT datatable_roles.become_own_instance()")
            if grant_worker:
                conn.execute("SELECT datatable_roles.grant_worker(%s)", [self.worker])
        return dbname

    def drop_database(self, dbname: str) -> None:
        """DROP DATABASE IF EXISTS ... WITH (FORCE): its sessions are ended first."""
        with self.connect_super() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(dbname)))

    # ---- data table databases --------------------------------------------------------------

    def create_datatable_database(self, dbname: str, admin: str,
                                  password: str | None = None) -> str:
        """What the platform makes for a data table: a LOGIN role ``admin`` (its password set
        as a SCRAM verifier, so the plaintext is never sent) granted to the package owner, and
        a database ``dbname`` it owns. Returns the password (a random one when not given)."""
        password = password or secrets.token_urlsafe(24)
        with self.connect_super() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(admin), sql.Literal(scram_sha256_verifier(password))))
            conn.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION").format(
                sql.Identifier(admin), sql.Identifier(self.owner)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(dbname), sql.Identifier(admin)))
        return password

    def create_orders_table(self, dbname: str, admin: str, rows: Iterable[tuple[int, str]],
                            policies: Mapping[str, str] | None = None) -> None:
        """As ``admin`` in ``dbname``: ``orders (id integer PRIMARY KEY, region text NOT NULL)``
        holding ``rows``, under row-level security, and for each region -> role of
        ``policies``: SELECT granted to the role and a policy named after the region showing
        that region's orders to members of the role (named as text, as hand-written policies
        do)."""
        with self.connect_super(dbname) as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(admin)))
            conn.execute("CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL)")
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO orders VALUES (%s, %s)", list(rows))
            conn.execute("ALTER TABLE orders ENABLE ROW LEVEL SECURITY")
            for region, role in (policies or {}).items():
                conn.execute(sql.SQL("GRANT SELECT ON orders TO {}").format(
                    sql.Identifier(role)))
                conn.execute(sql.SQL(
                    "CREATE POLICY {} ON orders FOR SELECT"
                    " USING (region = {} AND pg_has_role(current_user, {}, 'member'))").format(
                    sql.Identifier(region), sql.Literal(region), sql.Literal(role)))

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self, build_template: bool = True) -> "Cluster":
        """initdb, start, create the roles and (by default) the template database."""
        try:
            self._initdb()
            self._start_server()
            self._bootstrap_roles()
            if build_template:
                self.build_template()
        except BaseException:
            self.stop()
            raise
        return self

    def _initdb(self) -> None:
        tmp_root = os.environ.get("DTR_TMPDIR", "/tmp")
        self.base = Path(tempfile.mkdtemp(prefix="dtr-pg-", dir=tmp_root))
        self.pgdata = self.base / "data"
        self.sockdir = self.base / "sock"
        self.log_path = self.base / "postgres.log"
        self.sockdir.mkdir()
        if _is_root():
            pw = pwd.getpwnam("postgres")
            for p in (self.base, self.sockdir):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        self._init_data(self.bin_dir, self.pgdata)

    def _init_data(self, bin_dir: Path, pgdata: Path) -> None:
        """initdb of ``pgdata`` with ``bin_dir``'s programs, and this cluster's settings."""
        checksums = []
        if self._major(bin_dir) >= 18:  # 18 turns data checksums on; pg_upgrade needs alike
            checksums = ["--no-data-checksums"]
        self._as_postgres(bin_dir / "initdb", "-D", pgdata, "-U", SUPERUSER,
                          "--auth-local=trust", "--auth-host=scram-sha-256", *checksums,
                          "-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions")
        # The files exist (owned by postgres); rewriting them in place keeps their owner.
        (pgdata / "pg_hba.conf").write_text(PG_HBA)
        settings = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(self.sockdir),
            "password_encryption": "scram-sha-256",
            "fsync": False,
            "max_connections": 200,
            "logging_collector": False,
            "log_statement": self.log_statement,
            **self.settings,
        }
        with open(pgdata / "postgresql.conf", "a") as f:
            f.write("\n# datatable-roles devcluster\n")
            for k, v in settings.items():
                f.write(f"{k} = {_conf_value(v)}\n")

    @staticmethod
    def _major(bin_dir: Path) -> int:
        out = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True,
                             text=True, check=True).stdout
        return int(out.split()[-1].split(".")[0])

    def pg_upgrade(self, new_bin_dir: str | os.PathLike) -> None:
        """A real major-version upgrade of this cluster in place: stop it, initdb a new data
        directory with ``new_bin_dir``'s programs, run its pg_upgrade (as ``postgres``), and
        start the new cluster on a new port. What an operator does after (the package's
        superuser step) is the caller's."""
        new_bin, old_data = Path(new_bin_dir), self.pgdata
        new_data = self.base / f"data{self._major(new_bin)}"
        self._as_postgres(self.bin_dir / "pg_ctl", "-D", old_data, "-m", "fast", "-w", "stop")
        self._init_data(new_bin, new_data)
        self._as_postgres(new_bin / "pg_upgrade", "-b", self.bin_dir, "-B", new_bin,
                          "-d", old_data, "-D", new_data, "-U", SUPERUSER,
                          "-p", str(_free_port()), "-P", str(_free_port()),
                          "-s", self.sockdir, cwd=self.base)
        self.bin_dir, self.pgdata = new_bin, new_data
        self._start_server()

    def _start_server(self) -> None:
        for attempt in range(3):  # a port picked as free may be taken before we bind it
            self.port = _free_port()
            with open(self.pgdata / "postgresql.conf", "a") as f:
                f.write(f"port = {self.port}\n")  # the last setting in the file wins
            try:
                self._as_postgres(self.bin_dir / "pg_ctl", "-D", self.pgdata, "-l", self.log_path,
                                  "-w", "-t", "60", "start")
                return
            except RuntimeError:
                if attempt == 2:
                    raise

    def _bootstrap_roles(self) -> None:
        with self.connect_super() as conn:
            for role, attrs, password in (
                (self.owner, "LOGIN CREATEROLE NOSUPERUSER", self.owner_password),
                (self.worker, "LOGIN", self.worker_password),
            ):
                conn.execute(sql.SQL("CREATE ROLE {} " + attrs + " PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(scram_sha256_verifier(password))))
            conn.execute(sql.SQL("GRANT pg_signal_backend TO {}").format(
                sql.Identifier(self.owner)))

    def pause(self) -> None:
        """Stop the server (fast), keeping its data directory and port: :meth:`resume`
        starts it again where it was (a server going down and coming back)."""
        self._as_postgres(self.bin_dir / "pg_ctl", "-D", self.pgdata, "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        self._as_postgres(self.bin_dir / "pg_ctl", "-D", self.pgdata, "-l", self.log_path,
                          "-w", "-t", "60", "start")

    def build_template(self) -> list[str]:
        """Create the template metadata database; return the migration ids applied."""
        return self.create_metadata_database(self.template)

    def stop(self) -> None:
        """Stop the server (immediate) and remove its directory, unless kept or attached."""
        if not self.owned or self.pgdata is None:
            return
        if (self.pgdata / "postmaster.pid").exists():
            try:
                self._as_postgres(self.bin_dir / "pg_ctl", "-D", self.pgdata, "-m", "immediate",
                                  "-w", "stop")
            except RuntimeError as e:
                print(f"devcluster: {e}", file=sys.stderr)
        if not self.keep and self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> "Cluster":
        return self if self.pgdata is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- settings --------------------------------------------------------------------------

    def set_setting(self, name: str, value: object | None) -> None:
        """ALTER SYSTEM SET (RESET when value is None) and reload; waits until new sessions
        see the value."""
        with self.connect_super() as conn:
            if value is None:
                conn.execute(sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(name)))
            else:
                conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                    sql.Identifier(name), sql.Literal(str(value))))
            conn.execute("SELECT pg_reload_conf()")
            if value is None:
                return
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with self.connect_super() as conn:
                (current,) = conn.execute("SELECT current_setting(%s)", [name]).fetchone()
            if current == str(value):
                return
            time.sleep(0.05)

    def restart_with(self, **settings: object) -> None:
        """ALTER SYSTEM SET each setting, then restart the server (for restart-only ones)."""
        with self.connect_super() as conn:
            for name, value in settings.items():
                conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                    sql.Identifier(name), sql.Literal(str(value))))
        self._as_postgres(self.bin_dir / "pg_ctl", "-D", self.pgdata, "-l", self.log_path,
                          "-m", "fast", "-w", "-t", "60", "restart")


# ---- schema snapshot ----------------------------------------------------------------------

def normalise_schema_dump(text: str) -> str:
    """Drop pg_dump's comments, session SETs and \\restrict lines; collapse blank lines."""
    skip = ("--", "SET ", "SELECT pg_catalog.set_config", "\\restrict", "\\unrestrict")
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith(skip):
            continue
        if not line.strip():
            if out and out[-1] == "":
                continue
            line = ""
        out.append(line)
    while out and out[0] == "":
        out.pop(0)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def dump_schema(cluster: Cluster, dbname: str) -> str:
    """pg_dump --schema-only of schemas public and datatable_roles, normalised."""
    cmd = [str(PG_CLIENT_BIN / "pg_dump"), "--schema-only", "--no-comments",
           "-n", "public", "-n", "datatable_roles"]
    for pattern in YOYO_TABLES:
        cmd += ["-T", pattern]
    cmd += ["-d", cluster.superuser_conninfo(dbname)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return normalise_schema_dump(proc.stdout)


def schema_snapshot(cluster: Cluster, migrations_dir: str | os.PathLike | None = None) -> str:
    """Migrate a fresh database (as the owner) from empty to head and dump its schema."""
    dbname = "dtr_schema_" + secrets.token_hex(4)
    try:
        cluster.create_metadata_database(dbname, migrations_dir)
        return dump_schema(cluster, dbname)
    finally:
        cluster.drop_database(dbname)


# ---- command line -------------------------------------------------------------------------

def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def _cmd_run(args) -> int:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise SystemExit("devcluster run: no command given (run [--keep] -- CMD...)")
    cluster = Cluster(log_statement=args.log_statement, keep=args.keep)
    cluster.start()
    try:
        env = dict(os.environ, **cluster.env())
        # The caller's interpreter (the venv's) and its scripts come first on PATH.
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        env["DTR_PYTHON"] = sys.executable
        print(f"devcluster: PostgreSQL on port {cluster.port}, socket {cluster.sockdir}, "
              f"log {cluster.log_path}", file=sys.stderr, flush=True)
        rc = subprocess.call(cmd, env=env)
        return rc if rc >= 0 else 128 - rc
    finally:
        cluster.stop()
        if args.keep:
            print(f"devcluster: kept {cluster.base} (server stopped)", file=sys.stderr)


def _cmd_schema(args) -> int:
    with Cluster().start(build_template=False) as cluster:
        text = schema_snapshot(cluster)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m datatable_roles_lab.devcluster",
                                     description="Throwaway PostgreSQL cluster for tests.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start a cluster, run CMD against it, tear it down")
    run.add_argument("--keep", action="store_true", help="keep the cluster directory")
    run.add_argument("--log-statement", default="none",
                     choices=["none", "ddl", "mod", "all"])
    run.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    run.set_defaults(func=_cmd_run)
    schema = sub.add_parser("schema", help="migrate a fresh database and dump its schema")
    schema.add_argument("--output", default=str(SQL_DIR / "schema.sql"))
    schema.set_defaults(func=_cmd_schema)
    args = parser.parse_args(argv)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
