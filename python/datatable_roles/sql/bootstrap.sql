-- The one superuser step, run once per metadata database before the first
-- migration (psql -v owner=<package owner> -f sql/bootstrap.sql):
--   * dblink, which is not a trusted extension, in a schema of its own that
--     only the package owner may use. The package reaches each data table
--     database with it (to move what a dropped login owns: REASSIGN OWNED and
--     DROP OWNED act in the current database only).
--   * CREATE on the database and on schema public for the owner, unless it
--     owns the database already.
--   * CONNECT on the metadata database taken from PUBLIC (logins handed to
--     jobs must not reach it) and given to the owner, WITH GRANT OPTION so
--     that grant_worker can give it to the worker role. The platform's own
--     login roles need it too: GRANT CONNECT ON DATABASE <this db> TO <role>.
--   * The guard: datatable_roles_guard.verifier_is(role, verifier), owned by
--     the superuser, the one reader of pg_authid. It tells the owner only
--     whether a non-superuser role's stored password verifier is exactly the
--     one given (the one the package set), so that a login whose password a
--     script changed is healed before it is handed out again.
--   * Two role changes made for the owner: datatable_roles_guard.disable_login
--     and drop_login, on roles the owner holds with ADMIN OPTION (PostgreSQL
--     16 and later). They let the sweep's cost per login stay the same however
--     many roles the owner made (docs/performance.md).
-- Run it again (it is idempotent) before migrating to a release that adds to it.
-- The owner role itself (NOSUPERUSER, CREATEROLE, pg_signal_backend, member of
-- each data table's admin login) is created by the operator: see README.md.
\set ON_ERROR_STOP on

CREATE SCHEMA IF NOT EXISTS datatable_roles_dblink;
REVOKE ALL ON SCHEMA datatable_roles_dblink FROM PUBLIC;
GRANT USAGE ON SCHEMA datatable_roles_dblink TO :"owner";
CREATE EXTENSION IF NOT EXISTS dblink SCHEMA datatable_roles_dblink;

SELECT format('GRANT CREATE ON DATABASE %I TO %I', current_database(), :'owner') \gexec
GRANT CREATE ON SCHEMA public TO :"owner";

SELECT format('REVOKE CONNECT ON DATABASE %I FROM PUBLIC', current_database()) \gexec
SELECT format(
    'GRANT CONNECT ON DATABASE %I TO %I WITH GRANT OPTION', current_database(), :'owner'
) \gexec

CREATE SCHEMA IF NOT EXISTS datatable_roles_guard;
REVOKE ALL ON SCHEMA datatable_roles_guard FROM PUBLIC;
GRANT USAGE ON SCHEMA datatable_roles_guard TO :"owner";

CREATE OR REPLACE FUNCTION datatable_roles_guard.verifier_is(p_role text, p_verifier text)
RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- PL/pgSQL keeps the plan of its statement for the session: a SQL function
-- is planned on every call, and this one runs on every resolve.
AS $$
BEGIN
    RETURN (
        SELECT a.rolpassword = p_verifier
        FROM pg_catalog.pg_authid AS a
        WHERE a.rolname = p_role AND NOT a.rolsuper
    );
END;
$$;

REVOKE ALL ON FUNCTION datatable_roles_guard.verifier_is(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION datatable_roles_guard.verifier_is(text, text) TO :"owner";

-- Whose roles disable_login and drop_login may change: the owner named at
-- bootstrap (one row).
CREATE TABLE IF NOT EXISTS datatable_roles_guard.package_owner (
    name text PRIMARY KEY,
    one boolean NOT NULL DEFAULT true UNIQUE CHECK (one)
);
REVOKE ALL ON datatable_roles_guard.package_owner FROM PUBLIC;
INSERT INTO datatable_roles_guard.package_owner AS o (name) VALUES (:'owner')
ON CONFLICT (one) DO UPDATE SET name = excluded.name;

-- From PostgreSQL 16 on, a CREATEROLE owner may ALTER or DROP only a role it
-- holds with ADMIN OPTION, and the server checks that by walking every
-- membership the owner has: one per role it ever made (catalog roles, set
-- logins), each read again from the catalog after any membership changed.
-- At 10,000 roles that is 100-300 ms per ALTER ROLE or DROP ROLE. These two
-- do the same change as the superuser, after the check as one index lookup:
-- the owner holds p_role directly WITH ADMIN OPTION, and p_role has no
-- attribute only a superuser may give. So they give the owner nothing it
-- could not do itself. On 15 the owner holds no such grants: they refuse.
CREATE OR REPLACE FUNCTION datatable_roles_guard.owner_administers(p_role text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (
        SELECT FROM pg_catalog.pg_auth_members AS m
        JOIN pg_catalog.pg_authid AS r ON r.oid = m.roleid
        JOIN pg_catalog.pg_authid AS o ON o.oid = m.member
        JOIN datatable_roles_guard.package_owner AS po ON po.name = o.rolname
        WHERE r.rolname = p_role AND m.admin_option
            AND NOT (r.rolsuper OR r.rolreplication OR r.rolbypassrls)
    )
$$;

CREATE OR REPLACE FUNCTION datatable_roles_guard.disable_login(p_role text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT datatable_roles_guard.owner_administers(p_role) THEN
        RAISE EXCEPTION 'the package owner does not hold role % with ADMIN OPTION',
            quote_ident(p_role) USING ERRCODE = 'insufficient_privilege';
    END IF;
    EXECUTE format('ALTER ROLE %I WITH NOLOGIN', p_role);
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles_guard.drop_login(p_role text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT datatable_roles_guard.owner_administers(p_role) THEN
        RAISE EXCEPTION 'the package owner does not hold role % with ADMIN OPTION',
            quote_ident(p_role) USING ERRCODE = 'insufficient_privilege';
    END IF;
    EXECUTE format('DROP ROLE %I', p_role);
END;
$$;

REVOKE ALL ON FUNCTION datatable_roles_guard.owner_administers(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION datatable_roles_guard.disable_login(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION datatable_roles_guard.drop_login(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION datatable_roles_guard.disable_login(text) TO :"owner";
GRANT EXECUTE ON FUNCTION datatable_roles_guard.drop_login(text) TO :"owner";
