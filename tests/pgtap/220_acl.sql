-- The grants editor (docs/acl.md): an operator reads what the roles of a
-- data table may touch, plans one change, sees its statements and warnings,
-- and applies exactly those; the viewers of the role then reach the table
-- through the logins they resolve to, and nobody else does.
\set test t220
\ir lib/begin.psql

SELECT plan(38);

-- Workspace ws, data table main (database t220_dt, admin login t220_admin),
-- no default role: alice is a tenant of t220_emea, bob of t220_us.
SELECT tap.new_datatable_db('t220_dt', 't220_admin') AS admin_pw \gset
DO $$ BEGIN
    PERFORM add_workspace('ws');
    PERFORM add_workspace_user('ws', 'pub', 'pub@x.io');
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_workspace_user('ws', 'bob', 'bob@x.io');
    PERFORM create_datatable_role('t220_emea');
    PERFORM create_datatable_role('t220_us');
    PERFORM create_datatable_role('t220_stranger');
END $$;
SELECT register_datatable('ws', 'main', 't220_dt', 't220_admin', :'admin_pw') AS dt_id \gset
DO $$ BEGIN
    PERFORM set_datatable_role_tenants('ws', 'main', 't220_emea', '{u/alice}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't220_us', '{u/bob}');
    PERFORM set_datatable_default_role('ws', 'main', NULL);
END $$;
SELECT tap.start_job('ws', 'u/pub', 'app', 'alice@x.io') AS j_alice \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'bob@x.io') AS j_bob \gset

-- Whether the login a job resolves to holds a privilege on a table (a fresh
-- connection, as the platform makes it), or the error it gets.
CREATE FUNCTION pg_temp.can(p_job uuid, p_table text, p_privilege text) RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (
        SELECT v.value
        FROM tap.resolve(p_job, 'main') AS r,
            datatable_roles_dblink.dblink(
                tap.connstr_of(r.dbname, r.login, r.password, r.roles, r.login_kind),
                format('SELECT has_table_privilege(%L, %L)::text', p_table, p_privilege)
            ) AS v (value text)
    );
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- The number of rows a job's login reads from a table.
CREATE FUNCTION pg_temp.rows_seen(p_job uuid, p_table text) RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (
        SELECT v.value
        FROM tap.resolve(p_job, 'main') AS r,
            datatable_roles_dblink.dblink(
                tap.connstr_of(r.dbname, r.login, r.password, r.roles, r.login_kind),
                format('SELECT count(*)::text FROM %s', p_table)
            ) AS v (value text)
    );
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- The admin login makes a table of notes, as a migration would.
SELECT tap.exec_in('t220_dt', $$
    SET ROLE t220_admin;
    CREATE TABLE notes (id integer PRIMARY KEY, body text);
    INSERT INTO notes VALUES (1, 'one'), (2, 'two'), (3, 'three');
$$) AS ok \gset

------------------------------------------------------------------------------
-- reading
------------------------------------------------------------------------------
SELECT is(
    datatable_acl('ws', 'main', '{"schema": "public", "table": "notes"}') ->> 'owner', 'admin',
    'datatable_acl names the admin login admin'
);
SELECT ok(
    datatable_acl('ws', 'main', '{"schema": "public", "table": "notes"}') -> 'grants'
    @> '[{"role": "admin", "kind": "admin", "privileges": ["SELECT", "UPDATE"]}]'
    AND jsonb_array_length(
        datatable_acl('ws', 'main', '{"schema": "public", "table": "notes"}') -> 'grants'
    ) = 1,
    'a new table: only its owner holds privileges'
);
SELECT ok(
    datatable_acl('ws', 'main', '{"schema": "public"}') -> 'children'
    @> '[{"table": "notes", "kind": "table", "owner": "admin", "row_security": false},
         {"table": "orders", "row_security": true}]',
    'a schema lists its tables, with their owners and row security'
);
SELECT is(
    pg_temp.can(:'j_alice', 'public.notes', 'SELECT'), 'false',
    'alice''s login may not read the notes'
);

------------------------------------------------------------------------------
-- a plan shows the statements and changes nothing
------------------------------------------------------------------------------
SELECT
    plan_datatable_acl(
        'ws', 'main', '{"schema": "public", "table": "notes"}',
        '{"grant": ["select"], "to": "t220_emea"}'
    ) AS p
\gset
SELECT is(
    :'p'::jsonb -> 'statements', '["GRANT SELECT ON TABLE public.notes TO t220_emea"]',
    'the plan is one GRANT, exactly'
);
SELECT is(
    :'p'::jsonb -> 'change', '{"grant": ["SELECT"], "to": "t220_emea", "on": "target"}',
    'the change as understood: privileges checked and upper-cased'
);
SELECT ok(
    :'p'::jsonb -> 'warnings' @> '[{"code": "rls_disabled"}]',
    'and it warns that the notes have no row-level security'
);
SELECT is(
    pg_temp.can(:'j_alice', 'public.notes', 'SELECT'), 'false',
    'planning changed nothing'
);

------------------------------------------------------------------------------
-- apply: exactly the statements shown, or nothing
------------------------------------------------------------------------------
SELECT tap.refused(
    $$SELECT apply_datatable_acl('ws', 'main', '{"schema": "public", "table": "notes"}',
        '{"grant": ["select"], "to": "t220_emea"}',
        '{"GRANT SELECT, DELETE ON TABLE public.notes TO t220_emea"}')$$,
    '55000', 'apply refuses statements that are not the plan'
);
SELECT tap.refused(
    $$SELECT apply_datatable_acl('ws', 'main', '{"schema": "public", "table": "notes"}',
        '{"grant": ["select"], "to": "t220_emea"}', '{}')$$,
    '55000', 'apply refuses an empty list for a plan that is not empty'
);
SELECT is(
    pg_temp.can(:'j_alice', 'public.notes', 'SELECT'), 'false',
    'a refused apply changed nothing in the data table''s database'
);
SELECT is(
    (apply_datatable_acl(
        'ws', 'main', '{"schema": "public", "table": "notes"}',
        '{"grant": ["select"], "to": "t220_emea"}',
        array(SELECT jsonb_array_elements_text(:'p'::jsonb -> 'statements'))
    ) ->> 'applied')::integer,
    1,
    'apply runs the statement shown'
);
SELECT is(
    pg_temp.can(:'j_alice', 'public.notes', 'SELECT'), 'true',
    'alice''s login (t220_emea) may read the notes now'
);
SELECT is(
    pg_temp.can(:'j_alice', 'public.notes', 'UPDATE'), 'false',
    '... and nothing more'
);
SELECT is(pg_temp.rows_seen(:'j_alice', 'public.notes'), '3', 'alice reads the three notes');
SELECT is(
    pg_temp.can(:'j_bob', 'public.notes', 'SELECT'), 'false',
    'bob''s login (t220_us) still may not'
);
SELECT is(
    (
        SELECT
            concat_ws(
                ' | ', c.workspace, c.datatable, c.dbname, c.statements::text,
                c.applied_by = current_user
            )
        FROM datatable_roles.acl_change AS c
    ),
    'ws | main | t220_dt | {"GRANT SELECT ON TABLE public.notes TO t220_emea"} | t',
    'the audit says who applied which statements where'
);
SELECT tap.refused(
    format('SELECT tap.as_worker(%L)', $$SELECT apply_datatable_acl('ws', 'main',
        '{"schema": "public", "table": "notes"}', '{"grant": ["select"], "to": "t220_us"}',
        '{"GRANT SELECT ON TABLE public.notes TO t220_us"}')$$),
    '42501', 'the worker role may not apply grants'
);

------------------------------------------------------------------------------
-- default privileges: tables made later
------------------------------------------------------------------------------
SELECT
    plan_datatable_acl(
        'ws', 'main', '{"schema": "public"}',
        '{"grant": ["SELECT"], "to": "t220_us", "on": "future tables", "for": ["admin"]}'
    ) AS f
\gset
SELECT is(
    :'f'::jsonb ->> 'statements',
    '["ALTER DEFAULT PRIVILEGES FOR ROLE t220_admin IN SCHEMA public '
    || 'GRANT SELECT ON TABLES TO t220_us"]',
    'future tables: default privileges for the role that will create them'
);
SELECT ok(
    :'f'::jsonb -> 'warnings' @> '[{"code": "default_privileges"}]',
    'with a warning that they bind only objects that role creates'
);
SELECT lives_ok(
    format(
        $$SELECT apply_datatable_acl('ws', 'main', '{"schema": "public"}', %L, %L)$$,
        '{"grant": ["SELECT"], "to": "t220_us", "on": "future tables", "for": ["admin"]}',
        array(SELECT jsonb_array_elements_text(:'f'::jsonb -> 'statements'))
    ),
    'and they apply'
);
SELECT tap.exec_in('t220_dt', $$
    SET ROLE t220_admin;
    CREATE TABLE later (id integer);
    INSERT INTO later VALUES (1), (2);
$$) AS ok \gset
SELECT is(pg_temp.rows_seen(:'j_bob', 'public.later'), '2', 'bob reads a table made afterwards');
SELECT is(
    pg_temp.can(:'j_alice', 'public.later', 'SELECT'), 'false',
    'alice does not'
);

------------------------------------------------------------------------------
-- what holds already is left out: an empty plan, applied, records nothing
------------------------------------------------------------------------------
SELECT
    plan_datatable_acl(
        'ws', 'main', '{"schema": "public"}',
        '{"grant": ["SELECT"], "to": "t220_us", "on": "future tables", "for": ["admin"]}'
    ) AS again,
    (SELECT count(*) FROM datatable_roles.acl_change) AS audits
\gset
SELECT ok(
    (:'again'::jsonb ->> 'nothing_to_do')::boolean
    AND :'again'::jsonb -> 'statements' = '[]'::jsonb
    AND :'again'::jsonb -> 'warnings' @> '[{"code": "nothing_to_do"}]',
    'the same default privileges again: no statement, nothing_to_do'
);
SELECT is(
    apply_datatable_acl(
        'ws', 'main', '{"schema": "public"}',
        '{"grant": ["SELECT"], "to": "t220_us", "on": "future tables", "for": ["admin"]}',
        '{}'::text[]
    ) ->> 'applied',
    '0',
    'applying it runs nothing'
);
SELECT is(
    (SELECT count(*) FROM datatable_roles.acl_change), :'audits'::bigint,
    'and writes no audit row'
);

------------------------------------------------------------------------------
-- bad input is refused, and nothing changes
------------------------------------------------------------------------------
SELECT tap.refused(
    $$SELECT plan_datatable_acl('ws', 'main', '{"schema": "public", "table": "notes"}',
        '{"grant": ["SELECT"], "to": "t220_stranger"}')$$,
    'P0002', 'a catalog role outside the map is refused'
);
SELECT tap.refused(
    $$SELECT plan_datatable_acl('ws', 'main', '{"schema": "public", "table": "notes"}',
        '{"grant": ["SELECT"], "to": "PUBLIC"}')$$,
    '22023', 'PUBLIC is never named'
);
SELECT tap.refused(
    $$SELECT plan_datatable_acl('ws', 'main',
        '{"schema": "public", "table": "x\"; DROP TABLE notes; --"}',
        '{"grant": ["SELECT"], "to": "t220_emea"}')$$,
    'P0002', 'an unknown table (an injection string) is refused'
);
SELECT tap.refused(
    $$SELECT plan_datatable_acl('ws', 'main', '{"schema": "public", "table": "notes"}',
        '{"grant": ["EXECUTE"], "to": "t220_emea"}')$$,
    '22023', 'a privilege that does not apply to a table is refused'
);
SELECT is(tap.owner_in('t220_dt', 'notes'), 't220_admin', 'and the notes are still there');

SELECT * FROM finish();
