-- The grants editor's calls: read, plan and apply what each role may touch
-- in a data table's database (docs/acl.md). Granted by
-- datatable_roles.grant_acl_editor; the owner may run them too. Each is
-- SECURITY DEFINER; what they run in the data table's database is in
-- remote/90_acl_read.sql and 91_acl_plan.sql.

-- datatable_acl: the owner, grants, default privileges and children of a
-- target in a data table's database, read through its admin login. Roles
-- are named as the package names them (admin, catalog roles, anything else
-- by its own name, PUBLIC). docs/acl.md.
CREATE OR REPLACE FUNCTION public.datatable_acl(workspace text, datatable text, target jsonb)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable := datatable_roles.acl_entry(datatable_acl.workspace,
        datatable_acl.datatable);
    t jsonb := datatable_roles.acl_target(datatable_acl.target);
    tkind text := datatable_roles.acl_target_kind(t);
    snap jsonb := datatable_roles.acl_snapshot(entry, t, NULL);
    obj jsonb;
    result jsonb;
BEGIN
    obj := CASE tkind WHEN 'database' THEN snap -> 'database' WHEN 'schema' THEN snap -> 'schema'
        ELSE snap -> 'relations' -> 0 END;
    result := jsonb_build_object(
        'datatable', entry.workspace || '/' || entry.name,
        'database', entry.dbname,
        'target', t,
        'kind', CASE WHEN tkind = 'table' THEN datatable_roles.acl_relkind_name(obj ->> 'relkind')
            ELSE tkind END,
        'owner', datatable_roles.acl_label(entry, obj ->> 'owner'),
        'grants', datatable_roles.acl_grants(entry, obj -> 'grants'),
        'server_version_num', (snap ->> 'version')::integer);
    IF obj ->> 'owner' = 'pg_database_owner' THEN
        result := result || jsonb_build_object('owner_note',
            'owned by pg_database_owner, which is the database''s owner: the admin login');
    END IF;
    IF tkind = 'table' THEN
        result := result || jsonb_build_object(
            'row_security', (obj ->> 'row_security')::boolean,
            'force_row_security', (obj ->> 'force_row_security')::boolean,
            'security_invoker', (obj ->> 'security_invoker')::boolean,
            'default_privileges', '[]'::jsonb, 'children', '[]'::jsonb);
        RETURN result;
    END IF;
    result := result || jsonb_build_object('default_privileges', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'for_role', datatable_roles.acl_label(entry, a ->> 'for_role'),
            'kind', CASE a ->> 'objtype' WHEN 'r' THEN 'tables' WHEN 'S' THEN 'sequences'
                WHEN 'f' THEN 'functions' WHEN 'T' THEN 'types' WHEN 'n' THEN 'schemas'
                ELSE a ->> 'objtype' END,
            'grants', datatable_roles.acl_grants(entry, a -> 'grants')))
        FROM jsonb_array_elements(snap -> 'default_acl') AS a), '[]'::jsonb));
    IF tkind = 'database' THEN
        result := result || jsonb_build_object('children', coalesce((
            SELECT jsonb_agg(jsonb_build_object('schema', s ->> 'name',
                'owner', datatable_roles.acl_label(entry, s ->> 'owner')))
            FROM jsonb_array_elements(snap -> 'schemas') AS s), '[]'::jsonb));
    ELSE
        result := result || jsonb_build_object('children', coalesce((
            SELECT jsonb_agg(jsonb_build_object('table', r ->> 'name',
                'kind', datatable_roles.acl_relkind_name(r ->> 'relkind'),
                'owner', datatable_roles.acl_label(entry, r ->> 'owner'),
                'row_security', (r ->> 'row_security')::boolean))
            FROM jsonb_array_elements(snap -> 'relations') AS r), '[]'::jsonb));
    END IF;
    RETURN result;
END;
$$;

-- plan_datatable_acl: the statements one change of a target takes, and its
-- warnings; changes nothing (docs/acl.md).
CREATE OR REPLACE FUNCTION public.plan_datatable_acl(
    workspace text, datatable text, target jsonb, change jsonb
)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    RETURN datatable_roles.acl_plan(
        datatable_roles.acl_entry(plan_datatable_acl.workspace, plan_datatable_acl.datatable),
        plan_datatable_acl.target, plan_datatable_acl.change);
END;
$$;

-- apply_datatable_acl: plans the change again, refuses (55000, CONSTRAINT
-- plan_changed) unless the plan's statements are exactly `statements`,
-- records the change in datatable_roles.acl_change, then runs the statements
-- in one transaction of the data table's database, as the link login (on
-- another server, as the admin login, docs/servers.md). The
-- audit row is written first, the remote commit comes last: a failure
-- anywhere before it leaves neither. Call it in autocommit: a caller that
-- rolls back its own transaction afterwards loses the audit row of a change
-- that stays applied (docs/acl.md).
CREATE OR REPLACE FUNCTION public.apply_datatable_acl(
    workspace text, datatable text, target jsonb, change jsonb, statements text[]
)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable;
    plan jsonb;
    planned text [];
    first_difference integer;
    audit_id bigint;
    conn text;
    run_as text [];
    acting_for text [];
    n integer := 0;
BEGIN
    PERFORM datatable_roles.require(apply_datatable_acl.statements, 'statements');
    entry := datatable_roles.acl_entry(apply_datatable_acl.workspace, apply_datatable_acl.datatable);
    -- One apply at a time per database: the second plans after the first committed.
    PERFORM pg_advisory_xact_lock(hashtextextended('datatable_roles.acl:' || entry.dbname, 0));
    -- A GRANT or REVOKE on the database rewrites its access list, as first
    -- uses and the sweep do: PostgreSQL fails one of two such writers at once
    -- with XX000 "tuple concurrently updated" (docs/lifecycle.md, locks).
    PERFORM datatable_roles.lock_database_access(entry.dbname);
    plan := datatable_roles.acl_plan(entry, apply_datatable_acl.target, apply_datatable_acl.change);
    planned := ARRAY(SELECT jsonb_array_elements_text(plan -> 'statements'));
    run_as := ARRAY(SELECT jsonb_array_elements_text(plan -> 'run_as'));
    IF planned IS DISTINCT FROM apply_datatable_acl.statements THEN
        SELECT min(i) INTO first_difference
        FROM generate_series(1, greatest(cardinality(planned), cardinality(apply_datatable_acl.statements))) AS i
        WHERE planned[i] IS DISTINCT FROM apply_datatable_acl.statements[i];
        RAISE EXCEPTION 'the plan changed since it was shown: nothing applied'
            USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'plan_changed',
                  DETAIL = format('%s statements were shown, %s are planned now; they differ from statement %s on.',
                      cardinality(apply_datatable_acl.statements), cardinality(planned), first_difference),
                  HINT = 'Plan again with plan_datatable_acl, review the statements and warnings, and apply those.';
    END IF;
    IF cardinality(planned) = 0 THEN
        RETURN plan || jsonb_build_object('applied', 0, 'audit_id', NULL);
    END IF;
    INSERT INTO datatable_roles.acl_change (
        applied_by, workspace, datatable, dbname, target, change, statements, warnings
    )
    VALUES (
        coalesce(nullif(current_setting('role'), 'none'), session_user),
        entry.workspace, entry.name, entry.dbname, plan -> 'target', plan -> 'change', planned,
        plan -> 'warnings'
    )
    RETURNING id INTO audit_id;
    -- On another server the admin login applies: the manager makes it a
    -- member of the roles the statements run as (and of a new owner), for
    -- this apply only (docs/servers.md).
    acting_for := datatable_roles.acl_acting_for(entry, plan);
    IF acting_for <> '{}' THEN
        PERFORM datatable_roles.exec_as_manager(entry.server,
            datatable_roles.membership_statement(acting_for, entry.admin_login, true));
    END IF;
    conn := datatable_roles.acl_connect(entry, true);
    BEGIN
        PERFORM datatable_roles.session_exec(conn,
            'SET ROLE NONE; SET search_path = pg_catalog, pg_temp; BEGIN');
        FOR i IN 1 .. cardinality(planned) LOOP
            -- As the object's owner, so that PostgreSQL records the owner as
            -- grantor and a REVOKE removes the owner's grant (docs/acl.md).
            IF run_as[i] IS NOT NULL THEN
                PERFORM datatable_roles.session_exec(conn, format('SET ROLE %I', run_as[i]));
            END IF;
            PERFORM datatable_roles.session_exec(conn, planned[i]);
            PERFORM datatable_roles.session_exec(conn, 'SET ROLE NONE');
            n := n + 1;
        END LOOP;
        PERFORM datatable_roles.fault_point('acl:before_remote_commit');
        PERFORM datatable_roles.session_exec(conn, 'COMMIT');
    EXCEPTION WHEN OTHERS THEN
        -- Closing the session rolls back whatever ran there.
        PERFORM datatable_roles.acl_disconnect();
        PERFORM datatable_roles.acl_end_acting_for(entry, acting_for);
        RAISE;
    END;
    PERFORM datatable_roles.acl_disconnect();
    PERFORM datatable_roles.acl_end_acting_for(entry, acting_for);
    RETURN plan || jsonb_build_object('applied', n, 'audit_id', audit_id);
END;
$$;

-- The acl calls (datatable_roles.entry_point), read by grant_calls,
-- the doctor and tests/test_docs_agree.py. A typo fails here.
INSERT INTO datatable_roles.entry_point (signature, caller)
SELECT datatable_roles.signature_of(f.f) AS signature, 'acl' AS caller
FROM unnest(ARRAY[
    'public.datatable_acl(text,text,jsonb)',
    'public.plan_datatable_acl(text,text,jsonb,jsonb)',
    'public.apply_datatable_acl(text,text,jsonb,jsonb,text[])'
]::regprocedure[]) AS f (f);
