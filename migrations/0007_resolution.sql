-- depends: 0006_jobs
-- Resolution (SPEC section 4): which roles a job's connection to a data table
-- holds, and the login that holds exactly those roles. decide() is the one
-- place the rules R1-R12 live; resolve and explain both call it.

CREATE TYPE datatable_roles.decision AS (
    datatable_id bigint,     -- the governing entry
    dbname text,
    admin_login text,
    is_admin boolean,        -- the result is {admin}: the admin login itself
    role_ids bigint [],      -- otherwise the catalog ids held, sorted
    role_names text [],      -- the names held, sorted ({admin} for admin)
    refused_case text,       -- set when refused: the rule that refused
    refused_message text,
    refused_hint text,
    steps jsonb              -- the trace, when asked for
);

-- Decides without side effects (STABLE: PL/pgSQL refuses writes here).
-- Unknown job or data table raise P0002; a refusal is returned, not raised.
CREATE FUNCTION datatable_roles.decide(
    p_job_id uuid, p_datatable text, p_role text, p_for_migration boolean, p_trace boolean
)
RETURNS datatable_roles.decision
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    job datatable_roles.job_perms;
    dt record;
    label text;
    found_user datatable_roles.workspace_user;
    ident_admin boolean;
    ident_keys text [];
    candidate record;
    default_id bigint;
    default_enabled boolean;
    viewer_keys text [];
    viewer_ids bigint [] := '{}'::bigint [];
    ids bigint [] := '{}'::bigint [];
    steps jsonb := '[]'::jsonb;
    result datatable_roles.decision;
BEGIN
    SELECT p.* INTO job FROM datatable_roles.job_perms AS p WHERE p.job_id = p_job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % was never recorded', p_job_id
            USING ERRCODE = 'no_data_found', HINT = 'Call record_job_start when the job starts.';
    END IF;
    SELECT g.id, g.workspace, g.name, g.dbname, g.admin_login, g.default_role, g.admin_tenants,
        d.governing_id IS NOT NULL AS is_reference
    INTO dt
    FROM datatable_roles.datatable AS d
    JOIN datatable_roles.datatable AS g ON g.id = coalesce(d.governing_id, d.id)
    WHERE d.workspace = job.workspace AND d.name = p_datatable;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'data table % does not exist in workspace %',
            quote_literal(left(p_datatable, 80)), quote_literal(job.workspace)
            USING ERRCODE = 'no_data_found';
    END IF;
    label := format('%s/%s', job.workspace, p_datatable);
    result.datatable_id := dt.id;
    result.dbname := dt.dbname;
    result.admin_login := dt.admin_login;
    result.is_admin := false;

    -- The job identity counts in the governing workspace: its own memberships
    -- as captured at start, or, for a data table another workspace governs,
    -- its current ones there, found by email (none when not a member).
    IF dt.workspace = job.workspace THEN
        ident_admin := job.is_admin;
        ident_keys := array['*', job.permissioned_as]
            || ARRAY(SELECT 'g/' || g FROM unnest(job.groups) AS g)
            || ARRAY(SELECT 'f/' || f FROM unnest(job.folders) AS f);
    ELSE
        SELECT u.* INTO found_user FROM datatable_roles.workspace_user AS u
        WHERE u.workspace = dt.workspace AND lower(u.email) = lower(job.email);
        ident_admin := coalesce(found_user.is_admin, false);
        ident_keys := CASE WHEN FOUND
            THEN datatable_roles.member_keys(dt.workspace, found_user.username) ELSE '{}' END;
    END IF;
    IF p_trace THEN
        steps := steps || jsonb_build_object(
            'step', 'identity', 'permissioned_as', job.permissioned_as,
            'governing', format('%s/%s', dt.workspace, dt.name), 'reference', dt.is_reference,
            'workspace_admin', ident_admin, 'keys', to_jsonb(ident_keys),
            'memberships', CASE WHEN dt.workspace = job.workspace THEN 'captured at job start'
                ELSE 'current, in the governing workspace' END);
    END IF;

    IF p_role IS NOT NULL THEN
        -- R1 (and R8 when a migration names a role): exactly {R}.
        IF p_role = 'admin' THEN
            IF NOT (ident_admin OR dt.admin_tenants && ident_keys) THEN
                result.refused_case := 'R1';
                result.refused_message := format(
                    'data table %s: role admin was named, and the job identity %s may not use it',
                    label, job.permissioned_as);
                result.refused_hint := 'Name a role the identity is a tenant of, or add the identity to the tenants of admin.';
            END IF;
            result.is_admin := result.refused_case IS NULL;
        ELSE
            SELECT r.id, r.name, r.enabled, m.tenants, m.role_id IS NOT NULL AS mapped
            INTO candidate
            FROM datatable_roles.catalog_role AS r
            LEFT JOIN datatable_roles.datatable_role AS m
                ON m.role_id = r.id AND m.datatable_id = dt.id
            WHERE r.name = p_role;
            result.refused_case := 'R1';
            IF NOT FOUND OR NOT candidate.mapped THEN
                result.refused_message := format(
                    'data table %s: role %s was named, and it is not in the data table''s role map',
                    label, quote_literal(left(p_role, 80)));
                result.refused_hint := 'Name a role of the map, or add the role to the map with set_datatable_role_tenants.';
            ELSIF NOT candidate.enabled THEN
                result.refused_message := format(
                    'data table %s: role %s was named, and it is disabled', label, candidate.name);
                result.refused_hint := 'Enable the role, or name another one.';
            ELSIF NOT (ident_admin OR candidate.tenants && ident_keys) THEN
                result.refused_message := format(
                    'data table %s: role %s was named, and the job identity %s is not a tenant of it',
                    label, candidate.name, job.permissioned_as);
                result.refused_hint := 'Add the identity (or one of its groups or folders) to the role''s tenants, or name a role it may use.';
            ELSE
                result.refused_case := NULL;
                ids := array[candidate.id];
            END IF;
        END IF;
        IF p_trace THEN
            steps := steps || jsonb_build_object('step', 'named role', 'rule', 'R1', 'role', p_role,
                'usable', result.refused_case IS NULL);
        END IF;
    ELSIF p_for_migration THEN
        -- R8: a migration naming no role runs as admin, when admin may serve.
        IF dt.default_role = 'admin' OR ident_admin OR dt.admin_tenants && ident_keys THEN
            result.is_admin := true;
        ELSE
            result.refused_case := 'R8';
            result.refused_message := format(
                'data table %s: a migration naming no role runs as admin, and the job identity %s may not use admin',
                label, job.permissioned_as);
            result.refused_hint := 'Name a role in the migration, or add the identity to the tenants of admin.';
        END IF;
        IF p_trace THEN
            steps := steps || jsonb_build_object('step', 'migration', 'rule', 'R8', 'admin', result.is_admin);
        END IF;
    ELSIF dt.default_role = 'admin' THEN
        -- R2: exactly as before viewer roles: no tenant check, no viewer lookup.
        result.is_admin := true;
        IF p_trace THEN
            steps := steps || jsonb_build_object('step', 'default', 'rule', 'R2', 'default', 'admin',
                'gives', 'admin', 'why', 'a default of admin is used as is: no tenant check, no viewer lookup');
        END IF;
    ELSE
        -- R3: the default, when the identity may use it ...
        IF dt.default_role <> datatable_roles.no_default() THEN
            SELECT r.id, r.name, r.enabled, m.tenants INTO candidate
            FROM datatable_roles.catalog_role AS r
            JOIN datatable_roles.datatable_role AS m ON m.role_id = r.id AND m.datatable_id = dt.id
            WHERE r.name = dt.default_role;
            IF FOUND THEN
                default_id := candidate.id;
                default_enabled := candidate.enabled;
                IF candidate.enabled AND (ident_admin OR candidate.tenants && ident_keys) THEN
                    ids := array[candidate.id];
                END IF;
            END IF;
            IF p_trace THEN
                steps := steps || jsonb_build_object('step', 'default', 'rule', 'R3',
                    'default', dt.default_role, 'gives', CASE WHEN ids = '{}' THEN NULL ELSE dt.default_role END,
                    'why', CASE
                        WHEN default_id IS NULL THEN 'the default is not in the role map'
                        WHEN NOT default_enabled THEN 'the default role is disabled'
                        WHEN ident_admin THEN 'the job identity is a workspace admin'
                        WHEN ids <> '{}' THEN 'the identity is named by ' || array_to_string(
                            ARRAY(SELECT unnest(candidate.tenants) INTERSECT SELECT unnest(ident_keys) ORDER BY 1), ', ')
                        ELSE 'the job identity is not a tenant of the default role' END);
            END IF;
        ELSIF p_trace THEN
            steps := steps || jsonb_build_object('step', 'default', 'rule', 'R4', 'default', NULL,
                'gives', NULL, 'why', 'the data table has no default role');
        END IF;

        -- ... plus the viewer's roles, unless no viewer could add anything
        -- (R10): no enabled role but the default has tenants here, and the
        -- default is already held (or names nobody). Then the viewer is not
        -- looked up at all.
        IF EXISTS (
            SELECT FROM datatable_roles.datatable_role AS m
            JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
            WHERE m.datatable_id = dt.id AND r.enabled AND m.tenants <> '{}'
                AND (m.role_id IS DISTINCT FROM default_id OR ids = '{}')
        ) THEN
            IF job.end_user_email IS NOT NULL THEN
                SELECT u.* INTO found_user FROM datatable_roles.workspace_user AS u
                WHERE u.workspace = dt.workspace AND lower(u.email) = lower(job.end_user_email);
                IF FOUND THEN
                    viewer_keys := datatable_roles.member_keys(dt.workspace, found_user.username);
                END IF;
            END IF;
            -- R9: no viewer, or a viewer outside the governing workspace, holds nothing.
            IF viewer_keys IS NOT NULL THEN
                viewer_ids := ARRAY(
                    SELECT m.role_id
                    FROM datatable_roles.datatable_role AS m
                    JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                    WHERE m.datatable_id = dt.id AND r.enabled AND m.tenants && viewer_keys
                );
            END IF;
            IF p_trace THEN
                steps := steps || jsonb_build_object('step', 'viewer', 'rule',
                    CASE WHEN viewer_keys IS NULL THEN 'R9' ELSE 'R3/R4' END,
                    'viewer', job.end_user_email,
                    'member', viewer_keys IS NOT NULL,
                    'why', CASE
                        WHEN job.end_user_email IS NULL THEN 'no viewer was recorded for this job'
                        WHEN viewer_keys IS NULL THEN 'the viewer is not a member of the governing workspace'
                        ELSE 'tenant lists naming the viewer' END,
                    'roles', coalesce((
                        SELECT jsonb_agg(jsonb_build_object('role', r.name, 'named_by', to_jsonb(ARRAY(
                            SELECT unnest(m.tenants) INTERSECT SELECT unnest(viewer_keys) ORDER BY 1)))
                            ORDER BY r.name)
                        FROM datatable_roles.datatable_role AS m
                        JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                        WHERE m.datatable_id = dt.id AND m.role_id = ANY(viewer_ids)), '[]'));
            END IF;
        ELSIF p_trace THEN
            steps := steps || jsonb_build_object('step', 'viewer', 'rule', 'R10',
                'why', 'no viewer could add a role here (only the default and admin have tenants): the viewer is not looked up');
        END IF;

        ids := ARRAY(SELECT DISTINCT i FROM unnest(ids || viewer_ids) AS i ORDER BY i);
        IF ids = '{}' THEN
            -- R5: never an empty or read-nothing login.
            result.refused_case := 'R5';
            result.refused_message := format(
                'data table %s: no role remains for this connection (%s; %s)', label,
                CASE WHEN dt.default_role = datatable_roles.no_default() THEN 'there is no default role'
                    WHEN NOT default_enabled
                        THEN format('the default role %s is disabled', dt.default_role)
                    ELSE format('the job identity %s may not use the default role %s',
                        job.permissioned_as, dt.default_role) END,
                CASE WHEN job.end_user_email IS NULL THEN 'no viewer was recorded'
                    WHEN viewer_keys IS NULL AND EXISTS (
                        SELECT FROM datatable_roles.workspace_user AS u
                        WHERE u.workspace = dt.workspace AND lower(u.email) = lower(job.end_user_email))
                        THEN 'no role of the map names anyone'
                    WHEN viewer_keys IS NULL THEN 'the viewer is not a member of the governing workspace'
                    ELSE 'the viewer is a tenant of no role' END);
            result.refused_hint := 'Name a role in the connection, set a default role the job identity may use, or add the viewer to a role''s tenants.';
        END IF;
    END IF;

    IF result.refused_case IS NULL THEN
        IF result.is_admin THEN
            result.role_names := '{admin}';
        ELSE
            result.role_ids := ids;
            result.role_names := ARRAY(
                SELECT r.name FROM datatable_roles.catalog_role AS r
                WHERE r.id = ANY(ids) ORDER BY r.name COLLATE "C");
        END IF;
    END IF;
    IF p_trace THEN
        result.steps := steps;
    END IF;
    RETURN result;
END;
$$;

-- Re-establishes exactly the wanted memberships of a login taken back.
CREATE FUNCTION datatable_roles.reset_memberships(p_login text, p_wanted text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    held text;
    wanted text;
BEGIN
    FOR held IN
        SELECT g.rolname FROM pg_auth_members AS am
        JOIN pg_roles AS g ON g.oid = am.roleid
        JOIN pg_roles AS m ON m.oid = am.member
        WHERE m.rolname = p_login AND NOT g.rolname = ANY(p_wanted)
    LOOP
        EXECUTE format('REVOKE %I FROM %I', held, p_login);
    END LOOP;
    FOREACH wanted IN ARRAY p_wanted LOOP
        IF NOT EXISTS (
            SELECT FROM pg_auth_members AS am
            JOIN pg_roles AS g ON g.oid = am.roleid
            JOIN pg_roles AS m ON m.oid = am.member
            WHERE m.rolname = p_login AND g.rolname = wanted
        ) THEN
            EXECUTE format('GRANT %I TO %I', wanted, p_login);
        END IF;
    END LOOP;
END;
$$;

-- The set login of exactly these roles (SPEC sections 5 and 6): used as is
-- when its row has a password and the login can log in; otherwise made, or
-- taken back with a new password, under a lock per login name, in the same
-- transaction as its row. last_used_at moves at most once per touch_every.
CREATE FUNCTION datatable_roles.ensure_set_login(
    p_role_ids bigint[], OUT login text, OUT password text
)
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    existing datatable_roles.datatable_role_set;
    now_ts timestamptz := datatable_roles.clock_now();
    fresh_password text;
    names text [];
BEGIN
    login := datatable_roles.set_login_name(p_role_ids);
    FOR attempt IN 1..2 LOOP
        SELECT s.* INTO existing FROM datatable_roles.datatable_role_set AS s
        WHERE s.login = ensure_set_login.login;
        IF FOUND AND existing.password <> '' AND EXISTS (
            SELECT FROM pg_roles AS pr WHERE pr.rolname = ensure_set_login.login AND pr.rolcanlogin
        ) THEN
            IF now_ts - existing.last_used_at
                < (SELECT s.touch_every FROM datatable_roles.settings AS s) THEN
                password := existing.password;
                RETURN;
            END IF;
            -- The daily touch. It locks the row, so it serialises with a
            -- sweep taking this login away; if the sweep won, fall through
            -- and take the login back.
            UPDATE datatable_roles.datatable_role_set AS s SET last_used_at = now_ts
            WHERE s.login = ensure_set_login.login AND s.password <> ''
            RETURNING s.password INTO password;
            IF password IS NOT NULL THEN
                RETURN;
            END IF;
        END IF;
        EXIT WHEN attempt = 2;
        -- Serialise makers of this login; the second look sees what a
        -- concurrent maker committed meanwhile.
        PERFORM pg_advisory_xact_lock(hashtextextended('datatable_roles.set_login:' || login, 0));
    END LOOP;

    names := ARRAY(SELECT r.name FROM datatable_roles.catalog_role AS r
        WHERE r.id = ANY(p_role_ids) ORDER BY r.name COLLATE "C");
    fresh_password := datatable_roles.new_password();
    BEGIN
        IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = login) THEN
            -- A login without a usable row: take it back.
            EXECUTE format('ALTER ROLE %I WITH LOGIN INHERIT PASSWORD %L',
                login, datatable_roles.verifier_for(fresh_password));
            PERFORM datatable_roles.fault_point('rekey:after_alter_role');
            PERFORM datatable_roles.reset_memberships(login, names);
        ELSE
            EXECUTE format(
                'CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION'
                || ' PASSWORD %L IN ROLE %s ROLE %I',
                login, datatable_roles.verifier_for(fresh_password),
                (SELECT string_agg(quote_ident(n), ', ') FROM unnest(names) AS n), current_user);
            PERFORM datatable_roles.fault_point('create:after_create_role');
        END IF;
    EXCEPTION WHEN unique_violation OR duplicate_object THEN
        RAISE EXCEPTION 'set login % was created concurrently; retry', login
            USING ERRCODE = 'serialization_failure';
    END;
    INSERT INTO datatable_roles.datatable_role_set AS s (login, role_ids, password, created_at, last_used_at)
    VALUES (login, p_role_ids, fresh_password, now_ts, now_ts)
    ON CONFLICT ON CONSTRAINT datatable_role_set_pkey DO UPDATE
    SET role_ids = excluded.role_ids, password = excluded.password, last_used_at = excluded.last_used_at;
    PERFORM datatable_roles.fault_point('create:after_row');
    password := fresh_password;
END;
$$;

-- Which login a job's connection to a data table uses (SPEC section 4).
-- Returns one row: the database, the login, its password, and the roles it
-- holds (sorted names; {admin} for the admin login). A refusal raises 42501
-- with the data table, the rule, and the fix.
CREATE FUNCTION public.resolve_datatable_role(
    job_id uuid, datatable text, role text DEFAULT null, for_migration boolean DEFAULT false
)
RETURNS TABLE (dbname text, login text, password text, roles text[])
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    d datatable_roles.decision;
BEGIN
    PERFORM datatable_roles.require(resolve_datatable_role.job_id, 'job_id');
    PERFORM datatable_roles.require(resolve_datatable_role.datatable, 'datatable');
    PERFORM datatable_roles.require(resolve_datatable_role.for_migration, 'for_migration');
    d := datatable_roles.decide(resolve_datatable_role.job_id, resolve_datatable_role.datatable,
        resolve_datatable_role.role, resolve_datatable_role.for_migration, false);
    IF d.refused_case IS NOT NULL THEN
        RAISE EXCEPTION '%', d.refused_message
            USING ERRCODE = 'insufficient_privilege', HINT = d.refused_hint,
                  DETAIL = format('refused by rule %s', d.refused_case);
    END IF;
    dbname := d.dbname;
    roles := d.role_names;
    IF d.is_admin THEN
        SELECT g.admin_login, g.admin_password INTO login, password
        FROM datatable_roles.datatable AS g WHERE g.id = d.datatable_id;
    ELSIF cardinality(d.role_ids) = 1 THEN
        SELECT r.name, r.password INTO login, password
        FROM datatable_roles.catalog_role AS r WHERE r.id = d.role_ids[1];
    ELSE
        SELECT s.login, s.password INTO login, password FROM datatable_roles.ensure_set_login(d.role_ids) AS s;
    END IF;
    RETURN NEXT;
END;
$$;

-- The decision of resolve_datatable_role, step by step, as jsonb, with no
-- side effects (STABLE): it never creates or changes a login.
CREATE FUNCTION public.explain_datatable_role(job_id uuid, datatable text, role text DEFAULT null)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    d datatable_roles.decision;
    login_name text;
BEGIN
    PERFORM datatable_roles.require(explain_datatable_role.job_id, 'job_id');
    PERFORM datatable_roles.require(explain_datatable_role.datatable, 'datatable');
    d := datatable_roles.decide(explain_datatable_role.job_id, explain_datatable_role.datatable,
        explain_datatable_role.role, false, true);
    IF d.refused_case IS NOT NULL THEN
        RETURN jsonb_build_object(
            'job_id', explain_datatable_role.job_id, 'datatable', explain_datatable_role.datatable,
            'role', explain_datatable_role.role, 'steps', d.steps,
            'refused', jsonb_build_object('rule', d.refused_case, 'message', d.refused_message,
                'hint', d.refused_hint));
    END IF;
    login_name := CASE
        WHEN d.is_admin THEN d.admin_login
        WHEN cardinality(d.role_ids) = 1 THEN d.role_names[1]
        ELSE datatable_roles.set_login_name(d.role_ids) END;
    RETURN jsonb_build_object(
        'job_id', explain_datatable_role.job_id, 'datatable', explain_datatable_role.datatable,
        'role', explain_datatable_role.role, 'steps', d.steps,
        'dbname', d.dbname, 'roles', to_jsonb(d.role_names), 'login', login_name,
        'login_kind', CASE WHEN d.is_admin THEN 'admin'
            WHEN cardinality(d.role_ids) = 1 THEN 'role' ELSE 'set' END,
        'login_exists', EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = login_name));
END;
$$;
