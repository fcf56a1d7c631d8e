-- depends: 0007_resolution
-- The worker role may run the run-time calls and nothing else. The package
-- owner grants them to the platform's worker role with
--     SELECT datatable_roles.grant_worker('<worker role>');
-- It never gets the tables, so it can read no password column directly.
CREATE FUNCTION datatable_roles.grant_worker(p_worker text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require(p_worker, 'worker');
    IF NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = p_worker) THEN
        RAISE EXCEPTION 'role % does not exist', quote_literal(left(p_worker, 80))
            USING ERRCODE = 'no_data_found';
    END IF;
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.record_job_start(uuid, text, text, text, text, uuid),'
        || ' public.resolve_datatable_role(uuid, text, text, boolean),'
        || ' public.explain_datatable_role(uuid, text, text),'
        || ' public.cached_result_path(uuid, text, jsonb) TO %I', p_worker);
END;
$$;
