-- The superuser step for PgBouncer in front of a data table's database, run once in
-- EACH data table database that PgBouncer serves, and again after a new release of
-- this file (it is idempotent):
--   psql -d <data table db> -v auth_user=<pgbouncer auth role> -f sql/pgbouncer-auth.sql
-- PgBouncer's auth_query calls datatable_roles_pgbouncer.lookup(name) as auth_user, in the
-- database the client asked for (PgBouncer 1.18 has no auth_dbname). See docs/operating.md,
-- "PgBouncer".
--   * The lookup function, owned by the superuser (the one reader of pg_authid), SECURITY
--     DEFINER with a pinned search_path. It returns the stored SCRAM verifier of a set
--     login (wm_set_<40 hex digits>) that may log in to THIS database now, and nothing for
--     any other name: not the admin login (it owns the database), not the package owner or
--     the link login (other names; neither holds CONNECT here by a grant of its own), no
--     superuser, no role with CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS, no role past
--     its VALID UNTIL, no NOLOGIN role (a retired login), no role that is a member of a
--     role that may log in or of a predefined pg_* role, no role without a SCRAM verifier.
--     A verifier is not a password: it does not log in (a client must prove the key the
--     verifier only hashes), and set-login passwords carry 244 random bits.
--   * EXECUTE on it for auth_user alone (taken from anyone else), USAGE on its schema for
--     auth_user alone, and CONNECT on this database for auth_user (register_datatable took
--     CONNECT from PUBLIC).
-- The auth role itself (LOGIN, NOSUPERUSER, nothing else) is created by the operator.
-- It is safe to run at any time, whatever the admin login (which owns this database) or
-- anyone created or set here: names resolve in pg_catalog only, every call is qualified,
-- and it refuses a schema datatable_roles_pgbouncer that a non-superuser could change.
\set ON_ERROR_STOP on

-- Whatever the database's owner set for it (search_path, role), this session finds names
-- in pg_catalog only and acts as the superuser who connected.
SET search_path = pg_catalog, pg_temp;
SET ROLE NONE;

-- Refuse to run as a non-superuser (the function must be the superuser's), to serve a
-- role that would see more than verifiers, and to use a schema that is not the
-- superuser's alone (one owned by a role that is not a superuser, holding an object such
-- a role owns, or giving anyone CREATE): this step did not make it, and its owner could
-- swap the lookup (docs/operating.md).
SELECT
    pg_catalog.set_config('datatable_roles_pgbouncer.auth_user', :'auth_user', false)
        AS auth_user_set
\gset
DO $$
DECLARE
    auth text := pg_catalog.current_setting('datatable_roles_pgbouncer.auth_user');
    r pg_catalog.pg_roles;
    why text;
BEGIN
    IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'sql/pgbouncer-auth.sql must run as a superuser'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT * INTO r FROM pg_catalog.pg_roles WHERE rolname = auth;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'auth_user % does not exist: CREATE ROLE % LOGIN PASSWORD ...', auth, auth
            USING ERRCODE = 'undefined_object';
    END IF;
    IF r.rolsuper OR r.rolbypassrls OR r.rolreplication OR auth ~ '^(wm_set_|dtr_)' THEN
        RAISE EXCEPTION 'auth_user % must be a role of its own, not a superuser nor one of the'
            ' package''s roles', auth
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT pg_catalog.string_agg(o.what, ', ') INTO why
    FROM (
        SELECT pg_catalog.format('is owned by %I', g.rolname) AS what
        FROM pg_catalog.pg_namespace AS n
        JOIN pg_catalog.pg_roles AS g ON g.oid = n.nspowner
        WHERE n.nspname = 'datatable_roles_pgbouncer' AND NOT g.rolsuper
        UNION ALL
        SELECT pg_catalog.format('gives CREATE to %s', CASE WHEN x.grantee = 0 THEN 'PUBLIC'
            ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(x.grantee)) END)
        FROM pg_catalog.pg_namespace AS n
        CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS x
        WHERE n.nspname = 'datatable_roles_pgbouncer' AND x.privilege_type = 'CREATE'
            AND x.grantee <> n.nspowner
        UNION ALL
        SELECT pg_catalog.format('holds %s %I owned by %I', k.kind, k.name, g.rolname)
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
        JOIN pg_catalog.pg_roles AS g ON g.oid = k.owner
        WHERE n.nspname = 'datatable_roles_pgbouncer' AND NOT g.rolsuper
    ) AS o;
    IF why IS NOT NULL THEN
        RAISE EXCEPTION 'schema datatable_roles_pgbouncer exists and a role that is not a'
            ' superuser can change it: it %', why
            USING ERRCODE = 'duplicate_schema',
                  HINT = 'This step did not make it. Look at what it holds, DROP SCHEMA'
                      ' datatable_roles_pgbouncer CASCADE as a superuser, and run this step again.';
    END IF;
END;
$$;

CREATE SCHEMA IF NOT EXISTS datatable_roles_pgbouncer;
REVOKE ALL ON SCHEMA datatable_roles_pgbouncer FROM PUBLIC;

CREATE OR REPLACE FUNCTION datatable_roles_pgbouncer.lookup(p_usename text)
RETURNS TABLE (usename text, passwd text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- PL/pgSQL keeps the plan of its query for the session (PgBouncer's auth connection is
-- pooled): a SQL function would be planned on every login.
AS $$
BEGIN
    RETURN QUERY
    SELECT a.rolname::text, a.rolpassword
    FROM pg_catalog.pg_authid AS a
    JOIN pg_catalog.pg_database AS d ON d.datname = pg_catalog.current_database()
    WHERE a.rolname = p_usename
        -- The name set_login_of makes: 'wm_set_' and 40 lowercase hex digits.
        AND a.rolname ~ '^wm_set_[0-9a-f]{40}$'
        AND a.rolcanlogin
        AND NOT (a.rolsuper OR a.rolcreaterole OR a.rolcreatedb OR a.rolreplication
            OR a.rolbypassrls)
        AND (a.rolvaliduntil IS NULL OR a.rolvaliduntil > pg_catalog.now())
        AND a.rolpassword LIKE 'SCRAM-SHA-256$%'
        -- Scoped to this database: CONNECT granted to the login itself, and not its owner.
        AND a.oid <> d.datdba
        AND EXISTS (
            SELECT FROM pg_catalog.aclexplode(d.datacl) AS x
            WHERE x.grantee = a.oid AND x.privilege_type = 'CONNECT'
        )
        -- Its memberships are NOLOGIN, non-superuser roles of the cluster's own (catalog
        -- roles and the login group): no admin login, no predefined pg_* role.
        AND NOT EXISTS (
            SELECT FROM pg_catalog.pg_auth_members AS m
            JOIN pg_catalog.pg_authid AS g ON g.oid = m.roleid
            WHERE m.member = a.oid
                AND (g.rolcanlogin OR g.rolsuper OR g.rolbypassrls OR g.oid < 16384)
        );
END;
$$;

REVOKE ALL ON FUNCTION datatable_roles_pgbouncer.lookup(text) FROM PUBLIC;
-- Exactly one grantee: a role granted EXECUTE by an earlier run for another auth_user
-- loses it.
SELECT
    pg_catalog.format(
        'REVOKE ALL ON FUNCTION datatable_roles_pgbouncer.lookup(text) FROM %I', g.rolname
    )
FROM pg_catalog.pg_proc AS p
CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS x
JOIN pg_catalog.pg_roles AS g ON g.oid = x.grantee
WHERE
    p.oid = 'datatable_roles_pgbouncer.lookup(text)'::regprocedure
    AND x.grantee <> p.proowner AND g.rolname <> :'auth_user'
\gexec
SELECT pg_catalog.format('REVOKE ALL ON SCHEMA datatable_roles_pgbouncer FROM %I', g.rolname)
FROM pg_catalog.pg_namespace AS n
CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS x
JOIN pg_catalog.pg_roles AS g ON g.oid = x.grantee
WHERE
    n.nspname = 'datatable_roles_pgbouncer'
    AND x.grantee <> n.nspowner AND g.rolname <> :'auth_user'
\gexec

GRANT USAGE ON SCHEMA datatable_roles_pgbouncer TO :"auth_user";
GRANT EXECUTE ON FUNCTION datatable_roles_pgbouncer.lookup(text) TO :"auth_user";
SELECT pg_catalog.format(
    'GRANT CONNECT ON DATABASE %I TO %I', pg_catalog.current_database(), :'auth_user'
) \gexec
