-- The resolution rules: all of docs/rules.md (R1-R12), and which login a
-- result gets (R6/R7). decide() applies them, once, for both
-- resolve_datatable_role (which hands the login out) and
-- explain_datatable_role (which shows the steps).
--
-- The pieces decide() is built of are one-row SQL functions without a SET
-- clause, so that the planner inlines them into decide's queries (no call,
-- and the plan is kept with decide's). Each map entry's enabled flag is read
-- by primary key, so that no plan scans the catalog.

-- may_use (docs/rules.md): the identity is an admin of the governing
-- workspace (every role, admin included), or the role's tenant list on the
-- data table names one of its keys (member_keys). NULL tenants (a role not
-- in the map) give NULL, which every caller takes as no.
CREATE OR REPLACE FUNCTION datatable_roles.may_use(
    p_ident_admin boolean, p_ident_keys text[], p_tenants text[]
)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT p_ident_admin OR p_tenants && p_ident_keys
$$;

-- R3/R4: the default (none for the no-default marker, R12, which names no
-- catalog role) is held when it is enabled and may_use(job identity).
-- viewer_may_add is false when no viewer could add a role (R10: no enabled
-- role but the default has tenants here, and the default is already held or
-- names nobody); then the viewer is not looked up at all.
CREATE OR REPLACE FUNCTION datatable_roles.default_of(
    p_datatable_id bigint, p_default_role text, p_ident_admin boolean, p_ident_keys text[]
)
RETURNS TABLE (
    id bigint, name text, enabled boolean, tenants text[], held boolean,
    viewer_may_add boolean
)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, c.name, c.enabled, c.tenants, c.held, EXISTS (
        SELECT FROM datatable_roles.datatable_role AS m
        WHERE m.datatable_id = p_datatable_id AND m.tenants <> '{}'
            AND (m.role_id IS DISTINCT FROM c.id OR NOT c.held)
            AND (SELECT r.enabled FROM datatable_roles.catalog_role AS r WHERE r.id = m.role_id)
    )
    FROM (
        SELECT d.id, d.name, d.enabled, d.tenants, coalesce(d.held, false) AS held
        FROM (SELECT) AS one
        LEFT JOIN (
            SELECT r.id, r.name, r.enabled, m.tenants,
                r.enabled AND datatable_roles.may_use(p_ident_admin, p_ident_keys, m.tenants) AS held
            FROM datatable_roles.catalog_role AS r
            JOIN datatable_roles.datatable_role AS m
                ON m.datatable_id = p_datatable_id AND m.role_id = r.id
            WHERE r.name = p_default_role AND p_default_role <> datatable_roles.no_default()
        ) AS d ON true
        OFFSET 0
    ) AS c
$$;

-- The viewer's roles: the enabled roles of the map whose tenant lists name the
-- viewer, a member of the governing workspace found by email through the
-- directory seam (no row, so username NULL and ids empty, for no viewer, one
-- outside that workspace, a disabled one, or an email several members share:
-- R9). Each tenant key is tested against the directory by key
-- (key_names_member), so the cost follows the map's tenant lists, not the
-- viewer's memberships.
CREATE OR REPLACE FUNCTION datatable_roles.viewer_roles_of(
    p_datatable_id bigint, p_workspace text, p_viewer_email text
)
RETURNS TABLE (username text, email text, incarnation text, ids bigint[])
LANGUAGE sql STABLE
AS $$
    SELECT v.username, v.email, v.incarnation,
        CASE WHEN v.username IS NULL THEN '{}'::bigint [] ELSE ARRAY(
            SELECT m.role_id FROM datatable_roles.datatable_role AS m
            WHERE m.datatable_id = p_datatable_id
                AND (SELECT r.enabled FROM datatable_roles.catalog_role AS r WHERE r.id = m.role_id)
                AND EXISTS (
                    SELECT FROM unnest(m.tenants) AS t (k)
                    CROSS JOIN LATERAL datatable_roles.key_names_member(
                        p_workspace, t.k, v.username, v.email, v.incarnation) AS n
                )
        ) END
    FROM (SELECT) AS one
    LEFT JOIN datatable_roles.directory_member_by_email(p_workspace, p_viewer_email) AS v ON true
$$;

-- The roles of a set of catalog ids: sorted ids and names sorted bytewise.
CREATE OR REPLACE FUNCTION datatable_roles.roles_of(p_role_ids bigint[])
RETURNS TABLE (ids bigint[], names text[])
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(array_agg(r.id ORDER BY r.id), '{}'),
        coalesce(array_agg(r.name ORDER BY r.name COLLATE "C"), '{}')
    FROM datatable_roles.catalog_role AS r
    WHERE r.id = ANY(p_role_ids)
$$;


-- R6/R7, which login a non-empty set of catalog roles gets on the data
-- table's database: the scoped login of exactly that set there ('role' for
-- one role, whose sessions act as the role; 'set' for several). Catalog
-- roles are never logged in as: a role's own login would reach every
-- database where the role is mapped, in any workspace. The password comes
-- with it when the login may be handed out with no write (usable_set_login).
-- The admin login, for a result of {admin}, is decide()'s to pick.
CREATE OR REPLACE FUNCTION datatable_roles.login_of_roles(p_dbname text, p_role_ids bigint[])
RETURNS TABLE (kind text, login text, password text)
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN cardinality(p_role_ids) = 1 THEN 'role' ELSE 'set' END, n.login,
        (SELECT u.password FROM datatable_roles.usable_set_login(p_dbname, p_role_ids) AS u)
    FROM datatable_roles.set_login_of(p_dbname, p_role_ids) AS n
$$;

-- Decides without side effects (STABLE: PL/pgSQL refuses writes here).
-- Unknown job or data table raise P0002; a refusal is returned, not raised.
-- Few statements on purpose (each costs): one for the job and the data
-- table (R2 ends there), one for the default (default_of; R10 with the
-- default held ends there), one for the viewer (viewer_roles_of), and one
-- for the login (login_of_roles). p_trace fills steps, for explain.
--
-- No SET clause (it would save and restore the setting on every call, on
-- the hot path): decide is called only by resolve_datatable_role and
-- explain_datatable_role, SECURITY DEFINER functions that pin search_path,
-- and it names every object of the package with its schema.
CREATE OR REPLACE FUNCTION datatable_roles.decide(
    p_job_id uuid, p_datatable text, p_role text, p_for_migration boolean, p_trace boolean
)
RETURNS datatable_roles.decision
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    h record;
    label text;
    found_user record;
    ident_admin boolean;
    ident_keys text [];
    candidate record;
    dflt record;
    viewer record;               -- username, email, incarnation, ids
    viewer_name text;
    viewer_member boolean;       -- NULL: the viewer was not looked up (R10)
    viewer_keys text [];         -- for the trace
    viewer_ids bigint [] := '{}'::bigint [];
    is_admin boolean := false;   -- the result is {admin}
    ids bigint [] := '{}'::bigint [];
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
        d.id AS entry_id, g.id, g.workspace, g.name, g.dbname, g.admin_login, g.admin_password,
        g.admin_verifier,
        g.default_role, g.admin_tenants, d.governing_id IS NOT NULL AS is_reference
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

    -- The job identity counts in the governing workspace: its own memberships
    -- as captured at start, or, for a data table another workspace governs,
    -- its current ones there, found by email (none when not a member).
    -- R2 needs none of it: another workspace's is looked up only when a rule
    -- (or the trace) reads it.
    IF h.workspace = h.job_workspace THEN
        ident_admin := h.is_admin;
        ident_keys := h.job_keys;
    ELSIF p_role IS NOT NULL OR p_for_migration OR h.default_role <> 'admin' OR p_trace THEN
        SELECT m.* INTO found_user
        FROM datatable_roles.directory_member_by_email(h.workspace, h.email) AS m;
        ident_admin := FOUND AND found_user.is_admin;
        ident_keys := CASE WHEN FOUND THEN datatable_roles.member_keys(h.workspace,
            found_user.username, found_user.email, found_user.incarnation) ELSE '{}' END;
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
        result.refused_case := 'R1';
        IF p_role = 'admin' THEN
            IF datatable_roles.may_use(ident_admin, ident_keys, h.admin_tenants) THEN
                result.refused_case := NULL;
                is_admin := true;
            ELSE
                result.refused_message := format(
                    'data table %s: role admin was named, and the job identity %s may not use it',
                    label, h.permissioned_as);
                result.refused_hint := 'Name a role the identity is a tenant of, or add the identity to the tenants of admin.';
            END IF;
        ELSE
            SELECT r.id, r.name, r.enabled, m.tenants, m.role_id IS NOT NULL AS mapped
            INTO candidate
            FROM datatable_roles.catalog_role AS r
            LEFT JOIN datatable_roles.datatable_role AS m
                ON m.role_id = r.id AND m.datatable_id = h.id
            WHERE r.name = p_role;
            IF NOT FOUND OR NOT candidate.mapped THEN
                result.refused_message := format(
                    'data table %s: role %s was named, and it is not in the data table''s role map',
                    label, quote_literal(left(p_role, 80)));
                result.refused_hint := coalesce('Did you mean ' || quote_literal(
                        datatable_roles.nearest_name(p_role, ARRAY(
                            SELECT r.name FROM datatable_roles.datatable_role AS m
                            JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                            WHERE m.datatable_id = h.id) || 'admin'::text)) || '? ', '')
                    || 'Name a role of the map, or add the role to the map with set_datatable_role_tenants.';
            ELSIF NOT candidate.enabled THEN
                result.refused_message := format(
                    'data table %s: role %s was named, and it is disabled', label,
                    quote_literal(candidate.name));
                result.refused_hint := 'Enable the role, or name another one.';
            ELSIF NOT datatable_roles.may_use(ident_admin, ident_keys, candidate.tenants) THEN
                result.refused_message := format(
                    'data table %s: role %s was named, and the job identity %s is not a tenant of it',
                    label, quote_literal(candidate.name), h.permissioned_as);
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
        IF h.default_role = 'admin' OR datatable_roles.may_use(ident_admin, ident_keys, h.admin_tenants) THEN
            is_admin := true;
        ELSE
            result.refused_case := 'R8';
            result.refused_message := format(
                'data table %s: a migration naming no role runs as admin, and the job identity %s may not use admin',
                label, h.permissioned_as);
            result.refused_hint := 'Name a role in the migration, or add the identity to the tenants of admin.';
        END IF;
        IF p_trace THEN
            steps := steps || jsonb_build_object('step', 'migration', 'rule', 'R8', 'admin', is_admin);
        END IF;
    ELSIF h.default_role = 'admin' THEN
        -- R2: exactly as before viewer roles: no tenant check, no viewer lookup.
        is_admin := true;
        IF p_trace THEN
            steps := steps || jsonb_build_object('step', 'default', 'rule', 'R2', 'default', 'admin',
                'gives', 'admin', 'why', 'a default of admin is used as is: no tenant check, no viewer lookup');
        END IF;
    ELSE
        -- R3/R4, with R9 and R10 (default_of, viewer_roles_of).
        SELECT d.* INTO dflt
        FROM datatable_roles.default_of(h.id, h.default_role, ident_admin, ident_keys) AS d;
        IF dflt.held THEN
            ids := array[dflt.id];
        END IF;
        IF p_trace AND h.default_role <> datatable_roles.no_default() THEN
            steps := steps || jsonb_build_object('step', 'default', 'rule', 'R3',
                'default', h.default_role, 'gives', CASE WHEN dflt.held THEN h.default_role END,
                'why', CASE
                    WHEN dflt.id IS NULL THEN 'the default is not in the role map'
                    WHEN NOT dflt.enabled THEN 'the default role is disabled'
                    WHEN ident_admin THEN 'the job identity is a workspace admin'
                    WHEN dflt.held THEN 'the identity is named by ' || array_to_string(
                        ARRAY(SELECT unnest(dflt.tenants) INTERSECT SELECT unnest(ident_keys) ORDER BY 1), ', ')
                    ELSE 'the job identity is not a tenant of the default role' END);
        ELSIF p_trace THEN
            steps := steps || jsonb_build_object('step', 'default', 'rule', 'R4', 'default', NULL,
                'gives', NULL, 'why', 'the data table has no default role');
        END IF;

        IF dflt.viewer_may_add THEN
            SELECT v.* INTO viewer
            FROM datatable_roles.viewer_roles_of(h.id, h.workspace, h.end_user_email) AS v;
            viewer_name := viewer.username;
            viewer_ids := viewer.ids;
            viewer_member := viewer_name IS NOT NULL;
            ids := ids || viewer_ids;
            IF p_trace THEN
                IF viewer_member THEN
                    viewer_keys := datatable_roles.member_keys(
                        h.workspace, viewer_name, viewer.email, viewer.incarnation);
                END IF;
                steps := steps || jsonb_build_object('step', 'viewer', 'rule',
                    CASE WHEN viewer_member THEN 'R3/R4' ELSE 'R9' END,
                    'viewer', h.end_user_email,
                    'member', viewer_member,
                    'why', CASE
                        WHEN h.end_user_email IS NULL THEN 'no viewer was recorded for this job'
                        WHEN NOT viewer_member THEN 'the viewer is not a member of the governing workspace (or is disabled, or shares the email with another member)'
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
                    WHEN NOT dflt.enabled
                        THEN format('the default role %s is disabled', quote_literal(h.default_role))
                    ELSE format('the job identity %s may not use the default role %s',
                        h.permissioned_as, quote_literal(h.default_role)) END,
                CASE WHEN h.end_user_email IS NULL THEN 'no viewer was recorded'
                    WHEN NOT coalesce(viewer_member, false) AND EXISTS (
                        SELECT FROM datatable_roles.directory_member_by_email(
                            h.workspace, h.end_user_email))
                        THEN 'no role of the map names anyone'
                    WHEN NOT coalesce(viewer_member, false)
                        THEN 'the viewer is not a member of the governing workspace'
                    ELSE 'the viewer is a tenant of no role' END);
            result.refused_hint := 'Name a role in the connection, set a default role the job identity may use, or add the viewer to a role''s tenants.';
        END IF;
    END IF;

    -- R6/R7: the login that holds exactly the result.
    IF result.refused_case IS NULL THEN
        IF is_admin AND h.admin_verifier IS NOT NULL
            AND NOT datatable_roles.verifier_is(h.admin_login, h.admin_verifier) THEN
            -- Never hand out a password known not to work.
            result.refused_case := 'admin_password';
            result.refused_message := format(
                'data table %s: the password of its admin login %s was changed outside the package',
                label, h.admin_login);
            result.refused_hint := 'Give the package the admin login''s password again: set_datatable_admin_password(workspace, name, admin_password).';
        ELSIF is_admin THEN
            result.role_ids := '{}';
            result.role_names := '{admin}';
            result.login_kind := 'admin';
            result.login := h.admin_login;
            result.password := h.admin_password;
        ELSE
            SELECT s.ids, s.names, l.kind, l.login, l.password
            INTO result.role_ids, result.role_names, result.login_kind, result.login, result.password
            FROM datatable_roles.roles_of(ids) AS s
            CROSS JOIN LATERAL datatable_roles.login_of_roles(h.dbname, s.ids) AS l;
        END IF;
    END IF;
    IF p_trace THEN
        result.steps := steps;
    END IF;
    RETURN result;
END;
$$;
