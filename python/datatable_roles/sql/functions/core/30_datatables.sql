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

-- Registers a data table: dbname must be a database owned by admin_login, and
-- the package owner must be a member of admin_login. The admin password is
-- tried (a login attempt: a wrong one is refused now, not at the first job),
-- then set again, to the same password, through a verifier the package
-- computes, so that a later change by anyone else is seen (admin_verifier).
-- CONNECT is revoked from PUBLIC on the database; the default role starts as
-- admin. Returns its id.
CREATE OR REPLACE FUNCTION public.register_datatable(
    workspace text, name text, dbname text, admin_login text, admin_password text
)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    ws text := register_datatable.workspace;
    db_owner oid;
    new_id bigint;
    problem text;
    public_connect boolean;
BEGIN
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.check_name('datatable', register_datatable.name);
    PERFORM datatable_roles.check_dbname(register_datatable.dbname);
    PERFORM datatable_roles.require(register_datatable.admin_login, 'admin_login');
    PERFORM datatable_roles.require(register_datatable.admin_password, 'admin_password');
    IF register_datatable.admin_password = '' THEN
        RAISE EXCEPTION 'admin_password must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT FROM datatable_roles.datatable AS d
        WHERE d.workspace = ws AND d.name = register_datatable.name
    ) THEN
        RAISE EXCEPTION 'data table % already exists in workspace %',
            quote_literal(register_datatable.name), quote_literal(ws)
            USING ERRCODE = 'duplicate_object';
    END IF;
    SELECT pd.datdba INTO db_owner FROM pg_database AS pd WHERE pd.datname = register_datatable.dbname;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'database % does not exist', quote_literal(left(register_datatable.dbname, 80))
            USING ERRCODE = 'no_data_found';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = register_datatable.admin_login) THEN
        RAISE EXCEPTION 'admin login % does not exist', quote_literal(left(register_datatable.admin_login, 80))
            USING ERRCODE = 'no_data_found';
    END IF;
    IF db_owner <> (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = register_datatable.admin_login) THEN
        RAISE EXCEPTION 'database % is not owned by admin login %',
            quote_literal(register_datatable.dbname), quote_literal(register_datatable.admin_login)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The admin login is handed to jobs (R2): it must not be, or reach, the
    -- package owner, nor hold cluster-wide powers, nor own the metadata
    -- database. The refusal names what is wrong.
    IF register_datatable.dbname = current_database() THEN
        RAISE EXCEPTION 'database % is the metadata database: it cannot be a data table',
            quote_literal(register_datatable.dbname)
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
    FROM pg_roles AS pr WHERE pr.rolname = register_datatable.admin_login;
    IF problem <> '' THEN
        RAISE EXCEPTION 'login % may not be the admin login of a data table: it has %',
            quote_literal(register_datatable.admin_login), problem
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Use a plain login (LOGIN and a password, nothing else) that owns only the data table''s database.';
    END IF;
    IF NOT pg_has_role(current_user, register_datatable.admin_login, 'USAGE') THEN
        RAISE EXCEPTION 'the package owner % is not a member of admin login %',
            current_user, quote_literal(register_datatable.admin_login)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('As a superuser: GRANT %I TO %I%s;', register_datatable.admin_login, current_user,
                      CASE WHEN datatable_roles.pg16_or_later() THEN ' WITH ADMIN OPTION' ELSE '' END);
    END IF;
    -- The link login moves objects to the admin login (REASSIGN OWNED needs
    -- the privileges of the target too). Granting it takes ADMIN OPTION from 16 on.
    IF NOT datatable_roles.link_holds(register_datatable.admin_login) THEN
        IF datatable_roles.pg16_or_later()
            AND NOT pg_has_role(current_user, register_datatable.admin_login, 'USAGE WITH ADMIN OPTION') THEN
            RAISE EXCEPTION 'the package owner % holds admin login % without ADMIN OPTION',
                current_user, quote_literal(register_datatable.admin_login)
                USING ERRCODE = 'insufficient_privilege',
                      HINT = format('PostgreSQL 16 and later: as a superuser, GRANT %I TO %I WITH ADMIN OPTION;',
                          register_datatable.admin_login, current_user);
        END IF;
        EXECUTE format('GRANT %I TO %I', register_datatable.admin_login, datatable_roles.link_login());
    END IF;
    INSERT INTO datatable_roles.datatable (
        workspace, name, dbname, admin_login, admin_password, admin_verifier, default_role
    )
    VALUES (ws, register_datatable.name, register_datatable.dbname, register_datatable.admin_login,
        register_datatable.admin_password, datatable_roles.adopt_admin_password(
            register_datatable.dbname, register_datatable.admin_login, register_datatable.admin_password),
        'admin')
    RETURNING id INTO new_id;
    -- Other data tables of the same admin login take the password just
    -- proven and the verifier just set (theirs no longer match).
    UPDATE datatable_roles.datatable AS d
    SET admin_password = n.admin_password, admin_verifier = n.admin_verifier
    FROM datatable_roles.datatable AS n
    WHERE n.id = new_id AND d.admin_login = n.admin_login AND d.id <> n.id;
    -- Only the logins the package hands out, and the roles the operator
    -- grants CONNECT to, may connect to a data table's database.
    PERFORM datatable_roles.lock_database_access(register_datatable.dbname);
    SELECT has_database_privilege('public', pd.oid, 'CONNECT') INTO public_connect
    FROM pg_database AS pd WHERE pd.datname = register_datatable.dbname;
    IF public_connect THEN
        EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM PUBLIC', register_datatable.dbname);
        RAISE NOTICE 'REVOKE CONNECT ON DATABASE % FROM PUBLIC: roles that connected to it through PUBLIC can no longer connect',
            quote_ident(register_datatable.dbname)
            USING HINT = format('Grant CONNECT on %s to the roles that need it (its admin login owns it and keeps it).',
                quote_ident(register_datatable.dbname));
    END IF;
    RETURN new_id;
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

-- The admin login's password changed (by the operator, or by a job that was
-- handed the admin login): give the package the current one. Checked like
-- register_datatable's; every data table of that admin login takes it.
CREATE OR REPLACE FUNCTION public.set_datatable_admin_password(
    workspace text, name text, admin_password text
)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable := datatable_roles.require_governing_datatable(
        set_datatable_admin_password.workspace, set_datatable_admin_password.name);
    verifier text;
BEGIN
    PERFORM datatable_roles.require(set_datatable_admin_password.admin_password, 'admin_password');
    verifier := datatable_roles.adopt_admin_password(entry.dbname, entry.admin_login,
        set_datatable_admin_password.admin_password);
    UPDATE datatable_roles.datatable AS d
    SET admin_password = set_datatable_admin_password.admin_password, admin_verifier = verifier
    WHERE d.admin_login = entry.admin_login;
END;
$$;

-- workspace/name becomes a reference to governing_workspace/governing_name
-- (a fork). A reference to a reference points at the governing entry itself.
CREATE OR REPLACE FUNCTION public.reference_datatable(
    workspace text, name text, governing_workspace text, governing_name text
)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    target datatable_roles.datatable :=
        datatable_roles.require_datatable(governing_workspace, governing_name);
    new_id bigint;
BEGIN
    PERFORM datatable_roles.require_workspace(reference_datatable.workspace);
    PERFORM datatable_roles.check_name('datatable', reference_datatable.name);
    IF EXISTS (
        SELECT FROM datatable_roles.datatable AS d
        WHERE d.workspace = reference_datatable.workspace AND d.name = reference_datatable.name
    ) THEN
        RAISE EXCEPTION 'data table % already exists in workspace %',
            quote_literal(reference_datatable.name), quote_literal(reference_datatable.workspace)
            USING ERRCODE = 'duplicate_object';
    END IF;
    INSERT INTO datatable_roles.datatable (workspace, name, governing_id)
    VALUES (reference_datatable.workspace, reference_datatable.name, coalesce(target.governing_id, target.id))
    RETURNING id INTO new_id;
    RETURN new_id;
END;
$$;

-- Puts role in the data table's role map with exactly these tenants (sorted,
-- without duplicates), or sets the tenants of the reserved key admin. Every
-- key is checked; a u/ key must name a member of the workspace.
CREATE OR REPLACE FUNCTION public.set_datatable_role_tenants(
    workspace text, datatable text, role text, tenants text[]
)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable :=
        datatable_roles.require_governing_datatable(workspace, datatable);
    target datatable_roles.catalog_role;
    tenant_key text;
    clean text [];
BEGIN
    PERFORM datatable_roles.require(set_datatable_role_tenants.role, 'role');
    PERFORM datatable_roles.require(set_datatable_role_tenants.tenants, 'tenants');
    FOREACH tenant_key IN ARRAY set_datatable_role_tenants.tenants LOOP
        PERFORM datatable_roles.check_tenant_key(tenant_key);
        IF tenant_key LIKE 'u/%' THEN
            PERFORM datatable_roles.bind_user_key(entry.workspace, substr(tenant_key, 3));
        END IF;
    END LOOP;
    clean := ARRAY(SELECT DISTINCT t FROM unnest(set_datatable_role_tenants.tenants) AS t ORDER BY t);
    IF set_datatable_role_tenants.role = 'admin' THEN
        UPDATE datatable_roles.datatable AS d SET admin_tenants = clean WHERE d.id = entry.id;
        RETURN;
    END IF;
    target := datatable_roles.require_role(set_datatable_role_tenants.role);
    INSERT INTO datatable_roles.datatable_role AS m (datatable_id, role_id, tenants)
    VALUES (entry.id, target.id, clean)
    ON CONFLICT ON CONSTRAINT datatable_role_pkey DO UPDATE SET tenants = excluded.tenants;
END;
$$;

-- Takes role out of the map; if it was the default, the data table is left
-- with no default (R11), and the logins holding it on the data table's
-- database are retired (unless another data table there still maps it).
-- admin is always in the map and cannot be removed.
CREATE OR REPLACE FUNCTION public.remove_datatable_role(workspace text, datatable text, role text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable :=
        datatable_roles.require_governing_datatable(workspace, datatable);
    target datatable_roles.catalog_role;
BEGIN
    PERFORM datatable_roles.require(remove_datatable_role.role, 'role');
    IF remove_datatable_role.role = 'admin' THEN
        RAISE EXCEPTION 'admin is always in the role map of a data table'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Set its tenants to ''{}'' with set_datatable_role_tenants instead.';
    END IF;
    target := datatable_roles.require_role(remove_datatable_role.role);
    -- The role's row first, as retirement and every resolve take it (then the
    -- map rows, then each login's lock): a resolve making a login of it
    -- finishes first and its login is retired below, or sees the removal;
    -- and two removals of the role from data tables on one database run one
    -- after the other, so the second sees the first's and retires.
    PERFORM FROM datatable_roles.catalog_role AS r WHERE r.id = target.id FOR UPDATE;
    DELETE FROM datatable_roles.datatable_role AS m
    WHERE m.datatable_id = entry.id AND m.role_id = target.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role % is not in the role map of data table %/%',
            quote_literal(target.name), entry.workspace, entry.name
            USING ERRCODE = 'no_data_found';
    END IF;
    UPDATE datatable_roles.datatable AS d SET default_role = datatable_roles.no_default()
    WHERE d.id = entry.id AND d.default_role = target.name;
    IF NOT EXISTS (
        SELECT FROM datatable_roles.datatable_role AS m
        JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id
        WHERE m.role_id = target.id AND d.dbname = entry.dbname
    ) THEN
        PERFORM datatable_roles.retire_logins_holding(target.id, entry.dbname);
    END IF;
END;
$$;

-- role: a role of the map, 'admin' (allowed, with a warning: admin bypasses
-- row-level security), or NULL for no default.
CREATE OR REPLACE FUNCTION public.set_datatable_default_role(
    workspace text, datatable text, role text
)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable :=
        datatable_roles.require_governing_datatable(workspace, datatable);
    target datatable_roles.catalog_role;
    new_default text;
BEGIN
    IF set_datatable_default_role.role IS NULL THEN
        new_default := datatable_roles.no_default();
    ELSIF set_datatable_default_role.role = 'admin' THEN
        new_default := 'admin';
        RAISE WARNING 'the default role of data table %/% is now admin', entry.workspace, entry.name
            USING DETAIL = 'admin owns the tables and bypasses row-level security; connections naming no role see every row.';
    ELSE
        target := datatable_roles.require_role(set_datatable_default_role.role);
        IF NOT EXISTS (
            SELECT FROM datatable_roles.datatable_role AS m
            WHERE m.datatable_id = entry.id AND m.role_id = target.id
        ) THEN
            RAISE EXCEPTION 'role % is not in the role map of data table %/%',
                quote_literal(target.name), entry.workspace, entry.name
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Add it with set_datatable_role_tenants first.';
        END IF;
        new_default := target.name;
    END IF;
    UPDATE datatable_roles.datatable AS d SET default_role = new_default WHERE d.id = entry.id;
END;
$$;
