-- The roles a caller may use, and what a change to the role map would do
-- before it is made (docs/sql-api.md, "Roles a member may use, and
-- previews").

-- The roles a member may name on a data table (R1), and what a connection
-- naming no role would give a job run as u/<username>: with no viewer who
-- adds a role ('default'), and with the member as the job's own viewer
-- ('default_as_viewer'). Built of the rules' own pieces (60_rules.sql):
-- may_use for R1, default_of for the default (R2-R4, R10), viewer_roles_of
-- for the viewer (R9), roles_of for the sorted names. The identity is the
-- member's now, as record_job_start would capture it; under a reference it
-- is looked up by email in the governing workspace, as decide() does. No
-- tenant key and no other member is shown.
CREATE OR REPLACE FUNCTION public.usable_datatable_roles(
    workspace text, datatable text, username text
)
RETURNS TABLE (role text, source text, roles text[], rule text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable;
    gov datatable_roles.datatable;
    member record;
    found_user record;
    ident_admin boolean;
    ident_keys text [];
    dflt record;
    held_ids bigint [] := '{}'::bigint [];
    viewer_ids bigint [] := '{}'::bigint [];
    default_name text;
    alone text [];
    with_viewer text [];
BEGIN
    entry := datatable_roles.require_datatable(usable_datatable_roles.workspace,
        usable_datatable_roles.datatable);
    PERFORM datatable_roles.check_name('user', usable_datatable_roles.username);
    SELECT m.* INTO member
    FROM datatable_roles.require_member(usable_datatable_roles.workspace,
        usable_datatable_roles.username) AS m;
    SELECT g.* INTO gov FROM datatable_roles.datatable AS g
    WHERE g.id = coalesce(entry.governing_id, entry.id);

    -- The identity in the governing workspace (docs/rules.md, Inputs).
    IF gov.workspace = entry.workspace THEN
        ident_admin := member.is_admin;
        ident_keys := datatable_roles.member_keys(entry.workspace, member.username,
            member.email, member.incarnation);
    ELSE
        SELECT m.* INTO found_user
        FROM datatable_roles.directory_member_by_email(gov.workspace, member.email) AS m;
        ident_admin := FOUND AND found_user.is_admin;
        ident_keys := CASE WHEN FOUND THEN datatable_roles.member_keys(gov.workspace,
            found_user.username, found_user.email, found_user.incarnation) ELSE '{}' END;
    END IF;

    -- R1: admin (always in the map), then each enabled role of the map the
    -- identity may use, by name.
    RETURN QUERY
    SELECT u.name, 'named'::text, array[u.name], 'R1'::text
    FROM (
        SELECT 'admin'::text AS name, 0 AS rank
        WHERE datatable_roles.may_use(ident_admin, ident_keys, gov.admin_tenants)
        UNION ALL
        SELECT r.name, 1
        FROM datatable_roles.datatable_role AS m
        JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
        WHERE m.datatable_id = gov.id AND r.enabled
            AND datatable_roles.may_use(ident_admin, ident_keys, m.tenants)
    ) AS u
    ORDER BY u.rank, u.name COLLATE "C";

    -- No role named: R2, or R3/R4 with the viewer (R9, R10); R5 when empty.
    IF gov.default_role = 'admin' THEN
        RETURN QUERY SELECT 'admin'::text, 'default'::text, '{admin}'::text [], 'R2'::text;
        RETURN QUERY SELECT 'admin'::text, 'default_as_viewer'::text, '{admin}'::text [],
            'R2'::text;
        RETURN;
    END IF;
    SELECT d.* INTO dflt
    FROM datatable_roles.default_of(gov.id, gov.default_role, ident_admin, ident_keys) AS d;
    IF dflt.held THEN
        held_ids := array[dflt.id];
    END IF;
    IF dflt.viewer_may_add THEN
        SELECT v.ids INTO viewer_ids
        FROM datatable_roles.viewer_roles_of(gov.id, gov.workspace, member.email) AS v;
    END IF;
    default_name := nullif(gov.default_role, datatable_roles.no_default());
    SELECT s.names INTO alone FROM datatable_roles.roles_of(held_ids) AS s;
    SELECT s.names INTO with_viewer FROM datatable_roles.roles_of(held_ids || viewer_ids) AS s;
    RETURN QUERY SELECT default_name, 'default'::text, nullif(alone, '{}'),
        CASE WHEN alone = '{}' THEN 'R5' ELSE 'R3' END;
    RETURN QUERY SELECT default_name, 'default_as_viewer'::text, nullif(with_viewer, '{}'),
        CASE WHEN with_viewer = '{}' THEN 'R5' WHEN default_name IS NULL THEN 'R4' ELSE 'R3' END;
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
    report jsonb;
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
    report := jsonb_build_object('change', kind, 'role', target.name);
    IF kind = 'remove' THEN
        report := report || jsonb_build_object('workspace', entry.workspace,
            'datatable', entry.name);
    END IF;

    -- The data tables: the one a removal edits; every map holding the role for
    -- a disable or a drop; none for a retirement, which edits no map.
    report := report || jsonb_build_object('datatables', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'workspace', d.workspace, 'name', d.name, 'dbname', d.dbname,
            'default', d.default_role = target.name,
            'references', to_jsonb(ARRAY(
                SELECT x.workspace || '/' || x.name FROM datatable_roles.datatable AS x
                WHERE x.governing_id = d.id ORDER BY 1)))
            ORDER BY d.workspace, d.name)
        FROM datatable_roles.datatable AS d
        JOIN datatable_roles.datatable_role AS m ON m.datatable_id = d.id AND m.role_id = target.id
        WHERE kind IN ('disable', 'drop') OR kind = 'remove' AND d.id = entry.id), '[]'));

    -- The logins the change retires, in its order, each with its sessions.
    report := report || jsonb_build_object('logins', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'login', n.note ->> 'retires', 'dbname', s.dbname,
            'roles', to_jsonb(ARRAY(
                SELECT coalesce(r.name, '#' || u.role_id || ' (dropped)')
                FROM unnest(s.role_ids) AS u (role_id)
                LEFT JOIN datatable_roles.catalog_role AS r ON r.id = u.role_id
                ORDER BY coalesce(r.name, '#' || u.role_id || ' (dropped)') COLLATE "C")),
            'live', (n.note ->> 'live')::boolean,
            'pids', coalesce((
                SELECT jsonb_agg(p.pid ORDER BY p.pid::integer)
                FROM jsonb_array_elements(notes) AS e (note)
                CROSS JOIN LATERAL jsonb_array_elements(e.note -> 'pids') AS p (pid)
                WHERE e.note ->> 'sessions_of' = n.note ->> 'retires'), '[]'))
            ORDER BY n.i)
        FROM jsonb_array_elements(notes) WITH ORDINALITY AS n (note, i)
        LEFT JOIN datatable_roles.datatable_role_set AS s ON s.login = n.note ->> 'retires'
        WHERE n.note ? 'retires'), '[]'));
    report := report || jsonb_build_object('retired', (
        SELECT count(*) FROM jsonb_array_elements(report -> 'logins') AS l (login)
        WHERE (l.login ->> 'live')::boolean));
    IF kind = 'drop' THEN
        report := report || jsonb_build_object(
            'role_sessions', coalesce((
                SELECT jsonb_agg(p.pid ORDER BY p.pid::integer)
                FROM jsonb_array_elements(notes) AS e (note)
                CROSS JOIN LATERAL jsonb_array_elements(e.note -> 'pids') AS p (pid)
                WHERE e.note ->> 'sessions_of' = target.name), '[]'),
            'objects_in', coalesce((
                SELECT jsonb_agg(jsonb_build_object('dbname', h.datname, 'moved_to', h.admin_login)
                    ORDER BY h.datname)
                FROM datatable_roles.databases_holding(target.name) AS h), '[]'));
    END IF;
    RETURN report || jsonb_build_object('sessions', (
        SELECT jsonb_build_object('count', count(*),
            'pids', coalesce(jsonb_agg(p.pid ORDER BY p.pid::integer), '[]'))
        FROM jsonb_array_elements(notes) AS e (note)
        CROSS JOIN LATERAL jsonb_array_elements(e.note -> 'pids') AS p (pid)));
END;
$$;
