-- Set logins (SPEC sections 5 and 6): the login of a set of catalog roles,
-- when it may be handed out as it is, and making or taking it back.

-- The set login of a set of catalog roles: deterministic over the instance id
-- and the sorted catalog ids (so renames change nothing and two instances
-- never meet), 7 + 40 = 47 bytes. set_login_of is the definition, as a
-- one-row SQL function without a SET clause, so that the planner inlines it
-- into the query that uses it (no call, and its plan is kept with that
-- query's); set_login_name returns the value.
CREATE OR REPLACE FUNCTION datatable_roles.set_login_of(p_role_ids bigint[])
RETURNS TABLE (login text)
LANGUAGE sql STABLE
AS $$
    SELECT 'wm_set_' || left(encode(sha256(convert_to(
        s.instance_id::text || ':'
        || (
            SELECT string_agg(ids.i::text, ',' ORDER BY ids.i)
            FROM (SELECT DISTINCT unnest(p_role_ids) AS i) AS ids
        ),
        'UTF8'
    )), 'hex'), 40)
    FROM datatable_roles.settings AS s
$$;

CREATE OR REPLACE FUNCTION datatable_roles.set_login_name(p_role_ids bigint[])
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    RETURN (SELECT n.login FROM datatable_roles.set_login_of(p_role_ids) AS n);
END;
$$;

-- Serialises everyone who makes, re-keys, sweeps or retires one set login,
-- until the end of the transaction. The one lock key of a set login.
CREATE OR REPLACE FUNCTION datatable_roles.lock_set_login(p_login text)
RETURNS void
LANGUAGE sql
AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('datatable_roles.set_login:' || p_login, 0))
$$;

-- A live set login: its row has a password, and the login exists and may log
-- in (SPEC section 6: such a row names a login that authenticates with it).
-- One statement, so the row and the login are read as of one snapshot.
CREATE OR REPLACE FUNCTION datatable_roles.live_set_login(p_login text)
RETURNS TABLE (password text, last_used_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT s.password, s.last_used_at
    FROM datatable_roles.datatable_role_set AS s
    WHERE s.login = p_login
        AND s.password <> ''
        AND (SELECT pr.rolcanlogin FROM pg_catalog.pg_roles AS pr WHERE pr.rolname = s.login)
$$;

-- The set login of these roles and its password, when it may be handed out
-- as it is, with no write: it is live and was used within touch_every.
-- Inlined by the planner into the query that reads it (decide's); whatever
-- fails it goes to ensure_set_login, which touches, makes or takes back.
CREATE OR REPLACE FUNCTION datatable_roles.usable_set_login(p_role_ids bigint[])
RETURNS TABLE (login text, password text)
LANGUAGE sql STABLE
AS $$
    SELECT n.login, l.password
    FROM datatable_roles.set_login_of(p_role_ids) AS n
    CROSS JOIN LATERAL datatable_roles.live_set_login(n.login) AS l
    CROSS JOIN datatable_roles.clock_now() AS c (now)
    WHERE cardinality(p_role_ids) > 1
        AND c.now - l.last_used_at < (SELECT st.touch_every FROM datatable_roles.settings AS st)
$$;

-- Re-establishes exactly the wanted memberships of a login taken back.
CREATE OR REPLACE FUNCTION datatable_roles.reset_memberships(p_login text, p_wanted text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    held text;
    wanted text;
BEGIN
    FOR held IN
        SELECT g.rolname FROM pg_auth_members AS am
        JOIN pg_roles AS g ON g.oid = am.roleid
        JOIN pg_roles AS m ON m.oid = am.member
        WHERE m.rolname = p_login AND NOT g.rolname = ANY(p_wanted)
    LOOP
        EXECUTE format('REVOKE %I FROM %I', held, p_login);
    END LOOP;
    FOREACH wanted IN ARRAY p_wanted LOOP
        IF NOT EXISTS (
            SELECT FROM pg_auth_members AS am
            JOIN pg_roles AS g ON g.oid = am.roleid
            JOIN pg_roles AS m ON m.oid = am.member
            WHERE m.rolname = p_login AND g.rolname = wanted
        ) THEN
            EXECUTE format('GRANT %I TO %I', wanted, p_login);
        END IF;
    END LOOP;
END;
$$;

-- The set login of exactly these roles (SPEC sections 5 and 6), for a
-- resolve that found none usable as is: touched when live (last_used_at
-- moves at most once per touch_every), otherwise made, or taken back with a
-- new password, under the login's lock, in the same transaction as its row.
CREATE OR REPLACE FUNCTION datatable_roles.ensure_set_login(
    p_role_ids bigint[], OUT login text, OUT password text
)
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    now_ts timestamptz := (SELECT datatable_roles.clock_now());
    live record;
    taken pg_roles;
    fresh_password text;
    names text [];
BEGIN
    login := datatable_roles.set_login_name(p_role_ids);
    SELECT u.password INTO password FROM datatable_roles.usable_set_login(p_role_ids) AS u;
    IF password IS NOT NULL THEN
        RETURN;
    END IF;
    -- Lock the roles' catalog rows before the login's lock (the order
    -- retirement takes them too): a role being disabled or dropped right now
    -- is either seen here, and the resolve fails with a clear error, or waits
    -- for this commit and then retires the login made here. Without it such a
    -- login was made, with LOGIN, after the retirement had looked for it.
    IF cardinality(ARRAY(
        SELECT r.id FROM datatable_roles.catalog_role AS r
        WHERE r.id = ANY(p_role_ids) AND r.enabled ORDER BY r.id FOR SHARE
    )) <> cardinality(p_role_ids) THEN
        RAISE EXCEPTION 'a role of set login % was disabled or dropped while resolving; retry', login
            USING ERRCODE = 'serialization_failure';
    END IF;
    -- Serialise makers of this login (and the sweep and retirement of it);
    -- this second look sees what a concurrent maker committed meanwhile.
    PERFORM datatable_roles.lock_set_login(login);
    SELECT l.* INTO live FROM datatable_roles.live_set_login(login) AS l;
    IF FOUND THEN
        -- The daily touch, only under the login's lock: a row is only ever
        -- locked after that lock, as the sweep and retirement do. (Touching
        -- first, an UPDATE that lost its recheck against a sweep kept the row
        -- locked and then waited for the lock the sweep held: a deadlock.)
        -- Under the lock, a sweep or retirement is either done (then the row
        -- says so) or has not started.
        IF now_ts - live.last_used_at
            >= (SELECT s.touch_every FROM datatable_roles.settings AS s) THEN
            UPDATE datatable_roles.datatable_role_set AS s SET last_used_at = now_ts
            WHERE s.login = ensure_set_login.login;
        END IF;
        password := live.password;
        RETURN;
    END IF;

    names := ARRAY(SELECT r.name FROM datatable_roles.catalog_role AS r
        WHERE r.id = ANY(p_role_ids) ORDER BY r.name COLLATE "C");
    fresh_password := datatable_roles.new_password();
    BEGIN
        SELECT pr.* INTO taken FROM pg_roles AS pr WHERE pr.rolname = login;
        IF FOUND THEN
            -- A login without a usable row: take it back, stripped of any
            -- attribute it may have been given (one a superuser gave it,
            -- SUPERUSER, REPLICATION or BYPASSRLS, makes this ALTER fail).
            -- Only attributes to change are named: from 16 on, naming one the
            -- owner lacks (NOCREATEDB) is refused.
            EXECUTE format('ALTER ROLE %I WITH LOGIN INHERIT%s%s PASSWORD %L', login,
                CASE WHEN taken.rolcreatedb THEN ' NOCREATEDB' ELSE '' END,
                CASE WHEN taken.rolcreaterole THEN ' NOCREATEROLE' ELSE '' END,
                datatable_roles.verifier_for(fresh_password));
            PERFORM datatable_roles.fault_point('rekey:after_alter_role');
            PERFORM datatable_roles.reset_memberships(login, names);
        ELSE
            -- The owner is not made a member: its membership list would grow
            -- with every set login, and PostgreSQL recomputes it, at a cost
            -- quadratic in its length, after every role change. The sweep
            -- makes it a member only of a login that owns something to move.
            EXECUTE format(
                'CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION'
                || ' PASSWORD %L IN ROLE %s',
                login, datatable_roles.verifier_for(fresh_password),
                (SELECT string_agg(quote_ident(n), ', ') FROM unnest(names) AS n));
            PERFORM datatable_roles.fault_point('create:after_create_role');
        END IF;
    EXCEPTION
        WHEN unique_violation OR duplicate_object THEN
            RAISE EXCEPTION 'set login % was created concurrently; retry', login
                USING ERRCODE = 'serialization_failure';
        WHEN insufficient_privilege THEN
            -- From 16 on, a CREATEROLE owner may grant and alter only the
            -- roles it holds with ADMIN OPTION: those it made (on 16+). A
            -- login made by someone else is not adopted.
            RAISE EXCEPTION 'the package owner may not % set login %: %',
                CASE WHEN taken.rolname IS NULL THEN 'make' ELSE 'take back' END, login, SQLERRM
                USING ERRCODE = 'insufficient_privilege',
                      HINT = CASE WHEN taken.rolname IS NULL
                          THEN 'After pg_upgrade from PostgreSQL 15, run sql/after-pg-upgrade.sql as a superuser.'
                          ELSE format('If it was not made by the package owner, as a superuser: DROP ROLE %I (it is'
                              || ' made again on next use), or GRANT %I TO %I WITH ADMIN OPTION. After pg_upgrade'
                              || ' from PostgreSQL 15, run sql/after-pg-upgrade.sql.', login, login, current_user)
                      END;
    END;
    INSERT INTO datatable_roles.datatable_role_set AS s (login, role_ids, password, created_at, last_used_at)
    VALUES (login, p_role_ids, fresh_password, now_ts, now_ts)
    ON CONFLICT ON CONSTRAINT datatable_role_set_pkey DO UPDATE
    SET role_ids = excluded.role_ids, password = excluded.password, last_used_at = excluded.last_used_at;
    PERFORM datatable_roles.fault_point('create:after_row');
    password := fresh_password;
END;
$$;
