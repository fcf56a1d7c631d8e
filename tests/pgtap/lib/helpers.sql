-- Test helpers for the pgTAP suite, installed as superuser into the template
-- metadata database (schema tap). They let a test file read as a story: set
-- up a data table database, start a job, resolve as the worker, and look at
-- the rows the resolved login sees over a real, password-authenticated
-- connection.
--
-- Package calls made by the test session run as the package owner anyway
-- (they are SECURITY DEFINER). Resolution goes through a second session on
-- the same metadata database acting as the worker role, so that a set login
-- it creates is committed before anyone logs in with it.

CREATE SCHEMA tap;

-- A libpq connection string to this cluster over its Unix socket.
CREATE FUNCTION tap.connstr(
    p_dbname text, p_user text DEFAULT 'postgres', p_password text DEFAULT null
)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT format('host=%s port=%s dbname=%s user=%s',
        split_part(current_setting('unix_socket_directories'), ',', 1),
        current_setting('port'), quote_literal(p_dbname), quote_literal(p_user))
        || coalesce(' password=' || quote_literal(p_password), '')
$$;

-- The session acting as the worker role on this metadata database.
CREATE FUNCTION tap.worker_session() RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    IF NOT coalesce('tap_worker' = ANY(datatable_roles_dblink.dblink_get_connections()), false) THEN
        PERFORM datatable_roles_dblink.dblink_connect('tap_worker', tap.connstr(current_database()));
        PERFORM datatable_roles_dblink.dblink_exec('tap_worker', 'SET ROLE dtr_worker');
    END IF;
    RETURN 'tap_worker';
END;
$$;

-- Runs a statement as the worker role; returns its command status.
CREATE FUNCTION tap.as_worker(p_sql text) RETURNS text
LANGUAGE sql
AS $$
    SELECT datatable_roles_dblink.dblink_exec(tap.worker_session(), p_sql)
$$;

-- resolve_datatable_role, called by the worker role, committed.
CREATE FUNCTION tap.resolve(
    p_job uuid, p_datatable text, p_role text DEFAULT null, p_for_migration boolean DEFAULT false
)
RETURNS TABLE (dbname text, login text, password text, roles text[])
LANGUAGE sql
AS $$
    SELECT * FROM datatable_roles_dblink.dblink(tap.worker_session(), format(
        'SELECT dbname, login, password, roles FROM resolve_datatable_role(%L::uuid, %L, %L, %L)',
        p_job, p_datatable, p_role, p_for_migration))
        AS r (dbname text, login text, password text, roles text [])
$$;

-- The login a job resolves to; an error (a refusal where a login was
-- expected) comes back as 'error SQLSTATE: message', so that it fails one
-- test instead of ending the file. tap.roles_of and tap.seen do the same.
CREATE FUNCTION tap.login_of(p_job uuid, p_datatable text, p_role text DEFAULT null)
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (SELECT r.login FROM tap.resolve(p_job, p_datatable, p_role) AS r);
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- The roles a job's connection holds.
CREATE FUNCTION tap.roles_of(p_job uuid, p_datatable text, p_role text DEFAULT null)
RETURNS text[]
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (SELECT r.roles FROM tap.resolve(p_job, p_datatable, p_role) AS r);
EXCEPTION WHEN OTHERS THEN
    RETURN array['error ' || SQLSTATE || ': ' || SQLERRM];
END;
$$;

-- Resolves, logs in to the data table as the resolved login with its
-- password, and returns the one text value of p_query (by default the ids of
-- the orders it sees, like '1,4').
CREATE FUNCTION tap.seen(
    p_job uuid, p_datatable text, p_role text DEFAULT null,
    p_query text DEFAULT
    $q$SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM orders$q$
)
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN (
        SELECT v.value
        FROM tap.resolve(p_job, p_datatable, p_role) AS r,
            datatable_roles_dblink.dblink(
                tap.connstr(r.dbname, r.login, r.password), p_query
            ) AS v (value text)
    );
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- Opens a named session as the resolved login; returns the login.
CREATE FUNCTION tap.open_as(p_name text, p_job uuid, p_datatable text, p_role text DEFAULT null)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM tap.resolve(p_job, p_datatable, p_role);
    PERFORM datatable_roles_dblink.dblink_connect(p_name, tap.connstr(r.dbname, r.login, r.password));
    RETURN r.login;
END;
$$;

-- One text value from a named session.
CREATE FUNCTION tap.query(p_name text, p_query text) RETURNS text
LANGUAGE sql
AS $$
    SELECT v.value FROM datatable_roles_dblink.dblink(p_name, p_query) AS v (value text)
$$;

-- A statement in a named session; returns its command status.
CREATE FUNCTION tap.exec(p_name text, p_sql text) RETURNS text
LANGUAGE sql
AS $$
    SELECT datatable_roles_dblink.dblink_exec(p_name, p_sql)
$$;

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

-- A data table database: an admin login with a generated password (a SCRAM
-- verifier, as the package does), granted to the package owner, owning a new
-- database with an orders table under row-level security:
--   1 emea, 2 us, 3 apac, 4 emea, 5 us
-- Returns the admin password, to pass to register_datatable.
CREATE FUNCTION tap.new_datatable_db(p_dbname text, p_admin text) RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    admin_password text := datatable_roles.new_password();
BEGIN
    PERFORM tap.exec_in('postgres', format('CREATE ROLE %I LOGIN PASSWORD %L',
        p_admin, datatable_roles.scram_verifier(admin_password, 16)));
    PERFORM tap.exec_in('postgres', format('GRANT %I TO dtr_owner', p_admin));
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

-- Lets p_role read the orders of p_region, with a policy written like the
-- seed's: pg_has_role(current_user, '<role>', 'member').
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

-- The worker role gets the run-time calls (granted once, in the template).
SET ROLE dtr_owner;
DO $$ BEGIN PERFORM datatable_roles.grant_worker('dtr_worker'); END $$;
RESET ROLE;
