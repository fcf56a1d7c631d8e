-- SPEC sections 5 and 6 as row-level security stories: a viewer in several
-- roles is served by a set login of the data table's database that is a
-- member of exactly those roles (and of the instance's login group), with
-- CONNECT on that one database; a script that changes its login's password
-- or settings does not keep them (the next resolve heals the login).
\set test t120
\ir lib/begin.psql

SELECT plan(82);

-- Workspace ws: pub is the identity of every app (a tenant of nothing; the
-- data table has no default). Viewers:
--   alice, bob  groups emea and us            carol  group emea, u/carol on apac
--   dan         groups us and apac            eve    group emea only
SELECT tap.new_datatable_db('t120_dt', 't120_admin') AS admin_pw \gset
DO $$ BEGIN
    PERFORM add_workspace('ws');
    PERFORM add_workspace_user('ws', 'pub', 'pub@x.io');
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_workspace_user('ws', 'bob', 'bob@x.io');
    PERFORM add_workspace_user('ws', 'carol', 'carol@x.io');
    PERFORM add_workspace_user('ws', 'dan', 'dan@x.io');
    PERFORM add_workspace_user('ws', 'eve', 'eve@x.io');
    PERFORM add_group_member('ws', 'emea', 'alice');
    PERFORM add_group_member('ws', 'us', 'alice');
    PERFORM add_group_member('ws', 'emea', 'bob');
    PERFORM add_group_member('ws', 'us', 'bob');
    PERFORM add_group_member('ws', 'emea', 'carol');
    PERFORM add_group_member('ws', 'us', 'dan');
    PERFORM add_group_member('ws', 'apac', 'dan');
    PERFORM add_group_member('ws', 'emea', 'eve');
    PERFORM create_datatable_role('t120_emea');
    PERFORM create_datatable_role('t120_us');
    PERFORM create_datatable_role('t120_apac');
END $$;
SELECT register_datatable('ws', 'main', 't120_dt', 't120_admin', :'admin_pw') AS dt_id \gset
SELECT tap.allow_region('t120_dt', 't120_admin', 't120_emea', 'emea') AS ok \gset
SELECT tap.allow_region('t120_dt', 't120_admin', 't120_us', 'us') AS ok \gset
SELECT tap.allow_region('t120_dt', 't120_admin', 't120_apac', 'apac') AS ok \gset
-- t120_emea may create tables in the data table's public schema (PostgreSQL
-- 15 gives PUBLIC no CREATE there); a set login holding it inherits that.
SELECT tap.exec_in('t120_dt', 'GRANT CREATE ON SCHEMA public TO t120_emea') AS ok \gset
DO $$ BEGIN
    PERFORM set_datatable_role_tenants('ws', 'main', 't120_emea', '{g/emea}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't120_us', '{g/us}');
    PERFORM set_datatable_role_tenants('ws', 'main', 't120_apac', '{u/carol,g/apac}');
    PERFORM set_datatable_default_role('ws', 'main', null);
END $$;

SELECT tap.start_job('ws', 'u/pub', 'app', 'alice@x.io') AS j_alice \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'bob@x.io') AS j_bob \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'carol@x.io') AS j_carol \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'dan@x.io') AS j_dan \gset
SELECT tap.start_job('ws', 'u/pub', 'app', 'eve@x.io') AS j_eve \gset

------------------------------------------------------------------------------
-- A viewer in two roles: a set login that sees the union
------------------------------------------------------------------------------
SELECT is(
    tap.seen(:'j_alice', 'main'), '1,2,4,5',
    'alice (emea, us): the set login sees the union of both roles'' rows'
);
SELECT is(tap.roles_of(:'j_alice', 'main'), '{t120_emea,t120_us}', 'alice holds emea and us');
SELECT tap.login_of(:'j_alice', 'main') AS set_login \gset
SELECT oid AS set_oid FROM pg_roles WHERE rolname = :'set_login' \gset
SELECT matches(
    :'set_login'::text, '^wm_set_[0-9a-f]{40}$',
    'the set login is wm_set_ + 40 hex digits'
);
SELECT cmp_ok(octet_length(:'set_login'), '<=', 63, 'the set login name fits in 63 bytes');

SELECT login AS r1_login, password AS r1_password FROM tap.resolve(:'j_alice', 'main') \gset
SELECT login AS r2_login, password AS r2_password FROM tap.resolve(:'j_alice', 'main') \gset
SELECT is(:'r2_login'::text, :'r1_login', 'resolving the same set twice gives the same login');
SELECT is(:'r2_password'::text, :'r1_password', '... and the same password');
SELECT is(
    tap.login_of(:'j_bob', 'main'), :'set_login',
    'another viewer with the same roles (bob) gets the same set login'
);
SELECT isnt(
    tap.login_of(:'j_carol', 'main'), :'set_login',
    'a viewer with another set (carol: emea, apac) gets another set login'
);
-- Another instance (another instance_id) would name the same roles another login.
BEGIN;
UPDATE datatable_roles.settings SET instance_id = gen_random_uuid();
SELECT datatable_roles.set_login_name('t120_dt', array(
    SELECT r.id FROM datatable_roles.catalog_role AS r WHERE r.name IN ('t120_emea', 't120_us')
)) AS other_instance_login \gset
ROLLBACK;
SELECT is(
    datatable_roles.set_login_name('t120_dt', array(
        SELECT r.id FROM datatable_roles.catalog_role AS r WHERE r.name IN ('t120_us', 't120_emea')
    )),
    :'set_login',
    'set_login_name gives this instance''s name of it, whatever the order of the ids'
);
SELECT isnt(
    :'other_instance_login'::text, :'set_login',
    'the same roles in another instance (another instance_id) get another set login'
);
SELECT isnt(
    datatable_roles.set_login_name('t120_dt2', array(
        SELECT r.id FROM datatable_roles.catalog_role AS r WHERE r.name IN ('t120_emea', 't120_us')
    )),
    :'set_login',
    'the same roles on another database get another set login'
);

------------------------------------------------------------------------------
-- Memberships: exactly its roles, with INHERIT, nothing granted directly
------------------------------------------------------------------------------
SELECT is(
    tap.memberships(:'set_login'), tap.with_login_group('{t120_emea,t120_us}'),
    'the set login is a member of exactly its roles and the login group in pg_auth_members'
);
SELECT results_eq(
    format(
        $$SELECT rolcanlogin, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname = %L$$,
        datatable_roles.login_group()
    ),
    $$VALUES (false, false, false)$$,
    'the login group is NOLOGIN with no attribute'
);
SELECT is(
    tap.connect_databases(datatable_roles.login_group()), '{}',
    '... and holds CONNECT on no database'
);
SELECT ok(
    NOT EXISTS (
        SELECT FROM pg_auth_members AS am WHERE am.member = :set_oid AND am.admin_option
    ),
    'no membership carries ADMIN OPTION'
);
SELECT is(
    (SELECT row(
        rolinherit, rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolreplication,
        rolbypassrls
    )::text FROM pg_roles WHERE oid = :set_oid),
    '(t,t,f,f,f,f,f)', 'the set login has LOGIN and INHERIT and no other attribute'
);
SELECT is(tap.query_in('t120_dt', format($q$
    SELECT count(*)::text FROM pg_class AS c, aclexplode(c.relacl) AS a WHERE a.grantee = %s
    $q$, :set_oid)), '0', 'no table ACL of the data table names the set login');
SELECT is(tap.query_in('t120_dt', format($q$
    SELECT count(*)::text FROM pg_namespace AS n, aclexplode(n.nspacl) AS a WHERE a.grantee = %s
    $q$, :set_oid)), '0', 'no schema ACL names it');
SELECT is(
    array(
        SELECT d.datname || '/' || a.privilege_type
        FROM pg_database AS d CROSS JOIN LATERAL aclexplode(d.datacl) AS a
        WHERE a.grantee = :set_oid
    ),
    '{t120_dt/CONNECT}',
    'its one direct privilege: CONNECT on its data table database'
);
SELECT is(
    tap.connect_databases('t120_emea') || tap.connect_databases('t120_us'), '{}',
    'its roles hold CONNECT on no database'
);

------------------------------------------------------------------------------
-- SET ROLE narrows, RESET ROLE returns to the union, other roles fail
------------------------------------------------------------------------------
SELECT is(tap.open_as('s', :'j_alice', 'main'), :'set_login', 'a session as the set login');
SELECT is(
    tap.query('s', 'SELECT current_user::text'), :'set_login',
    'current_user is the set login'
);
SELECT is(tap.seen_by('s'), '1,2,4,5', 'the session sees the union');
SELECT is(
    tap.exec('s', 'SET ROLE t120_emea'), 'SET',
    'SET ROLE to one of its roles is allowed'
);
SELECT is(tap.seen_by('s'), '1,4', 'SET ROLE t120_emea narrows to the emea rows');
SELECT is(tap.exec('s', 'SET ROLE t120_us'), 'SET', 'SET ROLE to its other role');
SELECT is(tap.seen_by('s'), '2,5', '... narrows to the us rows');
SELECT is(tap.exec('s', 'RESET ROLE'), 'RESET', 'RESET ROLE');
SELECT is(
    tap.query('s', 'SELECT current_user::text') || ':' || tap.seen_by('s'),
    :'set_login' || ':1,2,4,5', 'RESET ROLE returns to the set login and the union'
);
SELECT matches(
    tap.exec('s', 'SET ROLE t120_apac'), '^error 42501: ',
    'SET ROLE to a catalog role it does not hold fails'
);
SELECT matches(
    tap.exec('s', 'SET ROLE t120_admin'), '^error 42501: ',
    'SET ROLE to the admin login fails'
);
SELECT matches(
    tap.exec('s', 'SET ROLE dtr_owner'), '^error 42501: ',
    'SET ROLE to the package owner fails'
);
SELECT is(
    tap.query('s', 'SELECT current_user::text') || ':' || tap.seen_by('s'),
    :'set_login' || ':1,2,4,5', 'after the failures: still the set login, the union'
);

------------------------------------------------------------------------------
-- A set login owns what it creates; no other role or viewer reaches it
------------------------------------------------------------------------------
SELECT is(
    tap.exec('s', 'CREATE TABLE t120_mine (x integer)'), 'CREATE TABLE',
    'the set login creates a table'
);
SELECT is(tap.exec('s', 'INSERT INTO t120_mine VALUES (42)'), 'INSERT 0 1', '... and fills it');
SELECT is(
    tap.owner_in('t120_dt', 't120_mine'), :'set_login',
    'the table belongs to the set login'
);
SELECT is(
    tap.query('s', 'SELECT string_agg(x::text, $$,$$) FROM t120_mine'), '42',
    'the set login reads its table'
);
SELECT is(
    tap.open_as('e', :'j_eve', 'main'), 't120_emea',
    'eve (emea only) logs in with the one-role login of t120_emea, acting as t120_emea'
);
SELECT matches(
    tap.query('e', 'SELECT count(*)::text FROM t120_mine'), '^error 42501: ',
    'the login of one of its roles (t120_emea) cannot read the set login''s table'
);
SELECT is(
    tap.exec('e', 'RESET ROLE') || ' ' || tap.query('e', 'SELECT current_user::text'),
    'RESET t120_emea',
    'RESET ROLE in that session keeps acting as t120_emea (the startup option''s value)'
);
SELECT is(tap.exec('e', 'SET ROLE NONE'), 'SET', 'SET ROLE NONE ...');
SELECT matches(
    tap.query('e', 'SELECT current_user::text'), '^wm_set_[0-9a-f]{40}$',
    '... acts as the one-role login itself'
);
SELECT is(
    tap.seen_by('e') || ':'
    || (tap.query('e', 'SELECT count(*)::text FROM t120_mine') ~ '^error 42501: ')::text,
    '1,4:true',
    '... which reaches the same rows, and not the set login''s table either'
);
SELECT matches(
    tap.exec('e', 'SET ROLE t120_us'), '^error 42501: ',
    '... nor may it SET ROLE to a role it does not hold'
);
SELECT matches(
    tap.open_as('c', :'j_carol', 'main'), '^wm_set_',
    'carol (emea, apac) logs in as her own set login'
);
SELECT matches(
    tap.query('c', 'SELECT count(*)::text FROM t120_mine'), '^error 42501: ',
    'another viewer''s set login cannot read it'
);
SELECT is(tap.exec('s', 'SET ROLE t120_emea'), 'SET', 'the set login narrows to t120_emea ...');
SELECT matches(
    tap.query('s', 'SELECT count(*)::text FROM t120_mine'), '^error 42501: ',
    '... and then cannot read its own table either (objects belong to the set login)'
);
SELECT is(tap.exec('s', 'RESET ROLE'), 'RESET', 'RESET ROLE');

------------------------------------------------------------------------------
-- A script that changes its login's password or settings does not keep them:
-- a changed password is healed when the worker reports the refused
-- connection (heal_refused_login), settings by the next resolve
------------------------------------------------------------------------------
SELECT is(
    tap.exec('s', $$ALTER ROLE CURRENT_USER PASSWORD 'the-script-knows-this'$$), 'ALTER ROLE',
    'a script on the set login changes its password'
);
SELECT is(
    tap.connect_to('t120_dt', :'set_login', 'the-script-knows-this'), :'set_login',
    '... which then logs in with it'
);
SELECT is(
    (SELECT r.password FROM tap.resolve(:'j_alice', 'main') AS r), :'r1_password',
    'the next resolve hands out the stored password (the hot path reads none) ...'
);
SELECT is(
    heal_refused_login(:'set_login'), 'healed',
    '... the worker reports the refused connection: proven, and re-keyed'
);
SELECT login AS h1_login, password AS h1_password FROM tap.resolve(:'j_alice', 'main') \gset
SELECT is(:'h1_login'::text, :'set_login', 'the next resolve hands out the same login ...');
SELECT isnt(:'h1_password'::text, :'r1_password', '... with a new password');
SELECT is(
    tap.seen_as('t120_dt', :'set_login', :'h1_password'), '1,2,4,5',
    '... with which it logs in and sees the union'
);
SELECT matches(
    tap.connect_to('t120_dt', :'set_login', 'the-script-knows-this'),
    '^error 08001: password authentication failed',
    'the script''s password no longer works'
);
SELECT is(tap.seen_by('s'), '1,2,4,5', 'the script''s open session was not ended');
SELECT is(
    tap.exec('s', 'ALTER ROLE CURRENT_USER SET search_path = evil, public'), 'ALTER ROLE',
    'the script gives its login a setting every later session would start with'
);
SELECT is(
    tap.exec('s', $$ALTER ROLE CURRENT_USER IN DATABASE t120_dt SET work_mem = '77MB'$$),
    'ALTER ROLE',
    '... and one in its database'
);
SELECT login AS h2_login, password AS h2_password FROM tap.resolve(:'j_alice', 'main') \gset
SELECT is(:'h2_login'::text, :'set_login', 'the next resolve hands out the same login ...');
SELECT isnt(:'h2_password'::text, :'h1_password', '... healed: a new password');
SELECT is(
    (
        SELECT
            r.rolconfig IS NULL
            AND NOT EXISTS (SELECT FROM pg_db_role_setting AS d WHERE d.setrole = r.oid)
        FROM pg_roles AS r WHERE r.rolname = :'set_login'
    ),
    TRUE,
    '... and no setting left, globally or in its database'
);
SELECT is(
    tap.open('h', :'set_login', :'h2_password', 't120_dt'), :'set_login',
    'a new session as the healed login'
);
SELECT is(
    tap.query('h', $$SELECT current_setting('search_path') || ' ' || current_setting('work_mem')$$),
    (SELECT current_setting('search_path') || ' ' || current_setting('work_mem')),
    '... starts with the defaults, not the script''s settings'
);
SELECT is(tap.close('h'), 'OK', 'the session ends');
SELECT is(
    (SELECT r.password FROM tap.resolve(:'j_alice', 'main') AS r), :'h2_password',
    'an intact login is handed out as it is: the same password'
);

------------------------------------------------------------------------------
-- A rename moves no login
------------------------------------------------------------------------------
DO $$ BEGIN PERFORM rename_datatable_role('t120_us', 't120_usa'); END $$;
-- The policy names the role as text: re-point it, as an operator would.
SELECT tap.exec_in('t120_dt', $sql$
    SET ROLE t120_admin;
    DROP POLICY t120_us_us ON orders;
    CREATE POLICY t120_usa_us ON orders FOR SELECT
        USING (region = 'us' AND pg_has_role(current_user, 't120_usa', 'member'));
$sql$) AS ok \gset
SELECT is(
    tap.login_of(:'j_alice', 'main'), :'set_login',
    'after renaming t120_us to t120_usa, alice resolves to the same set login'
);
SELECT is(
    (SELECT oid FROM pg_roles WHERE rolname = :'set_login'), :'set_oid'::oid,
    '... the same role (same oid)'
);
SELECT is(
    tap.roles_of(:'j_alice', 'main'), '{t120_emea,t120_usa}',
    '... holding the renamed role'
);
SELECT is(
    tap.seen(:'j_alice', 'main'), '1,2,4,5',
    '... which logs in and still sees the union'
);
SELECT is(tap.seen_by('s'), '1,2,4,5', 'the open session as the set login goes on working');

------------------------------------------------------------------------------
-- A change in the viewer's groups resolves to another set login
------------------------------------------------------------------------------
DO $$ BEGIN
    PERFORM remove_group_member('ws', 'us', 'alice');
    PERFORM add_group_member('ws', 'apac', 'alice');
END $$;
SELECT isnt(
    tap.login_of(:'j_alice', 'main'), :'set_login',
    'alice moved from us to apac: her job resolves to another login'
);
SELECT is(
    tap.login_of(:'j_alice', 'main'), tap.login_of(:'j_carol', 'main'),
    '... the set login of {emea, apac}, the one carol has'
);
SELECT is(tap.seen(:'j_alice', 'main'), '1,3,4', '... which sees emea and apac');
SELECT is(
    tap.memberships(:'set_login'), tap.with_login_group('{t120_emea,t120_usa}'),
    'the old set login''s memberships are unchanged'
);
SELECT is(tap.seen(:'j_bob', 'main'), '1,2,4,5', 'bob still gets the old set login''s rows');

------------------------------------------------------------------------------
-- explain_datatable_role never creates a login
------------------------------------------------------------------------------
SELECT explain_datatable_role(:'j_dan', 'main') ->> 'login' AS dan_login \gset
SELECT is(
    explain_datatable_role(:'j_dan', 'main') -> 'login_exists', 'false'::jsonb,
    'explain for a new set (dan: us, apac) says its login does not exist'
);
SELECT ok(
    NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'dan_login')
    AND NOT EXISTS (SELECT FROM datatable_roles.datatable_role_set WHERE login = :'dan_login'),
    'after explain, there is still no such role and no row'
);
SELECT is(tap.seen(:'j_dan', 'main'), '2,3,5', 'resolving dan makes the set login: us + apac');
SELECT is(tap.login_of(:'j_dan', 'main'), :'dan_login', '... with the name explain gave');
SELECT is(
    explain_datatable_role(:'j_dan', 'main') -> 'login_exists', 'true'::jsonb,
    'explain now says the login exists'
);

DO $$ BEGIN
    PERFORM tap.close('s');
    PERFORM tap.close('e');
    PERFORM tap.close('c');
END $$;

SELECT * FROM finish();
