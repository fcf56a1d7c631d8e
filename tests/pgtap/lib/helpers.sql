-- The one test support layer of the pgTAP suite: every helper the test files
-- use, in schema tap, installed as superuser into dtr_tap_template (see
-- step_pg_prove in tests/run_checks.sh). They let a test file read as a
-- story: set up a data table database, start a job, act as the worker or as
-- a resolved login, and expect the rows it sees.
--
-- Package calls made by the test session run as the package owner anyway
-- (they are SECURITY DEFINER). Resolution goes through a second session on
-- the same metadata database acting as the worker role, so that a set login
-- it creates is committed before anyone logs in with it.
--
-- Helpers that return a value to compare give an error back as
-- 'error SQLSTATE: message', so that it fails one test instead of ending the
-- file; set-up helpers raise.

CREATE SCHEMA tap;

------------------------------------------------------------------------------
-- Connections and sessions
------------------------------------------------------------------------------

-- A libpq connection string to this cluster over its Unix socket. With
-- p_role, the startup option the platform passes for a one-role login
-- (login_kind 'role'): its session acts as that role.
CREATE FUNCTION tap.connstr(
    p_dbname text, p_user text DEFAULT 'postgres', p_password text DEFAULT null,
    p_role text DEFAULT null
)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT format('host=%s port=%s dbname=%s user=%s',
        split_part(current_setting('unix_socket_directories'), ',', 1),
        current_setting('port'), quote_literal(p_dbname), quote_literal(p_user))
        || coalesce(' password=' || quote_literal(p_password), '')
        || coalesce(' options=' || quote_literal('-c role=' || p_role), '')
$$;

-- The connection string of a resolved row, as the platform connects: a
-- one-role login (login_kind 'role') with the startup option -c role=<role>.
CREATE FUNCTION tap.connstr_of(
    p_dbname text, p_login text, p_password text, p_roles text[], p_login_kind text
)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT tap.connstr(p_dbname, p_login, p_password,
        CASE WHEN p_login_kind = 'role' THEN p_roles[1] END)
$$;

-- A session on this metadata database acting as p_role, opened once and kept; its name.
CREATE FUNCTION tap.session_as(p_role text) RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    conn text := 'tap_' || p_role;
BEGIN
    IF NOT coalesce(conn = ANY(datatable_roles_dblink.dblink_get_connections()), false) THEN
        PERFORM datatable_roles_dblink.dblink_connect(conn, tap.connstr(current_database()));
        PERFORM datatable_roles_dblink.dblink_exec(conn, format('SET ROLE %I', p_role));
    END IF;
    RETURN conn;
END;
$$;

-- Opens a named session as p_login with p_password (acting as p_role when
-- given); returns its current_user.
CREATE FUNCTION tap.open(
    p_name text, p_login text, p_password text, p_dbname text DEFAULT 'postgres',
    p_role text DEFAULT null
)
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM datatable_roles_dblink.dblink_connect(
        p_name, tap.connstr(p_dbname, p_login, p_password, p_role)
    );
    RETURN tap.query(p_name, 'SELECT current_user::text');
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- Opens a named session as the login a job resolves to, connected as the
-- platform connects (tap.connstr_of); returns its current_user.
CREATE FUNCTION tap.open_as(p_name text, p_job uuid, p_datatable text, p_role text DEFAULT null)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM tap.resolve(p_job, p_datatable, p_role);
    RETURN tap.open(p_name, r.login, r.password, r.dbname,
        CASE WHEN r.login_kind = 'role' THEN r.roles[1] END);
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- A fresh connection to p_dbname as p_login with p_password (acting as
-- p_role when given): its current_user, or 'error SQLSTATE: ' and the
-- server's reason (the FATAL line libpq got), such as 'permission denied
-- for database ...' or 'password authentication failed for user ...'.
CREATE FUNCTION tap.connect_to(
    p_dbname text, p_login text, p_password text, p_role text DEFAULT null
)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    detail text;
BEGIN
    RETURN (
        SELECT v.value FROM datatable_roles_dblink.dblink(
            tap.connstr(p_dbname, p_login, p_password, p_role), 'SELECT current_user::text'
        ) AS v (value text)
    );
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN 'error ' || SQLSTATE || ': ' || coalesce(
        nullif(split_part(substring(detail FROM 'FATAL:\s*(.*)$'), E'\n', 1), ''), SQLERRM
    );
END;
$$;

-- One text value of a query in a named session.
CREATE FUNCTION tap.query(p_name text, p_query text) RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (SELECT v.value FROM datatable_roles_dblink.dblink(p_name, p_query) AS v (value text));
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- A statement in a named session; returns its command status.
CREATE FUNCTION tap.exec(p_name text, p_sql text) RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN datatable_roles_dblink.dblink_exec(p_name, p_sql);
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- The ids of the orders a named session sees, like '1,4'.
CREATE FUNCTION tap.seen_by(p_name text) RETURNS text
LANGUAGE sql
AS $$
    SELECT tap.query(p_name,
        $q$SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM orders$q$)
$$;

-- The ids of the orders a fresh connection to p_dbname as p_login sees
-- (acting as p_role when given), like '1,4'.
CREATE FUNCTION tap.seen_as(
    p_dbname text, p_login text, p_password text, p_role text DEFAULT null
)
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (
        SELECT v.value FROM datatable_roles_dblink.dblink(
            tap.connstr(p_dbname, p_login, p_password, p_role),
            $q$SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM orders$q$
        ) AS v (value text)
    );
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- Closes a named session; returns 'OK'.
CREATE FUNCTION tap.close(p_name text) RETURNS text
LANGUAGE sql
AS $$
    SELECT datatable_roles_dblink.dblink_disconnect(p_name)
$$;

-- Runs statements as superuser in another database of the cluster, committed.
CREATE FUNCTION tap.exec_in(p_dbname text, p_sql text) RETURNS text
LANGUAGE sql
AS $$
    SELECT datatable_roles_dblink.dblink_exec(tap.connstr(p_dbname), p_sql)
$$;

-- One text value of a query run as superuser in another database.
CREATE FUNCTION tap.query_in(p_dbname text, p_query text) RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (
        SELECT v.value
        FROM datatable_roles_dblink.dblink(tap.connstr(p_dbname), p_query) AS v (value text)
    );
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- The owner of a table in another database.
CREATE FUNCTION tap.owner_in(p_dbname text, p_table text) RETURNS text
LANGUAGE sql
AS $$
    SELECT tap.query_in(p_dbname,
        format('SELECT tableowner::text FROM pg_tables WHERE tablename = %L', p_table))
$$;

-- The schema of a table in another database.
CREATE FUNCTION tap.schema_in(p_dbname text, p_table text) RETURNS text
LANGUAGE sql
AS $$
    SELECT tap.query_in(p_dbname,
        format('SELECT schemaname::text FROM pg_tables WHERE tablename = %L', p_table))
$$;

-- The number of rows of a table in another database, in whatever schema it
-- is (a quarantine schema, say), read as superuser.
CREATE FUNCTION tap.rows_in(p_dbname text, p_table text) RETURNS text
LANGUAGE sql
AS $$
    SELECT tap.query_in(p_dbname, format(
        'SELECT count(*)::text FROM %I.%I', tap.schema_in(p_dbname, p_table), p_table))
$$;

------------------------------------------------------------------------------
-- Acting as the worker role
------------------------------------------------------------------------------

-- Runs a statement as the worker role; returns its command status (raises).
CREATE FUNCTION tap.as_worker(p_sql text) RETURNS text
LANGUAGE sql
AS $$
    SELECT datatable_roles_dblink.dblink_exec(tap.session_as('dtr_worker'), p_sql)
$$;

-- resolve_datatable_role's row (login_kind included), called by the worker role, committed.
CREATE FUNCTION tap.resolve(
    p_job uuid, p_datatable text, p_role text DEFAULT null, p_for_migration boolean DEFAULT false
)
RETURNS TABLE (dbname text, login text, password text, roles text[], login_kind text)
LANGUAGE sql
AS $$
    SELECT * FROM datatable_roles_dblink.dblink(tap.session_as('dtr_worker'), format(
        $q$SELECT dbname, login, password, roles, login_kind
           FROM resolve_datatable_role(%L::uuid, %L, %L, %L)$q$,
        p_job, p_datatable, p_role, p_for_migration))
        AS r (dbname text, login text, password text, roles text[], login_kind text)
$$;

-- The login a job resolves to.
CREATE FUNCTION tap.login_of(
    p_job uuid, p_datatable text, p_role text DEFAULT null, p_for_migration boolean DEFAULT false
)
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (SELECT r.login FROM tap.resolve(p_job, p_datatable, p_role, p_for_migration) AS r);
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- The roles a job's connection holds.
CREATE FUNCTION tap.roles_of(
    p_job uuid, p_datatable text, p_role text DEFAULT null, p_for_migration boolean DEFAULT false
)
RETURNS text[]
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (SELECT r.roles FROM tap.resolve(p_job, p_datatable, p_role, p_for_migration) AS r);
EXCEPTION WHEN OTHERS THEN
    RETURN array['error ' || SQLSTATE || ': ' || SQLERRM];
END;
$$;

-- The ids of the orders a job's resolved login sees when it logs in as the
-- platform connects (tap.connstr_of), like '1,4'.
CREATE FUNCTION tap.seen(
    p_job uuid, p_datatable text, p_role text DEFAULT null, p_for_migration boolean DEFAULT false
)
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (
        SELECT v.value
        FROM tap.resolve(p_job, p_datatable, p_role, p_for_migration) AS r,
            datatable_roles_dblink.dblink(
                tap.connstr_of(r.dbname, r.login, r.password, r.roles, r.login_kind),
                $q$SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM orders$q$
            ) AS v (value text)
    );
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- A refused resolution as 'SQLSTATE|rule|message', rule = the CONSTRAINT field; else 'not refused'.
CREATE FUNCTION tap.refusal(
    p_job uuid, p_datatable text, p_role text DEFAULT null, p_for_migration boolean DEFAULT false
)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    e jsonb;
BEGIN
    -- dblink passes no CONSTRAINT field on: the worker's session catches the
    -- error itself and hands its fields back in a setting.
    PERFORM tap.as_worker(format($sql$
        DO $do$
        DECLARE
            st text;
            rule text;
            det text;
            msg text;
        BEGIN
            PERFORM set_config('tap.refusal', '{}', false);
            PERFORM resolve_datatable_role(%L::uuid, %L, %L, %L);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, rule = CONSTRAINT_NAME,
                det = PG_EXCEPTION_DETAIL, msg = MESSAGE_TEXT;
            PERFORM set_config('tap.refusal', json_build_object(
                'sqlstate', st, 'rule', rule, 'detail', det, 'message', msg)::text, false);
        END
        $do$
    $sql$, p_job, p_datatable, p_role, p_for_migration));
    e := tap.query(
        tap.session_as('dtr_worker'), $q$SELECT current_setting('tap.refusal')$q$
    )::jsonb;
    IF e = '{}' THEN
        RETURN 'not refused';
    END IF;
    -- A DETAIL other than 'refused by rule <rule>' is shown after the rule, so
    -- that a test fails on either.
    RETURN (e ->> 'sqlstate') || '|' || coalesce(e ->> 'rule', '')
        || CASE WHEN (e ->> 'detail') IS NOT DISTINCT FROM ('refused by rule ' || (e ->> 'rule'))
            THEN '' ELSE format(' (DETAIL %s)', coalesce(e ->> 'detail', 'none')) END
        || '|' || coalesce(e ->> 'message', '');
END;
$$;

-- The first step of a kind in explain_datatable_role's trace (NULL if none).
CREATE FUNCTION tap.step(p_job uuid, p_datatable text, p_step text) RETURNS jsonb
LANGUAGE sql
AS $$
    SELECT s.value
    FROM jsonb_array_elements(explain_datatable_role(p_job, p_datatable) -> 'steps') AS s
    WHERE s.value ->> 'step' = p_step
    LIMIT 1
$$;

-- The sweep's report, CALLed as the monitor loop does: by the package owner, in autocommit.
CREATE FUNCTION tap.sweep() RETURNS jsonb
LANGUAGE sql
AS $$
    SELECT v.report
    FROM datatable_roles_dblink.dblink(
        tap.session_as('dtr_owner'), 'CALL sweep_unused_role_set_logins(NULL)'
    ) AS v (report jsonb)
$$;

------------------------------------------------------------------------------
-- Assertions on package calls
------------------------------------------------------------------------------

-- A refused call: it raises p_sqlstate, and the package's state is as before.
CREATE FUNCTION tap.refused(p_sql text, p_sqlstate text, p_description text)
RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    before text := tap.state();
BEGIN
    RETURN NEXT throws_ok(p_sql, p_sqlstate::char(5), NULL, p_description);
    RETURN NEXT is(tap.state(), before, p_description || ': nothing changed');
END;
$$;

-- A call that succeeds and changes nothing (an idempotent add, say).
CREATE FUNCTION tap.no_op(p_sql text, p_description text)
RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    before text := tap.state();
BEGIN
    RETURN NEXT lives_ok(p_sql, p_description);
    RETURN NEXT is(tap.state(), before, p_description || ': nothing changed');
END;
$$;

-- A fingerprint of every package table, to show a refused call changed nothing.
CREATE FUNCTION tap.state() RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    t record;
    part text;
    acc text := '';
BEGIN
    FOR t IN
        SELECT c.relname FROM pg_class AS c
        WHERE c.relnamespace = 'datatable_roles'::regnamespace AND c.relkind = 'r'
        ORDER BY c.relname
    LOOP
        EXECUTE format('SELECT md5(coalesce(string_agg(x::text, %L ORDER BY x::text), %L)) FROM datatable_roles.%I AS x',
            chr(10), '', t.relname) INTO part;
        acc := acc || t.relname || ':' || part || ' ';
    END LOOP;
    -- and the cluster's roles, memberships and database privileges
    acc := acc || md5(coalesce((SELECT string_agg(r.rolname || r.rolcanlogin::text, ',' ORDER BY r.rolname)
        FROM pg_roles AS r), ''))
        || md5(coalesce((SELECT string_agg(m.roleid::text || '>' || m.member::text, ',' ORDER BY m.roleid, m.member)
        FROM pg_auth_members AS m), ''))
        || md5(coalesce((SELECT string_agg(d.datname || coalesce(d.datacl::text, ''), ',' ORDER BY d.datname)
        FROM pg_database AS d), ''));
    RETURN acc;
END;
$$;

------------------------------------------------------------------------------
-- Set-up
------------------------------------------------------------------------------

-- A new data table database with its admin login; returns the admin password.
CREATE FUNCTION tap.new_datatable_db(p_dbname text, p_admin text) RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    admin_password text := datatable_roles.new_password();
BEGIN
    -- The admin login has a generated password (a SCRAM verifier, as the
    -- package does) and is granted to the package owner. It owns the database
    -- and its orders table, under row-level security:
    --   1 emea, 2 us, 3 apac, 4 emea, 5 us
    PERFORM tap.exec_in('postgres', format('CREATE ROLE %I LOGIN PASSWORD %L',
        p_admin, datatable_roles.scram_verifier(admin_password, 16)));
    PERFORM tap.exec_in('postgres', format('GRANT %I TO dtr_owner WITH ADMIN OPTION', p_admin));
    PERFORM tap.exec_in('postgres', format('CREATE DATABASE %I OWNER %I', p_dbname, p_admin));
    PERFORM tap.exec_in(p_dbname, format($sql$
        SET ROLE %I;
        CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL);
        INSERT INTO orders VALUES (1, 'emea'), (2, 'us'), (3, 'apac'), (4, 'emea'), (5, 'us');
        ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
    $sql$, p_admin));
    RETURN admin_password;
END;
$$;

-- Lets p_role read the orders of p_region, by a policy like the seed's (pg_has_role member).
CREATE FUNCTION tap.allow_region(p_dbname text, p_admin text, p_role text, p_region text)
RETURNS text
LANGUAGE sql
AS $$
    SELECT tap.exec_in(p_dbname, format($sql$
        SET ROLE %1$I;
        GRANT SELECT ON orders TO %2$I;
        CREATE POLICY %3$I ON orders FOR SELECT
            USING (region = %4$L AND pg_has_role(current_user, %2$L, 'member'));
    $sql$, p_admin, p_role, p_role || '_' || p_region, p_region))
$$;

-- A job started now; returns its id.
CREATE FUNCTION tap.start_job(
    p_workspace text, p_permissioned_as text, p_origin text,
    p_caller_email text DEFAULT null, p_token_job uuid DEFAULT null
)
RETURNS uuid
LANGUAGE plpgsql
AS $$
DECLARE
    id uuid := gen_random_uuid();
BEGIN
    PERFORM record_job_start(id, p_workspace, p_permissioned_as, p_origin, p_caller_email, p_token_job);
    RETURN id;
END;
$$;

------------------------------------------------------------------------------
-- What the package stored
------------------------------------------------------------------------------

-- The tenant keys of a role (admin included) in a data table's map (NULL: not in the map).
CREATE FUNCTION tap.tenants(p_workspace text, p_datatable text, p_role text) RETURNS text[]
LANGUAGE sql STABLE
AS $$
    SELECT d.admin_tenants FROM datatable_roles.datatable AS d
    WHERE d.workspace = p_workspace AND d.name = p_datatable AND p_role = 'admin'
    UNION ALL
    SELECT m.tenants
    FROM datatable_roles.datatable_role AS m
    JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id
    JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
    WHERE d.workspace = p_workspace AND d.name = p_datatable AND r.name = p_role
$$;

-- The stored default role of a data table entry ('*none*': no default).
CREATE FUNCTION tap.default_of(p_workspace text, p_datatable text) RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT d.default_role FROM datatable_roles.datatable AS d
    WHERE d.workspace = p_workspace AND d.name = p_datatable
$$;

-- The viewer recorded for a job (NULL: none).
CREATE FUNCTION tap.viewer_of(p_job uuid) RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT p.end_user_email FROM datatable_roles.job_perms AS p WHERE p.job_id = p_job
$$;

-- The password in a set login's row ('': retired; NULL: no row).
CREATE FUNCTION tap.set_login_password(p_login text) RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT s.password FROM datatable_roles.datatable_role_set AS s WHERE s.login = p_login
$$;

------------------------------------------------------------------------------
-- What the cluster holds
------------------------------------------------------------------------------

-- Whether a role may log in (NULL: no such role).
CREATE FUNCTION tap.can_login(p_login text) RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT r.rolcanlogin FROM pg_roles AS r WHERE r.rolname = p_login
$$;

-- The roles a login is a member of, sorted.
CREATE FUNCTION tap.memberships(p_login text) RETURNS text[]
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(array_agg(g.rolname::text ORDER BY g.rolname::text), '{}')
    FROM pg_auth_members AS am
    JOIN pg_roles AS g ON g.oid = am.roleid
    JOIN pg_roles AS m ON m.oid = am.member
    WHERE m.rolname = p_login
$$;

-- p_roles and the instance's login group, sorted: the memberships of a
-- login the package hands to a job.
CREATE FUNCTION tap.with_login_group(p_roles text[]) RETURNS text[]
LANGUAGE sql STABLE
AS $$
    SELECT array_agg(r ORDER BY r)
    FROM unnest(p_roles || datatable_roles.login_group()) AS r
$$;

-- The databases a role holds CONNECT on, directly, sorted.
CREATE FUNCTION tap.connect_databases(p_role text) RETURNS text[]
LANGUAGE sql STABLE
AS $$
    SELECT ARRAY(
        SELECT pd.datname::text
        FROM pg_database AS pd,
            aclexplode(coalesce(pd.datacl, acldefault('d', pd.datdba))) AS acl
        WHERE acl.grantee = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = p_role)
            AND acl.privilege_type = 'CONNECT'
        ORDER BY 1
    )
$$;

-- The grantees holding CONNECT on a database, sorted ('PUBLIC' for public).
CREATE FUNCTION tap.connect_holders(p_dbname text) RETURNS text[]
LANGUAGE sql STABLE
AS $$
    SELECT ARRAY(
        -- a NULL datacl is the default ACL, which gives PUBLIC CONNECT
        SELECT CASE WHEN acl.grantee = 0 THEN 'PUBLIC' ELSE acl.grantee::regrole::text END
        FROM pg_database AS pd,
            aclexplode(coalesce(pd.datacl, acldefault('d', pd.datdba))) AS acl
        WHERE pd.datname = p_dbname AND acl.privilege_type = 'CONNECT'
        ORDER BY 1
    )
$$;

------------------------------------------------------------------------------
-- Clean-up
------------------------------------------------------------------------------

-- Drops this instance's scoped logins (they are not named after a test
-- file's prefix, so begin.psql does not find them): in each data table
-- database, what they own and hold there first (their CONNECT grant
-- included). Returns how many logins were dropped.
CREATE FUNCTION tap.drop_scoped_logins() RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    db text;
    logins text;
    n integer := 0;
BEGIN
    FOR db, logins IN
        SELECT s.dbname, string_agg(quote_ident(s.login), ', ')
        FROM datatable_roles.datatable_role_set AS s
        WHERE EXISTS (SELECT FROM pg_roles AS r WHERE r.rolname = s.login)
            AND EXISTS (SELECT FROM pg_database AS d WHERE d.datname = s.dbname)
        GROUP BY s.dbname
    LOOP
        PERFORM tap.exec_in(db, 'DROP OWNED BY ' || logins);
    END LOOP;
    FOR logins IN
        SELECT s.login FROM datatable_roles.datatable_role_set AS s
        WHERE EXISTS (SELECT FROM pg_roles AS r WHERE r.rolname = s.login)
    LOOP
        PERFORM tap.exec_in('postgres', format('DROP ROLE %I', logins));
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;

-- The worker role gets the run-time calls (granted once, in the template).
SET ROLE dtr_owner;
DO $$ BEGIN PERFORM datatable_roles.grant_worker('dtr_worker'); END $$;
RESET ROLE;
