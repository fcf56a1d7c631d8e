-- Data tables, references to them, their role maps, tenants and defaults.

-- The entry (workspace, name) names, or P0002. Returns the entry's own row.
CREATE OR REPLACE FUNCTION datatable_roles.require_datatable(p_workspace text, p_name text)
RETURNS datatable_roles.datatable
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable;
BEGIN
    PERFORM datatable_roles.require_workspace(p_workspace);
    PERFORM datatable_roles.require(p_name, 'datatable');
    SELECT d.* INTO entry FROM datatable_roles.datatable AS d
    WHERE d.workspace = p_workspace AND d.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'data table % does not exist in workspace %',
            quote_literal(left(p_name, 80)), quote_literal(p_workspace)
            USING ERRCODE = 'no_data_found', HINT = 'Register it with register_datatable.';
    END IF;
    RETURN entry;
END;
$$;

-- Like require_datatable, for calls that edit the role map: a reference is
-- refused (55000), since the governing entry decides everything.
CREATE OR REPLACE FUNCTION datatable_roles.require_governing_datatable(
    p_workspace text, p_name text
)
RETURNS datatable_roles.datatable
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable := datatable_roles.require_datatable(p_workspace, p_name);
    governing datatable_roles.datatable;
BEGIN
    IF entry.governing_id IS NOT NULL THEN
        SELECT g.* INTO governing FROM datatable_roles.datatable AS g WHERE g.id = entry.governing_id;
        RAISE EXCEPTION 'data table %/% is a reference to %/%', p_workspace, p_name,
            governing.workspace, governing.name
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Edit the roles of the governing data table instead.';
    END IF;
    RETURN entry;
END;
$$;

-- Tries p_password as p_admin_login on p_dbname (28P01 when it fails), then
-- sets the login's password again, to the same password, through a
-- verifier the package computes (4096 iterations, PostgreSQL's default: an
-- operator chose this password), and returns that verifier.
CREATE OR REPLACE FUNCTION datatable_roles.adopt_admin_password(
    p_dbname text, p_admin_login text, p_password text
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    failure text := datatable_roles.login_fails(p_dbname, p_admin_login, p_password);
    verifier text;
BEGIN
    IF failure IS NOT NULL THEN
        RAISE EXCEPTION 'admin login % could not log in to database % with the password given',
            quote_literal(p_admin_login), quote_literal(p_dbname)
            USING ERRCODE = 'invalid_password', DETAIL = failure,
                  HINT = 'Give the admin login''s current password (pg_hba.conf must let it connect from settings.link_host).';
    END IF;
    verifier := datatable_roles.scram_verifier(p_password, 4096);
    EXECUTE format('ALTER ROLE %I PASSWORD %L', p_admin_login, verifier);
    RETURN verifier;
END;
$$;

-- The admin login a data table is registered with (register_datatable):
-- p_dbname must exist and be owned by it; it must not be, or reach, the
-- package owner, hold cluster-wide powers, or own the metadata database; the
-- package owner must be a member of it. Then the link login is granted it.
CREATE OR REPLACE FUNCTION datatable_roles.take_admin_login(p_dbname text, p_admin_login text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    db_owner oid;
    problem text;
BEGIN
    SELECT pd.datdba INTO db_owner FROM pg_database AS pd WHERE pd.datname = p_dbname;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'database % does not exist', quote_literal(left(p_dbname, 80))
            USING ERRCODE = 'no_data_found';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = p_admin_login) THEN
        RAISE EXCEPTION 'admin login % does not exist', quote_literal(left(p_admin_login, 80))
            USING ERRCODE = 'no_data_found';
    END IF;
    IF db_owner <> (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = p_admin_login) THEN
        RAISE EXCEPTION 'database % is not owned by admin login %',
            quote_literal(p_dbname), quote_literal(p_admin_login)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The admin login is handed to jobs (R2): it must not be, or reach, the
    -- package owner, nor hold cluster-wide powers, nor own the metadata
    -- database. The refusal names what is wrong.
    IF p_dbname = current_database() THEN
        RAISE EXCEPTION 'database % is the metadata database: it cannot be a data table',
            quote_literal(p_dbname)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Give the data table a database of its own.';
    END IF;
    SELECT array_to_string(ARRAY(
        SELECT a FROM unnest(array[
            CASE WHEN pr.rolsuper THEN 'SUPERUSER' END,
            CASE WHEN pr.rolcreaterole THEN 'CREATEROLE' END,
            CASE WHEN pr.rolcreatedb THEN 'CREATEDB' END,
            CASE WHEN pr.rolreplication THEN 'REPLICATION' END,
            CASE WHEN pr.rolbypassrls THEN 'BYPASSRLS' END,
            CASE WHEN pg_has_role(pr.oid, current_user, 'MEMBER')
                THEN format('member of the package owner %s', current_user) END
        ]) AS a WHERE a IS NOT NULL), ', ')
    INTO problem
    FROM pg_roles AS pr WHERE pr.rolname = p_admin_login;
    IF problem <> '' THEN
        RAISE EXCEPTION 'login % may not be the admin login of a data table: it has %',
            quote_literal(p_admin_login), problem
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Use a plain login (LOGIN and a password, nothing else) that owns only the data table''s database.';
    END IF;
    IF NOT pg_has_role(current_user, p_admin_login, 'USAGE') THEN
        RAISE EXCEPTION 'the package owner % is not a member of admin login %',
            current_user, quote_literal(p_admin_login)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('As a superuser: GRANT %I TO %I%s;', p_admin_login, current_user,
                      CASE WHEN datatable_roles.pg16_or_later() THEN ' WITH ADMIN OPTION' ELSE '' END);
    END IF;
    -- The link login moves objects to the admin login (REASSIGN OWNED needs
    -- the privileges of the target too). Granting it takes ADMIN OPTION from 16 on.
    IF NOT datatable_roles.link_holds(p_admin_login) THEN
        IF datatable_roles.pg16_or_later()
            AND NOT pg_has_role(current_user, p_admin_login, 'USAGE WITH ADMIN OPTION') THEN
            RAISE EXCEPTION 'the package owner % holds admin login % without ADMIN OPTION',
                current_user, quote_literal(p_admin_login)
                USING ERRCODE = 'insufficient_privilege',
                      HINT = format('PostgreSQL 16 and later: as a superuser, GRANT %I TO %I WITH ADMIN OPTION;',
                          p_admin_login, current_user);
        END IF;
        EXECUTE format('GRANT %I TO %I', p_admin_login, datatable_roles.link_login());
    END IF;
END;
$$;
