-- What preview_datatable_role_change shows: its report, from the change
-- (p_kind), the role, the data table a removal edits, and the notes the
-- rolled-back change left (p_notes: the logins it would retire, with their
-- sessions, and the changes it would send to other servers).
CREATE OR REPLACE FUNCTION datatable_roles.preview_report(
    p_kind text, p_target datatable_roles.catalog_role, p_entry datatable_roles.datatable,
    p_notes jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    report jsonb;
BEGIN
    report := jsonb_build_object('change', p_kind, 'role', p_target.name);
    IF p_kind = 'remove' THEN
        report := report || jsonb_build_object('workspace', p_entry.workspace,
            'datatable', p_entry.name);
    END IF;

    -- The data tables: the one a removal edits; every map holding the role for
    -- a disable or a drop; none for a retirement, which edits no map.
    report := report || jsonb_build_object('datatables', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'workspace', d.workspace, 'name', d.name, 'dbname', d.dbname,
            'default', d.default_role = p_target.name,
            'references', to_jsonb(ARRAY(
                SELECT x.workspace || '/' || x.name FROM datatable_roles.datatable AS x
                WHERE x.governing_id = d.id ORDER BY 1)))
            ORDER BY d.workspace, d.name)
        FROM datatable_roles.datatable AS d
        JOIN datatable_roles.datatable_role AS m ON m.datatable_id = d.id AND m.role_id = p_target.id
        WHERE p_kind IN ('disable', 'drop') OR p_kind = 'remove' AND d.id = p_entry.id), '[]'));

    -- The logins the change retires, in its order, each with its sessions.
    report := report || jsonb_build_object('logins', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'login', n.note ->> 'retires', 'dbname', s.dbname, 'server', s.server,
            'roles', to_jsonb(ARRAY(
                SELECT coalesce(r.name, '#' || u.role_id || ' (dropped)')
                FROM unnest(s.role_ids) AS u (role_id)
                LEFT JOIN datatable_roles.catalog_role AS r ON r.id = u.role_id
                ORDER BY coalesce(r.name, '#' || u.role_id || ' (dropped)') COLLATE "C")),
            'live', (n.note ->> 'live')::boolean,
            'pids', coalesce((
                SELECT jsonb_agg(p.pid ORDER BY p.pid::integer)
                FROM jsonb_array_elements(p_notes) AS e (note)
                CROSS JOIN LATERAL jsonb_array_elements(e.note -> 'pids') AS p (pid)
                WHERE e.note ->> 'sessions_of' = n.note ->> 'retires'), '[]'))
            ORDER BY n.i)
        FROM jsonb_array_elements(p_notes) WITH ORDINALITY AS n (note, i)
        LEFT JOIN datatable_roles.datatable_role_set AS s ON s.login = n.note ->> 'retires'
        WHERE n.note ? 'retires'), '[]'));
    report := report || jsonb_build_object('retired', (
        SELECT count(*) FROM jsonb_array_elements(report -> 'logins') AS l (login)
        WHERE (l.login ->> 'live')::boolean));
    IF p_kind = 'drop' THEN
        report := report || jsonb_build_object(
            'role_sessions', coalesce((
                SELECT jsonb_agg(p.pid ORDER BY p.pid::integer)
                FROM jsonb_array_elements(p_notes) AS e (note)
                CROSS JOIN LATERAL jsonb_array_elements(e.note -> 'pids') AS p (pid)
                WHERE e.note ->> 'sessions_of' = p_target.name), '[]'),
            'objects_in', coalesce((
                SELECT jsonb_agg(jsonb_build_object('dbname', h.datname, 'moved_to', h.admin_login)
                    ORDER BY h.datname)
                FROM datatable_roles.databases_holding(p_target.name) AS h), '[]'));
    END IF;
    -- What it would send to other servers (their sessions are not read: a
    -- login there shows no pids).
    report := report || jsonb_build_object('server_changes', coalesce((
        SELECT jsonb_agg(n.note ORDER BY n.i)
        FROM jsonb_array_elements(p_notes) WITH ORDINALITY AS n (note, i)
        WHERE n.note ? 'server'), '[]'));
    RETURN report || jsonb_build_object('sessions', (
        SELECT jsonb_build_object('count', count(*),
            'pids', coalesce(jsonb_agg(p.pid ORDER BY p.pid::integer), '[]'))
        FROM jsonb_array_elements(p_notes) AS e (note)
        CROSS JOIN LATERAL jsonb_array_elements(e.note -> 'pids') AS p (pid)));
END;
$$;
