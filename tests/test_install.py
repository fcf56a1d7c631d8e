"""`pip install ./python` (not editable) into a fresh virtualenv gives a `datatable-roles`
command that works without the repository: its SQL (bootstrap, migrations, function sources
of every tier) comes from the installed package, and the lab (lab/: throwaway clusters, the
dev PgBouncer, the demo, the bench) is not in it.

One venv for the module (python3 -m venv, then pip install with requirements.txt's pins as
constraints, from PyPI or the machine's configured wheel sources; about a minute). Every
command runs from an empty temporary directory with no PYTHONPATH, so nothing of the
repository can be imported by accident.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

# The same on every PostgreSQL version: run once in `make test` (tests/conftest.py).
pytestmark = pytest.mark.version_independent

REPO = Path(__file__).resolve().parent.parent
PACKAGE_SRC = REPO / "python"
SQL_SRC = PACKAGE_SRC / "datatable_roles" / "sql"


def clean_env() -> dict[str, str]:
    """The environment without anything that points Python at the repository."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")}


def constraints_from(requirements: Path) -> str:
    """requirements.txt's pins as a constraints file (pip refuses extras there)."""
    lines = []
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            lines.append(re.sub(r"\[[^\]]*\]", "", line))
    return "\n".join(lines) + "\n"


class Venv:
    def __init__(self, root: Path, cwd: Path) -> None:
        self.root = root
        self.cwd = cwd
        self.python = root / "bin" / "python"
        self.cli = root / "bin" / "datatable-roles"

    def run(self, *argv: str | Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([str(a) for a in argv], cwd=self.cwd, env=clean_env(),
                              capture_output=True, text=True, timeout=timeout)

    def py(self, code: str) -> str:
        proc = self.run(self.python, "-c", code)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout.strip()


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Venv:
    base = tmp_path_factory.mktemp("install")
    # pip builds a local project in its own tree (build/, *.egg-info): build a copy, so that
    # the shared work tree is not written to.
    src = base / "src"
    shutil.copytree(PACKAGE_SRC, src, ignore=shutil.ignore_patterns(
        "*.egg-info", "build", "__pycache__", "*.pyc"))
    constraints = base / "constraints.txt"
    constraints.write_text(constraints_from(REPO / "requirements.txt"))
    cwd = base / "cwd"
    cwd.mkdir()
    v = Venv(base / "venv", cwd)
    proc = v.run(sys.executable, "-m", "venv", v.root, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = v.run(v.python, "-m", "pip", "install", "--no-input", "-q",
                 "--disable-pip-version-check", "-c", constraints, src, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shutil.rmtree(src)  # from here on, only the install exists
    return v


def test_the_installed_package_is_the_venvs_own(venv):
    info = json.loads(venv.py(
        "import json, sys, sysconfig, datatable_roles, datatable_roles.migrate as m;"
        "print(json.dumps({'file': datatable_roles.__file__,"
        " 'purelib': sysconfig.get_path('purelib'),"
        " 'sql_dir': str(m.SQL_DIR), 'bootstrap': str(m.BOOTSTRAP_SQL),"
        " 'path': sys.path}))"))
    purelib = Path(info["purelib"]).resolve()
    assert Path(info["file"]).resolve().parent == purelib / "datatable_roles"
    assert Path(info["sql_dir"]).resolve() == purelib / "datatable_roles" / "sql"
    assert not any(p and Path(p).resolve().is_relative_to(REPO) for p in info["path"])
    # Every module of the package imports from the install, and no import reaches the repo.
    modules = sorted(p.stem for p in (PACKAGE_SRC / "datatable_roles").glob("*.py")
                     if p.stem != "__main__")
    files = json.loads(venv.py(
        "import importlib, json, sys;"
        f"[importlib.import_module('datatable_roles.' + m) for m in {modules!r}];"
        "print(json.dumps([getattr(m, '__file__', None) or '' for m in sys.modules.values()]))"))
    assert not [f for f in files if f and Path(f).resolve().is_relative_to(REPO)]
    # The SQL shipped whole: every file of python/datatable_roles/sql is in the install.
    wanted = {p.relative_to(SQL_SRC) for p in SQL_SRC.rglob("*")
              if p.is_file() and "__pycache__" not in p.parts}
    installed = Path(info["sql_dir"])
    shipped = {p.relative_to(installed) for p in installed.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert wanted <= shipped, f"not in the install: {sorted(map(str, wanted - shipped))}"
    assert Path(info["bootstrap"]).is_file()


def test_installed_cli_migrates_a_fresh_metadata_database(venv, cluster, uid):
    dbname = f"{uid}_installed"
    bootstrap = venv.py("from datatable_roles.migrate import BOOTSTRAP_SQL; print(BOOTSTRAP_SQL)")
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(dbname), sql.Identifier(cluster.owner)))
    link = None
    try:
        cluster.psql_file(bootstrap, dbname, owner=cluster.owner)  # the installed file
        dsn = cluster.owner_conninfo(dbname)
        proc = venv.run(venv.cli, "--dsn", dsn, "--json", "migrate")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        applied = json.loads(proc.stdout)["applied"]
        assert applied == sorted(p.stem for p in (SQL_SRC / "migrations").glob("[0-9]*.sql"))
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "SELECT count(*) FROM pg_namespace WHERE nspname = 'datatable_roles'"
            ).fetchone() == (1,)
            assert conn.execute(
                "SELECT to_regprocedure('public.resolve_datatable_role(uuid, text, text, boolean)')"
                " IS NOT NULL, to_regprocedure('datatable_roles.status_report()') IS NOT NULL"
            ).fetchone() == (True, True)
            (link,) = conn.execute("SELECT login FROM datatable_roles.link_credential").fetchone()
        # The installed status command reads it back (an empty instance).
        proc = venv.run(venv.cli, "--dsn", dsn, "status", "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        status = json.loads(proc.stdout)
        assert status["datatables"] == [] and status["set_logins"] == []
        proc = venv.run(venv.cli, "--dsn", dsn, "migrate")
        assert (proc.returncode, proc.stdout.strip()) == (0, "nothing to apply"), proc.stderr
        assert cluster.owner_password not in proc.stdout + proc.stderr
    finally:
        with cluster.connect_super() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(dbname)))
            if link is not None:
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(link)))


# What the lab holds (lab/datatable_roles_lab), by module name: none of it may ship.
LAB_MODULE = re.compile(r"(^|/)(devcluster|pgbouncer|demo|bench\w*)\.py$|(^|/)bench/"
                        r"|datatable_roles_lab")


def test_the_wheel_ships_the_product_and_no_lab(venv):
    """The wheel's file list (its RECORD): no bench, dev cluster, PgBouncer runner or demo
    module; every function source of each tier (core, remote, api) and every remote script."""
    files = json.loads(venv.py(
        "import json, importlib.metadata as m;"
        "print(json.dumps([str(f) for f in m.files('datatable-roles')]))"))
    assert "datatable_roles/cli.py" in files and "datatable_roles/doctor/__init__.py" in files
    assert [f for f in files if LAB_MODULE.search(f)] == []
    proc = venv.run(venv.python, "-c", "import datatable_roles_lab")
    assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr
    proc = venv.run(venv.cli, "demo")  # the demo is the lab's: `make demo`
    assert proc.returncode == 2 and "invalid choice: 'demo'" in proc.stderr
    functions = SQL_SRC / "functions"
    for tier in ("core", "remote", "api", "remote/scripts"):
        wanted = {f"datatable_roles/sql/functions/{tier}/{p.name}"
                  for p in (functions / tier).glob("*.sql")}
        if tier != "remote/scripts" or (functions / tier).is_dir():
            assert wanted, f"no SQL in sql/functions/{tier}"
        assert wanted <= set(files), sorted(wanted - set(files))
