"""The docs an operator installs, runs and debugs the package from.

- docs/sql-api.md documents every entry point of an installed database: each function and
  procedure the package owner owns in schema ``public`` (read from pg_proc of a real install,
  not from a list kept here), and the owner's operator calls in ``datatable_roles``;
- every link from README.md or docs/*.md to another file of the repository resolves (and
  so does its ``#anchor``, when it names a heading of a Markdown file), and so does every
  bare mention of a ``docs/*.md`` file;
- README.md and docs/ cite nothing that is not in the repository: no SPEC (sections of it,
  or "the spec"), no "seed";
- docs/rules.md defines R1-R12 itself, in a table, before anything cites them.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import psycopg
import pytest

# The same on every PostgreSQL version: run once in `make test` (tests/conftest.py).
pytestmark = pytest.mark.version_independent

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
SQL_API = DOCS / "sql-api.md"
DOC_FILES = sorted(DOCS.glob("*.md"))
README = REPO / "README.md"

# The owner's calls in schema datatable_roles that operators make (docs/operating.md,
# docs/integration.md): documented in sql-api.md like the public ones.
OPERATOR_CALLS = ("grant_worker", "grant_directory_writer", "status_report")

# Citations of documents that are not in the repository.
FOREIGN = [
    (re.compile(r"\bspec(ification)?\b", re.IGNORECASE), "SPEC"),
    (re.compile(r"\bseed\b", re.IGNORECASE), "the seed"),
]


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def documented(name: str, text: str) -> bool:
    """``name`` is a heading of the page, or appears in backticks as a call: `name(`."""
    word = re.escape(name)
    heading = re.compile(rf"^#+ .*(?<![\w.]){word}(?!\w)", re.MULTILINE)
    call = re.compile(rf"`(?:[a-z_]+\.)?{word}\(")
    return bool(heading.search(text) or call.search(text))


def package_entry_points(conninfo: str, owner: str) -> list[tuple[str, str]]:
    """(name, kind) of every function and procedure in schema public owned by the package
    owner (extensions' members left out), from the installed catalog."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return conn.execute(
            """
            SELECT p.proname, CASE p.prokind WHEN 'p' THEN 'procedure' ELSE 'function' END
            FROM pg_proc AS p
            JOIN pg_namespace AS n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public'
                AND p.proowner = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = %s)
                AND p.prokind IN ('f', 'p')
                AND NOT EXISTS (
                    SELECT FROM pg_depend AS d
                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
            ORDER BY 1
            """, [owner]).fetchall()


def test_every_public_function_is_in_sql_api(cluster, meta_db):
    entry_points = package_entry_points(meta_db.owner_conninfo, cluster.owner)
    names = {name for name, _ in entry_points}
    # The install is the package's: its resolve, its directory calls and its sweep.
    assert {"resolve_datatable_role", "sync_workspace_directory",
            "sweep_unused_role_set_logins"} <= names, names
    assert ("sweep_unused_role_set_logins", "procedure") in entry_points
    text = SQL_API.read_text()
    missing = sorted(name for name in names if not documented(name, text))
    assert not missing, f"docs/sql-api.md does not document {missing}"


def test_operator_calls_are_in_sql_api(cluster, meta_db):
    with psycopg.connect(meta_db.owner_conninfo, autocommit=True) as conn:
        present = {name for (name,) in conn.execute(
            "SELECT p.proname FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'datatable_roles' AND p.proname = ANY(%s)",
            [list(OPERATOR_CALLS)])}
    assert present == set(OPERATOR_CALLS)
    text = SQL_API.read_text()
    missing = [name for name in OPERATOR_CALLS
               if not documented(name, text) or f"datatable_roles.{name}" not in text]
    assert not missing, f"docs/sql-api.md does not document {missing}"


def test_worker_and_writer_grants_match_sql_api(cluster, meta_db, uid, scratch):
    """Who may call what, as sql-api.md says: each role granted by grant_worker and
    grant_directory_writer gets EXECUTE on exactly the functions the page lists for it."""
    with psycopg.connect(meta_db.owner_conninfo, autocommit=True) as conn:
        granted = {}
        for grant in ("grant_worker", "grant_directory_writer"):
            role = f"{uid}_{grant}"
            with psycopg.connect(meta_db.super_conninfo, autocommit=True) as su:
                su.execute(f'CREATE ROLE "{role}" NOLOGIN')
            conn.execute(f"SELECT datatable_roles.{grant}(%s)", [role])
            granted[grant] = {name for (name,) in conn.execute(
                "SELECT p.proname FROM pg_proc AS p JOIN pg_namespace AS n"
                " ON n.oid = p.pronamespace WHERE n.nspname = 'public'"
                " AND p.proowner = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = %s)"
                " AND has_function_privilege(%s, p.oid, 'EXECUTE')", [cluster.owner, role])}
    text = SQL_API.read_text()
    for grant, names in granted.items():
        line = next((ln for ln in text.splitlines() if f"| `{grant}` |" in ln), None)
        assert line is not None, f"docs/sql-api.md has no row for {grant} in its table of callers"
        listed = set(re.findall(r"`([a-z_]+)`", line.split("|")[-2]))
        assert listed == names, (grant, listed, names)


def links_of(path: Path) -> list[str]:
    """The targets of the Markdown links of a file, outside code blocks."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = heading.strip().lower()
    text = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return text.replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.MULTILINE)}


@pytest.mark.parametrize("path", [README, *DOC_FILES], ids=rel)
def test_links_resolve(path):
    broken = []
    for target in links_of(path):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not this repository's
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors_of(dest):
            broken.append(target)
    # Bare mentions of a doc file (docs/trust.md, or trust.md from within docs/).
    text = path.read_text()
    for mention in set(re.findall(r"(?<![\w/.-])((?:docs/)?[a-z-]+\.md)\b", text)):
        if not ((REPO / mention).exists() or (path.parent / mention).exists()
                or (DOCS / mention).exists()):
            broken.append(mention)
    assert not broken, f"{rel(path)}: links to nothing: {sorted(set(broken))}"


@pytest.mark.parametrize("path", [README, *DOC_FILES], ids=rel)
def test_no_citation_outside_the_repository(path):
    found = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        for pattern, what in FOREIGN:
            if pattern.search(line):
                found.append(f"line {n} ({what}): {line.strip()}")
    assert not found, f"{rel(path)} cites documents that are not in the repository:\n" + \
        "\n".join(found)


def test_rules_page_defines_the_rules():
    """docs/rules.md is self-contained: a table defines R1-R12 before the page cites any."""
    text = (DOCS / "rules.md").read_text()
    rows: dict[str, int] = {}
    for m in re.finditer(r"^\| \**(R\d+)\b", text, re.MULTILINE):
        rows.setdefault(m.group(1), m.start())
    assert set(rows) >= {f"R{i}" for i in range(1, 13)}, sorted(rows)
    first_row = min(rows.values())
    before = text[:first_row]
    assert not re.search(r"\bR\d+\b", before), "docs/rules.md cites a rule before its table"
