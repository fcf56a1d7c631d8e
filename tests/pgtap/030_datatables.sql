-- Data tables: registration (the admin password tried and adopted),
-- references, role maps and their tenants, the default role, and the logins
-- that follow the maps: catalog roles hold CONNECT nowhere, the login a job
-- is handed holds it on its one database, and taking a role out of the maps
-- of a database retires the logins holding it there.
\set test t30
\ir lib/begin.psql

SELECT plan(264);

SELECT tap.new_datatable_db('t30_dt', 't30_admin') AS admin_pw \gset
SELECT tap.new_datatable_db('t30_dt2', 't30_admin2') AS admin2_pw \gset
DO $$
BEGIN
    -- a database whose owner the package owner is not a member of
    PERFORM tap.exec_in('postgres', 'CREATE ROLE t30_stranger LOGIN');
    PERFORM tap.exec_in('postgres', 'CREATE DATABASE t30_dt3 OWNER t30_stranger');
    PERFORM add_workspace('ws');
    PERFORM add_workspace('fork');
    PERFORM add_workspace('fork2');
    PERFORM add_workspace('other');
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_workspace_user('ws', 'bob', 'bob@x.io');
    PERFORM add_workspace_user('other', 'carol', 'carol@x.io');
    PERFORM add_workspace_user('fork', 'dave', 'dave@x.io');
    PERFORM create_datatable_role('t30_a');
    PERFORM create_datatable_role('t30_b');
    PERFORM create_datatable_role('t30_c');
    PERFORM create_datatable_role('t30_off');
    PERFORM set_datatable_role_enabled('t30_off', false);
END $$;

------------------------------------------------------------------------------
-- register_datatable
------------------------------------------------------------------------------
SELECT is(
    tap.connect_holders('t30_dt'), '{PUBLIC,t30_admin}',
    'before registration, PUBLIC may connect to the database'
);
SELECT register_datatable('ws', 'main', 't30_dt', 't30_admin', :'admin_pw') AS main_id \gset
SELECT results_eq(
    format(
        $$SELECT workspace, name, governing_id, dbname, admin_login, admin_password, default_role,
                  admin_tenants
             FROM datatable_roles.datatable WHERE id = %s$$,
        :'main_id'
    ),
    format(
        $$VALUES ('ws'::text, 'main'::text, NULL::bigint, 't30_dt'::text, 't30_admin'::text,
                  %L::text, 'admin'::text, '{}'::text[])$$,
        :'admin_pw'
    ),
    'register_datatable stores the data table with default role admin and returns its id'
);
SELECT is(
    tap.connect_holders('t30_dt'), '{t30_admin}',
    'CONNECT is revoked from PUBLIC on its database; the admin login keeps it'
);
SELECT is(
    (SELECT a.rolpassword FROM pg_authid AS a WHERE a.rolname = 't30_admin'),
    (
        SELECT d.admin_verifier FROM datatable_roles.datatable AS d
        WHERE d.id = :'main_id'::bigint
    ),
    'the admin login''s password is set again through a verifier the package keeps'
);
SELECT ok(
    (
        SELECT starts_with(rolpassword, 'SCRAM-SHA-256$4096:') FROM pg_authid
        WHERE rolname = 't30_admin'
    ),
    '... a SCRAM verifier of 4096 iterations (it was set with 16)'
);
SELECT is(
    tap.connect_to('t30_dt', 't30_admin', :'admin_pw'), 't30_admin',
    'the admin login still logs in with the same password'
);
SELECT is(
    (
        SELECT count(*)::integer FROM datatable_roles.datatable_role AS m
        WHERE m.datatable_id = :'main_id'::bigint
    ),
    0,
    'the role map of a new data table is empty'
);
SELECT lives_ok(
    format($$SELECT register_datatable('ws', 'second', 't30_dt', 't30_admin', %L)$$, :'admin_pw'),
    'a second data table may use the same database'
);
SELECT lives_ok(
    format(
        $$SELECT register_datatable('other', 'main', 't30_dt2', 't30_admin2', %L)$$, :'admin2_pw'
    ),
    'another workspace may have a data table of the same name'
);
SELECT is(
    tap.connect_holders('t30_dt2'), '{t30_admin2}',
    'its database too is closed to PUBLIC'
);

SELECT tap.refused(
    format(
        $$SELECT register_datatable('nowhere', 'main', 't30_dt', 't30_admin', %L)$$, :'admin_pw'
    ),
    'P0002',
    'register_datatable in an unknown workspace is refused'
);
SELECT tap.refused(
    format($$SELECT register_datatable('ws', 'x', 't30_nodb', 't30_admin', %L)$$, :'admin_pw'),
    'P0002',
    'register_datatable of an unknown database is refused'
);
SELECT tap.refused(
    format($$SELECT register_datatable('ws', 'x', 't30_dt', 't30_nologin', %L)$$, :'admin_pw'),
    'P0002',
    'register_datatable with an unknown admin login is refused'
);
SELECT tap.refused(
    format($$SELECT register_datatable('ws', 'x', 't30_dt', 't30_admin2', %L)$$, :'admin2_pw'),
    '22023',
    'register_datatable of a database not owned by the admin login is refused'
);
SELECT tap.refused(
    format($$SELECT register_datatable('ws', 'x', 'postgres', 't30_admin', %L)$$, :'admin_pw'),
    '22023',
    'register_datatable of the postgres database is refused (not owned by the admin login)'
);
SELECT tap.refused(
    $$SELECT register_datatable('ws', 'x', 't30_dt3', 't30_stranger', 'secret')$$, '42501',
    'register_datatable when the package owner is not a member of the admin login is refused'
);
SELECT is(
    tap.connect_holders('t30_dt3'), '{PUBLIC,t30_stranger}',
    'the refused database keeps its CONNECT grants'
);
SELECT tap.refused(
    format($$SELECT register_datatable('ws', 'main', 't30_dt', 't30_admin', %L)$$, :'admin_pw'),
    '42710',
    'register_datatable of an existing name is refused'
);
SELECT tap.refused(
    format($$SELECT register_datatable('ws', 'main', 't30_dt2', 't30_admin2', %L)$$, :'admin2_pw'),
    '42710',
    'register_datatable of an existing name is refused, whatever the database'
);
SELECT tap.refused(
    format($$SELECT register_datatable('ws', 'x', 't30_dt', 't30_admin', %L)$$, :'admin_pw' || 'x'),
    '28P01',
    'register_datatable with a wrong admin password is refused (28P01)'
);
SELECT is(
    tap.connect_to('t30_dt', 't30_admin', :'admin_pw'), 't30_admin',
    '... and the admin login keeps its password'
);
SELECT tap.refused(
    $$SELECT register_datatable('ws', 'x', 't30_dt', 't30_admin', '')$$, '22023',
    'register_datatable with an empty admin password is refused'
);
SELECT tap.refused(
    $$SELECT register_datatable('ws', 'x', 't30_dt', 't30_admin', NULL)$$, '22004',
    'register_datatable with a NULL admin password is refused'
);
SELECT tap.refused(
    format($$SELECT register_datatable('ws', 'x', NULL, 't30_admin', %L)$$, :'admin_pw'), '22004',
    'register_datatable with a NULL database is refused'
);
SELECT tap.refused(
    format($$SELECT register_datatable('ws', 'x', 't30_dt', NULL, %L)$$, :'admin_pw'), '22004',
    'register_datatable with a NULL admin login is refused'
);
SELECT
    tap.refused(
        format(
            'SELECT register_datatable(%L, %L, %L, %L, %L)',
            'ws',
            n,
            't30_dt',
            't30_admin',
            :'admin_pw'
        ),
        '22023',
        format('register_datatable with the name %s is refused', quote_literal(n))
    )
FROM unnest(ARRAY['', 'ma in', '.main', 'main/x', 'x''; DROP ROLE dtr_owner; --']) AS n;
-- The metadata database (owned by the package owner) is not a data table:
-- its admin login would be the package owner, handed to jobs by R2.
SELECT tap.refused(
    format(
        $$SELECT register_datatable('ws', 'meta', %L, 'dtr_owner', 'secret')$$, current_database()
    ),
    '42501',
    'register_datatable of the metadata database as the package owner is refused'
);

------------------------------------------------------------------------------
-- role maps, CONNECT and the logins of a database
------------------------------------------------------------------------------
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_a', '{u/alice}')$$,
    'set_datatable_role_tenants puts a role in the map'
);
SELECT is(tap.tenants('ws', 'main', 't30_a'), '{u/alice}', 'with its tenants');
SELECT is(
    tap.connect_holders('t30_dt'), '{t30_admin}',
    'a role in the map gets no CONNECT: catalog roles connect nowhere'
);
SELECT tap.start_job('ws', 'u/alice', 'run', 'alice@x.io') AS j_alice \gset
SELECT
    login AS a_login, password AS a_pw, login_kind AS a_kind
FROM tap.resolve(:'j_alice', 'main', 't30_a') \gset
SELECT is(:'a_kind'::text, 'role', 'alice naming t30_a gets a one-role login');
SELECT is(
    tap.connect_holders('t30_dt'), ARRAY['t30_admin', :'a_login'],
    'that login holds CONNECT on the data table database'
);
SELECT is(tap.connect_databases(:'a_login'), '{t30_dt}', '... and on no other database');
SELECT is(
    tap.connect_holders('t30_dt2'), '{t30_admin2}',
    'the other data table database is closed to it'
);
SELECT is(
    tap.connect_to('t30_dt', :'a_login', :'a_pw', 't30_a'), 't30_a',
    'it logs in there, acting as t30_a'
);
SELECT matches(
    tap.connect_to('t30_dt2', :'a_login', :'a_pw', 't30_a'),
    '^error 08001: permission denied for database "t30_dt2"',
    'and cannot connect to the other data table database'
);
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('ws', 'second', 't30_a', '{*}')$$,
    'the same role in the map of a second data table on the same database'
);
SELECT is(
    tap.login_of(:'j_alice', 'second', 't30_a'), :'a_login',
    'naming it there gives the same login: one login per database and set of roles'
);
-- carol, in workspace other, names t30_a on other/main (database t30_dt2)
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('other', 'main', 't30_a', '{u/carol}')$$,
    'the same role in the map of a data table on another database'
);
SELECT tap.start_job('other', 'u/carol', 'run', 'carol@x.io') AS j_carol \gset
SELECT
    login AS c_login, password AS c_pw
FROM tap.resolve(:'j_carol', 'main', 't30_a') \gset
SELECT isnt(:'c_login'::text, :'a_login', 'there it is served by another login');
SELECT is(tap.connect_databases(:'c_login'), '{t30_dt2}', '... with CONNECT on t30_dt2 alone');
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_off', '{*}')$$,
    'a disabled role may be put in a map'
);
SELECT matches(
    tap.refusal(:'j_alice', 'main', 't30_off'), '^42501\|R1\|.*disabled',
    'no login is handed out for it'
);
SELECT lives_ok(
    $$SELECT set_datatable_role_enabled('t30_off', true)$$,
    'enabling the mapped role'
);
SELECT is(tap.connect_databases('t30_off'), '{}', 'gives it no CONNECT either');

SELECT lives_ok(
    $$SELECT remove_datatable_role('ws', 'main', 't30_a')$$,
    'remove_datatable_role takes a role out of one map'
);
SELECT is(tap.tenants('ws', 'main', 't30_a'), NULL, 'it is no longer in that map');
SELECT results_eq(
    format($$SELECT password <> '', rolcanlogin FROM datatable_roles.datatable_role_set
             JOIN pg_roles ON rolname = login WHERE login = %L$$, :'a_login'),
    $$VALUES (true, true)$$,
    'its login on the database is kept while another data table there maps it'
);
SELECT is(
    tap.connect_to('t30_dt', :'a_login', :'a_pw', 't30_a'), 't30_a',
    '... and still logs in'
);
SELECT lives_ok(
    $$SELECT remove_datatable_role('ws', 'second', 't30_a')$$,
    'remove_datatable_role takes it out of the other map on that database'
);
SELECT results_eq(
    format($$SELECT password, rolcanlogin FROM datatable_roles.datatable_role_set
             JOIN pg_roles ON rolname = login WHERE login = %L$$, :'a_login'),
    $$VALUES (''::text, false)$$,
    'then its login on that database is retired: empty password, NOLOGIN'
);
SELECT matches(
    tap.connect_to('t30_dt', :'a_login', :'a_pw', 't30_a'),
    '^error 08001: role "wm_set_[0-9a-f]{40}" is not permitted to log in',
    'the old login can no longer connect'
);
SELECT results_eq(
    format($$SELECT password <> '', rolcanlogin FROM datatable_roles.datatable_role_set
             JOIN pg_roles ON rolname = login WHERE login = %L$$, :'c_login'),
    $$VALUES (true, true)$$,
    'its login on the other database is left alone'
);
SELECT is(
    tap.connect_to('t30_dt2', :'c_login', :'c_pw', 't30_a'), 't30_a',
    '... and still logs in there'
);
SELECT lives_ok(
    $$SELECT remove_datatable_role('other', 'main', 't30_a')$$,
    'taking it out of that map too'
);
SELECT matches(
    tap.connect_to('t30_dt2', :'c_login', :'c_pw', 't30_a'),
    '^error 08001: role "wm_set_[0-9a-f]{40}" is not permitted to log in',
    'retires that login as well'
);
SELECT lives_ok(
    $$SELECT remove_datatable_role('ws', 'main', 't30_off')$$,
    'removing the last mapped role'
);
SELECT is(
    array(
        SELECT h.holder FROM unnest(tap.connect_holders('t30_dt')) AS h (holder)
        WHERE tap.can_login(h.holder)
    ),
    '{t30_admin}',
    'leaves only the admin login able to log in with CONNECT on the database'
);

------------------------------------------------------------------------------
-- set_datatable_role_tenants
------------------------------------------------------------------------------
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_a',
        '{u/bob,g/emea,*,f/shared,u/alice,g/emea,u/bob}')$$,
    'set_datatable_role_tenants with duplicates and in any order'
);
SELECT is(
    tap.tenants('ws', 'main', 't30_a'), '{*,f/shared,g/emea,u/alice,u/bob}',
    'stores the keys sorted, without duplicates'
);
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_a', '{g/ops}')$$,
    'setting the tenants again'
);
SELECT is(tap.tenants('ws', 'main', 't30_a'), '{g/ops}', 'replaces them');
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_b', '{}')$$,
    'a role may be in the map with no tenants'
);
SELECT is(tap.tenants('ws', 'main', 't30_b'), '{}', 'and is stored with an empty list');
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('ws', 'main', 'admin', '{u/alice,g/ops,u/alice}')$$,
    'set_datatable_role_tenants for admin'
);
SELECT is(
    tap.tenants('ws', 'main', 'admin'),
    '{g/ops,u/alice}'::text[],
    'sets admin_tenants, sorted and without duplicates'
);
SELECT is(
    (SELECT count(*)::integer FROM datatable_roles.catalog_role WHERE lower(name) = 'admin'),
    0,
    'admin is not a catalog role'
);
SELECT is(tap.default_of('ws', 'main'), 'admin', 'tenants change no default');
SELECT lives_ok(
    format(
        'SELECT set_datatable_role_tenants(%L, %L, %L, %L)', 'ws', 'main', 't30_c',
        ARRAY['u/alice', 'g/a.b-c_9', 'f/' || repeat('f', 255), 'g/-x', '*']
    ),
    'the widest valid keys are accepted'
);

SELECT
    tap.refused(
        format(
            'SELECT set_datatable_role_tenants(%L, %L, %L, %L)',
            'ws',
            'main',
            't30_a',
            ARRAY['u/alice', k]
        ),
        '22023',
        format('the tenant key %s is refused', left(to_jsonb(k)::text, 40))
    )
FROM unnest(ARRAY[
    '',
    ' ',
    'alice',
    'u/',
    'g/',
    'f/',
    'x/alice',
    'U/alice',
    'G/ops',
    'user/alice',
    'u:alice',
    'u\alice',
    'u//alice', 'u/.alice', 'u/al ice', 'u/alice/x', ' u/alice', 'u/alice ',
    'g/a' || chr(8238) || 'b', 'f/a''b',
    'u/alice;DROP ROLE dtr_owner', '**', ' *', '* ', '*/x', 'u/*', 'u/' || repeat('a', 256),
    'admin', '*none*', 'u/alice' || chr(10), '*' || chr(10)
]) AS k;
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_a', ARRAY['u/alice', NULL])$$, '22023',
    'a NULL tenant key is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 'admin', '{u/alice,x/y}')$$, '22023',
    'a malformed key is refused for admin too'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_a', '{u/alice,u/carol}')$$, 'P0002',
    'u/ of a user of another workspace is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_a', '{u/nobody}')$$, 'P0002',
    'u/ of an unknown user is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 'admin', '{u/nobody}')$$, 'P0002',
    'u/ of an unknown user is refused for admin too'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_a', '{u/ALICE}')$$, 'P0002',
    'u/ goes by the exact username'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_a', NULL)$$, '22004',
    'a NULL tenant list is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', NULL, '{*}')$$, '22004',
    'a NULL role is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_nope', '{*}')$$, 'P0002',
    'an unknown role is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 'ADMIN', '{*}')$$, 'P0002',
    'ADMIN is not admin: an unknown role'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_stranger', '{*}')$$, 'P0002',
    'a cluster role outside the catalog is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('ws', 'nope', 't30_a', '{*}')$$, 'P0002',
    'an unknown data table is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_tenants('nowhere', 'main', 't30_a', '{*}')$$, 'P0002',
    'an unknown workspace is refused'
);

------------------------------------------------------------------------------
-- reference_datatable
------------------------------------------------------------------------------
SELECT tap.connect_holders('t30_dt')::text AS holders_before_references \gset
SELECT reference_datatable('fork', 'main', 'ws', 'main') AS fork_id \gset
SELECT results_eq(
    format($$SELECT workspace, name, governing_id, dbname, admin_login, admin_password, default_role
             FROM datatable_roles.datatable WHERE id = %s$$, :'fork_id'),
    format(
        $$VALUES ('fork'::text, 'main'::text, %s::bigint, NULL::text, NULL::text, NULL::text,
                  NULL::text)$$,
        :'main_id'
    ),
    'reference_datatable stores a reference to the governing entry, holding nothing of its own'
);
SELECT reference_datatable('fork2', 'main', 'fork', 'main') AS fork2_id \gset
SELECT is(
    (SELECT governing_id FROM datatable_roles.datatable WHERE id = :'fork2_id'::bigint),
    :'main_id'::bigint,
    'a reference to a reference points at the governing entry itself'
);
SELECT lives_ok(
    $$SELECT reference_datatable('fork', 'alias', 'fork2', 'main')$$,
    'a reference may have another name than its governing entry'
);
SELECT is(
    (
        SELECT governing_id
        FROM datatable_roles.datatable
        WHERE workspace = 'fork' AND name = 'alias'
    ),
    :'main_id'::bigint,
    'and still points at the governing entry'
);
SELECT is(
    tap.connect_holders('t30_dt'), :'holders_before_references'::text[],
    'references change no CONNECT grant'
);

SELECT tap.refused(
    $$SELECT reference_datatable('fork', 'main', 'ws', 'second')$$, '42710',
    'a reference under an existing reference''s name is refused'
);
SELECT tap.refused(
    $$SELECT reference_datatable('ws', 'main', 'fork', 'main')$$, '42710',
    'a reference under an existing data table''s name is refused'
);
SELECT tap.refused(
    $$SELECT reference_datatable('ws', 'main', 'ws', 'main')$$, '42710',
    'a data table cannot be made a reference to itself'
);
SELECT tap.refused(
    $$SELECT reference_datatable('fork', 'x', 'ws', 'nope')$$, 'P0002',
    'a reference to an unknown data table is refused'
);
SELECT tap.refused(
    $$SELECT reference_datatable('fork', 'x', 'nowhere', 'main')$$, 'P0002',
    'a reference to an unknown workspace is refused'
);
SELECT tap.refused(
    $$SELECT reference_datatable('nowhere', 'x', 'ws', 'main')$$, 'P0002',
    'a reference in an unknown workspace is refused'
);
SELECT tap.refused(
    $$SELECT reference_datatable('fork', 'x y', 'ws', 'main')$$, '22023',
    'a reference with an invalid name is refused'
);
SELECT tap.refused(
    $$SELECT reference_datatable('fork', NULL, 'ws', 'main')$$, '22004',
    'a reference with a NULL name is refused'
);
SELECT tap.refused(
    $$SELECT reference_datatable('fork', 'x', 'ws', NULL)$$, '22004',
    'a reference to NULL is refused'
);

-- A reference's map and default are the governing entry's: editing them through it is refused.
SELECT
    tap.refused(
        format('SELECT %s', c), '55000',
        format('%s through a reference is refused', c)
    )
FROM unnest(ARRAY[
    $$set_datatable_role_tenants('fork', 'main', 't30_a', '{*}')$$,
    $$set_datatable_role_tenants('fork', 'main', 't30_b', '{*}')$$,
    $$set_datatable_role_tenants('fork', 'main', 'admin', '{*}')$$,
    $$set_datatable_role_tenants('fork2', 'main', 't30_a', '{*}')$$,
    $$set_datatable_default_role('fork', 'main', 't30_a')$$,
    $$set_datatable_default_role('fork', 'main', NULL)$$,
    $$set_datatable_default_role('fork', 'main', 'admin')$$,
    $$remove_datatable_role('fork', 'main', 't30_a')$$,
    $$remove_datatable_role('fork', 'alias', 't30_b')$$
]) AS c;

------------------------------------------------------------------------------
-- set_datatable_default_role
------------------------------------------------------------------------------
SELECT lives_ok(
    $$SELECT set_datatable_default_role('ws', 'main', 't30_a')$$,
    'set_datatable_default_role to a role of the map'
);
SELECT is(tap.default_of('ws', 'main'), 't30_a', 'the default is that role');
SELECT is(tap.default_of('ws', 'second'), 'admin', 'the other data table keeps its default');
SELECT tap.refused(
    $$SELECT set_datatable_default_role('ws', 'second', 't30_a')$$, '55000',
    'a default that is not in the data table''s map is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_default_role('ws', 'main', 't30_nope')$$, 'P0002',
    'a default that is no catalog role is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_default_role('ws', 'main', 'T30_A')$$, 'P0002',
    'the default goes by the exact role name'
);
SELECT tap.refused(
    $$SELECT set_datatable_default_role('ws', 'main', '*none*')$$, 'P0002',
    'the no-default marker is not a role name to set'
);
SELECT tap.refused(
    $$SELECT set_datatable_default_role('ws', 'nope', 't30_a')$$, 'P0002',
    'a default on an unknown data table is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_default_role('nowhere', 'main', 't30_a')$$, 'P0002',
    'a default in an unknown workspace is refused'
);
SELECT lives_ok(
    $$SELECT set_datatable_default_role('ws', 'main', NULL)$$,
    'set_datatable_default_role to NULL'
);
SELECT is(tap.default_of('ws', 'main'), '*none*', 'stores the no-default marker');
SELECT throws_ok(
    format('SELECT validate_role_name(%L)', tap.default_of('ws', 'main')), '22023', NULL,
    'the marker is not a valid role name (R12)'
);
-- The warning it raises is the CLI's business; keep the TAP output clean.
SET client_min_messages = error;
SELECT lives_ok(
    $$SELECT set_datatable_default_role('ws', 'main', 'admin')$$,
    'set_datatable_default_role to admin is allowed (with a warning)'
);
SET client_min_messages = warning;
SELECT is(tap.default_of('ws', 'main'), 'admin', 'the default is admin again');
SELECT lives_ok(
    $$SELECT set_datatable_default_role('ws', 'main', 't30_b')$$,
    'set_datatable_default_role to another role of the map'
);
SELECT is(tap.default_of('ws', 'main'), 't30_b', 'the default is that role');

------------------------------------------------------------------------------
-- remove_datatable_role
------------------------------------------------------------------------------
DO $$
BEGIN
    PERFORM set_datatable_role_tenants('ws', 'second', 't30_b', '{*}');
    PERFORM set_datatable_default_role('ws', 'second', 't30_b');
END $$;
SELECT
    login AS b_login, password AS b_pw
FROM tap.resolve(:'j_alice', 'second', 't30_b') \gset
SELECT lives_ok(
    $$SELECT remove_datatable_role('ws', 'main', 't30_a')$$,
    'remove_datatable_role of a role that is not the default'
);
SELECT is(tap.default_of('ws', 'main'), 't30_b', 'leaves the default alone');
SELECT lives_ok(
    $$SELECT remove_datatable_role('ws', 'main', 't30_b')$$,
    'remove_datatable_role of the default role'
);
SELECT is(tap.tenants('ws', 'main', 't30_b'), NULL, 'takes it out of the map');
SELECT
    is(
        tap.default_of('ws', 'main'),
        '*none*',
        'leaves the data table with no default (R11), not admin'
    );
SELECT
    is(
        tap.default_of('ws', 'second'), 't30_b', 'another data table with that default keeps it'
    );
SELECT is(
    tap.connect_to('t30_dt', :'b_login', :'b_pw', 't30_b'), 't30_b',
    'its login on the database is kept, as another data table there maps it: it still logs in'
);
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('ws', 'main', 't30_b', '{*}')$$,
    'putting the removed default back in the map'
);
SELECT is(tap.default_of('ws', 'main'), '*none*', 'does not make it the default again');
SELECT lives_ok(
    $$SELECT set_datatable_role_tenants('ws', 'main', 'admin', '{*}')$$,
    'giving admin tenants'
);
SELECT is(tap.default_of('ws', 'main'), '*none*', 'does not turn the default back into admin');

SELECT tap.refused(
    $$SELECT remove_datatable_role('ws', 'main', 'admin')$$, '22023',
    'removing admin from the map is refused'
);
SELECT tap.refused(
    $$SELECT remove_datatable_role('ws', 'main', 't30_a')$$, 'P0002',
    'removing a role that is not in the map is refused'
);
SELECT tap.refused(
    $$SELECT remove_datatable_role('ws', 'main', 't30_nope')$$, 'P0002',
    'removing an unknown role is refused'
);
SELECT tap.refused(
    $$SELECT remove_datatable_role('ws', 'nope', 't30_b')$$, 'P0002',
    'removing from an unknown data table is refused'
);
SELECT tap.refused(
    $$SELECT remove_datatable_role('ws', 'main', NULL)$$, '22004',
    'removing NULL is refused'
);

SELECT * FROM finish();
