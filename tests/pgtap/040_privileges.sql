-- Privileges (SPEC section 10): the worker role runs the resolution calls and
-- nothing else, reads no table (no password column in particular), PUBLIC
-- executes nothing of the package, every SECURITY DEFINER function pins its
-- search_path, and the package owner is not a superuser.
\set test t40
\ir lib/begin.psql

SELECT plan(156);

-- The package's public entry points (SPEC section 8).
CREATE FUNCTION pg_temp.public_api() RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT ARRAY[
        'add_workspace', 'add_workspace_user', 'remove_workspace_user', 'add_group_member',
        'remove_group_member', 'set_folder_access', 'validate_role_name', 'create_datatable_role',
        'rename_datatable_role', 'set_datatable_role_enabled', 'drop_datatable_role',
        'register_datatable', 'set_datatable_admin_password', 'reference_datatable',
        'set_datatable_role_tenants',
        'remove_datatable_role', 'set_datatable_default_role', 'record_job_start',
        'resolve_datatable_role', 'explain_datatable_role', 'cached_result_path',
        'retire_role_set_logins_of', 'sweep_unused_role_set_logins'
    ]
$$;

-- Every function of the package: the public entry points and all of schema datatable_roles.
CREATE FUNCTION pg_temp.package_functions() RETURNS SETOF oid
LANGUAGE sql STABLE
AS $$
    SELECT p.oid FROM pg_proc AS p
    WHERE p.pronamespace = 'datatable_roles'::regnamespace
        OR (p.pronamespace = 'public'::regnamespace AND p.proname = ANY(pg_temp.public_api()))
        OR p.proowner = 'dtr_owner'::regrole
$$;

SELECT tap.new_datatable_db('t40_dt', 't40_admin') AS admin_pw \gset
DO $$
BEGIN
    PERFORM add_workspace('ws');
    PERFORM add_workspace_user('ws', 'alice', 'alice@x.io');
    PERFORM add_workspace_user('ws', 'pub', 'pub@x.io');
    PERFORM create_datatable_role('t40_r');
END $$;
SELECT ok(
    register_datatable('ws', 'main', 't40_dt', 't40_admin', :'admin_pw') > 0,
    'ws/main registered'
);
DO $$
BEGIN
    PERFORM set_datatable_role_tenants('ws', 'main', 't40_r', '{u/alice}');
END $$;
SELECT tap.start_job('ws', 'u/pub', 'app', 'alice@x.io') AS job \gset

------------------------------------------------------------------------------
-- the package owner and the worker role
------------------------------------------------------------------------------
SELECT results_eq(
    $$SELECT rolsuper, rolcreaterole, rolbypassrls, rolreplication
      FROM pg_roles WHERE rolname = 'dtr_owner'$$,
    $$VALUES (false, true, false, false)$$,
    'the package owner is not a superuser: CREATEROLE, no BYPASSRLS, no REPLICATION'
);
SELECT ok(
    pg_has_role('dtr_owner', 'pg_signal_backend', 'MEMBER'),
    'the package owner may end sessions (pg_signal_backend)'
);
SELECT is(
    array(
        SELECT DISTINCT r.rolname::text FROM pg_proc AS p JOIN pg_roles AS r ON r.oid = p.proowner
        WHERE p.oid IN (SELECT pg_temp.package_functions())
        UNION
        SELECT DISTINCT r.rolname::text FROM pg_class AS c JOIN pg_roles AS r ON r.oid = c.relowner
        WHERE c.relnamespace = 'datatable_roles'::regnamespace
    ),
    ARRAY['dtr_owner'],
    'every function and table of the package is owned by the package owner'
);
SELECT results_eq(
    $$SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls
      FROM pg_roles WHERE rolname = 'dtr_worker'$$,
    $$VALUES (false, false, false, false)$$,
    'the worker role has no attributes'
);
SELECT is(
    array(
        SELECT r.rolname::text FROM pg_roles AS r
        WHERE r.rolname <> 'dtr_worker' AND pg_has_role('dtr_worker', r.oid, 'USAGE')
        ORDER BY 1
    ),
    '{}'::text[],
    'the worker role holds no other role: not the owner, no admin login, no catalog role'
);

------------------------------------------------------------------------------
-- the worker role may not run the admin calls
------------------------------------------------------------------------------
SELECT
    tap.refused(
        format('SELECT tap.as_worker(%L)', c), '42501',
        format('the worker role may not run %s', c)
    )
FROM unnest(ARRAY[
    $$SELECT add_workspace('w2')$$,
    $$SELECT add_workspace_user('ws', 'eve', 'eve@x.io', true)$$,
    $$SELECT add_workspace_user('ws', 'eve', 'eve@x.io')$$,
    $$SELECT remove_workspace_user('ws', 'alice')$$,
    $$SELECT add_group_member('ws', 'admins', 'pub')$$,
    $$SELECT remove_group_member('ws', 'admins', 'pub')$$,
    $$SELECT set_folder_access('ws', 'f', 'u/pub', 'owner')$$,
    $$SELECT validate_role_name('t40_x')$$,
    $$SELECT create_datatable_role('t40_x')$$,
    $$SELECT rename_datatable_role('t40_r', 't40_x')$$,
    $$SELECT set_datatable_role_enabled('t40_r', false)$$,
    $$SELECT drop_datatable_role('t40_r')$$,
    $$SELECT register_datatable('ws', 'x', 't40_dt', 't40_admin', 'pw')$$,
    $$SELECT set_datatable_admin_password('ws', 'main', 'pw')$$,
    $$SELECT reference_datatable('ws', 'x', 'ws', 'main')$$,
    $$SELECT set_datatable_role_tenants('ws', 'main', 't40_r', '{*}')$$,
    $$SELECT set_datatable_role_tenants('ws', 'main', 'admin', '{*}')$$,
    $$SELECT remove_datatable_role('ws', 'main', 't40_r')$$,
    $$SELECT set_datatable_default_role('ws', 'main', 't40_r')$$,
    $$SELECT set_datatable_default_role('ws', 'main', NULL)$$,
    $$SELECT retire_role_set_logins_of('t40_r')$$,
    $$CALL sweep_unused_role_set_logins(NULL)$$,
    $$CALL sweep_unused_role_set_logins(NULL, '0 seconds')$$
]) AS c;

-- nor the internal functions
SELECT
    tap.refused(
        format('SELECT tap.as_worker(%L)', c), '42501',
        format('the worker role may not run %s', c)
    )
FROM unnest(ARRAY[
    $$SELECT datatable_roles.grant_worker('dtr_worker')$$,
    $$SELECT datatable_roles.new_password()$$,
    $$SELECT datatable_roles.scram_verifier('x', 1)$$,
    $$SELECT datatable_roles.ensure_set_login('t40_dt', '{1}')$$,
    $$SELECT datatable_roles.make_login('wm_set_x', 't40_dt', '{1}')$$,
    $$SELECT datatable_roles.retire_logins_holding(1, 't40_dt')$$,
    $$SELECT datatable_roles.rotate_or_heal('wm_set_x')$$,
    $$SELECT datatable_roles.heal_set_login('wm_set_x')$$,
    $$SELECT datatable_roles.login_fails('t40_dt', 't40_admin', 'x')$$,
    $$SELECT datatable_roles.end_sessions_of('t40_r')$$,
    $$SELECT datatable_roles.member_keys('ws', 'alice')$$,
    $$SELECT datatable_roles.no_default()$$,
    $$SELECT datatable_roles.exec_in_database('t40_dt', 'SELECT 1')$$,
    $$SELECT datatable_roles.move_objects_of('t40_r')$$,
    $$SELECT datatable_roles.sweep_drop('t40_r')$$,
    $$SELECT datatable_roles.drop_login('t40_admin')$$
]) AS c;

-- nor dblink, which the package keeps in a schema of its own
SELECT
    tap.refused(
        format('SELECT tap.as_worker(%L)', c), '42501',
        format('the worker role may not run %s', c)
    )
FROM unnest(ARRAY[
    $$SELECT datatable_roles_dblink.dblink_connect('x', 'dbname=postgres')$$,
    $$SELECT datatable_roles_dblink.dblink_exec('dbname=postgres', 'SELECT 1')$$,
    $$SELECT * FROM datatable_roles_dblink.dblink('dbname=postgres', 'SELECT 1') AS t (x integer)$$
]) AS c;
SELECT is(
    array(
        SELECT DISTINCT
            CASE WHEN acl.grantee = 0 THEN 'PUBLIC' ELSE acl.grantee::regrole::text END
        FROM pg_namespace AS n
        CROSS JOIN LATERAL aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) AS acl
        WHERE
            n.nspname = 'datatable_roles_dblink' AND acl.privilege_type = 'USAGE'
            AND acl.grantee NOT IN (SELECT r.oid FROM pg_roles AS r WHERE r.rolsuper)
        ORDER BY 1
    ),
    '{dtr_owner}',
    'only the package owner (and superusers) may use the dblink schema, in either profile'
);

SELECT is(
    array(
        SELECT p.oid::regprocedure::text FROM pg_proc AS p
        WHERE
            p.prosrc ~* 'pg_authid'
            AND p.proowner IN (SELECT r.oid FROM pg_roles AS r WHERE r.rolsuper)
            AND p.pronamespace IN (
                SELECT n.oid FROM pg_namespace AS n
                WHERE n.nspname IN ('datatable_roles_guard', 'datatable_roles')
            )
        ORDER BY 1
    ),
    '{}',
    'no superuser function of the install reads pg_authid (the guard verifier_is is gone)'
);

------------------------------------------------------------------------------
-- the worker role reads and writes no table
------------------------------------------------------------------------------
SELECT
    tap.refused(
        format('SELECT tap.as_worker(%L)', format('SELECT * FROM datatable_roles.%I', t)), '42501',
        format('the worker role may not read datatable_roles.%s', t)
    )
FROM unnest(ARRAY[
    'settings', 'workspace', 'workspace_user', 'group_member', 'folder_access', 'catalog_role',
    'datatable', 'datatable_role', 'datatable_role_set', 'job_perms', 'link_credential'
]) AS t;
SELECT
    tap.refused(
        format('SELECT tap.as_worker(%L)', c), '42501',
        format('the worker role may not run %s', c)
    )
FROM unnest(ARRAY[
    $$SELECT name FROM datatable_roles.catalog_role$$,
    $$SELECT verifier FROM datatable_roles.datatable_role_set$$,
    $$SELECT admin_password FROM datatable_roles.datatable$$,
    $$SELECT password FROM datatable_roles.datatable_role_set$$,
    $$SELECT password FROM datatable_roles.link_credential$$,
    $$UPDATE datatable_roles.settings SET clock_offset = '40 days'$$,
    $$UPDATE datatable_roles.job_perms SET end_user_email = 'alice@x.io'$$,
    $$INSERT INTO datatable_roles.workspace_user VALUES ('ws', 'eve', 'eve@x.io', true)$$,
    $$DELETE FROM datatable_roles.datatable_role_set$$,
    $$TRUNCATE datatable_roles.job_perms$$
]) AS c;
SELECT is(
    has_schema_privilege('dtr_worker', 'datatable_roles', 'USAGE'),
    false,
    'the worker role has no USAGE on schema datatable_roles'
);
SELECT is(
    array(
        SELECT c.relname::text FROM pg_class AS c
        WHERE
            c.relnamespace = 'datatable_roles'::regnamespace
            AND CASE
                WHEN c.relkind = 'S'
                    THEN has_sequence_privilege('dtr_worker', c.oid, 'USAGE, SELECT, UPDATE')
                WHEN c.relkind IN ('r', 'p', 'v', 'm', 'f')
                    THEN has_table_privilege(
                        'dtr_worker', c.oid,
                        'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER'
                    )
                    OR has_any_column_privilege(
                        'dtr_worker', c.oid, 'SELECT, INSERT, UPDATE, REFERENCES'
                    )
                ELSE false
            END
        ORDER BY 1
    ),
    '{}'::text[],
    'the worker role holds no privilege on any table, column or sequence of the package'
);
SELECT is(
    array(
        SELECT c.relname::text FROM pg_class AS c
        CROSS JOIN
            LATERAL aclexplode(coalesce(
                c.relacl,
                acldefault(CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END::"char", c.relowner)
            )) AS acl
        WHERE
            c.relnamespace = 'datatable_roles'::regnamespace
            AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
            AND acl.grantee <> c.relowner
        ORDER BY 1
    ),
    '{}'::text[],
    'no table or sequence of the package is granted to anyone but its owner'
);
SELECT ok(
    NOT has_column_privilege(
        'dtr_worker', 'datatable_roles.datatable', 'admin_password', 'SELECT'
    )
    AND NOT has_column_privilege(
        'dtr_worker', 'datatable_roles.datatable_role_set', 'password', 'SELECT'
    )
    AND NOT has_column_privilege(
        'dtr_worker', 'datatable_roles.link_credential', 'password', 'SELECT'
    )
    AND NOT has_column_privilege(
        'dtr_worker', 'datatable_roles.datatable', 'admin_verifier', 'SELECT'
    )
    AND NOT has_column_privilege(
        'dtr_worker', 'datatable_roles.datatable_role_set', 'verifier', 'SELECT'
    ),
    'the worker role cannot read a password or verifier column'
);
SELECT is(
    (
        SELECT count(*)::integer FROM information_schema.columns
        WHERE
            table_schema = 'datatable_roles' AND table_name = 'catalog_role'
            AND column_name LIKE '%password%'
    ),
    0,
    'catalog roles have no password column to read: they never log in'
);

------------------------------------------------------------------------------
-- the worker role may run the resolution calls
------------------------------------------------------------------------------
SELECT ok(
    has_function_privilege(
        'dtr_worker', 'public.record_job_start(uuid, text, text, text, text, uuid)', 'EXECUTE'
    )
    AND has_function_privilege(
        'dtr_worker', 'public.resolve_datatable_role(uuid, text, text, boolean)', 'EXECUTE'
    )
    AND has_function_privilege(
        'dtr_worker', 'public.explain_datatable_role(uuid, text, text)', 'EXECUTE'
    )
    AND has_function_privilege(
        'dtr_worker', 'public.cached_result_path(uuid, text, jsonb)', 'EXECUTE'
    )
    AND has_function_privilege(
        'dtr_worker', 'public.usable_datatable_roles(text, text, text)', 'EXECUTE'
    )
    AND has_function_privilege('dtr_worker', 'public.heal_refused_login(text)', 'EXECUTE'),
    'the worker role has EXECUTE on the four resolution calls, usable_datatable_roles and'
    || ' heal_refused_login'
);
SELECT is(
    array(
        SELECT p.proname::text FROM pg_proc AS p
        WHERE
            p.oid IN (SELECT pg_temp.package_functions())
            AND has_function_privilege('dtr_worker', p.oid, 'EXECUTE')
        ORDER BY 1
    ),
    ARRAY[
        'cached_result_path', 'explain_datatable_role', 'heal_refused_login',
        'record_job_start', 'resolve_datatable_role', 'usable_datatable_roles'
    ],
    'and on no other function of the package'
);
SELECT is(
    tap.query(tap.session_as('dtr_worker'), format(
        $$SELECT record_job_start(%L::uuid, 'ws', 'u/pub', 'app', 'alice@x.io')$$, gen_random_uuid()
    )),
    'alice@x.io',
    'the worker role runs record_job_start'
);
SELECT is(
    tap.query(tap.session_as('dtr_worker'), format(
        $$SELECT cached_result_path(%L::uuid, 'f/x/script', '{"a": 1}')$$, :'job'
    )),
    cached_result_path(:'job', 'f/x/script', '{"a": 1}'),
    'the worker role runs cached_result_path'
);
SELECT is(
    tap.query(tap.session_as('dtr_worker'), format(
        $$SELECT explain_datatable_role(%L::uuid, 'main')->>'login'$$, :'job'
    )),
    't40_admin',
    'the worker role runs explain_datatable_role'
);
SELECT is(
    (SELECT r.roles FROM tap.resolve(:'job', 'main') AS r),
    '{admin}',
    'the worker role runs resolve_datatable_role (R2: default admin)'
);
SELECT tap.start_job('ws', 'u/alice', 'run', 'alice@x.io') AS alice_job \gset
SELECT is(
    (SELECT r.roles FROM tap.resolve(:'alice_job', 'main', 't40_r') AS r),
    '{t40_r}',
    'and resolves a named role for an identity among its tenants (R1)'
);
-- What the worker role reads from explain_datatable_role, naming a role and not.
SELECT
    tap.query(tap.session_as('dtr_worker'), format(
        $$SELECT explain_datatable_role(%L::uuid, 'main', 't40_r')::text$$, :'job'
    )) AS explained_role,
    tap.query(tap.session_as('dtr_worker'), format(
        $$SELECT explain_datatable_role(%L::uuid, 'main')::text$$, :'job'
    )) AS explained_default
\gset
SELECT ok(
    -- both are explanations (an error here is no JSON and ends the file)
    jsonb_typeof(:'explained_role'::jsonb) = 'object'
    AND jsonb_typeof(:'explained_default'::jsonb) = 'object'
    AND NOT EXISTS (
        SELECT FROM datatable_roles.datatable_role_set AS s
        WHERE s.password <> '' AND (
            strpos(:'explained_role', s.password) > 0
            OR strpos(:'explained_default', s.password) > 0
        )
    )
    AND strpos(:'explained_role', :'admin_pw') = 0
    AND strpos(:'explained_default', :'admin_pw') = 0,
    'explain_datatable_role shows no password'
);

------------------------------------------------------------------------------
-- PUBLIC executes nothing; SECURITY DEFINER functions pin search_path
------------------------------------------------------------------------------
SELECT cmp_ok(
    (SELECT count(*)::integer FROM pg_temp.package_functions()), '>=', 40,
    'the package functions are found'
);
SELECT is(
    (
        SELECT count(*)::integer FROM pg_proc AS p
        WHERE p.pronamespace = 'public'::regnamespace AND p.proname = any(pg_temp.public_api())
    ),
    cardinality(pg_temp.public_api()),
    'every public entry point exists'
);
SELECT is(
    array(
        SELECT p.oid::regprocedure::text FROM pg_proc AS p
        CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS acl
        WHERE p.oid IN (SELECT pg_temp.package_functions()) AND acl.grantee = 0
        ORDER BY 1
    ),
    '{}'::text[],
    'PUBLIC has EXECUTE on no function of the package'
);
SELECT is(
    array(
        SELECT p.oid::regprocedure::text FROM pg_proc AS p
        WHERE
            p.oid IN (SELECT pg_temp.package_functions())
            AND has_function_privilege('public', p.oid, 'EXECUTE')
        ORDER BY 1
    ),
    '{}'::text[],
    'has_function_privilege(public) agrees'
);
SELECT is(
    array(
        SELECT p.oid::regprocedure::text FROM pg_proc AS p
        CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS acl
        WHERE
            p.oid IN (SELECT pg_temp.package_functions())
            AND acl.grantee NOT IN ('dtr_owner'::regrole, 'dtr_worker'::regrole)
        ORDER BY 1
    ),
    '{}'::text[],
    'no function of the package is granted to anyone but the owner and the worker role'
);
SELECT cmp_ok(
    (
        SELECT count(*)::integer FROM pg_proc AS p
        WHERE p.oid IN (SELECT pg_temp.package_functions()) AND p.prosecdef
    ),
    '>=', 20,
    'the package has SECURITY DEFINER functions'
);
SELECT is(
    array(
        SELECT p.oid::regprocedure::text FROM pg_proc AS p
        WHERE
            p.oid IN (SELECT pg_temp.package_functions()) AND p.prosecdef
            AND NOT EXISTS (SELECT FROM unnest(p.proconfig) AS c WHERE c LIKE 'search_path=%')
        ORDER BY 1
    ),
    '{}'::text[],
    'every SECURITY DEFINER function of the package pins search_path'
);
SELECT is(
    array(
        SELECT p.oid::regprocedure::text FROM pg_proc AS p
        CROSS JOIN LATERAL unnest(p.proconfig) AS c
        WHERE
            p.oid IN (SELECT pg_temp.package_functions()) AND p.prosecdef
            AND c LIKE 'search_path=%'
            AND NOT (
                c ~ '^search_path=pg_catalog\s*,'
                AND c ~ ',\s*pg_temp$'
                AND c !~ '(public|\$user|"\$user")'
            )
        ORDER BY 1
    ),
    '{}'::text[],
    'each pinned search_path starts with pg_catalog, ends with pg_temp, '
    || 'and has neither public nor $user'
);
SELECT is(
    array(
        SELECT p.oid::regprocedure::text FROM pg_proc AS p JOIN pg_roles AS r ON r.oid = p.proowner
        WHERE p.oid IN (SELECT pg_temp.package_functions()) AND p.prosecdef AND r.rolsuper
        ORDER BY 1
    ),
    '{}'::text[],
    'no SECURITY DEFINER function of the package runs as a superuser'
);
SELECT * FROM finish();
