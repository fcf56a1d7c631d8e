-- The one superuser step, run once per metadata database before the first
-- migration (psql -v owner=<package owner> -f sql/bootstrap.sql):
--   * dblink, which is not a trusted extension, in a schema of its own that
--     only the package owner may use. The package reaches each data table
--     database with it (to move what a dropped login owns: REASSIGN OWNED and
--     DROP OWNED act in the current database only).
--   * CREATE on the database and on schema public for the owner, unless it
--     owns the database already.
-- The owner role itself (NOSUPERUSER, CREATEROLE, pg_signal_backend, member of
-- each data table's admin login) is created by the operator: see README.md.
\set ON_ERROR_STOP on

CREATE SCHEMA IF NOT EXISTS datatable_roles_dblink;
REVOKE ALL ON SCHEMA datatable_roles_dblink FROM PUBLIC;
GRANT USAGE ON SCHEMA datatable_roles_dblink TO :"owner";
CREATE EXTENSION IF NOT EXISTS dblink SCHEMA datatable_roles_dblink;

SELECT format('GRANT CREATE ON DATABASE %I TO %I', current_database(), :'owner') \gexec
GRANT CREATE ON SCHEMA public TO :"owner";
