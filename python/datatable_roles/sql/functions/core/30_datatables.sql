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
