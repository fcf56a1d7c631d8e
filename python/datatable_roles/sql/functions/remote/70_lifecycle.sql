-- Set-login lifecycle (docs/lifecycle.md): moving what a login owns to the
-- admin login, the 30-day sweep, stray sessions, dropping catalog roles, and
-- healing a login whose connection was refused.

-- The databases where p_login owns or holds something, each with the admin
-- login of its data table (NULL when it is not a data table database). No
-- SET clause: it is inlined into its callers' plans instead of planned on
-- every call.
CREATE OR REPLACE FUNCTION datatable_roles.databases_holding(p_login text)
RETURNS TABLE (datname text, admin_login text)
LANGUAGE sql STABLE
AS $$
    SELECT pd.datname::text, (
        SELECT d.admin_login FROM datatable_roles.datatable AS d
        WHERE d.dbname = pd.datname AND d.server = 'local' ORDER BY d.id LIMIT 1
    )
    FROM pg_catalog.pg_database AS pd
    WHERE pd.oid IN (
        SELECT sd.dbid FROM pg_catalog.pg_shdepend AS sd
        WHERE sd.refclassid = 'pg_catalog.pg_authid'::pg_catalog.regclass
            AND sd.refobjid = pg_catalog.to_regrole(pg_catalog.quote_ident(p_login))
            AND sd.dbid <> 0
    )
    ORDER BY pd.datname
$$;

-- The databases on which a role holds privileges, by name: from the role's
-- shared dependencies (one index scan), not from each database's access list.
CREATE OR REPLACE FUNCTION datatable_roles.database_grants_of(p_role text)
RETURNS TABLE (datname text)
LANGUAGE sql STABLE
AS $$
    SELECT pd.datname::text FROM pg_catalog.pg_shdepend AS sd
    JOIN pg_catalog.pg_database AS pd ON pd.oid = sd.objid
    WHERE sd.refclassid = 'pg_catalog.pg_authid'::pg_catalog.regclass
        AND sd.refobjid = pg_catalog.to_regrole(pg_catalog.quote_ident(p_role))
        AND sd.classid = 'pg_catalog.pg_database'::pg_catalog.regclass
        AND sd.deptype = 'a'
    ORDER BY pd.datname
$$;

-- Takes back every privilege a role holds on databases (a scoped login's
-- CONNECT): shared objects, which DROP OWNED in one database does not
-- reach when the role owns nothing anywhere, and DROP ROLE refuses to leave.
-- The databases come from the role's shared dependencies (one index scan),
-- not from each database's access list: a data table database has one entry
-- per set login, and reading them all cost seconds per login at 10,000.
CREATE OR REPLACE FUNCTION datatable_roles.revoke_database_grants(p_role text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    db text;
BEGIN
    FOR db IN SELECT g.datname FROM datatable_roles.database_grants_of(p_role) AS g
    LOOP
        PERFORM datatable_roles.lock_database_access(db);
        EXECUTE format('REVOKE ALL ON DATABASE %I FROM %I', db, p_role);
    END LOOP;
END;
$$;

-- The role a one-role login's objects in its own database pass to (R6):
-- its sessions act as the role when the client passes the role option, and
-- a client that does not (PgBouncer refuses it) makes what the role could
-- make, owned by the login. Passing that to the role gives nobody more than
-- the login's sessions had as the role. The role must still exist and be
-- mapped on a data table of that database; otherwise NULL: the quarantine.
CREATE OR REPLACE FUNCTION datatable_roles.one_role_heir(p_login text, p_dbname text)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT r.name
    FROM datatable_roles.datatable_role_set AS s
    JOIN datatable_roles.catalog_role AS r ON r.id = s.role_ids[1]
    WHERE s.login = p_login AND cardinality(s.role_ids) = 1 AND s.dbname = p_dbname
        AND EXISTS (
            SELECT FROM datatable_roles.datatable_role AS m
            JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id
            WHERE m.role_id = r.id AND d.dbname = p_dbname AND d.server = s.server
        )
        AND EXISTS (SELECT FROM pg_catalog.pg_roles AS pr WHERE pr.rolname = r.name)
$$;

-- Gives what p_login owns, in every data table database where it owns or
-- holds anything (pg_shdepend tells which), to that database's admin login,
-- kept but inert (quarantine_statements: nothing it held can run with the
-- admin's privileges or show rows that RLS hides), then drops what is left
-- (its privileges). A one-role login's objects in its own database pass to
-- its role instead, as they are (one_role_heir). In any other database
-- (postgres, the metadata database) nothing belongs to a data table: its
-- objects and privileges there are dropped, so that a large or temporary
-- object there blocks nothing.
-- Returns the databases it could not finish, each with the reason; empty
-- when everything moved.
CREATE OR REPLACE FUNCTION datatable_roles.move_objects_of(p_login text)
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    db record;
    heir text;
    granted text;
    failed text [] := '{}'::text [];
BEGIN
    -- DROP OWNED, in any database, also revokes the login's privileges on
    -- every database (CONNECT): no first use may grant on those meanwhile
    -- (lock_database_access), in the order revoke_database_grants takes them.
    FOR granted IN SELECT g.datname FROM datatable_roles.database_grants_of(p_login) AS g LOOP
        PERFORM datatable_roles.lock_database_access(granted);
    END LOOP;
    FOR db IN SELECT * FROM datatable_roles.databases_holding(p_login)
    LOOP
        heir := datatable_roles.one_role_heir(p_login, db.datname);
        BEGIN
            PERFORM datatable_roles.exec_in_database(db.datname, CASE
                WHEN heir IS NOT NULL THEN format(
                    'REASSIGN OWNED BY %1$I TO %2$I; DROP OWNED BY %1$I', p_login, heir)
                WHEN db.admin_login IS NULL THEN format('DROP OWNED BY %I', p_login)
                ELSE datatable_roles.quarantine_statements(p_login, db.admin_login)
                    || format('; REASSIGN OWNED BY %1$I TO %2$I; DROP OWNED BY %1$I',
                        p_login, db.admin_login)
            END);
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

-- The sweep's selection (docs/lifecycle.md), the one definition that the sweep,
-- its recheck of each login under the login's lock, and status use: a login
-- of this instance unused since p_cutoff; or a retired one (empty password)
-- that no resolve will take back: one made before logins were scoped to a
-- database (no dbname), or holding a role that was dropped, or that no data
-- table on its database maps any more. A row when sweepable, none otherwise:
-- set-returning, so that it is inlined into its callers' queries instead of
-- planned once per login.
CREATE OR REPLACE FUNCTION datatable_roles.is_sweepable(
    p_last_used_at timestamptz, p_password text, p_dbname text, p_role_ids bigint[],
    p_cutoff timestamptz, p_server text DEFAULT 'local'
)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true
    WHERE p_last_used_at < p_cutoff OR (p_password = '' AND (p_dbname IS NULL OR EXISTS (
        SELECT FROM unnest(p_role_ids) AS i (id)
        WHERE NOT EXISTS (
            SELECT FROM datatable_roles.datatable_role AS m
            JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id
            WHERE m.role_id = i.id AND d.dbname = p_dbname AND d.server = p_server
        )
    )))
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

-- The logins a sweep with this cutoff examines, in the order it takes them.
CREATE OR REPLACE FUNCTION datatable_roles.sweep_candidates_at(p_cutoff timestamptz)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT s.login
    FROM datatable_roles.datatable_role_set AS s
    WHERE EXISTS (SELECT FROM datatable_roles.is_sweepable(
        s.last_used_at, s.password, s.dbname, s.role_ids, p_cutoff, s.server))
    ORDER BY s.login
$$;

-- Sweep, step 1, in a transaction of its own: if the login is still unused
-- since p_cutoff (or retired for good, is_sweepable), its row loses the
-- password and the login loses LOGIN, and its sessions end. False: skip it.
CREATE OR REPLACE FUNCTION datatable_roles.sweep_take_away(p_login text, p_cutoff timestamptz)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    on_server text;
BEGIN
    PERFORM datatable_roles.lock_set_login(p_login);
    UPDATE datatable_roles.datatable_role_set AS s SET password = ''
    WHERE s.login = p_login
        AND EXISTS (SELECT FROM datatable_roles.is_sweepable(
            s.last_used_at, s.password, s.dbname, s.role_ids, p_cutoff, s.server))
    RETURNING s.server INTO on_server;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF on_server <> 'local' THEN
        -- Another server: retired there now, or queued (docs/servers.md).
        PERFORM datatable_roles.run_or_queue(on_server, datatable_roles.retire_statement(p_login),
            format('retirement of login %s', p_login));
        RETURN true;
    END IF;
    IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = p_login) THEN
        PERFORM datatable_roles.disable_login(p_login);
        -- REASSIGN OWNED, in the link login's session, needs the privileges
        -- of the login: make the link login a member (committed with this
        -- step) when the login owns or holds something to move. What counts
        -- is a membership that inherits (link_holds), not that some row
        -- exists: on 16 the owner's own ADMIN row neither inherits nor sets.
        IF EXISTS (SELECT FROM datatable_roles.databases_holding(p_login))
            AND NOT datatable_roles.link_holds(p_login) THEN
            PERFORM datatable_roles.exec_on_login(p_login,
                format('GRANT %I TO %I', p_login, datatable_roles.link_login()));
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
    on_server text;
    on_dbname text;
BEGIN
    PERFORM datatable_roles.lock_set_login(p_login);
    SELECT s.server, s.dbname INTO on_server, on_dbname FROM datatable_roles.datatable_role_set AS s
    WHERE s.login = p_login AND s.password = '';
    IF NOT FOUND THEN
        outcome := 'skipped';
        RETURN;
    END IF;
    IF on_server <> 'local' THEN
        SELECT d.* INTO outcome, reason FROM datatable_roles.sweep_drop_on_server(
            on_server, p_login, on_dbname) AS d;
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
            PERFORM datatable_roles.revoke_database_grants(p_login);
            PERFORM datatable_roles.drop_login(p_login);
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

-- Ends the sessions of this instance's logins that should have none: those
-- whose row has an empty password, when they are NOLOGIN. Retirement ends
-- their sessions before its commit; a client that logged in again in that
-- moment (the login could, until the commit) is ended here. Each is looked
-- at under the lock a resolve takes first, so a login taken back meanwhile
-- is left alone. Returns how many sessions.
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
    RETURN n;
END;
$$;

-- The sweep as steps, each one transaction of the procedure below, its
-- progress in a small jsonb state: take away (per login), drop (per login),
-- then rotate or heal (per login), the link login's rotation, stray
-- sessions, and the directory's reconciliation. The logins of a phase are
-- a separate array (sweep_victims), read by position, so that no step
-- copies a list as long as the instance's logins (which made the sweep's
-- time per login grow with their number).
CREATE OR REPLACE FUNCTION datatable_roles.sweep_start(p_unused_for interval)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
    SELECT jsonb_build_object(
        'cutoff', datatable_roles.sweep_cutoff(p_unused_for),
        'phase', 'take_away', 'i', 0, 'examined', 0,
        'dropped', 0, 'skipped', 0, 'unfinished', '[]'::jsonb, 'rotated', 0, 'healed', 0,
        'forgotten', '[]'::jsonb)
$$;

-- The logins of the state's phase, in the order it takes them: those unused
-- since the cutoff (take_away), or every live login due for rotation or
-- changed by someone else (maintain); none for the other phases.
CREATE OR REPLACE FUNCTION datatable_roles.sweep_victims(p_state jsonb)
RETURNS text[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
    SELECT CASE p_state ->> 'phase'
        WHEN 'take_away' THEN ARRAY(
            SELECT datatable_roles.sweep_candidates_at((p_state ->> 'cutoff')::timestamptz))
        WHEN 'maintain' THEN ARRAY(
            SELECT s.login FROM datatable_roles.datatable_role_set AS s
            WHERE s.password <> '' AND s.dbname IS NOT NULL AND (
                s.rotated_at < (SELECT datatable_roles.clock_now())
                    - (SELECT x.rotate_every FROM datatable_roles.settings AS x)
                OR s.server = 'local' AND (NOT EXISTS (
                    SELECT FROM datatable_roles.login_intact(s.login, s.dbname))
                OR EXISTS (SELECT FROM datatable_roles.login_settings_elsewhere(s.login, s.dbname))))
            ORDER BY s.login)
        ELSE '{}'::text []
    END
$$;

-- Whether the last step began a phase with logins of its own (then the
-- procedure reads them with sweep_victims).
CREATE OR REPLACE FUNCTION datatable_roles.sweep_phase_begins(p_state jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
    SELECT p_state ->> 'phase' = 'maintain' AND p_state ->> 'i' = '0'
$$;

CREATE OR REPLACE FUNCTION datatable_roles.sweep_pending(p_state jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
    SELECT p_state ->> 'phase' <> 'done'
$$;

-- Live logins on other servers that someone changed there (a setting a
-- script gave its own login, an attribute): made exact again with a new
-- password, as the maintain phase does here. One look per server that has
-- nothing pending (p_skip: the servers_pending list); a server that cannot
-- be reached is left for the next sweep, and does not stop the others.
-- Returns how many were healed.
CREATE OR REPLACE FUNCTION datatable_roles.heal_altered_far_logins(p_skip jsonb)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    far text;
    altered text [];
    login text;
    healed integer := 0;
BEGIN
    FOR far IN
        SELECT DISTINCT s.server FROM datatable_roles.datatable_role_set AS s
        WHERE s.server <> 'local' AND s.password <> '' AND NOT coalesce(p_skip ? s.server, false)
        ORDER BY s.server
    LOOP
        BEGIN
            altered := datatable_roles.altered_logins_on_server(far);
        EXCEPTION WHEN OTHERS THEN
            IF NOT datatable_roles.unreachable(SQLSTATE) THEN
                RAISE;
            END IF;
            CONTINUE;
        END;
        -- One block a login: a re-key committed there keeps its row here
        -- when a later one meets the server gone.
        FOREACH login IN ARRAY altered LOOP
            BEGIN
                IF datatable_roles.rotate_or_heal(login, true) = 'healed' THEN
                    healed := healed + 1;
                END IF;
            EXCEPTION WHEN OTHERS THEN
                IF NOT datatable_roles.unreachable(SQLSTATE) THEN
                    RAISE;
                END IF;
                EXIT;
            END;
        END LOOP;
    END LOOP;
    RETURN healed;
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles.sweep_step(p_state jsonb, p_victims text[])
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
SET jit = off  -- as resolve_datatable_role: catalog lookups estimated far too dear
AS $$
DECLARE
    st jsonb := p_state;
    phase text := p_state ->> 'phase';
    i integer := (p_state ->> 'i')::integer;
    victim text := p_victims[i + 1];
    finish record;
    outcome text;
BEGIN
    IF phase = 'take_away' AND i = 0 AND (p_state ->> 'examined')::integer = 0 THEN
        st := st || jsonb_build_object('examined', coalesce(cardinality(p_victims), 0));
    END IF;
    IF phase = 'take_away' AND victim IS NULL THEN
        RETURN st || jsonb_build_object('phase', 'maintain', 'i', 0);
    ELSIF phase = 'take_away' THEN
        IF datatable_roles.sweep_take_away(victim, (st ->> 'cutoff')::timestamptz) THEN
            RETURN st || jsonb_build_object('phase', 'drop');
        END IF;
        RETURN st || jsonb_build_object('i', i + 1, 'skipped', (st ->> 'skipped')::integer + 1);
    ELSIF phase = 'drop' THEN
        PERFORM datatable_roles.fault_point('sweep:after_take_away');
        SELECT * INTO finish FROM datatable_roles.sweep_drop(victim);
        st := st || jsonb_build_object('phase', 'take_away', 'i', i + 1);
        IF finish.outcome = 'unfinished' THEN
            RETURN st || jsonb_build_object('unfinished', (st -> 'unfinished')
                || jsonb_build_object('login', victim, 'reason', finish.reason));
        END IF;
        RETURN st || jsonb_build_object(finish.outcome, (st ->> finish.outcome)::integer + 1);
    ELSIF phase = 'maintain' AND victim IS NOT NULL THEN
        st := st || jsonb_build_object('i', i + 1);
        BEGIN
            outcome := datatable_roles.rotate_or_heal(victim);
        EXCEPTION WHEN OTHERS THEN
            -- A login on a server that cannot be reached keeps its password
            -- until the next sweep; the others go on.
            IF NOT datatable_roles.unreachable(SQLSTATE) THEN
                RAISE;
            END IF;
            RETURN st || jsonb_build_object('unfinished', (st -> 'unfinished')
                || jsonb_build_object('login', victim, 'reason', 'rotation: ' || SQLERRM));
        END;
        IF outcome IS NOT NULL THEN
            st := st || jsonb_build_object(outcome, (st ->> outcome)::integer + 1);
        END IF;
        RETURN st;
    ELSIF phase = 'maintain' THEN
        PERFORM datatable_roles.rotate_link_login();
        RETURN st || jsonb_build_object('phase', 'servers');
    ELSIF phase = 'servers' THEN
        -- Changes other servers have not applied yet, server by server: one
        -- that cannot be reached stays pending and does not stop the others.
        RETURN st || jsonb_build_object('phase', 'far_logins', 'servers_pending', coalesce((
            SELECT jsonb_agg(c.server ORDER BY c.server)
            FROM (SELECT DISTINCT q.server FROM datatable_roles.server_change AS q) AS c
            WHERE datatable_roles.apply_server_changes(c.server) > 0), '[]'::jsonb));
    ELSIF phase = 'far_logins' THEN
        RETURN st || jsonb_build_object('phase', 'stray', 'healed', (st ->> 'healed')::integer
            + datatable_roles.heal_altered_far_logins(st -> 'servers_pending'));
    ELSIF phase = 'stray' THEN
        PERFORM datatable_roles.end_stray_sessions();
        RETURN st || jsonb_build_object('phase', 'directory');
    ELSIF phase = 'directory' THEN
        -- u/ keys of people who left the directory (docs/integration.md).
        RETURN st || jsonb_build_object('phase', 'done',
            'forgotten', public.reconcile_directory() -> 'forgotten');
    END IF;
    RETURN st;
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles.sweep_report(p_state jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
    SELECT jsonb_build_object('examined', p_state -> 'examined', 'dropped', p_state -> 'dropped',
        'skipped', p_state -> 'skipped', 'unfinished', p_state -> 'unfinished',
        'rotated', p_state -> 'rotated', 'healed', p_state -> 'healed',
        'forgotten_user_keys', p_state -> 'forgotten',
        'servers_pending', coalesce(p_state -> 'servers_pending', '[]'::jsonb))
$$;

-- A set login the worker reports refused (28P01 on a job's connection): a
-- script may have given it a password of its own. Under the login's lock,
-- a real login attempt with the stored password must fail while the link
-- login still gets in to the same database (the server is up and takes the
-- package's logins) before the login is re-keyed, so that a spurious report
-- never re-keys a working login. Returns 'healed', 'works' (the stored
-- password logs in: nothing done) or 'gone' (no live row: the next resolve
-- makes it again). A role of the set disabled or dropped meanwhile is
-- retirement's: 'gone'.
CREATE OR REPLACE FUNCTION datatable_roles.heal_set_login(p_login text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    row_now datatable_roles.datatable_role_set;
BEGIN
    PERFORM datatable_roles.lock_set_login(p_login);
    SELECT s.* INTO row_now FROM datatable_roles.datatable_role_set AS s
    WHERE s.login = p_login AND s.password <> '' AND s.dbname IS NOT NULL;
    IF NOT FOUND OR EXISTS (
        SELECT FROM unnest(row_now.role_ids) AS i (id)
        WHERE NOT EXISTS (
            SELECT FROM datatable_roles.catalog_role AS r WHERE r.id = i.id AND r.enabled)
    ) THEN
        RETURN 'gone';
    END IF;
    IF datatable_roles.login_fails_on(row_now.server, row_now.dbname, row_now.login,
        row_now.password) IS NULL THEN
        RETURN 'works';
    END IF;
    PERFORM datatable_roles.require_reaches(row_now.server, row_now.dbname);
    PERFORM datatable_roles.rekey_set_login(row_now);
    RETURN 'healed';
END;
$$;
