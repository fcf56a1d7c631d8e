-- The role catalog: validate_role_name (SPEC section 8, and the words that
-- mean something else where SQL expects a role), and the life of a catalog
-- role (create, rename, disable, enable, drop) as real roles, logins, grants
-- and defaults. Catalog roles are NOLOGIN, have no password and CONNECT
-- nowhere: jobs log in as the scoped logins that hold them (SPEC section 5).
\set test t20
\ir lib/begin.psql

SELECT plan(324);

------------------------------------------------------------------------------
-- validate_role_name
------------------------------------------------------------------------------
SELECT
    lives_ok(
        format('SELECT validate_role_name(%L)', n),
        format('validate_role_name accepts %s', quote_literal(n))
    )
FROM unnest(ARRAY[
    'sales_emea', 'a', 'Z', '9lives', '_x', '-x', 'a-b_C9', repeat('a', 63),
    'administrator', 'admins', 'xadmin', 'postgresql', 'publicity', 'pg', 'pgx', 'pg-x',
    'wm_set', 'wm_setx', 'wm-set-x', 'windmill', 'windmillx', 'custom_instance', 'custom_instancex',
    'x_pg_y', 'my_wm_set_x',
    -- look like a reserved word, and are not one
    'nonex', 'xnone', 'none_', 'users', 'username', 'all_x', 'allx', 'current_user_x',
    'current-user', 'currentuser', 'session_users', 'xuser'
]) AS n;

SELECT
    throws_ok(
        format('SELECT validate_role_name(%L)', n), '22023', NULL,
        format('validate_role_name refuses the reserved name %s', quote_literal(n))
    )
FROM unnest(ARRAY[
    'admin',
    'ADMIN',
    'Admin',
    'aDmIn',
    'postgres',
    'POSTGRES',
    'Postgres',
    'public',
    'PUBLIC',
    'Public'
]) AS n;

-- Words that mean another role where SQL expects one (GRANT ... TO
-- current_user, CREATE POLICY ... TO none, REVOKE ... FROM all): each is
-- refused as reserved, in any case.
SELECT
    throws_ok(
        format('SELECT validate_role_name(%L)', n), '22023',
        format('role name %s is reserved', quote_literal(n)),
        format('validate_role_name refuses the reserved word %s', quote_literal(n))
    )
FROM unnest(ARRAY[
    'current_user', 'CURRENT_USER', 'Current_User', 'cuRRent_usER',
    'current_role', 'CURRENT_ROLE', 'Current_Role',
    'session_user', 'SESSION_USER', 'Session_User',
    'user', 'USER', 'User', 'uSeR',
    'all', 'ALL', 'All',
    'none', 'NONE', 'None', 'nOnE'
]) AS n;

SELECT
    throws_ok(
        format('SELECT validate_role_name(%L)', n), '22023', NULL,
        format('validate_role_name refuses the reserved prefix in %s', quote_literal(n))
    )
FROM unnest(ARRAY[
    'pg_', 'pg_x', 'PG_x', 'Pg_monitor', 'pG_read_all_data',
    'wm_set_', 'wm_set_abc', 'WM_SET_abc', 'Wm_Set_0123456789abcdef',
    'windmill_', 'windmill_admin', 'WINDMILL_x', 'WindMill_y',
    'custom_instance_', 'custom_instance_user', 'CUSTOM_INSTANCE_USER', 'Custom_Instance_x'
]) AS n;

SELECT
    throws_ok(
        format('SELECT validate_role_name(%L)', n), '22023', NULL,
        format('validate_role_name refuses %s', left(to_jsonb(n)::text, 40))
    )
FROM unnest(ARRAY[
    '', repeat('a', 64), repeat('a', 100), 'x' || repeat('é', 31),
    'café', 'é', 'naïve', 'ａdmin', 'sales€', 'ロール', 'admın', 'x' || chr(8203) || 'y',
    'a b', ' a', 'a ', ' ', 'a' || chr(9) || 'b', 'a' || chr(10) || 'b',
    'a"b', '"a"', 'a''b', '''a''', 'a.b', 'a/b', 'a;b', 'a$b', 'a\b', 'a%b', 'a*b', 'a=b', 'a@b',
    'x''; DROP ROLE dtr_owner; --', 'x"; DROP ROLE dtr_owner; --', 'x); DROP ROLE dtr_owner; --',
    '*none*', 'none*', '*', 'abc' || chr(10), chr(10) || 'abc', 'abc' || chr(13)
]) AS n;
SELECT throws_ok(
    $$SELECT validate_role_name(NULL)$$, '22004', NULL,
    'validate_role_name refuses NULL'
);
SELECT is(
    octet_length('x' || repeat('é', 31)), 63,
    'the unicode case above is 63 bytes: refused for its characters, not its length'
);

------------------------------------------------------------------------------
-- create_datatable_role
------------------------------------------------------------------------------
SELECT tap.new_datatable_db('t20_dt', 't20_admin') AS admin_pw \gset
DO $$
BEGIN
    PERFORM add_workspace('ws');
    PERFORM add_workspace('fork');
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_workspace_user('ws', 'pub', 'pub@x.io');
END $$;
SELECT
    ok(
        register_datatable('ws', 'main', 't20_dt', 't20_admin', :'admin_pw') > 0,
        'ws/main registered'
    );
SELECT
    ok(
        register_datatable('ws', 'second', 't20_dt', 't20_admin', :'admin_pw') > 0,
        'ws/second registered'
    );

SELECT create_datatable_role('t20_sales') AS sales_id \gset
SELECT is(
    (SELECT id FROM datatable_roles.catalog_role WHERE name = 't20_sales'),
    :'sales_id'::bigint,
    'create_datatable_role returns the catalog id of the new role'
);
SELECT is(
    (SELECT enabled FROM datatable_roles.catalog_role WHERE name = 't20_sales'),
    TRUE,
    'a new role is enabled'
);
SELECT results_eq(
    $$SELECT rolcanlogin, rolinherit, rolsuper, rolcreaterole, rolcreatedb, rolreplication,
             rolbypassrls
      FROM pg_authid WHERE rolname = 't20_sales'$$,
    $$VALUES (false, true, false, false, false, false, false)$$,
    'its role exists: NOLOGIN, INHERIT, and no attribute beyond'
);
SELECT is(
    (SELECT rolpassword FROM pg_authid WHERE rolname = 't20_sales'),
    NULL,
    'it has no password'
);
SELECT is(
    (
        SELECT count(*)::integer FROM information_schema.columns
        WHERE
            table_schema = 'datatable_roles' AND table_name = 'catalog_role'
            AND column_name LIKE '%password%'
    ),
    0,
    'the catalog keeps no password for a role'
);
SELECT matches(
    tap.connect_to('t20_dt', 't20_sales', 'any password'),
    '^error 08001: password authentication failed for user "t20_sales"',
    'nobody can log in as it'
);
SELECT is(tap.connect_databases('t20_sales'), '{}', 'it holds CONNECT on no database');
SELECT is(
    (SELECT count(*)::integer FROM pg_auth_members WHERE member = 't20_sales'::regrole),
    0,
    'it is a member of no role'
);
SELECT ok(
    pg_has_role(datatable_roles.link_login(), 't20_sales', 'USAGE'),
    'the link login holds its privileges (to move what it owns when it is dropped)'
);
SELECT lives_ok($$SELECT create_datatable_role('t20_other')$$, 'a second role is created');
SELECT results_eq(
    $$SELECT rolcanlogin, rolpassword IS NULL FROM pg_authid WHERE rolname = 't20_other'$$,
    $$VALUES (false, true)$$,
    'it is NOLOGIN with no password too'
);

SELECT tap.exec_in('postgres', 'CREATE ROLE t20_existing NOLOGIN') AS created \gset
SELECT tap.refused(
    $$SELECT create_datatable_role('t20_sales')$$, '42710',
    'create_datatable_role of an existing catalog role is refused'
);
SELECT tap.refused(
    $$SELECT create_datatable_role('T20_SALES')$$, '42710',
    'create_datatable_role of a name differing only in case is refused'
);
SELECT tap.refused(
    $$SELECT create_datatable_role('t20_Sales')$$, '42710',
    'create_datatable_role of a name differing in one letter''s case is refused'
);
SELECT tap.refused(
    $$SELECT create_datatable_role('t20_existing')$$, '42710',
    'create_datatable_role of a role that already exists in the cluster is refused'
);
SELECT tap.refused(
    $$SELECT create_datatable_role('dtr_owner')$$, '42710',
    'create_datatable_role of the package owner''s name is refused'
);
SELECT is(
    tap.can_login('t20_existing'),
    FALSE,
    'the pre-existing cluster role is left as it was'
);
SELECT
    tap.refused(
        format('SELECT create_datatable_role(%L)', n), '22023',
        format('create_datatable_role(%s) is refused', left(quote_literal(n), 40))
    )
FROM unnest(ARRAY[
    '', 'admin', 'Postgres', 'pg_t20', 'wm_set_t20', 'windmill_t20', 'custom_instance_t20',
    '*none*', 't20 x', 't20_é', repeat('t', 64), 'x''; DROP ROLE dtr_owner; --',
    'current_user', 'CURRENT_ROLE', 'Session_User', 'user', 'ALL', 'none'
]) AS n;
SELECT tap.refused(
    $$SELECT create_datatable_role(NULL)$$, '22004',
    'create_datatable_role(NULL) is refused'
);

------------------------------------------------------------------------------
-- rename_datatable_role
------------------------------------------------------------------------------
-- t20_emea is the default of ws/main, in both maps, and held (with t20_us)
-- by a set login that alice's app requests resolve to.
SELECT create_datatable_role('t20_emea') AS emea_id \gset
DO $$
BEGIN
    PERFORM create_datatable_role('t20_us');
    PERFORM set_datatable_role_tenants('ws', 'main', 't20_emea', '{u/alice}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't20_us', '{u/alice}');
    PERFORM set_datatable_role_tenants('ws', 'second', 't20_emea', '{*}');
    PERFORM set_datatable_role_tenants('ws', 'second', 't20_sales', '{u/alice}');
    PERFORM set_datatable_default_role('ws', 'main', 't20_emea');
    PERFORM set_datatable_default_role('ws', 'second', 't20_emea');
END $$;
SELECT oid AS emea_oid FROM pg_roles WHERE rolname = 't20_emea' \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'alice@x.io') AS job \gset
SELECT login AS set_login FROM tap.resolve(:'job', 'main') \gset
SELECT is(
    tap.roles_of(:'job', 'main'), '{t20_emea,t20_us}',
    'before the rename, alice resolves to a set login of t20_emea and t20_us'
);
SELECT is(
    tap.connect_databases('t20_emea'), '{}',
    'a mapped role holds CONNECT on no database'
);
SELECT is(
    tap.connect_databases(:'set_login'), '{t20_dt}',
    'the set login holding it does, on the data table database alone'
);

SELECT lives_ok(
    $$SELECT rename_datatable_role('t20_emea', 't20_europe')$$,
    'rename_datatable_role renames a role'
);
SELECT is(
    (SELECT id FROM datatable_roles.catalog_role WHERE name = 't20_europe'),
    :'emea_id'::bigint,
    'the catalog id is kept'
);
SELECT is(
    (SELECT oid FROM pg_roles WHERE rolname = 't20_europe'),
    :'emea_oid'::oid,
    'the role is renamed in place: same oid'
);
SELECT is(
    (SELECT count(*)::integer FROM pg_roles WHERE rolname = 't20_emea')
    + (SELECT count(*)::integer FROM datatable_roles.catalog_role WHERE name = 't20_emea'),
    0,
    'the old name is gone from the cluster and the catalog'
);
SELECT results_eq(
    $$SELECT name, default_role FROM datatable_roles.datatable
      WHERE workspace = 'ws' ORDER BY name$$,
    $$VALUES ('main'::text, 't20_europe'::text), ('second', 't20_europe')$$,
    'the default role follows the rename on every data table'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM datatable_roles.datatable_role
        WHERE role_id = :'emea_id'::bigint
    ),
    2,
    'the role stays in both role maps'
);
SELECT results_eq(
    $$SELECT rolcanlogin, rolpassword IS NULL FROM pg_authid WHERE rolname = 't20_europe'$$,
    $$VALUES (false, true)$$,
    'the renamed role is still NOLOGIN with no password'
);
SELECT login AS set_login2, password AS set_pw2 FROM tap.resolve(:'job', 'main') \gset
SELECT is(
    :'set_login2'::text, :'set_login',
    'the set login holding it is the same login after the rename'
);
SELECT is(
    tap.roles_of(:'job', 'main'), '{t20_europe,t20_us}',
    'and it reports the new name'
);
SELECT is(
    tap.connect_to('t20_dt', :'set_login', :'set_pw2'), :'set_login',
    'the set login still logs in to the data table database'
);
SELECT is(
    tap.memberships(:'set_login'), tap.with_login_group('{t20_europe,t20_us}'),
    '... holding the renamed role'
);

SELECT
    tap.refused(
        format('SELECT rename_datatable_role(%L, %L)', 't20_europe', n), '22023',
        format('rename to %s is refused', left(quote_literal(n), 40))
    )
FROM unnest(ARRAY[
    '', 'admin', 'ADMIN', 'public', 'pg_t20', 'WM_SET_t20', 'windmill_t20', 'custom_instance_t20',
    '*none*', 't20 europe', 't20_€', repeat('t', 64), 'x''; DROP ROLE dtr_owner; --',
    'CURRENT_USER', 'current_role', 'session_user', 'User', 'all', 'None'
]) AS n;
SELECT tap.refused(
    $$SELECT rename_datatable_role('t20_europe', 't20_sales')$$, '42710',
    'rename to the name of another catalog role is refused'
);
SELECT tap.refused(
    $$SELECT rename_datatable_role('t20_europe', 'T20_SALES')$$, '42710',
    'rename to a case variant of another catalog role is refused'
);
SELECT tap.refused(
    $$SELECT rename_datatable_role('t20_europe', 't20_existing')$$, '42710',
    'rename to the name of a role that exists in the cluster is refused'
);
SELECT tap.refused(
    $$SELECT rename_datatable_role('t20_europe', 't20_admin')$$, '42710',
    'rename to the name of a data table''s admin login is refused'
);
SELECT tap.refused(
    $$SELECT rename_datatable_role('t20_nope', 't20_new')$$, 'P0002',
    'rename of an unknown role is refused'
);
SELECT tap.refused(
    $$SELECT rename_datatable_role('t20_existing', 't20_new')$$, 'P0002',
    'rename of a cluster role that is not in the catalog is refused'
);
SELECT tap.refused(
    $$SELECT rename_datatable_role('t20_europe', NULL)$$, '22004',
    'rename to NULL is refused'
);
SELECT tap.refused(
    $$SELECT rename_datatable_role(NULL, 't20_new')$$, '22004',
    'rename of NULL is refused'
);
SELECT tap.no_op(
    $$SELECT rename_datatable_role('t20_europe', 't20_europe')$$,
    'rename to the same name'
);

------------------------------------------------------------------------------
-- set_datatable_role_enabled
------------------------------------------------------------------------------
-- Sessions open before the disable: the one-role login of t20_us (alice's
-- run naming it), the set login holding it, and a bystander's (the one-role
-- login of t20_sales, not concerned).
SELECT tap.start_job('ws', 'u/alice', 'run', 'alice@x.io') AS j_alice \gset
SELECT
    login AS us_login, password AS us_pw, login_kind AS us_kind
FROM tap.resolve(:'j_alice', 'main', 't20_us') \gset
SELECT is(:'us_kind'::text, 'role', 'alice naming t20_us gets a one-role login');
SELECT is(
    tap.open_as('t20_own', :'j_alice', 'main', 't20_us'), 't20_us',
    'a session is open as it, acting as t20_us'
);
SELECT is(
    tap.open_as('t20_bystander', :'j_alice', 'second', 't20_sales'), 't20_sales',
    'a session is open as the one-role login of t20_sales, acting as t20_sales'
);
SELECT
    is(tap.open_as('t20_set', :'job', 'main'), :'set_login', 'a session is open as the set login');
SELECT lives_ok(
    $$SELECT set_datatable_role_enabled('t20_us', false)$$,
    'set_datatable_role_enabled disables a role'
);
SELECT matches(
    tap.query('t20_own', 'SELECT current_user::text'), '^error 08006: ',
    'the open session of the one-role login holding the disabled role is ended'
);
SELECT matches(
    tap.query('t20_set', 'SELECT current_user::text'), '^error 08006: ',
    'the open session of the set login holding it is ended'
);
SELECT is(
    tap.query('t20_bystander', 'SELECT current_user::text'), 't20_sales',
    'the session of an unrelated login goes on'
);
DO $$
BEGIN
    PERFORM tap.close('t20_own');
    PERFORM tap.close('t20_set');
END $$;
SELECT is(
    (SELECT enabled FROM datatable_roles.catalog_role WHERE name = 't20_us'),
    FALSE,
    'the catalog says disabled'
);
SELECT results_eq(
    format($$SELECT password, rolcanlogin FROM datatable_roles.datatable_role_set
             JOIN pg_roles ON rolname = login WHERE login = %L$$, :'us_login'),
    $$VALUES (''::text, false)$$,
    'the one-role login holding it is retired: empty password, NOLOGIN'
);
SELECT matches(
    tap.connect_to('t20_dt', :'us_login', :'us_pw', 't20_us'),
    '^error 08001: role "wm_set_[0-9a-f]{40}" is not permitted to log in',
    'it can no longer log in with the password it was handed'
);
SELECT results_eq(
    format($$SELECT password, rolcanlogin FROM datatable_roles.datatable_role_set
             JOIN pg_roles ON rolname = login WHERE login = %L$$, :'set_login'),
    $$VALUES (''::text, false)$$,
    'the set login holding it is retired: empty password, NOLOGIN'
);
SELECT is(
    array(
        SELECT s.login FROM datatable_roles.datatable_role_set AS s
        INNER JOIN pg_roles AS r ON s.login = r.rolname
        INNER JOIN datatable_roles.catalog_role AS c ON s.role_ids @> ARRAY[c.id]
        WHERE c.name = 't20_us' AND (r.rolcanlogin OR s.password <> '')
    ),
    '{}'::text[],
    'no login holding it may log in'
);
SELECT matches(
    tap.refusal(:'j_alice', 'main', 't20_us'), '^42501\|R1\|.*disabled',
    'a resolve naming it is refused (R1: disabled)'
);
SELECT is(
    (SELECT count(*)::integer FROM datatable_roles.datatable_role WHERE role_id = (
        SELECT id FROM datatable_roles.catalog_role WHERE name = 't20_us'
    )),
    1,
    'a disabled role stays in its role map'
);
SELECT tap.no_op(
    $$SELECT set_datatable_role_enabled('t20_us', false)$$,
    'disabling a disabled role'
);

SELECT lives_ok(
    $$SELECT set_datatable_role_enabled('t20_us', true)$$,
    'set_datatable_role_enabled enables a role again'
);
SELECT results_eq(
    $$SELECT r.enabled, a.rolcanlogin, a.rolpassword IS NULL
      FROM datatable_roles.catalog_role AS r
      JOIN pg_authid AS a ON a.rolname = r.name WHERE r.name = 't20_us'$$,
    $$VALUES (true, false, true)$$,
    'enabled in the catalog; the role itself stays NOLOGIN with no password'
);
SELECT is(tap.connect_databases('t20_us'), '{}', '... and holds CONNECT on no database');
SELECT
    login AS us_login2, password AS us_pw2
FROM tap.resolve(:'j_alice', 'main', 't20_us') \gset
SELECT is(
    :'us_login2'::text, :'us_login',
    'the next resolve naming it takes the same one-role login back'
);
SELECT isnt(:'us_pw2'::text, :'us_pw', '... with a fresh password');
SELECT is(
    tap.connect_to('t20_dt', :'us_login', :'us_pw2', 't20_us'), 't20_us',
    '... with which it logs in again, acting as t20_us'
);
SELECT matches(
    tap.connect_to('t20_dt', :'us_login', :'us_pw', 't20_us'),
    '^error 08001: password authentication failed',
    'the old password no longer works'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_enabled('t20_us', NULL)$$, '22004',
    'set_datatable_role_enabled with NULL is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_enabled('t20_nope', false)$$, 'P0002',
    'set_datatable_role_enabled of an unknown role is refused'
);
SELECT tap.refused(
    $$SELECT set_datatable_role_enabled('t20_existing', false)$$, 'P0002',
    'set_datatable_role_enabled of a cluster role outside the catalog is refused'
);

------------------------------------------------------------------------------
-- drop_datatable_role
------------------------------------------------------------------------------
-- A role owning something in a database the package cannot reach (no
-- CONNECT for the link login) cannot be dropped: refused, nothing changed.
DO $$
BEGIN
    PERFORM tap.exec_in('postgres', 'CREATE DATABASE t20_plain');
    PERFORM tap.exec_in('postgres', 'REVOKE CONNECT ON DATABASE t20_plain FROM PUBLIC');
    PERFORM tap.exec_in('t20_plain', $sql$
        CREATE SCHEMA t20_s AUTHORIZATION t20_other;
        SET ROLE t20_other;
        CREATE TABLE t20_s.t20_owned_elsewhere (id integer);
    $sql$);
END $$;
SELECT tap.refused(
    $$SELECT drop_datatable_role('t20_other')$$, '2BP01',
    'drop of a role that owns a table in a database the package cannot reach is refused'
);
SELECT ok(
    EXISTS (SELECT FROM datatable_roles.catalog_role WHERE name = 't20_other')
    AND EXISTS (SELECT FROM pg_roles WHERE rolname = 't20_other'),
    'the role is still in the catalog and the cluster'
);
SELECT is(
    tap.owner_in('t20_plain', 't20_owned_elsewhere'), 't20_other',
    '... and still owns its table there'
);
-- In a database that is no data table's, what the role owns is dropped:
-- nothing there belongs to a data table.
SELECT tap.exec_in('postgres', 'GRANT CONNECT ON DATABASE t20_plain TO PUBLIC') AS granted \gset
SELECT lives_ok(
    $$SELECT drop_datatable_role('t20_other')$$,
    'drop of a role that owns a table in a database that is no data table''s'
);
SELECT is(
    (SELECT count(*)::integer FROM pg_roles WHERE rolname = 't20_other'),
    0,
    'drops it'
);
SELECT is(
    tap.query_in('t20_plain', $$SELECT (count(*) + (SELECT count(*) FROM pg_namespace
        WHERE nspname = 't20_s'))::text FROM pg_tables WHERE tablename = 't20_owned_elsewhere'$$),
    '0',
    'the schema and table it owned there are dropped'
);

-- A role held by open sessions: the one-role login's session ends.
SELECT
    login AS eu_login
FROM tap.resolve(:'j_alice', 'second', 't20_europe') \gset
SELECT is(
    tap.open_as('t20_eu', :'j_alice', 'second', 't20_europe'), 't20_europe',
    'a session as the one-role login of t20_europe'
);
SELECT lives_ok(
    $$SELECT drop_datatable_role('t20_europe')$$,
    'drop_datatable_role drops a role'
);
SELECT matches(
    tap.query('t20_eu', 'SELECT current_user::text'), '^error 08006: ',
    'the open session of the login holding the dropped role is ended'
);
SELECT is(
    tap.query('t20_bystander', 'SELECT current_user::text'), 't20_sales',
    'the session of an unrelated login still goes on'
);
DO $$
BEGIN
    PERFORM tap.close('t20_eu');
    PERFORM tap.close('t20_bystander');
END $$;
SELECT results_eq(
    format($$SELECT password, rolcanlogin FROM datatable_roles.datatable_role_set
             JOIN pg_roles ON rolname = login WHERE login = %L$$, :'eu_login'),
    $$VALUES (''::text, false)$$,
    'the login that held it is retired: empty password, NOLOGIN'
);
SELECT is(
    (SELECT count(*)::integer FROM pg_roles WHERE rolname = 't20_europe'),
    0,
    'the role is gone'
);
SELECT is(
    (SELECT count(*)::integer FROM datatable_roles.catalog_role WHERE name = 't20_europe')
    + (
        SELECT count(*)::integer
        FROM datatable_roles.datatable_role
        WHERE role_id = :'emea_id'::bigint
    ),
    0,
    'it is gone from the catalog and every role map'
);
SELECT results_eq(
    $$SELECT name, default_role FROM datatable_roles.datatable
      WHERE workspace = 'ws' ORDER BY name$$,
    $$VALUES ('main'::text, '*none*'::text), ('second', '*none*')$$,
    'the data tables it was the default of have no default (R11), not admin'
);
SELECT is(datatable_roles.no_default(), '*none*', 'the no-default marker is *none*');
SELECT is(
    (
        SELECT count(*)::integer FROM pg_database AS pd, aclexplode(pd.datacl) AS acl
        WHERE
            pd.datname = 't20_dt' AND acl.grantee <> 0
            AND NOT EXISTS (SELECT FROM pg_roles AS r WHERE r.oid = acl.grantee)
    ),
    0,
    'no grant on the data table database is left to a dropped role'
);
SELECT tap.refused(
    $$SELECT drop_datatable_role('t20_europe')$$, 'P0002',
    'drop of a role already dropped is refused'
);
SELECT tap.refused(
    $$SELECT drop_datatable_role('t20_existing')$$, 'P0002',
    'drop of a cluster role outside the catalog is refused'
);
SELECT tap.refused(
    $$SELECT drop_datatable_role('T20_SALES')$$, 'P0002',
    'drop goes by the exact name'
);
SELECT tap.refused(
    $$SELECT drop_datatable_role(NULL)$$, '22004',
    'drop of NULL is refused'
);
SELECT ok(
    EXISTS (SELECT FROM pg_roles WHERE rolname = 't20_existing'),
    'the cluster role outside the catalog is untouched'
);

-- What a role owns and holds in a data table database passes to the admin
-- login, kept but inert: in a quarantine schema (docs/trust.md).
SELECT tap.allow_region('t20_dt', 't20_admin', 't20_us', 'us') AS allowed \gset
SELECT tap.exec_in('t20_dt', $$
    SET ROLE t20_admin;
    GRANT CREATE ON SCHEMA public TO t20_us;
    SET ROLE t20_us;
    CREATE TABLE t20_owned (id integer);
$$) AS created \gset
SELECT lives_ok(
    $$SELECT drop_datatable_role('t20_us')$$,
    'drop of a role that owns a table and holds privileges in a data table database'
);
SELECT is(
    (SELECT count(*)::integer FROM pg_roles WHERE rolname = 't20_us'),
    0,
    'drops the role'
);
SELECT is(
    tap.owner_in('t20_dt', 't20_owned'),
    't20_admin',
    'the table it owned now belongs to the data table''s admin login'
);
SELECT matches(
    tap.schema_in('t20_dt', 't20_owned'),
    '^wm_quarantine_[0-9a-f]{16}$',
    '... in a quarantine schema'
);
SELECT is(
    tap.query_in('t20_dt', $$
        SELECT count(*)::text FROM pg_class AS c, aclexplode(c.relacl) AS a
        WHERE c.relname = 'orders' AND a.grantee NOT IN (SELECT oid FROM pg_roles)
    $$),
    '0',
    'no privilege on orders is left to the dropped role'
);
SELECT is(
    tap.rows_in('t20_dt', 'orders'),
    '5',
    'the data table''s rows are all there'
);

SELECT lives_ok(
    $$SELECT create_datatable_role('t20_europe')$$,
    'a dropped name can be created again'
);
SELECT isnt(
    (SELECT id FROM datatable_roles.catalog_role WHERE name = 't20_europe'),
    :'emea_id'::bigint,
    'with a new catalog id'
);
SELECT is(
    tap.default_of('ws', 'main'),
    '*none*',
    'and the old default does not come back'
);

-- Scoped logins are not named after the file's prefix: take them away.
SELECT tap.drop_scoped_logins() AS dropped \gset

SELECT * FROM finish();
