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

-- R3/R4 (SPEC section 4) for a governing entry, in parts that decide() and
-- resolve_datatable_role() both build on. Each is a one-row SQL function
-- without a SET clause, so that the planner inlines it into the calling query
-- (no call, and the plan is kept with the caller's). Each map entry's enabled
-- flag is read by primary key, so that no plan scans the catalog.
--
-- The default (none for the no-default marker, which names no catalog role):
-- held when enabled and the job identity may use it. viewer_may_add is false
-- when no viewer could add a role (R10: no enabled role but the default has
-- tenants here, and the default is already held or names nobody); then the
-- viewer is not looked up at all.
CREATE FUNCTION datatable_roles.default_of(
    p_datatable_id bigint, p_default_role text, p_ident_admin boolean, p_ident_keys text[]
)
RETURNS TABLE (
    id bigint, name text, password text, enabled boolean, tenants text[], held boolean,
    viewer_may_add boolean
)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, c.name, c.password, c.enabled, c.tenants, c.held, EXISTS (
        SELECT FROM datatable_roles.datatable_role AS m
        WHERE m.datatable_id = p_datatable_id AND m.tenants <> '{}'
            AND (m.role_id IS DISTINCT FROM c.id OR NOT c.held)
            AND (SELECT r.enabled FROM datatable_roles.catalog_role AS r WHERE r.id = m.role_id)
    )
    FROM (
        SELECT d.id, d.name, d.password, d.enabled, d.tenants, coalesce(d.held, false) AS held
        FROM (SELECT) AS one
        LEFT JOIN (
            SELECT r.id, r.name, r.password, r.enabled, m.tenants,
                r.enabled AND (p_ident_admin OR m.tenants && p_ident_keys) AS held
            FROM datatable_roles.catalog_role AS r
            JOIN datatable_roles.datatable_role AS m
                ON m.datatable_id = p_datatable_id AND m.role_id = r.id
            WHERE r.name = p_default_role AND p_default_role <> datatable_roles.no_default()
        ) AS d ON true
        OFFSET 0
    ) AS c
$$;

-- The viewer's roles: the enabled roles of the map whose tenant lists name the
-- viewer, a member of the governing workspace (username NULL and ids empty
-- for no viewer, or one outside that workspace: R9). Each tenant key is
-- tested against the directory (u/ by name, g/ and f/ by primary key, as
-- scalar subqueries so that no plan hashes the viewer's memberships), so the
-- cost follows the map's tenant lists, not the viewer's memberships: a tenant
-- key names the viewer exactly when member_keys would list it.
CREATE FUNCTION datatable_roles.viewer_roles_of(
    p_datatable_id bigint, p_workspace text, p_viewer_email text
)
RETURNS TABLE (username text, ids bigint[])
LANGUAGE sql STABLE
AS $$
    SELECT u.username, CASE WHEN u.username IS NULL THEN '{}'::bigint [] ELSE ARRAY(
        SELECT m.role_id FROM datatable_roles.datatable_role AS m
        WHERE m.datatable_id = p_datatable_id
            AND (SELECT r.enabled FROM datatable_roles.catalog_role AS r WHERE r.id = m.role_id)
            AND EXISTS (
                SELECT FROM unnest(m.tenants) AS t (k)
                WHERE t.k = '*' OR t.k = 'u/' || u.username
                    OR starts_with(t.k, 'g/') AND (
                        SELECT true FROM datatable_roles.group_member AS gm
                        WHERE gm.workspace = p_workspace AND gm.group_name = substr(t.k, 3)
                            AND gm.username = u.username
                    )
                    OR starts_with(t.k, 'f/') AND (
                        SELECT true FROM datatable_roles.folder_access AS fa
                        WHERE fa.workspace = p_workspace AND fa.folder = substr(t.k, 3)
                            AND (
                                fa.principal = 'u/' || u.username
                                OR starts_with(fa.principal, 'g/') AND (
                                    SELECT true FROM datatable_roles.group_member AS gf
                                    WHERE gf.workspace = p_workspace
                                        AND gf.group_name = substr(fa.principal, 3)
                                        AND gf.username = u.username
                                )
                            )
                        LIMIT 1
                    )
            )
    ) END
    FROM (SELECT) AS one
    LEFT JOIN datatable_roles.workspace_user AS u
        ON u.workspace = p_workspace AND lower(u.email) = lower(p_viewer_email)
$$;

-- The roles of a set of catalog ids: sorted ids and names sorted bytewise.
CREATE FUNCTION datatable_roles.roles_of(p_role_ids bigint[])
RETURNS TABLE (ids bigint[], names text[])
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(array_agg(r.id ORDER BY r.id), '{}'),
        coalesce(array_agg(r.name ORDER BY r.name COLLATE "C"), '{}')
    FROM datatable_roles.catalog_role AS r
    WHERE r.id = ANY(p_role_ids)
$$;

-- Decides without side effects (STABLE: PL/pgSQL refuses writes here).
-- Unknown job or data table raise P0002; a refusal is returned, not raised.
-- Few statements on purpose (each costs): one for the job and the data
-- table, one for the default (default_of), one for the viewer
-- (viewer_roles_of) and one for the set (roles_of) when needed.
CREATE FUNCTION datatable_roles.decide(
    p_job_id uuid, p_datatable text, p_role text, p_for_migration boolean, p_trace boolean
)
RETURNS datatable_roles.decision
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    h record;
    label text;
    found_user datatable_roles.workspace_user;
    ident_admin boolean;
    ident_keys text [];
    candidate record;
    dflt record;
    default_id bigint;
    default_enabled boolean;
    viewer_name text;
    viewer_member boolean;       -- NULL: the viewer was not looked up (R10)
    viewer_keys text [];         -- for the trace
    viewer_ids bigint [] := '{}'::bigint [];
    ids bigint [] := '{}'::bigint [];
    names text [];
    steps jsonb := '[]'::jsonb;
    result datatable_roles.decision;
BEGIN
    -- The job, the entry it names (h.entry_id) and the governing entry (h.id),
    -- and the job identity's own keys as captured at start.
    SELECT j.workspace AS job_workspace, j.permissioned_as, j.email, j.is_admin,
        j.end_user_email,
        array['*', j.permissioned_as]
        || ARRAY(SELECT 'g/' || x FROM unnest(j.groups) AS x)
        || ARRAY(SELECT 'f/' || x FROM unnest(j.folders) AS x) AS job_keys,
        d.id AS entry_id, g.id, g.workspace, g.name, g.dbname, g.admin_login, g.default_role,
        g.admin_tenants, d.governing_id IS NOT NULL AS is_reference
    INTO h
    FROM datatable_roles.job_perms AS j
    LEFT JOIN datatable_roles.datatable AS d
        ON d.workspace = j.workspace AND d.name = p_datatable
    LEFT JOIN datatable_roles.datatable AS g ON g.id = coalesce(d.governing_id, d.id)
    WHERE j.job_id = p_job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % was never recorded', p_job_id
            USING ERRCODE = 'no_data_found', HINT = 'Call record_job_start when the job starts.';
    END IF;
    IF h.entry_id IS NULL THEN
        RAISE EXCEPTION 'data table % does not exist in workspace %',
            quote_literal(left(p_datatable, 80)), quote_literal(h.job_workspace)
            USING ERRCODE = 'no_data_found';
    END IF;
    label := format('%s/%s', h.job_workspace, p_datatable);
    result.datatable_id := h.id;
    result.dbname := h.dbname;
    result.admin_login := h.admin_login;
    result.is_admin := false;

    -- The job identity counts in the governing workspace: its own memberships
    -- as captured at start, or, for a data table another workspace governs,
    -- its current ones there, found by email (none when not a member).
    IF h.workspace = h.job_workspace THEN
        ident_admin := h.is_admin;
        ident_keys := h.job_keys;
    ELSE
        SELECT u.* INTO found_user FROM datatable_roles.workspace_user AS u
        WHERE u.workspace = h.workspace AND lower(u.email) = lower(h.email);
        ident_admin := coalesce(found_user.is_admin, false);
        ident_keys := CASE WHEN FOUND
            THEN datatable_roles.member_keys(h.workspace, found_user.username) ELSE '{}' END;
    END IF;
    IF p_trace THEN
        steps := steps || jsonb_build_object(
            'step', 'identity', 'permissioned_as', h.permissioned_as,
            'governing', format('%s/%s', h.workspace, h.name), 'reference', h.is_reference,
            'workspace_admin', ident_admin, 'keys', to_jsonb(ident_keys),
            'memberships', CASE WHEN h.workspace = h.job_workspace THEN 'captured at job start'
                ELSE 'current, in the governing workspace' END);
    END IF;

    IF p_role IS NOT NULL THEN
        -- R1 (and R8 when a migration names a role): exactly {R}.
        IF p_role = 'admin' THEN
            IF NOT (ident_admin OR h.admin_tenants && ident_keys) THEN
                result.refused_case := 'R1';
                result.refused_message := format(
                    'data table %s: role admin was named, and the job identity %s may not use it',
                    label, h.permissioned_as);
                result.refused_hint := 'Name a role the identity is a tenant of, or add the identity to the tenants of admin.';
            END IF;
            result.is_admin := result.refused_case IS NULL;
        ELSE
            SELECT r.id, r.name, r.enabled, m.tenants, m.role_id IS NOT NULL AS mapped
            INTO candidate
            FROM datatable_roles.catalog_role AS r
            LEFT JOIN datatable_roles.datatable_role AS m
                ON m.role_id = r.id AND m.datatable_id = h.id
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
                    label, candidate.name, h.permissioned_as);
                result.refused_hint := 'Add the identity (or one of its groups or folders) to the role''s tenants, or name a role it may use.';
            ELSE
                result.refused_case := NULL;
                ids := array[candidate.id];
                names := array[candidate.name];
            END IF;
        END IF;
        IF p_trace THEN
            steps := steps || jsonb_build_object('step', 'named role', 'rule', 'R1', 'role', p_role,
                'usable', result.refused_case IS NULL);
        END IF;
    ELSIF p_for_migration THEN
        -- R8: a migration naming no role runs as admin, when admin may serve.
        IF h.default_role = 'admin' OR ident_admin OR h.admin_tenants && ident_keys THEN
            result.is_admin := true;
        ELSE
            result.refused_case := 'R8';
            result.refused_message := format(
                'data table %s: a migration naming no role runs as admin, and the job identity %s may not use admin',
                label, h.permissioned_as);
            result.refused_hint := 'Name a role in the migration, or add the identity to the tenants of admin.';
        END IF;
        IF p_trace THEN
            steps := steps || jsonb_build_object('step', 'migration', 'rule', 'R8', 'admin', result.is_admin);
        END IF;
    ELSIF h.default_role = 'admin' THEN
        -- R2: exactly as before viewer roles: no tenant check, no viewer lookup.
        result.is_admin := true;
        IF p_trace THEN
            steps := steps || jsonb_build_object('step', 'default', 'rule', 'R2', 'default', 'admin',
                'gives', 'admin', 'why', 'a default of admin is used as is: no tenant check, no viewer lookup');
        END IF;
    ELSE
        -- R3/R4, with R9 and R10 (default_of, viewer_roles_of, roles_of).
        SELECT d.* INTO dflt
        FROM datatable_roles.default_of(h.id, h.default_role, ident_admin, ident_keys) AS d;
        default_id := dflt.id;
        default_enabled := dflt.enabled;
        IF dflt.held THEN
            ids := array[dflt.id];
            names := array[dflt.name];
        ELSE
            names := '{}';
        END IF;
        IF p_trace AND h.default_role <> datatable_roles.no_default() THEN
            steps := steps || jsonb_build_object('step', 'default', 'rule', 'R3',
                'default', h.default_role, 'gives', CASE WHEN dflt.held THEN h.default_role END,
                'why', CASE
                    WHEN default_id IS NULL THEN 'the default is not in the role map'
                    WHEN NOT default_enabled THEN 'the default role is disabled'
                    WHEN ident_admin THEN 'the job identity is a workspace admin'
                    WHEN dflt.held THEN 'the identity is named by ' || array_to_string(
                        ARRAY(SELECT unnest(dflt.tenants) INTERSECT SELECT unnest(ident_keys) ORDER BY 1), ', ')
                    ELSE 'the job identity is not a tenant of the default role' END);
        ELSIF p_trace THEN
            steps := steps || jsonb_build_object('step', 'default', 'rule', 'R4', 'default', NULL,
                'gives', NULL, 'why', 'the data table has no default role');
        END IF;

        IF dflt.viewer_may_add THEN
            SELECT v.username, v.ids INTO viewer_name, viewer_ids
            FROM datatable_roles.viewer_roles_of(h.id, h.workspace, h.end_user_email) AS v;
            viewer_member := viewer_name IS NOT NULL;
            IF viewer_member AND p_trace THEN
                viewer_keys := datatable_roles.member_keys(h.workspace, viewer_name);
            END IF;
            IF viewer_ids <> '{}' THEN
                SELECT s.ids, s.names INTO ids, names
                FROM datatable_roles.roles_of(ids || viewer_ids) AS s;
            END IF;
            IF p_trace THEN
                steps := steps || jsonb_build_object('step', 'viewer', 'rule',
                    CASE WHEN viewer_member THEN 'R3/R4' ELSE 'R9' END,
                    'viewer', h.end_user_email,
                    'member', viewer_member,
                    'why', CASE
                        WHEN h.end_user_email IS NULL THEN 'no viewer was recorded for this job'
                        WHEN NOT viewer_member THEN 'the viewer is not a member of the governing workspace'
                        ELSE 'tenant lists naming the viewer' END,
                    'roles', coalesce((
                        SELECT jsonb_agg(jsonb_build_object('role', r.name, 'named_by', to_jsonb(ARRAY(
                            SELECT unnest(m.tenants) INTERSECT SELECT unnest(viewer_keys) ORDER BY 1)))
                            ORDER BY r.name)
                        FROM datatable_roles.datatable_role AS m
                        JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                        WHERE m.datatable_id = h.id AND m.role_id = ANY(viewer_ids)), '[]'));
            END IF;
        ELSIF p_trace THEN
            steps := steps || jsonb_build_object('step', 'viewer', 'rule', 'R10',
                'why', 'no viewer could add a role here (only the default and admin have tenants): the viewer is not looked up');
        END IF;

        IF ids = '{}' THEN
            -- R5: never an empty or read-nothing login.
            result.refused_case := 'R5';
            result.refused_message := format(
                'data table %s: no role remains for this connection (%s; %s)', label,
                CASE WHEN h.default_role = datatable_roles.no_default() THEN 'there is no default role'
                    WHEN NOT default_enabled
                        THEN format('the default role %s is disabled', h.default_role)
                    ELSE format('the job identity %s may not use the default role %s',
                        h.permissioned_as, h.default_role) END,
                CASE WHEN h.end_user_email IS NULL THEN 'no viewer was recorded'
                    WHEN NOT coalesce(viewer_member, false) AND EXISTS (
                        SELECT FROM datatable_roles.workspace_user AS u
                        WHERE u.workspace = h.workspace AND lower(u.email) = lower(h.end_user_email))
                        THEN 'no role of the map names anyone'
                    WHEN NOT coalesce(viewer_member, false)
                        THEN 'the viewer is not a member of the governing workspace'
                    ELSE 'the viewer is a tenant of no role' END);
            result.refused_hint := 'Name a role in the connection, set a default role the job identity may use, or add the viewer to a role''s tenants.';
        END IF;
    END IF;

    IF result.refused_case IS NULL THEN
        IF result.is_admin THEN
            result.role_names := '{admin}';
        ELSE
            result.role_ids := ids;
            result.role_names := names;
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
        -- One statement, one snapshot: the row's password and the login's
        -- LOGIN as of the same committed state.
        SELECT s.* INTO existing FROM datatable_roles.datatable_role_set AS s
        WHERE s.login = ensure_set_login.login AND s.password <> '' AND EXISTS (
            SELECT FROM pg_roles AS pr WHERE pr.rolname = s.login AND pr.rolcanlogin
        );
        IF FOUND THEN
            IF now_ts - existing.last_used_at
                < (SELECT s.touch_every FROM datatable_roles.settings AS s) THEN
                password := existing.password;
                RETURN;
            END IF;
            -- The daily touch, only on the second look, under the login's
            -- lock: a row is only ever locked after that lock, as the sweep
            -- and retirement do. (Touching first, an UPDATE that lost its
            -- recheck against a sweep kept the row locked and then waited
            -- for the lock the sweep held: a deadlock.) Under the lock, a
            -- sweep or retirement is either done (then the row says so) or
            -- has not started.
            IF attempt = 2 THEN
                UPDATE datatable_roles.datatable_role_set AS s SET last_used_at = now_ts
                WHERE s.login = ensure_set_login.login AND s.password <> ''
                RETURNING s.password INTO password;
                IF password IS NOT NULL THEN
                    RETURN;
                END IF;
            END IF;
        END IF;
        EXIT WHEN attempt = 2;
        -- Lock the roles' catalog rows before the login's lock (the order
        -- retirement takes them too): a role being disabled or dropped right
        -- now is either seen here, and the resolve fails with a clear error,
        -- or waits for this commit and then retires the login made here.
        -- Without it such a login was made, with LOGIN, after the retirement
        -- had looked for it.
        IF cardinality(ARRAY(
            SELECT r.id FROM datatable_roles.catalog_role AS r
            WHERE r.id = ANY(p_role_ids) AND r.enabled ORDER BY r.id FOR SHARE
        )) <> cardinality(p_role_ids) THEN
            RAISE EXCEPTION 'a role of set login % was disabled or dropped while resolving; retry', login
                USING ERRCODE = 'serialization_failure';
        END IF;
        -- Serialise makers of this login (and the sweep and retirement of it);
        -- the second look sees what a concurrent maker committed meanwhile.
        PERFORM pg_advisory_xact_lock(hashtextextended('datatable_roles.set_login:' || login, 0));
    END LOOP;

    names := ARRAY(SELECT r.name FROM datatable_roles.catalog_role AS r
        WHERE r.id = ANY(p_role_ids) ORDER BY r.name COLLATE "C");
    fresh_password := datatable_roles.new_password();
    BEGIN
        IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = login) THEN
            -- A login without a usable row: take it back, stripped of any
            -- attribute it may have been given (one a superuser gave it,
            -- SUPERUSER, REPLICATION or BYPASSRLS, makes this ALTER fail).
            EXECUTE format('ALTER ROLE %I WITH LOGIN INHERIT NOCREATEDB NOCREATEROLE PASSWORD %L',
                login, datatable_roles.verifier_for(fresh_password));
            PERFORM datatable_roles.fault_point('rekey:after_alter_role');
            PERFORM datatable_roles.reset_memberships(login, names);
        ELSE
            -- The owner is not made a member: its membership list would grow
            -- with every set login, and PostgreSQL recomputes it, at a cost
            -- quadratic in its length, after every role change. The sweep
            -- makes it a member only of a login that owns something to move.
            EXECUTE format(
                'CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION'
                || ' PASSWORD %L IN ROLE %s',
                login, datatable_roles.verifier_for(fresh_password),
                (SELECT string_agg(quote_ident(n), ', ') FROM unnest(names) AS n));
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

-- The set login of these roles and its password, when it may be handed out
-- as it is, with no write: its row has a password, the login exists and may
-- log in, and it was used within touch_every. The same test as the first look
-- of ensure_set_login, as a SQL function the planner inlines into
-- resolve_datatable_role's query; whatever fails it goes to ensure_set_login,
-- which makes the login, takes it back or touches it.
CREATE FUNCTION datatable_roles.usable_set_login(p_role_ids bigint[])
RETURNS TABLE (login text, password text)
LANGUAGE sql STABLE
AS $$
    SELECT s.login, s.password
    FROM datatable_roles.datatable_role_set AS s
    WHERE cardinality(p_role_ids) > 1
        AND s.login = (SELECT n.login FROM datatable_roles.set_login_of(p_role_ids) AS n)
        AND s.password <> ''
        AND (
            SELECT now() + st.clock_offset - s.last_used_at < st.touch_every
            FROM datatable_roles.settings AS st
        )
        AND (SELECT pr.rolcanlogin FROM pg_catalog.pg_roles AS pr WHERE pr.rolname = s.login)
$$;

-- Which login a job's connection to a data table uses (SPEC section 4).
-- Returns one row: the database, the login, its password, and the roles it
-- holds (sorted names; {admin} for the admin login). A refusal raises 42501
-- with the data table, the rule, and the fix.
--
-- A connection naming no role, to a data table of the job's own workspace,
-- is answered here with the pieces decide() is built of, in as few
-- statements as each case allows: the job and the data table (R2 ends
-- there); default_of (R10 with the default held ends there: the role's own
-- login); viewer_roles_of and roles_of, with the login of the one role or the
-- set login when usable as is (usable_set_login). Everything else (a named
-- role, a migration, a reference to another workspace's data table, an
-- unknown job or data table, a refusal) is decide()'s; a set login to make,
-- take back or touch is ensure_set_login's.
CREATE FUNCTION public.resolve_datatable_role(
    job_id uuid, datatable text, role text DEFAULT null, for_migration boolean DEFAULT false,
    OUT dbname text, OUT login text, OUT password text, OUT roles text[]
)
RETURNS record
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
-- Generic plans: every statement here is a lookup by key, and a custom plan
-- (which PL/pgSQL keeps choosing when the generic one is estimated dearer)
-- is planned anew on every call, the inlined functions included.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    h record;
    dflt record;
    c record;
    d datatable_roles.decision;
BEGIN
    IF resolve_datatable_role.job_id IS NULL THEN
        RAISE EXCEPTION 'argument % must not be NULL', 'job_id' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF resolve_datatable_role.datatable IS NULL THEN
        RAISE EXCEPTION 'argument % must not be NULL', 'datatable' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF resolve_datatable_role.for_migration IS NULL THEN
        RAISE EXCEPTION 'argument % must not be NULL', 'for_migration' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF resolve_datatable_role.role IS NULL AND NOT resolve_datatable_role.for_migration THEN
        SELECT g.id, g.workspace, g.dbname, g.default_role, g.admin_login, g.admin_password,
            g.workspace = j.workspace AS own_workspace, j.is_admin, j.end_user_email,
            j.permissioned_as, j.groups, j.folders
        INTO h
        FROM datatable_roles.job_perms AS j
        JOIN datatable_roles.datatable AS e
            ON e.workspace = j.workspace AND e.name = resolve_datatable_role.datatable
        JOIN datatable_roles.datatable AS g ON g.id = coalesce(e.governing_id, e.id)
        WHERE j.job_id = resolve_datatable_role.job_id;
        IF FOUND AND h.default_role = 'admin' THEN
            -- R2.
            dbname := h.dbname;
            login := h.admin_login;
            password := h.admin_password;
            roles := '{admin}';
            RETURN;
        END IF;
        IF FOUND AND h.own_workspace THEN
            -- The identity's keys as captured at start (as decide() has them).
            SELECT f.* INTO dflt
            FROM (
                SELECT array['*', h.permissioned_as]
                    || ARRAY(SELECT 'g/' || x FROM unnest(h.groups) AS x)
                    || ARRAY(SELECT 'f/' || x FROM unnest(h.folders) AS x) AS keys
                OFFSET 0
            ) AS k
            CROSS JOIN LATERAL datatable_roles.default_of(h.id, h.default_role, h.is_admin, k.keys) AS f;
            IF dflt.held AND NOT dflt.viewer_may_add THEN
                -- R10 with the default held: its own login.
                dbname := h.dbname;
                login := dflt.name;
                password := dflt.password;
                roles := array[dflt.name];
                RETURN;
            END IF;
            IF dflt.viewer_may_add THEN
                -- One row; each lookup on it a subquery, computed once.
                SELECT s.ids, s.names,
                    CASE WHEN cardinality(s.ids) = 1 THEN (
                        SELECT r.password FROM datatable_roles.catalog_role AS r WHERE r.id = s.ids[1]
                    ) END AS role_password,
                    CASE WHEN cardinality(s.ids) > 1 THEN (
                        SELECT array[u.login, u.password]
                        FROM datatable_roles.usable_set_login(s.ids) AS u
                    ) END AS set_login
                INTO c
                FROM datatable_roles.viewer_roles_of(h.id, h.workspace, h.end_user_email) AS v
                CROSS JOIN LATERAL datatable_roles.roles_of(
                    CASE WHEN dflt.held THEN array[dflt.id] ELSE '{}' END || v.ids
                ) AS s;
                IF cardinality(c.ids) = 1 THEN
                    -- R6: the role's own login.
                    dbname := h.dbname;
                    login := c.names[1];
                    password := c.role_password;
                    roles := c.names;
                    RETURN;
                ELSIF cardinality(c.ids) > 1 THEN
                    -- R7: the set login of exactly that set.
                    dbname := h.dbname;
                    roles := c.names;
                    IF c.set_login IS NOT NULL THEN
                        login := c.set_login[1];
                        password := c.set_login[2];
                    ELSE
                        SELECT s.login, s.password INTO login, password
                        FROM datatable_roles.ensure_set_login(c.ids) AS s;
                    END IF;
                    RETURN;
                END IF;
            END IF;
            -- Nothing remains (R5): decide() words the refusal.
        END IF;
    END IF;

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
        SELECT s.login, s.password INTO login, password
        FROM datatable_roles.ensure_set_login(d.role_ids) AS s;
    END IF;
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
