-- Scoped logins (docs/trust.md, docs/lifecycle.md): the one login a job is handed for
-- a set of catalog roles on one data table database (one role, R6, or
-- several, R7), when it may be handed out as it is, and making, taking back,
-- healing and rotating it.

-- The login of a set of catalog roles on a database: deterministic over the
-- instance id, the database and the sorted catalog ids (so renames change
-- nothing, two instances never meet, and no login serves two databases),
-- 7 + 40 = 47 bytes. set_login_named is the definition, for ids already
-- sorted and distinct (as roles_of gives them): a scalar SQL function with
-- no subquery, so that the planner inlines it as an expression (no plan
-- node). set_login_of sorts any ids first; set_login_name returns its value.
-- The database is named by its key (database_key): on another server the
-- server's name and the database's, so that equal names on two servers make
-- two logins.
CREATE OR REPLACE FUNCTION datatable_roles.set_login_named(
    p_instance_id uuid, p_dbname text, p_sorted_ids bigint[]
)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT 'wm_set_' || left(encode(sha256(convert_to(
        p_instance_id::text || ':' || p_dbname || ':' || nullif(array_to_string(p_sorted_ids, ','), ''),
        'UTF8'
    )), 'hex'), 40)
$$;

-- A database's key in login names: its name on local (so that logins made
-- before servers keep theirs), '<server>/<name>' elsewhere ('/' is in no
-- database or server name the package accepts).
CREATE OR REPLACE FUNCTION datatable_roles.database_key(p_server text, p_dbname text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_server = 'local' THEN p_dbname ELSE p_server || '/' || p_dbname END
$$;

CREATE OR REPLACE FUNCTION datatable_roles.set_login_of(p_dbname text, p_role_ids bigint[])
RETURNS TABLE (login text)
LANGUAGE sql STABLE
AS $$
    SELECT datatable_roles.set_login_named(s.instance_id, p_dbname,
        ARRAY(SELECT DISTINCT i FROM unnest(p_role_ids) AS i ORDER BY i))
    FROM datatable_roles.settings AS s
$$;

CREATE OR REPLACE FUNCTION datatable_roles.set_login_name(p_dbname text, p_role_ids bigint[])
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    RETURN (SELECT n.login FROM datatable_roles.set_login_of(p_dbname, p_role_ids) AS n);
END;
$$;

-- Serialises everyone who makes, re-keys, sweeps or retires one login,
-- until the end of the transaction. The one lock key of a login.
CREATE OR REPLACE FUNCTION datatable_roles.lock_set_login(p_login text)
RETURNS void
LANGUAGE sql
AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('datatable_roles.set_login:' || p_login, 0))
$$;

-- Serialises the package's changes to one database's access list (a set
-- login's GRANT CONNECT, the sweep's and a role drop's REVOKE and DROP OWNED,
-- register_datatable's REVOKE FROM PUBLIC), until the end of the
-- transaction: PostgreSQL rewrites the database's pg_database row without
-- waiting for a concurrent writer of it, and the second fails with XX000
-- "tuple concurrently updated". The two-key form: a key space of its own
-- (the package's other advisory locks use one bigint key). Taken after the
-- roles' rows, the map rows and the login's lock (docs/lifecycle.md).
CREATE OR REPLACE FUNCTION datatable_roles.lock_database_access(p_dbname text)
RETURNS void
LANGUAGE sql
AS $$
    SELECT pg_catalog.pg_advisory_xact_lock(1262, pg_catalog.hashtext(p_dbname))
$$;

-- Locks what a login of these roles on this database rests on, in the order
-- every path takes them (the roles' rows, then their map rows, then the
-- login's lock): each role's row FOR SHARE and each of its map rows on the
-- database FOR KEY SHARE. True when every role is still enabled and in the
-- map of a data table on the database. Held to the commit, a disable, drop
-- or removal either committed before (seen here) or waits for this
-- transaction and then retires the login it made.
CREATE OR REPLACE FUNCTION datatable_roles.lock_roles_still_usable(
    p_dbname text, p_role_ids bigint[], p_server text DEFAULT 'local'
)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    enabled_ids bigint [] := ARRAY(
        SELECT r.id FROM datatable_roles.catalog_role AS r
        WHERE r.id = ANY(p_role_ids) AND r.enabled ORDER BY r.id FOR SHARE);
    mapped_ids bigint [] := ARRAY(
        SELECT m.role_id FROM datatable_roles.datatable_role AS m
        JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id
        WHERE m.role_id = ANY(p_role_ids) AND d.dbname = p_dbname AND d.server = p_server
        ORDER BY m.role_id, m.datatable_id FOR KEY SHARE OF m);
BEGIN
    RETURN cardinality(enabled_ids) = cardinality(p_role_ids)
        AND NOT EXISTS (SELECT FROM unnest(p_role_ids) AS i (id) WHERE NOT i.id = ANY(mapped_ids));
END;
$$;

-- A login is intact when nobody but the package changed what any role may
-- read of it: the package's attributes, and no setting in its database or
-- globally (a script may ALTER ROLE CURRENT_USER SET, and must not leave
-- settings that every other viewer of the login would then inherit).
-- Settings of other databases act nowhere the login can connect: the
-- sweep's (login_settings_elsewhere). A password the login gave itself is
-- not read here (that needs pg_authid): the next connection with the
-- package's password is refused, and heal_refused_login proves and heals it.
CREATE OR REPLACE FUNCTION datatable_roles.login_intact(p_login text, p_dbname text)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
-- A row when intact, none otherwise: set-returning, so that the planner
-- inlines it into the caller's query and its plan is kept with the
-- caller's (a scalar SQL function with a subquery is planned on every call:
-- 0.4 ms of a 1 ms resolve).
AS $$
    SELECT true
    FROM pg_catalog.pg_roles AS pr
    WHERE pr.rolname = p_login AND pr.rolcanlogin AND pr.rolinherit
        AND NOT (pr.rolsuper OR pr.rolcreatedb OR pr.rolcreaterole OR pr.rolreplication
            OR pr.rolbypassrls)
        AND pr.rolconnlimit = -1
        AND coalesce(pr.rolvaliduntil, 'infinity') = 'infinity'
        -- Settings globally (setdatabase 0: pg_roles.rolconfig, not read, so
        -- that the view's join to them is left out) or in its database.
        AND NOT EXISTS (
            SELECT FROM pg_catalog.pg_db_role_setting AS rs
            WHERE rs.setrole = pr.oid AND rs.setdatabase IN (0, (
                SELECT pd.oid FROM pg_catalog.pg_database AS pd WHERE pd.datname = p_dbname
            ))
        )
$$;

-- A live login: its row has a password, and the login exists, may log in
-- with it and is intact (docs/lifecycle.md: such a row names a login that
-- authenticates with it). One statement, so the row and the login are read
-- as of one snapshot.
CREATE OR REPLACE FUNCTION datatable_roles.live_set_login(p_login text)
RETURNS TABLE (password text, last_used_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT s.password, s.last_used_at
    FROM datatable_roles.datatable_role_set AS s
    WHERE s.login = p_login
        AND s.password <> ''
        -- On another server the catalog is not read (no remote call): the
        -- sweep rotates it, and a refused connection heals it.
        AND (s.server <> 'local' OR EXISTS (SELECT FROM datatable_roles.login_intact(s.login, s.dbname)))
$$;

-- A set login's password, when it may be handed out as it is, with no
-- write: it is live and was used within touch_every. Inlined by the planner
-- into the query that reads it (decide's, as a subquery on the login's
-- name, so that the row is found by its key and the heal check
-- (login_intact) runs on that row only); whatever fails it goes to
-- ensure_set_login, which touches, makes, takes back or heals.
CREATE OR REPLACE FUNCTION datatable_roles.usable_set_login(p_login text)
RETURNS TABLE (password text)
LANGUAGE sql STABLE
AS $$
    SELECT s.password
    FROM datatable_roles.datatable_role_set AS s
    CROSS JOIN datatable_roles.clock_now() AS c (now)
    WHERE s.login = p_login
        AND s.password <> ''
        AND c.now - s.last_used_at < (SELECT st.touch_every FROM datatable_roles.settings AS st)
        AND (s.server <> 'local' OR EXISTS (SELECT FROM datatable_roles.login_intact(s.login, s.dbname)))
$$;

-- Whether set logins are made, re-keyed, disabled and dropped by the
-- superuser step's datatable_roles_guard functions: from 16 on, when it has
-- made them. As the owner, PostgreSQL checks its ADMIN OPTION on each by
-- walking every role the owner ever made: 100-300 ms a statement at 10,000
-- roles (docs/performance.md). The guard acts only on roles the owner holds
-- WITH ADMIN OPTION, so the owner can do nothing through it that it could
-- not do itself.
CREATE OR REPLACE FUNCTION datatable_roles.guard_changes_roles()
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT datatable_roles.pg16_or_later()
        AND to_regprocedure('datatable_roles_guard.drop_login(text)') IS NOT NULL
$$;

-- Login keepers (16+, no guard: the managed profile). The check of ADMIN
-- OPTION walks every role the acting role is a member of, transitively, and
-- after any role change PostgreSQL reads each of them from pg_auth_members
-- again: as the owner, member of every catalog role and every login, 40-60
-- ms a statement at 10,000 roles. So each login is made with a keeper,
-- <login group>_k<2 hex digits of its name> (256 of them, made as needed),
-- holding ADMIN OPTION on it, and the sweep disables and drops it as its
-- keeper, whose walk is its own few logins and their roles
-- (docs/performance.md). A keeper is NOLOGIN and NOINHERIT (it has no
-- privilege of its logins); only the owner is its member, WITH SET.
CREATE OR REPLACE FUNCTION datatable_roles.login_keeper(p_login text)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT datatable_roles.login_group() || '_k' || substr(p_login, 8, 2)
$$;

-- The keeper a login is made with (made first, if need be); NULL before 16,
-- where the owner's CREATEROLE needs no ADMIN OPTION, and when a role of
-- that name exists that is not the package's: keepers are named
-- predictably, so another CREATEROLE role (another instance's owner, say)
-- could make one first, and whoever is its member would administer every
-- login made with it. Ours has the owner as its one member and no
-- attribute but CREATEROLE. The login is then made without a keeper.
CREATE OR REPLACE FUNCTION datatable_roles.ensure_login_keeper(p_login text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    keeper text := datatable_roles.login_keeper(p_login);
BEGIN
    IF NOT datatable_roles.pg16_or_later() THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = keeper) THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('datatable_roles.keeper:' || keeper, 0));
        IF NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = keeper) THEN
            EXECUTE format('CREATE ROLE %I WITH NOLOGIN NOINHERIT CREATEROLE', keeper);
            -- (16+ syntax, dynamic as make_login's, so that 15 parses the function.)
            EXECUTE format('GRANT %I TO %I WITH %s', keeper, current_user,
                CASE WHEN datatable_roles.pg16_or_later() THEN 'INHERIT FALSE, SET TRUE' END);
        END IF;
    END IF;
    IF NOT EXISTS (
        SELECT FROM pg_roles AS pr
        WHERE pr.rolname = keeper AND NOT pr.rolcanlogin AND NOT pr.rolinherit
            AND NOT pr.rolsuper AND NOT pr.rolcreatedb AND NOT pr.rolreplication
            AND NOT pr.rolbypassrls
            AND NOT EXISTS (
                SELECT FROM pg_auth_members AS m
                WHERE m.roleid = pr.oid
                    AND m.member <> (SELECT o.oid FROM pg_roles AS o WHERE o.rolname = current_user)
            )
    ) THEN
        RETURN NULL;
    END IF;
    RETURN keeper;
END;
$$;

-- Runs a role statement on p_login as its keeper when the keeper holds
-- ADMIN OPTION on it; else (a login made before keepers, or by the guard;
-- or a SECURITY DEFINER caller, where SET ROLE is refused) as the owner, as
-- also when the keeper may not (naming an attribute the keeper lacks, such
-- as NOCREATEDB for a login someone gave CREATEDB). The role is set inside
-- the block, so that an error rolls it back with the block; after success
-- it is set back here (SET LOCAL ROLE inside a function outlives it).
-- p_statement is built by the caller with format's %I.
CREATE OR REPLACE FUNCTION datatable_roles.exec_on_login(p_login text, p_statement text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    keeper text := datatable_roles.login_keeper(p_login);
    acting text := current_setting('role');
BEGIN
    IF EXISTS (
        SELECT FROM pg_auth_members AS m
        WHERE m.roleid = (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = p_login)
            AND m.member = (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = keeper)
            AND m.admin_option
    ) THEN
        BEGIN
            PERFORM set_config('role', keeper, true);
            EXECUTE p_statement;
            PERFORM set_config('role', acting, true);
            RETURN;
        EXCEPTION WHEN insufficient_privilege THEN
            NULL;  -- as the owner, below
        END;
    END IF;
    EXECUTE p_statement;
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles.disable_login(p_login text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF datatable_roles.guard_changes_roles() THEN
        PERFORM datatable_roles_guard.disable_login(p_login);
    ELSE
        PERFORM datatable_roles.exec_on_login(p_login,
            format('ALTER ROLE %I WITH NOLOGIN', p_login));
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles.drop_login(p_login text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF datatable_roles.guard_changes_roles() THEN
        PERFORM datatable_roles_guard.drop_login(p_login);
    ELSE
        PERFORM datatable_roles.exec_on_login(p_login, format('DROP ROLE %I', p_login));
    END IF;
END;
$$;

-- Re-establishes exactly the wanted memberships of a login taken back: its
-- roles, and the login group (on 16+ without INHERIT or SET: it carries no
-- privilege, and SET ROLE to it is refused like to any other role).
CREATE OR REPLACE FUNCTION datatable_roles.reset_memberships(p_login text, p_wanted text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    held text;
    wanted text;
    grp text := datatable_roles.login_group();
BEGIN
    FOR held IN
        SELECT g.rolname FROM pg_auth_members AS am
        JOIN pg_roles AS g ON g.oid = am.roleid
        JOIN pg_roles AS m ON m.oid = am.member
        WHERE m.rolname = p_login AND NOT g.rolname = ANY(p_wanted || grp)
    LOOP
        EXECUTE format('REVOKE %I FROM %I', held, p_login);
    END LOOP;
    FOREACH wanted IN ARRAY p_wanted || grp LOOP
        IF NOT EXISTS (
            SELECT FROM pg_auth_members AS am
            JOIN pg_roles AS g ON g.oid = am.roleid
            JOIN pg_roles AS m ON m.oid = am.member
            WHERE m.rolname = p_login AND g.rolname = wanted
        ) THEN
            EXECUTE format('GRANT %I TO %I%s', wanted, p_login,
                CASE WHEN wanted = grp AND datatable_roles.pg16_or_later()
                    THEN ' WITH INHERIT FALSE, SET FALSE' ELSE '' END);
        END IF;
    END LOOP;
END;
$$;

-- Whether the login has a setting PostgreSQL refuses to set or reset inside
-- a SECURITY DEFINER function (role, session_authorization), in any
-- database: resolve runs in one, so its RESET ALL would fail (42501).
CREATE OR REPLACE FUNCTION datatable_roles.has_identity_setting(p_login text)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT EXISTS (
        SELECT FROM pg_catalog.pg_db_role_setting AS rs
        JOIN pg_catalog.pg_roles AS pr ON pr.oid = rs.setrole
        CROSS JOIN LATERAL unnest(rs.setconfig) AS c (item)
        WHERE pr.rolname = p_login
            AND (c.item ILIKE 'role=%' OR c.item ILIKE 'session\_authorization=%')
    )
$$;

-- Removes a login's role and session_authorization settings (and every
-- other setting it has, in every database) as the login itself, in a
-- session of its own, outside any SECURITY DEFINER function: a role may
-- reset its own settings there. It logs in with the password of its row
-- (the heal's new one is not committed yet); the startup options override
-- whatever its settings say (a role, a read-only default, a tiny timeout).
-- Returns whether it ran (false when the row's password no longer logs in).
CREATE OR REPLACE FUNCTION datatable_roles.reset_settings_as_login(p_login text, p_dbname text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    known text;
    resets text;
BEGIN
    SELECT s.password INTO known FROM datatable_roles.datatable_role_set AS s
    WHERE s.login = p_login AND s.password <> '';
    IF known IS NULL THEN
        RETURN false;
    END IF;
    SELECT pg_catalog.string_agg(CASE WHEN rs.setdatabase = 0
            THEN pg_catalog.format('ALTER ROLE %I RESET ALL', p_login)
            ELSE pg_catalog.format('ALTER ROLE %I IN DATABASE %I RESET ALL', p_login, pd.datname)
        END, '; ')
    INTO resets
    FROM pg_catalog.pg_db_role_setting AS rs
    JOIN pg_catalog.pg_roles AS pr ON pr.oid = rs.setrole
    LEFT JOIN pg_catalog.pg_database AS pd ON pd.oid = rs.setdatabase
    WHERE pr.rolname = p_login AND (rs.setdatabase = 0 OR pd.datname IS NOT NULL);
    BEGIN
        PERFORM datatable_roles.session_open('datatable_roles_self', p_dbname, p_login, known,
            '-c role=none -c default_transaction_read_only=off'
            || ' -c statement_timeout=0 -c lock_timeout=0 -c idle_session_timeout=0'
            || ' -c idle_in_transaction_session_timeout=0');
    EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection OR invalid_password
        OR invalid_authorization_specification THEN
        RETURN false;
    END;
    PERFORM datatable_roles.session_exec('datatable_roles_self', resets);
    PERFORM datatable_roles.session_close('datatable_roles_self');
    RETURN true;
END;
$$;

-- Before make_login takes back a login: removes its role and
-- session_authorization settings (issue 21), so that a resolve never fails
-- on them. The package owner's RESET ALL works outside a SECURITY DEFINER
-- function (the sweep); in resolve, the login resets them itself
-- (reset_settings_as_login); when its password was changed too, the login is
-- dropped (with every setting) to be made again, unless it owns something
-- (then 55000: the sweep heals it). Returns whether it dropped the login. Only
-- reached on the heal path: nothing on the hot path.
CREATE OR REPLACE FUNCTION datatable_roles.clear_identity_settings(p_login text, p_dbname text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF NOT datatable_roles.has_identity_setting(p_login) THEN
        RETURN false;
    END IF;
    BEGIN
        EXECUTE format('ALTER ROLE %I RESET ALL', p_login);
        PERFORM datatable_roles.reset_database_settings(p_login);
        RETURN false;
    EXCEPTION WHEN insufficient_privilege THEN
        NULL;  -- inside a SECURITY DEFINER function
    END;
    IF datatable_roles.reset_settings_as_login(p_login, p_dbname) THEN
        RETURN false;
    END IF;
    BEGIN
        PERFORM datatable_roles.revoke_database_grants(p_login);
        PERFORM datatable_roles.drop_login(p_login);
        RETURN true;
    EXCEPTION WHEN dependent_objects_still_exist THEN
        RAISE EXCEPTION 'login % gave itself a role or session_authorization setting and a'
            ' password of its own, and owns objects: only the sweep can take it back', p_login
            USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'login_settings',
                  HINT = 'As the package owner: CALL sweep_unused_role_set_logins(NULL);';
    END;
END;
$$;

-- ALTER ROLE ... IN DATABASE ... RESET ALL wherever the login has settings.
CREATE OR REPLACE FUNCTION datatable_roles.reset_database_settings(p_login text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    db text;
BEGIN
    FOR db IN
        SELECT pd.datname FROM pg_db_role_setting AS rs
        JOIN pg_roles AS pr ON pr.oid = rs.setrole
        JOIN pg_database AS pd ON pd.oid = rs.setdatabase
        WHERE pr.rolname = p_login
    LOOP
        PERFORM datatable_roles.exec_on_login(p_login,
            format('ALTER ROLE %I IN DATABASE %I RESET ALL', p_login, db));
    END LOOP;
END;
$$;

-- Makes or takes back the login of a row-to-be, under the login's lock, and
-- returns its new password: created with exactly its roles, the login group
-- and CONNECT on its one database; or, when it exists (retired, swept
-- half-way, rotated, or changed by someone else), given a new password,
-- stripped of every attribute and setting anyone gave it (in every
-- database), and its memberships and CONNECT made exact again. The caller
-- writes the row in the same transaction. On another server, the same in
-- the manager's session there (make_login_on_server), committed there first.
CREATE OR REPLACE FUNCTION datatable_roles.make_login(
    p_login text, p_dbname text, p_role_ids bigint[], p_server text DEFAULT 'local',
    OUT password text, OUT verifier text
)
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    taken pg_roles;
    names text [] := ARRAY(SELECT r.name FROM datatable_roles.catalog_role AS r
        WHERE r.id = ANY(p_role_ids) ORDER BY r.name COLLATE "C");
BEGIN
    password := datatable_roles.new_password();
    verifier := datatable_roles.verifier_for(password);
    IF p_server <> 'local' THEN
        PERFORM datatable_roles.make_login_on_server(p_server, p_login, p_dbname, names, verifier);
        RETURN;
    END IF;
    BEGIN
        SELECT pr.* INTO taken FROM pg_roles AS pr WHERE pr.rolname = p_login;
        IF taken.rolname IS NOT NULL AND datatable_roles.clear_identity_settings(p_login, p_dbname) THEN
            taken := NULL;  -- dropped: made again below
        END IF;
        IF taken.rolname IS NOT NULL AND datatable_roles.guard_changes_roles() THEN
            -- 16+: through the superuser step's guard, which checks the owner's
            -- ADMIN OPTION with one lookup (guard_changes_roles).
            PERFORM datatable_roles_guard.rekey_login(p_login, verifier);
        ELSIF taken.rolname IS NOT NULL THEN
            -- Only attributes to change are named: from 16 on, naming one the
            -- owner lacks (NOCREATEDB) is refused. One a superuser gave it
            -- (SUPERUSER, REPLICATION, BYPASSRLS) makes this fail.
            -- As its keeper, where it has one (the sweep's rotation, docs/performance.md).
            PERFORM datatable_roles.exec_on_login(p_login, format(
                'ALTER ROLE %I WITH LOGIN INHERIT%s%s%s%s PASSWORD %L', p_login,
                CASE WHEN taken.rolcreatedb THEN ' NOCREATEDB' ELSE '' END,
                CASE WHEN taken.rolcreaterole THEN ' NOCREATEROLE' ELSE '' END,
                CASE WHEN taken.rolconnlimit <> -1 THEN ' CONNECTION LIMIT -1' ELSE '' END,
                CASE WHEN coalesce(taken.rolvaliduntil, 'infinity') <> 'infinity'
                    THEN ' VALID UNTIL ''infinity''' ELSE '' END,
                verifier));
        END IF;
        IF taken.rolname IS NOT NULL THEN
            PERFORM datatable_roles.fault_point('rekey:after_alter_role');
            IF taken.rolconfig IS NOT NULL THEN
                PERFORM datatable_roles.exec_on_login(p_login,
                    format('ALTER ROLE %I RESET ALL', p_login));
            END IF;
            PERFORM datatable_roles.reset_database_settings(p_login);
            PERFORM datatable_roles.reset_memberships(p_login, names);
        ELSIF datatable_roles.guard_changes_roles() THEN
            PERFORM datatable_roles_guard.create_login(p_login, verifier, names,
                datatable_roles.login_group());
            PERFORM datatable_roles.fault_point('create:after_create_role');
        ELSE
            -- The owner is not made a member: its membership list would grow
            -- with every login, and PostgreSQL recomputes it, at a cost
            -- quadratic in its length, after every role change.
            EXECUTE format(
                'CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION'
                || ' PASSWORD %L IN ROLE %s%s',
                p_login, verifier,
                (SELECT string_agg(quote_ident(n), ', ') FROM unnest(names) AS n),
                coalesce(' ADMIN ' || quote_ident(datatable_roles.ensure_login_keeper(p_login)), ''));
            PERFORM datatable_roles.fault_point('create:after_create_role');
            EXECUTE format('GRANT %I TO %I%s', datatable_roles.login_group(), p_login,
                CASE WHEN datatable_roles.pg16_or_later()
                    THEN ' WITH INHERIT FALSE, SET FALSE' ELSE '' END);
        END IF;
        -- Its one direct privilege: catalog roles have CONNECT nowhere.
        PERFORM datatable_roles.lock_database_access(p_dbname);
        EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', p_dbname, p_login);
    EXCEPTION
        WHEN unique_violation OR duplicate_object THEN
            RAISE EXCEPTION 'login % was created concurrently; retry', p_login
                USING ERRCODE = 'serialization_failure';
        WHEN insufficient_privilege THEN
            -- From 16 on, a CREATEROLE owner may grant and alter only the
            -- roles it holds with ADMIN OPTION: those it made (on 16+). A
            -- login made by someone else is not adopted.
            RAISE EXCEPTION 'the package owner may not % login %: %',
                CASE WHEN taken.rolname IS NULL THEN 'make' ELSE 'take back' END, p_login, SQLERRM
                USING ERRCODE = 'insufficient_privilege',
                      HINT = CASE WHEN taken.rolname IS NULL
                          THEN 'After pg_upgrade from PostgreSQL 15, run sql/after-pg-upgrade.sql as a superuser.'
                          ELSE format('If it was not made by the package owner, as a superuser: DROP ROLE %I (it is'
                              || ' made again on next use), or GRANT %I TO %I WITH ADMIN OPTION. After pg_upgrade'
                              || ' from PostgreSQL 15, run sql/after-pg-upgrade.sql.', p_login, p_login, current_user)
                      END;
    END;
END;
$$;

-- The login of exactly these roles on this database (docs/trust.md,
-- docs/lifecycle.md), for a resolve that found none usable as is: touched when live
-- (last_used_at moves at most once per touch_every), otherwise made, or
-- taken back (healed) with a new password, under the login's lock, in the
-- same transaction as its row.
CREATE OR REPLACE FUNCTION datatable_roles.ensure_set_login(
    p_dbname text, p_role_ids bigint[], p_server text DEFAULT 'local',
    OUT login text, OUT password text
)
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    now_ts timestamptz := (SELECT datatable_roles.clock_now());
    live record;
    made record;
BEGIN
    login := datatable_roles.set_login_name(datatable_roles.database_key(p_server, p_dbname),
        p_role_ids);
    SELECT u.password INTO password FROM datatable_roles.usable_set_login(login) AS u;
    IF password IS NOT NULL THEN
        RETURN;
    END IF;
    -- The decision was read before these locks: a role disabled, dropped or
    -- taken out of the map since is seen here, and the resolve fails with a
    -- clear error; one being so now waits for this commit and then retires
    -- the login made here (lock_roles_still_usable).
    IF NOT datatable_roles.lock_roles_still_usable(p_dbname, p_role_ids, p_server) THEN
        RAISE EXCEPTION 'a role of login % was disabled, dropped or taken out of the map while resolving; retry',
            login
            USING ERRCODE = 'serialization_failure';
    END IF;
    -- Serialise makers of this login (and the sweep and retirement of it);
    -- this second look sees what a concurrent maker committed meanwhile.
    PERFORM datatable_roles.lock_set_login(login);
    SELECT l.* INTO live FROM datatable_roles.live_set_login(login) AS l;
    IF FOUND THEN
        -- The daily touch, only under the login's lock: a row is only ever
        -- locked after that lock, as the sweep and retirement do.
        IF now_ts - live.last_used_at
            >= (SELECT s.touch_every FROM datatable_roles.settings AS s) THEN
            UPDATE datatable_roles.datatable_role_set AS s SET last_used_at = now_ts
            WHERE s.login = ensure_set_login.login;
        END IF;
        password := live.password;
        RETURN;
    END IF;
    SELECT m.* INTO made FROM datatable_roles.make_login(login, p_dbname, p_role_ids, p_server) AS m;
    INSERT INTO datatable_roles.datatable_role_set AS s (
        login, role_ids, dbname, password, verifier, created_at, last_used_at, rotated_at, server
    )
    VALUES (login, p_role_ids, p_dbname, made.password, made.verifier, now_ts, now_ts, now_ts,
        p_server)
    ON CONFLICT ON CONSTRAINT datatable_role_set_pkey DO UPDATE
    SET role_ids = excluded.role_ids, dbname = excluded.dbname, password = excluded.password,
        verifier = excluded.verifier, last_used_at = excluded.last_used_at,
        rotated_at = excluded.rotated_at, server = excluded.server;
    PERFORM datatable_roles.fault_point('create:after_row');
    password := made.password;
END;
$$;

-- Rotation and healing (docs/lifecycle.md), one login in its own transaction:
-- under the login's lock, a live login whose password is older than
-- rotate_every, or that someone else changed (not intact, or settings in
-- another database), gets a new password and is made exact again
-- (make_login). Sessions are not ended. Returns 'rotated', 'healed' or
-- NULL (nothing to do, or no longer live). On another server its catalog
-- is not read here: p_altered_there says the sweep found the login changed
-- there (altered_logins_on_server).
CREATE OR REPLACE FUNCTION datatable_roles.rotate_or_heal(
    p_login text, p_altered_there boolean DEFAULT false
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    row_now datatable_roles.datatable_role_set;
    outcome text;
BEGIN
    PERFORM datatable_roles.lock_set_login(p_login);
    SELECT s.* INTO row_now FROM datatable_roles.datatable_role_set AS s
    WHERE s.login = p_login AND s.password <> '' AND s.dbname IS NOT NULL;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF row_now.server <> 'local' AND p_altered_there THEN
        outcome := 'healed';
    ELSIF row_now.server = 'local' AND (NOT EXISTS (
        SELECT FROM datatable_roles.login_intact(row_now.login, row_now.dbname))
        OR EXISTS (SELECT FROM datatable_roles.login_settings_elsewhere(row_now.login, row_now.dbname))) THEN
        outcome := 'healed';
    ELSIF row_now.rotated_at < (SELECT datatable_roles.clock_now())
        - (SELECT st.rotate_every FROM datatable_roles.settings AS st) THEN
        outcome := 'rotated';
    ELSE
        RETURN NULL;
    END IF;
    -- A role of the set disabled or dropped meanwhile: retirement's, not ours.
    IF EXISTS (
        SELECT FROM unnest(row_now.role_ids) AS i (id)
        WHERE NOT EXISTS (
            SELECT FROM datatable_roles.catalog_role AS r WHERE r.id = i.id AND r.enabled
        )
    ) THEN
        RETURN NULL;
    END IF;
    PERFORM datatable_roles.rekey_set_login(row_now);
    RETURN outcome;
END;
$$;

-- A live login's new password (make_login: the login made exact again) and
-- its row's, under the login's lock, which the caller holds.
CREATE OR REPLACE FUNCTION datatable_roles.rekey_set_login(p_row datatable_roles.datatable_role_set)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    made record;
BEGIN
    SELECT m.* INTO made FROM datatable_roles.make_login(p_row.login, p_row.dbname, p_row.role_ids,
        p_row.server) AS m;
    UPDATE datatable_roles.datatable_role_set AS s
    SET password = made.password, verifier = made.verifier,
        rotated_at = (SELECT datatable_roles.clock_now())
    WHERE s.login = p_row.login;
END;
$$;

-- Settings a login was given in a database other than its own (which only
-- the sweep looks for: they act nowhere the login can connect): a row when
-- there are some. Set-returning, so that it is inlined into the sweep's
-- query over every live login instead of planned once per login.
CREATE OR REPLACE FUNCTION datatable_roles.login_settings_elsewhere(p_login text, p_dbname text)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true
    FROM pg_catalog.pg_db_role_setting AS rs
    JOIN pg_catalog.pg_roles AS pr ON pr.oid = rs.setrole
    LEFT JOIN pg_catalog.pg_database AS pd ON pd.oid = rs.setdatabase
    WHERE pr.rolname = p_login AND rs.setdatabase <> 0 AND pd.datname IS DISTINCT FROM p_dbname
    LIMIT 1
$$;
