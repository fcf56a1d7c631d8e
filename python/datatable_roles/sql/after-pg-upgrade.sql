-- The superuser step after pg_upgrade from PostgreSQL 15 to 16 or later, once per
-- metadata database, before the package is used on the new cluster (docs/operating.md):
--     psql -d <metadata db> -v owner=<package owner> -f sql/after-pg-upgrade.sql
-- then `datatable-roles migrate` as the owner. Running it again changes nothing.
--
-- On 15, CREATEROLE let the owner grant, alter and drop any role that is not a
-- superuser. From 16 on it may do so only with ADMIN OPTION on the role, which it
-- gets for the roles it creates from then on; the roles it made on 15 come through
-- pg_upgrade without it, so making, enabling, disabling, renaming and dropping
-- roles, taking set logins back and the sweep all fail. This gives the owner ADMIN
-- OPTION (but neither INHERIT nor SET, as 16 would) on every role the package made:
-- catalog roles, set logins, the link login and the login group; and it gives the link login what
-- 0011 gives it, in case that migration ran after the upgrade (its grant of the
-- owner to the link login, made by 0.1.0 and refused from 16 on, is taken away).
\set ON_ERROR_STOP on

SET client_min_messages = warning;
SELECT set_config('datatable_roles.upgrade_owner', :'owner', false) AS upgrade_owner \gset

DO $$
DECLARE
    owner_name text := current_setting('datatable_roles.upgrade_owner');
    link text := (SELECT c.login FROM datatable_roles.link_credential AS c);
    grant_row record;
    made text;
    grp text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = owner_name) THEN
        RAISE EXCEPTION 'package owner % does not exist', quote_literal(owner_name);
    END IF;
    FOR grant_row IN
        SELECT g.rolname AS grantor
        FROM pg_auth_members AS m JOIN pg_roles AS g ON g.oid = m.grantor
        WHERE m.roleid = owner_name::regrole AND m.member = link::regrole
    LOOP
        EXECUTE format('REVOKE %I FROM %I GRANTED BY %I', owner_name, link, grant_row.grantor);
    END LOOP;
    -- The login group (0012 on), which the owner grants to every login it makes.
    IF EXISTS (
        SELECT FROM pg_attribute AS a
        WHERE a.attrelid = 'datatable_roles.settings'::regclass AND a.attname = 'login_group'
            AND NOT a.attisdropped
    ) THEN
        EXECUTE 'SELECT s.login_group FROM datatable_roles.settings AS s' INTO grp;
    END IF;
    FOR made IN
        SELECT r.name FROM datatable_roles.catalog_role AS r
        UNION SELECT s.login FROM datatable_roles.datatable_role_set AS s
        UNION SELECT link
        UNION SELECT grp WHERE grp IS NOT NULL
    LOOP
        CONTINUE WHEN NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = made);
        EXECUTE format('GRANT %I TO %I WITH ADMIN OPTION, INHERIT FALSE, SET FALSE',
            made, owner_name);
    END LOOP;
    FOR made IN
        SELECT r.name FROM datatable_roles.catalog_role AS r
        UNION SELECT d.admin_login FROM datatable_roles.datatable AS d
        WHERE d.admin_login IS NOT NULL
    LOOP
        CONTINUE WHEN NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = made)
            OR pg_has_role(link, made, 'USAGE');
        EXECUTE format('GRANT %I TO %I', made, link);
    END LOOP;
END;
$$;
