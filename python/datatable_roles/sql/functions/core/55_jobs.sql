-- The jobs' inputs: who a job's viewer is (record_job_start).

-- The viewer a job records, from its origin (record_job_start): the caller
-- for app, run and preview; the recorded viewer of the job behind a token
-- for job_token; nobody for schedule, trigger and agent_tool. Refuses an
-- unknown origin and an argument the origin does not use (22023), so that
-- nothing else can supply a viewer.
CREATE OR REPLACE FUNCTION datatable_roles.job_viewer(
    p_workspace text, p_origin text, p_caller_email text, p_token_job_id uuid
)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    viewer text;
    parent datatable_roles.job_perms;
BEGIN
    IF p_origin NOT IN ('app', 'run', 'preview', 'job_token', 'schedule', 'trigger', 'agent_tool') THEN
        RAISE EXCEPTION 'invalid origin %', quote_literal(left(p_origin, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use app, run, preview, job_token, schedule, trigger or agent_tool.';
    END IF;
    IF p_token_job_id IS NOT NULL AND p_origin <> 'job_token' THEN
        RAISE EXCEPTION 'token_job_id is only for origin job_token'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_caller_email IS NOT NULL
        AND p_origin NOT IN ('app', 'run', 'preview') THEN
        RAISE EXCEPTION 'a % job has no caller: caller_email must be NULL', p_origin
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    CASE p_origin
        WHEN 'app' THEN
            IF p_caller_email IS NOT NULL THEN
                PERFORM datatable_roles.check_email(p_caller_email);
            END IF;
            viewer := p_caller_email;
        WHEN 'run', 'preview' THEN
            PERFORM datatable_roles.check_email(p_caller_email);
            viewer := p_caller_email;
        WHEN 'job_token' THEN
            PERFORM datatable_roles.require(p_token_job_id, 'token_job_id');
            SELECT p.* INTO parent FROM datatable_roles.job_perms AS p
            WHERE p.job_id = p_token_job_id;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'job % behind the token was never recorded', p_token_job_id
                    USING ERRCODE = 'no_data_found';
            END IF;
            IF parent.workspace <> p_workspace THEN
                RAISE EXCEPTION 'job % behind the token belongs to another workspace', p_token_job_id
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            viewer := parent.end_user_email;
        ELSE
            viewer := NULL;
    END CASE;

    IF viewer IS NOT NULL AND NOT EXISTS (
        SELECT FROM datatable_roles.directory_member_by_email(p_workspace, viewer)
    ) THEN
        -- Recorded as given (the viewer of a data table another workspace
        -- governs is looked up there); explain would show it only later.
        RAISE NOTICE 'the viewer % is not a member of workspace %: viewer roles of its data tables will not apply',
            quote_literal(left(viewer, 80)), quote_literal(p_workspace)
            USING HINT = 'A viewer is found by email (any case); a disabled member, or an email two members share, names no one.';
    END IF;
    RETURN viewer;
END;
$$;
