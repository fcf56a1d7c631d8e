-- Operating the package: the worker role's grants, and the status report
-- behind `datatable-roles status`.

-- A platform role may run one kind of the package's calls and nothing else:
-- 'worker', the run-time calls (record_job_start, resolve, explain, the
-- cache path) and the roles a member may use (usable_datatable_roles: less
-- than a worker learns by recording a job as that member and explaining
-- it); 'directory', the directory calls of mirror mode, the delete hook and
-- the reconciliation; 'acl', the grants editor (90_acl.sql). Plus CONNECT
-- on this database (bootstrap
-- took it from PUBLIC). It never gets the tables, so it can read no
-- password column. The role is remembered (worker_role), so that every
-- upgrade grants again what a function dropped and made anew has lost.
CREATE OR REPLACE FUNCTION datatable_roles.grant_calls(p_role text, p_kind text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require(p_role, 'role');
    IF p_kind IS NULL OR p_kind NOT IN ('worker', 'directory', 'acl') THEN
        RAISE EXCEPTION 'invalid kind of calls %', quote_literal(left(p_kind, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Use worker, directory or acl.';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = p_role) THEN
        RAISE EXCEPTION 'role % does not exist', quote_literal(left(p_role, 80))
            USING ERRCODE = 'no_data_found';
    END IF;
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', CASE p_kind
        WHEN 'worker' THEN 'public.record_job_start(uuid, text, text, text, text, uuid),'
            || ' public.resolve_datatable_role(uuid, text, text, boolean),'
            || ' public.explain_datatable_role(uuid, text, text),'
            || ' public.cached_result_path(uuid, text, jsonb),'
            || ' public.usable_datatable_roles(text, text, text)'
        WHEN 'directory' THEN 'public.add_workspace(text),'
            || ' public.add_workspace_user(text, text, text, boolean),'
            || ' public.remove_workspace_user(text, text),'
            || ' public.add_group_member(text, text, text),'
            || ' public.remove_group_member(text, text, text),'
            || ' public.set_folder_access(text, text, text, text),'
            || ' public.sync_workspace_directory(text, jsonb),'
            || ' public.forget_workspace_user(text, text),'
            || ' public.reconcile_directory()'
        WHEN 'acl' THEN 'public.datatable_acl(text, text, jsonb),'
            || ' public.plan_datatable_acl(text, text, jsonb, jsonb),'
            || ' public.apply_datatable_acl(text, text, jsonb, jsonb, text[])'
        END, p_role);
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), p_role);
    INSERT INTO datatable_roles.worker_role (name, kind) VALUES (p_role, p_kind)
    ON CONFLICT DO NOTHING;
END;
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

-- Everything `datatable-roles status` shows, as jsonb, read as the owner. No
-- password is read, only whether one is set. Shape (docs/sql-api.md):
-- instance_id, unused_after, touch_every, clock_offset, now; datatables (a
-- reference: workspace, name, reference_to; otherwise workspace, name,
-- dbname, admin_login, default_role (NULL for none), default_is_admin, roles:
-- admin first, then by name); catalog_roles; set_logins, most recent first.
CREATE OR REPLACE FUNCTION datatable_roles.status_report()
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
SET jit = off
AS $$
    SELECT jsonb_build_object(
        'instance_id', st.instance_id,
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
                'admin_login', d.admin_login,
                'admin_password_ok', CASE WHEN d.admin_verifier IS NOT NULL
                    THEN datatable_roles.verifier_is(d.admin_login, d.admin_verifier) END,
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
                'rotated_at', s.rotated_at,
                'intact', s.password <> ''
                    AND EXISTS (
                        SELECT FROM datatable_roles.login_intact(s.login, s.verifier, s.dbname)),
                'stale', EXISTS (SELECT FROM datatable_roles.is_sweepable(s.last_used_at,
                    s.password, s.dbname, s.role_ids, datatable_roles.sweep_cutoff(null))))
                ORDER BY s.last_used_at DESC, s.login)
            FROM datatable_roles.datatable_role_set AS s), '[]'::jsonb))
    FROM datatable_roles.settings AS st, datatable_roles.clock_now() AS c (now)
$$;
