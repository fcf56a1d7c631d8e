-- What a decision says, in words: explain's trace of the steps, and a
-- refusal's message and hint, rendered from the codes and facts decide()
-- returns (60_rules.sql). Nothing here decides: a decision is read, never
-- changed. resolve_datatable_role raises the refusal (refuse);
-- explain_datatable_role shows it (refusal_of, explain_steps).

-- The refusal of an admin login whose password was changed outside the
-- package (55000, CONSTRAINT admin_password): heal_refused_login raises it
-- once a real login attempt proved the stored password fails, and the
-- grants editor when its login as admin is refused. p_label is the data
-- table as the caller named it (workspace/name), NULL for the grants
-- editor's form of the message.
CREATE OR REPLACE FUNCTION datatable_roles.admin_password_refusal(
    p_label text, p_admin_login text, OUT message text, OUT hint text
)
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_label IS NULL
            THEN format('the password of admin login %s was changed outside the package',
                quote_literal(p_admin_login))
            ELSE format('data table %s: the password of its admin login %s was changed outside the package',
                p_label, p_admin_login) END,
        'Give the package the admin login''s password again: set_datatable_admin_password(workspace, name, admin_password).'
$$;

CREATE OR REPLACE FUNCTION datatable_roles.refuse_admin_password(p_label text, p_admin_login text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    SELECT a.message, a.hint INTO r
    FROM datatable_roles.admin_password_refusal(p_label, p_admin_login) AS a;
    RAISE EXCEPTION '%', r.message
        USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'admin_password',
              HINT = r.hint;
END;
$$;

-- The message and hint of a refused decision (d.refused_case set), for the
-- data table and role the caller named.
CREATE OR REPLACE FUNCTION datatable_roles.refusal_of(
    d datatable_roles.decision, p_datatable text, p_role text, OUT message text, OUT hint text
)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    g datatable_roles.datatable;
    label text := format('%s/%s', d.job_workspace, p_datatable);
BEGIN
    SELECT e.* INTO g FROM datatable_roles.datatable AS e WHERE e.id = d.datatable_id;
    CASE coalesce(d.refused_reason, d.refused_case)
    WHEN 'admin_not_tenant' THEN
        message := format('data table %s: role admin was named, and the job identity %s may not use it',
            label, d.permissioned_as);
        hint := 'Name a role the identity is a tenant of, or add the identity to the tenants of admin.';
    WHEN 'not_in_map' THEN
        message := format('data table %s: role %s was named, and it is not in the data table''s role map',
            label, quote_literal(left(p_role, 80)));
        hint := coalesce('Did you mean ' || quote_literal(datatable_roles.nearest_name(p_role, ARRAY(
                SELECT r.name FROM datatable_roles.datatable_role AS m
                JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                WHERE m.datatable_id = g.id) || 'admin'::text)) || '? ', '')
            || 'Name a role of the map, or add the role to the map with set_datatable_role_tenants.';
    WHEN 'disabled' THEN
        message := format('data table %s: role %s was named, and it is disabled', label,
            quote_literal(p_role));
        hint := 'Enable the role, or name another one.';
    WHEN 'not_tenant' THEN
        message := format('data table %s: role %s was named, and the job identity %s is not a tenant of it',
            label, quote_literal(p_role), d.permissioned_as);
        hint := 'Add the identity (or one of its groups or folders) to the role''s tenants, or name a role it may use.';
    WHEN 'R8' THEN
        message := format('data table %s: a migration naming no role runs as admin, and the job identity %s may not use admin',
            label, d.permissioned_as);
        hint := 'Name a role in the migration, or add the identity to the tenants of admin.';
    WHEN 'R5' THEN
        message := format('data table %s: no role remains for this connection (%s; %s)', label,
            CASE WHEN g.default_role = datatable_roles.no_default() THEN 'there is no default role'
                WHEN NOT d.default_enabled
                    THEN format('the default role %s is disabled', quote_literal(g.default_role))
                ELSE format('the job identity %s may not use the default role %s',
                    d.permissioned_as, quote_literal(g.default_role)) END,
            CASE WHEN d.viewer_email IS NULL THEN 'no viewer was recorded'
                WHEN NOT coalesce(d.viewer_member, false) AND EXISTS (
                    SELECT FROM datatable_roles.directory_member_by_email(g.workspace, d.viewer_email))
                    THEN 'no role of the map names anyone'
                WHEN NOT coalesce(d.viewer_member, false)
                    THEN 'the viewer is not a member of the governing workspace'
                ELSE 'the viewer is a tenant of no role' END);
        hint := 'Name a role in the connection, set a default role the job identity may use, or add the viewer to a role''s tenants.';
    END CASE;
END;
$$;

-- Raises a refused decision as resolve_datatable_role does: 42501 with the
-- rule in DETAIL and CONSTRAINT.
CREATE OR REPLACE FUNCTION datatable_roles.refuse(
    d datatable_roles.decision, p_datatable text, p_role text
)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    SELECT f.message, f.hint INTO r FROM datatable_roles.refusal_of(d, p_datatable, p_role) AS f;
    RAISE EXCEPTION '%', r.message
        USING ERRCODE = 'insufficient_privilege', HINT = r.hint,
              DETAIL = format('refused by rule %s', d.refused_case),
              CONSTRAINT = d.refused_case;
END;
$$;

-- explain's trace: one step for the identity, then one for each rule
-- decide() applied (d.reasons), with what it read.
CREATE OR REPLACE FUNCTION datatable_roles.explain_steps(
    d datatable_roles.decision, p_role text
)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    g datatable_roles.datatable;
    steps jsonb;
    code text;
BEGIN
    SELECT e.* INTO g FROM datatable_roles.datatable AS e WHERE e.id = d.datatable_id;
    steps := jsonb_build_array(jsonb_build_object(
        'step', 'identity', 'permissioned_as', d.permissioned_as,
        'governing', format('%s/%s', g.workspace, g.name), 'reference', d.is_reference,
        'workspace_admin', d.ident_admin, 'keys', to_jsonb(d.ident_keys),
        'memberships', CASE WHEN g.workspace = d.job_workspace THEN 'captured at job start'
            ELSE 'current, in the governing workspace' END));
    FOREACH code IN ARRAY d.reasons LOOP
        steps := steps || CASE code
            WHEN 'R1' THEN jsonb_build_object('step', 'named role', 'rule', 'R1', 'role', p_role,
                'usable', d.refused_case IS DISTINCT FROM 'R1')
            WHEN 'R8' THEN jsonb_build_object('step', 'migration', 'rule', 'R8',
                'admin', d.refused_case IS DISTINCT FROM 'R8')
            WHEN 'R2' THEN jsonb_build_object('step', 'default', 'rule', 'R2', 'default', 'admin',
                'gives', 'admin', 'why', 'a default of admin is used as is: no tenant check, no viewer lookup')
            WHEN 'R3' THEN jsonb_build_object('step', 'default', 'rule', 'R3',
                'default', g.default_role, 'gives', CASE WHEN d.default_held THEN g.default_role END,
                'why', CASE
                    WHEN d.default_id IS NULL THEN 'the default is not in the role map'
                    WHEN NOT d.default_enabled THEN 'the default role is disabled'
                    WHEN d.ident_admin THEN 'the job identity is a workspace admin'
                    WHEN d.default_held THEN 'the identity is named by ' || array_to_string(ARRAY(
                        SELECT unnest(d.default_tenants) INTERSECT SELECT unnest(d.ident_keys) ORDER BY 1), ', ')
                    ELSE 'the job identity is not a tenant of the default role' END)
            WHEN 'R4' THEN jsonb_build_object('step', 'default', 'rule', 'R4', 'default', NULL,
                'gives', NULL, 'why', 'the data table has no default role')
            WHEN 'R10' THEN jsonb_build_object('step', 'viewer', 'rule', 'R10',
                'why', 'no viewer could add a role here (only the default and admin have tenants): the viewer is not looked up')
            WHEN 'R3/R4' THEN datatable_roles.explain_viewer(d, g)
            WHEN 'R9' THEN datatable_roles.explain_viewer(d, g)
            ELSE '[]'::jsonb END;
    END LOOP;
    RETURN steps;
END;
$$;

-- explain's viewer step (R3/R4 a member, R9 none): the roles whose tenant
-- lists name the viewer, with the keys that name it.
CREATE OR REPLACE FUNCTION datatable_roles.explain_viewer(
    d datatable_roles.decision, g datatable_roles.datatable
)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object('step', 'viewer', 'rule', CASE WHEN d.viewer_member THEN 'R3/R4' ELSE 'R9' END,
        'viewer', d.viewer_email, 'member', d.viewer_member,
        'why', CASE
            WHEN d.viewer_email IS NULL THEN 'no viewer was recorded for this job'
            WHEN NOT d.viewer_member THEN 'the viewer is not a member of the governing workspace (or is disabled, or shares the email with another member)'
            ELSE 'tenant lists naming the viewer' END,
        'roles', coalesce((
            SELECT jsonb_agg(jsonb_build_object('role', r.name, 'named_by', to_jsonb(ARRAY(
                SELECT unnest(m.tenants) INTERSECT SELECT unnest(k.keys) ORDER BY 1)))
                ORDER BY r.name)
            FROM datatable_roles.datatable_role AS m
            JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
            WHERE m.datatable_id = g.id AND m.role_id = ANY(d.viewer_ids)), '[]'))
    FROM (
        SELECT CASE WHEN d.viewer_member THEN (
            SELECT datatable_roles.member_keys(g.workspace, v.username, v.email, v.incarnation)
            FROM datatable_roles.directory_member_by_email(g.workspace, d.viewer_email) AS v
        ) END AS keys
    ) AS k
$$;
