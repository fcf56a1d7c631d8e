-- The package owner's calls: the role catalog, the data tables and their
-- role maps, the sweep and the drop of a catalog role, the previews, the
-- grants of the other callers' calls, and the status report. Nobody else is
-- granted them. The public ones but validate_role_name and the sweep
-- procedure are SECURITY DEFINER, so a superuser who runs one acts as the
-- owner. The operator functions in schema datatable_roles are called by
-- their qualified names.

-- docs/sql-api.md: non-empty, at most 63 bytes, ASCII letters, digits, '_'
-- and '-', and not (case-insensitively) admin, postgres, public or a name
-- under pg_, wm_set_, windmill_ or custom_instance_; nor a word that means
-- something else where SQL expects a role (GRANT ... TO current_user,
-- CREATE POLICY ... TO none). Raises 22023 (22004 on NULL).
CREATE OR REPLACE FUNCTION public.validate_role_name(name text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    folded text := lower(validate_role_name.name);
BEGIN
    PERFORM datatable_roles.require(validate_role_name.name, 'name');
    IF validate_role_name.name = '' THEN
        RAISE EXCEPTION 'a role name must not be empty'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF octet_length(validate_role_name.name) > 63 THEN
        RAISE EXCEPTION 'role name % is longer than 63 bytes', quote_literal(left(validate_role_name.name, 80))
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF validate_role_name.name !~ '^[A-Za-z0-9_-]+$' THEN
        RAISE EXCEPTION 'role name % has a character other than ASCII letters, digits, _ and -',
            quote_literal(validate_role_name.name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF folded IN ('admin', 'postgres', 'public', 'current_user', 'current_role', 'session_user',
            'user', 'all', 'none')
        OR starts_with(folded, 'pg_')
        OR starts_with(folded, 'wm_set_')
        OR starts_with(folded, 'windmill_')
        OR starts_with(folded, 'custom_instance_') THEN
        RAISE EXCEPTION 'role name % is reserved', quote_literal(validate_role_name.name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'admin, postgres, public, current_user, current_role, session_user, user, all, none and the prefixes pg_, wm_set_, windmill_ and custom_instance_ are reserved.';
    END IF;
END;
$$;

-- Returns the new role's catalog id.
CREATE OR REPLACE FUNCTION public.create_datatable_role(name text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    role_name text := create_datatable_role.name;
    new_id bigint;
BEGIN
    PERFORM public.validate_role_name(role_name);
    IF EXISTS (SELECT FROM datatable_roles.catalog_role AS r WHERE lower(r.name) = lower(role_name)) THEN
        RAISE EXCEPTION 'data table role % already exists', quote_literal(role_name)
            USING ERRCODE = 'duplicate_object';
    END IF;
    IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = role_name) THEN
        RAISE EXCEPTION 'a PostgreSQL role named % already exists in this cluster', quote_literal(role_name)
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Role names are cluster-wide; choose another name.';
    END IF;
    INSERT INTO datatable_roles.catalog_role (name) VALUES (role_name) RETURNING id INTO new_id;
    -- The link login is made a member so that it may later move what the role
    -- owns in each data table database (REASSIGN OWNED needs the privileges
    -- of both roles). The owner, its creator, holds ADMIN on it from 16 on.
    BEGIN
        EXECUTE format(
            'CREATE ROLE %I WITH NOLOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION ROLE %I',
            role_name, datatable_roles.link_login()
        );
    EXCEPTION WHEN reserved_name THEN
        RAISE EXCEPTION 'role name % is reserved by PostgreSQL', quote_literal(role_name)
            USING ERRCODE = 'invalid_parameter_value';
    END;
    RETURN new_id;
END;
$$;

-- Renames the role; its catalog id, memberships and logins stay (login
-- names hash ids, not names).
-- Policies that name the role as text do not follow: see docs/policies.md.
CREATE OR REPLACE FUNCTION public.rename_datatable_role(name text, new_name text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    old_role datatable_roles.catalog_role := datatable_roles.require_role(rename_datatable_role.name);
BEGIN
    PERFORM public.validate_role_name(new_name);
    IF new_name = old_role.name THEN
        RETURN;
    END IF;
    IF EXISTS (
        SELECT FROM datatable_roles.catalog_role AS r
        WHERE lower(r.name) = lower(new_name) AND r.id <> old_role.id
    ) OR EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = new_name) THEN
        RAISE EXCEPTION 'a role named % already exists', quote_literal(new_name)
            USING ERRCODE = 'duplicate_object';
    END IF;
    UPDATE datatable_roles.catalog_role AS r SET name = new_name WHERE r.id = old_role.id;
    UPDATE datatable_roles.datatable AS d SET default_role = new_name
    WHERE d.default_role = old_role.name;
    BEGIN
        EXECUTE format('ALTER ROLE %I RENAME TO %I', old_role.name, new_name);
    EXCEPTION WHEN reserved_name THEN
        RAISE EXCEPTION 'role name % is reserved by PostgreSQL', quote_literal(new_name)
            USING ERRCODE = 'invalid_parameter_value';
    END;
    PERFORM datatable_roles.rename_role_on_servers(old_role.id, old_role.name, new_name);
END;
$$;

-- Disabling retires every login holding the role (retire_logins_holding);
-- enabling lets the next resolve make or take them back.
CREATE OR REPLACE FUNCTION public.set_datatable_role_enabled(name text, enabled boolean)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    target datatable_roles.catalog_role := datatable_roles.require_role(set_datatable_role_enabled.name);
BEGIN
    PERFORM datatable_roles.require(set_datatable_role_enabled.enabled, 'enabled');
    IF set_datatable_role_enabled.enabled = target.enabled THEN
        RETURN;
    END IF;
    UPDATE datatable_roles.catalog_role AS r SET enabled = set_datatable_role_enabled.enabled
    WHERE r.id = target.id;
    IF NOT set_datatable_role_enabled.enabled THEN
        PERFORM datatable_roles.retire_logins_holding(target.id, NULL);
    END IF;
END;
$$;

-- Retires every login holding the role, on every database.
CREATE OR REPLACE FUNCTION public.retire_role_set_logins_of(role text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    RETURN datatable_roles.retire_logins_holding(
        (datatable_roles.require_role(retire_role_set_logins_of.role)).id, NULL);
END;
$$;

-- Drops a catalog role: gives what it owns in every data table database to
-- that database's admin login, inert (dropping its privileges there; in any
-- other database, what it owns and holds there is dropped), retires the
-- logins holding it, removes it from every role map (a default naming it
-- becomes no default, R11), and drops it.
CREATE OR REPLACE FUNCTION public.drop_datatable_role(name text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    target datatable_roles.catalog_role := datatable_roles.require_role(drop_datatable_role.name);
    held text;
    failed text [];
BEGIN
    -- The role's row first, as retirement and every resolve take it: no
    -- resolve makes a login of it from here on, and none holds a lock this
    -- drop takes later while waiting for the row.
    PERFORM FROM datatable_roles.catalog_role AS r WHERE r.id = target.id FOR UPDATE;
    -- Then the locks of the logins holding it (retired below), before the
    -- access-list locks of the moves: a sweep or rotation of one of them
    -- (its lock, then an access-list lock) cannot wait for this drop while
    -- it waits for them.
    FOR held IN
        SELECT s.login FROM datatable_roles.datatable_role_set AS s
        WHERE s.role_ids @> array[target.id] ORDER BY s.login
    LOOP
        PERFORM datatable_roles.lock_set_login(held);
    END LOOP;
    -- In sessions of their own: DROP OWNED there also revokes the role's
    -- grants on databases, rows this transaction must not hold meanwhile.
    failed := datatable_roles.move_objects_of(target.name);
    IF failed <> '{}' THEN
        RAISE EXCEPTION 'role % could not be dropped: %', quote_literal(target.name),
            array_to_string(failed, '; ')
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'What could be moved now belongs to the data table''s admin login; fix the rest and drop it again.';
    END IF;
    PERFORM datatable_roles.fault_point('drop_role:after_move');
    PERFORM public.retire_role_set_logins_of(target.name);
    -- Other servers: after the retirements there (queued in order).
    PERFORM datatable_roles.drop_role_on_servers(target.id, target.name);
    UPDATE datatable_roles.datatable AS d SET default_role = datatable_roles.no_default()
    WHERE d.default_role = target.name;
    DELETE FROM datatable_roles.datatable_role AS m WHERE m.role_id = target.id;
    DELETE FROM datatable_roles.catalog_role AS r WHERE r.id = target.id;
    PERFORM datatable_roles.end_sessions_of(target.name);
    PERFORM datatable_roles.revoke_database_grants(target.name);
    BEGIN
        EXECUTE format('DROP ROLE %I', target.name);
    EXCEPTION WHEN dependent_objects_still_exist THEN
        RAISE EXCEPTION 'role % still owns objects or holds privileges: %',
            quote_literal(target.name), SQLERRM
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Revoke its privileges and move what it owns in each data table database, then drop it again.';
    END;
END;
$$;

-- Registers a data table: dbname must be a database owned by admin_login, and
-- the package owner must be a member of admin_login (take_admin_login). The admin password is
-- tried (a login attempt: a wrong one is refused now, not at the first job),
-- then set again, to the same password, through a verifier the package
-- computes, so that a later change by anyone else is seen (admin_verifier).
-- CONNECT is revoked from PUBLIC on the database; the default role starts as
-- admin. Returns its id. On another server (register_datatable_server), the
-- checks run there as the admin login (take_remote_admin_login), whose
-- password is tried but not set again (docs/servers.md).
CREATE OR REPLACE FUNCTION public.register_datatable(
    workspace text, name text, dbname text, admin_login text, admin_password text,
    server text DEFAULT 'local'
)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    ws text := register_datatable.workspace;
    on_server datatable_roles.server := datatable_roles.require_server(register_datatable.server);
    new_id bigint;
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
    IF on_server.name <> 'local' THEN
        PERFORM datatable_roles.check_remote_login_name(register_datatable.admin_login);
        PERFORM datatable_roles.take_remote_admin_login(on_server.name, register_datatable.dbname,
            register_datatable.admin_login, register_datatable.admin_password);
        INSERT INTO datatable_roles.datatable (
            workspace, name, dbname, admin_login, admin_password, default_role, server
        )
        VALUES (ws, register_datatable.name, register_datatable.dbname, register_datatable.admin_login,
            register_datatable.admin_password, 'admin', on_server.name)
        RETURNING id INTO new_id;
        UPDATE datatable_roles.datatable AS d SET admin_password = register_datatable.admin_password
        WHERE d.server = on_server.name AND d.admin_login = register_datatable.admin_login AND d.id <> new_id;
        RETURN new_id;
    END IF;
    PERFORM datatable_roles.take_admin_login(register_datatable.dbname, register_datatable.admin_login);
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
    WHERE n.id = new_id AND d.admin_login = n.admin_login AND d.id <> n.id AND d.server = 'local';
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

-- Registers another PostgreSQL server that data tables may be on
-- (docs/servers.md): its host, port and sslmode, and a manager login there,
-- NOSUPERUSER with CREATEROLE and pg_signal_backend (a managed service's
-- admin role), which makes the catalog roles and logins there. The manager
-- password is tried with a real login (28P01; 08001 when unreachable) and
-- kept as the link login's is (no role but the owner reads it). 42501 for a
-- superuser manager (the package never acts as one) or one lacking
-- CREATEROLE or pg_signal_backend. Returns nothing; 42710 when the name is
-- taken (local is this cluster).
CREATE OR REPLACE FUNCTION public.register_datatable_server(
    name text, host text, port integer, manager_login text, manager_password text,
    sslmode text DEFAULT 'require', maintenance_db text DEFAULT 'postgres'
)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    failure text;
    problem text;
BEGIN
    PERFORM datatable_roles.check_name('server', register_datatable_server.name);
    PERFORM datatable_roles.require(register_datatable_server.host, 'host');
    PERFORM datatable_roles.require(register_datatable_server.port, 'port');
    PERFORM datatable_roles.require(register_datatable_server.manager_login, 'manager_login');
    PERFORM datatable_roles.require(register_datatable_server.manager_password, 'manager_password');
    PERFORM datatable_roles.check_dbname(register_datatable_server.maintenance_db);
    PERFORM datatable_roles.check_remote_login_name(register_datatable_server.manager_login);
    IF register_datatable_server.host = '' OR register_datatable_server.manager_password = ''
        OR register_datatable_server.port NOT BETWEEN 1 AND 65535
        OR coalesce(register_datatable_server.sslmode, '') NOT IN
            ('disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full') THEN
        RAISE EXCEPTION 'invalid connection parameters for server %', register_datatable_server.name
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A host, a port from 1 to 65535, an sslmode libpq knows, and a manager password.';
    END IF;
    IF EXISTS (SELECT FROM datatable_roles.server AS sv WHERE sv.name = register_datatable_server.name) THEN
        RAISE EXCEPTION 'server % is already registered', register_datatable_server.name
            USING ERRCODE = 'duplicate_object';
    END IF;
    INSERT INTO datatable_roles.server (name, host, port, sslmode, maintenance_db, manager_login, manager_password)
    VALUES (register_datatable_server.name, register_datatable_server.host, register_datatable_server.port,
        register_datatable_server.sslmode, register_datatable_server.maintenance_db,
        register_datatable_server.manager_login, register_datatable_server.manager_password);
    failure := datatable_roles.login_fails_on(register_datatable_server.name,
        register_datatable_server.maintenance_db, register_datatable_server.manager_login,
        register_datatable_server.manager_password);
    IF failure IS NOT NULL THEN
        RAISE EXCEPTION 'manager login % could not log in to server %', quote_literal(register_datatable_server.manager_login),
            register_datatable_server.name
            USING ERRCODE = CASE WHEN datatable_roles.wrong_password(failure) THEN 'invalid_password'
                      ELSE 'sqlclient_unable_to_establish_sqlconnection' END,
                  DETAIL = failure, HINT = 'Check the host, port, sslmode and the manager''s password.';
    END IF;
    problem := datatable_roles.value_as_manager(register_datatable_server.name, $q$
        SELECT concat_ws(', ',
            CASE WHEN pr.rolsuper THEN 'SUPERUSER' END,
            CASE WHEN NOT pr.rolcreaterole THEN 'no CREATEROLE' END,
            CASE WHEN NOT pg_has_role(current_user, 'pg_signal_backend', 'USAGE')
                THEN 'no pg_signal_backend' END)
        FROM pg_roles AS pr WHERE pr.rolname = current_user$q$);
    IF problem <> '' THEN
        RAISE EXCEPTION 'login % may not manage server %: it has %', quote_literal(register_datatable_server.manager_login),
            register_datatable_server.name, problem
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Use a NOSUPERUSER login with CREATEROLE and pg_signal_backend (a managed service''s admin role).';
    END IF;
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
        ELSIF tenant_key LIKE 'f/%' THEN
            PERFORM datatable_roles.note_folder_key(entry.workspace, substr(tenant_key, 3));
        END IF;
    END LOOP;
    clean := ARRAY(SELECT DISTINCT t FROM unnest(set_datatable_role_tenants.tenants) AS t ORDER BY t);
    IF set_datatable_role_tenants.role = 'admin' THEN
        UPDATE datatable_roles.datatable AS d SET admin_tenants = clean WHERE d.id = entry.id;
        RETURN;
    END IF;
    target := datatable_roles.require_role(set_datatable_role_tenants.role);
    -- On another server, the role is made there when a data table first maps it.
    PERFORM datatable_roles.ensure_role_on_server(entry.server, target.id);
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
        WHERE m.role_id = target.id AND d.dbname = entry.dbname AND d.server = entry.server
    ) THEN
        PERFORM datatable_roles.retire_logins_holding(target.id, entry.dbname, entry.server);
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

-- What a change to a role would do, before it is made: the set logins it
-- would retire, the sessions it would end, the data tables it touches (and,
-- for a drop, the databases where the role owns or holds something).
--
-- change is 'remove' (remove_datatable_role(workspace, datatable, role)),
-- 'disable' (set_datatable_role_enabled(role, false)), 'retire'
-- (retire_role_set_logins_of(role)) or 'drop' (drop_datatable_role(role)).
-- The real call runs, with its checks and errors, in a subtransaction that is
-- always rolled back, while previewing() (20_catalog.sql) keeps
-- end_sessions_of from ending anything and has retirement note each login.
-- A drop's moves commit in each data table database, so they cannot be run:
-- its preview runs the steps drop_datatable_role takes in the caller's
-- transaction that retire and end sessions (70_lifecycle.sql), and reads
-- what the others would change. Nothing is changed; the locks the change
-- takes are held only while the preview runs.
CREATE OR REPLACE FUNCTION public.preview_datatable_role_change(
    change text, role text, workspace text DEFAULT null, datatable text DEFAULT null
)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    kind text := preview_datatable_role_change.change;
    role_name text := preview_datatable_role_change.role;
    target datatable_roles.catalog_role;
    entry datatable_roles.datatable;
    notes jsonb;
BEGIN
    PERFORM datatable_roles.require(kind, 'change');
    PERFORM datatable_roles.require(role_name, 'role');
    IF kind NOT IN ('remove', 'disable', 'retire', 'drop') THEN
        RAISE EXCEPTION 'invalid change %', quote_literal(left(kind, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use remove, disable, retire or drop.';
    END IF;
    IF kind = 'remove' THEN
        PERFORM datatable_roles.require(preview_datatable_role_change.workspace, 'workspace');
        PERFORM datatable_roles.require(preview_datatable_role_change.datatable, 'datatable');
    ELSIF preview_datatable_role_change.workspace IS NOT NULL
        OR preview_datatable_role_change.datatable IS NOT NULL THEN
        RAISE EXCEPTION 'a % applies to the catalog role: workspace and datatable must be NULL', kind
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The switch names this transaction (previewing()).
    PERFORM pg_current_xact_id();
    BEGIN
        PERFORM set_config('datatable_roles.preview', pg_current_xact_id()::text, true);
        PERFORM set_config('datatable_roles.preview_notes', '[]', true);
        CASE kind
            WHEN 'remove' THEN
                PERFORM public.remove_datatable_role(preview_datatable_role_change.workspace,
                    preview_datatable_role_change.datatable, role_name);
            WHEN 'disable' THEN
                PERFORM public.set_datatable_role_enabled(role_name, false);
            WHEN 'retire' THEN
                PERFORM public.retire_role_set_logins_of(role_name);
            ELSE
                PERFORM public.retire_role_set_logins_of(role_name);
                PERFORM datatable_roles.end_sessions_of(role_name);
        END CASE;
        notes := current_setting('datatable_roles.preview_notes')::jsonb;
        RAISE EXCEPTION 'preview rolled back' USING ERRCODE = 'DTRPV';
    EXCEPTION WHEN SQLSTATE 'DTRPV' THEN
        NULL;
    END;

    target := datatable_roles.require_role(role_name);
    IF kind = 'remove' THEN
        entry := datatable_roles.require_governing_datatable(
            preview_datatable_role_change.workspace, preview_datatable_role_change.datatable);
    END IF;
    RETURN datatable_roles.preview_report(kind, target, entry, notes);
END;
$$;

-- Drops this instance's logins unused for unused_for (default: settings
-- unused_after, 30 days), going by this instance's rows only. Per login:
-- take away its password and LOGIN (commit), then, holding the login's lock,
-- move what it owns in each data table database to the admin login, inert,
-- and drop it and its row (commit). A login it cannot finish keeps its row
-- with an empty password, so the next sweep finds it again. Then it rotates
-- every password older than rotate_every and heals every login someone else
-- changed (each in its own commit), rotates the link login's, and ends
-- stray sessions of retired logins (end_stray_sessions). Call it as the
-- package owner, outside a transaction block:
--     CALL sweep_unused_role_set_logins(NULL);
-- report: {"examined", "dropped", "skipped", "unfinished": [{"login", "reason"}],
-- "rotated", "healed"}.
--
-- A procedure that commits cannot pin search_path with a SET clause, so its
-- own body only calls schema-qualified functions with arguments of their
-- exact types and uses no operator: nothing a caller's search_path could
-- shadow runs here. Every function it calls pins its own.
CREATE OR REPLACE PROCEDURE public.sweep_unused_role_set_logins(
    INOUT report jsonb DEFAULT null, unused_for interval DEFAULT null
)
LANGUAGE plpgsql
AS $$
DECLARE
    state pg_catalog.jsonb := datatable_roles.sweep_start(unused_for);
    victims pg_catalog.text [] := datatable_roles.sweep_victims(state);
BEGIN
    WHILE datatable_roles.sweep_pending(state) LOOP
        state := datatable_roles.sweep_step(state, victims);
        COMMIT;
        IF datatable_roles.sweep_phase_begins(state) THEN
            victims := datatable_roles.sweep_victims(state);
        END IF;
    END LOOP;
    report := datatable_roles.sweep_report(state);
END;
$$;

-- The logins a sweep would examine now.
CREATE OR REPLACE FUNCTION datatable_roles.sweep_candidates(p_unused_for interval DEFAULT null)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT datatable_roles.sweep_candidates_at(datatable_roles.sweep_cutoff(p_unused_for))
$$;

-- PgBouncer's auth_file for the set logins, where auth_query cannot read
-- verifiers (managed PostgreSQL, docs/operating.md): a line per live set
-- login (of p_dbname, or of every database), '"<login>" "<verifier>"', the
-- SCRAM verifier the package set as its password, so that PgBouncer's
-- SCRAM pass-through logs in with the job's proof. Logins are named
-- wm_set_<hex> and verifiers are base64 and '$:' only: nothing to quote.
CREATE OR REPLACE FUNCTION datatable_roles.pgbouncer_userlist(p_dbname text DEFAULT null)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT format('"%s" "%s"', s.login, s.verifier)
    FROM datatable_roles.datatable_role_set AS s
    WHERE s.password <> '' AND s.verifier IS NOT NULL
        AND (p_dbname IS NULL OR s.dbname = p_dbname)
    ORDER BY s.login
$$;

-- The package owner grants the run-time calls to the platform's worker role:
--     SELECT datatable_roles.grant_worker('<worker role>');
CREATE OR REPLACE FUNCTION datatable_roles.grant_worker(p_worker text)
RETURNS void
LANGUAGE sql
AS $$
    SELECT datatable_roles.grant_calls(p_worker, 'worker')
$$;

-- ... and the directory calls to the platform's directory writer (the role
-- its code changes users, groups and folders as, in mirror mode):
--     SELECT datatable_roles.grant_directory_writer('<writer role>');
CREATE OR REPLACE FUNCTION datatable_roles.grant_directory_writer(p_writer text)
RETURNS void
LANGUAGE sql
AS $$
    SELECT datatable_roles.grant_calls(p_writer, 'directory')
$$;

-- The package owner gives a platform role the grants editor: EXECUTE on
-- datatable_acl, plan_datatable_acl and apply_datatable_acl.
--     SELECT datatable_roles.grant_acl_editor('<role>');
CREATE OR REPLACE FUNCTION datatable_roles.grant_acl_editor(p_role text)
RETURNS void
LANGUAGE sql
AS $$
    SELECT datatable_roles.grant_calls(p_role, 'acl')
$$;

-- Everything `datatable-roles status` shows, as jsonb, read as the owner. No
-- password is read, only whether one is set. Shape (docs/sql-api.md):
-- instance_id, profile, unused_after, touch_every, clock_offset, now; datatables (a
-- reference: workspace, name, reference_to; otherwise workspace, name,
-- dbname, admin_login, default_role (NULL for none), default_is_admin, roles:
-- admin first, then by name); catalog_roles; set_logins, most recent first.
CREATE OR REPLACE FUNCTION datatable_roles.status_report()
RETURNS jsonb
-- VOLATILE: it tries each admin login's stored password with a real login.
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, datatable_roles, pg_temp
SET jit = off
AS $$
    SELECT jsonb_build_object(
        'instance_id', st.instance_id,
        'profile', CASE WHEN to_regnamespace('datatable_roles_guard') IS NOT NULL
            THEN 'self-hosted' ELSE 'managed' END,
        'unused_after', st.unused_after::text,
        'touch_every', st.touch_every::text,
        'rotate_every', st.rotate_every::text, 'directory', st.directory,
        'login_group', st.login_group,
        'link_login', datatable_roles.link_login(),
        'clock_offset', st.clock_offset::text,
        'now', c.now,
        'datatables', coalesce((
            SELECT jsonb_agg(CASE WHEN g.id IS NOT NULL THEN jsonb_build_object(
                'workspace', d.workspace, 'name', d.name,
                'reference_to', g.workspace || '/' || g.name)
            ELSE jsonb_build_object(
                'workspace', d.workspace, 'name', d.name, 'dbname', d.dbname,
                'server', d.server, 'admin_login', d.admin_login,
                'admin_password_ok', CASE WHEN d.admin_password IS NOT NULL
                    THEN datatable_roles.login_fails_on(d.server, d.dbname, d.admin_login, d.admin_password)
                        IS NULL END,
                'default_role', nullif(d.default_role, datatable_roles.no_default()),
                'default_is_admin', d.default_role = 'admin',
                'roles', jsonb_build_array(jsonb_build_object(
                    'role', 'admin', 'enabled', true, 'tenants', to_jsonb(d.admin_tenants)))
                || coalesce((
                    SELECT jsonb_agg(jsonb_build_object(
                        'role', r.name, 'enabled', r.enabled, 'tenants', to_jsonb(m.tenants))
                        ORDER BY r.name COLLATE "C")
                    FROM datatable_roles.datatable_role AS m
                    JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                    WHERE m.datatable_id = d.id), '[]'::jsonb)) END
                ORDER BY d.workspace, d.name)
            FROM datatable_roles.datatable AS d
            LEFT JOIN datatable_roles.datatable AS g ON g.id = d.governing_id), '[]'::jsonb),
        -- No password: where each server is, its manager, and what it has not applied.
        'servers', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'name', sv.name, 'host', sv.host, 'port', sv.port, 'sslmode', sv.sslmode,
                'manager_login', sv.manager_login,
                'pending', (SELECT count(*) FROM datatable_roles.server_change AS q
                    WHERE q.server = sv.name),
                'first_pending', (SELECT jsonb_build_object('what', q.what, 'since', q.queued_at,
                    'tries', q.tries, 'last_error', q.last_error)
                    FROM datatable_roles.server_change AS q WHERE q.server = sv.name
                    ORDER BY q.id LIMIT 1))
                ORDER BY sv.name)
            FROM datatable_roles.server AS sv), '[]'::jsonb),
        'catalog_roles', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'id', r.id, 'name', r.name, 'enabled', r.enabled, 'created_at', r.created_at,
                'maps', (SELECT count(*) FROM datatable_roles.datatable_role AS m
                    WHERE m.role_id = r.id),
                'can_login', coalesce((SELECT pr.rolcanlogin FROM pg_roles AS pr
                    WHERE pr.rolname = r.name), false))
                ORDER BY r.name COLLATE "C")
            FROM datatable_roles.catalog_role AS r), '[]'::jsonb),
        'set_logins', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'login', s.login,
                'roles', to_jsonb(ARRAY(
                    SELECT coalesce(r.name, '#' || i.id::text || ' (dropped)')
                    FROM unnest(s.role_ids) AS i (id)
                    LEFT JOIN datatable_roles.catalog_role AS r ON r.id = i.id ORDER BY 1)),
                'created_at', s.created_at,
                'last_used_at', s.last_used_at,
                'idle_seconds', extract(EPOCH FROM c.now - s.last_used_at),
                'active', s.password <> '',
                'login_exists', EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = s.login),
                'database', s.dbname,
                'server', s.server,
                'rotated_at', s.rotated_at,
                -- On another server not read (NULL): the sweep rotates it.
                'intact', CASE WHEN s.server = 'local' THEN s.password <> ''
                    AND EXISTS (
                        SELECT FROM datatable_roles.login_intact(s.login, s.dbname)) END,
                'stale', EXISTS (SELECT FROM datatable_roles.is_sweepable(s.last_used_at,
                    s.password, s.dbname, s.role_ids, datatable_roles.sweep_cutoff(null),
                    s.server)))
                ORDER BY s.last_used_at DESC, s.login)
            FROM datatable_roles.datatable_role_set AS s), '[]'::jsonb))
    FROM datatable_roles.settings AS st, datatable_roles.clock_now() AS c (now)
$$;

-- The owner calls (datatable_roles.entry_point), read by grant_calls,
-- the doctor and tests/test_docs_agree.py. A typo fails here.
INSERT INTO datatable_roles.entry_point (signature, caller)
SELECT datatable_roles.signature_of(f.f) AS signature, 'owner' AS caller
FROM unnest(ARRAY[
    'public.validate_role_name(text)',
    'public.create_datatable_role(text)',
    'public.rename_datatable_role(text,text)',
    'public.set_datatable_role_enabled(text,boolean)',
    'public.retire_role_set_logins_of(text)',
    'public.drop_datatable_role(text)',
    'public.register_datatable(text,text,text,text,text,text)',
    'public.register_datatable_server(text,text,integer,text,text,text,text)',
    'public.set_datatable_admin_password(text,text,text)',
    'public.reference_datatable(text,text,text,text)',
    'public.set_datatable_role_tenants(text,text,text,text[])',
    'public.remove_datatable_role(text,text,text)',
    'public.set_datatable_default_role(text,text,text)',
    'public.preview_datatable_role_change(text,text,text,text)',
    'public.sweep_unused_role_set_logins(jsonb,interval)',
    'datatable_roles.sweep_candidates(interval)',
    'datatable_roles.pgbouncer_userlist(text)',
    'datatable_roles.grant_worker(text)',
    'datatable_roles.grant_directory_writer(text)',
    'datatable_roles.grant_acl_editor(text)',
    'datatable_roles.status_report()',
    'datatable_roles.renew_link_login()'
]::regprocedure[]) AS f (f);
