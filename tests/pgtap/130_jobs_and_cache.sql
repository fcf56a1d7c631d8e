-- SPEC section 7: the viewer recorded at a job's start (per origin, once),
-- the identity captured then, bad input, and the result cache path (which
-- hashes the job identity and the viewer).
\set test t130
\ir lib/begin.psql

SELECT plan(86);

-- Workspace ws: pub (the identity of most jobs), alice (tenant of t130_us),
-- bob (tenant of t130_emea), gx (group x), gy (joins group x later),
-- fy (reads folder fx), ad (made a workspace admin later).
-- Data table main: no default; t130_us {u/alice} sees us, t130_emea {u/bob}
-- sees emea, t130_x {g/x} and t130_f {f/fx} see apac.
-- Workspace ws2: pub2, for a token of another workspace.
SELECT tap.new_datatable_db('t130_dt', 't130_admin') AS admin_pw \gset
DO $$ BEGIN
    PERFORM add_workspace('ws');
    PERFORM add_workspace('ws2');
    PERFORM add_workspace_user('ws', 'pub', 'pub@x.io');
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_workspace_user('ws', 'bob', 'bob@x.io');
    PERFORM add_workspace_user('ws', 'gx', 'gx@x.io');
    PERFORM add_workspace_user('ws', 'gy', 'gy@x.io');
    PERFORM add_workspace_user('ws', 'fy', 'fy@x.io');
    PERFORM add_workspace_user('ws', 'ad', 'ad@x.io');
    PERFORM add_workspace_user('ws2', 'pub2', 'pub2@x.io');
    PERFORM add_group_member('ws', 'x', 'gx');
    PERFORM set_folder_access('ws', 'fx', 'u/fy', 'read');
    PERFORM create_datatable_role('t130_us');
    PERFORM create_datatable_role('t130_emea');
    PERFORM create_datatable_role('t130_x');
    PERFORM create_datatable_role('t130_f');
END $$;
SELECT register_datatable('ws', 'main', 't130_dt', 't130_admin', :'admin_pw') AS dt_id \gset
SELECT tap.allow_region('t130_dt', 't130_admin', 't130_us', 'us') AS ok \gset
SELECT tap.allow_region('t130_dt', 't130_admin', 't130_emea', 'emea') AS ok \gset
SELECT tap.allow_region('t130_dt', 't130_admin', 't130_x', 'apac') AS ok \gset
SELECT tap.allow_region('t130_dt', 't130_admin', 't130_f', 'apac') AS ok \gset
DO $$ BEGIN
    PERFORM set_datatable_role_tenants('ws', 'main', 't130_us', '{u/alice}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't130_emea', '{u/bob}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't130_x', '{g/x}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't130_f', '{f/fx}');
    PERFORM set_datatable_default_role('ws', 'main', null);
END $$;

SELECT
    gen_random_uuid() AS j_app, gen_random_uuid() AS j_anon, gen_random_uuid() AS j_run,
    gen_random_uuid() AS j_preview, gen_random_uuid() AS j_child, gen_random_uuid() AS j_grand,
    gen_random_uuid() AS j_child_bob, gen_random_uuid() AS j_child_anon,
    gen_random_uuid() AS j_sched, gen_random_uuid() AS j_trig, gen_random_uuid() AS j_agent
\gset

------------------------------------------------------------------------------
-- The viewer, per origin
------------------------------------------------------------------------------
SELECT is(
    record_job_start(:'j_app', 'ws', 'u/pub', 'app', 'alice@x.io'), 'alice@x.io',
    'app with a session: the session''s user is the viewer'
);
SELECT is(tap.viewer_of(:'j_app'), 'alice@x.io', '... recorded in job_perms');
SELECT is(tap.seen(:'j_app', 'main'), '2,5', '... and the connection shows alice''s rows');

SELECT is(
    record_job_start(:'j_anon', 'ws', 'u/pub', 'app'), null,
    'app without a session (anonymous viewer): no viewer'
);
SELECT ok(
    EXISTS (SELECT FROM datatable_roles.job_perms WHERE job_id = :'j_anon')
    AND tap.viewer_of(:'j_anon') IS null, '... recorded with a NULL viewer'
);
SELECT matches(
    tap.refusal(:'j_anon', 'main'), '^42501\|R5\|',
    '... so a data table with no default refuses it'
);

SELECT is(
    record_job_start(:'j_run', 'ws', 'u/pub', 'run', 'alice@x.io'), 'alice@x.io',
    'run: the caller is the viewer'
);
SELECT is(tap.seen(:'j_run', 'main'), '2,5', '... and sees alice''s rows');
SELECT is(
    record_job_start(:'j_preview', 'ws', 'u/pub', 'preview', 'bob@x.io'), 'bob@x.io',
    'preview: the caller is the viewer'
);
SELECT is(tap.seen(:'j_preview', 'main'), '1,4', '... and sees bob''s rows');
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'run')$$,
    '22004', null, 'run without a caller is refused (22004)'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'preview')$$,
    '22004', null, 'preview without a caller is refused (22004)'
);

SELECT is(
    record_job_start(:'j_child', 'ws', 'u/pub', 'job_token', null, :'j_app'), 'alice@x.io',
    'job_token: the viewer is the token job''s recorded viewer'
);
SELECT is(tap.seen(:'j_child', 'main'), '2,5', '... and the child sees alice''s rows');
SELECT is(
    record_job_start(:'j_grand', 'ws', 'u/bob', 'job_token', null, :'j_child'),
    'alice@x.io', 'job_token of a job_token child: still alice, whoever runs it'
);
SELECT is(tap.seen(:'j_grand', 'main'), '2,5', '... and sees alice''s rows');
SELECT is(
    record_job_start(:'j_child_bob', 'ws', 'u/pub', 'job_token', null, :'j_preview'),
    'bob@x.io', 'job_token of bob''s preview: bob'
);
SELECT is(
    record_job_start(:'j_child_anon', 'ws', 'u/pub', 'job_token', null, :'j_anon'), null,
    'job_token of an anonymous app job: no viewer'
);
SELECT matches(
    tap.refusal(:'j_child_anon', 'main'), '^42501\|R5\|',
    '... refused on a data table with no default'
);
SELECT throws_ok(
    format(
        $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'job_token', 'bob@x.io', %L)$$,
        :'j_app'
    ),
    '22023', null,
    'job_token with a caller_email is refused (22023): the viewer is looked up, never passed'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'job_token')$$,
    '22004', null, 'job_token without a token job is refused (22004)'
);
SELECT throws_ok(
    $$SELECT record_job_start(
        gen_random_uuid(), 'ws', 'u/pub', 'job_token', null, gen_random_uuid()
    )$$,
    'P0002', null, 'job_token of a job never recorded is refused (P0002)'
);
SELECT throws_ok(
    format(
        $$SELECT record_job_start(gen_random_uuid(), 'ws2', 'u/pub2', 'job_token', null, %L)$$,
        :'j_app'
    ),
    '22023', null, 'job_token of another workspace''s job is refused (22023)'
);
SELECT throws_ok(
    format(
        $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'run', 'alice@x.io', %L)$$,
        :'j_app'
    ),
    '22023', null, 'a token job id with another origin than job_token is refused (22023)'
);

SELECT is(
    record_job_start(:'j_sched', 'ws', 'u/alice', 'schedule'), null,
    'schedule: no viewer (not even its author alice)'
);
SELECT is(record_job_start(:'j_trig', 'ws', 'u/alice', 'trigger'), null, 'trigger: no viewer');
SELECT is(
    record_job_start(:'j_agent', 'ws', 'u/alice', 'agent_tool'), null,
    'agent_tool: no viewer'
);
SELECT matches(
    tap.refusal(:'j_sched', 'main'), '^42501\|R5\|',
    'the schedule of alice has no viewer: refused where only viewers hold roles'
);
SELECT is(
    tap.seen(:'j_sched', 'main', 't130_us'), '2,5',
    '... though its identity alice may name t130_us'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'schedule', 'alice@x.io')$$,
    '22023', null, 'schedule with a caller_email is refused (22023)'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'trigger', 'alice@x.io')$$,
    '22023', null, 'trigger with a caller_email is refused (22023)'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'agent_tool', 'alice@x.io')$$,
    '22023', null, 'agent_tool with a caller_email is refused (22023)'
);

------------------------------------------------------------------------------
-- Recorded once: the viewer cannot change
------------------------------------------------------------------------------
SELECT tap.state() AS state_once \gset
SELECT throws_ok(
    format($$SELECT record_job_start(%L, 'ws', 'u/pub', 'app', 'bob@x.io')$$, :'j_app'),
    '23505', null, 'recording a job a second time (another viewer) is refused (23505)'
);
SELECT throws_ok(
    format($$SELECT record_job_start(%L, 'ws', 'u/pub', 'schedule')$$, :'j_app'),
    '23505', null, 'recording it again with no viewer is refused too (23505)'
);
SELECT is(tap.viewer_of(:'j_app'), 'alice@x.io', 'the recorded viewer is unchanged');
SELECT is(tap.state(), :'state_once', 'nothing changed');
SELECT is(tap.seen(:'j_app', 'main'), '2,5', 'the job still shows alice''s rows');

------------------------------------------------------------------------------
-- The identity's groups, folders and admin flag are those of the job's start
------------------------------------------------------------------------------
SELECT tap.start_job('ws', 'u/gx', 'schedule') AS j_gx \gset
SELECT tap.start_job('ws', 'u/gy', 'schedule') AS j_gy \gset
SELECT tap.start_job('ws', 'u/fy', 'schedule') AS j_fy \gset
SELECT tap.start_job('ws', 'u/ad', 'schedule') AS j_ad \gset
SELECT is(tap.seen(:'j_gx', 'main', 't130_x'), '3', 'gx (group x) names t130_x {g/x}');
DO $$ BEGIN
    PERFORM remove_group_member('ws', 'x', 'gx');
    PERFORM add_group_member('ws', 'x', 'gy');
    PERFORM set_folder_access('ws', 'fx', 'u/fy', 'none');
    PERFORM add_workspace_user('ws', 'ad', 'ad@x.io', true);
END $$;
SELECT tap.start_job('ws', 'u/gx', 'schedule') AS j_gx2 \gset
SELECT tap.start_job('ws', 'u/gy', 'schedule') AS j_gy2 \gset
SELECT tap.start_job('ws', 'u/fy', 'schedule') AS j_fy2 \gset
SELECT tap.start_job('ws', 'u/ad', 'schedule') AS j_ad2 \gset
SELECT is(
    tap.seen(:'j_gx', 'main', 't130_x'), '3',
    'gx left group x after the start: the job still uses the captured g/x'
);
SELECT matches(
    tap.refusal(:'j_gx2', 'main', 't130_x'), '^42501\|R1\|',
    'a job of gx started after that may not name t130_x'
);
SELECT matches(
    tap.refusal(:'j_gy', 'main', 't130_x'), '^42501\|R1\|',
    'gy joined group x after the start: the job still has the captured (no) groups'
);
SELECT is(tap.seen(:'j_gy2', 'main', 't130_x'), '3', 'a job of gy started after that may');
SELECT is(
    tap.seen(:'j_fy', 'main', 't130_f'), '3',
    'fy lost folder fx after the start: the job still uses the captured f/fx'
);
SELECT matches(
    tap.refusal(:'j_fy2', 'main', 't130_f'), '^42501\|R1\|',
    'a job of fy started after that may not name t130_f'
);
SELECT matches(
    tap.refusal(:'j_ad', 'main', 't130_us'), '^42501\|R1\|',
    'ad became a workspace admin after the start: the job is still no admin'
);
SELECT is(
    tap.seen(:'j_ad2', 'main', 't130_us'), '2,5',
    'a job of ad started after that is an admin and may name t130_us'
);
SELECT is(
    explain_datatable_role(:'j_gx', 'main', 't130_x') #>> '{steps,0,memberships}',
    'captured at job start', 'explain says the identity''s memberships are captured at start'
);

------------------------------------------------------------------------------
-- Of the identity's folders, those a tenant list of the workspace names
------------------------------------------------------------------------------
-- fz reads fx (named by t130_f), fo (named by no list) and fa (named, later,
-- by admin's tenants, through group z): only the named ones are captured.
DO $$ BEGIN
    PERFORM add_workspace_user('ws', 'fz', 'fz@x.io');
    PERFORM add_group_member('ws', 'z', 'fz');
    PERFORM set_folder_access('ws', 'fx', 'u/fz', 'write');
    PERFORM set_folder_access('ws', 'fo', 'u/fz', 'owner');
    PERFORM set_folder_access('ws', 'fa', 'g/z', 'read');
END $$;
SELECT tap.start_job('ws', 'u/fz', 'schedule') AS j_fz \gset
SELECT is(
    (SELECT folders FROM datatable_roles.job_perms WHERE job_id = :'j_fz'), '{fx}',
    'only the folders a tenant list names are captured (fo, fa: none names them)'
);
SELECT is(
    array(SELECT folder FROM datatable_roles.tenant_folder WHERE workspace = 'ws' ORDER BY 1),
    '{fx}', 'tenant_folder holds the folders the lists name'
);
SELECT set_datatable_role_tenants('ws', 'main', 'admin', '{f/fa}');
SELECT is(
    array(SELECT folder FROM datatable_roles.tenant_folder WHERE workspace = 'ws' ORDER BY 1),
    '{fa,fx}', 'an f/ key of admin''s tenants is noted as it is written'
);
SELECT matches(
    tap.refusal(:'j_fz', 'main', 'admin'), '^42501\|R1\|',
    'a folder named after the job started does not count for it (it was not captured)'
);
SELECT tap.start_job('ws', 'u/fz', 'schedule') AS j_fz2 \gset
SELECT is(
    (SELECT folders FROM datatable_roles.job_perms WHERE job_id = :'j_fz2'), '{fa,fx}',
    'a job started after that captures it (reached through group z)'
);
SELECT is(tap.seen(:'j_fz2', 'main', 'admin'), '1,2,3,4,5', '... and may name admin (every row)');
SELECT set_datatable_role_tenants('ws', 'main', 'admin', '{}');
SELECT is(
    array(SELECT folder FROM datatable_roles.tenant_folder WHERE workspace = 'ws' ORDER BY 1),
    '{fa,fx}', 'a folder no list names any more stays noted (tested in vain, never fewer)'
);

------------------------------------------------------------------------------
-- Bad input is refused and changes nothing
------------------------------------------------------------------------------
SELECT tap.state() AS state_bad \gset
SELECT throws_ok(
    $$SELECT record_job_start(null, 'ws', 'u/pub', 'schedule')$$,
    '22004', null, 'NULL job_id: 22004'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), null, 'u/pub', 'schedule')$$,
    '22004', null, 'NULL workspace: 22004'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', null, 'schedule')$$,
    '22004', null, 'NULL permissioned_as: 22004'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', null)$$,
    '22004', null, 'NULL origin: 22004'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'pub', 'schedule')$$,
    '22023', null, 'permissioned_as without u/: 22023'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'g/x', 'schedule')$$,
    '22023', null, 'permissioned_as naming a group: 22023'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/', 'schedule')$$,
    '22023', null, 'permissioned_as u/ with no username: 22023'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'cron')$$,
    '22023', null, 'unknown origin cron: 22023'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'APP')$$,
    '22023', null, 'origin APP (case): 22023'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'run', 'not-an-email')$$,
    '22023', null, 'malformed caller email (run): 22023'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/pub', 'app', 'a b@x.io')$$,
    '22023', null, 'malformed session email (app): 22023'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'nows', 'u/pub', 'schedule')$$,
    'P0002', null, 'unknown workspace: P0002'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws', 'u/nobody', 'schedule')$$,
    'P0002', null, 'unknown user: P0002'
);
SELECT throws_ok(
    $$SELECT record_job_start(gen_random_uuid(), 'ws2', 'u/pub', 'schedule')$$,
    'P0002', null, 'a user of another workspace: P0002'
);
SELECT throws_ok(
    $$SELECT record_job_start(
        gen_random_uuid(), 'ws', 'u/pub', 'job_token', null, gen_random_uuid()
    )$$,
    'P0002', null, 'unknown token job: P0002'
);
SELECT is(tap.state(), :'state_bad', 'none of the refused calls changed anything');

------------------------------------------------------------------------------
-- cached_result_path
------------------------------------------------------------------------------
SELECT cached_result_path(:'j_app', 'f/x/report', '{"a":1,"b":2}') AS p_alice \gset
SELECT is(
    cached_result_path(:'j_app', 'f/x/report', '{"a":1,"b":2}'), :'p_alice',
    'the same inputs give the same path'
);
SELECT is(
    cached_result_path(:'j_app', 'f/x/report', '{"b":2,"a":1}'), :'p_alice',
    'the key order of args does not matter'
);
SELECT isnt(
    cached_result_path(:'j_app', 'f/x/report', '{"a":1,"b":3}'), :'p_alice',
    'other args give another path'
);
SELECT isnt(
    cached_result_path(:'j_app', 'f/x/other', '{"a":1,"b":2}'), :'p_alice',
    'another runnable gives another path'
);
SELECT is(
    cached_result_path(:'j_run', 'f/x/report', '{"a":1,"b":2}'), :'p_alice',
    'another run of the same identity (u/pub) with the same viewer (alice) shares the path'
);
SELECT tap.start_job('ws', 'u/bob', 'app', 'alice@x.io') AS j_app_bob \gset
SELECT is(tap.viewer_of(:'j_app_bob'), 'alice@x.io', 'an app run as u/bob, viewed by alice');
SELECT isnt(
    cached_result_path(:'j_app_bob', 'f/x/report', '{"a":1,"b":2}'), :'p_alice',
    'the same viewer and args under another identity (u/bob) get another path'
);
SELECT isnt(
    cached_result_path(:'j_preview', 'f/x/report', '{"a":1,"b":2}'), :'p_alice',
    'another viewer (bob) gets another path'
);
SELECT is(
    cached_result_path(:'j_child', 'f/x/report', '{"a":1,"b":2}'), :'p_alice',
    'a job_token child shares its parent''s viewer path'
);
SELECT is(
    cached_result_path(:'j_child_bob', 'f/x/report', '{"a":1,"b":2}'),
    cached_result_path(:'j_preview', 'f/x/report', '{"a":1,"b":2}'),
    'the job_token child of bob''s preview shares bob''s path'
);
SELECT is(
    cached_result_path(:'j_sched', 'f/x/report', '{"a":1,"b":2}'),
    cached_result_path(:'j_trig', 'f/x/report', '{"a":1,"b":2}'),
    'two runs of one identity (u/alice) with no viewer (a schedule and a trigger) share one path'
);
SELECT is(
    cached_result_path(:'j_agent', 'f/x/report', '{"a":1,"b":2}'),
    cached_result_path(:'j_sched', 'f/x/report', '{"a":1,"b":2}'),
    '... and so does its agent tool job'
);
SELECT tap.start_job('ws', 'u/alice', 'schedule') AS j_sched2 \gset
SELECT is(
    cached_result_path(:'j_sched2', 'f/x/report', '{"a":1,"b":2}'),
    cached_result_path(:'j_sched', 'f/x/report', '{"a":1,"b":2}'),
    '... and its next scheduled run'
);
SELECT isnt(
    cached_result_path(:'j_sched', 'f/x/report', '{"a":1,"b":2}'),
    cached_result_path(:'j_anon', 'f/x/report', '{"a":1,"b":2}'),
    'runs with no viewer of two identities (alice''s schedule, pub''s anonymous app) do not'
);
SELECT isnt(
    cached_result_path(:'j_sched', 'f/x/report', '{"a":1,"b":2}'), :'p_alice',
    'the no-viewer path is not alice''s'
);
SELECT throws_ok(
    $$SELECT cached_result_path(gen_random_uuid(), 'f/x/report', '{}')$$,
    'P0002', null, 'an unknown job: P0002'
);

SELECT * FROM finish();
