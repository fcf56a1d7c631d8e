-- The table of entry points, datatable_roles.entry_point: each api/ file
-- below records its own calls and the kind of caller they are for, and
-- grant_calls grants a platform role exactly the rows of one kind. The
-- post-apply hook empties the table before the function files run.

-- A function's regprocedure text, schema-qualified whatever the caller's
-- search_path (so that grant_calls can read it back under its own).
CREATE OR REPLACE FUNCTION datatable_roles.signature_of(p_function regprocedure)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p_function::text
$$;

-- A platform role may run one kind of the package's calls and nothing else:
-- the entry_point rows of that kind. 'worker' (95_worker.sql): the run-time
-- calls and the roles a member may use (usable_datatable_roles: less than a
-- worker learns by recording a job as that member and explaining it);
-- 'directory' (96_directory.sql): the directory calls of mirror mode, the
-- delete hook and the reconciliation; 'acl' (97_acl_editor.sql): the grants
-- editor. 'owner' rows are never granted. Plus CONNECT on this database
-- (bootstrap took it from PUBLIC). It never gets the tables, so it can read
-- no password column. The role is remembered (worker_role), so that every
-- upgrade grants again what a function dropped and made anew has lost.
CREATE OR REPLACE FUNCTION datatable_roles.grant_calls(p_role text, p_kind text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    calls text;
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
    -- Exactly the entry points of the kind (api/95-97), in one statement.
    SELECT string_agg(e.signature, ', ' ORDER BY e.signature) INTO calls
    FROM datatable_roles.entry_point AS e WHERE e.caller = p_kind;
    IF calls IS NULL THEN  -- only before the post-apply hook has loaded the api files
        RAISE EXCEPTION 'no % calls are recorded', p_kind
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run datatable-roles migrate as the package owner.';
    END IF;
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', calls, p_role);
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), p_role);
    INSERT INTO datatable_roles.worker_role (name, kind) VALUES (p_role, p_kind)
    ON CONFLICT DO NOTHING;
END;
$$;
