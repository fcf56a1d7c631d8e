-- R3-R7 and R9-R12: a default role, no default, and the viewer's roles, as
-- the rows a resolved login sees; tenant keys (*, g/, f/), the cheap path,
-- and a fork's reference decided by the governing workspace.
\set test t110
\ir lib/begin.psql

SELECT plan(83);

-- Workspace ws (identities):
--   pub    tenant of t110_apac (u/pub), and in group emea
--   carol  tenant of nothing
-- (viewers):
--   alice  in group emea                 bob   tenant of t110_us (u/bob)
--   vic    in group emea and u/vic on t110_us
--   dan    tenant of nothing             wadm  a workspace admin, tenant of nothing
--   dora, erin, fred, gina, hank: folder and group stories
-- Workspace other: outsider, a member of ws of nothing.
SELECT tap.new_datatable_db('t110_dt', 't110_admin') AS admin_pw \gset
DO $$ BEGIN
    PERFORM add_workspace('ws');
    PERFORM add_workspace('other');
    PERFORM add_workspace_user('ws', 'pub', 'pub@x.io');
    PERFORM add_workspace_user('ws', 'carol', 'carol@x.io');
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_workspace_user('ws', 'bob', 'bob@x.io');
    PERFORM add_workspace_user('ws', 'vic', 'vic@x.io');
    PERFORM add_workspace_user('ws', 'dan', 'dan@x.io');
    PERFORM add_workspace_user('ws', 'wadm', 'wadm@x.io', true);
    PERFORM add_workspace_user('ws', 'dora', 'dora@x.io');
    PERFORM add_workspace_user('ws', 'erin', 'erin@x.io');
    PERFORM add_workspace_user('ws', 'fred', 'fred@x.io');
    PERFORM add_workspace_user('ws', 'gina', 'gina@x.io');
    PERFORM add_workspace_user('ws', 'hank', 'hank@x.io');
    PERFORM add_workspace_user('ws', 'zed', 'zed@x.io');
    PERFORM add_workspace_user('other', 'outsider', 'outsider@x.io');
    PERFORM add_group_member('ws', 'emea', 'pub');
    PERFORM add_group_member('ws', 'emea', 'alice');
    PERFORM add_group_member('ws', 'emea', 'vic');
    PERFORM create_datatable_role('t110_emea');
    PERFORM create_datatable_role('t110_us');
    PERFORM create_datatable_role('t110_apac');
    PERFORM create_datatable_role('t110_tmp');
    PERFORM create_datatable_role('t110_dis');
END $$;
-- Every data table entry of this file is a view of the same database.
SELECT register_datatable('ws', 'main', 't110_dt', 't110_admin', :'admin_pw') AS id_main \gset
SELECT register_datatable('ws', 'nodef', 't110_dt', 't110_admin', :'admin_pw') AS id_nodef \gset
SELECT register_datatable('ws', 'star', 't110_dt', 't110_admin', :'admin_pw') AS id_star \gset
SELECT register_datatable('ws', 'folders', 't110_dt', 't110_admin', :'admin_pw') AS id_f \gset
SELECT register_datatable('ws', 'cheap', 't110_dt', 't110_admin', :'admin_pw') AS id_cheap \gset
SELECT register_datatable('ws', 'r11', 't110_dt', 't110_admin', :'admin_pw') AS id_r11 \gset
SELECT register_datatable('ws', 'r11drop', 't110_dt', 't110_admin', :'admin_pw') AS id_drop \gset
SELECT register_datatable('ws', 'gov', 't110_dt', 't110_admin', :'admin_pw') AS id_gov \gset
SELECT register_datatable('ws', 'dis', 't110_dt', 't110_admin', :'admin_pw') AS id_dis \gset
SELECT tap.allow_region('t110_dt', 't110_admin', 't110_emea', 'emea') AS ok \gset
SELECT tap.allow_region('t110_dt', 't110_admin', 't110_us', 'us') AS ok \gset
SELECT tap.allow_region('t110_dt', 't110_admin', 't110_apac', 'apac') AS ok \gset
SELECT tap.allow_region('t110_dt', 't110_admin', 't110_dis', 'apac') AS ok \gset
DO $$ BEGIN
    -- main: default t110_apac
    PERFORM set_datatable_role_tenants('ws', 'main', 't110_emea', '{g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't110_us', '{u/bob,u/vic}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't110_apac', '{u/pub}');
    PERFORM set_datatable_default_role('ws', 'main', 't110_apac');
    -- nodef: the same map, no default
    PERFORM set_datatable_role_tenants('ws', 'nodef', 't110_emea', '{g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'nodef', 't110_us', '{u/bob,u/vic}');
    PERFORM set_datatable_role_tenants('ws', 'nodef', 't110_apac', '{u/pub}');
    PERFORM set_datatable_default_role('ws', 'nodef', null);
    -- star: every member of ws is a tenant of t110_us
    PERFORM set_datatable_role_tenants('ws', 'star', 't110_us', '{*}');
    PERFORM set_datatable_default_role('ws', 'star', null);
    -- folders: folder sales and group usteam
    PERFORM set_datatable_role_tenants('ws', 'folders', 't110_emea', '{f/sales}');
    PERFORM set_datatable_role_tenants('ws', 'folders', 't110_us', '{g/usteam}');
    PERFORM set_datatable_default_role('ws', 'folders', null);
    PERFORM set_folder_access('ws', 'sales', 'u/dora', 'read');
    PERFORM set_folder_access('ws', 'sales', 'g/fteam', 'write');
    PERFORM add_group_member('ws', 'fteam', 'erin');
    PERFORM set_folder_access('ws', 'sales', 'u/fred', 'owner');
    PERFORM set_folder_access('ws', 'other_folder', 'u/hank', 'owner');
    PERFORM add_group_member('ws', 'usteam', 'gina');
    -- cheap: only the default (t110_apac) and admin have tenants
    PERFORM set_datatable_role_tenants('ws', 'cheap', 't110_apac', '{u/pub}');
    PERFORM set_datatable_role_tenants('ws', 'cheap', 't110_emea', '{}');
    PERFORM set_datatable_role_tenants('ws', 'cheap', 'admin', '{u/pub}');
    PERFORM set_datatable_default_role('ws', 'cheap', 't110_apac');
    -- r11: default t110_apac, to be removed from the map
    PERFORM set_datatable_role_tenants('ws', 'r11', 't110_emea', '{g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'r11', 't110_apac', '{u/pub}');
    PERFORM set_datatable_default_role('ws', 'r11', 't110_apac');
    -- r11drop: default t110_tmp, to be dropped from the catalog
    PERFORM set_datatable_role_tenants('ws', 'r11drop', 't110_emea', '{g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'r11drop', 't110_tmp', '{u/pub}');
    PERFORM set_datatable_default_role('ws', 'r11drop', 't110_tmp');
    -- dis: default t110_dis (sees apac), to be disabled
    PERFORM set_datatable_role_tenants('ws', 'dis', 't110_emea', '{g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'dis', 't110_dis', '{u/pub,u/dan}');
    PERFORM set_datatable_default_role('ws', 'dis', 't110_dis');
END $$;

-- Jobs on ws.
SELECT tap.start_job('ws', 'u/pub', 'app', 'alice@x.io') AS j_pub_alice \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'bob@x.io') AS j_pub_bob \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'vic@x.io') AS j_pub_vic \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'dan@x.io') AS j_pub_dan \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'wadm@x.io') AS j_pub_wadm \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'outsider@x.io') AS j_pub_out \gset
SELECT tap.start_job('ws', 'u/pub', 'app') AS j_pub_anon \gset
SELECT tap.start_job('ws', 'u/pub', 'schedule') AS j_pub_sched \gset
SELECT tap.start_job('ws', 'u/pub', 'trigger') AS j_pub_trig \gset
SELECT tap.start_job('ws', 'u/pub', 'agent_tool') AS j_pub_agent \gset
SELECT tap.start_job('ws', 'u/pub', 'run', 'pub@x.io') AS j_pub_run \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'alice@x.io') AS j_carol_alice \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'vic@x.io') AS j_carol_vic \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'dan@x.io') AS j_carol_dan \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'wadm@x.io') AS j_carol_wadm \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'outsider@x.io') AS j_carol_out \gset
SELECT tap.start_job('ws', 'u/carol', 'app') AS j_carol_anon \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'dora@x.io') AS j_dora \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'erin@x.io') AS j_erin \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'fred@x.io') AS j_fred \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'gina@x.io') AS j_gina \gset
SELECT tap.start_job('ws', 'u/carol', 'app', 'hank@x.io') AS j_hank \gset

------------------------------------------------------------------------------
-- R3: default t110_apac, usable by pub: {apac} plus the viewer's roles
------------------------------------------------------------------------------
SELECT is(
    tap.seen(:'j_pub_alice', 'main'), '1,3,4',
    'R3: pub (tenant of the default) with viewer alice (g/emea) sees apac + emea'
);
SELECT is(
    tap.roles_of(:'j_pub_alice', 'main'), '{t110_apac,t110_emea}',
    'R3: the connection holds the default and the viewer''s role'
);
SELECT is(
    tap.seen(:'j_pub_bob', 'main'), '2,3,5',
    'R3: the same app with viewer bob (u/bob) sees apac + us'
);
SELECT is(
    tap.seen(:'j_pub_vic', 'main'), '1,2,3,4,5',
    'R3: viewer vic (g/emea, u/vic) adds both of their roles'
);
SELECT is(
    tap.roles_of(:'j_pub_vic', 'main'), '{t110_apac,t110_emea,t110_us}',
    'R3: ... three roles'
);
SELECT is(
    tap.seen(:'j_pub_dan', 'main'), '3',
    'R3: a viewer who is a tenant of nothing leaves the default alone'
);
SELECT is(
    tap.seen(:'j_carol_alice', 'main'), '1,4',
    'R3: carol may not use the default: only viewer alice''s role (emea)'
);
SELECT is(
    tap.seen(:'j_carol_vic', 'main'), '1,2,4,5',
    'R3: carol with viewer vic: only vic''s roles (emea + us), never the default'
);


-- R3 with the default disabled: it is not held, whoever the identity is
SELECT is(tap.seen(:'j_pub_alice', 'dis'), '1,3,4', 'R3: before: default t110_dis + emea');
SELECT is(
    tap.seen(:'j_carol_dan', 'dis'), '3',
    'R3: before: carol (no tenant) with viewer dan, a tenant of t110_dis: dan''s t110_dis'
);
SELECT lives_ok(
    $$SELECT set_datatable_role_enabled('t110_dis', false)$$,
    'R3: the default role t110_dis is disabled'
);
SELECT is(
    tap.seen(:'j_pub_alice', 'dis'), '1,4',
    'R3: default disabled: only the viewer''s roles, though pub is a tenant of the default'
);
SELECT matches(
    tap.refusal(:'j_pub_sched', 'dis'), '^42501\|R5\|',
    'R3/R5: default disabled and no viewer: refused'
);
SELECT matches(
    tap.refusal(:'j_carol_dan', 'dis'), '^42501\|R5\|',
    'R3/R5: a disabled role is no viewer role either: dan now holds nothing'
);
SELECT is(
    tap.step(:'j_pub_sched', 'dis', 'default') ->> 'why', 'the default role is disabled',
    'R3: the explanation says the default is disabled'
);

------------------------------------------------------------------------------
-- R6 / R7: one role is a scoped login of this database holding exactly it
-- (login_kind role); several are the set login of exactly that set (set)
------------------------------------------------------------------------------
SELECT
    login AS ca_login, login_kind AS ca_kind, roles AS ca_roles
FROM tap.resolve(:'j_carol_alice', 'main') \gset
SELECT is(
    :'ca_kind'::text || ' ' || :'ca_roles'::text, 'role {t110_emea}',
    'R6: a single role (t110_emea) gives login_kind role'
);
SELECT matches(
    :'ca_login'::text, '^wm_set_[0-9a-f]{40}$',
    'R6: ... a scoped wm_set_ login, not the role''s own'
);
SELECT is(
    tap.memberships(:'ca_login'), tap.with_login_group('{t110_emea}'),
    'R6: ... holding exactly t110_emea'
);
SELECT is(
    tap.memberships(tap.login_of(:'j_pub_dan', 'main')), tap.with_login_group('{t110_apac}'),
    'R6: the default alone is served by the login holding exactly it'
);
SELECT is(
    (SELECT r.login_kind FROM tap.resolve(:'j_pub_alice', 'main') AS r), 'set',
    'R7: two roles give login_kind set'
);
SELECT matches(
    tap.login_of(:'j_pub_alice', 'main'), '^wm_set_[0-9a-f]{40}$',
    'R7: two roles are served by a wm_set_ login'
);
SELECT is(
    tap.memberships(tap.login_of(:'j_pub_alice', 'main')),
    tap.with_login_group('{t110_apac,t110_emea}'),
    'R7: ... holding exactly both'
);
SELECT isnt(
    tap.login_of(:'j_pub_alice', 'main'), tap.login_of(:'j_pub_bob', 'main'),
    'R7: another set of roles is another set login'
);
SELECT is(
    tap.seen(:'j_pub_vic', 'nodef'), '1,2,4,5',
    'R7: the set login of {emea, us} sees the union of both roles'' rows'
);
SELECT matches(
    tap.login_of(:'j_pub_vic', 'nodef'), '^wm_set_[0-9a-f]{40}$',
    'R7: ... as a wm_set_ login'
);

------------------------------------------------------------------------------
-- R4: no default: the viewer's roles only
------------------------------------------------------------------------------
SELECT is(tap.default_of('ws', 'nodef'), '*none*', 'R12: no default is stored as *none*');
SELECT is(
    tap.seen(:'j_pub_alice', 'nodef'), '1,4',
    'R4: no default: pub''s own tenancy of t110_apac gives nothing; alice''s emea only'
);
SELECT is(
    tap.login_of(:'j_pub_alice', 'nodef'), :'ca_login',
    'R4/R6: ... as the login of t110_emea on this database (the one carol''s job got on main)'
);
SELECT is(tap.seen(:'j_pub_bob', 'nodef'), '2,5', 'R4: viewer bob: us only');

------------------------------------------------------------------------------
-- R5: an empty result is refused, never an empty login
------------------------------------------------------------------------------
SELECT matches(
    tap.refusal(:'j_pub_sched', 'nodef'),
    '^42501\|R5\|data table ws/nodef: .*no default',
    'R5: no default and no viewer: refused'
);
SELECT matches(
    tap.refusal(:'j_pub_dan', 'nodef'),
    '^42501\|R5\|data table ws/nodef: ',
    'R5: no default and a viewer who is a tenant of nothing: refused'
);
SELECT matches(
    tap.refusal(:'j_carol_dan', 'main'),
    '^42501\|R5\|data table ws/main: .*u/carol.*t110_apac',
    'R5: a default the identity may not use and a viewer with no roles: refused'
);
SELECT matches(
    tap.refusal(:'j_carol_anon', 'main'),
    '^42501\|R5\|data table ws/main: ',
    'R5: a default the identity may not use and an anonymous viewer: refused'
);

------------------------------------------------------------------------------
-- R9: no viewer recorded, or a viewer outside the governing workspace
------------------------------------------------------------------------------
SELECT is(
    tap.seen(:'j_pub_anon', 'main'), '3',
    'R9: anonymous app viewer: the default only'
);
SELECT is(
    tap.seen(:'j_pub_sched', 'main'), '3',
    'R9: schedule: the default only (pub is in g/emea, but the identity is no viewer)'
);
SELECT is(tap.seen(:'j_pub_trig', 'main'), '3', 'R9: trigger: the default only');
SELECT is(tap.seen(:'j_pub_agent', 'main'), '3', 'R9: AI agent tool job: the default only');
SELECT is(
    tap.seen(:'j_pub_run', 'main'), '1,3,4',
    'contrast: a direct run by pub has pub as its viewer (g/emea is added)'
);
SELECT is(
    tap.seen(:'j_pub_out', 'main'), '3',
    'R9: a viewer who is not a member of the governing workspace adds nothing'
);
SELECT matches(
    tap.refusal(:'j_pub_out', 'nodef'),
    '^42501\|R5\|.*not a member of the governing workspace',
    'R9/R5: no default and a viewer outside the workspace: refused'
);
SELECT matches(
    tap.refusal(:'j_pub_anon', 'nodef'), '^42501\|R5\|',
    'R9/R5: no default and an anonymous viewer: refused'
);
SELECT matches(
    tap.refusal(:'j_pub_agent', 'nodef'), '^42501\|R5\|',
    'R9/R5: no default and an agent tool job: refused'
);
SELECT is(
    tap.seen(:'j_pub_sched', 'nodef', 't110_apac'), '3',
    'R9: a job without a viewer can still be served by a named role'
);

------------------------------------------------------------------------------
-- A workspace-admin viewer gets nothing extra
------------------------------------------------------------------------------
SELECT is(
    tap.seen(:'j_pub_wadm', 'main'), '3',
    'workspace-admin viewer: nothing beyond the default'
);
SELECT matches(
    tap.refusal(:'j_carol_wadm', 'nodef'), '^42501\|R5\|',
    'workspace-admin viewer with no default: refused (admin status is no tenancy)'
);

------------------------------------------------------------------------------
-- Tenant keys: '*', g/, f/
------------------------------------------------------------------------------
SELECT is(tap.seen(:'j_carol_dan', 'star'), '2,5', '*: dan, a plain member, is a tenant');
SELECT is(tap.seen(:'j_carol_wadm', 'star'), '2,5', '*: a workspace admin is a member too');
SELECT matches(
    tap.refusal(:'j_carol_out', 'star'), '^42501\|R5\|',
    '*: a viewer outside the workspace is no member'
);
SELECT is(tap.seen(:'j_dora', 'folders'), '1,4', 'f/: read on the folder, directly');
SELECT is(tap.seen(:'j_erin', 'folders'), '1,4', 'f/: write on the folder, through a group');
SELECT is(tap.seen(:'j_fred', 'folders'), '1,4', 'f/: owner of the folder');
SELECT is(tap.seen(:'j_gina', 'folders'), '2,5', 'g/: a member of the group');
SELECT matches(
    tap.refusal(:'j_hank', 'folders'), '^42501\|R5\|',
    'f/ and g/: hank (owner of another folder, in no group) is named by neither'
);
DO $$ BEGIN
    PERFORM set_folder_access('ws', 'sales', 'u/dora', 'none');
    PERFORM set_folder_access('ws', 'sales', 'g/fteam', 'read');
    PERFORM add_group_member('ws', 'usteam', 'hank');
END $$;
SELECT matches(
    tap.refusal(:'j_dora', 'folders'), '^42501\|R5\|',
    'f/: the same job of dora, after her folder access is taken away: refused (current)'
);
SELECT is(tap.seen(:'j_erin', 'folders'), '1,4', 'f/: read through a group counts as well');
SELECT is(
    tap.seen(:'j_hank', 'folders'), '2,5',
    'g/: the same job of hank, after he joins the group: us (current memberships)'
);

------------------------------------------------------------------------------
-- R10: the viewer is looked up only when a role other than the default and
-- admin has tenants
------------------------------------------------------------------------------
SELECT is(
    tap.step(:'j_pub_alice', 'cheap', 'viewer') ->> 'rule', 'R10',
    'R10: only the default and admin have tenants: the explanation shows the R10 step'
);
SELECT ok(
    NOT tap.step(:'j_pub_alice', 'cheap', 'viewer') ? 'viewer'
    AND strpos(explain_datatable_role(:'j_pub_alice', 'cheap')::text, 'alice@x.io') = 0,
    'R10: ... and no viewer step: the viewer is not looked up (nor mentioned)'
);
SELECT is(
    tap.seen(:'j_pub_alice', 'cheap'), '3',
    'R10: the connection holds the default alone'
);
DO $$ BEGIN PERFORM set_datatable_role_tenants('ws', 'cheap', 't110_emea', '{g/emea}'); END $$;
SELECT is(
    tap.step(:'j_pub_alice', 'cheap', 'viewer') ->> 'viewer', 'alice@x.io',
    'R10: once t110_emea has tenants, the explanation has a viewer step naming the viewer'
);
SELECT is(
    tap.step(:'j_pub_alice', 'cheap', 'viewer') -> 'roles',
    '[{"role": "t110_emea", "named_by": ["g/emea"]}]'::jsonb,
    'R10: ... which shows the role and the tenant key that named the viewer'
);
SELECT is(tap.seen(:'j_pub_alice', 'cheap'), '1,3,4', 'R10: ... and alice''s emea is added');

------------------------------------------------------------------------------
-- R11 / R12: removing or dropping the default leaves no default, for good
------------------------------------------------------------------------------
SELECT is(tap.seen(:'j_pub_alice', 'r11'), '1,3,4', 'R11: before: default apac + emea');
DO $$ BEGIN PERFORM remove_datatable_role('ws', 'r11', 't110_apac'); END $$;
SELECT is(
    tap.default_of('ws', 'r11'), '*none*',
    'R11/R12: the default removed from the map becomes the marker *none*'
);
SELECT is(tap.seen(:'j_pub_alice', 'r11'), '1,4', 'R11: now only the viewer''s roles (R4)');
SELECT matches(
    tap.refusal(:'j_pub_sched', 'r11'),
    '^42501\|R5\|.*no default',
    'R11: a job without a viewer is now refused, not served as admin'
);
DO $$ BEGIN PERFORM set_datatable_role_tenants('ws', 'r11', 't110_apac', '{u/pub}'); END $$;
SELECT is(
    tap.default_of('ws', 'r11'), '*none*',
    'R11: putting the role back in the map does not bring the default back'
);
SELECT matches(
    tap.refusal(:'j_pub_sched', 'r11'), '^42501\|R5\|',
    'R11: ... and the job without a viewer is still refused'
);
SET client_min_messages = error;
DO $$ BEGIN PERFORM set_datatable_default_role('ws', 'r11', 'admin'); END $$;
SET client_min_messages = warning;
SELECT is(
    tap.seen(:'j_pub_sched', 'r11'), '1,2,3,4,5',
    'R11: an explicit set to admin is allowed: admin again'
);

SELECT is(
    tap.roles_of(:'j_pub_sched', 'r11drop'), '{t110_tmp}',
    'R11: before the drop, the default t110_tmp serves pub'
);
SELECT lives_ok(
    $$SELECT drop_datatable_role('t110_tmp')$$,
    'R11: the default role is dropped from the catalog'
);
SELECT is(
    tap.default_of('ws', 'r11drop'), '*none*',
    'R11: the default dropped from the catalog becomes *none*'
);
SELECT matches(
    tap.refusal(:'j_pub_sched', 'r11drop'), '^42501\|R5\|',
    'R11: after the drop, no default: a job without a viewer is refused'
);
SELECT is(
    tap.seen(:'j_pub_alice', 'r11drop'), '1,4',
    'R11: after the drop, the viewer''s roles only'
);

SELECT throws_ok(
    $$SELECT validate_role_name('*none*')$$, '22023', null,
    'R12: the marker *none* is not a valid role name'
);
SELECT ok(
    NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '*none*')
    AND NOT EXISTS (SELECT FROM datatable_roles.catalog_role WHERE name = '*none*'),
    'R12: no catalog role or PostgreSQL role is named *none*'
);
SELECT matches(
    tap.refusal(:'j_pub_alice', 'nodef', '*none*'),
    '^42501\|R1\|.*not in the data table''s role map',
    'R12: a worker reading the marker as its role asks for a role the data table lacks: refused'
);

------------------------------------------------------------------------------
-- References: a fork's entry is decided by the governing workspace
------------------------------------------------------------------------------
-- Workspace fork: pub_f (pub@x.io), alice_f (alice@x.io), zed_f (zed@x.io, in
-- the fork's groups emea and apacteam), only_f (only in the fork).
-- In ws, zed is in no group; bob is in ws only.
DO $$ BEGIN
    PERFORM set_datatable_role_tenants('ws', 'gov', 't110_apac', '{u/pub,g/apacteam}');
    PERFORM set_datatable_role_tenants('ws', 'gov', 't110_emea', '{g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'gov', 't110_us', '{u/bob}');
    PERFORM set_datatable_default_role('ws', 'gov', 't110_apac');
    PERFORM add_workspace('fork');
    PERFORM add_workspace_user('fork', 'pub_f', 'pub@x.io');
    PERFORM add_workspace_user('fork', 'alice_f', 'alice@x.io');
    PERFORM add_workspace_user('fork', 'zed_f', 'zed@x.io');
    PERFORM add_workspace_user('fork', 'only_f', 'onlyfork@x.io');
    PERFORM add_group_member('fork', 'emea', 'zed_f');
    PERFORM add_group_member('fork', 'apacteam', 'zed_f');
    PERFORM reference_datatable('fork', 'gov', 'ws', 'gov');
END $$;
SELECT tap.start_job('fork', 'u/pub_f', 'app', 'alice@x.io') AS jf_alice \gset
SELECT tap.start_job('fork', 'u/pub_f', 'app', 'zed@x.io') AS jf_zed \gset
SELECT tap.start_job('fork', 'u/pub_f', 'app', 'bob@x.io') AS jf_bob \gset
SELECT tap.start_job('fork', 'u/pub_f', 'app', 'onlyfork@x.io') AS jf_only \gset
SELECT tap.start_job('fork', 'u/zed_f', 'schedule') AS jf_zed_sched \gset

SELECT is(
    tap.seen(:'jf_alice', 'gov'), '1,3,4',
    'reference: identity pub_f is u/pub in ws by email (apac); viewer alice is in g/emea of ws'
);
SELECT is(
    tap.seen(:'jf_bob', 'gov'), '2,3,5',
    'reference: a viewer who is a member of the governing workspace only (bob) counts'
);
SELECT is(
    tap.seen(:'jf_zed', 'gov'), '3',
    'reference: the viewer''s groups in the fork (g/emea there) count for nothing'
);
SELECT is(
    tap.seen(:'jf_only', 'gov'), '3',
    'reference: a viewer who is a member of the fork only is no viewer (R9)'
);
SELECT matches(
    tap.refusal(:'jf_zed_sched', 'gov'),
    '^42501\|R5\|data table fork/gov: ',
    'reference: the identity''s fork group apacteam does not make it a tenant of the default'
);
SELECT matches(
    tap.refusal(:'jf_zed_sched', 'gov', 't110_apac'),
    '^42501\|R1\|data table fork/gov: ',
    'reference: ... nor lets it name the default (R1 is checked in the governing workspace)'
);

SELECT * FROM finish();
