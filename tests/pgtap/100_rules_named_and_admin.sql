-- R1 (a named role), R2 (default admin) and R8 (migrations), as the rows a
-- resolved login sees in a data table under row-level security; R6 (one
-- role: a scoped login of this database, not the role's own); and the admin
-- login's password changed outside the package.
\set test t100
\ir lib/begin.psql

SELECT plan(77);

-- Workspace ws:
--   pub    tenant of t100_emea (u/pub) and t100_off (before it is disabled)
--   bob    in group emea, so a tenant of t100_emea through g/emea
--   carol  a tenant of nothing
--   adm    a workspace admin, a tenant of nothing
--   tad    a tenant of admin
--   alice  the viewer of the app jobs: a tenant of t100_us
-- Workspace ws2: its data table other (database t100_dt2) maps t100_emea too.
SELECT tap.new_datatable_db('t100_dt', 't100_admin') AS admin_pw \gset
SELECT tap.new_datatable_db('t100_dt2', 't100_admin2') AS admin2_pw \gset
DO $$ BEGIN
    PERFORM add_workspace('ws');
    PERFORM add_workspace_user('ws', 'pub', 'pub@x.io');
    PERFORM add_workspace_user('ws', 'bob', 'bob@x.io');
    PERFORM add_workspace_user('ws', 'carol', 'carol@x.io');
    PERFORM add_workspace_user('ws', 'adm', 'adm@x.io', true);
    PERFORM add_workspace_user('ws', 'tad', 'tad@x.io');
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_group_member('ws', 'emea', 'bob');
    PERFORM add_workspace('ws2');
    PERFORM add_workspace_user('ws2', 'pub', 'pub@x.io');
    PERFORM create_datatable_role('t100_emea');
    PERFORM create_datatable_role('t100_us');
    PERFORM create_datatable_role('t100_off');
    PERFORM create_datatable_role('t100_loose');
END $$;
SELECT register_datatable('ws', 'main', 't100_dt', 't100_admin', :'admin_pw') AS dt_id \gset
SELECT register_datatable('ws2', 'other', 't100_dt2', 't100_admin2', :'admin2_pw') AS dt2_id \gset
SELECT tap.allow_region('t100_dt2', 't100_admin2', 't100_emea', 'emea') AS ok \gset
SELECT tap.allow_region('t100_dt', 't100_admin', 't100_emea', 'emea') AS ok \gset
SELECT tap.allow_region('t100_dt', 't100_admin', 't100_us', 'us') AS ok \gset
SELECT tap.allow_region('t100_dt', 't100_admin', 't100_off', 'apac') AS ok \gset
DO $$ BEGIN
    PERFORM set_datatable_role_tenants('ws', 'main', 't100_emea', '{u/pub,g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't100_us', '{u/alice}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't100_off', '{u/pub}');
    PERFORM set_datatable_role_tenants('ws', 'main', 'admin', '{u/tad}');
    PERFORM set_datatable_role_tenants('ws2', 'other', 't100_emea', '{u/pub}');
END $$;
SELECT lives_ok(
    $$SELECT set_datatable_role_enabled('t100_off', false)$$,
    'set-up: t100_off (in the map, tenant u/pub) is disabled'
);

-- Jobs. The app jobs have alice (a tenant of t100_us) as their viewer.
SELECT tap.start_job('ws', 'u/pub', 'app', 'alice@x.io') AS j_pub \gset
SELECT tap.start_job('ws', 'u/bob', 'run', 'bob@x.io') AS j_bob \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'alice@x.io') AS j_carol \gset
SELECT tap.start_job('ws', 'u/carol', 'schedule') AS j_carol_sched \gset
SELECT tap.start_job('ws', 'u/adm', 'app', 'alice@x.io') AS j_adm \gset
SELECT tap.start_job('ws', 'u/tad', 'schedule') AS j_tad \gset
SELECT tap.start_job('ws2', 'u/pub', 'schedule') AS j_ws2 \gset

-- Unknown job or data table: P0002, not a refusal.
SELECT throws_ok(
    format('SELECT * FROM tap.resolve(%L, %L)', gen_random_uuid(), 'main'),
    'P0002', null, 'a job never recorded: P0002'
);
SELECT throws_ok(
    format('SELECT * FROM tap.resolve(%L, %L, %L)', :'j_pub', 'nosuch', 't100_emea'),
    'P0002', null, 'an unknown data table: P0002'
);
SELECT throws_ok(
    format('SELECT * FROM tap.resolve(%L, %L)', :'j_ws2', 'main'),
    'P0002', null, 'a data table of another workspace than the job''s: P0002'
);
SELECT throws_ok(
    format('SELECT explain_datatable_role(%L, %L)', gen_random_uuid(), 'main'),
    'P0002', null, 'explain of a job never recorded: P0002'
);

------------------------------------------------------------------------------
-- R1: a named role is exactly {R}, when R is in the map, enabled and usable
-- by the job's identity.
------------------------------------------------------------------------------
SELECT is(
    tap.seen(:'j_pub', 'main', 't100_emea'), '1,4',
    'R1: pub (u/pub) names t100_emea and sees the emea rows only, not the us rows of its viewer'
);
SELECT is(
    tap.roles_of(:'j_pub', 'main', 't100_emea'), '{t100_emea}',
    'R1: the connection holds exactly the named role'
);

-- R6: one role is a scoped login of this database holding exactly it
SELECT
    login AS emea_login, password AS emea_pw, login_kind AS emea_kind, dbname AS emea_db
FROM tap.resolve(:'j_pub', 'main', 't100_emea') \gset
SELECT is(:'emea_kind'::text, 'role', 'R1/R6: one role: login_kind role');
SELECT matches(
    :'emea_login'::text, '^wm_set_[0-9a-f]{40}$',
    'R6: it is served by a scoped wm_set_ login, not by the role''s own'
);
SELECT is(
    tap.memberships(:'emea_login'), tap.with_login_group('{t100_emea}'),
    'R6: the login holds exactly that role (and the instance''s login group)'
);
SELECT is(
    tap.connect_to(:'emea_db', :'emea_login', :'emea_pw', 't100_emea'), 't100_emea',
    'R6: connected with the startup option -c role=t100_emea, its session acts as the role'
);
SELECT is(
    tap.connect_to(:'emea_db', :'emea_login', :'emea_pw'), :'emea_login',
    'R6: without the option it acts as the login itself'
);
SELECT is(
    tap.seen_as(:'emea_db', :'emea_login', :'emea_pw'), '1,4',
    'R6: ... which reaches the same rows'
);
SELECT matches(
    tap.connect_to(:'emea_db', 't100_emea', :'emea_pw'), '^error 08001: ',
    'R6: nobody logs in as the catalog role itself'
);
-- The same role mapped by a data table of another workspace, on another
-- database: another login, and neither reaches the other's database.
SELECT
    login AS ws2_login, password AS ws2_pw, login_kind AS ws2_kind
FROM tap.resolve(:'j_ws2', 'other', 't100_emea') \gset
SELECT is(:'ws2_kind'::text, 'role', 'R6 in ws2: pub names t100_emea on ws2/other');
SELECT isnt(
    :'ws2_login'::text, :'emea_login',
    'R6: the same role on another database is served by another login'
);
SELECT is(
    tap.seen_as('t100_dt2', :'ws2_login', :'ws2_pw', 't100_emea'), '1,4',
    'R6: ... which sees its own data table''s rows'
);
SELECT matches(
    tap.connect_to('t100_dt2', :'emea_login', :'emea_pw', 't100_emea'),
    '^error 08001: permission denied for database "t100_dt2"',
    'R6: the ws login cannot connect to the ws2 data table''s database, which maps the same role'
);
SELECT matches(
    tap.connect_to('t100_dt2', :'emea_login', :'emea_pw'),
    '^error 08001: permission denied for database "t100_dt2"',
    'R6: ... nor without the role option'
);
SELECT matches(
    tap.connect_to('t100_dt', :'ws2_login', :'ws2_pw', 't100_emea'),
    '^error 08001: permission denied for database "t100_dt"',
    'R6: nor the ws2 login to the ws data table''s database'
);
SELECT is(
    tap.connect_databases(:'emea_login') || tap.connect_databases(:'ws2_login')
    || tap.connect_databases('t100_emea'),
    '{t100_dt,t100_dt2}',
    'R6: each login holds CONNECT on its one database; the role on none'
);

SELECT is(
    tap.seen(:'j_bob', 'main', 't100_emea'), '1,4',
    'R1: bob names t100_emea and may use it through g/emea'
);
SELECT is(
    tap.seen(:'j_adm', 'main', 't100_us'), '2,5',
    'R1: a workspace admin may name any role of the map (t100_us) without being its tenant'
);
SELECT is(
    tap.seen(:'j_adm', 'main', 't100_emea'), '1,4',
    'R1: ... and another one (t100_emea)'
);

-- every refusal of R1
SELECT matches(
    tap.refusal(:'j_pub', 'main', 't100_loose'),
    '^42501\|R1\|data table ws/main: .*t100_loose.*not in the .*role map',
    'R1: a catalog role that is not in the map of the data table is refused (42501)'
);
SELECT matches(
    tap.refusal(:'j_adm', 'main', 't100_loose'),
    '^42501\|R1\|data table ws/main: ',
    'R1: not in the map is refused even for a workspace admin'
);
SELECT matches(
    tap.refusal(:'j_pub', 'main', 't100_nosuch'),
    '^42501\|R1\|data table ws/main: .*t100_nosuch',
    'R1: an unknown role is refused (42501) and the message names the data table'
);
SELECT matches(
    tap.refusal(:'j_pub', 'main', 't100_off'),
    '^42501\|R1\|data table ws/main: .*t100_off.*disabled',
    'R1: a disabled role is refused although the identity is its tenant'
);
SELECT matches(
    tap.refusal(:'j_adm', 'main', 't100_off'),
    '^42501\|R1\|data table ws/main: .*disabled',
    'R1: a disabled role is refused for a workspace admin too'
);
SELECT matches(
    tap.refusal(:'j_pub', 'main', 't100_us'),
    '^42501\|R1\|data table ws/main: .*u/pub.*not a tenant',
    'R1: a role the identity is no tenant of is refused, though the viewer (alice) is its tenant'
);
SELECT matches(
    tap.refusal(:'j_carol', 'main', 't100_emea'),
    '^42501\|R1\|data table ws/main: .*u/carol',
    'R1: carol, a tenant of nothing, may name no role'
);

-- R1 with admin named: the same check (workspace admin, or a tenant of admin)
SELECT is(
    tap.seen(:'j_adm', 'main', 'admin'), '1,2,3,4,5',
    'R1: a workspace admin names admin and sees every row'
);
SELECT is(
    tap.login_of(:'j_adm', 'main', 'admin'), 't100_admin',
    'R1: named admin is served by the data table''s admin login'
);
SELECT is(
    tap.roles_of(:'j_adm', 'main', 'admin'), '{admin}',
    'R1: named admin reports the roles {admin}'
);
SELECT is(
    tap.seen(:'j_tad', 'main', 'admin'), '1,2,3,4,5',
    'R1: a tenant of admin (u/tad) names admin and sees every row'
);
SELECT matches(
    tap.refusal(:'j_pub', 'main', 'admin'),
    '^42501\|R1\|data table ws/main: role admin',
    'R1: naming admin is refused for an identity that is neither admin nor a tenant of admin'
);
SELECT matches(
    tap.refusal(:'j_carol', 'main', 'admin'),
    '^42501\|R1\|data table ws/main: ',
    'R1: naming admin is tenant-checked even while the default is admin'
);

------------------------------------------------------------------------------
-- R2: default admin (as registered), no role named: {admin}, as before viewer
-- roles existed: no tenant check, no viewer lookup.
------------------------------------------------------------------------------
SELECT is(
    (SELECT d.default_role FROM datatable_roles.datatable AS d WHERE d.id = :dt_id),
    'admin', 'a registered data table starts with the default admin'
);
SELECT is(
    tap.seen(:'j_carol', 'main'), '1,2,3,4,5',
    'R2: carol, a tenant of nothing, sees every row with the default admin'
);
SELECT is(
    tap.login_of(:'j_carol', 'main'), 't100_admin',
    'R2: the connection is the admin login'
);
SELECT is(tap.roles_of(:'j_carol', 'main'), '{admin}', 'R2: roles {admin}');
SELECT is(
    tap.seen(:'j_pub', 'main'), '1,2,3,4,5',
    'R2: a viewer who is a tenant of t100_us is still served as admin (no narrowing)'
);
SELECT is(
    tap.roles_of(:'j_pub', 'main'), '{admin}',
    'R2: the viewer''s roles are not added to admin'
);
SELECT is(
    tap.seen(:'j_carol_sched', 'main'), '1,2,3,4,5',
    'R2: a scheduled job (no viewer) is served as admin too'
);
SELECT is(
    tap.step(:'j_pub', 'main', 'default') ->> 'rule', 'R2',
    'R2: the explanation shows the R2 step'
);
SELECT ok(
    tap.step(:'j_pub', 'main', 'viewer') IS null
    AND strpos(explain_datatable_role(:'j_pub', 'main')::text, 'alice@x.io') = 0,
    'R2: ... and no viewer step: the viewer is not looked up'
);

------------------------------------------------------------------------------
-- R8: a migration naming no role runs as admin, when the default is admin or
-- the identity may use admin; a migration naming a role follows R1.
------------------------------------------------------------------------------
SELECT is(
    tap.seen(:'j_carol', 'main', p_for_migration => true), '1,2,3,4,5',
    'R8: default admin: a migration of carol (no admin rights) runs as admin'
);
SELECT is(
    tap.login_of(:'j_carol', 'main', p_for_migration => true), 't100_admin',
    'R8: ... as the admin login'
);
SELECT is(
    tap.seen(:'j_pub', 'main', 't100_emea', p_for_migration => true), '1,4',
    'R8: default admin: a migration naming t100_emea follows R1 (emea rows only)'
);
SELECT matches(
    tap.refusal(:'j_carol', 'main', 't100_emea', p_for_migration => true),
    '^42501\|R1\|',
    'R8: a migration naming a role the identity may not use is refused by R1'
);

DO $$ BEGIN PERFORM set_datatable_default_role('ws', 'main', 't100_emea'); END $$;

SELECT is(
    tap.seen(:'j_pub', 'main'), '1,2,4,5',
    'default t100_emea: pub''s ordinary connection holds t100_emea plus its viewer''s t100_us'
);
SELECT matches(
    tap.refusal(:'j_pub', 'main', p_for_migration => true),
    '^42501\|R8\|data table ws/main: .*migration',
    'R8: default t100_emea: a migration of pub (no admin rights) naming no role is refused'
);
SELECT is(
    tap.seen(:'j_adm', 'main', p_for_migration => true), '1,2,3,4,5',
    'R8: a workspace admin''s migration runs as admin'
);
SELECT is(
    tap.seen(:'j_tad', 'main', p_for_migration => true), '1,2,3,4,5',
    'R8: a migration of a tenant of admin runs as admin'
);
SELECT is(
    tap.login_of(:'j_tad', 'main', p_for_migration => true), 't100_admin',
    'R8: ... as the admin login'
);
SELECT is(
    tap.seen(:'j_pub', 'main', 't100_emea', p_for_migration => true), '1,4',
    'R8: a migration naming t100_emea runs as t100_emea alone (not admin, no viewer roles)'
);
SELECT is(
    tap.login_of(:'j_pub', 'main', 't100_emea', p_for_migration => true), :'emea_login',
    'R8: ... with the one-role login of t100_emea that R1 gives'
);
SELECT matches(
    tap.refusal(:'j_pub', 'main', 't100_us', p_for_migration => true),
    '^42501\|R1\|',
    'R8: a migration naming a role the identity is no tenant of is refused (R1)'
);
SELECT matches(
    tap.refusal(:'j_pub', 'main', 'admin', p_for_migration => true),
    '^42501\|R1\|',
    'R8: a migration naming admin is refused for an identity that may not use admin (R1)'
);
SELECT matches(
    tap.refusal(:'j_carol', 'main', p_for_migration => true),
    '^42501\|R8\|',
    'R8: default t100_emea: carol''s migration is refused'
);

DO $$ BEGIN PERFORM set_datatable_default_role('ws', 'main', null); END $$;

SELECT matches(
    tap.refusal(:'j_pub', 'main', p_for_migration => true),
    '^42501\|R8\|',
    'R8: no default: a migration of pub naming no role is refused'
);
SELECT is(
    tap.seen(:'j_tad', 'main', p_for_migration => true), '1,2,3,4,5',
    'R8: no default: a tenant of admin still migrates as admin'
);
SELECT is(
    tap.seen(:'j_adm', 'main', p_for_migration => true), '1,2,3,4,5',
    'R8: no default: a workspace admin still migrates as admin'
);
SELECT matches(
    tap.refusal(:'j_tad', 'main'), '^42501\|R5\|',
    'no default, not a migration: the same job of tad (no viewer) is refused (R5), not admin'
);

------------------------------------------------------------------------------
-- The admin login's password changed outside the package (by the operator,
-- or by a job handed the admin login): the hot path reads no password, so the
-- stored one is handed out; the worker reports the refused connection, which
-- is named (55000) once a real login proved it; the package is given the new
-- one.
------------------------------------------------------------------------------
SELECT 'changed-' || :'admin_pw' AS new_admin_pw \gset
SELECT tap.exec_in('t100_dt', format(
    'SET ROLE t100_admin; ALTER ROLE t100_admin PASSWORD %L', :'new_admin_pw'
)) AS altered \gset
SELECT is(
    (SELECT r.password FROM tap.resolve(:'j_tad', 'main', 'admin') AS r), :'admin_pw',
    'a resolve to the admin login whose password was changed hands out the stored one'
);
SELECT tap.refused(
    $$SELECT heal_refused_login('t100_admin')$$, '55000',
    'the worker''s report of the refused connection is named: 55000 (admin_password)'
);
SELECT is(
    tap.seen(:'j_pub', 'main', 't100_emea'), '1,4',
    'a resolve to another login is not concerned'
);
SELECT tap.refused(
    format(
        $$SELECT set_datatable_admin_password('ws', 'main', %L)$$, :'admin_pw'
    ),
    '28P01',
    'set_datatable_admin_password with the old password is refused (28P01)'
);
SELECT tap.refused(
    $$SELECT set_datatable_admin_password('ws', 'main', NULL)$$, '22004',
    'set_datatable_admin_password with NULL is refused'
);
SELECT tap.refused(
    format(
        $$SELECT set_datatable_admin_password('ws', 'nosuch', %L)$$, :'new_admin_pw'
    ),
    'P0002',
    'set_datatable_admin_password of an unknown data table is refused'
);
SELECT lives_ok(
    format(
        $$SELECT set_datatable_admin_password('ws', 'main', %L)$$, :'new_admin_pw'
    ),
    'set_datatable_admin_password gives the package the new password'
);
SELECT is(
    (SELECT r.password FROM tap.resolve(:'j_tad', 'main', 'admin') AS r), :'new_admin_pw',
    'the admin login is handed out again, with the new password'
);
SELECT is(
    tap.seen(:'j_tad', 'main', 'admin'), '1,2,3,4,5',
    '... which logs in and sees every row'
);

SELECT * FROM finish();
