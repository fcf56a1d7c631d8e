-- The self-hosted profile's superuser step, run once per metadata database
-- before the first migration (psql -v owner=<package owner> -f
-- sql/bootstrap.sql). Managed PostgreSQL, where nobody is superuser, uses
-- sql/managed.sql instead: nothing here is needed for correctness or for a
-- promise of docs/trust.md; the role guard only makes role changes fast at
-- 10,000 roles on PostgreSQL 16 and later (docs/operating.md).
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
--   * No reader of pg_authid: the guard datatable_roles_guard.verifier_is of
--     earlier releases is dropped.
--   * The role changes the package makes to its set logins, made for the owner
--     (PostgreSQL 16 and later): datatable_roles_guard.create_login,
--     rekey_login, disable_login and drop_login, on roles the owner holds
--     with ADMIN OPTION; and sessions_of, the pids of a role's sessions. They
--     keep first use and the sweep as fast at 10,000 roles as at ten
--     (docs/performance.md).
-- Run it again (it is idempotent) before migrating to a release that adds to it.
-- It is safe to run at any time, whatever a non-superuser created or wrote in
-- this database: names resolve in pg_catalog only, every call is qualified,
-- it refuses a schema of its own that someone else could change, and it reads
-- no table a non-superuser can write. A re-run with another owner leaves the
-- named owner alone with USAGE on its schemas and EXECUTE on the guard.
-- The owner role itself (NOSUPERUSER, CREATEROLE, pg_signal_backend, member of
-- each data table's admin login) is created by the operator: see README.md.
\set ON_ERROR_STOP on

-- Whatever the database's owner set for it (search_path, role), this session
-- finds names in pg_catalog only and acts as the superuser who connected.
SET search_path = pg_catalog, pg_temp;
SET ROLE NONE;
SELECT pg_catalog.set_config('datatable_roles_bootstrap.owner', :'owner', false) AS owner_set
\gset

-- Refuse a non-superuser, an owner that does not exist or is a superuser, and
-- a schema of ours that a non-superuser could change: one owned by a role
-- that is not a superuser, holding an object such a role owns, or giving
-- anyone CREATE. This step did not make such a schema (docs/operating.md).
DO $$
DECLARE
    owner_name text := pg_catalog.current_setting('datatable_roles_bootstrap.owner');
    schema_name text;
    why text;
BEGIN
    IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user) THEN
        RAISE EXCEPTION 'sql/bootstrap.sql must run as a superuser'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (
        SELECT FROM pg_catalog.pg_roles AS r WHERE r.rolname = owner_name AND NOT r.rolsuper
    ) THEN
        RAISE EXCEPTION 'package owner % does not exist or is a superuser',
            pg_catalog.quote_literal(owner_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Name the owner role (NOSUPERUSER CREATEROLE, README.md) with -v owner=.';
    END IF;
    FOREACH schema_name IN ARRAY ARRAY['datatable_roles_dblink', 'datatable_roles_guard'] LOOP
        SELECT pg_catalog.string_agg(o.what, ', ') INTO why
        FROM (
            SELECT pg_catalog.format('is owned by %I', r.rolname) AS what
            FROM pg_catalog.pg_namespace AS n
            JOIN pg_catalog.pg_roles AS r ON r.oid = n.nspowner
            WHERE n.nspname = schema_name AND NOT r.rolsuper
            UNION ALL
            SELECT pg_catalog.format('gives CREATE to %s', CASE WHEN x.grantee = 0 THEN 'PUBLIC'
                ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(x.grantee)) END)
            FROM pg_catalog.pg_namespace AS n
            CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS x
            WHERE n.nspname = schema_name AND x.privilege_type = 'CREATE'
                AND x.grantee <> n.nspowner
            UNION ALL
            SELECT pg_catalog.format('holds %s %I owned by %I', k.kind, k.name, r.rolname)
            FROM pg_catalog.pg_namespace AS n
            CROSS JOIN LATERAL (
                SELECT 'relation', c.relname, c.relowner FROM pg_catalog.pg_class AS c
                WHERE c.relnamespace = n.oid
                UNION ALL SELECT 'function', p.proname, p.proowner FROM pg_catalog.pg_proc AS p
                WHERE p.pronamespace = n.oid
                UNION ALL SELECT 'type', t.typname, t.typowner FROM pg_catalog.pg_type AS t
                WHERE t.typnamespace = n.oid
                UNION ALL SELECT 'operator', o.oprname, o.oprowner
                FROM pg_catalog.pg_operator AS o WHERE o.oprnamespace = n.oid
                UNION ALL SELECT 'collation', c.collname, c.collowner
                FROM pg_catalog.pg_collation AS c WHERE c.collnamespace = n.oid
                UNION ALL SELECT 'conversion', c.conname, c.conowner
                FROM pg_catalog.pg_conversion AS c WHERE c.connamespace = n.oid
                UNION ALL SELECT 'operator class', c.opcname, c.opcowner
                FROM pg_catalog.pg_opclass AS c WHERE c.opcnamespace = n.oid
                UNION ALL SELECT 'operator family', f.opfname, f.opfowner
                FROM pg_catalog.pg_opfamily AS f WHERE f.opfnamespace = n.oid
                UNION ALL SELECT 'text search configuration', c.cfgname, c.cfgowner
                FROM pg_catalog.pg_ts_config AS c WHERE c.cfgnamespace = n.oid
                UNION ALL SELECT 'text search dictionary', d.dictname, d.dictowner
                FROM pg_catalog.pg_ts_dict AS d WHERE d.dictnamespace = n.oid
                UNION ALL SELECT 'statistics object', s.stxname, s.stxowner
                FROM pg_catalog.pg_statistic_ext AS s WHERE s.stxnamespace = n.oid
            ) AS k (kind, name, owner)
            JOIN pg_catalog.pg_roles AS r ON r.oid = k.owner
            WHERE n.nspname = schema_name AND NOT r.rolsuper
        ) AS o;
        IF why IS NOT NULL THEN
            RAISE EXCEPTION 'schema % exists and a role that is not a superuser can change it: it %',
                schema_name, why
                USING ERRCODE = 'duplicate_schema',
                      HINT = pg_catalog.format('This step did not make it. Look at what it holds,'
                          ' DROP SCHEMA %I CASCADE as a superuser, and run this step again.',
                          schema_name);
        END IF;
    END LOOP;
END;
$$;

CREATE SCHEMA IF NOT EXISTS datatable_roles_dblink;
REVOKE ALL ON SCHEMA datatable_roles_dblink FROM PUBLIC;
GRANT USAGE ON SCHEMA datatable_roles_dblink TO :"owner";
CREATE EXTENSION IF NOT EXISTS dblink SCHEMA datatable_roles_dblink;

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

CREATE SCHEMA IF NOT EXISTS datatable_roles_guard;
REVOKE ALL ON SCHEMA datatable_roles_guard FROM PUBLIC;
GRANT USAGE ON SCHEMA datatable_roles_guard TO :"owner";

-- The guard's password check of earlier releases: nothing calls it since
-- migration 0020 (a changed password is proven by a real login attempt), and
-- a superuser function that answers questions about passwords is surface.
DROP FUNCTION IF EXISTS datatable_roles_guard.verifier_is(text, text);

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
-- attribute only a superuser may give (nor CREATEDB or CREATEROLE that the
-- owner lacks). So they give the owner nothing it
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
        JOIN pg_catalog.pg_roles AS r ON r.oid = m.roleid
        JOIN pg_catalog.pg_roles AS o ON o.oid = m.member
        JOIN datatable_roles_guard.package_owner AS po ON po.name = o.rolname
        WHERE r.rolname = p_role AND m.admin_option
            AND NOT (r.rolsuper OR r.rolreplication OR r.rolbypassrls)
            -- ALTER ROLE changes CREATEDB and CREATEROLE only for a role
            -- that has them itself.
            AND (o.rolcreatedb OR NOT r.rolcreatedb)
            AND (o.rolcreaterole OR NOT r.rolcreaterole)
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
        RAISE EXCEPTION 'the package owner does not hold role % with ADMIN OPTION,'
            ' or the role has an attribute the owner may not change',
            pg_catalog.quote_ident(p_role) USING ERRCODE = 'insufficient_privilege';
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
    IF coalesce(pg_catalog.cardinality(p_roles), 0) = 0 OR p_verifier NOT LIKE 'SCRAM-SHA-256$%' THEN
        RAISE EXCEPTION 'a set login needs roles and a SCRAM verifier'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOREACH r IN ARRAY p_roles || p_group LOOP
        PERFORM datatable_roles_guard.require_administered(r);
    END LOOP;
    EXECUTE pg_catalog.format('CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE'
        || ' NOREPLICATION NOBYPASSRLS PASSWORD %L IN ROLE %s', p_role, p_verifier,
        (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(x), ', ') FROM pg_catalog.unnest(p_roles) AS x));
    EXECUTE pg_catalog.format('GRANT %I TO %I WITH INHERIT FALSE, SET FALSE', p_group, p_role);
    EXECUTE pg_catalog.format('GRANT %I TO %I WITH ADMIN OPTION, INHERIT FALSE, SET FALSE',
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
    EXECUTE pg_catalog.format('ALTER ROLE %I WITH LOGIN INHERIT NOCREATEDB NOCREATEROLE'
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
    EXECUTE pg_catalog.format('ALTER ROLE %I WITH NOLOGIN', p_role);
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles_guard.drop_login(p_role text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles_guard.require_administered(p_role);
    EXECUTE pg_catalog.format('DROP ROLE %I', p_role);
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

-- Exactly one grantee, the owner named now: a run before with another owner
-- (or a grant anyone made) leaves no USAGE on these schemas and no right on
-- the guard's functions and table to any other role.
SELECT DISTINCT
    pg_catalog.format(
        'REVOKE ALL ON SCHEMA %I FROM %s', n.nspname,
        CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(g.rolname) END
    )
FROM pg_catalog.pg_namespace AS n
CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS x
LEFT JOIN pg_catalog.pg_roles AS g ON g.oid = x.grantee
WHERE
    n.nspname IN ('datatable_roles_dblink', 'datatable_roles_guard')
    AND x.grantee <> n.nspowner AND g.rolname IS DISTINCT FROM :'owner'
\gexec
SELECT DISTINCT
    pg_catalog.format(
        'REVOKE ALL ON FUNCTION %s FROM %s', p.oid::regprocedure,
        CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(g.rolname) END
    )
FROM pg_catalog.pg_proc AS p
CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS x
LEFT JOIN pg_catalog.pg_roles AS g ON g.oid = x.grantee
WHERE
    p.pronamespace = 'datatable_roles_guard'::regnamespace
    AND x.grantee <> p.proowner AND g.rolname IS DISTINCT FROM :'owner'
\gexec
SELECT DISTINCT
    pg_catalog.format(
        'REVOKE ALL ON TABLE %s FROM %s', c.oid::regclass,
        CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(g.rolname) END
    )
FROM pg_catalog.pg_class AS c
CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS x
LEFT JOIN pg_catalog.pg_roles AS g ON g.oid = x.grantee
WHERE
    c.relnamespace = 'datatable_roles_guard'::regnamespace
    AND x.grantee <> c.relowner
\gexec
