-- The directory: workspaces, users, groups and folder grants. Adds are
-- idempotent upserts, removing what is absent changes nothing and returns
-- false, and removing a user
-- takes their memberships, folder grants and u/ tenant keys with them.
\set test t10
\ir lib/begin.psql

SELECT plan(171);

------------------------------------------------------------------------------
-- add_workspace
------------------------------------------------------------------------------
SELECT lives_ok($$SELECT add_workspace('ws')$$, 'add_workspace creates a workspace');
SELECT results_eq(
    $$SELECT name FROM datatable_roles.workspace ORDER BY name$$,
    ARRAY['ws'],
    'the workspace is stored'
);
SELECT tap.no_op($$SELECT add_workspace('ws')$$, 'add_workspace of an existing workspace');
SELECT lives_ok(
    format(
        'SELECT add_workspace(%L), add_workspace(%L), add_workspace(%L)',
        'other',
        'a.b-c_9',
        repeat('w', 255)
    ),
    'workspace names with dots, dashes, digits and 255 characters are accepted'
);

SELECT
    tap.refused(
        format('SELECT add_workspace(%L)', n), '22023',
        format('add_workspace(%s) is refused as an invalid name', to_jsonb(n))
    )
FROM unnest(ARRAY[
    '', ' ', 'a b', '.hidden', 'ws/x', 'w''s', 'wś', repeat('w', 256),
    'x''; DROP ROLE dtr_owner; --', 'ws' || chr(10), chr(10) || 'ws'
]) AS n;
SELECT tap.refused($$SELECT add_workspace(NULL)$$, '22004', 'add_workspace(NULL) is refused');

------------------------------------------------------------------------------
-- add_workspace_user
------------------------------------------------------------------------------
SELECT lives_ok(
    $$SELECT add_workspace_user('ws', 'alice', 'alice@x.io')$$,
    'add_workspace_user adds a user'
);
SELECT results_eq(
    $$SELECT username, email, is_admin FROM datatable_roles.workspace_user WHERE workspace = 'ws'$$,
    $$VALUES ('alice'::text, 'alice@x.io'::text, false)$$,
    'the user is stored, not an admin by default'
);
SELECT tap.no_op(
    $$SELECT add_workspace_user('ws', 'alice', 'alice@x.io')$$,
    'add_workspace_user of the same user again'
);
SELECT lives_ok(
    $$SELECT add_workspace_user('ws', 'alice', 'Alice@Example.io', true)$$,
    'add_workspace_user of an existing user updates it'
);
SELECT results_eq(
    $$SELECT username, email, is_admin FROM datatable_roles.workspace_user WHERE workspace = 'ws'$$,
    $$VALUES ('alice'::text, 'Alice@Example.io'::text, true)$$,
    'the email and admin flag are updated, still one row'
);
SELECT lives_ok(
    $$SELECT add_workspace_user('ws', 'alice', 'alice@x.io', false)$$,
    'the admin flag can be taken away again'
);
SELECT is(
    (
        SELECT is_admin
        FROM datatable_roles.workspace_user
        WHERE workspace = 'ws' AND username = 'alice'
    ),
    false,
    'alice is no longer an admin'
);
DO $$
BEGIN
    PERFORM add_workspace_user('ws', 'bob', 'bob@x.io');
    PERFORM add_workspace_user('ws', 'alice2', 'alice2@x.io');
END $$;

-- Email uniqueness is per workspace and case-insensitive.
SELECT tap.refused(
    $$SELECT add_workspace_user('ws', 'carol', 'alice@x.io')$$, '23505',
    'a new user with the email of another user of the workspace is refused'
);
SELECT tap.refused(
    $$SELECT add_workspace_user('ws', 'carol', 'ALICE@X.IO')$$, '23505',
    'the email check ignores case'
);
SELECT tap.refused(
    $$SELECT add_workspace_user('ws', 'bob', 'alice@x.io')$$, '23505',
    'an existing user cannot take the email of another user'
);
SELECT lives_ok(
    $$SELECT add_workspace_user('other', 'alice', 'alice@x.io')$$,
    'the same email in another workspace is accepted'
);
SELECT lives_ok(
    $$SELECT add_workspace_user('other', 'zed', 'bob@x.io')$$,
    'another workspace may give the email to a user of another name'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM datatable_roles.workspace_user
        WHERE lower(email) = 'alice@x.io'
    ),
    2,
    'alice@x.io belongs to one user in each of the two workspaces'
);

SELECT tap.refused(
    $$SELECT add_workspace_user('nowhere', 'dave', 'dave@x.io')$$, 'P0002',
    'add_workspace_user in an unknown workspace is refused'
);
SELECT
    tap.refused(
        format('SELECT add_workspace_user(%L, %L, %L)', 'ws', u, 'dave@x.io'), '22023',
        format('add_workspace_user with username %s is refused', quote_literal(u))
    )
FROM unnest(ARRAY['', 'da ve', 'u/dave', '.dave', 'dave''; --', repeat('d', 256)]) AS u;
SELECT
    tap.refused(
        format('SELECT add_workspace_user(%L, %L, %L)', 'ws', 'dave', e), '22023',
        format('add_workspace_user with email %s is refused', quote_literal(e))
    )
FROM
    unnest(
        ARRAY['', 'dave', 'dave@', '@x.io', 'da ve@x.io', 'dave@x@y', repeat('d', 320) || '@x.io']
    ) AS e;
SELECT tap.refused(
    $$SELECT add_workspace_user('ws', 'dave', NULL)$$, '22004',
    'add_workspace_user with a NULL email is refused'
);
SELECT tap.refused(
    $$SELECT add_workspace_user('ws', NULL, 'dave@x.io')$$, '22004',
    'add_workspace_user with a NULL username is refused'
);
SELECT tap.refused(
    $$SELECT add_workspace_user('ws', 'dave', 'dave@x.io', NULL)$$, '22004',
    'add_workspace_user with a NULL admin flag is refused'
);

------------------------------------------------------------------------------
-- groups
------------------------------------------------------------------------------
SELECT lives_ok(
    $$SELECT add_group_member('ws', 'emea', 'alice')$$,
    'add_group_member adds a member'
);
SELECT tap.no_op(
    $$SELECT add_group_member('ws', 'emea', 'alice')$$,
    'add_group_member of an existing member'
);
DO $$
BEGIN
    PERFORM add_group_member('ws', 'ops', 'alice');
    PERFORM add_group_member('ws', 'emea', 'bob');
    PERFORM add_group_member('other', 'emea', 'alice');
END $$;
SELECT results_eq(
    $$SELECT group_name, username FROM datatable_roles.group_member WHERE workspace = 'ws'
      ORDER BY 1, 2$$,
    $$VALUES ('emea'::text, 'alice'::text), ('emea', 'bob'), ('ops', 'alice')$$,
    'the groups of the workspace'
);
SELECT tap.refused(
    $$SELECT add_group_member('ws', 'emea', 'nobody')$$, 'P0002',
    'add_group_member of a user who is not a member of the workspace is refused'
);
SELECT tap.refused(
    $$SELECT add_group_member('ws', 'emea', 'zed')$$, 'P0002',
    'add_group_member of a user of another workspace is refused'
);
SELECT tap.refused(
    $$SELECT add_group_member('nowhere', 'emea', 'alice')$$, 'P0002',
    'add_group_member in an unknown workspace is refused'
);
SELECT tap.refused(
    $$SELECT add_group_member('ws', 'em ea', 'alice')$$, '22023',
    'add_group_member with an invalid group name is refused'
);
SELECT tap.refused(
    $$SELECT add_group_member('ws', NULL, 'alice')$$, '22004',
    'add_group_member with a NULL group is refused'
);

SELECT lives_ok(
    $$SELECT remove_group_member('ws', 'emea', 'bob')$$,
    'remove_group_member removes a member'
);
SELECT is(
    (
        SELECT count(*)::integer FROM datatable_roles.group_member
        WHERE workspace = 'ws' AND group_name = 'emea' AND username = 'bob'
    ),
    0,
    'bob is no longer in emea'
);
SELECT is(
    remove_group_member('ws', 'emea', 'bob'), false,
    'removing a member who is not in the group changes nothing and says so'
);
SELECT is(
    remove_group_member('ws', 'emea', 'nobody'), false,
    'remove_group_member of an unknown user changes nothing and says so'
);
SELECT tap.refused(
    $$SELECT remove_group_member('nowhere', 'emea', 'alice')$$, 'P0002',
    'remove_group_member in an unknown workspace is refused'
);

------------------------------------------------------------------------------
-- folders
------------------------------------------------------------------------------
SELECT lives_ok(
    $$SELECT set_folder_access('ws', 'reports', 'u/alice', 'read')$$,
    'set_folder_access grants a user read'
);
SELECT lives_ok(
    $$SELECT set_folder_access('ws', 'shared', 'g/ops', 'write')$$,
    'set_folder_access grants a group write'
);
SELECT lives_ok(
    $$SELECT set_folder_access('ws', 'mine', 'u/alice', 'owner')$$,
    'set_folder_access makes a user owner'
);
SELECT tap.no_op(
    $$SELECT set_folder_access('ws', 'reports', 'u/alice', 'read')$$,
    'set_folder_access with the same grant again'
);
SELECT lives_ok(
    $$SELECT set_folder_access('ws', 'reports', 'u/alice', 'write')$$,
    'set_folder_access changes an existing grant'
);
SELECT results_eq(
    $$SELECT folder, principal, access FROM datatable_roles.folder_access WHERE workspace = 'ws'
      ORDER BY 1, 2$$,
    $$VALUES ('mine'::text, 'u/alice'::text, 'owner'::text), ('reports', 'u/alice', 'write'),
             ('shared', 'g/ops', 'write')$$,
    'one row per folder and principal, holding the last access'
);
SELECT is(
    array(SELECT k FROM unnest(datatable_roles.member_keys('ws', 'alice')) AS k ORDER BY k),
    ARRAY['*', 'f/mine', 'f/reports', 'f/shared', 'g/emea', 'g/ops', 'u/alice'],
    'alice is named by *, u/alice, her groups, and her folders (direct and through g/ops)'
);
SELECT is(
    array(SELECT k FROM unnest(datatable_roles.member_keys('ws', 'bob')) AS k ORDER BY k),
    ARRAY['*', 'u/bob'],
    'bob is named by * and u/bob only'
);

SELECT lives_ok(
    $$SELECT set_folder_access('ws', 'mine', 'u/alice', 'none')$$,
    'set_folder_access none takes a grant away'
);
SELECT is(
    (
        SELECT count(*)::integer FROM datatable_roles.folder_access
        WHERE workspace = 'ws' AND folder = 'mine'
    ),
    0,
    'access none deletes the row'
);
SELECT tap.no_op(
    $$SELECT set_folder_access('ws', 'mine', 'u/alice', 'none')$$,
    'set_folder_access none where there is no grant'
);
SELECT
    tap.refused(
        format('SELECT set_folder_access(%L, %L, %L, %L)', 'ws', 'reports', p, 'read'), '22023',
        format('set_folder_access with principal %s is refused', quote_literal(p))
    )
FROM
    unnest(
        ARRAY['alice', 'x/alice', 'f/reports', '*', 'U/alice', '', 'g/', 'g/o ps', 'g/ops''; --']
    ) AS p;
SELECT
    tap.refused(
        format('SELECT set_folder_access(%L, %L, %L, %L)', 'ws', 'reports', 'u/alice', a), '22023',
        format('set_folder_access with access %s is refused', quote_literal(a))
    )
FROM unnest(ARRAY['', 'admin', 'READ', 'read ', 'all']) AS a;
SELECT tap.refused(
    $$SELECT set_folder_access('ws', 'rep orts', 'u/alice', 'read')$$, '22023',
    'set_folder_access with an invalid folder name is refused'
);
SELECT tap.refused(
    $$SELECT set_folder_access('ws', 'reports', 'u/nobody', 'read')$$, 'P0002',
    'set_folder_access to a user who is not a member of the workspace is refused'
);
SELECT tap.refused(
    $$SELECT set_folder_access('nowhere', 'reports', 'u/alice', 'read')$$, 'P0002',
    'set_folder_access in an unknown workspace is refused'
);
SELECT tap.refused(
    $$SELECT set_folder_access('ws', 'reports', NULL, 'read')$$, '22004',
    'set_folder_access with a NULL principal is refused'
);
SELECT tap.refused(
    $$SELECT set_folder_access('ws', 'reports', 'u/alice', NULL)$$, '22004',
    'set_folder_access with a NULL access is refused'
);

------------------------------------------------------------------------------
-- remove_workspace_user
------------------------------------------------------------------------------
-- alice is named as u/alice on a data table of ws (a role's tenants and
-- admin's), and in the other workspace too; alice2 must not be touched.
SELECT tap.new_datatable_db('t10_dt', 't10_admin') AS admin_pw \gset
DO $$
BEGIN
    PERFORM create_datatable_role('t10_r');
    PERFORM set_folder_access('ws', 'mine', 'u/alice', 'owner');
    PERFORM set_folder_access('ws', 'reports', 'u/alice2', 'read');
    PERFORM set_folder_access('other', 'reports', 'u/alice', 'read');
END $$;
SELECT
    ok(
        register_datatable('ws', 'main', 't10_dt', 't10_admin', :'admin_pw') > 0,
        'ws/main registered'
    );
SELECT
    ok(
        register_datatable('other', 'main', 't10_dt', 't10_admin', :'admin_pw') > 0,
        'other/main registered'
    );
DO $$
BEGIN
    PERFORM set_datatable_role_tenants('ws', 'main', 't10_r', '{u/alice,u/alice2,g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'main', 'admin', '{u/alice,u/bob}');
    PERFORM set_datatable_role_tenants('other', 'main', 't10_r', '{u/alice}');
    PERFORM set_datatable_role_tenants('other', 'main', 'admin', '{u/alice}');
END $$;

SELECT lives_ok(
    $$SELECT remove_workspace_user('ws', 'alice')$$,
    'remove_workspace_user removes a user'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM datatable_roles.workspace_user
        WHERE workspace = 'ws' AND username = 'alice'
    ),
    0,
    'the user row is gone'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM datatable_roles.group_member
        WHERE workspace = 'ws' AND username = 'alice'
    ),
    0,
    'her group memberships are gone'
);
SELECT results_eq(
    $$SELECT folder, principal FROM datatable_roles.folder_access
      WHERE workspace = 'ws' ORDER BY 1, 2$$,
    $$VALUES ('reports'::text, 'u/alice2'::text), ('shared', 'g/ops')$$,
    'her folder grants are gone, other grants stay'
);
SELECT is(
    tap.tenants('ws', 'main', 't10_r'),
    '{g/emea,u/alice2}'::text[],
    'u/alice is gone from the role tenants, u/alice2 stays'
);
SELECT is(
    tap.tenants('ws', 'main', 'admin'),
    '{u/bob}'::text[],
    'u/alice is gone from the admin tenants'
);
SELECT is(
    tap.tenants('other', 'main', 't10_r'),
    '{u/alice}'::text[],
    'the other workspace keeps its u/alice tenant key'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM datatable_roles.workspace_user
        WHERE workspace = 'other' AND username = 'alice'
    )
    + (
        SELECT count(*)::integer
        FROM datatable_roles.group_member
        WHERE workspace = 'other' AND username = 'alice'
    )
    + (
        SELECT count(*)::integer
        FROM datatable_roles.folder_access
        WHERE workspace = 'other' AND principal = 'u/alice'
    ),
    3,
    'the other workspace keeps its alice, her group and her folder grant'
);
SELECT lives_ok(
    $$SELECT add_workspace_user('ws', 'alice', 'alice@x.io')$$,
    'a removed user can be added again'
);
SELECT is(
    datatable_roles.member_keys('ws', 'alice'),
    ARRAY['*', 'u/alice'],
    'added again, she has none of her old groups or folders'
);
SELECT is(
    tap.tenants('ws', 'main', 't10_r'),
    '{g/emea,u/alice2}'::text[],
    'nor her old tenant keys'
);

-- All in one transaction: a removal rolled back leaves everything in place.
SELECT tap.state() AS before \gset
BEGIN;
SELECT remove_workspace_user('ws', 'alice2') IS null AS removed \gset
ROLLBACK;
SELECT
    is(
        tap.state(), :'before', 'a rolled back removal leaves user, grants and tenant keys in place'
    );

SELECT is(
    remove_workspace_user('ws', 'nobody'), false,
    'removing a user who is not a member changes nothing and says so'
);
SELECT is(
    remove_workspace_user('ws', 'zed'), false,
    'removing a user of another workspace changes nothing there'
);
SELECT tap.refused(
    $$SELECT remove_workspace_user('nowhere', 'alice')$$, 'P0002',
    'remove_workspace_user in an unknown workspace is refused'
);
SELECT tap.refused(
    $$SELECT remove_workspace_user('ws', NULL)$$, '22004',
    'remove_workspace_user with a NULL username is refused'
);

SELECT * FROM finish();
