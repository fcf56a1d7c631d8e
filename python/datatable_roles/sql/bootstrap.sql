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
--   * The role changes the package makes to its set logins, made for the owner
--     (PostgreSQL 16 and later): datatable_roles_guard.create_login,
--     rekey_login, disable_login and drop_login, on roles the owner holds
--     with ADMIN OPTION; and sessions_of, the pids of a role's sessions. They
--     keep first use and the sweep as fast at 10,000 roles as at ten
--     (docs/performance.md).
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

-- The pids of p_role's sessions, which pg_stat_activity shows anyone. As the
-- owner, reading them right after a role change costs milliseconds: the
-- server checks the owner's right to see each session by computing its
-- memberships again, one per role it made (PostgreSQL 16 and later).
CREATE OR REPLACE FUNCTION datatable_roles_guard.sessions_of(p_role text)
RETURNS SETOF integer
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT a.pid FROM pg_catalog.pg_stat_get_activity(NULL) AS a
    WHERE a.usesysid = pg_catalog.to_regrole(pg_catalog.quote_ident(p_role));
END;
$$;

REVOKE ALL ON FUNCTION datatable_roles_guard.sessions_of(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION datatable_roles_guard.sessions_of(text) TO :"owner";

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
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- PL/pgSQL keeps the plan of its statement for the session.
AS $$
BEGIN
    RETURN EXISTS (
        SELECT FROM pg_catalog.pg_auth_members AS m
        JOIN pg_catalog.pg_authid AS r ON r.oid = m.roleid
        WHERE r.rolname = p_role AND m.admin_option
            AND m.member = (
                SELECT o.oid FROM pg_catalog.pg_authid AS o
                JOIN datatable_roles_guard.package_owner AS po ON po.name = o.rolname
            )
            AND NOT (r.rolsuper OR r.rolreplication OR r.rolbypassrls)
    );
END;
$$;

-- Raises 42501 unless owner_administers(p_role).
CREATE OR REPLACE FUNCTION datatable_roles_guard.require_administered(p_role text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT datatable_roles_guard.owner_administers(p_role) THEN
        RAISE EXCEPTION 'the package owner does not hold role % with ADMIN OPTION',
            quote_ident(p_role) USING ERRCODE = 'insufficient_privilege';
    END IF;
END;
$$;

-- A new set login: LOGIN with no other attribute, the verifier given, member
-- of p_roles (inheriting) and of p_group (neither inheriting nor SET), each
-- a role the owner administers; then held by the owner WITH ADMIN OPTION, as
-- PostgreSQL 16 grants a CREATEROLE creator what it makes.
CREATE OR REPLACE FUNCTION datatable_roles_guard.create_login(
    p_role text, p_verifier text, p_roles text[], p_group text
)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r text;
BEGIN
    IF coalesce(cardinality(p_roles), 0) = 0 OR p_verifier NOT LIKE 'SCRAM-SHA-256$%' THEN
        RAISE EXCEPTION 'a set login needs roles and a SCRAM verifier'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOREACH r IN ARRAY p_roles || p_group LOOP
        PERFORM datatable_roles_guard.require_administered(r);
    END LOOP;
    EXECUTE format('CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE'
        || ' NOREPLICATION NOBYPASSRLS PASSWORD %L IN ROLE %s', p_role, p_verifier,
        (SELECT string_agg(quote_ident(x), ', ') FROM unnest(p_roles) AS x));
    EXECUTE format('GRANT %I TO %I WITH INHERIT FALSE, SET FALSE', p_group, p_role);
    EXECUTE format('GRANT %I TO %I WITH ADMIN OPTION, INHERIT FALSE, SET FALSE',
        p_role, (SELECT po.name FROM datatable_roles_guard.package_owner AS po));
END;
$$;

-- A set login taken back: LOGIN again, every attribute anyone gave it
-- removed, and the verifier given.
CREATE OR REPLACE FUNCTION datatable_roles_guard.rekey_login(p_role text, p_verifier text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles_guard.require_administered(p_role);
    IF p_verifier NOT LIKE 'SCRAM-SHA-256$%' THEN
        RAISE EXCEPTION 'a set login needs a SCRAM verifier' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    EXECUTE format('ALTER ROLE %I WITH LOGIN INHERIT NOCREATEDB NOCREATEROLE'
        || ' CONNECTION LIMIT -1 VALID UNTIL %L PASSWORD %L', p_role, 'infinity', p_verifier);
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles_guard.disable_login(p_role text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles_guard.require_administered(p_role);
    EXECUTE format('ALTER ROLE %I WITH NOLOGIN', p_role);
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles_guard.drop_login(p_role text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles_guard.require_administered(p_role);
    EXECUTE format('DROP ROLE %I', p_role);
END;
$$;

REVOKE ALL ON FUNCTION datatable_roles_guard.owner_administers(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION datatable_roles_guard.require_administered(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION datatable_roles_guard.create_login(text, text, text[], text) FROM PUBLIC;
REVOKE ALL ON FUNCTION datatable_roles_guard.rekey_login(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION datatable_roles_guard.disable_login(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION datatable_roles_guard.drop_login(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION datatable_roles_guard.create_login(text, text, text[], text) TO :"owner";
GRANT EXECUTE ON FUNCTION datatable_roles_guard.rekey_login(text, text) TO :"owner";
GRANT EXECUTE ON FUNCTION datatable_roles_guard.disable_login(text) TO :"owner";
GRANT EXECUTE ON FUNCTION datatable_roles_guard.drop_login(text) TO :"owner";
