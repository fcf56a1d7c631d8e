-- The managed profile's set-up step (docs/operating.md, "Managed PostgreSQL"),
-- run once per metadata database before the first migration, by the role
-- that owns that database or the service's admin role (rds_superuser,
-- cloudsqlsuperuser, azure_pg_admin, ...), none of them a superuser:
--   psql -d <metadata db> -v owner=<package owner> -f sql/managed.sql
-- Then the extension step, as the role the service lets create extensions
-- (the same admin role on RDS, Cloud SQL, Azure, Supabase and Neon):
--   CREATE EXTENSION IF NOT EXISTS dblink SCHEMA datatable_roles_dblink;
-- and `datatable-roles migrate` as the package owner.
-- It gives the package owner what sql/bootstrap.sql gives it, and no more:
--   * schema datatable_roles_dblink for dblink, usable by the owner alone;
--   * CREATE on the database and on schema public (an owner that owns the
--     database has both already);
--   * CONNECT on this database taken from PUBLIC (logins handed to jobs must
--     not reach it) and given to the owner WITH GRANT OPTION, so that
--     grant_worker can give it to the worker role.
-- Nothing reads pg_authid, no function is made, and no pg_hba.conf edit is
-- needed: docs/operating.md says what each service lets you restrict instead.
-- It is idempotent.
\set ON_ERROR_STOP on

SET search_path = pg_catalog, pg_temp;

CREATE SCHEMA IF NOT EXISTS datatable_roles_dblink;
REVOKE ALL ON SCHEMA datatable_roles_dblink FROM PUBLIC;
GRANT USAGE ON SCHEMA datatable_roles_dblink TO :"owner";

SELECT pg_catalog.format(
    'GRANT CREATE ON DATABASE %I TO %I', pg_catalog.current_database(), :'owner'
) \gexec
GRANT CREATE ON SCHEMA public TO :"owner";

SELECT pg_catalog.format(
    'REVOKE CONNECT ON DATABASE %I FROM PUBLIC', pg_catalog.current_database()
) \gexec
SELECT pg_catalog.format(
    'GRANT CONNECT ON DATABASE %I TO %I WITH GRANT OPTION', pg_catalog.current_database(), :'owner'
) \gexec
