-- Sessions in another database of the cluster (docs/trust.md): every dblink
-- connection the package opens, as the link login, an admin login or a set
-- login, is opened, used and closed here. The connection string (with the
-- password) goes to dblink_connect as an argument, never into statement text.

-- Closes the named session if it is open (a no-op otherwise).
CREATE OR REPLACE FUNCTION datatable_roles.session_close(p_name text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF p_name = ANY(datatable_roles_dblink.dblink_get_connections()) THEN
        PERFORM datatable_roles_dblink.dblink_disconnect(p_name);
    END IF;
END;
$$;

-- A cancel (statement_timeout) here does not stop the statement the session
-- runs in the other database: PostgreSQL 17 and later stop waiting for it,
-- and once its lock wait ends it would commit what the local transaction rolls
-- back (a sweep's move, say). So the cancel is sent on to it, then the session
-- closed, before the cancel is raised again.
CREATE OR REPLACE FUNCTION datatable_roles.session_cancel(p_name text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF p_name = ANY(datatable_roles_dblink.dblink_get_connections()) THEN
        PERFORM datatable_roles_dblink.dblink_cancel_query(p_name);
    END IF;
    PERFORM datatable_roles.session_close(p_name);
END;
$$;

-- Opens the named session to p_dbname as p_login (conninfo_for: settings.link_host,
-- this server's port, each value quoted as libpq does), with p_options as the
-- session's `options` (e.g. '-c role=none'); returns the name. A cancel
-- (statement_timeout) is not caught by the callers: it can leave the named
-- session open, and the next open would fail with "duplicate connection name",
-- so such a leftover is closed first. A failure to connect is dblink's, as is:
-- 08001 with libpq's reason (never the password) in the DETAIL.
CREATE OR REPLACE FUNCTION datatable_roles.session_open(
    p_name text, p_dbname text, p_login text, p_password text, p_options text DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.session_close(p_name);
    PERFORM datatable_roles_dblink.dblink_connect(p_name,
        datatable_roles.conninfo_for(p_dbname, p_login, p_password)
        || coalesce(' options=' || datatable_roles.conninfo_value(p_options), ''));
    RETURN p_name;
END;
$$;

-- Runs p_sql in the named session (its own transaction there, or a part of
-- one the caller began with BEGIN). On any error the session is closed (which
-- rolls back whatever of it ran there) and the error raised again as is.
CREATE OR REPLACE FUNCTION datatable_roles.session_exec(p_name text, p_sql text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles_dblink.dblink_exec(p_name, p_sql);
EXCEPTION
    WHEN query_canceled THEN
        PERFORM datatable_roles.session_cancel(p_name);
        RAISE;
    WHEN OTHERS THEN
        PERFORM datatable_roles.session_close(p_name);
        RAISE;
END;
$$;

-- The one text value p_sql returns in the named session (a one-column query;
-- NULL when it returns no row). On any error the session is closed, as above.
CREATE OR REPLACE FUNCTION datatable_roles.session_value(p_name text, p_sql text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    result text;
BEGIN
    SELECT v.value INTO result
    FROM datatable_roles_dblink.dblink(p_name, p_sql) AS v (value text);
    RETURN result;
EXCEPTION
    WHEN query_canceled THEN
        PERFORM datatable_roles.session_cancel(p_name);
        RAISE;
    WHEN OTHERS THEN
        PERFORM datatable_roles.session_close(p_name);
        RAISE;
END;
$$;

-- The text of a script that runs in another database
-- (sql/functions/remote/scripts/<name>.sql, stored by the post-apply hook).
-- 55000 when it is not stored (run migrate).
CREATE OR REPLACE FUNCTION datatable_roles.remote_script_body(p_name text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    script text := (SELECT s.body FROM datatable_roles.remote_script AS s WHERE s.name = p_name);
BEGIN
    IF script IS NULL THEN
        RAISE EXCEPTION 'the remote script % is not installed', quote_literal(p_name)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run datatable-roles migrate: its post-apply hook stores the scripts of sql/functions/remote/scripts.';
    END IF;
    RETURN script;
END;
$$;

-- Whether a login attempt's reason (login_fails) is a wrong password, as the
-- server words it: any other refusal (pg_hba.conf, NOLOGIN, a full server)
-- is not taken as a password someone changed. A server whose lc_messages
-- is not English words it otherwise: then no refusal counts as a password.
CREATE OR REPLACE FUNCTION datatable_roles.wrong_password(p_why text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT coalesce(p_why ~ 'password authentication failed', false)
$$;

-- A login attempt: NULL when p_login authenticates with p_password and may
-- connect to p_dbname, else libpq's reason (which never holds the password).
-- On this cluster; login_fails_on (04_servers.sql) on any server.
CREATE OR REPLACE FUNCTION datatable_roles.login_fails(
    p_dbname text, p_login text, p_password text
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    RETURN datatable_roles.login_fails_on('local', p_dbname, p_login, p_password);
END;
$$;
