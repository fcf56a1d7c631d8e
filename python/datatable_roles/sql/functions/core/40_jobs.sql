-- Runs: who a job runs as and who watches it (docs/rules.md), and the result
-- cache key that belongs to one viewer.

-- Records a job once. The viewer (end_user_email) comes from the origin:
--   app                the session behind the request: caller_email, or NULL (anonymous)
--   run, preview       the caller: caller_email (required)
--   job_token          the recorded viewer of token_job_id (looked up, never passed)
--   schedule, trigger, agent_tool   nobody
-- An argument the origin does not use must be NULL, so nothing else can
-- supply a viewer. The identity's admin flag, groups and folders are captured
-- now. Returns the recorded viewer.
CREATE OR REPLACE FUNCTION public.record_job_start(
    job_id uuid,
    workspace text,
    permissioned_as text,
    origin text,
    caller_email text DEFAULT null,
    token_job_id uuid DEFAULT null
)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    ws text := record_job_start.workspace;
    identity_name text;
    identity record;
    identity_groups text [];
    identity_folders text [];
    viewer text;
    parent datatable_roles.job_perms;
BEGIN
    PERFORM datatable_roles.require(record_job_start.job_id, 'job_id');
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.require(record_job_start.permissioned_as, 'permissioned_as');
    PERFORM datatable_roles.require(record_job_start.origin, 'origin');
    IF record_job_start.permissioned_as !~ '^u/' THEN
        RAISE EXCEPTION 'invalid permissioned_as %', quote_literal(left(record_job_start.permissioned_as, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'A job identity is u/<username>.';
    END IF;
    identity_name := substr(record_job_start.permissioned_as, 3);
    PERFORM datatable_roles.check_name('user', identity_name);
    SELECT m.* INTO identity FROM datatable_roles.require_member(ws, identity_name) AS m;

    IF record_job_start.origin NOT IN ('app', 'run', 'preview', 'job_token', 'schedule', 'trigger', 'agent_tool') THEN
        RAISE EXCEPTION 'invalid origin %', quote_literal(left(record_job_start.origin, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use app, run, preview, job_token, schedule, trigger or agent_tool.';
    END IF;
    IF record_job_start.token_job_id IS NOT NULL AND record_job_start.origin <> 'job_token' THEN
        RAISE EXCEPTION 'token_job_id is only for origin job_token'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF record_job_start.caller_email IS NOT NULL
        AND record_job_start.origin NOT IN ('app', 'run', 'preview') THEN
        RAISE EXCEPTION 'a % job has no caller: caller_email must be NULL', record_job_start.origin
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    CASE record_job_start.origin
        WHEN 'app' THEN
            IF record_job_start.caller_email IS NOT NULL THEN
                PERFORM datatable_roles.check_email(record_job_start.caller_email);
            END IF;
            viewer := record_job_start.caller_email;
        WHEN 'run', 'preview' THEN
            PERFORM datatable_roles.check_email(record_job_start.caller_email);
            viewer := record_job_start.caller_email;
        WHEN 'job_token' THEN
            PERFORM datatable_roles.require(record_job_start.token_job_id, 'token_job_id');
            SELECT p.* INTO parent FROM datatable_roles.job_perms AS p
            WHERE p.job_id = record_job_start.token_job_id;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'job % behind the token was never recorded', record_job_start.token_job_id
                    USING ERRCODE = 'no_data_found';
            END IF;
            IF parent.workspace <> ws THEN
                RAISE EXCEPTION 'job % behind the token belongs to another workspace', record_job_start.token_job_id
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            viewer := parent.end_user_email;
        ELSE
            viewer := NULL;
    END CASE;

    IF viewer IS NOT NULL AND NOT EXISTS (
        SELECT FROM datatable_roles.directory_member_by_email(ws, viewer)
    ) THEN
        -- Recorded as given (the viewer of a data table another workspace
        -- governs is looked up there); explain would show it only later.
        RAISE NOTICE 'the viewer % is not a member of workspace %: viewer roles of its data tables will not apply',
            quote_literal(left(viewer, 80)), quote_literal(ws)
            USING HINT = 'A viewer is found by email (any case); a disabled member, or an email two members share, names no one.';
    END IF;
    IF EXISTS (SELECT FROM datatable_roles.job_perms AS p WHERE p.job_id = record_job_start.job_id) THEN
        RAISE EXCEPTION 'job % is already recorded; its viewer cannot change', record_job_start.job_id
            USING ERRCODE = 'unique_violation';
    END IF;

    -- A username given to someone else since u/<it> was written: its keys
    -- named the one before, and are forgotten now, before they are captured.
    IF EXISTS (SELECT FROM datatable_roles.user_key_stale(ws, identity_name, identity.incarnation)) THEN
        PERFORM public.forget_workspace_user(ws, identity_name);
    END IF;
    -- The identity's groups and folders (member_keys' g/ and f/ keys), as
    -- statements of this function so that their plans are kept.
    identity_groups := ARRAY(
        SELECT g FROM datatable_roles.directory_groups(ws, identity_name, identity.email) AS g
        ORDER BY g);
    identity_folders := ARRAY(
        SELECT f FROM datatable_roles.directory_folders(ws, identity_name, identity_groups) AS f
        ORDER BY f);
    INSERT INTO datatable_roles.job_perms (
        job_id, workspace, permissioned_as, email, is_admin, groups, folders,
        end_user_email, origin, token_job_id
    ) VALUES (
        record_job_start.job_id, ws, record_job_start.permissioned_as, identity.email, identity.is_admin,
        identity_groups, identity_folders,
        viewer, record_job_start.origin, record_job_start.token_job_id
    );
    RETURN viewer;
END;
$$;

-- A result cache path that belongs to the run's job identity and recorded
-- viewer (two schedules of one script with the same args, run as two
-- identities, may resolve differently, so they never share an entry): the
-- same inputs give the same path, args are hashed independent of key order
-- (jsonb keeps keys sorted), and runs of one identity with no viewer share
-- one entry.
CREATE OR REPLACE FUNCTION public.cached_result_path(job_id uuid, runnable text, args jsonb)
RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    job datatable_roles.job_perms;
BEGIN
    PERFORM datatable_roles.require(cached_result_path.job_id, 'job_id');
    PERFORM datatable_roles.require(cached_result_path.runnable, 'runnable');
    SELECT p.* INTO job FROM datatable_roles.job_perms AS p WHERE p.job_id = cached_result_path.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % was never recorded', cached_result_path.job_id
            USING ERRCODE = 'no_data_found', HINT = 'Call record_job_start first.';
    END IF;
    RETURN format('%s/cache/%s', job.workspace, encode(sha256(convert_to(
        jsonb_build_array(
            job.workspace, cached_result_path.runnable,
            coalesce(cached_result_path.args, 'null'::jsonb), job.permissioned_as,
            lower(job.end_user_email)
        )::text, 'UTF8'
    )), 'hex'));
END;
$$;
