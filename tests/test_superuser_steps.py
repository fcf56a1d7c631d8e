"""The superuser steps (sql/bootstrap.sql, sql/pgbouncer-auth.sql, sql/after-pg-upgrade.sql)
are safe to run at any time, whatever a non-superuser created or wrote: a function planted
to shadow a call, a schema of ours made first, or a name written into the package's tables
gives its maker nothing (docs/trust.md, "The superuser steps").
"""

from __future__ import annotations

import re
import subprocess

import psycopg
import pytest
from psycopg import sql

from datatable_roles_lab.devcluster import PG_CLIENT_BIN
from datatable_roles.migrate import SQL_DIR

from support import connect, self_hosted_only

STEPS = ("bootstrap.sql", "pgbouncer-auth.sql", "after-pg-upgrade.sql")

# Words that may stand before "(" without being a function call.
NOT_CALLS = {
    "all", "and", "any", "array", "as", "check", "conflict", "exists", "filter", "from",
    "if", "in", "into", "join", "key", "lateral", "not", "on", "or", "over", "primary",
    "recursive", "return", "returns", "select", "some", "table", "then", "unique", "using",
    "values", "when", "where", "with", "within", "else", "case", "coalesce", "nullif",
    "greatest", "least", "cast", "row",
}
# After these words an identifier and "(" name a relation or its columns, not a call.
NAMING = {"as", "recursive", "with", "table", "into", "function"}


def code_of(text: str) -> str:
    """The SQL of a script with comments and string literals blanked (dollar-quoted bodies
    stay: they are code), and psql's backslash commands removed."""
    text = re.sub(r"^\\.*$", "", text, flags=re.M)
    out, i = [], 0
    while i < len(text):
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = len(text) if j < 0 else j
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
        elif text[i] == "'":
            j = i + 1
            while True:
                j = text.index("'", j)
                if text.startswith("''", j):
                    j += 2
                    continue
                break
            out.append("''")
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def unqualified_calls(text: str) -> list[str]:
    tokens = re.findall(r'"(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_$]*|\S', code_of(text))
    found = []
    for k, tok in enumerate(tokens[:-1]):
        if tokens[k + 1] != "(" or not re.match(r'[A-Za-z_"]', tok):
            continue
        before = tokens[k - 1].lower() if k else ""
        if before == "." or tok.lower() in NOT_CALLS or before in NAMING:
            continue
        found.append(tok)
    return found


def test_the_scanner_finds_an_unqualified_call():
    assert unqualified_calls("SELECT format('%I', x) FROM t AS a (b)") == ["format"]
    assert unqualified_calls("SELECT pg_catalog.format('f(x)', x) -- g(y)") == []
    assert unqualified_calls("DO $$ BEGIN EXECUTE quote_ident(p); END; $$;") == ["quote_ident"]


@pytest.mark.parametrize("step", STEPS)
def test_every_call_in_a_superuser_step_is_schema_qualified(step):
    """Each superuser step pins its search_path at the top and calls every function by its
    schema, in plain statements, \\gexec queries, DO blocks and the bodies it creates."""
    text = (SQL_DIR / step).read_text()
    assert code_of(text).split(";")[0].strip() == "SET search_path = pg_catalog, pg_temp"
    assert unqualified_calls(text) == []


def run_step(cluster, step: str, dbname: str, **variables: str) -> subprocess.CompletedProcess:
    """A superuser step with psql, as the superuser, its output kept."""
    cmd = [str(PG_CLIENT_BIN / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1"]
    for k, v in variables.items():
        cmd += ["-v", f"{k}={v}"]
    return subprocess.run(cmd + ["-d", cluster.superuser_conninfo(dbname), "-f",
                                 str(SQL_DIR / step)], capture_output=True, text=True)


def superuser_name(cluster) -> str:
    with cluster.connect_super() as conn:
        return conn.execute("SELECT rolname FROM pg_roles WHERE oid = 10").fetchone()[0]


def is_superuser(cluster, role: str) -> bool:
    with cluster.connect_super() as conn:
        return conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s",
                            [role]).fetchone()[0]


# Overloads that out-match pg_catalog.format(text, VARIADIC "any") for the calls the steps
# make, and functions that equal pg_catalog's but come first on a search_path the
# database's owner sets for its database. Each makes `victim` a superuser when a superuser
# calls it, then does what the real one does.
PLANTED = [
    ("format", "a text", "pg_catalog.format(a)"),
    ("format", "a text, b name", "pg_catalog.format(a, b)"),
    ("format", "a text, b name, c text", "pg_catalog.format(a, b, c)"),
    ("format", "a text, b text", "pg_catalog.format(a, b)"),
    ("format", "a text, b text, c text", "pg_catalog.format(a, b, c)"),
    ("format", "a text, b name, c name", "pg_catalog.format(a, b, c)"),
    ("current_database", "", "pg_catalog.current_database()"),
    ("current_setting", "a text", "pg_catalog.current_setting(a)"),
    ("set_config", "a text, b text, c boolean", "pg_catalog.set_config(a, b, c)"),
    ("quote_ident", "a text", "pg_catalog.quote_ident(a)"),
]


def plant(conn: psycopg.Connection, victim: str, dbname: str) -> None:
    for name, args, real in PLANTED:
        conn.execute(sql.SQL(
            "CREATE FUNCTION public.{name}({args}) RETURNS text LANGUAGE plpgsql AS $f$"
            " BEGIN IF (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r"
            "           WHERE r.rolname = current_user) THEN"
            "   EXECUTE 'ALTER ROLE ' || pg_catalog.quote_ident({victim}) || ' SUPERUSER';"
            " END IF; RETURN {real}; END $f$").format(
                name=sql.Identifier(name), args=sql.SQL(args), victim=sql.Literal(victim),
                real=sql.SQL(real)))
    conn.execute(sql.SQL("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC"))
    conn.execute(sql.SQL("ALTER DATABASE {} SET search_path = public, pg_catalog").format(
        sql.Identifier(dbname)))


@pytest.fixture
def no_superuser_left(cluster):
    """Whoever an attack made a superuser is one no longer when the test ends."""
    watched: list[str] = []
    yield watched
    with cluster.connect_super() as conn:
        for role in watched:
            conn.execute(sql.SQL("ALTER ROLE {} NOSUPERUSER").format(sql.Identifier(role)))


@self_hosted_only
def test_a_rerun_of_bootstrap_ignores_functions_the_owner_planted(
        cluster, meta_db, no_superuser_left):
    """The owner plants public.format(...) (and look-alikes of the other calls) in the
    metadata database and puts schema public first on its search_path; a superuser runs
    sql/bootstrap.sql again, as README.md asks before every upgrade: the owner is no
    superuser after it."""
    no_superuser_left.append(cluster.owner)
    with connect(meta_db.owner_conninfo) as conn:
        plant(conn, cluster.owner, meta_db.name)
    done = run_step(cluster, "bootstrap.sql", meta_db.name, owner=cluster.owner)
    assert done.returncode == 0, done.stderr
    assert not is_superuser(cluster, cluster.owner)


@pytest.fixture
def auth_user(cluster, uid):
    role = f"{uid}_pgb_auth"
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    return role


def test_the_pgbouncer_step_ignores_functions_the_admin_login_planted(
        cluster, datatable_db, auth_user, no_superuser_left):
    """A data table's admin login (which any job whose result is admin holds) plants
    public.format(...) in its database, which it owns, and puts public first on the
    database's search_path; the superuser runs sql/pgbouncer-auth.sql there: the admin
    login is no superuser after it."""
    db = datatable_db()
    no_superuser_left.append(db.admin_login)
    with connect(cluster.conninfo(db.admin_login, db.admin_password, db.dbname)) as conn:
        plant(conn, db.admin_login, db.dbname)
    done = run_step(cluster, "pgbouncer-auth.sql", db.dbname, auth_user=auth_user)
    assert done.returncode == 0, done.stderr
    assert not is_superuser(cluster, db.admin_login)


def schema_state(cluster, dbname: str, schema: str) -> list[tuple]:
    """(kind, name, owner) of the schema and what it holds."""
    with cluster.connect_super(dbname) as conn:
        return conn.execute(
            "SELECT 'schema', n.nspname, n.nspowner::regrole::text, n.nspacl::text"
            " FROM pg_namespace AS n WHERE n.nspname = %(s)s"
            " UNION ALL SELECT 'function', p.oid::regprocedure::text, p.proowner::regrole::text,"
            "   p.proacl::text"
            " FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace"
            " WHERE n.nspname = %(s)s ORDER BY 1, 2", {"s": schema}).fetchall()


def test_the_pgbouncer_step_refuses_a_schema_the_admin_login_made(
        cluster, datatable_db, auth_user):
    """The admin login owns its database, so it can make datatable_roles_pgbouncer first,
    with a lookup of its own that answers for postgres. The superuser step fails, naming
    the schema's owner and what to do, and changes nothing: no lookup of the superuser's
    lands in the admin's schema, and auth_user is given nothing in it."""
    db = datatable_db()
    with connect(cluster.conninfo(db.admin_login, db.admin_password, db.dbname)) as conn:
        conn.execute("CREATE SCHEMA datatable_roles_pgbouncer")
        conn.execute(
            "CREATE FUNCTION datatable_roles_pgbouncer.lookup(p_usename text)"
            " RETURNS TABLE (usename text, passwd text) LANGUAGE sql"
            " AS $$ SELECT 'postgres'::text, 'SCRAM-SHA-256$chosen'::text $$")
    before = schema_state(cluster, db.dbname, "datatable_roles_pgbouncer")
    done = run_step(cluster, "pgbouncer-auth.sql", db.dbname, auth_user=auth_user)
    assert done.returncode != 0
    assert "schema datatable_roles_pgbouncer exists" in done.stderr
    assert f"is owned by {db.admin_login}" in done.stderr
    assert "DROP SCHEMA datatable_roles_pgbouncer CASCADE" in done.stderr
    assert schema_state(cluster, db.dbname, "datatable_roles_pgbouncer") == before
    with cluster.connect_super(db.dbname) as conn:
        assert not conn.execute(
            "SELECT has_schema_privilege(%s, 'datatable_roles_pgbouncer', 'USAGE')",
            [auth_user]).fetchone()[0]


def test_the_pgbouncer_step_refuses_its_schema_once_someone_else_may_change_it(
        cluster, datatable_db, auth_user):
    """A schema the superuser made is refused too once a non-superuser owns an object in
    it or may CREATE in it."""
    db = datatable_db()
    done = run_step(cluster, "pgbouncer-auth.sql", db.dbname, auth_user=auth_user)
    assert done.returncode == 0, done.stderr
    with cluster.connect_super(db.dbname) as conn:
        conn.execute(sql.SQL("GRANT CREATE ON SCHEMA datatable_roles_pgbouncer TO {}").format(
            sql.Identifier(db.admin_login)))
    done = run_step(cluster, "pgbouncer-auth.sql", db.dbname, auth_user=auth_user)
    assert done.returncode != 0
    assert f"gives CREATE to {db.admin_login}" in done.stderr
    with connect(cluster.conninfo(db.admin_login, db.admin_password, db.dbname)) as conn:
        conn.execute("CREATE FUNCTION datatable_roles_pgbouncer.lookup(a text, b text)"
                     " RETURNS int LANGUAGE sql AS 'SELECT 1'")
    with cluster.connect_super(db.dbname) as conn:
        conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA datatable_roles_pgbouncer FROM {}").format(
            sql.Identifier(db.admin_login)))
    done = run_step(cluster, "pgbouncer-auth.sql", db.dbname, auth_user=auth_user)
    assert done.returncode != 0
    assert f"holds function lookup owned by {db.admin_login}" in done.stderr


@pytest.mark.parametrize("schema", ["datatable_roles_dblink", "datatable_roles_guard"])
def test_bootstrap_refuses_a_schema_the_owner_made(cluster, scratch, uid, schema):
    """In a new metadata database (owned by the package owner) the owner makes one of
    bootstrap's schemas first: bootstrap fails naming it, and makes nothing in it."""
    dbname = scratch.database(f"{uid}_meta")
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
            sql.Identifier(dbname), sql.Identifier(cluster.owner)))
    with connect(cluster.owner_conninfo(dbname)) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    done = run_step(cluster, "bootstrap.sql", dbname, owner=cluster.owner)
    assert done.returncode != 0
    assert f"schema {schema} exists" in done.stderr
    assert f"is owned by {cluster.owner}" in done.stderr
    with cluster.connect_super(dbname) as conn:
        (made,) = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'datatable_roles%'"
        ).fetchone()
        assert made == 1
        assert conn.execute("SELECT count(*) FROM pg_proc AS p JOIN pg_namespace AS n"
                            " ON n.oid = p.pronamespace WHERE n.nspname = %s",
                            [schema]).fetchone()[0] == 0


@self_hosted_only
def test_a_rerun_with_another_owner_leaves_that_owner_alone_on_the_guard(
        cluster, meta_db, uid):
    """bootstrap.sql run again naming another owner: exactly that owner has USAGE on the
    guard and dblink schemas and EXECUTE on the guard's functions; the one before has
    none left."""
    other = f"{uid}_owner2"
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} NOSUPERUSER CREATEROLE").format(
            sql.Identifier(other)))
    done = run_step(cluster, "bootstrap.sql", meta_db.name, owner=other)
    assert done.returncode == 0, done.stderr
    with cluster.connect_super(meta_db.name) as conn:
        schemas = conn.execute(
            "SELECT n.nspname, array_agg(DISTINCT coalesce(g.rolname, 'PUBLIC') ORDER BY"
            "   coalesce(g.rolname, 'PUBLIC'))"
            " FROM pg_namespace AS n CROSS JOIN LATERAL aclexplode(n.nspacl) AS x"
            " LEFT JOIN pg_roles AS g ON g.oid = x.grantee"
            " WHERE n.nspname IN ('datatable_roles_dblink', 'datatable_roles_guard')"
            "   AND x.grantee <> n.nspowner GROUP BY 1 ORDER BY 1").fetchall()
        assert schemas == [("datatable_roles_dblink", [other]),
                           ("datatable_roles_guard", [other])]
        functions = conn.execute(
            "SELECT p.proname, has_function_privilege(%s, p.oid, 'EXECUTE'),"
            "   has_function_privilege(%s, p.oid, 'EXECUTE')"
            " FROM pg_proc AS p WHERE p.pronamespace = 'datatable_roles_guard'::regnamespace"
            " ORDER BY 1", [cluster.owner, other]).fetchall()
        assert functions and not any(old for _, old, _ in functions)
        assert {name for name, _, new in functions if new} == {
            "create_login", "disable_login", "drop_login", "rekey_login", "sessions_of"}
        assert not conn.execute(
            "SELECT has_schema_privilege(%s, 'datatable_roles_guard', 'USAGE')"
            "    OR has_schema_privilege(%s, 'datatable_roles_dblink', 'USAGE')",
            [cluster.owner, cluster.owner]).fetchone()[0]


def server_version(cluster) -> int:
    with cluster.connect_super() as conn:
        return int(conn.execute("SHOW server_version_num").fetchone()[0])


def membership(cluster, role: str, member: str) -> tuple[bool, bool] | None:
    """(exists, admin option) of the direct grant of ``role`` to ``member``; None if none."""
    with cluster.connect_super() as conn:
        row = conn.execute(
            "SELECT bool_or(m.admin_option) FROM pg_auth_members AS m"
            " JOIN pg_roles AS r ON r.oid = m.roleid JOIN pg_roles AS u ON u.oid = m.member"
            " WHERE r.rolname = %s AND u.rolname = %s", [role, member]).fetchone()
    return row[0]


def test_after_pg_upgrade_acts_on_no_name_the_owner_wrote_that_reaches_privilege(
        cluster, make_world, uid):
    """The owner writes names into its own tables: a data table's admin login set to the
    bootstrap superuser, catalog roles named pg_execute_server_program, another instance's
    owner (CREATEROLE) and another instance's worker (a login the package does not make).
    The superuser runs sql/after-pg-upgrade.sql: the link login (whose password the owner
    can read) is not made a member of the superuser, and the owner gets ADMIN OPTION on
    none of those roles; each is named in a WARNING. What the package made is still taken
    care of (16+): the owner's ADMIN OPTION on the link login, and the link login's
    membership in a catalog role, given back when missing."""
    w = make_world(users={"pub": []}, roles=["r1"])
    su = superuser_name(cluster)
    other_owner, other_worker = f"{uid}_owner2", f"{uid}_worker2"
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE").format(
            sql.Identifier(other_owner)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(other_worker)))
    with connect(w.meta.owner_conninfo) as conn:
        (link,) = conn.execute("SELECT datatable_roles.link_login()").fetchone()
        conn.execute("UPDATE datatable_roles.datatable SET admin_login = %s"
                     " WHERE admin_login IS NOT NULL", [su])
        for name in ("pg_execute_server_program", other_owner, other_worker):
            conn.execute("INSERT INTO datatable_roles.catalog_role (name)"
                         " VALUES (%s)", [name])
    r1 = w.roles["r1"]
    newer = server_version(cluster) >= 160000
    if newer:
        with cluster.connect_super() as conn:
            conn.execute(sql.SQL("REVOKE {} FROM {}").format(
                sql.Identifier(link), sql.Identifier(cluster.owner)))
            conn.execute(sql.SQL("REVOKE {} FROM {} GRANTED BY {}").format(
                sql.Identifier(r1), sql.Identifier(link), sql.Identifier(cluster.owner)))
        assert membership(cluster, link, cluster.owner) is None
        assert membership(cluster, r1, link) is None
    done = run_step(cluster, "after-pg-upgrade.sql", w.meta.name, owner=cluster.owner)
    assert done.returncode == 0, done.stderr
    with cluster.connect_super() as conn:
        assert not conn.execute("SELECT pg_has_role(%s, %s, 'MEMBER')",
                                [link, su]).fetchone()[0]
    for name in ("pg_execute_server_program", other_owner, other_worker):
        assert not membership(cluster, name, cluster.owner), name
        if newer:
            assert f"skipped role {name}" in done.stderr
    if newer:
        assert f"skipped granting role {su} to the link login" in done.stderr
        assert membership(cluster, link, cluster.owner) is True
        assert membership(cluster, r1, link) is False
    again = run_step(cluster, "after-pg-upgrade.sql", w.meta.name, owner=cluster.owner)
    assert again.returncode == 0, again.stderr


def test_after_pg_upgrade_refuses_a_link_login_the_owner_renamed(cluster, make_world, uid):
    """The owner points link_credential at another role (a member of the superuser): the
    step skips the link login with a WARNING and grants that role nothing."""
    w = make_world(users={"pub": []}, roles=["r1"])
    su = superuser_name(cluster)
    fake = f"dtr_link_{uid[1:]}00000000000000"
    with cluster.connect_super() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(
            sql.Identifier(fake), sql.Identifier(su)))
    with connect(w.meta.owner_conninfo) as conn:
        conn.execute("UPDATE datatable_roles.link_credential SET login = %s", [fake])
    done = run_step(cluster, "after-pg-upgrade.sql", w.meta.name, owner=cluster.owner)
    assert done.returncode == 0, done.stderr
    assert membership(cluster, fake, cluster.owner) is None
    assert membership(cluster, w.roles["r1"], fake) is None
    if server_version(cluster) >= 160000:
        assert f"skipped the link login {fake}" in done.stderr


@self_hosted_only
def test_a_role_set_for_the_database_does_not_change_who_runs_bootstrap(cluster, meta_db):
    """The owner sets `role` for its metadata database (a superuser's session would start
    as the owner): bootstrap still runs as the superuser who connected, and the guard stays
    the superuser's."""
    with connect(meta_db.owner_conninfo) as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} SET role = {}").format(
            sql.Identifier(meta_db.name), sql.Identifier(cluster.owner)))
    done = run_step(cluster, "bootstrap.sql", meta_db.name, owner=cluster.owner)
    assert done.returncode == 0, done.stderr
    with cluster.connect_super(meta_db.name) as conn:
        owners = conn.execute(
            "SELECT DISTINCT r.rolsuper FROM pg_proc AS p JOIN pg_roles AS r"
            " ON r.oid = p.proowner"
            " WHERE p.pronamespace = 'datatable_roles_guard'::regnamespace").fetchall()
    assert owners == [(True,)]
