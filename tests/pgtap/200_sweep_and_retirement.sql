-- SPEC section 6 as stories: the sweep of unused logins (what they own in a
-- data table database passes to its admin login, inert in a quarantine
-- schema; what they own elsewhere is dropped; the login and its row go; a
-- login is made again on demand; 29 days unused is kept, with its password
-- rotated, and 31 dropped; a login it cannot finish keeps an empty-password
-- row), drop_datatable_role moving what a role owns in each data table
-- database, and retirement (NOLOGIN, an empty-password row, sessions ended,
-- taken back by a later resolve).
\set test t200
\ir lib/begin.psql

SELECT plan(86);

-- Workspace ws: pub (a workspace admin) publishes the apps; viewers alice
-- (groups emea, us), carol (emea, apac) and dan (emea, ops). main has no
-- default role; second maps only t200_ops.
SELECT tap.new_datatable_db('t200_dt', 't200_admin') AS admin_pw \gset
SELECT tap.new_datatable_db('t200_dt2', 't200_admin2') AS admin_pw2 \gset
DO $$ BEGIN
    PERFORM add_workspace('ws');
    PERFORM add_workspace_user('ws', 'pub', 'pub@x.io', true);
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_workspace_user('ws', 'carol', 'carol@x.io');
    PERFORM add_workspace_user('ws', 'dan', 'dan@x.io');
    PERFORM add_group_member('ws', 'emea', 'alice');
    PERFORM add_group_member('ws', 'us', 'alice');
    PERFORM add_group_member('ws', 'emea', 'carol');
    PERFORM add_group_member('ws', 'apac', 'carol');
    PERFORM add_group_member('ws', 'emea', 'dan');
    PERFORM add_group_member('ws', 'ops', 'dan');
    PERFORM create_datatable_role('t200_emea');
    PERFORM create_datatable_role('t200_us');
    PERFORM create_datatable_role('t200_apac');
    PERFORM create_datatable_role('t200_ops');
END $$;
SELECT register_datatable('ws', 'main', 't200_dt', 't200_admin', :'admin_pw') AS dt_id \gset
SELECT register_datatable(
    'ws', 'second', 't200_dt2', 't200_admin2', :'admin_pw2'
) AS dt2_id \gset
SELECT tap.allow_region('t200_dt', 't200_admin', 't200_emea', 'emea') AS ok \gset
SELECT tap.allow_region('t200_dt', 't200_admin', 't200_us', 'us') AS ok \gset
SELECT tap.allow_region('t200_dt', 't200_admin', 't200_apac', 'apac') AS ok \gset
SELECT tap.exec_in('t200_dt', 'GRANT CREATE ON SCHEMA public TO t200_emea, t200_ops') AS ok \gset
SELECT tap.exec_in('t200_dt2', 'GRANT CREATE ON SCHEMA public TO t200_ops') AS ok \gset
DO $$ BEGIN
    PERFORM set_datatable_role_tenants('ws', 'main', 't200_emea', '{g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't200_us', '{g/us}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't200_apac', '{g/apac}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't200_ops', '{g/ops}');
    PERFORM set_datatable_default_role('ws', 'main', null);
    PERFORM set_datatable_role_tenants('ws', 'second', 't200_ops', '{g/ops}');
END $$;

SELECT tap.start_job('ws', 'u/pub', 'app', 'alice@x.io') AS j_alice \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'carol@x.io') AS j_carol \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'dan@x.io') AS j_dan \gset
SELECT tap.start_job('ws', 'u/pub', 'run', 'pub@x.io') AS j_pub \gset

------------------------------------------------------------------------------
-- A set login owns what it creates; unused 31 days, the sweep gives that to
-- the admin login and drops the login and its row; 29 days unused is kept
------------------------------------------------------------------------------
SELECT is(
    tap.seen(:'j_alice', 'main'), '1,2,4,5',
    'alice (emea, us) sees through her set login'
);
SELECT tap.login_of(:'j_alice', 'main') AS a_login \gset
SELECT oid AS a_oid FROM pg_roles WHERE rolname = :'a_login' \gset
SELECT matches(:'a_login'::text, '^wm_set_', 'alice resolves to a set login');
SELECT is(tap.open_as('a', :'j_alice', 'main'), :'a_login', 'a session as the set login');
SELECT is(
    tap.exec('a', 'CREATE TABLE t200_made (x integer)'), 'CREATE TABLE',
    'it creates a table'
);
SELECT is(
    tap.exec('a', 'INSERT INTO t200_made VALUES (1), (2)'), 'INSERT 0 2',
    '... and fills it'
);
SELECT is(
    tap.owner_in('t200_dt', 't200_made'), :'a_login',
    'the table belongs to the set login'
);
SELECT is(tap.close('a'), 'OK', 'the session ends');

-- two days later carol's set login is made and used
UPDATE datatable_roles.settings SET clock_offset = '2 days';
SELECT is(
    tap.seen(:'j_carol', 'main'), '1,3,4',
    'two days later carol (emea, apac) sees her rows'
);
SELECT tap.login_of(:'j_carol', 'main') AS c_login \gset
SELECT tap.set_login_password(:'c_login') AS c_pw \gset
SELECT is(tap.open_as('c', :'j_carol', 'main'), :'c_login', 'a session as carol''s set login');

-- 31 days after the start: alice's login unused 31 days, carol's 29
UPDATE datatable_roles.settings SET clock_offset = '31 days';
SELECT tap.sweep() AS s1_report \gset
SELECT is(
    :'s1_report'::jsonb,
    '{"examined": 1, "dropped": 1, "skipped": 0, "unfinished": [], "rotated": 1, "healed": 0,
      "forgotten_user_keys": [], "servers_pending": []}',
    'the sweep examines and drops one login, the one unused 31 days, and rotates the other'
);
SELECT ok(
    NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'a_login'),
    'the login unused 31 days is gone'
);
SELECT is(tap.set_login_password(:'a_login'), null, '... and so is its row');
SELECT is(
    tap.owner_in('t200_dt', 't200_made'), 't200_admin',
    'its table now belongs to the data table''s admin login'
);
SELECT matches(
    tap.schema_in('t200_dt', 't200_made'), '^wm_quarantine_[0-9a-f]{16}$',
    '... kept inert in a quarantine schema'
);
SELECT tap.schema_in('t200_dt', 't200_made') AS made_schema \gset
SELECT is(tap.rows_in('t200_dt', 't200_made'), '2', '... with its rows');
SELECT is(tap.can_login(:'c_login'), true, 'the login unused 29 days is kept, with LOGIN');
SELECT ok(
    tap.set_login_password(:'c_login') NOT IN ('', :'c_pw'),
    '... and its row, with a new password: the old one was more than a day old (rotate_every)'
);
SELECT matches(
    tap.connect_to('t200_dt', :'c_login', :'c_pw'),
    '^error 08001: password authentication failed',
    'the old password no longer works'
);
SELECT is(
    tap.query('c', 'SELECT current_user::text'), :'c_login',
    'the session open before the rotation goes on'
);
SELECT is(tap.close('c'), 'OK', 'the session ends');
SELECT is(tap.seen(:'j_carol', 'main'), '1,3,4', 'the login, resolved again, logs in');

-- made again on demand
SELECT is(
    tap.seen(:'j_alice', 'main'), '1,2,4,5',
    'alice resolves again: the set login is made again'
);
SELECT is(tap.login_of(:'j_alice', 'main'), :'a_login', '... with the same name');
SELECT isnt(
    (SELECT oid FROM pg_roles WHERE rolname = :'a_login'), :'a_oid'::oid,
    '... as a new role'
);
SELECT isnt(tap.set_login_password(:'a_login'), '', '... with a row that has a password');
SELECT is(tap.open_as('a2', :'j_alice', 'main'), :'a_login', 'a session as the new login');
SELECT matches(
    tap.query('a2', format('SELECT count(*)::text FROM %I.t200_made', :'made_schema')),
    '^error 42501',
    'the new login does not reach what the dropped one made (the admin login''s, in quarantine)'
);
SELECT is(tap.close('a2'), 'OK', 'the session ends');

------------------------------------------------------------------------------
-- A sweep that cannot finish with a login leaves an empty-password row, says
-- why, carries on with the others, and the next sweep finds it again. What a
-- login owns in a database that is no data table's is dropped.
------------------------------------------------------------------------------
-- a database the package cannot reach: its link login has no CONNECT there
CREATE DATABASE t200_other;
REVOKE CONNECT ON DATABASE t200_other FROM PUBLIC;
SELECT tap.exec_in('t200_other', format(
    'CREATE TABLE t200_foreign (x integer); ALTER TABLE t200_foreign OWNER TO %I', :'a_login'
)) AS ok \gset
SELECT is(tap.open_as('a3', :'j_alice', 'main'), :'a_login', 'alice''s login ...');
SELECT is(
    tap.exec('a3', 'CREATE TABLE t200_made2 (x integer)'), 'CREATE TABLE',
    '... makes another table'
);
SELECT is(tap.close('a3'), 'OK', 'the session ends');
-- both logins are now stale
UPDATE datatable_roles.settings SET clock_offset = '62 days';
SELECT tap.sweep() AS s2_report \gset
SELECT is(
    (:'s2_report'::jsonb - 'unfinished'),
    '{"examined": 2, "dropped": 1, "skipped": 0, "rotated": 0, "healed": 0,
      "forgotten_user_keys": [], "servers_pending": []}',
    'two stale logins: one dropped, one not'
);
SELECT is(
    jsonb_path_query_array(:'s2_report'::jsonb, '$.unfinished[*].login'),
    jsonb_build_array(:'a_login'),
    'the one owning something in a database the package cannot reach is reported unfinished'
);
SELECT matches(
    jsonb_path_query_first(
        :'s2_report'::jsonb, '$.unfinished[*] ? (@.login == $l).reason',
        jsonb_build_object('l', :'a_login')
    ) #>> '{}',
    '^t200_other: ',
    '... naming the database'
);
SELECT ok(
    NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'c_login')
    AND tap.set_login_password(:'c_login') IS null,
    'the sweep carried on: carol''s login and its row are gone'
);
SELECT is(
    tap.set_login_password(:'a_login'), '',
    'the unfinished login keeps its row, with an empty password'
);
SELECT is(tap.can_login(:'a_login'), false, '... and no longer has LOGIN');
SELECT is(
    tap.owner_in('t200_dt', 't200_made2'), 't200_admin',
    'what it owned in the data table moved anyway'
);
SELECT tap.sweep() AS s3_report \gset
SELECT is(
    jsonb_path_query_array(:'s3_report'::jsonb, '$.unfinished[*].login'),
    jsonb_build_array(:'a_login'),
    'the next sweep finds it again'
);
GRANT CONNECT ON DATABASE t200_other TO PUBLIC;
SELECT tap.sweep() AS s4_report \gset
SELECT is(
    :'s4_report'::jsonb,
    '{"examined": 1, "dropped": 1, "skipped": 0, "unfinished": [], "rotated": 0, "healed": 0,
      "forgotten_user_keys": [], "servers_pending": []}',
    'once the package can reach that database, the sweep finishes with it'
);
SELECT is(
    tap.query_in('t200_other', $$SELECT count(*)::text FROM pg_tables
        WHERE tablename = 't200_foreign'$$),
    '0',
    'what it owned there, outside the data table databases, is dropped'
);
SELECT ok(
    NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'a_login')
    AND tap.set_login_password(:'a_login') IS null,
    'the login and its row are gone'
);
SELECT is(
    tap.seen(:'j_alice', 'main'), '1,2,4,5',
    'and alice''s login is made again on demand'
);
DROP DATABASE t200_other;

------------------------------------------------------------------------------
-- drop_datatable_role gives what the role owns in each data table database to
-- that database's admin login; the logins holding it are retired, then swept
------------------------------------------------------------------------------
SELECT login AS o1_login FROM tap.resolve(:'j_pub', 'main', 't200_ops') \gset
SELECT login AS o2_login FROM tap.resolve(:'j_pub', 'second', 't200_ops') \gset
SELECT isnt(
    :'o1_login'::text, :'o2_login',
    't200_ops is served by one login per database: one on main, another on second'
);
SELECT is(
    tap.open_as('o1', :'j_pub', 'main', 't200_ops'), 't200_ops',
    'a session as its login on main, acting as t200_ops'
);
SELECT is(tap.open_as('o2', :'j_pub', 'second', 't200_ops'), 't200_ops', '... and one on second');
SELECT is(
    tap.exec('o1', 'CREATE TABLE t200_ops_1 AS SELECT 1 AS x'), 'SELECT 1',
    't200_ops creates a table in t200_dt'
);
SELECT is(
    tap.exec('o2', 'CREATE TABLE t200_ops_2 AS SELECT 2 AS x'), 'SELECT 1',
    '... and one in t200_dt2'
);
SELECT is(tap.seen(:'j_dan', 'main'), '1,4', 'dan (emea, ops) sees through his set login');
SELECT tap.login_of(:'j_dan', 'main') AS d_login \gset
SELECT is(
    tap.owner_in('t200_dt', 't200_ops_1'), 't200_ops',
    'the table in t200_dt is the role''s'
);

SELECT lives_ok($$SELECT drop_datatable_role('t200_ops')$$, 'drop_datatable_role(t200_ops)');
SELECT is(
    tap.owner_in('t200_dt', 't200_ops_1'), 't200_admin',
    'after the drop it is t200_dt''s admin login''s'
);
SELECT matches(
    tap.schema_in('t200_dt', 't200_ops_1'), '^wm_quarantine_[0-9a-f]{16}$',
    '... in a quarantine schema'
);
SELECT is(
    tap.owner_in('t200_dt2', 't200_ops_2'), 't200_admin2',
    '... and the one in t200_dt2 is t200_dt2''s admin login''s'
);
SELECT is(tap.rows_in('t200_dt2', 't200_ops_2'), '1', '... with its rows');
SELECT ok(NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 't200_ops'), 'the role is dropped');
SELECT matches(tap.query('o1', 'SELECT 1'), '^error', 'its session on main was ended');
SELECT is(
    tap.set_login_password(:'d_login'), '',
    'dan''s set login, holding it, is retired: empty-password row'
);
SELECT is(tap.can_login(:'d_login'), false, '... and NOLOGIN');
SELECT results_eq(
    format(
        $$SELECT s.password, r.rolcanlogin FROM datatable_roles.datatable_role_set AS s
          JOIN pg_roles AS r ON r.rolname = s.login WHERE s.login IN (%L, %L)$$,
        :'o1_login', :'o2_login'
    ),
    $$VALUES (''::text, false), ('', false)$$,
    'so are its logins on both databases'
);
SELECT tap.sweep() AS s5_report \gset
SELECT is(
    :'s5_report'::jsonb,
    '{"examined": 3, "dropped": 3, "skipped": 0, "unfinished": [], "rotated": 0, "healed": 0,
      "forgotten_user_keys": [], "servers_pending": []}',
    'the next sweep drops the three at once (they hold a dropped role), however recently used'
);
SELECT ok(
    NOT EXISTS (SELECT FROM pg_roles WHERE rolname IN (:'d_login', :'o1_login', :'o2_login'))
    AND NOT EXISTS (
        SELECT FROM datatable_roles.datatable_role_set
        WHERE login IN (:'d_login', :'o1_login', :'o2_login')
    ),
    'their logins and rows are gone'
);
SELECT is(tap.seen(:'j_dan', 'main'), '1,4', 'dan now resolves to t200_emea alone');
SELECT tap.login_of(:'j_dan', 'main') AS e_login \gset
DO $$ BEGIN
    PERFORM tap.close('o1');
    PERFORM tap.close('o2');
END $$;

------------------------------------------------------------------------------
-- Retirement: NOLOGIN, an empty-password row, sessions ended; a later
-- resolve takes the login back with a new password
------------------------------------------------------------------------------
SELECT oid AS a_oid2 FROM pg_roles WHERE rolname = :'a_login' \gset
SELECT tap.set_login_password(:'a_login') AS a_pw \gset
SELECT is(tap.open_as('r', :'j_alice', 'main'), :'a_login', 'a session as alice''s set login');
SELECT login AS u_login FROM tap.resolve(:'j_pub', 'main', 't200_us') \gset
SELECT is(
    tap.open_as('u', :'j_pub', 'main', 't200_us'), 't200_us',
    'and one as t200_us''s one-role login, acting as t200_us'
);

DO $$ BEGIN PERFORM set_datatable_role_enabled('t200_us', false); END $$;
SELECT is(
    tap.can_login(:'a_login'), false,
    'disabling t200_us makes the set login holding it NOLOGIN'
);
SELECT is(tap.set_login_password(:'a_login'), '', '... with an empty-password row');
SELECT ok(
    NOT tap.can_login(:'u_login') AND tap.set_login_password(:'u_login') = '',
    '... and its one-role login too'
);
SELECT matches(tap.query('r', 'SELECT 1'), '^error', 'the set login''s session was ended');
SELECT matches(tap.query('u', 'SELECT 1'), '^error', 'the one-role login''s session was ended');
SELECT is(tap.seen(:'j_alice', 'main'), '1,4', 'while disabled, alice holds t200_emea alone');

DO $$ BEGIN PERFORM set_datatable_role_enabled('t200_us', true); END $$;
SELECT is(
    tap.seen(:'j_alice', 'main'), '1,2,4,5',
    're-enabled: alice''s set login is taken back and logs in'
);
SELECT is(
    (SELECT oid FROM pg_roles WHERE rolname = :'a_login'), :'a_oid2'::oid,
    '... the same role'
);
SELECT ok(
    tap.can_login(:'a_login') AND tap.set_login_password(:'a_login') NOT IN ('', :'a_pw'),
    '... with LOGIN and a new password'
);

SELECT is(
    retire_role_set_logins_of('t200_emea'), 2,
    'retire_role_set_logins_of retires both logins holding t200_emea (alice''s and dan''s)'
);
SELECT ok(
    NOT tap.can_login(:'a_login') AND tap.set_login_password(:'a_login') = ''
    AND NOT tap.can_login(:'e_login') AND tap.set_login_password(:'e_login') = '',
    '... NOLOGIN, empty-password rows'
);
SELECT is(tap.seen(:'j_alice', 'main'), '1,2,4,5', '... and the next resolve takes it back');

------------------------------------------------------------------------------
-- The sweep heals a login someone else changed (here a setting in another
-- database, which no resolve looks at), without ending its sessions
------------------------------------------------------------------------------
SELECT login AS h_login, password AS h_pw FROM tap.resolve(:'j_alice', 'main') \gset
SELECT is(tap.open('h', :'h_login', :'h_pw', 't200_dt'), :'h_login', 'a session as alice''s login');
SELECT is(
    tap.exec('h', $$ALTER ROLE CURRENT_USER IN DATABASE postgres SET work_mem = '77MB'$$),
    'ALTER ROLE',
    'a script gives its login a setting in another database'
);
SELECT tap.sweep() AS s6_report \gset
SELECT is(
    :'s6_report'::jsonb,
    '{"examined": 0, "dropped": 0, "skipped": 0, "unfinished": [], "rotated": 0, "healed": 1,
      "forgotten_user_keys": [], "servers_pending": []}',
    'the sweep heals that login'
);
SELECT is(
    (
        SELECT count(*)::integer FROM pg_db_role_setting AS d
        WHERE d.setrole = (SELECT oid FROM pg_roles WHERE rolname = :'h_login')
    ),
    0,
    '... its setting is gone'
);
SELECT ok(
    tap.set_login_password(:'h_login') NOT IN ('', :'h_pw') AND tap.can_login(:'h_login'),
    '... it has a new password, and LOGIN'
);
SELECT matches(
    tap.connect_to('t200_dt', :'h_login', :'h_pw'),
    '^error 08001: password authentication failed',
    '... the old one no longer works'
);
SELECT is(tap.seen_by('h'), '1,2,4,5', 'the session open before goes on');
SELECT is(
    (SELECT r.password FROM tap.resolve(:'j_alice', 'main') AS r),
    tap.set_login_password(:'h_login'),
    'the next resolve hands out the new password'
);
SELECT is(tap.close('h'), 'OK', 'the session ends');

DO $$ BEGIN
    PERFORM tap.close('r');
    PERFORM tap.close('u');
END $$;

SELECT * FROM finish();
