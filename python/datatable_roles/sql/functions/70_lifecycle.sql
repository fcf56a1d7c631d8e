-- Set-login lifecycle (SPEC section 6): the link login's sessions in each
-- data table database, moving what a login owns to the admin login, the
-- 30-day sweep, stray sessions, and dropping catalog roles.

-- The link login of this instance: sessions the package opens in data table
-- databases log in as it (exec_in_database). It is a member of every catalog
-- role and every registered admin login, and of a set login while the sweep
-- moves what that login owns; it is not a member of the package owner.
CREATE OR REPLACE FUNCTION datatable_roles.link_login()
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT c.login FROM datatable_roles.link_credential AS c
$$;

-- Whether the link login holds p_role's privileges through a grant of its
-- own: a membership row that inherits (16 records that per grant; on 15 the
-- link login's INHERIT attribute decides, and it has it). Read from the row,
-- not with pg_has_role(link, ...): that computes the link login's whole
-- membership list (every catalog role), in time quadratic in its length,
-- whenever the session last asked about another role.
CREATE OR REPLACE FUNCTION datatable_roles.link_holds(p_role text)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT EXISTS (
        SELECT FROM pg_catalog.pg_auth_members AS m
        WHERE m.roleid = (SELECT pr.oid FROM pg_catalog.pg_roles AS pr WHERE pr.rolname = p_role)
            AND m.member = (
                SELECT pr.oid FROM pg_catalog.pg_roles AS pr
                WHERE pr.rolname = datatable_roles.link_login()
            )
            AND coalesce((to_jsonb(m) ->> 'inherit_option')::boolean, true)
    )
$$;

-- Runs statements in another database of the cluster as the link login, in
-- a session of their own (committed there, whatever happens here).
CREATE OR REPLACE FUNCTION datatable_roles.exec_in_database(p_dbname text, p_sql text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    link datatable_roles.link_credential;
    conninfo text;
BEGIN
    SELECT c.* INTO link FROM datatable_roles.link_credential AS c;
    conninfo := format('host=%s port=%s dbname=%s user=%s password=%s',
        quote_literal((SELECT s.link_host FROM datatable_roles.settings AS s)),
        quote_literal(current_setting('port')), quote_literal(p_dbname),
        quote_literal(link.login), quote_literal(link.password));
    -- A cancel (statement_timeout) is not caught below: it can leave the named
    -- connection open in this session, and every later move here would fail
    -- with "duplicate connection name". Close such a leftover first.
    IF 'datatable_roles_link' = ANY(datatable_roles_dblink.dblink_get_connections()) THEN
        PERFORM datatable_roles_dblink.dblink_disconnect('datatable_roles_link');
    END IF;
    PERFORM datatable_roles_dblink.dblink_connect('datatable_roles_link', conninfo);
    BEGIN
        PERFORM datatable_roles_dblink.dblink_exec('datatable_roles_link', p_sql);
    EXCEPTION WHEN OTHERS THEN
        PERFORM datatable_roles_dblink.dblink_disconnect('datatable_roles_link');
        RAISE;
    END;
    PERFORM datatable_roles_dblink.dblink_disconnect('datatable_roles_link');
END;
$$;

-- The databases where p_login owns or holds something, each with the admin
-- login of its data table (NULL when it is not a data table database).
CREATE OR REPLACE FUNCTION datatable_roles.databases_holding(p_login text)
RETURNS TABLE (datname text, admin_login text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
    SELECT pd.datname::text, (
        SELECT d.admin_login FROM datatable_roles.datatable AS d
        WHERE d.dbname = pd.datname ORDER BY d.id LIMIT 1
    )
    FROM pg_database AS pd
    WHERE pd.oid IN (
        SELECT sd.dbid FROM pg_shdepend AS sd
        WHERE sd.refclassid = 'pg_authid'::regclass
            AND sd.refobjid = (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = p_login)
            AND sd.dbid <> 0
    )
    ORDER BY pd.datname
$$;

-- Gives what p_login owns, in every database where it owns or holds anything
-- (pg_shdepend tells which), to that database's data table admin login, then
-- drops what is left (its privileges). Returns the databases it could not
-- finish, each with the reason; empty when everything moved.
CREATE OR REPLACE FUNCTION datatable_roles.move_objects_of(p_login text)
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    db record;
    statements text;
    failed text [] := '{}'::text [];
BEGIN
    FOR db IN SELECT * FROM datatable_roles.databases_holding(p_login)
    LOOP
        IF db.admin_login IS NULL THEN
            failed := failed || format('%s: not a data table database', db.datname);
            CONTINUE;
        END IF;
        statements := format('REASSIGN OWNED BY %1$I TO %2$I; DROP OWNED BY %1$I',
            p_login, db.admin_login);
        BEGIN
            IF db.datname = current_database() THEN
                EXECUTE statements;
            ELSE
                PERFORM datatable_roles.exec_in_database(db.datname, statements);
            END IF;
        EXCEPTION WHEN OTHERS THEN
            failed := failed || format('%s: %s', db.datname, SQLERRM);
        END;
        -- Each database's move is committed there on its own: a crash between two
        -- leaves some moved and some not, which the next sweep or drop finishes.
        PERFORM datatable_roles.fault_point('move:after_database');
    END LOOP;
    RETURN failed;
END;
$$;

-- The sweep's selection (SPEC section 6), the one definition that the sweep,
-- its recheck of each login under the login's lock, and the CLI use: a set
-- login of this instance unused since p_cutoff, or a retired one (empty
-- password) holding a role that was dropped since (no resolve takes such a
-- login back).
CREATE OR REPLACE FUNCTION datatable_roles.is_sweepable(
    p_last_used_at timestamptz, p_password text, p_role_ids bigint[], p_cutoff timestamptz
)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT p_last_used_at < p_cutoff OR (p_password = '' AND EXISTS (
        SELECT FROM unnest(p_role_ids) AS i (id)
        WHERE NOT EXISTS (SELECT FROM datatable_roles.catalog_role AS r WHERE r.id = i.id)
    ))
$$;

-- A sweep's cutoff: logins last used before it are unused (p_unused_for,
-- by default settings.unused_after, 30 days).
CREATE OR REPLACE FUNCTION datatable_roles.sweep_cutoff(p_unused_for interval)
RETURNS timestamptz
LANGUAGE sql STABLE
AS $$
    SELECT c.now - coalesce(p_unused_for, s.unused_after)
    FROM datatable_roles.clock_now() AS c (now), datatable_roles.settings AS s
$$;

-- The logins a sweep examines, in the order it takes them.
CREATE OR REPLACE FUNCTION datatable_roles.sweep_candidates(p_unused_for interval DEFAULT null)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT s.login
    FROM datatable_roles.datatable_role_set AS s,
        datatable_roles.sweep_cutoff(p_unused_for) AS c (cutoff)
    WHERE datatable_roles.is_sweepable(s.last_used_at, s.password, s.role_ids, c.cutoff)
    ORDER BY s.login
$$;

-- Sweep, step 1, in a transaction of its own: if the login is still unused
-- since p_cutoff (or retired and holding a dropped role), its row loses the
-- password and the login loses LOGIN, and its sessions end. False: skip it.
CREATE OR REPLACE FUNCTION datatable_roles.sweep_take_away(p_login text, p_cutoff timestamptz)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.lock_set_login(p_login);
    UPDATE datatable_roles.datatable_role_set AS s SET password = ''
    WHERE s.login = p_login
        AND datatable_roles.is_sweepable(s.last_used_at, s.password, s.role_ids, p_cutoff);
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = p_login) THEN
        EXECUTE format('ALTER ROLE %I WITH NOLOGIN', p_login);
        -- REASSIGN OWNED, in the link login's session, needs the privileges
        -- of the login: make the link login a member (committed with this
        -- step) when the login owns or holds something to move. What counts
        -- is a membership that inherits (link_holds), not that some row
        -- exists: on 16 the owner's own ADMIN row neither inherits nor sets.
        IF EXISTS (SELECT FROM datatable_roles.databases_holding(p_login))
            AND NOT datatable_roles.link_holds(p_login) THEN
            EXECUTE format('GRANT %I TO %I', p_login, datatable_roles.link_login());
        END IF;
    END IF;
    PERFORM datatable_roles.end_sessions_of(p_login);
    RETURN true;
END;
$$;

-- Sweep, steps 2 and 3, in one transaction holding the login's lock from the
-- first look to the commit: a resolve that wants the login back waits until the
-- login is gone (and then makes it anew), so the sweep never moves the objects
-- of, nor drops, a login a resolve took back; one that took it back before
-- this lock is seen here (its row has a password again) and the login is
-- skipped. What it owns moves to each data table's admin login (committed in
-- each database, see move_objects_of), then the login and its row go.
-- outcome: 'dropped', 'skipped' (taken back, or already gone), or
-- 'unfinished' with the reason; then the row keeps its empty password.
CREATE OR REPLACE FUNCTION datatable_roles.sweep_drop(
    p_login text, OUT outcome text, OUT reason text
)
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    failed text [];
BEGIN
    PERFORM datatable_roles.lock_set_login(p_login);
    IF NOT EXISTS (
        SELECT FROM datatable_roles.datatable_role_set AS s
        WHERE s.login = p_login AND s.password = ''
    ) THEN
        outcome := 'skipped';
        RETURN;
    END IF;
    -- NOLOGIN is committed now: whoever logged in again before that commit
    -- is ended here for good, before anything moves under it.
    PERFORM datatable_roles.end_sessions_of(p_login);
    failed := datatable_roles.move_objects_of(p_login);
    PERFORM datatable_roles.fault_point('sweep:after_move');
    IF failed <> '{}' THEN
        outcome := 'unfinished';
        reason := array_to_string(failed, '; ');
        RETURN;
    END IF;
    BEGIN
        IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = p_login) THEN
            EXECUTE format('DROP ROLE %I', p_login);
        END IF;
        PERFORM datatable_roles.fault_point('sweep:after_drop_role');
        DELETE FROM datatable_roles.datatable_role_set AS s WHERE s.login = p_login;
    EXCEPTION WHEN OTHERS THEN
        outcome := 'unfinished';
        reason := SQLERRM;
        RETURN;
    END;
    outcome := 'dropped';
END;
$$;

-- Ends the sessions of this instance's logins that should have none: set logins
-- whose row has an empty password and disabled catalog roles, when they are
-- NOLOGIN. Retirement ends their sessions before its commit; a client that
-- logged in again in that moment (the login could, until the commit) is ended
-- here. Each is looked at under the lock a resolve or an enable takes first,
-- so a login taken back meanwhile is left alone. Returns how many sessions.
CREATE OR REPLACE FUNCTION datatable_roles.end_stray_sessions()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    stray text;
    n integer := 0;
BEGIN
    FOR stray IN
        SELECT s.login FROM datatable_roles.datatable_role_set AS s
        WHERE s.password = '' ORDER BY s.login
    LOOP
        PERFORM datatable_roles.lock_set_login(stray);
        IF EXISTS (
            SELECT FROM datatable_roles.datatable_role_set AS s
            JOIN pg_roles AS pr ON pr.rolname = s.login
            WHERE s.login = stray AND s.password = '' AND NOT pr.rolcanlogin
        ) THEN
            n := n + datatable_roles.end_sessions_of(stray);
        END IF;
    END LOOP;
    FOR stray IN
        SELECT r.name FROM datatable_roles.catalog_role AS r
        WHERE NOT r.enabled ORDER BY r.id
        FOR SHARE SKIP LOCKED
    LOOP
        IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = stray AND NOT pr.rolcanlogin) THEN
            n := n + datatable_roles.end_sessions_of(stray);
        END IF;
    END LOOP;
    RETURN n;
END;
$$;

-- Drops this instance's set logins unused for unused_for (default: settings
-- unused_after, 30 days), going by this instance's rows only. Per login:
-- take away its password and LOGIN (commit), then, holding the login's lock,
-- move what it owns in each data table database to the admin login and drop
-- it and its row (commit). A login it cannot finish keeps its row with an
-- empty password, so the next sweep finds it again. Last, it ends stray
-- sessions of retired logins (end_stray_sessions). Call it as the package
-- owner, outside a transaction block:
--     CALL sweep_unused_role_set_logins(NULL);
-- report: {"examined", "dropped", "skipped", "unfinished": [{"login", "reason"}]}.
CREATE OR REPLACE PROCEDURE public.sweep_unused_role_set_logins(
    INOUT report jsonb DEFAULT null, unused_for interval DEFAULT null
)
LANGUAGE plpgsql
AS $$
DECLARE
    cutoff timestamptz := datatable_roles.sweep_cutoff(unused_for);
    victims text [];
    victim text;
    finish record;
    dropped integer := 0;
    skipped integer := 0;
    unfinished jsonb := '[]'::jsonb;
BEGIN
    victims := ARRAY(SELECT datatable_roles.sweep_candidates(unused_for));
    FOREACH victim IN ARRAY victims LOOP
        IF NOT datatable_roles.sweep_take_away(victim, cutoff) THEN
            skipped := skipped + 1;
            COMMIT;
            CONTINUE;
        END IF;
        COMMIT;
        PERFORM datatable_roles.fault_point('sweep:after_take_away');
        SELECT * INTO finish FROM datatable_roles.sweep_drop(victim);
        COMMIT;
        IF finish.outcome = 'dropped' THEN
            dropped := dropped + 1;
        ELSIF finish.outcome = 'skipped' THEN
            skipped := skipped + 1;
        ELSE
            unfinished := unfinished || jsonb_build_object('login', victim, 'reason', finish.reason);
        END IF;
    END LOOP;
    PERFORM datatable_roles.end_stray_sessions();
    report := jsonb_build_object('examined', cardinality(victims), 'dropped', dropped,
        'skipped', skipped, 'unfinished', unfinished);
END;
$$;

-- Drops a catalog role: retires its set logins, removes it from every role
-- map (a default naming it becomes no default, R11), takes its CONNECT grants
-- away, ends its sessions, gives what it owns in every data table database to
-- that database's admin login (dropping its privileges there), and drops it.
CREATE OR REPLACE FUNCTION public.drop_datatable_role(name text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    target datatable_roles.catalog_role := datatable_roles.require_role(drop_datatable_role.name);
    failed text [];
BEGIN
    -- Refuse before moving anything when some database cannot be handled.
    failed := ARRAY(SELECT format('%s: not a data table database', h.datname)
        FROM datatable_roles.databases_holding(target.name) AS h WHERE h.admin_login IS NULL);
    IF failed <> '{}' THEN
        RAISE EXCEPTION 'role % could not be dropped: %', quote_literal(target.name),
            array_to_string(failed, '; ')
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Revoke its privileges and move what it owns there, then drop it again.';
    END IF;
    -- Then, in sessions of their own: DROP OWNED there also revokes the
    -- role's CONNECT grants, rows this transaction must not hold meanwhile.
    failed := datatable_roles.move_objects_of(target.name);
    IF failed <> '{}' THEN
        RAISE EXCEPTION 'role % could not be dropped: %', quote_literal(target.name),
            array_to_string(failed, '; ')
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'What could be moved now belongs to the data table''s admin login; fix the rest and drop it again.';
    END IF;
    PERFORM datatable_roles.fault_point('drop_role:after_move');
    PERFORM public.retire_role_set_logins_of(target.name);
    UPDATE datatable_roles.datatable AS d SET default_role = datatable_roles.no_default()
    WHERE d.default_role = target.name;
    DELETE FROM datatable_roles.datatable_role AS m WHERE m.role_id = target.id;
    PERFORM datatable_roles.sync_connect_grants(target.id);
    DELETE FROM datatable_roles.catalog_role AS r WHERE r.id = target.id;
    PERFORM datatable_roles.end_sessions_of(target.name);
    BEGIN
        EXECUTE format('DROP ROLE %I', target.name);
    EXCEPTION WHEN dependent_objects_still_exist THEN
        RAISE EXCEPTION 'role % still owns objects or holds privileges: %',
            quote_literal(target.name), SQLERRM
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Revoke its privileges and move what it owns in each data table database, then drop it again.';
    END;
END;
$$;
