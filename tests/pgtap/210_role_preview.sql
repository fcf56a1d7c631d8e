-- The roles a member may use (usable_datatable_roles), and a preview of
-- taking a role out of a map (preview_datatable_role_change): it names the
-- login the removal retires and the session it ends, and changes nothing;
-- the removal then does exactly that.
\set test t210
\ir lib/begin.psql

SELECT plan(12);

-- Workspace ws: pub (a workspace admin) publishes; alice is in groups emea
-- and us, bob in us. main maps t210_emea (g/emea) and t210_us (g/us), and
-- has no default role.
SELECT tap.new_datatable_db('t210_dt', 't210_admin') AS admin_pw \gset
DO $$ BEGIN
    PERFORM add_workspace('ws');
    PERFORM add_workspace_user('ws', 'pub', 'pub@x.io', true);
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_workspace_user('ws', 'bob', 'bob@x.io');
    PERFORM add_group_member('ws', 'emea', 'alice');
    PERFORM add_group_member('ws', 'us', 'alice');
    PERFORM add_group_member('ws', 'us', 'bob');
    PERFORM create_datatable_role('t210_emea');
    PERFORM create_datatable_role('t210_us');
END $$;
SELECT register_datatable('ws', 'main', 't210_dt', 't210_admin', :'admin_pw') AS dt_id \gset
DO $$ BEGIN
    PERFORM set_datatable_role_tenants('ws', 'main', 't210_emea', '{g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't210_us', '{g/us}');
    PERFORM set_datatable_default_role('ws', 'main', null);
END $$;
SELECT tap.start_job('ws', 'u/pub', 'app', 'alice@x.io') AS j_alice \gset

------------------------------------------------------------------------------
-- usable_datatable_roles, as the worker
------------------------------------------------------------------------------
SELECT is(
    tap.query(tap.session_as('dtr_worker'), $$
        SELECT string_agg(role, ',' ORDER BY role) FROM usable_datatable_roles('ws', 'main', 'alice')
        WHERE source = 'named'$$),
    't210_emea,t210_us',
    'alice may name the roles whose tenants name her groups'
);
SELECT is(
    tap.query(tap.session_as('dtr_worker'), $$
        SELECT string_agg(role, ',' ORDER BY role) FROM usable_datatable_roles('ws', 'main', 'bob')
        WHERE source = 'named'$$),
    't210_us',
    'bob may name t210_us alone'
);
SELECT is(
    tap.query(tap.session_as('dtr_worker'), $$
        SELECT format('%s %s', roles, rule) FROM usable_datatable_roles('ws', 'main', 'bob')
        WHERE source = 'default_as_viewer'$$),
    '{t210_us} R4',
    'naming no role, as his own viewer, bob gets his viewer roles (R4)'
);
SELECT is(
    tap.query(tap.session_as('dtr_worker'), $$
        SELECT format('%s %s', coalesce(roles::text, 'refused'), rule)
        FROM usable_datatable_roles('ws', 'main', 'bob') WHERE source = 'default'$$),
    'refused R5',
    '... and with no viewer, nothing (R5)'
);

------------------------------------------------------------------------------
-- preview_datatable_role_change('remove', ...): a live session as the login
------------------------------------------------------------------------------
SELECT tap.login_of(:'j_alice', 'main') AS a_login \gset
SELECT is(tap.open_as('a', :'j_alice', 'main'), :'a_login', 'a session as alice''s set login');
SELECT tap.query('a', 'SELECT pg_backend_pid()::text') AS a_pid \gset
SELECT tap.state() AS before \gset
SELECT preview_datatable_role_change('remove', 't210_emea', 'ws', 'main') AS report \gset
SELECT is(
    (:'report'::jsonb -> 'logins' -> 0 ->> 'login'), :'a_login',
    'the preview names the set login holding the role'
);
SELECT is(
    (:'report'::jsonb -> 'sessions'),
    jsonb_build_object('count', 1, 'pids', jsonb_build_array(:a_pid)),
    '... and the session it would end'
);
SELECT is(tap.state(), :'before', 'the preview changed nothing');
SELECT is(tap.query('a', 'SELECT 1::text'), '1', 'the session is still alive');
SELECT ok(tap.can_login(:'a_login'), 'the login can still log in');

------------------------------------------------------------------------------
-- The removal then does what the preview said
------------------------------------------------------------------------------
DO $$ BEGIN
    PERFORM remove_datatable_role('ws', 'main', 't210_emea');
END $$;
SELECT matches(tap.query('a', 'SELECT 1::text'), '^error', 'the removal ended the session');
SELECT ok(NOT tap.can_login(:'a_login'), 'and retired the login');

DO $$ BEGIN
    PERFORM tap.close('a');
EXCEPTION WHEN OTHERS THEN NULL;
END $$;

SELECT * FROM finish();
