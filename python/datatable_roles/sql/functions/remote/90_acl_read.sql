-- The grants editor (docs/acl.md): read what roles may touch in a data
-- table's database, plan GRANT / REVOKE / ALTER DEFAULT PRIVILEGES / ALTER
-- ... OWNER TO statements for one change, and apply exactly the statements
-- shown, in one transaction there, audited here. This file checks the
-- caller's names and reads what is there (the snapshot); 91_acl_plan.sql
-- plans.
--
-- Reading goes through the admin login (a dblink session with the stored
-- admin password); applying goes through the link login, which holds the
-- privileges of the admin login and of every catalog role (it is a member
-- of each), so that it can act as the owner of whatever either owns: the
-- admin login alone could not grant on a table a catalog role owns, set
-- default privileges for a catalog role, or hand anything to one. Every
-- name that comes from a caller is checked here, sent to the other database
-- only as a literal, and written into a statement only through %I.

-- The governing entry of workspace/datatable (a reference acts on the data
-- table it refers to), or P0002.
CREATE OR REPLACE FUNCTION datatable_roles.acl_entry(p_workspace text, p_datatable text)
RETURNS datatable_roles.datatable
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable := datatable_roles.require_datatable(p_workspace, p_datatable);
BEGIN
    IF entry.governing_id IS NOT NULL THEN
        SELECT g.* INTO entry FROM datatable_roles.datatable AS g WHERE g.id = entry.governing_id;
    END IF;
    RETURN entry;
END;
$$;

-- A schema or table name of a target: a JSON string of 1 to 63 bytes (a
-- longer name cannot exist), not a system schema. Any other character is
-- allowed: PostgreSQL allows it in a quoted name, and it is only ever sent
-- as a literal or written with %I.
CREATE OR REPLACE FUNCTION datatable_roles.acl_check_name(p_kind text, p_value jsonb)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    v text;
BEGIN
    IF p_value IS NULL OR jsonb_typeof(p_value) <> 'string' THEN
        RAISE EXCEPTION 'the % of a target must be a JSON string', p_kind
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v := p_value #>> '{}';
    IF v = '' OR octet_length(v) > 63 THEN
        RAISE EXCEPTION 'invalid % name %: 1 to 63 bytes', p_kind, quote_literal(left(v, 80))
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_kind = 'schema' AND (starts_with(lower(v), 'pg_') OR v = 'information_schema') THEN
        RAISE EXCEPTION 'schema % is a system schema: the grants editor does not change it',
            quote_literal(v)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v;
END;
$$;

-- A target, checked and normalized: {"database": true}, {"schema": s} or
-- {"schema": s, "table": t} (t a table, view, materialized view, foreign
-- table or sequence of schema s). Raises 22004 / 22023.
CREATE OR REPLACE FUNCTION datatable_roles.acl_target(p_target jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    bad text;
    result jsonb;
BEGIN
    PERFORM datatable_roles.require(p_target, 'target');
    IF jsonb_typeof(p_target) <> 'object' THEN
        RAISE EXCEPTION 'a target must be a JSON object'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use {"database": true}, {"schema": "s"} or {"schema": "s", "table": "t"}.';
    END IF;
    SELECT k INTO bad FROM jsonb_object_keys(p_target) AS k
    WHERE k NOT IN ('database', 'schema', 'table') ORDER BY k LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'unknown key % in a target', quote_literal(left(bad, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use {"database": true}, {"schema": "s"} or {"schema": "s", "table": "t"}.';
    END IF;
    IF p_target ? 'database' THEN
        IF p_target <> '{"database": true}'::jsonb THEN
            RAISE EXCEPTION 'a database target is {"database": true}, with nothing else'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        RETURN p_target;
    END IF;
    IF NOT p_target ? 'schema' THEN
        RAISE EXCEPTION 'a target names the database or a schema'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use {"database": true}, {"schema": "s"} or {"schema": "s", "table": "t"}.';
    END IF;
    result := jsonb_build_object('schema',
        datatable_roles.acl_check_name('schema', p_target -> 'schema'));
    IF p_target ? 'table' THEN
        result := result || jsonb_build_object('table',
            datatable_roles.acl_check_name('table', p_target -> 'table'));
    END IF;
    RETURN result;
END;
$$;

-- The kind of a target ('database', 'schema' or 'table').
CREATE OR REPLACE FUNCTION datatable_roles.acl_target_kind(p_target jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_target ? 'database' THEN 'database'
        WHEN p_target ? 'table' THEN 'table' ELSE 'schema' END
$$;

-- The privileges of an object kind on a server of version p_version.
CREATE OR REPLACE FUNCTION datatable_roles.acl_kind_privileges(p_kind text, p_version integer)
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE p_kind
        WHEN 'database' THEN ARRAY['CREATE', 'CONNECT', 'TEMPORARY']
        WHEN 'schema' THEN ARRAY['USAGE', 'CREATE']
        WHEN 'table' THEN ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES',
            'TRIGGER'] || CASE WHEN p_version >= 170000 THEN ARRAY['MAINTAIN'] ELSE '{}' END
        WHEN 'sequence' THEN ARRAY['USAGE', 'SELECT', 'UPDATE']
        WHEN 'function' THEN ARRAY['EXECUTE']
    END
$$;

-- The privileges of a change, checked against the kind of object they go
-- on and the server's version, upper case, without duplicates, in the
-- kind's order. ALL (or ALL PRIVILEGES) is every privilege of the kind;
-- TEMP is TEMPORARY. Raises 22023.
CREATE OR REPLACE FUNCTION datatable_roles.acl_check_privileges(
    p_privileges jsonb, p_kind text, p_version integer
)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    valid text [] := datatable_roles.acl_kind_privileges(p_kind, p_version);
    wanted text [] := '{}'::text [];
    item jsonb;
    p text;
BEGIN
    IF p_privileges IS NULL OR jsonb_typeof(p_privileges) <> 'array'
        OR jsonb_array_length(p_privileges) = 0 THEN
        RAISE EXCEPTION 'the privileges of a change are a non-empty JSON array of names'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = format('Privileges on a %s: %s.', p_kind, array_to_string(valid, ', '));
    END IF;
    FOR item IN SELECT e FROM jsonb_array_elements(p_privileges) AS e LOOP
        IF jsonb_typeof(item) <> 'string' THEN
            RAISE EXCEPTION 'a privilege must be a JSON string, not %', left(item::text, 80)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        p := upper(btrim(item #>> '{}'));
        IF p IN ('ALL', 'ALL PRIVILEGES') THEN
            wanted := wanted || valid;
        ELSIF p = 'TEMP' AND p_kind = 'database' THEN
            wanted := wanted || 'TEMPORARY'::text;
        ELSIF p = 'MAINTAIN' AND p_kind = 'table' AND p_version < 170000 THEN
            RAISE EXCEPTION 'privilege MAINTAIN needs PostgreSQL 17 or later: this data table''s server is %',
                p_version
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = format('Privileges on a table here: %s.', array_to_string(valid, ', '));
        ELSIF p = ANY(valid) THEN
            wanted := wanted || p;
        ELSE
            RAISE EXCEPTION 'privilege % does not apply to a %', quote_literal(left(item #>> '{}', 80)),
                p_kind
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = format('Privileges on a %s: %s.', p_kind, array_to_string(valid, ', '));
        END IF;
    END LOOP;
    RETURN ARRAY(SELECT v FROM unnest(valid) WITH ORDINALITY AS u (v, n) WHERE v = ANY(wanted) ORDER BY n);
END;
$$;

-- The Postgres role a change names: 'admin' is the data table's admin
-- login; any other name must be a catalog role of the entry's role map.
-- PUBLIC, other roles and unknown names are refused (22023 / P0002).
CREATE OR REPLACE FUNCTION datatable_roles.acl_role(
    p_entry datatable_roles.datatable, p_name jsonb, p_key text
)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    v_name text;
    mapped text;
BEGIN
    IF p_name IS NULL OR jsonb_typeof(p_name) <> 'string' THEN
        RAISE EXCEPTION 'a change needs "%": a role name (admin, or a catalog role of the map)', p_key
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_name := p_name #>> '{}';
    IF v_name = 'admin' THEN
        RETURN p_entry.admin_login;
    END IF;
    IF lower(v_name) = 'public' THEN
        RAISE EXCEPTION 'the grants editor does not name PUBLIC: name admin or a catalog role of the map'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT r.name INTO mapped
    FROM datatable_roles.datatable_role AS m
    JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
    WHERE m.datatable_id = p_entry.id AND r.name = v_name;
    IF mapped IS NULL THEN
        RAISE EXCEPTION 'role % is not admin or a catalog role of the map of data table %/%',
            quote_literal(left(v_name, 80)), p_entry.workspace, p_entry.name
            USING ERRCODE = 'no_data_found',
                  -- || (not format) so that no near name leaves no suggestion
                  HINT = coalesce('Did you mean ' || quote_literal(
                      datatable_roles.nearest_name(v_name, ARRAY(
                          SELECT r.name FROM datatable_roles.datatable_role AS m
                          JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                          WHERE m.datatable_id = p_entry.id ORDER BY r.name) || 'admin'::text)) || '? ', '')
                      || 'Put a catalog role in the map with set_datatable_role_tenants.';
    END IF;
    RETURN mapped;
END;
$$;

-- The package's name for a Postgres role in the entry's database: admin for
-- its admin login and for pg_database_owner (the database's owner, which
-- register_datatable requires to be the admin login: it owns schema public
-- on 15 and later), anything else (catalog roles included) its own name.
CREATE OR REPLACE FUNCTION datatable_roles.acl_label(p_entry datatable_roles.datatable, p_role text)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN p_role IN (p_entry.admin_login, 'pg_database_owner') THEN 'admin' ELSE p_role END
$$;

-- Which kind of role a grantee is: admin, catalog, PUBLIC or other.
CREATE OR REPLACE FUNCTION datatable_roles.acl_role_kind(
    p_entry datatable_roles.datatable, p_role text, p_public boolean
)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN p_public THEN 'PUBLIC'
        WHEN p_role IN (p_entry.admin_login, 'pg_database_owner') THEN 'admin'
        WHEN EXISTS (SELECT FROM datatable_roles.catalog_role AS r WHERE r.name = p_role)
            THEN 'catalog'
        ELSE 'other' END
$$;

-- Whether the link login acts for objects p_owner owns: the admin login of
-- the entry (and pg_database_owner, which the database's owner is), or a
-- catalog role of this instance (it is a member of each).
CREATE OR REPLACE FUNCTION datatable_roles.acl_reachable(
    p_entry datatable_roles.datatable, p_owner text
)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT p_owner IN (p_entry.admin_login, 'pg_database_owner')
        OR EXISTS (SELECT FROM datatable_roles.catalog_role AS r WHERE r.name = p_owner)
$$;

-- Raw grants (aclexplode rows, as the remote read returns them) folded per
-- grantee as the package names it (every grantor's):
-- [{role, kind, privileges, grantable}].
CREATE OR REPLACE FUNCTION datatable_roles.acl_grants(
    p_entry datatable_roles.datatable, p_raw jsonb
)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
        'role', g.label, 'kind', g.kind, 'privileges', g.privileges, 'grantable', g.grantable)
        ORDER BY g.public DESC, g.label COLLATE "C"), '[]'::jsonb)
    FROM (
        SELECT (e ->> 'public')::boolean AS public,
            CASE WHEN (e ->> 'public')::boolean THEN 'PUBLIC'
                ELSE datatable_roles.acl_label(p_entry, e ->> 'grantee') END AS label,
            min(datatable_roles.acl_role_kind(p_entry, e ->> 'grantee', (e ->> 'public')::boolean)) AS kind,
            jsonb_agg(DISTINCT e ->> 'privilege' ORDER BY e ->> 'privilege') AS privileges,
            coalesce(jsonb_agg(DISTINCT e ->> 'privilege' ORDER BY e ->> 'privilege')
                FILTER (WHERE (e ->> 'grantable')::boolean), '[]'::jsonb) AS grantable
        FROM jsonb_array_elements(coalesce(p_raw, '[]'::jsonb)) AS e
        GROUP BY 1, 2
    ) AS g
$$;

-- Raises dblink's failure to connect (08001) again, naming who could not
-- connect where and the usual cause: pg_hba.conf (docs/operating.md). The
-- DETAIL stays libpq's reason, which never holds the password.
CREATE OR REPLACE FUNCTION datatable_roles.acl_unreachable(
    p_entry datatable_roles.datatable, p_what text, p_login text, p_why text, p_state text
)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    host text := (SELECT s.link_host FROM datatable_roles.settings AS s);
BEGIN
    RAISE EXCEPTION 'the grants editor could not connect to database % of data table %/% as its % %',
        quote_literal(p_entry.dbname), p_entry.workspace, p_entry.name, p_what, quote_literal(p_login)
        USING ERRCODE = p_state,
              DETAIL = coalesce(nullif(btrim(p_why, E' \n'), ''), 'could not establish connection'),
              HINT = format('The package reaches the data table''s database over dblink at settings.link_host (%s, port %s): as the admin login to read, as the link login to apply. pg_hba.conf must let both in with scram-sha-256 (docs/operating.md, the pg_hba.conf row); datatable-roles doctor checks it.',
                  host, current_setting('port'));
END;
$$;

-- Opens the named dblink session 'datatable_roles_acl' to the entry's
-- database: as the admin login (p_as_link false: reading) or as the link
-- login (applying). On another server, which has no link login, as the
-- admin login both times (docs/servers.md; apply_datatable_acl makes it a
-- member of the roles it acts for, for the moment). The connection string
-- goes to dblink_connect as an argument, never into statement text. A changed admin password is
-- refused (55000, CONSTRAINT admin_password) as resolve refuses it. The
-- session leaves any role a database setting gave it (SET ROLE NONE).
CREATE OR REPLACE FUNCTION datatable_roles.acl_connect(
    p_entry datatable_roles.datatable, p_as_link boolean
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    why text;
    state text;
BEGIN
    PERFORM datatable_roles.acl_disconnect();
    IF p_entry.server <> 'local' THEN
        BEGIN
            PERFORM datatable_roles.server_session_open(p_entry.server, p_entry.dbname,
                p_entry.admin_login, p_entry.admin_password, 'datatable_roles_acl');
        EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection THEN
            GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL, state = RETURNED_SQLSTATE;
            IF datatable_roles.wrong_password(why) AND NOT EXISTS (
                SELECT FROM datatable_roles.server AS sv WHERE sv.name = p_entry.server
                    AND datatable_roles.login_fails_on(sv.name, p_entry.dbname, sv.manager_login,
                        sv.manager_password) IS NOT NULL
            ) THEN
                PERFORM datatable_roles.refuse_admin_password(NULL, p_entry.admin_login);
            END IF;
            PERFORM datatable_roles.acl_unreachable(p_entry, 'admin login', p_entry.admin_login, why, state);
        END;
    ELSIF p_as_link THEN
        BEGIN
            PERFORM datatable_roles.link_session_open('datatable_roles_acl', p_entry.dbname);
        EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection THEN
            GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL, state = RETURNED_SQLSTATE;
            PERFORM datatable_roles.acl_unreachable(p_entry, 'link login',
                datatable_roles.link_login(), why, state);
        END;
    ELSE
        BEGIN
            PERFORM datatable_roles.session_open('datatable_roles_acl', p_entry.dbname,
                p_entry.admin_login, p_entry.admin_password);
        EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection THEN
            GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL, state = RETURNED_SQLSTATE;
            -- Refused for its password while the link login gets in: the
            -- admin's password was changed outside the package.
            IF datatable_roles.wrong_password(why)
                AND datatable_roles.link_login_fails(p_entry.dbname) IS NULL THEN
                PERFORM datatable_roles.refuse_admin_password(NULL, p_entry.admin_login);
            END IF;
            PERFORM datatable_roles.acl_unreachable(p_entry, 'admin login', p_entry.admin_login, why, state);
        END;
    END IF;
    RETURN 'datatable_roles_acl';
END;
$$;

-- On another server, the roles an apply's admin login must be a member of
-- for the moment: those the statements run as, the new owner of an owner
-- change, and the catalog roles mapped on the data table (an object's old
-- owner); none on local (the link login holds them) or for an empty plan.
CREATE OR REPLACE FUNCTION datatable_roles.acl_acting_for(
    p_entry datatable_roles.datatable, p_plan jsonb
)
RETURNS text[]
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(array_agg(DISTINCT r.name ORDER BY r.name), '{}')
    FROM (
        SELECT jsonb_array_elements_text(p_plan -> 'run_as') AS name
        UNION ALL
        SELECT p_plan -> 'change' ->> 'owner'
        UNION ALL
        SELECT c.name FROM datatable_roles.datatable_role AS m
        JOIN datatable_roles.catalog_role AS c ON c.id = m.role_id
        WHERE m.datatable_id = p_entry.id
    ) AS r
    WHERE p_entry.server <> 'local' AND r.name IS NOT NULL
        AND r.name NOT IN (p_entry.admin_login, 'pg_database_owner', 'admin')
        AND jsonb_array_length(p_plan -> 'statements') > 0
$$;

-- Takes back the memberships acl_acting_for gave (also after a failure).
-- A server gone meanwhile: queued, and its data tables refused until it
-- is applied (run_or_queue).
CREATE OR REPLACE FUNCTION datatable_roles.acl_end_acting_for(
    p_entry datatable_roles.datatable, p_roles text[]
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF p_roles <> '{}' THEN
        PERFORM datatable_roles.run_or_queue(p_entry.server,
            datatable_roles.membership_statement(p_roles, p_entry.admin_login, false),
            format('end of the memberships of %s for the grants editor', p_entry.admin_login));
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles.acl_disconnect()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.session_close('datatable_roles_acl');
END;
$$;

-- A word for a shell command line: as is when it is plain, else single-quoted.
CREATE OR REPLACE FUNCTION datatable_roles.shell_word(p_word text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_word ~ '^[A-Za-z0-9_.,:/@%+=-]+$' THEN p_word
        ELSE '''' || replace(p_word, '''', '''\''''') || '''' END
$$;

-- The CLI command that shows the entry's grants (a hint names it with the SQL call).
CREATE OR REPLACE FUNCTION datatable_roles.acl_show_command(p_entry datatable_roles.datatable)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format('datatable-roles acl show %s %s', datatable_roles.shell_word(p_entry.workspace),
        datatable_roles.shell_word(p_entry.name))
$$;

-- What the remote read sees for a (checked) target, read as the admin login,
-- with 'session_search_path' (the admin login's own, before the package pins
-- it). P0002 when the schema or the table does not exist.
CREATE OR REPLACE FUNCTION datatable_roles.acl_snapshot(
    p_entry datatable_roles.datatable, p_target jsonb, p_subject text
)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    conn text := datatable_roles.acl_connect(p_entry, false);
    session_path text;
    snap text;
    result jsonb;
BEGIN
    BEGIN
        PERFORM datatable_roles.session_exec(conn, 'SET ROLE NONE');
        -- Qualified: the session's search_path is not pinned yet.
        session_path := datatable_roles.session_value(conn,
            'SELECT pg_catalog.current_setting(''search_path'')');
        PERFORM datatable_roles.session_exec(conn, 'SET search_path = pg_catalog, pg_temp');
        -- scripts/acl_read.sql, prepared once in this session (acl_connect
        -- opened it), run with the names as the statement's parameters.
        PERFORM datatable_roles.session_exec(conn, datatable_roles.remote_script_body('acl_read'));
        snap := datatable_roles.session_value(conn, format('EXECUTE datatable_roles_acl_read(%L, %L, %L)',
            p_target ->> 'schema', p_target ->> 'table', p_subject));
    EXCEPTION WHEN OTHERS THEN
        PERFORM datatable_roles.acl_disconnect();
        RAISE;
    END;
    PERFORM datatable_roles.acl_disconnect();
    result := snap::jsonb || jsonb_build_object('session_search_path', session_path);
    IF p_target ? 'schema' AND jsonb_typeof(result -> 'schema') IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'schema % does not exist in database % of data table %/%',
            quote_literal(p_target ->> 'schema'), quote_literal(p_entry.dbname),
            p_entry.workspace, p_entry.name
            USING ERRCODE = 'no_data_found',
                  HINT = format('%s --database (SQL: datatable_acl(%L, %L, ''{"database": true}'')) lists its schemas.',
                      datatable_roles.acl_show_command(p_entry), p_entry.workspace, p_entry.name);
    END IF;
    IF p_target ? 'table' AND jsonb_array_length(result -> 'relations') = 0 THEN
        RAISE EXCEPTION 'table % does not exist in schema % of data table %/%',
            quote_literal(p_target ->> 'table'), quote_literal(p_target ->> 'schema'),
            p_entry.workspace, p_entry.name
            USING ERRCODE = 'no_data_found',
                  HINT = format('%s --schema %s (SQL: datatable_acl(%L, %L, %L)) lists its tables.',
                      datatable_roles.acl_show_command(p_entry),
                      datatable_roles.shell_word(p_target ->> 'schema'), p_entry.workspace, p_entry.name,
                      jsonb_build_object('schema', p_target ->> 'schema')::text);
    END IF;
    RETURN result;
END;
$$;
