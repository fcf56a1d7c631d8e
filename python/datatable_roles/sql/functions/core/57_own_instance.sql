-- A metadata database copied from another (CREATE DATABASE ... TEMPLATE, as
-- the test harness, pgTAP and the lab make theirs) starts as the same
-- instance as its original: the same instance id, link login and login
-- group. become_own_instance makes the copy an instance of its own. Internal:
-- no entry point; the database's owner runs it.

-- The login group of an instance, as migration 0012 names it: every
-- generated login is a member, for pg_hba.conf rules.
CREATE OR REPLACE FUNCTION datatable_roles.login_group_name(p_instance uuid)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'dtr_logins_' || left(replace(p_instance::text, '-', ''), 20)
$$;

-- Run by the owner of the current database in a fresh copy: a new instance
-- id, CONNECT taken from PUBLIC as sql/bootstrap.sql does (CREATE DATABASE
-- copies no database privilege), a link login of its own (a rotation here
-- must not lock out the original) and a login group of its own (made by the
-- owner, which so holds ADMIN on it from 16 on, as after migration 0012).
-- Returns the link login. Raises 42501 when the caller does not own the
-- database. Grant the worker again afterwards (grant_worker): CONNECT is not
-- copied either.
CREATE OR REPLACE FUNCTION datatable_roles.become_own_instance()
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    instance uuid := gen_random_uuid();
    grp text;
    link text;
BEGIN
    IF NOT EXISTS (
        SELECT FROM pg_database AS d
        WHERE d.datname = current_database() AND d.datdba = (
            SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user
        )
    ) THEN
        RAISE EXCEPTION 'only the owner of database % can make it an instance of its own',
            quote_ident(current_database())
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    grp := datatable_roles.login_group_name(instance);
    UPDATE datatable_roles.settings SET instance_id = instance;
    EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM PUBLIC', current_database());
    link := datatable_roles.renew_link_login();
    EXECUTE format('CREATE ROLE %I WITH NOLOGIN NOINHERIT', grp);
    UPDATE datatable_roles.settings SET login_group = grp;
    RETURN link;
END;
$$;
