"""Hostile scripts, finding 1 of issue 11: objects a script leaves behind (docs/trust.md,
"Objects left behind are inert"; sql/functions/remote/scripts/quarantine.sql).

A job's code, logged in with the login and password a resolve handed it, plants traps in its
data table database, meant to run with the admin login's privileges (it owns the database and
bypasses row-level security) once what the script owned passes to the admin login:

- (a) as a set login (R7, two roles), whose objects the sweep passes to the admin login when
  the login goes unused for ``unused_after``;
- (b) as a catalog role (a one-role login connected with ``options='-c role=<role>'``, R6),
  whose objects ``drop_datatable_role`` passes to the admin login.

Each trap is shown live before, and dead after: the view, the definer function, the shadowing
function and operator, the "$user" schema, the trigger and the rule, the domain check, the
default and the index expression, the large object and the sequence granted to PUBLIC. And
every planted object still exists, owned by the admin login, in a ``wm_quarantine_*`` schema,
its rows intact.

Then: a large object or a temporary table a login left in ``postgres`` or in its data table
database does not keep the sweep from dropping it, nor does owning nothing at all (its one
privilege, CONNECT on its database, is taken back before DROP ROLE).

Roles are cluster-wide: every one made here is named by the world (uid prefix). Admin calls run
as the package owner, resolves as the worker role; time moves by ``settings.clock_offset``,
never by sleeping.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors, sql

from support import Resolved, World, connect

# Orders 1 emea, 2 us, 3 apac, 4 emea, 5 us; emea's policy shows its rows to role a, us's to
# b, apac's to c. vic is a tenant of a and b (a set login, R7), val of a alone, cat of c alone
# (one-role logins, R6); the publisher starts the jobs; no default role.
WORLD = dict(
    users={"publisher": [], "vic": [], "val": [], "cat": []},
    tenants={"a": ["u/vic", "u/val"], "b": ["u/vic"], "c": ["u/cat"]},
    orders={"emea": "a", "us": "b", "apac": "c"},
    default=None, jobs=["vic", "val", "cat"],
)
VAL_ROWS = [1, 4]            # what val reads of orders (role a)
VICTIM_ROWS = {              # what the attacker reads of orders
    "sweep": [1, 2, 4, 5],   # vic's set login (a and b)
    "drop_role": [3],        # role c
}
FAKE_ORDERS = [999]
LO_DATA = b"planted large object"

# What the script runs. {admin} is the admin login's name (the "$user" schema trap).
PLANT = [
    # a definer function that runs its argument, for anyone
    """CREATE FUNCTION public.pwn(sql text) RETURNS text LANGUAGE plpgsql SECURITY DEFINER
       AS $$ DECLARE result text; BEGIN EXECUTE sql INTO result; RETURN result; END $$""",
    "GRANT EXECUTE ON FUNCTION public.pwn(text) TO PUBLIC",
    # a view over the RLS table, for anyone (the admin login would bypass RLS)
    "CREATE VIEW public.all_orders AS SELECT * FROM orders",
    "GRANT SELECT ON public.all_orders TO PUBLIC",
    # a table with a (definer) trigger and a rule, writable by anyone
    "CREATE TABLE public.loot (id integer, note text)",
    "CREATE TABLE public.loot_log (note text)",
    "GRANT INSERT ON public.loot, public.loot_log TO PUBLIC",
    """CREATE FUNCTION public.on_loot() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
       AS $$ BEGIN INSERT INTO public.loot_log VALUES ('trigger: ' || current_user);
       RETURN NEW; END $$""",
    """CREATE TRIGGER on_loot BEFORE INSERT ON public.loot
       FOR EACH ROW EXECUTE FUNCTION public.on_loot()""",
    """CREATE RULE log_loot AS ON INSERT TO public.loot
       DO ALSO INSERT INTO public.loot_log VALUES ('rule: ' || current_user)""",
    "INSERT INTO public.loot VALUES (1, 'planted')",
    "INSERT INTO public.loot VALUES (2, 'planted')",
    # a materialized view of what the script reads (a refresh by the admin: every row)
    "CREATE MATERIALIZED VIEW public.orders_copy AS SELECT * FROM orders",
    # a function shadowing pg_catalog.cardinality(anyarray) by a more specific signature,
    # and an operator shadowing pg_catalog's @>(anyarray, anyarray) so
    """CREATE FUNCTION public.cardinality(text[]) RETURNS integer LANGUAGE plpgsql
       AS $$ BEGIN RETURN 42; END $$""",
    """CREATE FUNCTION public.contains_all(text[], text[]) RETURNS boolean LANGUAGE plpgsql
       AS $$ BEGIN RETURN true; END $$""",
    """CREATE OPERATOR public.@> (LEFTARG = text[], RIGHTARG = text[],
       FUNCTION = public.contains_all)""",
    # a domain whose check calls the script's function
    """CREATE FUNCTION public.is_positive(integer) RETURNS boolean LANGUAGE plpgsql IMMUTABLE
       AS $$ BEGIN RETURN $1 > 0; END $$""",
    "CREATE DOMAIN public.positive AS integer CHECK (public.is_positive(VALUE))",
    "CREATE TABLE public.measures (v public.positive)",
    "INSERT INTO public.measures VALUES (1), (2), (3)",
    # a default expression calling the script's (definer) function
    """CREATE FUNCTION public.next_x() RETURNS integer LANGUAGE plpgsql SECURITY DEFINER
       AS $$ BEGIN RETURN 7; END $$""",
    "CREATE TABLE public.with_default (x integer DEFAULT public.next_x(), y integer)",
    "INSERT INTO public.with_default (y) VALUES (1), (2)",
    # an index expression calling the script's function (ANALYZE, autovacuum run it as the
    # table's owner)
    """CREATE FUNCTION public.key_of(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE
       AS $$ BEGIN RETURN $1; END $$""",
    "CREATE TABLE public.with_index (y integer)",
    "INSERT INTO public.with_index VALUES (1), (2), (3), (4)",
    "CREATE INDEX with_index_key ON public.with_index (public.key_of(y))",
    # a sequence anyone may use
    "CREATE SEQUENCE public.counter",
    "GRANT USAGE, SELECT, UPDATE ON SEQUENCE public.counter TO PUBLIC",
    "SELECT nextval('public.counter')",
    "SELECT nextval('public.counter')",
    # the "$user" trap: a schema named like the admin login, first on its search_path
    "CREATE SCHEMA {admin}",
    "CREATE TABLE {admin}.orders (id integer, region text)",
    "INSERT INTO {admin}.orders VALUES (999, 'fake')",
    "GRANT USAGE ON SCHEMA {admin} TO PUBLIC",
    "GRANT SELECT ON {admin}.orders TO PUBLIC",
]

# The catalogs an object of the victim's may be in: (owner column, namespace column, acl
# column, acldefault kind). A namespace's own name is its "namespace".
CATALOGS = {
    "pg_class": ("relowner", "relnamespace", "relacl", None),
    "pg_proc": ("proowner", "pronamespace", "proacl", "f"),
    "pg_type": ("typowner", "typnamespace", "typacl", "T"),
    "pg_operator": ("oprowner", "oprnamespace", None, None),
    "pg_namespace": ("nspowner", "oid", "nspacl", "n"),
    "pg_largeobject_metadata": ("lomowner", None, "lomacl", "L"),
}


# ---- sessions ----------------------------------------------------------------------------

def as_viewer(w: World, r: Resolved, dbname: str | None = None) -> psycopg.Connection:
    """A session as the job's code gets it: the resolved login and password; a one-role login
    acts as its role (the startup option the platform passes, R6)."""
    kw = {"options": f"-c role={r.roles[0]}"} if len(r.roles) == 1 else {}
    return connect(w.login_conninfo(r.login, r.password, dbname or r.dbname), **kw)


def as_admin(w: World) -> psycopg.Connection:
    """The data table's admin login, on its database, with its default search_path
    ("$user", public)."""
    return connect(w.login_conninfo(w.admin_login, w.admin_password))


def one(conn: psycopg.Connection, query, params=None):
    return conn.execute(query, params).fetchone()[0]


def ids(conn: psycopg.Connection, relation: sql.Composable) -> list[int]:
    return [r[0] for r in conn.execute(
        sql.SQL("SELECT id FROM {} ORDER BY id").format(relation))]


def qualified(su: psycopg.Connection, oid: int) -> sql.Composable:
    nsp, rel = su.execute("SELECT n.nspname, c.relname FROM pg_class AS c"
                          " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
                          " WHERE c.oid = %s", [oid]).fetchone()
    return sql.Identifier(nsp, rel)


def regclass_text(su: psycopg.Connection, oid: int) -> str:
    """A relation's schema-qualified name, as text (for nextval and the like)."""
    return one(su, "SELECT format('%%I.%%I', n.nspname, c.relname) FROM pg_class AS c"
                   " JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = %s", [oid])


def schema_of(su: psycopg.Connection, oid: int) -> str:
    return one(su, "SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = %s", [oid])


# ---- what the victim owns ------------------------------------------------------------------

def owned_by(su: psycopg.Connection, role: str) -> dict[tuple[str, int], str]:
    """(catalog, oid) -> name of everything ``role`` owns in su's database (not toast)."""
    rows = su.execute("""
        WITH v AS (SELECT oid FROM pg_roles WHERE rolname = %s)
        SELECT 'pg_class', c.oid, c.relname::text FROM pg_class AS c, v
        WHERE c.relowner = v.oid AND c.relnamespace <> 'pg_toast'::regnamespace
        UNION ALL
        SELECT 'pg_proc', p.oid, p.oid::regprocedure::text FROM pg_proc AS p, v
        WHERE p.proowner = v.oid
        UNION ALL
        SELECT 'pg_type', t.oid, t.typname::text FROM pg_type AS t, v
        WHERE t.typowner = v.oid AND t.typnamespace <> 'pg_toast'::regnamespace
        UNION ALL
        SELECT 'pg_operator', o.oid, o.oid::regoperator::text FROM pg_operator AS o, v
        WHERE o.oprowner = v.oid
        UNION ALL
        SELECT 'pg_namespace', n.oid, n.nspname::text FROM pg_namespace AS n, v
        WHERE n.nspowner = v.oid
        UNION ALL
        SELECT 'pg_largeobject_metadata', l.oid, 'large object ' || l.oid
        FROM pg_largeobject_metadata AS l, v WHERE l.lomowner = v.oid
    """, [role]).fetchall()
    return {(cat, oid): name for cat, oid, name in rows}


def now_of(su: psycopg.Connection, catalog: str, oid: int) -> tuple[str, str | None, list]:
    """(owner, schema name, non-owner grantees with what they hold) of an object now; the
    grantees from the effective ACL (a NULL acl is the kind's default, PUBLIC as '-')."""
    owner_col, nsp_col, acl_col, kind = CATALOGS[catalog]
    nsp = sql.SQL("(SELECT n.nspname::text FROM pg_namespace AS n WHERE n.oid = x.{})").format(
        sql.Identifier(nsp_col)) if nsp_col else sql.SQL("NULL::text")
    if acl_col is None:
        grants = sql.SQL("'{}'::text[]")
    else:
        acl = sql.SQL("x.{}").format(sql.Identifier(acl_col))
        if kind is not None:
            acl = sql.SQL("coalesce({}, acldefault({}, x.{}))").format(
                acl, sql.Literal(kind), sql.Identifier(owner_col))
        grants = sql.SQL(
            "ARRAY(SELECT a.grantee::regrole::text || ':' || a.privilege_type"
            " FROM aclexplode({}) AS a WHERE a.grantee <> x.{} ORDER BY 1)").format(
            acl, sql.Identifier(owner_col))
    row = su.execute(sql.SQL("SELECT x.{}::regrole::text, {}, {} FROM {} AS x"
                             " WHERE x.oid = %s").format(
        sql.Identifier(owner_col), nsp, grants, sql.Identifier("pg_catalog", catalog)),
        [oid]).fetchone()
    assert row is not None, f"{catalog} {oid} is gone"
    return row


def separately_granted(su: psycopg.Connection, catalog: str, oid: int) -> bool:
    """Whether the object has privileges of its own: not an index, a table's row type or an
    array type (those follow their table or element type)."""
    if catalog == "pg_class":
        return one(su, "SELECT relkind NOT IN ('i', 'I') FROM pg_class WHERE oid = %s", [oid])
    if catalog == "pg_type":
        return one(su, "SELECT typelem = 0 AND (typrelid = 0 OR EXISTS (SELECT FROM pg_class"
                       " AS c WHERE c.oid = typrelid AND c.relkind = 'c'))"
                       " FROM pg_type WHERE oid = %s", [oid])
    return catalog != "pg_operator"


def contents(su: psycopg.Connection, owned: dict[tuple[str, int], str]) -> dict[int, object]:
    """oid -> the rows of each table and materialized view (as the superuser: every row),
    the last value of each sequence, the data of each large object."""
    out: dict[int, object] = {}
    for (catalog, oid) in owned:
        if catalog == "pg_largeobject_metadata":
            out[oid] = one(su, "SELECT lo_get(%s)", [oid])
        elif catalog == "pg_class":
            kind = one(su, "SELECT relkind FROM pg_class WHERE oid = %s", [oid])
            if kind in ("r", "p", "m"):
                out[oid] = sorted(su.execute(sql.SQL("SELECT * FROM {}").format(
                    qualified(su, oid))).fetchall(), key=repr)
            elif kind == "S":
                out[oid] = one(su, sql.SQL("SELECT last_value FROM {}").format(
                    qualified(su, oid)))
    return out


# ---- the world and the attack --------------------------------------------------------------

def plant(conn: psycopg.Connection, admin: str) -> int:
    """Runs PLANT in conn; returns the large object it grants to PUBLIC."""
    for statement in PLANT:
        conn.execute(sql.SQL(statement).format(admin=sql.Identifier(admin)))
    lo = one(conn, "SELECT lo_from_bytea(0, %s)", [LO_DATA])
    conn.execute(sql.SQL("GRANT SELECT, UPDATE ON LARGE OBJECT {} TO PUBLIC").format(
        sql.SQL(str(int(lo)))))
    return lo


def attacker(w: World, case: str) -> tuple[Resolved, str]:
    """The attacker's resolve and the role its objects belong to: vic's set login (R7), or
    cat's one-role login acting as catalog role c (R6)."""
    if case == "sweep":
        r = w.resolve("vic")
        assert r.login.startswith("wm_set_") and r.roles == sorted([w.a, w.b]), r
        return r, r.login
    r = w.resolve("cat")
    assert r.roles == [w.c], r
    return r, w.c


def give_create(w: World, victim: str) -> None:
    """What an operator might have granted: CREATE on schema public, and on the database (so
    that a schema named like the admin login can be made)."""
    su = w.su(w.dbname)
    su.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(victim)))
    su.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
        sql.Identifier(w.dbname), sql.Identifier(victim)))


def past_unused_after(w: World) -> None:
    w.call("UPDATE datatable_roles.settings"
           " SET clock_offset = clock_offset + unused_after + interval '1 day'")


def sweep(w: World) -> dict:
    with w.connect_owner() as conn:
        return one(conn, "CALL sweep_unused_role_set_logins(NULL)")


@pytest.fixture
def world(make_world) -> World:
    return make_world(**WORLD)


@pytest.mark.parametrize("case", ["sweep", "drop_role"])
def test_every_trap_a_script_plants_is_dead_after_its_objects_pass_to_the_admin(world, case):
    """(a) ``sweep``: vic's set login plants every trap, goes unused past unused_after, and the
    sweep drops it; (b) ``drop_role``: cat's one-role login, acting as role c, plants them, and
    drop_datatable_role(c) drops the role. Each trap works before; after, each is dead and
    every object is kept, the admin's, quarantined, its rows intact."""
    w = world
    admin = w.admin_login
    r, victim = attacker(w, case)
    give_create(w, victim)
    with as_viewer(w, r) as conn:
        assert one(conn, "SELECT current_user") == victim
        assert ids(conn, sql.Identifier("orders")) == VICTIM_ROWS[case]
        lo = plant(conn, admin)
    su = w.su(w.dbname)
    orders_oid = one(su, "SELECT 'public.orders'::regclass::oid")
    owned = owned_by(su, victim)
    names = {name: oid for (cat, oid), name in owned.items()
             if cat in ("pg_class", "pg_namespace")}
    routines = {name.split("(")[0]: oid for (cat, oid), name in owned.items()
                if cat == "pg_proc"}
    assert {"all_orders", "loot", "loot_log", "orders_copy", "measures", "with_default",
            "with_index", "with_index_key", "counter", "orders", admin} <= set(names)
    assert set(routines) == {"pwn", "on_loot", "cardinality", "contains_all", "is_positive",
                             "next_x", "key_of"}
    assert ("pg_largeobject_metadata", lo) in owned
    assert any(cat == "pg_operator" for cat, _ in owned)
    before = contents(su, owned)
    assert before[names["orders_copy"]] == [(i, reg) for i, reg in sorted(
        su.execute("SELECT id, region FROM orders WHERE id = ANY(%s)",
                   [VICTIM_ROWS[case]]).fetchall())]
    loot_log_before = len(before[names["loot_log"]])
    assert loot_log_before > 0, "the trigger and the rule fired when the script inserted"

    # Each trap works now: another viewer reads through the view (with the policies of
    # orders, which look at current_user, until the admin owns the view) and runs pwn as the
    # victim; the admin's unqualified names resolve to the script's objects.
    other = w.resolve("val")
    with as_viewer(w, other) as conn:
        val_user = one(conn, "SELECT current_user")
        assert ids(conn, sql.Identifier("orders")) == VAL_ROWS
        assert ids(conn, sql.Identifier("public", "all_orders")) == VAL_ROWS
        assert one(conn, "SELECT public.pwn('SELECT current_user')") == victim
        assert bytes(one(conn, "SELECT lo_get(%s)", [lo])) == LO_DATA
        assert one(conn, "SELECT nextval('public.counter')") == 3
    before[names["counter"]] = 3
    with as_admin(w) as conn:
        assert one(conn, "SELECT cardinality(ARRAY['a'])") == 42
        assert one(conn, "SELECT ARRAY['a'] @> ARRAY['b']") is True
        assert ids(conn, sql.Identifier("orders")) == FAKE_ORDERS
        assert one(conn, "SELECT 'orders'::regclass::oid") == names["orders"]
        assert one(conn, "SELECT public.pwn('SELECT current_user')") == victim

    # The script's objects pass to the admin login.
    if case == "sweep":
        past_unused_after(w)
        other = w.resolve("val")   # used meanwhile: only the attacker's login is unused
        report = sweep(w)
        assert report["dropped"] == 1 and report["unfinished"] == [], report
        assert w.role_state(r.login) == (False, False)
        assert r.login not in w.rows()
        other = w.resolve("val")   # the sweep rotated its password
    else:
        w.call("SELECT drop_datatable_role(%s)", [w.c])
        assert w.role_state(w.c) == (False, False)
        assert w.call("SELECT count(*) FROM datatable_roles.catalog_role WHERE name = %s",
                      [w.c]) == [(0,)]
        # orders' policy for apac names the dropped role as text (as hand-written policies
        # do), which now fails for every reader: the operator drops it.
        su.execute("DROP POLICY apac ON orders")
    assert owned_by(su, victim) == {}

    # Every object is still there: the admin's, in a quarantine schema, nothing granted to
    # anyone else (routines: not even to the admin), rows intact.
    for (catalog, oid), name in owned.items():
        owner, schema, grants = now_of(su, catalog, oid)
        assert owner == admin, f"{name} belongs to {owner}"
        if catalog != "pg_largeobject_metadata":
            assert schema.startswith("wm_quarantine_"), f"{name} is in {schema}"
        if separately_granted(su, catalog, oid):
            assert grants == [], f"{name} still grants {grants}"
    assert contents(su, owned) == before
    quarantine = {one(su, "SELECT nspname::text FROM pg_namespace WHERE oid = %s", [oid])
                  for (cat, oid) in owned if cat == "pg_namespace"}
    quarantine |= {schema_of(su, names[n]) for n in ("all_orders", "loot", "counter")}
    for schema in quarantine:
        owner, _nsp, grants = now_of(su, "pg_namespace", one(
            su, "SELECT oid FROM pg_namespace WHERE nspname = %s", [schema]))
        assert owner == admin and grants == [], (schema, owner, grants)

    # No routine runs with anyone's rights but its caller's, and none runs at all until
    # the admin grants EXECUTE back.
    for name, oid in routines.items():
        assert one(su, "SELECT prosecdef FROM pg_proc WHERE oid = %s", [oid]) is False, name
        assert one(su, "SELECT has_function_privilege(%s, %s::oid, 'EXECUTE')",
                   [admin, oid]) is False, name

    # The "$user" schema is gone under that name: the admin's unqualified names resolve to
    # pg_catalog and to the real table again.
    assert one(su, "SELECT count(*) FROM pg_namespace WHERE nspname = %s", [admin]) == 0
    assert one(su, "SELECT nspname::text FROM pg_namespace WHERE oid = %s",
               [names[admin]]).startswith("wm_quarantine_")

    # Triggers and rules of the script's tables are disabled.
    loot = names["loot"]
    assert su.execute("SELECT tgname::text, tgenabled FROM pg_trigger"
                      " WHERE tgrelid = %s AND NOT tgisinternal", [loot]).fetchall() \
        == [("on_loot", "D")]
    assert su.execute("SELECT rulename::text, ev_enabled FROM pg_rewrite"
                      " WHERE ev_class = %s AND rulename <> '_RETURN'", [loot]).fetchall() \
        == [("log_loot", "D")]

    with as_admin(w) as conn:
        assert one(conn, "SELECT current_schemas(true)::text[]") == ["pg_catalog", "public"]
        assert one(conn, "SELECT cardinality(ARRAY['a'])") == 1
        assert one(conn, "SELECT ARRAY['a'] @> ARRAY['b']") is False
        assert one(conn, "SELECT 'orders'::regclass::oid") == orders_oid
        assert ids(conn, sql.Identifier("orders")) == [1, 2, 3, 4, 5]
        with pytest.raises(errors.UndefinedFunction):
            conn.execute("SELECT pwn('SELECT current_user')")
        # The admin's own writes fire neither the trigger nor the rule, and the functions
        # of the domain check, the default and the index expression do not run for it.
        conn.execute(sql.SQL("INSERT INTO {} VALUES (3, 'by the admin')").format(
            qualified(su, loot)))
        assert len(su.execute(sql.SQL("SELECT * FROM {}").format(
            qualified(su, names["loot_log"]))).fetchall()) == loot_log_before
        for table, statement, function in (
                ("measures", "INSERT INTO {} VALUES (4)", "is_positive"),
                ("with_default", "INSERT INTO {} (y) VALUES (3)", "next_x"),
                ("with_index", "INSERT INTO {} VALUES (5)", "key_of")):
            with pytest.raises(errors.InsufficientPrivilege, match=function):
                conn.execute(sql.SQL(statement).format(qualified(su, names[table])))

    # Another viewer: the view, the function, the sequence and the large object are out of
    # its reach.
    view = qualified(su, names["all_orders"])
    pwn = sql.SQL("{}.pwn").format(sql.Identifier(one(
        su, "SELECT pronamespace::regnamespace::text FROM pg_proc WHERE oid = %s",
        [routines["pwn"]])))
    with as_viewer(w, other) as conn:
        assert one(conn, "SELECT current_user") == val_user
        for statement in ("SELECT id FROM public.all_orders",
                          "SELECT public.pwn('SELECT current_user')",
                          "SELECT nextval('public.counter')"):
            with pytest.raises((errors.UndefinedTable, errors.UndefinedFunction)):
                conn.execute(statement)
        for statement in (sql.SQL("SELECT id FROM {}").format(view),
                          sql.SQL("SELECT {}('SELECT current_user')").format(pwn),
                          sql.SQL("SELECT nextval({})").format(sql.Literal(
                              regclass_text(su, names["counter"])))):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(statement)
        with pytest.raises(errors.InsufficientPrivilege, match="large object"):
            conn.execute("SELECT lo_get(%s)", [lo])
        assert ids(conn, sql.Identifier("orders")) == VAL_ROWS

    # Even if the admin grants it all back, it runs as the caller and reads as the reader:
    # a view the admin owns over the admin's table would skip RLS unless security_invoker.
    with as_admin(w) as conn:
        conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {}(text) TO {}").format(
            pwn, sql.Identifier(admin)))
        assert one(conn, sql.SQL("SELECT {}('SELECT current_user')").format(pwn)) == admin
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO PUBLIC").format(
            sql.Identifier(schema_of(su, names["all_orders"]))))
        conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {}(text) TO PUBLIC").format(pwn))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO PUBLIC").format(view))
    with as_viewer(w, other) as conn:
        assert one(conn, sql.SQL("SELECT {}('SELECT current_user')").format(pwn)) == val_user
        assert ids(conn, view) == VAL_ROWS, "a view of the admin's reads with the reader's rights"
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(sql.SQL("REFRESH MATERIALIZED VIEW {}").format(
                qualified(su, names["orders_copy"])))
    assert contents(su, {k: v for k, v in owned.items() if k[1] == names["orders_copy"]}) \
        == {names["orders_copy"]: before[names["orders_copy"]]}


# The sweep's move is chosen by databases_holding(), the databases where pg_shdepend has a row
# of the login with dbid <> 0. A set login's one direct privilege, CONNECT on its database,
# is a row with dbid 0 (a shared object), so a login with nothing else anywhere gets no
# DROP OWNED, and its DROP ROLE fails.
def test_a_login_that_owns_nothing_is_swept(world):
    """vic's set login, resolved and never used to make anything, goes unused past
    unused_after: the sweep drops it and its row, with nothing unfinished."""
    w = world
    r = w.resolve("vic")
    assert owned_by(w.su(w.dbname), r.login) == {}
    past_unused_after(w)
    report = sweep(w)
    assert report["unfinished"] == [], report
    assert report["dropped"] == 1, report
    assert w.role_state(r.login) == (False, False)
    assert w.rows() == {}


@pytest.mark.parametrize(("what", "where"), [
    ("large_object", "postgres"),
    ("large_object", "datatable"),
    pytest.param("temp_table", "postgres"),
    pytest.param("temp_table", "datatable"),
])
def test_a_large_object_or_temp_table_a_login_left_does_not_block_its_sweep(world, what, where):
    """vic's set login leaves a large object (its session closed) or a temporary table (its
    session still open) in postgres or in its data table database. The sweep drops the login,
    with nothing unfinished; a large object in the data table database is kept (the admin's,
    granted to nobody), one in postgres is dropped; the open session is ended."""
    w = world
    r = w.resolve("vic")
    dbname = "postgres" if where == "postgres" else w.dbname
    session = connect(w.login_conninfo(r.login, r.password, dbname))
    try:
        assert one(session, "SELECT current_user") == r.login
        lo = None
        if what == "large_object":
            lo = one(session, "SELECT lo_from_bytea(0, %s)", [LO_DATA])
            session.execute(sql.SQL("GRANT SELECT ON LARGE OBJECT {} TO PUBLIC").format(
                sql.SQL(str(int(lo)))))
            session.close()
        else:
            session.execute("CREATE TEMP TABLE left_behind AS SELECT 1 AS x")
            session.execute("CREATE TEMP SEQUENCE left_behind_seq")
        su = w.su(dbname)
        assert owned_by(su, r.login), "the login owns something there"

        past_unused_after(w)
        report = sweep(w)
        assert report["unfinished"] == [], report
        assert report["dropped"] == 1, report
        assert w.role_state(r.login) == (False, False)
        assert w.rows() == {}

        if what == "large_object":
            row = su.execute("SELECT lomowner::regrole::text FROM pg_largeobject_metadata"
                             " WHERE oid = %s", [lo]).fetchone()
            if where == "postgres":
                assert row is None, "dropped where no data table could own it"
            else:
                assert row == (w.admin_login,)
                assert now_of(su, "pg_largeobject_metadata", lo)[2] == []
                assert bytes(one(su, "SELECT lo_get(%s)", [lo])) == LO_DATA
        else:
            with pytest.raises(psycopg.OperationalError):
                session.execute("SELECT 1")
            assert su.execute("SELECT count(*) FROM pg_class WHERE relname IN"
                              " ('left_behind', 'left_behind_seq')").fetchone() == (0,)
    finally:
        session.close()
