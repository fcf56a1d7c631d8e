"""The lab's demo end to end (`python -m datatable_roles_lab.demo`, what `make demo` runs), so
that it cannot rot: a subprocess that starts its own cluster, and the key lines of its tour."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

# The same on every PostgreSQL version: run once in `make test` (tests/conftest.py).
pytestmark = pytest.mark.version_independent


def run_demo(*extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "datatable_roles_lab.demo", *extra],
                          capture_output=True, text=True, timeout=600)


def sections(out: str) -> dict[str, str]:
    """Section number -> its text (a heading line 'N. Title' underlined with '=')."""
    parts = re.split(r"^(\d+)\. .*\n=+\n", out, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


ONE_ROLE = re.compile(r"wm_set_[0-9a-f]{10}\.\.\. \(one-role login\)")


def one_role(cells: list[str], roles: str, orders: str) -> None:
    """A row whose connection is a one-role login holding ``roles`` and seeing ``orders``."""
    assert ONE_ROLE.fullmatch(cells[1]), cells
    assert cells[2:] == [roles, orders], cells


def row(text: str, first: str, last: bool = False) -> list[str]:
    """The cells of the (first, or ``last``) table row that starts with ``first`` (cells are
    2+ spaces apart)."""
    lines = text.splitlines()
    for line in reversed(lines) if last else lines:
        cells = re.split(r"\s{2,}", line.strip())
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in:\n{text}")


@pytest.fixture(scope="module")
def demo_output() -> str:
    proc = run_demo()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_demo_tour_shows_each_kind_of_default(demo_output):
    s = sections(demo_output)
    assert sorted(s, key=int) == [str(i) for i in range(1, 12)]
    assert "Default role: admin" in demo_output and "No default role" in demo_output

    # 2. default admin: everyone is the admin login and sees every order (R2)
    for viewer in ("alice", "bob", "carol", "dave", "(anonymous)"):
        assert row(s["2"], viewer)[1:] == ["main_admin (admin login)", "admin", "1,2,3,4,5,6"]

    # 3. default sales_us: the default plus the viewer's roles (R3)
    one_role(row(s["3"], "bob"), "sales_us", "2,5")
    alice = row(s["3"], "alice")
    assert alice[1].startswith("wm_set_") and alice[1].endswith("(set login)")
    assert alice[2:] == ["sales_emea, sales_us", "1,2,4,5"]
    assert row(s["3"], "carol")[2:] == ["finance, sales_emea, sales_us", "1,2,3,4,5"]
    one_role(row(s["3"], "dave"), "sales_us", "2,5")
    assert row(s["3"], "dave")[1] == row(s["3"], "bob")[1]  # one login per set of roles

    # 4. no default: the viewer's roles only; nobody left with none gets a login (R4, R5)
    one_role(row(s["4"], "alice"), "sales_emea", "1,4")
    one_role(row(s["4"], "bob"), "sales_us", "2,5")
    assert "options='-c role=<role>'" in s["3"]
    assert row(s["4"], "carol")[2:] == ["finance, sales_emea", "1,3,4,5"]
    assert row(s["4"], "dave")[1] == "REFUSED (R5)"
    assert row(s["4"], "(anonymous)")[1] == "REFUSED (R5)"
    assert "no viewer was recorded" in s["4"]


def test_demo_named_roles_set_role_explain_status_and_lint(demo_output):
    s = sections(demo_output)
    carol = row(s["5"], "carol runs a script")
    assert carol[1] == "finance" and ONE_ROLE.fullmatch(carol[2]) and carol[3] == "3,4,5"
    assert "REFUSED (R1)" in s["5"] and "u/publisher is not a tenant" in s["5"]

    assert row(s["6"], "SET ROLE sales_emea")[1:] == ["sales_emea", "1,4"]
    assert row(s["6"], "RESET ROLE")[2] == "1,3,4,5"
    assert 'ERROR: permission denied to set role "main_admin"' in s["6"]
    # alice's one-role login acts as sales_emea; SET ROLE NONE is the login itself
    assert "options='-c role=sales_emea'" in s["6"]
    assert row(s["6"], "(as connected)", last=True)[1:] == ["sales_emea", "1,4"]
    assert row(s["6"], "RESET ROLE", last=True)[1:] == ["sales_emea", "1,4"]
    assert row(s["6"], "SET ROLE NONE")[1].startswith("wm_set_")
    assert row(s["6"], "SET ROLE NONE")[2] == "1,4"
    assert row(s["6"], "SET ROLE sales_us")[2].startswith("ERROR: permission denied")

    assert "roles: finance (named by f/finance); sales_emea (named by g/emea)" in s["7"]
    assert re.search(r"=> login wm_set_[0-9a-f]{40} \(set login, exists\), "
                     r"roles finance, sales_emea, database dt_main", s["7"])

    assert "Data table acme/main (database dt_main, admin login main_admin)" in s["8"]
    # three sets and three one-role logins (sales_us, sales_emea, finance), all on dt_main
    assert len(re.findall(r"^  wm_set_[0-9a-f]{40}  .*  dt_main  .*active$", s["8"],
                          flags=re.M)) == 6

    # 9. a policy naming its role in TO follows a rename; one naming it as text breaks
    assert row(s["9"], "finance -> finance_team")[1:] == [
        "carol", "finance_team, sales_emea", "1,3,4,5"]
    assert row(s["9"], "sales_us -> sales_americas")[1:] == [
        "bob", "sales_americas", 'ERROR: role "sales_us" does not exist']
    assert row(s["9"], "(then)")[3] == 'ERROR: role "sales_us" does not exist'
    assert "$ datatable-roles --dsn <dtr_demo_meta as dtr_owner> lint-policies" in s["9"]
    assert row(s["9"], "dt_main")[1:] == ["public.orders", "us_sales", "USING", "sales_us"]
    assert "1 policy clause(s) name a missing role, 0 an existing role as text" in s["9"]


def test_demo_plans_and_applies_a_grant(demo_output):
    s = sections(demo_output)["10"]
    assert ("$ datatable-roles --dsn <dtr_demo_meta as dtr_owner> acl plan acme main --schema"
            " public --table region_targets --grant SELECT --to sales_emea") in s
    plan = s[s.index("Plan for data table acme/main"):].splitlines()
    assert plan[1:3] == ["Statements (1):",
                         "  1. GRANT SELECT ON TABLE public.region_targets TO sales_emea"
                         "  -- as main_admin"]
    assert plan[3].startswith("  (-- as ROLE: the statement runs as the object's owner")
    assert plan[4] == "Warnings (1):" and plan[5].startswith("  - rls_disabled: ")
    assert "session as the object's owner (-- as ROLE), so the owner is the grantor" in s
    assert "runs them as the package's link login" not in s
    assert "acl apply acme main --schema public --table region_targets --grant SELECT --to" \
        " sales_emea --yes" in s
    assert "Applied 1 statement(s) in one transaction; audit row 1 of" \
        " datatable_roles.acl_change." in s
    # a viewer of sales_emea reads the rows as its resolved login; a viewer without it cannot
    denied = "ERROR: permission denied for table region_targets"
    everything = "apac=2000,emea=5000,us=7000"
    assert row(s, "alice")[1:] == ["sales_emea", denied, everything]
    assert row(s, "carol")[1:] == ["finance_team, sales_emea", denied, everything]
    assert row(s, "bob")[1:] == ["sales_americas", denied, denied]


def test_demo_serves_a_data_table_on_a_second_server(demo_output):
    text = sections(demo_output)["11"]
    one_role(row(text, "alice"), "sales_emea", "1,4")
    one_role(row(text, "bob"), "sales_americas", "2,5")
    assert row(text, "dave")[1] == "REFUSED (R5)"
    # Down while a role left the map: refused (55000) until the change is applied there.
    assert re.search(r"^  alice: refused \(55000, server eu has changes not applied yet",
                     text, flags=re.M), text
    one_role(row(text, "alice", last=True), "sales_emea", "1,4")
    assert row(text, "bob", last=True)[1] == "REFUSED (R5)"
    assert "its clusters are stopped and removed" in text


def test_demo_says_what_its_time_covers(demo_output):
    assert re.search(r"^Demo done in \d+\.\d s, from starting the cluster to removing it\n"
                     r"\(not counting what `make demo` installs first\)", demo_output,
                     flags=re.M)


def test_demo_stops_and_removes_its_cluster(demo_output):
    m = re.search(r"^  in (/\S+)$", demo_output, flags=re.M)
    assert m, demo_output
    assert not Path(m.group(1)).exists()


def test_demo_prints_no_password(demo_output):
    # the package's generated passwords are 64 hex digits (datatable_roles.new_password)
    assert not re.search(r"\b[0-9a-f]{64}\b", demo_output)
    assert "SCRAM-SHA-256$" not in demo_output


def test_demo_json():
    proc = run_demo("--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True and len(data["sections"]) == 11
    tables = {t["name"]: t["rows"] for sec in data["sections"] for t in sec["tables"]}
    none = {r["viewer"]: r for r in tables["default_none"]}
    assert none["alice"]["orders"] == "1,4" and none["alice"]["kind"] == "role"
    assert none["alice"]["login"].startswith("wm_set_")
    assert none["carol"]["kind"] == "set" and none["carol"]["login"].startswith("wm_set_")
    assert none["dave"]["refused"]["class"] == "Refused"
    assert none["dave"]["refused"]["sqlstate"] == "42501"
    lint = data["sections"][8]["lint"]
    assert lint["databases"] == ["dt_main"] and lint["rename_hazards"] == []
    assert [(f["policy"], f["role"]) for f in lint["missing_roles"]] == [("us_sales", "sales_us")]
    renamed = {r["renamed"]: r for r in tables["renames"]}
    assert renamed["finance -> finance_team"]["orders"] == "1,3,4,5"
    grants = data["sections"][9]
    assert grants["plan"]["statements"] == [
        "GRANT SELECT ON TABLE public.region_targets TO sales_emea"]
    assert [w["code"] for w in grants["plan"]["warnings"]] == ["rls_disabled"]
    assert grants["applied"] == {"applied": 1, "audit_id": 1}
    seen = {r["viewer"]: r for r in tables["grants"]}
    assert seen["alice"]["after"] == "apac=2000,emea=5000,us=7000"
    assert seen["alice"]["login"].startswith("wm_set_")
    assert seen["bob"]["after"].startswith("ERROR: permission denied")
