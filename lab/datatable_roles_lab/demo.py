"""``make demo`` (``python -m datatable_roles_lab.demo [--json]``): a short tour on a throwaway
cluster.

It starts its own PostgreSQL cluster (devcluster.Cluster), installs the package into a
metadata database (bootstrap + migrations), builds a small workspace and one data table whose
``orders`` are under row-level security, then shows, for each viewer of a publisher-mode app
and each kind of default role (admin, a role, none), the login the connection resolves to and
the orders it actually sees over a real login with the returned password. Last, two renames:
a policy that names its role in ``TO`` follows, one that names it as text breaks, and
lint-policies finds it. Then the grants editor: a new table, a plan granting SELECT on it to
a catalog role (its statements and warnings), the apply of exactly those statements, and a
viewer of that role reading its rows. Last, a data table on a second throwaway cluster (a
registered server), and that server going down while a role leaves the map. The clusters are
stopped and removed at the end. Role names are
cluster-wide; the demo owns its cluster.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any, TextIO

import psycopg
from psycopg import sql

from datatable_roles.client import Client, Resolution
from datatable_roles.errors import DatatableRolesError, Refused
from datatable_roles.policy_lint import lint_databases
from datatable_roles.render import (format_table, render_acl_applied, render_acl_plan,
                                    render_explain, render_lint, render_status, to_json)
from datatable_roles.scram import scram_sha256_verifier

from .devcluster import Cluster

META_DB = "dtr_demo_meta"
DT_DB = "dt_main"
DT_ADMIN = "main_admin"
WS = "acme"
DT = "main"
PUBLISHER = "u/publisher"


@dataclass(frozen=True)
class Viewer:
    name: str
    email: str | None
    groups: tuple[str, ...]
    note: str


VIEWERS = (
    Viewer("alice", "alice@acme.test", ("emea",), "EMEA sales"),
    Viewer("bob", "bob@acme.test", ("us",), "US sales"),
    Viewer("carol", "carol@acme.test", ("finance", "emea"),
           "EMEA finance: reads folder finance through group finance"),
    Viewer("dave", "dave@acme.test", (), "in no group"),
    Viewer("(anonymous)", None, (), "a public app page: no viewer recorded"),
)

ORDERS = (
    (1, "emea", "open", 120), (2, "us", "open", 340), (3, "apac", "invoiced", 75),
    (4, "emea", "invoiced", 990), (5, "us", "invoiced", 410), (6, "apac", "open", 55),
)

# policy name -> (catalog role, row condition, whether it names the role as text). A policy
# names its role in TO (docs/policies.md):
#   CREATE POLICY <name> ON orders FOR SELECT TO <role> USING (<condition>)
# but us_sales names it as text, the form docs/policies.md warns about, to show in
# section 9 why not:
#   USING (<condition> AND pg_has_role(current_user, '<role>', 'member'))
POLICIES = {
    "emea_sales": ("sales_emea", "region = 'emea'", False),
    "us_sales": ("sales_us", "region = 'us'", True),
    "finance_invoiced": ("finance", "status = 'invoiced'", False),
}


def policy_sql(name: str) -> sql.Composed:
    role, condition, as_text = POLICIES[name]
    if as_text:
        return sql.SQL("CREATE POLICY {} ON orders FOR SELECT USING ({} AND "
                       "pg_has_role(current_user, {}, 'member'))").format(
            sql.Identifier(name), sql.SQL(condition), sql.Literal(role))
    return sql.SQL("CREATE POLICY {} ON orders FOR SELECT TO {} USING ({})").format(
        sql.Identifier(name), sql.Identifier(role), sql.SQL(condition))


TENANTS = {
    "sales_emea": ["g/emea"],
    "sales_us": ["g/us", PUBLISHER],   # the app's publisher may use sales_us
    "finance": ["f/finance"],          # whoever may read folder finance
}

ORDERS_SEEN = "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '(no rows)') FROM orders"

# Section 10: the table a migration adds, and the grant planned and applied on it.
NEW_TABLE = "region_targets"
TARGETS = (("apac", 2000), ("emea", 5000), ("us", 7000))
TARGETS_SEEN = (f"SELECT coalesce(string_agg(region || '=' || target, ',' ORDER BY region),"
                f" '(no rows)') FROM {NEW_TABLE}")
GRANTEE = "sales_emea"


class Tour:
    """Prints the tour as it goes (text mode) and records it (for --json)."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.sections: list[dict[str, Any]] = []
        self.started = time.monotonic()

    def _print(self, text: str = "") -> None:
        if self.stream is not None:
            print(text, file=self.stream, flush=True)

    def heading(self, title: str, *explanation: str) -> None:
        self.sections.append({"title": title, "notes": list(explanation), "tables": []})
        self._print()
        self._print(title)
        self._print("=" * len(title))
        for line in explanation:
            self._print(line)

    def say(self, text: str = "") -> None:
        if self.sections:
            self.sections[-1]["notes"].append(text)
        self._print(text)

    def table(self, name: str, headers: list[str], rows: list[list[Any]],
              data: list[dict[str, Any]] | None = None) -> None:
        if self.sections:
            self.sections[-1]["tables"].append({
                "name": name,
                "rows": data if data is not None else [dict(zip(headers, r)) for r in rows]})
        self._print(format_table(headers, rows))


def short_login(login: str) -> str:
    return login[:17] + "..." if login.startswith("wm_set_") else login


def login_label(res: Resolution) -> str:
    return {"admin": f"{res.login} (admin login)",
            "role": f"{short_login(res.login)} (one-role login)",
            "set": f"{short_login(res.login)} (set login)"}[res.kind]


def refusal_label(err: DatatableRolesError) -> str:
    rule = err.rule if isinstance(err, Refused) else None
    return f"REFUSED{f' ({rule})' if rule else ''}"


class Demo:
    def __init__(self, cluster: Cluster, tour: Tour) -> None:
        self.cluster = cluster
        self.tour = tour
        self.admin_password = secrets.token_urlsafe(24)
        self.owner: Client | None = None
        self.worker: Client | None = None

    # ---- setup ---------------------------------------------------------------------------

    def install(self) -> list[str]:
        applied = self.cluster.create_metadata_database(META_DB)
        self.owner = Client(self.cluster.owner_conninfo(META_DB))
        self.owner.grant_worker(self.cluster.worker)
        self.worker = Client(self.cluster.worker_conninfo(META_DB))
        return applied

    def build_datatable_database(self) -> None:
        """What the platform does when it creates a data table: an admin login (granted to
        the package owner) owning a database; then the app's table and its policies."""
        with self.cluster.connect_super() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(DT_ADMIN),
                sql.Literal(scram_sha256_verifier(self.admin_password))))
            conn.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION").format(
                sql.Identifier(DT_ADMIN), sql.Identifier(self.cluster.owner)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(DT_DB), sql.Identifier(DT_ADMIN)))
        with self.cluster.connect_super(DT_DB) as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(DT_ADMIN)))
            conn.execute("CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL,"
                         " status text NOT NULL, amount integer NOT NULL)")
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO orders VALUES (%s, %s, %s, %s)", ORDERS)
            conn.execute("ALTER TABLE orders ENABLE ROW LEVEL SECURITY")

    def grant_and_police(self) -> None:
        with self.cluster.connect_super(DT_DB) as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(DT_ADMIN)))
            for policy, (role, _condition, _as_text) in POLICIES.items():
                conn.execute(sql.SQL("GRANT SELECT ON orders TO {}").format(
                    sql.Identifier(role)))
                conn.execute(policy_sql(policy))

    def setup(self) -> None:
        t = self.tour
        owner = self.owner
        assert owner is not None
        owner.add_workspace(WS)
        for v in VIEWERS:
            if v.email is None:
                continue
            owner.add_workspace_user(WS, v.name, v.email)
            for g in v.groups:
                owner.add_group_member(WS, g, v.name)
        owner.add_workspace_user(WS, "publisher", "publisher@acme.test")
        owner.set_folder_access(WS, "finance", "g/finance", "read")
        for role in TENANTS:
            owner.create_datatable_role(role)
        self.build_datatable_database()
        self.grant_and_police()
        owner.register_datatable(WS, DT, DT_DB, DT_ADMIN, self.admin_password)
        for role, tenants in TENANTS.items():
            owner.set_datatable_role_tenants(WS, DT, role, tenants)

        t.heading(
            "1. The setup",
            f"Workspace {WS!r}. An app, published by user 'publisher' and running as the",
            "publisher (publisher mode), reads the data table below for whoever views it.")
        t.table("viewers", ["viewer", "email", "groups", "who"],
                [[v.name, v.email, list(v.groups), v.note] for v in VIEWERS])
        t.say("")
        t.say(f"Catalog roles and their tenants on data table {DT!r}:")
        t.table("roles", ["role", "tenants", "policy on orders: the rows it shows"],
                [[role, tenants, next(c for r, c, _ in POLICIES.values() if r == role)]
                 for role, tenants in TENANTS.items()])
        t.say("")
        t.say(f"Data table {DT!r} is database {DT_DB}, owned by {DT_ADMIN}; orders is under")
        t.say("row-level security. emea_sales and finance_invoiced name their role in TO:")
        t.say("  CREATE POLICY emea_sales ON orders FOR SELECT TO sales_emea"
              " USING (region = 'emea')")
        t.say("us_sales names it as text, a rename hazard (section 9 shows why):")
        t.say("  ... USING (region = 'us' AND pg_has_role(current_user, 'sales_us', 'member'))")
        t.table("orders", ["id", "region", "status", "amount"], [list(o) for o in ORDERS])

    # ---- the per-viewer tables -----------------------------------------------------------

    def start_job(self, viewer: Viewer, identity: str = PUBLISHER, origin: str = "app") -> str:
        assert self.worker is not None
        job = str(uuid.uuid4())
        self.worker.record_job_start(job, WS, identity, origin, viewer.email)
        return job

    def seen(self, res: Resolution, query: str = ORDERS_SEEN) -> str:
        assert self.worker is not None
        with self.worker.connection(res) as conn:
            return str(conn.execute(query).fetchone()[0])

    def viewer_table(self, name: str, role: str | None = None, datatable: str = DT) -> None:
        assert self.worker is not None
        rows, data, refusals = [], [], []
        for v in VIEWERS:
            job = self.start_job(v)
            try:
                res = self.worker.resolve(job, datatable, role)
            except DatatableRolesError as e:
                rows.append([v.name, refusal_label(e), "-", "-"])
                refusals.append(f"  {v.name}: {e.message.split(': ', 1)[-1]}")
                data.append({"viewer": v.name, "refused": e.to_dict()})
                continue
            ids = self.seen(res)
            rows.append([v.name, login_label(res), list(res.roles), ids])
            data.append({"viewer": v.name, "login": res.login, "kind": res.kind,
                         "roles": list(res.roles), "orders": ids})
        self.tour.table(name, ["viewer", "connection logs in as", "roles held", "orders seen"],
                        rows, data)
        for line in refusals:
            self.tour.say(line)

    def defaults(self) -> None:
        t, owner = self.tour, self.owner
        assert owner is not None
        t.heading(
            "2. Default role: admin (every data table starts so)",
            "The app's connection names no role. With the default admin it is the admin login,",
            "exactly as before viewer roles existed: no tenant check, no viewer lookup (R2).",
            "admin owns the tables and bypasses row-level security, so everyone sees all rows.")
        self.viewer_table("default_admin")

        warnings = owner.set_datatable_default_role(WS, DT, "sales_us")
        assert not warnings
        t.heading(
            "3. Default role: sales_us",
            "Now the connection holds the default (the publisher is a tenant of sales_us) plus",
            "every role whose tenants name the viewer (R3). Each set of roles gets a login",
            "wm_set_<hash> of its own on this database, a member of exactly those roles (R7);",
            "for one role (R6) the connection passes options='-c role=<role>', so the session",
            "acts as the role. Catalog roles themselves never log in.")
        self.viewer_table("default_sales_us")

        owner.set_datatable_default_role(WS, DT, None)
        t.heading(
            "4. No default role",
            "Only the viewer's roles remain (R4). Nobody left with no role gets an empty or",
            "read-nothing login: dave and the anonymous viewer are refused (R5, R9).")
        self.viewer_table("default_none")

    def named_roles(self) -> None:
        t = self.tour
        assert self.worker is not None
        carol = VIEWERS[2]
        t.heading(
            "5. A named role is exactly that role (R1)",
            "Code may name a role. It is checked against the job's identity, not the viewer:",
            "the app runs as the publisher, who may use sales_us but not finance; carol's own",
            "run (she is a tenant of finance through folder finance) may name finance.")
        rows, data, refusals = [], [], []
        for label, identity, origin, role in (
            ("app viewed by carol", PUBLISHER, "app", "sales_us"),
            ("app viewed by carol", PUBLISHER, "app", "finance"),
            ("carol runs a script", "u/carol", "run", "finance"),
        ):
            job = self.start_job(carol, identity, origin)
            try:
                res = self.worker.resolve(job, DT, role)
                ids = self.seen(res)
                rows.append([label, role, login_label(res), ids])
                data.append({"job": label, "role": role, "login": res.login, "orders": ids})
            except DatatableRolesError as e:
                rows.append([label, role, refusal_label(e), "-"])
                refusals.append(f"  {label}, naming {role}: {e.message.split(': ', 1)[-1]}")
                data.append({"job": label, "role": role, "refused": e.to_dict()})
        t.table("named_roles", ["job", "names role", "connection logs in as", "orders seen"],
                rows, data)
        for line in refusals:
            t.say(line)

    def set_role(self) -> str:
        t = self.tour
        assert self.worker is not None
        job = self.start_job(VIEWERS[2])
        res = self.worker.resolve(job, DT)
        t.heading(
            "6. A login only narrows",
            f"carol's connection is {short_login(res.login)}, holding {', '.join(res.roles)}.",
            "Its privileges are its memberships: SET ROLE to one of them narrows, RESET ROLE",
            "comes back, SET ROLE to anything else (admin included) fails.")
        t.table("set_role", ["statement", "current_user", "orders seen"],
                self.statements(res, ("SET ROLE sales_emea", "SET ROLE finance", "RESET ROLE",
                                      f"SET ROLE {DT_ADMIN}")))
        alice = self.worker.resolve(self.start_job(VIEWERS[0]), DT)
        t.say("")
        t.say(f"alice's connection is the one-role login {short_login(alice.login)}, connected "
              f"with options='{alice.options}':")
        t.say("it acts as sales_emea (what it creates belongs to sales_emea); RESET ROLE keeps")
        t.say("that, SET ROLE NONE is the login itself, which holds sales_emea and nothing else.")
        t.table("one_role", ["statement", "current_user", "orders seen"],
                self.statements(alice, ("RESET ROLE", "SET ROLE NONE", "SET ROLE sales_us")))
        return job

    def statements(self, res: Resolution, statements: tuple[str, ...]) -> list[list[str]]:
        """current_user and the orders seen on ``res``'s connection, as connected and after
        each statement in turn."""
        assert self.worker is not None
        rows = []
        with self.worker.connection(res) as conn:
            conn.autocommit = True
            for statement in (None, *statements):
                label = statement or "(as connected)"
                try:
                    if statement:
                        conn.execute(statement)
                    who, ids = conn.execute(
                        f"SELECT current_user, ({ORDERS_SEEN})").fetchone()
                    rows.append([label, short_login(who), ids])
                except psycopg.Error as e:
                    rows.append([label, "(unchanged)", "ERROR: " + (e.diag.message_primary or "")])
            conn.autocommit = False
        return rows

    def explain(self, job: str) -> None:
        assert self.worker is not None
        t = self.tour
        t.heading(
            "7. explain: why carol gets two roles",
            "explain_datatable_role (CLI: datatable-roles explain JOB_ID main) shows the",
            "decision step by step, with no side effects.")
        data = self.worker.explain(job, DT)
        t.sections[-1]["explain"] = data
        for line in render_explain(data).splitlines():
            t.say(line)

    def status(self) -> None:
        assert self.owner is not None
        t = self.tour
        t.heading(
            "8. status: what the operator sees (CLI: datatable-roles status)",
            "Logins exist only for sets of roles some viewer connected with, one per database;",
            "each records its last use at most once a day. `datatable-roles sweep` drops those",
            "unused for 30 days, rotates passwords older than a day and heals any login a",
            "script changed.")
        data = self.owner.status_report()
        t.sections[-1]["status"] = {"set_logins": len(data["set_logins"])}
        for line in render_status(data).splitlines():
            t.say(line)

    def renames(self) -> None:
        assert self.owner is not None and self.worker is not None
        t = self.tour
        t.heading(
            "9. Renames: a policy's TO follows, text does not",
            "rename_datatable_role keeps a role's catalog id and the logins holding it.",
            "After finance becomes finance_team, carol sees what she saw: finance_invoiced names",
            "its role in TO, which PostgreSQL keeps by oid. After sales_us becomes",
            "sales_americas, us_sales still says 'sales_us' as text: it fails, and so does every",
            "query on orders, carol's too. `datatable-roles lint-policies` finds such policies.")
        rows, data = [], []
        for old, new, viewer in (("finance", "finance_team", VIEWERS[2]),
                                 ("sales_us", "sales_americas", VIEWERS[1]),
                                 (None, None, VIEWERS[2])):
            if old is not None:
                self.owner.rename_datatable_role(old, new)
            res = self.worker.resolve(self.start_job(viewer), DT)
            try:
                outcome = self.seen(res)
            except psycopg.Error as e:
                outcome = "ERROR: " + (e.diag.message_primary or str(e).splitlines()[0])
            label = f"{old} -> {new}" if old else "(then)"
            rows.append([label, viewer.name, list(res.roles), outcome])
            data.append({"renamed": label, "viewer": viewer.name, "login": res.login,
                         "roles": list(res.roles), "orders": outcome})
        t.table("renames", ["renamed", "viewer", "roles held", "orders seen"], rows, data)
        t.say("")
        t.say(f"$ datatable-roles --dsn <{META_DB} as {self.cluster.owner}> lint-policies")
        dbnames = sorted({d["dbname"] for d in self.owner.status_report()["datatables"]})
        result = lint_databases([self.cluster.owner_conninfo(db) for db in dbnames])
        t.sections[-1]["lint"] = result
        for line in render_lint(result).splitlines():
            t.say(line)

    def targets_seen(self, viewer: Viewer) -> tuple[Resolution, str]:
        """The login ``viewer``'s app connection resolves to, and what it reads of the new
        table (or the error)."""
        assert self.worker is not None
        res = self.worker.resolve(self.start_job(viewer), DT)
        try:
            return res, self.seen(res, TARGETS_SEEN)
        except psycopg.Error as e:
            return res, "ERROR: " + (e.diag.message_primary or str(e).splitlines()[0])

    def grants(self) -> None:
        assert self.owner is not None
        t = self.tour
        t.heading(
            "10. Grants: plan, then apply exactly that (CLI: datatable-roles acl)",
            f"A migration adds table {NEW_TABLE}, as the admin login; no catalog role may read",
            f"it yet. The grants editor plans granting SELECT on it to {GRANTEE}: the exact",
            "statements and their warnings, changing nothing. The apply plans again, refuses if",
            "the statements differ from those shown, runs each in the package's link login's",
            "session as the object's owner (-- as ROLE), so the owner is the grantor, and",
            "records them in datatable_roles.acl_change.")
        with self.cluster.connect_super(DT_DB) as conn:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(DT_ADMIN)))
            conn.execute(sql.SQL("CREATE TABLE {} (region text PRIMARY KEY, target integer"
                                 " NOT NULL)").format(sql.Identifier(NEW_TABLE)))
            with conn.cursor() as cur:
                cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(
                    sql.Identifier(NEW_TABLE)), TARGETS)
        viewers = (VIEWERS[0], VIEWERS[1], VIEWERS[2])
        before = {v.name: self.targets_seen(v)[1] for v in viewers}

        target = {"schema": "public", "table": NEW_TABLE}
        change = {"grant": ["SELECT"], "to": GRANTEE}
        args = f"{WS} {DT} --schema public --table {NEW_TABLE} --grant SELECT --to {GRANTEE}"
        dsn = f"--dsn <{META_DB} as {self.cluster.owner}>"
        t.say("")
        t.say(f"$ datatable-roles {dsn} acl plan {args}")
        plan = self.owner.plan_datatable_acl(WS, DT, target, change)
        t.sections[-1]["plan"] = plan
        for line in render_acl_plan(plan).splitlines():
            t.say(line)
        t.say("")
        t.say(f"$ datatable-roles {dsn} acl apply {args} --yes")
        result = self.owner.apply_datatable_acl(WS, DT, target, change, plan["statements"])
        t.sections[-1]["applied"] = {"applied": result["applied"],
                                     "audit_id": result["audit_id"]}
        t.say("(it prints the same plan, then:)")
        t.say(render_acl_applied(result))
        t.say("")
        t.say(f"Each viewer's app connection, reading {NEW_TABLE} before and after:")
        rows, data = [], []
        for v in viewers:
            res, after = self.targets_seen(v)
            rows.append([v.name, list(res.roles), before[v.name], after])
            data.append({"viewer": v.name, "login": res.login, "roles": list(res.roles),
                         "before": before[v.name], "after": after})
        t.table("grants", ["viewer", "roles held", "before", "after"], rows, data)
        t.say(f"rls_disabled said it: {NEW_TABLE} has no row-level security, so every login")
        t.say(f"holding {GRANTEE} reads all its rows. For per-viewer rows, enable RLS and add a")
        t.say("policy first (docs/policies.md), then plan again.")

    def other_server(self) -> None:
        """Section 11: a second throwaway cluster, registered as server 'eu' with a manager
        login that is not a superuser; data table 'far' there, its roles made there on first
        map and its logins on first use; then the server goes down while a role is taken out
        of the map, and comes back."""
        t, owner = self.tour, self.owner
        assert owner is not None and self.worker is not None
        far = Cluster(bin_dir=self.cluster.bin_dir)
        self.far = far
        far.start(build_template=False)
        manager_password, admin_password = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        with far.connect_super() as conn:
            conn.execute(sql.SQL("CREATE ROLE far_manager LOGIN CREATEROLE PASSWORD {}").format(
                sql.Literal(scram_sha256_verifier(manager_password))))
            conn.execute("GRANT pg_signal_backend TO far_manager")
            conn.execute(sql.SQL("CREATE ROLE far_admin LOGIN PASSWORD {}").format(
                sql.Literal(scram_sha256_verifier(admin_password))))
            conn.execute("CREATE DATABASE dt_far OWNER far_admin")
        owner.register_datatable_server("eu", "127.0.0.1", far.port, "far_manager",
                                        manager_password, sslmode="disable")
        owner.register_datatable(WS, "far", "dt_far", "far_admin", admin_password, server="eu")
        # Section 9 renamed sales_us to sales_americas: the roles of now.
        far_roles = {"sales_emea": ("g/emea", "emea"), "sales_americas": ("g/us", "us")}
        for role, (key, _region) in far_roles.items():
            owner.set_datatable_role_tenants(WS, "far", role, [key])
        owner.set_datatable_default_role(WS, "far", None)
        with psycopg.connect(far.conninfo("far_admin", admin_password, "dt_far", tcp=True),
                             autocommit=True) as conn:
            conn.execute("CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL,"
                         " status text NOT NULL, amount integer NOT NULL)")
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO orders VALUES (%s, %s, %s, %s)", ORDERS)
            conn.execute("ALTER TABLE orders ENABLE ROW LEVEL SECURITY")
            for role, (_key, region) in far_roles.items():
                conn.execute(sql.SQL("GRANT SELECT ON orders TO {}").format(
                    sql.Identifier(role)))
                conn.execute(sql.SQL("CREATE POLICY {} ON orders FOR SELECT TO {} USING"
                                     " (region = {})").format(
                    sql.Identifier(region), sql.Identifier(role), sql.Literal(region)))
        t.heading(
            "11. A data table on another server",
            f"A second cluster (port {far.port}) is registered as server 'eu', with a manager",
            "login far_manager: CREATEROLE and pg_signal_backend, not a superuser (a managed",
            "service's admin role). Data table 'far' is database dt_far there, owned by",
            "far_admin, with no default role; sales_emea (g/emea) and sales_americas (g/us)",
            "were made there when 'far' first mapped them, with a policy each on its orders,",
            "and each login is made there at its first use, its password sent as a SCRAM",
            "verifier. resolve_datatable_role returns where to connect (host, port).")
        self.viewer_table("far", datatable="far")
        far.pause()
        owner.remove_datatable_role(WS, "far", "sales_americas")
        t.say("")
        t.say("Server 'eu' goes down; meanwhile sales_americas leaves far's map. The change")
        t.say("commits here, and the retirement of the login holding it there is pending:")
        job = self.start_job(VIEWERS[0])
        try:
            self.worker.resolve(job, "far")
            raise AssertionError("a resolve for a server with pending changes was served")
        except DatatableRolesError as e:
            t.say(f"  alice: refused ({e.sqlstate}, {e.message.split(':', 1)[0]})")
        far.resume()
        t.say("")
        t.say("'eu' is back: the next resolve applies the change, then serves; bob's login")
        t.say("there is retired, and bob, with no role left on 'far', is refused (R5):")
        self.viewer_table("far_after", datatable="far")

    def close(self) -> None:
        if getattr(self, "far", None) is not None:
            self.far.stop()
        for client in (self.worker, self.owner):
            if client is not None:
                client.close()


def run_demo(stream: TextIO | None = sys.stdout) -> dict[str, Any]:
    """Run the tour; print it to ``stream`` as it goes (None: silent). Returns the record:
    ``{"ok": bool, "sections": [...], "error"?: ...}``."""
    tour = Tour(stream)
    tour._print("datatable-roles demo: one connection string, each viewer their own rows")
    tour._print("-------------------------------------------------------------------------")
    cluster = Cluster()
    record: dict[str, Any] = {"ok": False}
    demo: Demo | None = None
    try:
        tour._print("Starting a throwaway PostgreSQL 15 cluster ...")
        cluster.start(build_template=False)
        record["cluster_dir"] = str(cluster.base)
        tour._print(f"  in {cluster.base}")
        demo = Demo(cluster, tour)
        applied = demo.install()
        tour._print(f"  port {cluster.port}; metadata database {META_DB}: bootstrap, then "
                    f"{len(applied)} migrations ({applied[0]} .. {applied[-1]})")
        tour._print(f"  package owner {cluster.owner} (not a superuser); the platform's worker "
                    f"role {cluster.worker} resolves")
        demo.setup()
        demo.defaults()
        demo.named_roles()
        job = demo.set_role()
        demo.explain(job)
        demo.status()
        demo.renames()
        demo.grants()
        demo.other_server()
        record["ok"] = True
    except Exception as e:  # the tour reports what broke and still stops the cluster
        record["error"] = f"{type(e).__name__}: {e}"
        tour._print(f"\ndemo failed: {record['error']}")
    finally:
        if demo is not None:
            demo.close()
        cluster.stop()
    record["sections"] = tour.sections
    record["seconds"] = round(time.monotonic() - tour.started, 1)
    tour._print()
    tour._print(f"Demo done in {record['seconds']} s, from starting the cluster to removing it")
    tour._print("(not counting what `make demo` installs first); its clusters are stopped and "
                "removed.")
    return record


def main(argv: list[str] | None = None) -> int:
    """Text mode streams the tour as it goes; --json prints the collected record at the end."""
    parser = argparse.ArgumentParser(prog="python -m datatable_roles_lab.demo",
                                     description="A tour on a throwaway cluster: per-viewer "
                                     "rows under each kind of default role.")
    parser.add_argument("--json", action="store_true", help="print the record as JSON")
    args = parser.parse_args(argv)
    record = run_demo(stream=None if args.json else sys.stdout)
    if args.json:
        print(to_json(record))
    return 0 if record.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
