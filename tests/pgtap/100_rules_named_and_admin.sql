-- R1 (a named role), R2 (default admin) and R8 (migrations), as the rows a
-- resolved login sees in a data table under row-level security.
\set test t100
\ir lib/begin.psql

SELECT plan(51);

-- Workspace ws:
--   pub    tenant of t100_emea (u/pub) and t100_off (before it is disabled)
--   bob    in group emea, so a tenant of t100_emea through g/emea
--   carol  a tenant of nothing
--   adm    a workspace admin, a tenant of nothing
--   tad    a tenant of admin
--   alice  the viewer of the app jobs: a tenant of t100_us
SELECT tap.new_datatable_db('t100_dt', 't100_admin') AS admin_pw \gset
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
SELECT tap.allow_region('t100_dt', 't100_admin', 't100_emea', 'emea') AS ok \gset
SELECT tap.allow_region('t100_dt', 't100_admin', 't100_us', 'us') AS ok \gset
SELECT tap.allow_region('t100_dt', 't100_admin', 't100_off', 'apac') AS ok \gset
DO $$ BEGIN
    PERFORM set_datatable_role_tenants('ws', 'main', 't100_emea', '{u/pub,g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't100_us', '{u/alice}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't100_off', '{u/pub}');
    PERFORM set_datatable_role_tenants('ws', 'main', 'admin', '{u/tad}');
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
SELECT is(
    tap.login_of(:'j_pub', 'main', 't100_emea'), 't100_emea',
    'R1/R6: the named role is served by its own login'
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
    tap.login_of(:'j_pub', 'main', 't100_emea', p_for_migration => true), 't100_emea',
    'R8: ... with the role''s own login'
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

SELECT * FROM finish();
