-- Servers (docs/servers.md, SPEC section 17): where a data table's database
-- lives. `local` is the metadata database's own cluster, reached as always;
-- every other server is reached over dblink as its manager login (NOSUPERUSER
-- CREATEROLE), which makes and changes the catalog roles and logins there.
-- Passwords cross as SCRAM verifiers computed here. A role statement that an
-- unreachable server could not run is queued (server_change) and retried, in
-- order, by the sweep and by the next resolve; meanwhile resolves for that
-- server's data tables refuse (55000, CONSTRAINT server_pending).

-- ========== the registry, and the sessions there ===========================

-- The server row, or P0002.
CREATE OR REPLACE FUNCTION datatable_roles.require_server(p_name text)
RETURNS datatable_roles.server
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    found_server datatable_roles.server;
BEGIN
    PERFORM datatable_roles.require(p_name, 'server');
    SELECT sv.* INTO found_server FROM datatable_roles.server AS sv WHERE sv.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'server % is not registered', quote_literal(left(p_name, 80))
            USING ERRCODE = 'no_data_found', HINT = 'Register it with register_datatable_server.';
    END IF;
    RETURN found_server;
END;
$$;

-- The connection string of a session on a server (local: conninfo_for).
-- Each value quoted as libpq does; the password goes to dblink_connect as an
-- argument, never into statement text. The sessions there show as
-- application datatable_roles in pg_stat_activity.
CREATE OR REPLACE FUNCTION datatable_roles.server_conninfo(
    p_server text, p_dbname text, p_login text, p_password text
)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN sv.host IS NULL
        THEN datatable_roles.conninfo_for(p_dbname, p_login, p_password)
        ELSE format('host=%s port=%s dbname=%s user=%s password=%s sslmode=%s connect_timeout=10'
            ' application_name=datatable_roles',
            datatable_roles.conninfo_value(sv.host),
            datatable_roles.conninfo_value(sv.port::text),
            datatable_roles.conninfo_value(p_dbname),
            datatable_roles.conninfo_value(p_login),
            datatable_roles.conninfo_value(p_password),
            datatable_roles.conninfo_value(sv.sslmode))
        END
    FROM datatable_roles.server AS sv
    WHERE sv.name = p_server
$$;

-- A login attempt on a server: NULL when p_login authenticates with
-- p_password and may connect to p_dbname there, else libpq's reason.
CREATE OR REPLACE FUNCTION datatable_roles.login_fails_on(
    p_server text, p_dbname text, p_login text, p_password text
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    why text;
BEGIN
    PERFORM datatable_roles.session_close('datatable_roles_try');
    PERFORM datatable_roles_dblink.dblink_connect('datatable_roles_try',
        datatable_roles.server_conninfo(p_server, p_dbname, p_login, p_password));
    PERFORM datatable_roles.session_close('datatable_roles_try');
    RETURN NULL;
EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection OR invalid_password
    OR invalid_authorization_specification THEN
    GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL;
    RETURN coalesce(nullif(btrim(why, E' \n'), ''), SQLERRM);
END;
$$;

-- A login name the package writes into statements it runs on another
-- server (the manager's, an admin login's): 1 to 63 bytes with no '$', so
-- that no name can end the $dtr$-quoted blocks those statements are (22023).
CREATE OR REPLACE FUNCTION datatable_roles.check_remote_login_name(p_login text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF octet_length(p_login) NOT BETWEEN 1 AND 63 OR strpos(p_login, '$') > 0 THEN
        RAISE EXCEPTION 'invalid login name %', quote_literal(left(p_login, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A login on another server is named with 1 to 63 bytes and no ''$''.';
    END IF;
END;
$$;

-- Before acting on a refusal in p_dbname on a server: the package itself
-- must still get in there (the link login here, the manager elsewhere),
-- else 08001 with libpq's reason and nothing changes (require_link_reaches).
CREATE OR REPLACE FUNCTION datatable_roles.require_reaches(p_server text, p_dbname text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    sv datatable_roles.server := datatable_roles.require_server(p_server);
    why text;
BEGIN
    IF sv.host IS NULL THEN
        PERFORM datatable_roles.require_link_reaches(p_dbname);
        RETURN;
    END IF;
    why := datatable_roles.login_fails_on(p_server, p_dbname, sv.manager_login, sv.manager_password);
    IF why IS NOT NULL THEN
        RAISE EXCEPTION 'database % on server % cannot be reached by the package now',
            quote_ident(p_dbname), p_server
            USING ERRCODE = 'sqlclient_unable_to_establish_sqlconnection', DETAIL = why,
                  HINT = 'Nothing was changed; try again when the database takes connections.';
    END IF;
END;
$$;

-- The startup options of the package's sessions on other servers: they
-- override what the login's own settings say (a job handed the admin login
-- may give it a search_path that finds its own functions first, or a tiny
-- statement_timeout), so every statement the package runs there resolves
-- names in pg_catalog first and runs to its end.
CREATE OR REPLACE FUNCTION datatable_roles.server_session_options()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT '-c search_path=pg_catalog,pg_temp -c statement_timeout=0'
        || ' -c default_transaction_read_only=off -c lock_timeout=0'
$$;

-- Opens the package's session on a server as p_login (the manager, or a
-- data table's admin login), in p_dbname, named p_name; returns the name. Its startup
-- options override the login's own settings (server_session_options); p_extra
-- adds to them. 08001 when unreachable.
CREATE OR REPLACE FUNCTION datatable_roles.server_session_open(
    p_server text, p_dbname text, p_login text, p_password text,
    p_name text DEFAULT 'datatable_roles_server', p_extra text DEFAULT ''
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.session_close(p_name);
    PERFORM datatable_roles_dblink.dblink_connect(p_name,
        datatable_roles.server_conninfo(p_server, p_dbname, p_login, p_password)
        || ' options=' || datatable_roles.conninfo_value(
            datatable_roles.server_session_options() || p_extra));
    RETURN p_name;
END;
$$;

-- The name of the manager's kept session on a server: the server's name and
-- its row's version (xmin), so that a session opened in this backend for a
-- registration that was rolled back is never taken for a later one of the
-- same name.
CREATE OR REPLACE FUNCTION datatable_roles.kept_session_name(p_server text)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT format('datatable_roles_manager %s %s', sv.name, sv.xmin)
    FROM datatable_roles.server AS sv
    WHERE sv.name = p_server
$$;

-- Runs p_sql on a server as its manager, in one transaction there (several
-- statements in one string are one implicit transaction), and returns its
-- one text value (p_value: a one-column query) or NULL. In the server's
-- maintenance database the session stays open in this backend for its
-- later uses, so that a first use there costs its statements, not a new
-- connection and its SCRAM exchange; the server ends it once idle for five
-- minutes (idle_session_timeout), and a kept session found gone (08) is
-- opened again, once. In another database the session lasts one call.
-- Only the owner's code reaches a kept session: dblink is the owner's alone
-- (a worker's session, where a resolve left one, cannot name it).
-- Errors are raised as they are (08001 unreachable).
CREATE OR REPLACE FUNCTION datatable_roles.on_manager_session(
    p_server text, p_sql text, p_dbname text, p_value boolean
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    sv datatable_roles.server := datatable_roles.require_server(p_server);
    kept boolean := p_dbname IS NULL OR p_dbname = sv.maintenance_db;
    session_name text := CASE WHEN kept THEN datatable_roles.kept_session_name(p_server)
        ELSE 'datatable_roles_server' END;
    reused boolean := kept AND coalesce(
        session_name = ANY(datatable_roles_dblink.dblink_get_connections()), false);
    result text;
BEGIN
    LOOP
        IF NOT reused THEN
            PERFORM datatable_roles.server_session_open(p_server, coalesce(p_dbname, sv.maintenance_db),
                sv.manager_login, sv.manager_password, session_name,
                CASE WHEN kept THEN ' -c idle_session_timeout=300000' ELSE '' END);
        END IF;
        BEGIN
            IF p_value THEN
                result := datatable_roles.session_value(session_name, p_sql);
            ELSE
                PERFORM datatable_roles.session_exec(session_name, p_sql);
            END IF;
            EXIT;
        EXCEPTION WHEN connection_exception THEN  -- (session_value/exec closed it)
            IF NOT reused THEN
                RAISE;
            END IF;
            reused := false;
        END;
    END LOOP;
    IF NOT kept THEN
        PERFORM datatable_roles.session_close(session_name);
    END IF;
    RETURN result;
END;
$$;

-- Runs p_statement on a server as its manager (on_manager_session).
CREATE OR REPLACE FUNCTION datatable_roles.exec_as_manager(
    p_server text, p_statement text, p_dbname text DEFAULT null
)
RETURNS void
LANGUAGE sql
AS $$
    SELECT datatable_roles.on_manager_session(p_server, p_statement, p_dbname, false);
$$;

-- The one text value p_query returns on a server, as its manager.
CREATE OR REPLACE FUNCTION datatable_roles.value_as_manager(
    p_server text, p_query text, p_dbname text DEFAULT null
)
RETURNS text
LANGUAGE sql
AS $$
    SELECT datatable_roles.on_manager_session(p_server, p_query, p_dbname, true)
$$;

-- ========== changes a server has not applied yet ===========================

-- Whether an error (its SQLSTATE) means the server could not be reached:
-- connection exceptions (class 08). Anything else is the statement's.
CREATE OR REPLACE FUNCTION datatable_roles.unreachable(p_sqlstate text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT starts_with(p_sqlstate, '08')
$$;

-- Runs one change on a server: as its manager (in p_dbname there, or its
-- maintenance database when NULL), or, p_as_admin, as the admin login of
-- the data table on p_dbname there (for what only the owner of the objects
-- may do: taking a dropped role's privileges off them).
CREATE OR REPLACE FUNCTION datatable_roles.exec_change(
    p_server text, p_dbname text, p_statement text, p_as_admin boolean
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    admin record;
BEGIN
    IF NOT p_as_admin THEN
        PERFORM datatable_roles.exec_as_manager(p_server, p_statement, p_dbname);
        RETURN;
    END IF;
    SELECT a.* INTO admin FROM datatable_roles.remote_admin_of(p_server, p_dbname) AS a;
    PERFORM datatable_roles.exec_as_login_on(p_server, p_dbname, admin.login, admin.password,
        p_statement);
END;
$$;

-- Runs a change on a server now (exec_change), or, when the server cannot
-- be reached or has changes still queued (order matters: a rename before
-- a retirement naming the new name), queues it. Queued statements are
-- idempotent (DO blocks that look before they act), so that one applied
-- twice (applied there, its local transaction rolled back) does no harm.
-- Returns whether it ran now.
CREATE OR REPLACE FUNCTION datatable_roles.run_or_queue_in(
    p_server text, p_dbname text, p_statement text, p_what text, p_as_admin boolean DEFAULT false
)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    why text;
BEGIN
    IF datatable_roles.previewing() THEN
        PERFORM datatable_roles.preview_note(jsonb_build_object('server', p_server, 'change', p_what));
        RETURN false;
    END IF;
    IF NOT EXISTS (SELECT FROM datatable_roles.server_change AS c WHERE c.server = p_server) THEN
        BEGIN
            PERFORM datatable_roles.exec_change(p_server, p_dbname, p_statement, p_as_admin);
            RETURN true;
        EXCEPTION WHEN OTHERS THEN
            IF NOT datatable_roles.unreachable(SQLSTATE) THEN
                RAISE;
            END IF;
            why := SQLERRM;
        END;
    END IF;
    INSERT INTO datatable_roles.server_change AS c (
        server, dbname, as_admin, statement, what, queued_at, last_error
    )
    VALUES (p_server, p_dbname, p_as_admin, p_statement, p_what,
        (SELECT datatable_roles.clock_now()), why);
    RAISE NOTICE 'server % could not be reached: % is pending there', p_server, p_what
        USING HINT = 'Resolves for its data tables refuse until it is applied; the sweep retries it.';
    RETURN false;
END;
$$;

-- run_or_queue_in the server's maintenance database, as the manager (role
-- statements).
CREATE OR REPLACE FUNCTION datatable_roles.run_or_queue(
    p_server text, p_statement text, p_what text
)
RETURNS boolean
LANGUAGE sql
AS $$
    SELECT datatable_roles.run_or_queue_in(p_server, null, p_statement, p_what)
$$;

-- Applies a server's queued changes, in order, each in its own transaction
-- there, and forgets each applied one; stops at the first that fails
-- (noting why). Returns how many are left. Under a lock of its own, so
-- that two callers do not apply the same change at once.
CREATE OR REPLACE FUNCTION datatable_roles.apply_server_changes(p_server text)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    change record;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('datatable_roles.server:' || p_server, 0));
    FOR change IN
        SELECT c.id, c.dbname, c.as_admin, c.statement FROM datatable_roles.server_change AS c
        WHERE c.server = p_server ORDER BY c.id
    LOOP
        BEGIN
            PERFORM datatable_roles.exec_change(p_server, change.dbname, change.statement,
                change.as_admin);
        EXCEPTION WHEN OTHERS THEN
            UPDATE datatable_roles.server_change AS c
            SET tries = c.tries + 1, last_error = SQLERRM
            WHERE c.id = change.id;
            EXIT;
        END;
        DELETE FROM datatable_roles.server_change AS c WHERE c.id = change.id;
    END LOOP;
    RETURN (SELECT count(*) FROM datatable_roles.server_change AS c WHERE c.server = p_server);
END;
$$;

-- A resolve for a data table on a server with changes still queued: tries
-- them once (the next use retries), and refuses when some are left: a
-- login there might still hold a role the catalog took away.
CREATE OR REPLACE FUNCTION datatable_roles.refuse_while_pending(p_server text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    first_change record;
BEGIN
    IF datatable_roles.apply_server_changes(p_server) = 0 THEN
        RETURN;
    END IF;
    SELECT c.what, c.last_error INTO first_change FROM datatable_roles.server_change AS c
    WHERE c.server = p_server ORDER BY c.id LIMIT 1;
    RAISE EXCEPTION 'server % has changes not applied yet (%): its data tables are not served until they are',
        p_server, first_change.what
        USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'server_pending',
              DETAIL = coalesce(first_change.last_error, ''),
              HINT = format('Make server %s reachable; the sweep (or the next resolve) applies them.', p_server);
END;
$$;

-- ========== the statements run there =======================================

-- The role statements run on other servers, each idempotent: it looks at
-- the server's catalog first, so that running it again changes nothing.
-- Names are catalog role names or wm_set_ logins (ASCII letters, digits,
-- '_' and '-'), quoted with %I/%L inside a $dtr$ body they cannot close.

-- Retires a login there: no password, NOLOGIN, its sessions ended.
CREATE OR REPLACE FUNCTION datatable_roles.retire_statement(p_login text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format($s$DO $dtr$
BEGIN
    IF to_regrole(%1$L) IS NOT NULL THEN
        ALTER ROLE %1$I WITH NOLOGIN PASSWORD NULL;
        PERFORM pg_terminate_backend(a.pid) FROM pg_stat_activity AS a
        WHERE a.usename = %1$L AND a.pid <> pg_backend_pid();
    END IF;
END
$dtr$
$s$, p_login)
$$;

-- Renames a catalog role there (nothing when already renamed).
CREATE OR REPLACE FUNCTION datatable_roles.rename_statement(p_old text, p_new text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format($s$DO $dtr$
BEGIN
    IF to_regrole(%1$L) IS NOT NULL AND to_regrole(%2$L) IS NULL THEN
        ALTER ROLE %1$I RENAME TO %2$I;
    ELSIF to_regrole(%2$L) IS NULL THEN
        RAISE EXCEPTION 'role %% is not on the server', %1$L;
    END IF;
END
$dtr$
$s$, p_old, p_new)
$$;

-- ========== catalog roles and logins there =================================

-- The marker a role made on a server by this instance carries (its comment
-- there), so that one made before a local rollback is known again; role 0
-- is the instance's login group there.
CREATE OR REPLACE FUNCTION datatable_roles.server_role_marker(p_role_id bigint)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT format('datatable_roles %s role %s', s.instance_id, p_role_id)
    FROM datatable_roles.settings AS s
$$;

-- Makes a catalog role on a server when a data table there first maps it.
-- A role of that name there that this instance did not make (no marker) is
-- refused (42710), as create_datatable_role refuses one on this cluster.
-- Unreachable: 08001, and nothing changes (the map edit is the operator's,
-- and can be tried again).
CREATE OR REPLACE FUNCTION datatable_roles.ensure_role_on_server(p_server text, p_role_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    role_name text := (SELECT r.name FROM datatable_roles.catalog_role AS r WHERE r.id = p_role_id);
BEGIN
    IF p_server = 'local' OR EXISTS (
        SELECT FROM datatable_roles.server_role AS sr
        WHERE sr.server = p_server AND sr.role_id = p_role_id
    ) OR datatable_roles.previewing() THEN
        RETURN;
    END IF;
    PERFORM datatable_roles.exec_as_manager(p_server, format($s$DO $dtr$
BEGIN
    IF to_regrole(%1$L) IS NULL THEN
        CREATE ROLE %1$I WITH NOLOGIN INHERIT;
        COMMENT ON ROLE %1$I IS %2$L;
    ELSIF shobj_description(to_regrole(%1$L), 'pg_authid') IS DISTINCT FROM %2$L THEN
        RAISE EXCEPTION 'a role named %% already exists on the server', %1$L
            USING ERRCODE = 'duplicate_object';
    END IF;
END
$dtr$
$s$, role_name, datatable_roles.server_role_marker(p_role_id)));
    INSERT INTO datatable_roles.server_role (server, role_id) VALUES (p_server, p_role_id);
END;
$$;

-- Makes or takes back a login on a server (make_login's remote half), in
-- one transaction there, as the manager: created with exactly its roles,
-- the instance's login group (made there first, for pg_hba.conf rules as on
-- local; from 16 on without INHERIT or SET) and CONNECT on its one database
-- (the manager holds CONNECT there WITH GRANT OPTION from the admin login,
-- register_datatable); when it exists, given the new verifier, its
-- attributes, settings (in every database) and memberships made exact again.
-- Only attributes to change are named (from 16 on, naming one the manager
-- lacks is refused). Last, its memberships are checked to be exactly those:
-- one the manager could not take back (granted by another role) fails the
-- whole (42501), so no login there ever holds more than the catalog says.
-- A login group of that name that this instance did not make is refused
-- (42710): on 15 its privileges would pass to every login. A new login
-- whose group is there takes three plain statements after one look (about
-- 4 ms less than the block on a new backend, docs/performance.md).
CREATE OR REPLACE FUNCTION datatable_roles.make_login_on_server(
    p_server text, p_login text, p_dbname text, p_names text[], p_verifier text
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    login_group text := datatable_roles.login_group();
    marker text := datatable_roles.server_role_marker(0);
    -- One look first, in the same session: the version, whether the group
    -- there is this instance's, whether the login is new.
    probe text := datatable_roles.value_as_manager(p_server, format(
        'SELECT concat_ws('' '', current_setting(''server_version_num'')::integer >= 160000,'
        ' shobj_description(to_regrole(%L), ''pg_authid'') IS NOT DISTINCT FROM %L,'
        ' to_regrole(%L) IS NULL)', login_group, marker, p_login));
BEGIN
    IF probe IN ('t t t', 'f t t') THEN  -- (booleans print as t and f)
        -- First use, the common case: plain statements in one transaction
        -- there (a PL/pgSQL block costs its compilation in a new backend).
        PERFORM datatable_roles.exec_as_manager(p_server, format(
            'CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION'
            ' PASSWORD %L IN ROLE %s; GRANT %I TO %I%s; GRANT CONNECT ON DATABASE %I TO %I',
            p_login, p_verifier,
            (SELECT string_agg(quote_ident(n), ', ') FROM unnest(p_names) AS n),
            login_group, p_login,
            CASE WHEN starts_with(probe, 't') THEN ' WITH INHERIT FALSE, SET FALSE' ELSE '' END,
            p_dbname, p_login));
        RETURN;
    END IF;
    -- Taken back, or the group to make (or refuse): the whole block.
    PERFORM datatable_roles.exec_as_manager(p_server, format($s$DO $dtr$
DECLARE
    taken record;
    held text;
    db text;
BEGIN
    IF to_regrole(%6$L) IS NULL THEN
        CREATE ROLE %6$I WITH NOLOGIN NOINHERIT;
        COMMENT ON ROLE %6$I IS %7$L;
    ELSIF shobj_description(to_regrole(%6$L), 'pg_authid') IS DISTINCT FROM %7$L THEN
        RAISE EXCEPTION 'a role named %% already exists on the server', %6$L
            USING ERRCODE = 'duplicate_object';
    END IF;
    SELECT pr.* INTO taken FROM pg_roles AS pr WHERE pr.rolname = %1$L;
    IF NOT FOUND THEN
        CREATE ROLE %1$I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION
            PASSWORD %3$L IN ROLE %4$s;
    ELSE
        EXECUTE format('ALTER ROLE %%I WITH LOGIN INHERIT%%s%%s%%s%%s PASSWORD %%L', %1$L,
            CASE WHEN taken.rolcreatedb THEN ' NOCREATEDB' ELSE '' END,
            CASE WHEN taken.rolcreaterole THEN ' NOCREATEROLE' ELSE '' END,
            CASE WHEN taken.rolconnlimit <> -1 THEN ' CONNECTION LIMIT -1' ELSE '' END,
            CASE WHEN coalesce(taken.rolvaliduntil, 'infinity') <> 'infinity'
                THEN ' VALID UNTIL ''infinity''' ELSE '' END,
            %3$L);
        ALTER ROLE %1$I RESET ALL;
        FOR db IN
            SELECT pd.datname FROM pg_db_role_setting AS rs
            JOIN pg_database AS pd ON pd.oid = rs.setdatabase
            WHERE rs.setrole = taken.oid
        LOOP
            EXECUTE format('ALTER ROLE %%I IN DATABASE %%I RESET ALL', %1$L, db);
        END LOOP;
        FOR held IN
            SELECT g.rolname FROM pg_auth_members AS m JOIN pg_roles AS g ON g.oid = m.roleid
            WHERE m.member = taken.oid AND g.rolname <> ALL(%5$L::text[] || %6$L::text)
        LOOP
            EXECUTE format('REVOKE %%I FROM %%I', held, %1$L);
        END LOOP;
        GRANT %4$s TO %1$I;
    END IF;
    EXECUTE format('GRANT %%I TO %%I%%s', %6$L, %1$L,
        CASE WHEN current_setting('server_version_num')::integer >= 160000
            THEN ' WITH INHERIT FALSE, SET FALSE' ELSE '' END);
    GRANT CONNECT ON DATABASE %2$I TO %1$I;
    IF EXISTS (
        SELECT FROM pg_auth_members AS m JOIN pg_roles AS g ON g.oid = m.roleid
        WHERE m.member = to_regrole(%1$L) AND g.rolname <> ALL(%5$L::text[] || %6$L::text)
    ) THEN
        RAISE EXCEPTION 'login %% holds a role the manager cannot take back', %1$L
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$dtr$
$s$, p_login, p_dbname, p_verifier,
        (SELECT string_agg(quote_ident(n), ', ') FROM unnest(p_names) AS n), p_names,
        login_group, marker));
END;
$$;

-- The instance's logins on a server that someone changed there, by name:
-- a setting (in any database: a script may give its own login one), or an
-- attribute a made login does not have. What login_intact and
-- login_settings_elsewhere find here, read there by the manager in one
-- statement (the sweep's far_logins phase; resolves make no remote call).
CREATE OR REPLACE FUNCTION datatable_roles.altered_logins_on_server(p_server text)
RETURNS text[]
LANGUAGE sql
AS $$
    SELECT ARRAY(SELECT json_array_elements_text(datatable_roles.value_as_manager(p_server, format(
        'SELECT coalesce(json_agg(pr.rolname::text ORDER BY pr.rolname), ''[]'') FROM pg_roles AS pr'
        ' JOIN pg_auth_members AS m ON m.member = pr.oid AND m.roleid = to_regrole(%L)'
        ' WHERE NOT (pr.rolcanlogin AND pr.rolinherit) OR pr.rolsuper OR pr.rolcreatedb'
        ' OR pr.rolcreaterole OR pr.rolreplication OR pr.rolbypassrls OR pr.rolconnlimit <> -1'
        ' OR coalesce(pr.rolvaliduntil, ''infinity'') <> ''infinity'''
        ' OR EXISTS (SELECT FROM pg_db_role_setting AS rs WHERE rs.setrole = pr.oid)',
        datatable_roles.login_group()))::json))
$$;

-- ========== what is left behind: moves, renames, drops =====================

-- What a victim (a set login or a catalog role made there) owns in a data
-- table database on another server passes to its admin login, inert first,
-- as on local (75_quarantine.sql): one block, run there by the admin login
-- while the manager has made it a member of the victim (REASSIGN OWNED needs
-- the privileges of both; on local the link login is that member). It then
-- drops what is left of the victim there (its privileges, its policy
-- mentions). Nothing when the victim is gone, or the admin login holds it no
-- more (run again after the membership was taken back): idempotent. The
-- names reach the quarantine script as transaction-local settings, as on
-- local; the script's text is a literal of the block.
CREATE OR REPLACE FUNCTION datatable_roles.move_statement(p_victim text, p_heir text)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT format($s$DO $dtr$
BEGIN
    IF pg_catalog.pg_has_role(current_user, coalesce(pg_catalog.to_regrole(%1$L), 0), 'USAGE') THEN
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM pg_catalog.set_config('datatable_roles.quarantine_victim', %1$L, true);
        PERFORM pg_catalog.set_config('datatable_roles.quarantine_heir', %2$L, true);
        EXECUTE %3$L;
        REASSIGN OWNED BY %1$I TO %2$I;
        DROP OWNED BY %1$I;
    END IF;
END
$dtr$
$s$, p_victim, p_heir, rtrim(datatable_roles.remote_script_body('quarantine'), E' \n;'))
$$;

-- The manager's statements around what the admin login runs for others
-- there (a move, the grants editor's apply): the admin login made a member
-- of each of p_roles that exists there, or those memberships taken back.
CREATE OR REPLACE FUNCTION datatable_roles.membership_statement(
    p_roles text[], p_admin text, p_grant boolean
)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format($s$DO $dtr$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY %L::text[] LOOP
        IF to_regrole(r) IS NOT NULL THEN
            EXECUTE format(%L, r, %L);
        END IF;
    END LOOP;
END
$dtr$
$s$, p_roles, CASE WHEN p_grant THEN 'GRANT %I TO %I' ELSE 'REVOKE %I FROM %I' END, p_admin)
$$;

-- The admin login of the data table on p_dbname there, with its password.
CREATE OR REPLACE FUNCTION datatable_roles.remote_admin_of(p_server text, p_dbname text)
RETURNS TABLE (login text, password text)
LANGUAGE sql STABLE
AS $$
    SELECT d.admin_login, d.admin_password FROM datatable_roles.datatable AS d
    WHERE d.server = p_server AND d.dbname = p_dbname AND d.governing_id IS NULL
    ORDER BY d.id LIMIT 1
$$;

-- The sweep's drop of a retired login on another server (sweep_drop's
-- remote half): what it owns in its database there passes to the admin
-- login, inert (move_statement); CONNECT is taken back and the login
-- dropped there; then its row. A failure (the server away, an object the
-- quarantine refuses) is 'unfinished', with the reason, and the admin
-- login's membership in it is taken back; the login stays NOLOGIN without a
-- password, and the next sweep tries again.
CREATE OR REPLACE FUNCTION datatable_roles.sweep_drop_on_server(
    p_server text, p_login text, p_dbname text, OUT outcome text, OUT reason text
)
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    admin record;
BEGIN
    SELECT a.* INTO admin FROM datatable_roles.remote_admin_of(p_server, p_dbname) AS a;
    BEGIN
        PERFORM datatable_roles.exec_as_manager(p_server,
            datatable_roles.membership_statement(ARRAY[p_login], admin.login, true));
        PERFORM datatable_roles.exec_as_login_on(p_server, p_dbname, admin.login, admin.password,
            datatable_roles.move_statement(p_login, admin.login));
        PERFORM datatable_roles.fault_point('sweep:after_move');
        PERFORM datatable_roles.exec_as_manager(p_server, format($s$DO $dtr$
BEGIN
    IF to_regrole(%1$L) IS NOT NULL THEN
        REVOKE CONNECT ON DATABASE %2$I FROM %1$I;
        DROP ROLE %1$I;
    END IF;
END
$dtr$
$s$, p_login, p_dbname));
    EXCEPTION WHEN OTHERS THEN
        outcome := 'unfinished';
        reason := format('%s (server %s): %s', p_dbname, p_server, SQLERRM);
        BEGIN
            PERFORM datatable_roles.exec_as_manager(p_server,
                datatable_roles.membership_statement(ARRAY[p_login], admin.login, false));
        EXCEPTION WHEN OTHERS THEN
            NULL;  -- unreachable too: the next sweep's grant and revoke come first
        END;
        RETURN;
    END;
    DELETE FROM datatable_roles.datatable_role_set AS s WHERE s.login = p_login;
    outcome := 'dropped';
END;
$$;

-- Renames a catalog role on every other server that has it (now, or
-- queued: until then resolves there refuse).
CREATE OR REPLACE FUNCTION datatable_roles.rename_role_on_servers(
    p_role_id bigint, p_old text, p_new text
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.run_or_queue(sr.server, datatable_roles.rename_statement(p_old, p_new),
        format('rename of role %s to %s', p_old, p_new))
    FROM datatable_roles.server_role AS sr WHERE sr.role_id = p_role_id
    ORDER BY sr.server;
END;
$$;

-- Drops a catalog role on every other server that has it, after its logins
-- there were retired: in each data table database there, what it owns
-- passes to the admin login, inert, and its privileges and policy mentions
-- go (move_statement, run by the admin login, made a member of the role by
-- the manager for the moment); then the role. Now, or queued in that order
-- when the server cannot be reached (resolves there refuse until applied).
CREATE OR REPLACE FUNCTION datatable_roles.drop_role_on_servers(p_role_id bigint, p_name text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    target record;
BEGIN
    FOR target IN
        SELECT sr.server, d.dbname, d.admin_login
        FROM datatable_roles.server_role AS sr
        JOIN datatable_roles.datatable AS d
            ON d.server = sr.server AND d.dbname IS NOT NULL AND d.governing_id IS NULL
        WHERE sr.role_id = p_role_id
        ORDER BY sr.server, d.dbname, d.id
    LOOP
        PERFORM datatable_roles.run_or_queue(target.server,
            datatable_roles.membership_statement(ARRAY[p_name], target.admin_login, true),
            format('membership of %s in role %s for its drop', target.admin_login, p_name));
        PERFORM datatable_roles.run_or_queue_in(target.server, target.dbname,
            datatable_roles.move_statement(p_name, target.admin_login),
            format('objects and privileges of role %s in database %s', p_name, target.dbname),
            true);
        PERFORM datatable_roles.run_or_queue(target.server,
            datatable_roles.membership_statement(ARRAY[p_name], target.admin_login, false),
            format('end of membership of %s in role %s', target.admin_login, p_name));
    END LOOP;
    PERFORM datatable_roles.run_or_queue(sr.server, format(
        'DO $dtr$ BEGIN IF to_regrole(%L) IS NOT NULL THEN DROP ROLE %I; END IF; END $dtr$',
        p_name, p_name), format('drop of role %s', p_name))
    FROM datatable_roles.server_role AS sr WHERE sr.role_id = p_role_id
    ORDER BY sr.server;
END;
$$;

-- ========== data tables there: the admin login =============================

-- Runs p_statement in p_dbname on a server as p_login, in a session of its
-- own, closed after (a manager's or an admin login's).
CREATE OR REPLACE FUNCTION datatable_roles.exec_as_login_on(
    p_server text, p_dbname text, p_login text, p_password text, p_statement text
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.session_exec(
        datatable_roles.server_session_open(p_server, p_dbname, p_login, p_password), p_statement);
    PERFORM datatable_roles.session_close('datatable_roles_server');
END;
$$;

-- The admin login of a data table on another server (register_datatable):
-- its password is tried there (28P01), then, in its own session, it must
-- own the database and hold no cluster-wide power (SUPERUSER, CREATEROLE,
-- CREATEDB, REPLICATION, BYPASSRLS) nor reach the manager (42501): it is
-- handed to jobs. It then takes CONNECT from PUBLIC and gives the manager
-- CONNECT WITH GRANT OPTION, which the manager passes to each login.
CREATE OR REPLACE FUNCTION datatable_roles.take_remote_admin_login(
    p_server text, p_dbname text, p_admin_login text, p_password text
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    sv datatable_roles.server := datatable_roles.require_server(p_server);
    failure text := datatable_roles.login_fails_on(p_server, p_dbname, p_admin_login, p_password);
BEGIN
    IF failure IS NOT NULL THEN
        RAISE EXCEPTION 'admin login % could not log in to database % on server % with the password given',
            quote_literal(p_admin_login), quote_literal(p_dbname), p_server
            USING ERRCODE = 'invalid_password', DETAIL = failure,
                  HINT = 'Give the admin login''s current password; the database must exist there and take its connections.';
    END IF;
    PERFORM datatable_roles.exec_as_login_on(p_server, p_dbname, p_admin_login, p_password,
        format($s$DO $dtr$
DECLARE
    problem text;
BEGIN
    IF (SELECT pd.datdba FROM pg_database AS pd WHERE pd.datname = current_database())
        <> (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = current_user) THEN
        RAISE EXCEPTION 'database %% is not owned by admin login %%', current_database(), current_user
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT array_to_string(ARRAY(
        SELECT a FROM unnest(array[
            CASE WHEN pr.rolsuper THEN 'SUPERUSER' END,
            CASE WHEN pr.rolcreaterole THEN 'CREATEROLE' END,
            CASE WHEN pr.rolcreatedb THEN 'CREATEDB' END,
            CASE WHEN pr.rolreplication THEN 'REPLICATION' END,
            CASE WHEN pr.rolbypassrls THEN 'BYPASSRLS' END,
            CASE WHEN pg_has_role(current_user, %1$L, 'MEMBER') THEN 'membership in the manager' END
        ]) AS a WHERE a IS NOT NULL), ', ')
    INTO problem FROM pg_roles AS pr WHERE pr.rolname = current_user;
    IF problem <> '' THEN
        RAISE EXCEPTION 'login %% may not be the admin login of a data table: it has %%', current_user, problem
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Use a plain login (LOGIN and a password, nothing else) that owns only the data table''s database.';
    END IF;
    REVOKE CONNECT ON DATABASE %2$I FROM PUBLIC;
    GRANT CONNECT ON DATABASE %2$I TO %1$I WITH GRANT OPTION;
END
$dtr$
$s$, sv.manager_login, p_dbname));
END;
$$;
