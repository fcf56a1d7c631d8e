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
