"""The package version and migration levels, without a database: one home for the version
(pyproject.toml reads datatable_roles.__version__), --version's text, CHANGELOG.md and the
README line against it, and how an install's migrations compare with the package's. What
status shows on real databases is in test_cli.py."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import datatable_roles
from datatable_roles import cli
from datatable_roles.render import render_schema_level
from datatable_roles.versions import compare_levels

REPO = Path(__file__).resolve().parent.parent
MIGRATIONS = REPO / "python" / "datatable_roles" / "sql" / "migrations"
VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def shipped_migrations() -> list[str]:
    """The migration files in the checkout, by name (not through the package's code)."""
    return sorted(n[:-4] for n in os.listdir(MIGRATIONS) if re.match(r"^\d{4}_.*\.sql$", n))


def test_the_version_has_one_home_that_pyproject_and_the_install_read():
    pyproject = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "datatable_roles.__version__"}
    assert VERSION.match(datatable_roles.__version__)
    # the metadata the build backend wrote at install time
    assert importlib.metadata.version("datatable-roles") == datatable_roles.__version__, (
        "the installed metadata is older than __version__: pip install -e python/ again")


def test_version_prints_the_package_version_and_its_newest_migration(capsys):
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out == (f"datatable-roles {datatable_roles.__version__} "
                   f"(schema {shipped_migrations()[-1]})\n")
    assert datatable_roles.__version__ != "0.1.0"  # 0.1.0 is the release at 0009
    # the console script prints the same
    script = Path(sys.executable).parent / "datatable-roles"
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stdout) == (0, out)


def changelog_sections() -> dict[str, str]:
    text = (REPO / "CHANGELOG.md").read_text()
    parts = re.split(r"^## (\d+\.\d+\.\d+)\b.*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_changelog_has_every_version_newest_first_and_names_every_migration():
    sections = changelog_sections()
    versions = list(sections)
    assert versions[0] == datatable_roles.__version__
    assert versions[-1] == "0.1.0"
    key = [tuple(map(int, v.split("."))) for v in versions]
    assert key == sorted(key, reverse=True) and len(set(key)) == len(key)
    for name in shipped_migrations():  # each migration in the section of its version
        holders = [v for v, body in sections.items() if f"`{name}`" in body]
        assert len(holders) == 1, f"CHANGELOG.md names {name} in {holders or 'no section'}"
    assert re.search(r"`0009_lifecycle`", sections["0.1.0"])


def test_the_readme_names_the_current_version_and_the_changelog():
    readme = (REPO / "README.md").read_text()
    line = re.search(r"^Version (\d+\.\d+\.\d+)\b.*$", readme, flags=re.M)
    assert line and line.group(1) == datatable_roles.__version__
    assert "[CHANGELOG.md](CHANGELOG.md)" in readme


PACKAGE = ["0001_a", "0002_b", "0003_c"]


@pytest.mark.parametrize("applied, state, installed, pending, unknown", [
    (PACKAGE, "current", "0003_c", [], []),
    (PACKAGE[:2], "behind", "0002_b", ["0003_c"], []),
    ([], "behind", None, PACKAGE, []),
    (PACKAGE + ["0004_d"], "ahead", "0004_d", [], ["0004_d"]),
    (PACKAGE[:2] + ["0004_d"], "ahead", "0004_d", ["0003_c"], ["0004_d"]),
    (None, "unknown", None, PACKAGE, []),
])
def test_an_installs_migrations_against_the_packages(applied, state, installed, pending,
                                                     unknown):
    level = compare_levels(PACKAGE, applied, version="9.9.9").as_dict()
    assert level == {"package_version": "9.9.9", "package_schema": "0003_c",
                     "installed_schema": installed, "state": state, "pending": pending,
                     "unknown": unknown}
    text = render_schema_level(level)
    assert text.startswith("datatable-roles 9.9.9 (schema 0003_c); ")
    assert ("run datatable-roles migrate" in text) == (state == "behind")
    assert ("upgrade the package" in text) == (state == "ahead")
    assert ("unknown" in text) == (state == "unknown")
    if state == "current":
        assert text.endswith("this database is at 0003_c")
