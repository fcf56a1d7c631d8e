-- The superuser step after pg_upgrade from PostgreSQL 15 to 16 or later, once per
-- metadata database, before the package is used on the new cluster (docs/operating.md):
--     psql -d <metadata db> -v owner=<package owner> -f sql/after-pg-upgrade.sql
-- then `datatable-roles migrate` as the owner. Running it again changes nothing, and on
-- 15 it does nothing.
--
-- On 15, CREATEROLE let the owner grant, alter and drop any role that is not a
-- superuser. From 16 on it may do so only with ADMIN OPTION on the role, which it
-- gets for the roles it creates from then on; the roles it made on 15 come through
-- pg_upgrade without it, so making, enabling, disabling, renaming and dropping
-- roles, taking set logins back and the sweep all fail. This gives the owner ADMIN
-- OPTION (but neither INHERIT nor SET, as 16 would) on every role the package made:
-- catalog roles, set logins, the link login and the login group; and it gives the link
-- login what 0011 gives it, in case that migration ran after the upgrade (its grant of
-- the owner to the link login, made by 0.1.0 and refused from 16 on, is taken away).
--
-- The names come from the package's tables, which the owner can write: the catalog
-- keeps no record of who made a role, and pg_upgrade from 15 drops the grantor of
-- each membership (pg_dumpall dumps no grantors from a server before 16). So each
-- role is checked in the catalog alone first, and skipped with a WARNING naming it
-- unless it is safe: no superuser, REPLICATION, BYPASSRLS, CREATEROLE or CREATEDB,
-- not predefined, and a member of no such role, directly or not; ADMIN OPTION only
-- on a NOLOGIN role or a login named as the package names its set logins and link
-- login (what CREATEROLE let the owner grant on 15 anyway); grants to the link
-- login only of roles the owner holds.
\set ON_ERROR_STOP on

SET search_path = pg_catalog, pg_temp;
SET ROLE NONE;
SET client_min_messages = warning;
SELECT pg_catalog.set_config('datatable_roles.upgrade_owner', :'owner', false) AS upgrade_owner
\gset

-- Whether the catalog alone shows that p_role may be given to the owner or the link
-- login: it exists, is no superuser, has no attribute beyond roles and tables, is not
-- predefined, and is a member of no role that is any of these, directly or not.
CREATE FUNCTION pg_temp.role_is_plain(p_role text)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    WITH RECURSIVE closure (oid) AS (
        SELECT r.oid FROM pg_catalog.pg_authid AS r WHERE r.rolname = p_role
        UNION
        SELECT m.roleid FROM pg_catalog.pg_auth_members AS m
        JOIN closure AS c ON m.member = c.oid
    )
    SELECT EXISTS (SELECT FROM closure)
        AND p_role !~ '^pg_'
        AND NOT EXISTS (
            SELECT FROM closure AS c JOIN pg_catalog.pg_authid AS g ON g.oid = c.oid
            WHERE g.oid < 16384 OR g.rolsuper OR g.rolreplication OR g.rolbypassrls
                OR g.rolcreaterole OR g.rolcreatedb
        )
$$;

DO $$
DECLARE
    owner_name text := pg_catalog.current_setting('datatable_roles.upgrade_owner');
    link text := (SELECT c.login FROM datatable_roles.link_credential AS c);
    grant_row record;
    made text;
    grp text;
BEGIN
    IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user) THEN
        RAISE EXCEPTION 'sql/after-pg-upgrade.sql must run as a superuser'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (
        SELECT FROM pg_catalog.pg_roles AS pr
        WHERE pr.rolname = owner_name AND NOT pr.rolsuper AND pr.rolcreaterole
    ) THEN
        RAISE EXCEPTION 'package owner % does not exist, is a superuser or lacks CREATEROLE',
            pg_catalog.quote_literal(owner_name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.current_setting('server_version_num')::integer < 160000 THEN
        RETURN;  -- CREATEROLE needs no ADMIN OPTION on 15
    END IF;
    -- The link login, when the catalog shows it is one: a plain login named as
    -- renew_link_login names it.
    IF link !~ '^dtr_link_[0-9a-f]{20}$' OR NOT pg_temp.role_is_plain(link)
        OR NOT (SELECT r.rolcanlogin FROM pg_catalog.pg_roles AS r WHERE r.rolname = link) THEN
        RAISE WARNING 'skipped the link login %: not a plain login named dtr_link_<20 hex digits>',
            pg_catalog.quote_ident(link);
        link := NULL;
    END IF;
    FOR grant_row IN
        SELECT g.rolname AS grantor
        FROM pg_catalog.pg_auth_members AS m
        JOIN pg_catalog.pg_roles AS g ON g.oid = m.grantor
        JOIN pg_catalog.pg_roles AS r ON r.oid = m.roleid
        JOIN pg_catalog.pg_roles AS l ON l.oid = m.member
        WHERE r.rolname = owner_name AND l.rolname = link
    LOOP
        EXECUTE pg_catalog.format('REVOKE %I FROM %I GRANTED BY %I',
            owner_name, link, grant_row.grantor);
    END LOOP;
    -- The login group (0012 on), which the owner grants to every login it makes.
    IF EXISTS (
        SELECT FROM pg_catalog.pg_attribute AS a
        WHERE a.attrelid = 'datatable_roles.settings'::regclass AND a.attname = 'login_group'
            AND NOT a.attisdropped
    ) THEN
        EXECUTE 'SELECT s.login_group FROM datatable_roles.settings AS s' INTO grp;
    END IF;
    FOR made IN
        SELECT r.name FROM datatable_roles.catalog_role AS r
        UNION SELECT s.login FROM datatable_roles.datatable_role_set AS s
        UNION SELECT link WHERE link IS NOT NULL
        UNION SELECT grp WHERE grp IS NOT NULL
    LOOP
        CONTINUE WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_roles AS pr WHERE pr.rolname = made);
        IF NOT pg_temp.role_is_plain(made) OR NOT (
            made ~ '^(wm_set_[0-9a-f]{40}|dtr_link_[0-9a-f]{20})$'
            OR NOT (SELECT r.rolcanlogin FROM pg_catalog.pg_roles AS r WHERE r.rolname = made)
        ) THEN
            RAISE WARNING 'skipped role %: the package does not make a role like it',
                pg_catalog.quote_ident(made);
            CONTINUE;
        END IF;
        EXECUTE pg_catalog.format('GRANT %I TO %I WITH ADMIN OPTION, INHERIT FALSE, SET FALSE',
            made, owner_name);
    END LOOP;
    IF link IS NULL THEN
        RETURN;
    END IF;
    -- Only what the owner holds already: ADMIN OPTION on a role, or membership in an
    -- admin login.
    FOR made IN
        SELECT r.name FROM datatable_roles.catalog_role AS r
        UNION SELECT d.admin_login FROM datatable_roles.datatable AS d
        WHERE d.admin_login IS NOT NULL
    LOOP
        CONTINUE WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_roles AS pr WHERE pr.rolname = made)
            OR pg_catalog.pg_has_role(link, made, 'USAGE');
        IF NOT pg_temp.role_is_plain(made) OR NOT EXISTS (
            SELECT FROM pg_catalog.pg_auth_members AS m
            JOIN pg_catalog.pg_roles AS r ON r.oid = m.roleid
            JOIN pg_catalog.pg_roles AS o ON o.oid = m.member
            WHERE r.rolname = made AND o.rolname = owner_name
                AND (m.admin_option OR EXISTS (
                    SELECT FROM datatable_roles.datatable AS d WHERE d.admin_login = made
                ))
        ) THEN
            RAISE WARNING 'skipped granting role % to the link login: the package owner'
                ' does not hold it, or it is not a plain role', pg_catalog.quote_ident(made);
            CONTINUE;
        END IF;
        EXECUTE pg_catalog.format('GRANT %I TO %I', made, link);
    END LOOP;
END;
$$;
