-- The role catalog: each catalog role is a real PostgreSQL role, named like
-- the role, that holds privileges in data table databases. It is NOLOGIN and
-- has CONNECT nowhere: jobs log in as scoped logins that hold it
-- (50_set_logins.sql).

-- The catalog row of a role, or P0002.
CREATE OR REPLACE FUNCTION datatable_roles.require_role(p_name text)
RETURNS datatable_roles.catalog_role
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    found_role datatable_roles.catalog_role;
BEGIN
    PERFORM datatable_roles.require(p_name, 'role');
    SELECT r.* INTO found_role FROM datatable_roles.catalog_role AS r WHERE r.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'data table role % does not exist', quote_literal(left(p_name, 80))
            USING ERRCODE = 'no_data_found', HINT = coalesce('Did you mean ' || quote_literal(
                datatable_roles.nearest_name(p_name, ARRAY(
                    SELECT r.name FROM datatable_roles.catalog_role AS r ORDER BY r.name))) || '? ', '')
                || 'Create it with create_datatable_role.';
    END IF;
    RETURN found_role;
END;
$$;

-- A preview (preview_datatable_role_change, api/98_owner.sql) runs the
-- real change in a subtransaction it always rolls back. Everything the change
-- does is undone with it but ending sessions, which is not transactional: so
-- while previewing, end_sessions_of (the one place that ends sessions) only
-- notes the sessions it would end, and retirement notes the logins it
-- retires. The switch is transaction-local and holds this transaction's id,
-- so a setting left anywhere else never matches.
CREATE OR REPLACE FUNCTION datatable_roles.previewing()
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(current_setting('datatable_roles.preview', true), '') <> ''
        AND current_setting('datatable_roles.preview', true)
        = pg_current_xact_id_if_assigned()::text
$$;

-- Appends a note to the preview's list (a transaction-local setting that the
-- preview reads before it rolls back).
CREATE OR REPLACE FUNCTION datatable_roles.preview_note(p_note jsonb)
RETURNS void
LANGUAGE sql
AS $$
    SELECT set_config('datatable_roles.preview_notes',
        (coalesce(nullif(current_setting('datatable_roles.preview_notes', true), ''), '[]')::jsonb
            || jsonb_build_array(p_note))::text, true)
$$;

-- Ends every session of a login (NOLOGIN and DROP ROLE disconnect nobody).
-- A loop, not one query: the terminate call must only ever see the pids
-- already chosen. While previewing, the sessions are only noted. Sessions
-- are read by the superuser step's datatable_roles_guard.sessions_of when
-- it is there: as the owner, PostgreSQL checks its right to see each
-- session against memberships it computes again after every role change,
-- milliseconds a call at 10,000 roles on 16+ (docs/performance.md).
CREATE OR REPLACE FUNCTION datatable_roles.end_sessions_of(p_login text)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    preview boolean := datatable_roles.previewing();
    would_end integer [] := '{}'::integer [];
    pids integer [];
    session_pid integer;
    n integer := 0;
BEGIN
    IF to_regprocedure('datatable_roles_guard.sessions_of(text)') IS NOT NULL THEN
        pids := ARRAY(SELECT p.pid FROM datatable_roles_guard.sessions_of(p_login) AS p (pid));
    ELSE
        pids := ARRAY(SELECT a.pid FROM pg_stat_get_activity(NULL) AS a
            WHERE a.usesysid = to_regrole(quote_ident(p_login)));
    END IF;
    FOREACH session_pid IN ARRAY pids LOOP
        CONTINUE WHEN session_pid = pg_backend_pid();
        IF preview THEN
            would_end := would_end || session_pid;
            n := n + 1;
        ELSIF pg_terminate_backend(session_pid) THEN
            n := n + 1;
        END IF;
    END LOOP;
    IF preview THEN
        PERFORM datatable_roles.preview_note(jsonb_build_object(
            'sessions_of', p_login, 'pids', to_jsonb(would_end)));
    END IF;
    RETURN n;
END;
$$;

-- Retires every login holding the role (on p_dbname of p_server only, when given): its
-- row loses the password and the login loses LOGIN in the same transaction,
-- then its sessions end. The next resolve of such a set, if the role is
-- usable there again, takes the login back with a new password. Returns
-- how many logins were retired (had a password or LOGIN).
--
-- Locks, in the order every path takes them (catalog role row, then the
-- per-login advisory lock, then the set row): the catalog row first, so that
-- a resolve making or taking back a login of a set holding this role (it
-- holds the role's row FOR SHARE) finishes first and its login is seen and
-- retired here, not missed; then each login's lock, so that no resolve is
-- re-keying it (concurrent ALTER ROLE) while it is retired. Rows whose
-- password is already empty are looked at too: such a login may have been
-- given LOGIN again by a resolve that committed meanwhile.
CREATE OR REPLACE FUNCTION datatable_roles.retire_logins_holding(
    p_role_id bigint, p_dbname text, p_server text DEFAULT 'local'
)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    retired text;
    on_server text;
    was_live boolean;
    n integer := 0;
BEGIN
    PERFORM FROM datatable_roles.catalog_role AS r WHERE r.id = p_role_id FOR UPDATE;
    FOR retired, on_server IN
        SELECT s.login, s.server FROM datatable_roles.datatable_role_set AS s
        WHERE s.role_ids @> array[p_role_id]
            AND (p_dbname IS NULL OR s.dbname IS NOT DISTINCT FROM p_dbname AND s.server = p_server)
        ORDER BY s.login
    LOOP
        PERFORM datatable_roles.lock_set_login(retired);
        UPDATE datatable_roles.datatable_role_set AS s SET password = ''
        WHERE s.login = retired AND s.password <> '';
        was_live := FOUND;
        PERFORM datatable_roles.fault_point('retire:after_row');
        IF on_server <> 'local' THEN
            -- Another server: retired there now (its sessions ended there too),
            -- or queued, and until it is applied no resolve serves that server
            -- (docs/servers.md).
            PERFORM datatable_roles.run_or_queue(on_server,
                datatable_roles.retire_statement(retired), format('retirement of login %s', retired));
        ELSIF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = retired AND pr.rolcanlogin) THEN
            PERFORM datatable_roles.disable_login(retired);
            was_live := true;
        END IF;
        IF datatable_roles.previewing() THEN
            PERFORM datatable_roles.preview_note(jsonb_build_object(
                'retires', retired, 'live', was_live));
        END IF;
        IF on_server = 'local' THEN
            PERFORM datatable_roles.end_sessions_of(retired);
        END IF;
        -- Until this transaction commits the login can still log in; whoever
        -- does so now is ended by the next sweep (end_stray_sessions).
        PERFORM datatable_roles.fault_point('retire:after_end_sessions');
        IF was_live THEN
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END;
$$;
