CREATE SCHEMA datatable_roles;

ALTER SCHEMA datatable_roles OWNER TO dtr_owner;

CREATE SCHEMA public;

ALTER SCHEMA public OWNER TO pg_database_owner;

CREATE TYPE datatable_roles.acl_request AS (
	target jsonb,
	target_kind text,
	action text,
	role_name text,
	on_what text,
	object_kind text,
	privileges text[],
	snapshot jsonb
);

ALTER TYPE datatable_roles.acl_request OWNER TO dtr_owner;

CREATE TYPE datatable_roles.acl_step AS (
	statements text[],
	run_as text[],
	in_effect text[],
	names text[],
	skipped text[],
	public_on text[],
	no_rls text[],
	not_invoker text[],
	warnings jsonb
);

ALTER TYPE datatable_roles.acl_step OWNER TO dtr_owner;

CREATE TYPE datatable_roles.decision AS (
	datatable_id bigint,
	dbname text,
	role_ids bigint[],
	role_names text[],
	login_kind text,
	login text,
	password text,
	refused_case text,
	refused_reason text,
	reasons text[],
	job_workspace text,
	permissioned_as text,
	viewer_email text,
	is_reference boolean,
	ident_admin boolean,
	ident_keys text[],
	default_id bigint,
	default_enabled boolean,
	default_tenants text[],
	default_held boolean,
	viewer_member boolean,
	viewer_ids bigint[],
	server text
);

ALTER TYPE datatable_roles.decision OWNER TO dtr_owner;

CREATE TABLE datatable_roles.datatable (
    id bigint NOT NULL,
    workspace text NOT NULL,
    name text NOT NULL,
    governing_id bigint,
    dbname text,
    admin_login text,
    admin_password text,
    default_role text,
    admin_tenants text[] DEFAULT '{}'::text[] NOT NULL,
    admin_verifier text,
    server text DEFAULT 'local'::text NOT NULL,
    CONSTRAINT datatable_check CHECK (((governing_id IS NULL) = ((dbname IS NOT NULL) AND (admin_login IS NOT NULL) AND (admin_password IS NOT NULL) AND (default_role IS NOT NULL))))
);

ALTER TABLE datatable_roles.datatable OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_acting_for(p_entry datatable_roles.datatable, p_plan jsonb) RETURNS text[]
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

ALTER FUNCTION datatable_roles.acl_acting_for(p_entry datatable_roles.datatable, p_plan jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_change_warnings(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_step datatable_roles.acl_step) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(jsonb_agg(w.warning ORDER BY w.n), '[]'::jsonb)
    FROM (
        SELECT 1 AS n, datatable_roles.acl_warning('public_grant', format(
            'PUBLIC holds privileges on %s: every role reaches it, whatever is granted or revoked here',
            datatable_roles.acl_some(p_step.public_on))) AS warning
        WHERE cardinality(p_step.public_on) > 0
        UNION ALL
        SELECT 2, datatable_roles.acl_warning('nothing_to_do', format(
            CASE WHEN p_req.action = 'grant' THEN '%s holds %s already, %s'
                WHEN starts_with(p_req.on_what, 'future ') AND p_req.target_kind = 'schema'
                    THEN '%s holds none of %s, %s: nothing to revoke here (default privileges in a schema only add to the database-wide ones: revoke those on the database target)'
                WHEN starts_with(p_req.on_what, 'future ')
                    THEN '%s holds none of %s, %s: nothing to revoke'
                ELSE '%s holds none of %s, %s: nothing to revoke (a grant another grantor made is not the owner''s to take back; datatable_acl shows every grant)' END,
            datatable_roles.acl_label(p_entry, p_req.role_name), array_to_string(p_req.privileges, ', '),
            CASE WHEN starts_with(p_req.on_what, 'future ')
                THEN format('in the default privileges for %s created by %s', substr(p_req.on_what, 8),
                    datatable_roles.acl_some(p_step.in_effect))
                ELSE format('granted by the owner on %s', datatable_roles.acl_some(p_step.in_effect)) END))
        WHERE cardinality(p_step.statements) = 0 AND cardinality(p_step.in_effect) > 0
    ) AS w
$$;

ALTER FUNCTION datatable_roles.acl_change_warnings(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_step datatable_roles.acl_step) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_check_change(p_entry datatable_roles.datatable, p_kind text, p_change jsonb, OUT action text, OUT role_name text, OUT on_what text) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    bad text;
BEGIN
    PERFORM datatable_roles.require(p_change, 'change');
    IF jsonb_typeof(p_change) <> 'object' THEN
        RAISE EXCEPTION 'a change must be a JSON object'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use {"grant": [...], "to": r}, {"revoke": [...], "from": r} or {"owner": r}.';
    END IF;
    SELECT k INTO bad FROM jsonb_object_keys(p_change) AS k
    WHERE k NOT IN ('grant', 'to', 'revoke', 'from', 'on', 'for', 'owner') ORDER BY k LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'unknown key % in a change', quote_literal(left(bad, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A change has grant + to, revoke + from, or owner; on and for are optional.';
    END IF;
    IF (p_change ? 'grant')::integer + (p_change ? 'revoke')::integer + (p_change ? 'owner')::integer <> 1 THEN
        RAISE EXCEPTION 'a change is exactly one of grant, revoke or owner'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    action := CASE WHEN p_change ? 'grant' THEN 'grant' WHEN p_change ? 'revoke' THEN 'revoke'
        ELSE 'owner' END;
    IF (action = 'grant' AND (p_change ? 'from' OR NOT p_change ? 'to'))
        OR (action = 'revoke' AND (p_change ? 'to' OR NOT p_change ? 'from'))
        OR (action = 'owner' AND (p_change - 'owner') <> '{}'::jsonb) THEN
        RAISE EXCEPTION 'a change is {"grant": [...], "to": r}, {"revoke": [...], "from": r} or {"owner": r}'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    role_name := datatable_roles.acl_role(p_entry,
        coalesce(p_change -> 'to', p_change -> 'from', p_change -> 'owner'),
        CASE action WHEN 'grant' THEN 'to' WHEN 'revoke' THEN 'from' ELSE 'owner' END);
    IF action = 'owner' THEN
        RETURN;
    END IF;
    IF p_change ? 'on' AND jsonb_typeof(p_change -> 'on') IS DISTINCT FROM 'string' THEN
        RAISE EXCEPTION '"on" must be a JSON string' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    on_what := coalesce(p_change ->> 'on', 'target');
    IF NOT (on_what = 'target'
        OR (p_kind = 'schema' AND on_what IN ('all tables', 'all sequences', 'all functions'))
        OR (p_kind IN ('schema', 'database')
            AND on_what IN ('future tables', 'future sequences', 'future functions'))
        OR (p_kind = 'database' AND on_what = 'future schemas')) THEN
        RAISE EXCEPTION '"on": % does not apply to a % target', quote_literal(left(on_what, 80)), p_kind
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = CASE p_kind
                      WHEN 'database' THEN 'On the database: target, future tables, future sequences, future functions, future schemas.'
                      WHEN 'schema' THEN 'On a schema: target, all tables, all sequences, all functions, future tables, future sequences, future functions.'
                      ELSE 'On a table: target.' END;
    END IF;
    IF p_change ? 'for' AND NOT starts_with(on_what, 'future ') THEN
        RAISE EXCEPTION '"for" goes only with "on": "future ..." (default privileges)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.acl_check_change(p_entry datatable_roles.datatable, p_kind text, p_change jsonb, OUT action text, OUT role_name text, OUT on_what text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_check_name(p_kind text, p_value jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.acl_check_name(p_kind text, p_value jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_check_privileges(p_privileges jsonb, p_kind text, p_version integer) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.acl_check_privileges(p_privileges jsonb, p_kind text, p_version integer) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_check_run_as(p_snapshot jsonb, p_run_as text[], p_schema text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    bad text := (SELECT string_agg(DISTINCT quote_literal(o), ', ') FROM unnest(p_run_as) AS o
        WHERE o IN (SELECT jsonb_array_elements_text(p_snapshot -> 'no_usage')));
BEGIN
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'the owner % of objects in schema % has no USAGE on it: a grant or revoke runs as the owner, and it could not name them',
            bad, quote_literal(p_schema)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Grant USAGE on the schema to the owner first (a change of its own), or hand the objects to admin.';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.acl_check_run_as(p_snapshot jsonb, p_run_as text[], p_schema text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_connect(p_entry datatable_roles.datatable, p_as_link boolean) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.acl_connect(p_entry datatable_roles.datatable, p_as_link boolean) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_creators(p_entry datatable_roles.datatable, p_change jsonb, p_role text) RETURNS text[]
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    IF NOT p_change ? 'for' THEN
        RETURN ARRAY(
            SELECT p_entry.admin_login
            UNION
            SELECT r.name FROM datatable_roles.datatable_role AS m
            JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
            WHERE m.datatable_id = p_entry.id AND r.name <> p_role
            ORDER BY 1);
    END IF;
    IF jsonb_typeof(p_change -> 'for') <> 'array' OR jsonb_array_length(p_change -> 'for') = 0 THEN
        RAISE EXCEPTION '"for" is a non-empty JSON array of role names'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN ARRAY(
        SELECT DISTINCT datatable_roles.acl_role(p_entry, e, 'for')
        FROM jsonb_array_elements(p_change -> 'for') AS e ORDER BY 1);
END;
$$;

ALTER FUNCTION datatable_roles.acl_creators(p_entry datatable_roles.datatable, p_change jsonb, p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_defaults_of(p_snapshot jsonb, p_creator text, p_objtype text, p_database boolean, p_all text[]) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT coalesce(
        (SELECT a -> 'grants' FROM jsonb_array_elements(p_snapshot -> 'default_acl') AS a
            WHERE a ->> 'for_role' = p_creator AND a ->> 'objtype' = p_objtype),
        CASE WHEN p_database THEN (
            SELECT jsonb_agg(jsonb_build_object('grantee', p_creator, 'grantor', p_creator,
                'public', false, 'privilege', p))
            FROM unnest(p_all) AS p) END,
        '[]'::jsonb)
$$;

ALTER FUNCTION datatable_roles.acl_defaults_of(p_snapshot jsonb, p_creator text, p_objtype text, p_database boolean, p_all text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_disconnect() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.session_close('datatable_roles_acl');
END;
$$;

ALTER FUNCTION datatable_roles.acl_disconnect() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_empty_step() RETURNS datatable_roles.acl_step
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT ROW('{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '[]')::datatable_roles.acl_step
$$;

ALTER FUNCTION datatable_roles.acl_empty_step() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_end_acting_for(p_entry datatable_roles.datatable, p_roles text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    IF p_roles <> '{}' THEN
        PERFORM datatable_roles.run_or_queue(p_entry.server,
            datatable_roles.membership_statement(p_roles, p_entry.admin_login, false),
            format('end of the memberships of %s for the grants editor', p_entry.admin_login));
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.acl_end_acting_for(p_entry datatable_roles.datatable, p_roles text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_entry(p_workspace text, p_datatable text) RETURNS datatable_roles.datatable
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.acl_entry(p_workspace text, p_datatable text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_grant_all(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) RETURNS datatable_roles.acl_step
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    step datatable_roles.acl_step := datatable_roles.acl_empty_step();
    routines boolean := p_req.object_kind = 'function';
    owners text [] := '{}'::text [];
    item jsonb;
    named text;
    grp record;
BEGIN
    FOR item IN
        SELECT a.e FROM jsonb_array_elements(p_req.snapshot -> CASE WHEN routines THEN 'routines'
            ELSE 'relations' END) WITH ORDINALITY AS a (e, n)
        WHERE routines OR (p_req.object_kind = 'sequence') = (a.e ->> 'relkind' = 'S')
        ORDER BY a.n
    LOOP
        named := CASE WHEN routines THEN item ->> 'identity'
            ELSE format('%I.%I', p_req.target ->> 'schema', item ->> 'name') END;
        IF NOT datatable_roles.acl_reachable(p_entry, item ->> 'owner') THEN
            step.skipped := step.skipped || format('%s (owner %s)', named, item ->> 'owner');
            CONTINUE;
        ELSIF datatable_roles.acl_in_effect(p_req.action, p_req.privileges, item -> 'grants',
            item ->> 'owner', p_req.role_name) THEN
            step.in_effect := step.in_effect || named;
            CONTINUE;
        END IF;
        step.names := step.names || named;
        owners := owners || (item ->> 'owner');
        step := datatable_roles.acl_note(step, item, named);
    END LOOP;
    FOR grp IN SELECT * FROM datatable_roles.acl_per_owner(step.names, owners) LOOP
        step.statements := step.statements || datatable_roles.acl_statement(p_req,
            CASE p_req.object_kind WHEN 'function' THEN 'ROUTINE ' WHEN 'sequence' THEN 'SEQUENCE '
                ELSE 'TABLE ' END || array_to_string(grp.names, ', '));
        step.run_as := step.run_as || grp.owner;
    END LOOP;
    IF cardinality(step.names) = 0 AND cardinality(step.in_effect) = 0 THEN
        step.warnings := step.warnings || datatable_roles.acl_warning('nothing_to_do', format(
            'schema %I has no %s the package can act on', p_req.target ->> 'schema',
            substr(p_req.on_what, 5)));
    END IF;
    IF cardinality(step.skipped) > 0 THEN
        step.warnings := step.warnings || datatable_roles.acl_warning('left_out', format(
            'left out, as their owner is neither admin nor a catalog role (a set login''s objects are its own): %s',
            datatable_roles.acl_some(step.skipped)));
    END IF;
    RETURN step;
END;
$$;

ALTER FUNCTION datatable_roles.acl_grant_all(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_grant_future(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_creators text[]) RETURNS datatable_roles.acl_step
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
DECLARE
    step datatable_roles.acl_step := datatable_roles.acl_empty_step();
    objects text := substr(p_req.on_what, 8);   -- tables, sequences, functions or schemas
    in_schema boolean := p_req.target_kind = 'schema';
    creator text;
BEGIN
    FOREACH creator IN ARRAY p_creators LOOP
        IF datatable_roles.acl_in_effect(p_req.action, p_req.privileges,
            datatable_roles.acl_defaults_of(p_req.snapshot, creator,
                CASE objects WHEN 'tables' THEN 'r' WHEN 'sequences' THEN 'S'
                    WHEN 'functions' THEN 'f' ELSE 'n' END,
                p_req.target_kind = 'database', datatable_roles.acl_kind_privileges(
                    p_req.object_kind, (p_req.snapshot ->> 'version')::integer)),
            creator, p_req.role_name) THEN
            step.in_effect := step.in_effect || datatable_roles.acl_label(p_entry, creator);
            CONTINUE;
        END IF;
        step.statements := step.statements || format('ALTER DEFAULT PRIVILEGES FOR ROLE %I%s %s',
            creator,
            CASE WHEN in_schema THEN format(' IN SCHEMA %I', p_req.target ->> 'schema') ELSE '' END,
            datatable_roles.acl_statement(p_req, upper(objects)));
        step.run_as := step.run_as || NULL::text;   -- the creator's, whoever runs it
    END LOOP;
    step.warnings := step.warnings || datatable_roles.acl_warning('default_privileges', format(
        'default privileges bind only %s created later by %s%s; objects that exist now are not touched%s, and objects a set login (a job holding several roles) creates are its own and are not covered',
        objects,
        array_to_string(ARRAY(SELECT datatable_roles.acl_label(p_entry, c) FROM unnest(p_creators) AS c), ', '),
        CASE WHEN in_schema THEN format(' in schema %I', p_req.target ->> 'schema') ELSE ' in any schema' END,
        CASE WHEN objects = 'schemas' THEN '' ELSE format(' (use "all %s")', objects) END));
    IF p_req.action = 'grant' AND objects = 'tables' THEN
        step.warnings := step.warnings || datatable_roles.acl_warning('rls_disabled',
            'tables are created with row-level security disabled: enable it on each new table before its rows matter (ALTER TABLE ... ENABLE ROW LEVEL SECURITY)');
    ELSIF objects = 'functions' THEN
        step.warnings := step.warnings || datatable_roles.acl_warning('public_grant',
            'PUBLIC gets EXECUTE on every new function by default, unless default privileges revoke it');
    END IF;
    IF p_req.snapshot -> 'default_acl' @? '$[*].grants[*] ? (@.public == true)' THEN
        step.warnings := step.warnings || datatable_roles.acl_warning('public_grant',
            'default privileges here grant to PUBLIC: every role reaches those objects when they are created');
    END IF;
    RETURN step;
END;
$_$;

ALTER FUNCTION datatable_roles.acl_grant_future(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_creators text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_grant_target(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) RETURNS datatable_roles.acl_step
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    step datatable_roles.acl_step := datatable_roles.acl_empty_step();
    schema_name text := p_req.target ->> 'schema';
    object jsonb;
    owner text;
    named text;      -- as a message names it
    on_clause text;
    runner text;
BEGIN
    IF p_req.target_kind = 'database' THEN
        object := p_req.snapshot -> 'database';
        owner := object ->> 'owner';
        named := format('database %I', p_entry.dbname);
        on_clause := format('DATABASE %I', p_entry.dbname);
        runner := p_entry.admin_login;
    ELSIF p_req.target_kind = 'schema' THEN
        object := p_req.snapshot -> 'schema';
        owner := object ->> 'owner';
        PERFORM datatable_roles.acl_require_reachable(p_entry, 'schema ' || quote_literal(schema_name), owner);
        named := format('schema %I', schema_name);
        on_clause := format('SCHEMA %I', schema_name);
        -- pg_database_owner is the admin login here (it owns the database)
        runner := CASE WHEN owner = 'pg_database_owner' THEN p_entry.admin_login ELSE owner END;
    ELSE
        object := p_req.snapshot -> 'relations' -> 0;
        owner := object ->> 'owner';
        named := format('%I.%I', schema_name, p_req.target ->> 'table');
        PERFORM datatable_roles.acl_require_reachable(p_entry, named, owner);
        on_clause := CASE WHEN object ->> 'relkind' = 'S' THEN 'SEQUENCE ' ELSE 'TABLE ' END || named;
        runner := owner;
    END IF;
    IF datatable_roles.acl_in_effect(p_req.action, p_req.privileges, object -> 'grants', owner,
        p_req.role_name) THEN
        step.in_effect := step.in_effect || named;
    ELSE
        step.statements := step.statements || datatable_roles.acl_statement(p_req, on_clause);
        step.run_as := step.run_as || runner;
    END IF;
    RETURN datatable_roles.acl_note(step, object, named);
END;
$$;

ALTER FUNCTION datatable_roles.acl_grant_target(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_grant_warnings(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_step datatable_roles.acl_step) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
DECLARE
    warnings jsonb := '[]'::jsonb;
    on_what text := p_req.on_what;
    role_name text := p_req.role_name;
    path_schemas text [] := datatable_roles.acl_path_schemas(p_req.snapshot);
BEGIN
    IF 'CREATE' = ANY(p_req.privileges) AND p_req.object_kind = 'schema' AND (
        (on_what = 'target' AND (p_req.target ->> 'schema') = ANY(path_schemas))
        OR on_what = 'future schemas') THEN
        warnings := warnings || datatable_roles.acl_warning('search_path_create', format(
            'CREATE on %s, which %s on a default search_path (%s): %s can create objects that shadow those other roles, the admin login among them, find there (CVE-2018-1058)',
            CASE WHEN on_what = 'target' THEN format('schema %I', p_req.target ->> 'schema') ELSE 'new schemas' END,
            CASE WHEN on_what = 'target' THEN 'is' ELSE 'may be' END,
            array_to_string(path_schemas, ', '), role_name));
    ELSIF 'CREATE' = ANY(p_req.privileges) AND p_req.object_kind = 'database' THEN
        warnings := warnings || datatable_roles.acl_warning('search_path_create', format(
            'CREATE on database %I lets %s create schemas; one named like a role is first on that role''s search_path ("$user"), and objects there shadow the ones it means (CVE-2018-1058)',
            p_entry.dbname, role_name));
    END IF;
    IF cardinality(p_step.no_rls) > 0 THEN
        warnings := warnings || datatable_roles.acl_warning('rls_disabled', format(
            'row-level security is disabled (or impossible) on %s: every login holding %s reaches all its rows',
            datatable_roles.acl_some(p_step.no_rls), role_name));
    END IF;
    IF p_req.object_kind = 'table' THEN
        warnings := warnings || datatable_roles.acl_runs_as_others(p_req.privileges,
            CASE WHEN on_what = 'target'
                THEN format('%I.%I', p_req.target ->> 'schema', p_req.target ->> 'table')
                WHEN on_what = 'all tables' THEN datatable_roles.acl_some(p_step.names)
                ELSE 'new tables' END,
            CASE WHEN on_what = 'target' THEN datatable_roles.acl_label(p_entry,
                p_req.snapshot -> 'relations' -> 0 ->> 'owner') END,
            role_name);
    END IF;
    IF cardinality(p_step.not_invoker) > 0 THEN
        warnings := warnings || datatable_roles.acl_warning('view_not_invoker', format(
            'view %s is not security_invoker: it reads its tables as its owner, so %s reaches the rows its owner reaches, not its own (ALTER VIEW ... SET (security_invoker = true))',
            datatable_roles.acl_some(p_step.not_invoker), role_name));
    END IF;
    RETURN warnings;
END;
$_$;

ALTER FUNCTION datatable_roles.acl_grant_warnings(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_step datatable_roles.acl_step) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_grants(p_entry datatable_roles.datatable, p_raw jsonb) RETURNS jsonb
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

ALTER FUNCTION datatable_roles.acl_grants(p_entry datatable_roles.datatable, p_raw jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_has_public(p_grants jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $_$
    SELECT coalesce(p_grants @? '$[*] ? (@.public == true)', false)
$_$;

ALTER FUNCTION datatable_roles.acl_has_public(p_grants jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_in_effect(p_action text, p_privileges text[], p_grants jsonb, p_grantor text, p_grantee text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN p_action = 'grant' THEN p_privileges <@ h.held ELSE NOT p_privileges && h.held END
    FROM (
        SELECT ARRAY(
            SELECT e ->> 'privilege' FROM jsonb_array_elements(coalesce(p_grants, '[]'::jsonb)) AS e
            WHERE NOT (e ->> 'public')::boolean AND e ->> 'grantee' = p_grantee
                AND e ->> 'grantor' = p_grantor
        ) AS held
    ) AS h
$$;

ALTER FUNCTION datatable_roles.acl_in_effect(p_action text, p_privileges text[], p_grants jsonb, p_grantor text, p_grantee text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_kind_privileges(p_kind text, p_version integer) RETURNS text[]
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

ALTER FUNCTION datatable_roles.acl_kind_privileges(p_kind text, p_version integer) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_label(p_entry datatable_roles.datatable, p_role text) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE WHEN p_role IN (p_entry.admin_login, 'pg_database_owner') THEN 'admin' ELSE p_role END
$$;

ALTER FUNCTION datatable_roles.acl_label(p_entry datatable_roles.datatable, p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_live_code(p_entry datatable_roles.datatable, p_snapshot jsonb, p_role text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    objects text [];
    detail text;
BEGIN
    SELECT array_agg(l ->> 'object' ORDER BY n),
        string_agg(format('%s: %s; make it inert: %s', l ->> 'object', l ->> 'why', l ->> 'fix'),
            E'\n' ORDER BY n)
    INTO objects, detail
    FROM jsonb_array_elements(p_snapshot -> 'live') WITH ORDINALITY AS e (l, n)
    WHERE l ->> 'owner' <> p_role AND NOT (l ->> 'extension')::boolean
        AND datatable_roles.acl_reachable(p_entry, l ->> 'owner');
    IF objects IS NULL THEN
        RETURN '[]'::jsonb;
    END IF;
    IF p_role = p_entry.admin_login THEN
        RAISE EXCEPTION 'handing this to admin would hand it code that others wrote and that runs as the admin login: %',
            datatable_roles.acl_some(objects)
            USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'live_code',
                  DETAIL = detail,
                  HINT = 'Make each one inert first, as DETAIL says (as its owner), then plan again.';
    END IF;
    RETURN jsonb_build_array(datatable_roles.acl_warning('live_code', format(
        '%s will own code that runs as it, and every login holding it gets what that code can do: %s',
        p_role, replace(detail, E'\n', ' | '))));
END;
$$;

ALTER FUNCTION datatable_roles.acl_live_code(p_entry datatable_roles.datatable, p_snapshot jsonb, p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_note(p_step datatable_roles.acl_step, p_object jsonb, p_name text) RETURNS datatable_roles.acl_step
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    step datatable_roles.acl_step := p_step;
BEGIN
    IF datatable_roles.acl_has_public(p_object -> 'grants') THEN
        step.public_on := step.public_on || p_name;
    END IF;
    IF p_object ->> 'relkind' IN ('r', 'p', 'm', 'f') AND NOT (p_object ->> 'row_security')::boolean THEN
        step.no_rls := step.no_rls || p_name;
    ELSIF p_object ->> 'relkind' = 'v' AND NOT (p_object ->> 'security_invoker')::boolean THEN
        step.not_invoker := step.not_invoker || p_name;
    END IF;
    RETURN step;
END;
$$;

ALTER FUNCTION datatable_roles.acl_note(p_step datatable_roles.acl_step, p_object jsonb, p_name text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_owner_keyword(p_item jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT k.keyword FROM (
        SELECT CASE p_item ->> 'type'
            WHEN 'type' THEN CASE WHEN p_item ->> 'typtype' = 'd' THEN 'DOMAIN' ELSE 'TYPE' END
            WHEN 'composite type' THEN 'TYPE'
            WHEN 'statistics object' THEN 'STATISTICS'
            ELSE upper(p_item ->> 'type') END AS keyword
    ) AS k
    WHERE k.keyword IN ('TABLE', 'VIEW', 'MATERIALIZED VIEW', 'FOREIGN TABLE', 'SEQUENCE',
        'TYPE', 'DOMAIN', 'FUNCTION', 'PROCEDURE', 'AGGREGATE', 'OPERATOR',
        'OPERATOR CLASS', 'OPERATOR FAMILY', 'COLLATION', 'CONVERSION',
        'TEXT SEARCH DICTIONARY', 'TEXT SEARCH CONFIGURATION', 'STATISTICS')
$$;

ALTER FUNCTION datatable_roles.acl_owner_keyword(p_item jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_owner_schema(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) RETURNS datatable_roles.acl_step
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    snap jsonb := p_req.snapshot;
    role_name text := p_req.role_name;
    schema_name text := p_req.target ->> 'schema';
    owner text := snap -> 'schema' ->> 'owner';
    step datatable_roles.acl_step := datatable_roles.acl_empty_step();
    item jsonb;
    keyword text;
BEGIN
    IF role_name <> p_entry.admin_login AND NOT (snap -> 'database' ->> 'subject_create')::boolean THEN
        RAISE EXCEPTION 'role % may not own schema %: it has no CREATE on database %',
            quote_literal(role_name), quote_literal(schema_name), quote_literal(p_entry.dbname)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'PostgreSQL lets a schema pass only to a role that may CREATE in the database. Grant it first (a change of its own, on {"database": true}), or hand the schema to admin.';
    END IF;
    PERFORM datatable_roles.acl_require_reachable(p_entry, 'schema ' || quote_literal(schema_name), owner);
    IF owner <> role_name AND NOT (role_name = p_entry.admin_login AND owner = 'pg_database_owner') THEN
        step.statements := step.statements || format('ALTER SCHEMA %I OWNER TO %I', schema_name, role_name);
    END IF;
    FOR item IN SELECT e FROM jsonb_array_elements(snap -> 'owned') WITH ORDINALITY AS a (e, n) ORDER BY a.n LOOP
        -- An owned sequence follows its table; from PostgreSQL 17 on, a
        -- multirange type follows its range type (15 and 16 alter it apart).
        IF (item ->> 'owner') = role_name OR (item ->> 'follows_table')::boolean
            OR ((item ->> 'follows_type')::boolean AND (snap ->> 'version')::integer >= 170000) THEN
            CONTINUE;
        ELSIF (item ->> 'extension')::boolean THEN
            step.names := step.names || (item ->> 'identity');
            CONTINUE;
        ELSIF (item ->> 'type') IN ('text search parser', 'text search template')
            OR NOT datatable_roles.acl_reachable(p_entry, item ->> 'owner') THEN
            step.skipped := step.skipped || format('%s %s (owner %s)', item ->> 'type',
                item ->> 'identity', item ->> 'owner');
            CONTINUE;
        END IF;
        keyword := datatable_roles.acl_owner_keyword(item);
        IF keyword IS NULL THEN
            step.skipped := step.skipped || format('%s %s (no ALTER ... OWNER TO for it)',
                item ->> 'type', item ->> 'identity');
            CONTINUE;
        END IF;
        -- identity is pg_identify_object's: schema-qualified, every name quoted.
        step.statements := step.statements || format('ALTER %s %s OWNER TO %I', keyword,
            item ->> 'identity', role_name);
    END LOOP;
    IF cardinality(step.names) > 0 THEN
        step.warnings := step.warnings || datatable_roles.acl_warning('extension_member', format(
            'left out, as members of an extension (ALTER EXTENSION ... decides them): %s',
            datatable_roles.acl_some(step.names)));
    END IF;
    RETURN step;
END;
$$;

ALTER FUNCTION datatable_roles.acl_owner_schema(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_owner_table(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) RETURNS text[]
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    rel jsonb := p_req.snapshot -> 'relations' -> 0;
    role_name text := p_req.role_name;
    schema_name text := p_req.target ->> 'schema';
    table_name text := p_req.target ->> 'table';
BEGIN
    IF (rel ->> 'owned_by') IS NOT NULL THEN
        RAISE EXCEPTION 'sequence %.% belongs to %: its owner follows the table''s',
            quote_ident(schema_name), quote_ident(table_name), rel ->> 'owned_by'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Hand over the table instead.';
    END IF;
    PERFORM datatable_roles.acl_require_reachable(p_entry,
        format('%I.%I', schema_name, table_name), rel ->> 'owner');
    IF rel ->> 'owner' = role_name THEN
        RETURN '{}'::text [];
    END IF;
    IF NOT (p_req.snapshot -> 'schema' ->> 'subject_create')::boolean THEN
        RAISE EXCEPTION 'role % may not own %.%: it has no CREATE on schema %',
            quote_literal(role_name), quote_ident(schema_name), quote_ident(table_name),
            quote_literal(schema_name)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'PostgreSQL lets an object pass only to a role that may CREATE in its schema. Grant CREATE on the schema first (a change of its own), or hand the whole schema over.';
    END IF;
    RETURN ARRAY[format('ALTER %s %I.%I OWNER TO %I',
        datatable_roles.acl_relkind_keyword(rel ->> 'relkind'), schema_name, table_name, role_name)];
END;
$$;

ALTER FUNCTION datatable_roles.acl_owner_table(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_owner_warnings(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_step datatable_roles.acl_step) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
DECLARE
    warnings jsonb := p_step.warnings;
    role_name text := p_req.role_name;
    is_table boolean := p_req.target_kind = 'table';
BEGIN
    IF cardinality(p_step.skipped) > 0 THEN
        warnings := warnings || datatable_roles.acl_warning('left_out', format(
            'left out (their owner is neither admin nor a catalog role, or they have no owner to change): %s',
            datatable_roles.acl_some(p_step.skipped)));
    END IF;
    IF role_name <> p_entry.admin_login AND cardinality(p_step.statements) > 0 THEN
        warnings := warnings || datatable_roles.acl_warning('owner_bypasses_rls', format(
            '%s will own what it is handed: an owner bypasses row-level security (unless FORCE ROW LEVEL SECURITY), may alter, drop and grant it, and every login holding %s gets that',
            role_name, role_name));
    END IF;
    IF (p_req.snapshot -> (CASE WHEN is_table THEN 'relations' ELSE 'schema' END))
        @? '$.**.public ? (@ == true)' THEN
        warnings := warnings || datatable_roles.acl_warning('public_grant', format(
            'PUBLIC holds privileges on %s: every role reaches it, whoever owns it',
            CASE WHEN is_table THEN format('%I.%I', p_req.target ->> 'schema', p_req.target ->> 'table')
                ELSE format('schema %I', p_req.target ->> 'schema') END));
    END IF;
    IF cardinality(p_step.statements) = 0 THEN
        warnings := warnings || datatable_roles.acl_warning('nothing_to_do', format(
            '%s owns it all already', datatable_roles.acl_label(p_entry, role_name)));
    END IF;
    RETURN warnings || datatable_roles.acl_live_code(p_entry, p_req.snapshot, role_name);
END;
$_$;

ALTER FUNCTION datatable_roles.acl_owner_warnings(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_step datatable_roles.acl_step) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_path_schemas(p_snapshot jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $_$
    WITH entries AS (
        SELECT btrim(e) AS e
        FROM jsonb_array_elements_text(
            coalesce(p_snapshot -> 'paths', '[]'::jsonb)
            || jsonb_build_array(p_snapshot ->> 'session_search_path')
        ) AS p (path),
            regexp_split_to_table(p.path, ',') AS e
        WHERE p.path IS NOT NULL
    )
    SELECT ARRAY(
        SELECT DISTINCT CASE WHEN e ~ '^".*"$' THEN replace(substr(e, 2, length(e) - 2), '""', '"')
            ELSE lower(e) END
        FROM entries WHERE e <> '' AND e <> '"$user"' AND e <> '$user'
        UNION
        SELECT s FROM jsonb_array_elements_text(p_snapshot -> 'role_schemas') AS s
        WHERE EXISTS (SELECT FROM entries WHERE e IN ('"$user"', '$user'))
    )
$_$;

ALTER FUNCTION datatable_roles.acl_path_schemas(p_snapshot jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_per_owner(p_names text[], p_owners text[]) RETURNS TABLE(owner text, names text[])
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT u.o, array_agg(u.n ORDER BY u.i)
    FROM unnest(p_names, p_owners) WITH ORDINALITY AS u (n, o, i)
    GROUP BY u.o ORDER BY min(u.i)
$$;

ALTER FUNCTION datatable_roles.acl_per_owner(p_names text[], p_owners text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_plan(p_entry datatable_roles.datatable, p_target jsonb, p_change jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    req datatable_roles.acl_request;
BEGIN
    req.target := datatable_roles.acl_target(p_target);
    req.target_kind := datatable_roles.acl_target_kind(req.target);
    SELECT c.action, c.role_name, c.on_what INTO req.action, req.role_name, req.on_what
    FROM datatable_roles.acl_check_change(p_entry, req.target_kind, p_change) AS c;
    req.snapshot := datatable_roles.acl_snapshot(p_entry, req.target, req.role_name);
    IF req.action = 'owner' THEN
        RETURN datatable_roles.acl_plan_owner(p_entry, req, p_change);
    END IF;
    RETURN datatable_roles.acl_plan_grants(p_entry, req, p_change);
END;
$$;

ALTER FUNCTION datatable_roles.acl_plan(p_entry datatable_roles.datatable, p_target jsonb, p_change jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_plan_grants(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    req datatable_roles.acl_request := p_req;
    to_key text := CASE p_req.action WHEN 'grant' THEN 'to' ELSE 'from' END;
    creators text [];
    step datatable_roles.acl_step;
    normalized jsonb;
BEGIN
    req.object_kind := CASE
        WHEN req.on_what = 'target' AND req.target_kind = 'table'
            AND req.snapshot -> 'relations' -> 0 ->> 'relkind' = 'S' THEN 'sequence'
        WHEN req.on_what = 'target' THEN req.target_kind
        WHEN req.on_what IN ('all tables', 'future tables') THEN 'table'
        WHEN req.on_what IN ('all sequences', 'future sequences') THEN 'sequence'
        WHEN req.on_what IN ('all functions', 'future functions') THEN 'function'
        ELSE 'schema' END;
    req.privileges := datatable_roles.acl_check_privileges(p_change -> req.action, req.object_kind,
        (req.snapshot ->> 'version')::integer);
    IF req.action = 'grant' AND req.object_kind = 'database' AND 'CONNECT' = ANY(req.privileges)
        AND req.role_name <> p_entry.admin_login THEN
        RAISE EXCEPTION 'CONNECT is never granted to a catalog role: every login holding % could then connect to %',
            quote_literal(req.role_name), quote_literal(p_entry.dbname)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Logins handed to jobs get CONNECT on their one database from the package itself.';
    END IF;
    IF req.on_what = 'target' THEN
        step := datatable_roles.acl_grant_target(p_entry, req);
    ELSIF starts_with(req.on_what, 'all ') THEN
        step := datatable_roles.acl_grant_all(p_entry, req);
    ELSE
        creators := datatable_roles.acl_creators(p_entry, p_change, req.role_name);
        step := datatable_roles.acl_grant_future(p_entry, req, creators);
    END IF;
    PERFORM datatable_roles.acl_check_run_as(req.snapshot, step.run_as, req.target ->> 'schema');
    IF req.action = 'grant' THEN
        step.warnings := step.warnings || datatable_roles.acl_grant_warnings(p_entry, req, step);
    END IF;
    step.warnings := step.warnings || datatable_roles.acl_change_warnings(p_entry, req, step);
    normalized := jsonb_build_object(req.action, to_jsonb(req.privileges), to_key, p_change -> to_key,
        'on', req.on_what);
    IF starts_with(req.on_what, 'future ') THEN
        normalized := normalized || jsonb_build_object('for', to_jsonb(ARRAY(
            SELECT datatable_roles.acl_label(p_entry, c) FROM unnest(creators) AS c)));
    END IF;
    RETURN datatable_roles.acl_plan_result(p_entry, req, normalized, step);
END;
$$;

ALTER FUNCTION datatable_roles.acl_plan_grants(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_plan_owner(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    step datatable_roles.acl_step := datatable_roles.acl_empty_step();
BEGIN
    IF p_req.target_kind = 'database' THEN
        RAISE EXCEPTION 'the database of a data table stays owned by its admin login'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Hand over a schema or a table instead.';
    END IF;
    IF p_req.target_kind = 'schema' THEN
        step := datatable_roles.acl_owner_schema(p_entry, p_req);
    ELSE
        step.statements := datatable_roles.acl_owner_table(p_entry, p_req);
    END IF;
    step.warnings := datatable_roles.acl_owner_warnings(p_entry, p_req, step);
    -- ALTER ... OWNER TO runs as the link login: it needs both owners' rights.
    step.run_as := array_fill(NULL::text, ARRAY[cardinality(step.statements)]);
    RETURN datatable_roles.acl_plan_result(p_entry, p_req,
        jsonb_build_object('owner', p_change -> 'owner'), step);
END;
$$;

ALTER FUNCTION datatable_roles.acl_plan_owner(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_plan_result(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb, p_step datatable_roles.acl_step) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT jsonb_build_object('datatable', p_entry.workspace || '/' || p_entry.name,
        'target', p_req.target, 'change', p_change, 'statements', to_jsonb(p_step.statements),
        'run_as', to_jsonb(p_step.run_as), 'warnings', p_step.warnings,
        'nothing_to_do', cardinality(p_step.statements) = 0)
$$;

ALTER FUNCTION datatable_roles.acl_plan_result(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb, p_step datatable_roles.acl_step) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_reachable(p_entry datatable_roles.datatable, p_owner text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT p_owner IN (p_entry.admin_login, 'pg_database_owner')
        OR EXISTS (SELECT FROM datatable_roles.catalog_role AS r WHERE r.name = p_owner)
$$;

ALTER FUNCTION datatable_roles.acl_reachable(p_entry datatable_roles.datatable, p_owner text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_relkind_keyword(p_relkind text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE p_relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
        WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END
$$;

ALTER FUNCTION datatable_roles.acl_relkind_keyword(p_relkind text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_relkind_name(p_relkind text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE p_relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table'
        WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table'
        WHEN 'S' THEN 'sequence' END
$$;

ALTER FUNCTION datatable_roles.acl_relkind_name(p_relkind text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_require_reachable(p_entry datatable_roles.datatable, p_object text, p_owner text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    IF NOT datatable_roles.acl_reachable(p_entry, p_owner) THEN
        RAISE EXCEPTION '% is owned by %, which is neither admin nor a catalog role',
            p_object, quote_literal(p_owner)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.acl_require_reachable(p_entry datatable_roles.datatable, p_object text, p_owner text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_role(p_entry datatable_roles.datatable, p_name jsonb, p_key text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.acl_role(p_entry datatable_roles.datatable, p_name jsonb, p_key text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_role_kind(p_entry datatable_roles.datatable, p_role text, p_public boolean) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE WHEN p_public THEN 'PUBLIC'
        WHEN p_role IN (p_entry.admin_login, 'pg_database_owner') THEN 'admin'
        WHEN EXISTS (SELECT FROM datatable_roles.catalog_role AS r WHERE r.name = p_role)
            THEN 'catalog'
        ELSE 'other' END
$$;

ALTER FUNCTION datatable_roles.acl_role_kind(p_entry datatable_roles.datatable, p_role text, p_public boolean) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_runs_as_others(p_privileges text[], p_objects text, p_owner text, p_role text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT coalesce(jsonb_agg(datatable_roles.acl_warning('runs_as_others', m)), '[]'::jsonb)
    FROM (
        SELECT string_agg(x.m, '; ' ORDER BY x.n) AS m
        FROM (
            SELECT 1 AS n, format('TRIGGER on %s lets %s attach triggers: their functions run as whoever writes the table, %s included',
                p_objects, p_role, coalesce('its owner ' || p_owner, 'its owner and the admin login')) AS m
            WHERE 'TRIGGER' = ANY(p_privileges)
            UNION ALL
            SELECT 2, format('MAINTAIN on %s lets %s run VACUUM, ANALYZE, CLUSTER, REINDEX and REFRESH MATERIALIZED VIEW there, which evaluate its index expressions, statistics and a materialized view''s query as %s',
                p_objects, p_role, coalesce('its owner ' || p_owner, 'its owner'))
            WHERE 'MAINTAIN' = ANY(p_privileges)
        ) AS x
    ) AS w
    WHERE w.m IS NOT NULL AND p_objects <> ''
$$;

ALTER FUNCTION datatable_roles.acl_runs_as_others(p_privileges text[], p_objects text, p_owner text, p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_show_command(p_entry datatable_roles.datatable) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT format('datatable-roles acl show %s %s', datatable_roles.shell_word(p_entry.workspace),
        datatable_roles.shell_word(p_entry.name))
$$;

ALTER FUNCTION datatable_roles.acl_show_command(p_entry datatable_roles.datatable) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_snapshot(p_entry datatable_roles.datatable, p_target jsonb, p_subject text) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.acl_snapshot(p_entry datatable_roles.datatable, p_target jsonb, p_subject text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_some(p_names text[]) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT array_to_string(p_names[1:5], ', ')
        || CASE WHEN cardinality(p_names) > 5
            THEN format(' and %s more', cardinality(p_names) - 5) ELSE '' END
$$;

ALTER FUNCTION datatable_roles.acl_some(p_names text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_statement(p_req datatable_roles.acl_request, p_on text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT format(CASE p_req.action WHEN 'grant' THEN 'GRANT %s ON %s TO %I'
        ELSE 'REVOKE %s ON %s FROM %I' END,
        array_to_string(p_req.privileges, ', '), p_on, p_req.role_name)
$$;

ALTER FUNCTION datatable_roles.acl_statement(p_req datatable_roles.acl_request, p_on text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_target(p_target jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.acl_target(p_target jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_target_kind(p_target jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN p_target ? 'database' THEN 'database'
        WHEN p_target ? 'table' THEN 'table' ELSE 'schema' END
$$;

ALTER FUNCTION datatable_roles.acl_target_kind(p_target jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_unreachable(p_entry datatable_roles.datatable, p_what text, p_login text, p_why text, p_state text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.acl_unreachable(p_entry datatable_roles.datatable, p_what text, p_login text, p_why text, p_state text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.acl_warning(p_code text, p_message text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT jsonb_build_object('code', p_code, 'message', p_message)
$$;

ALTER FUNCTION datatable_roles.acl_warning(p_code text, p_message text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.admin_password_refusal(p_label text, p_admin_login text, OUT message text, OUT hint text) RETURNS record
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN p_label IS NULL
            THEN format('the password of admin login %s was changed outside the package',
                quote_literal(p_admin_login))
            ELSE format('data table %s: the password of its admin login %s was changed outside the package',
                p_label, p_admin_login) END,
        'Give the package the admin login''s password again: set_datatable_admin_password(workspace, name, admin_password).'
$$;

ALTER FUNCTION datatable_roles.admin_password_refusal(p_label text, p_admin_login text, OUT message text, OUT hint text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.adopt_admin_password(p_dbname text, p_admin_login text, p_password text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    failure text := datatable_roles.login_fails(p_dbname, p_admin_login, p_password);
    verifier text;
BEGIN
    IF failure IS NOT NULL THEN
        RAISE EXCEPTION 'admin login % could not log in to database % with the password given',
            quote_literal(p_admin_login), quote_literal(p_dbname)
            USING ERRCODE = 'invalid_password', DETAIL = failure,
                  HINT = 'Give the admin login''s current password (pg_hba.conf must let it connect from settings.link_host).';
    END IF;
    verifier := datatable_roles.scram_verifier(p_password, 4096);
    EXECUTE format('ALTER ROLE %I PASSWORD %L', p_admin_login, verifier);
    RETURN verifier;
END;
$$;

ALTER FUNCTION datatable_roles.adopt_admin_password(p_dbname text, p_admin_login text, p_password text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.altered_logins_on_server(p_server text) RETURNS text[]
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

ALTER FUNCTION datatable_roles.altered_logins_on_server(p_server text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.apply_server_changes(p_server text) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.apply_server_changes(p_server text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.become_own_instance() RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    instance uuid := gen_random_uuid();
    grp text;
    link text;
BEGIN
    IF NOT EXISTS (
        SELECT FROM pg_database AS d
        WHERE d.datname = current_database() AND d.datdba = (
            SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user
        )
    ) THEN
        RAISE EXCEPTION 'only the owner of database % can make it an instance of its own',
            quote_ident(current_database())
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    grp := datatable_roles.login_group_name(instance);
    UPDATE datatable_roles.settings SET instance_id = instance;
    EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM PUBLIC', current_database());
    link := datatable_roles.renew_link_login();
    EXECUTE format('CREATE ROLE %I WITH NOLOGIN NOINHERIT', grp);
    UPDATE datatable_roles.settings SET login_group = grp;
    RETURN link;
END;
$$;

ALTER FUNCTION datatable_roles.become_own_instance() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.bind_user_key(p_workspace text, p_username text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    member_incarnation text;
BEGIN
    SELECT m.incarnation INTO member_incarnation
    FROM datatable_roles.require_member(p_workspace, p_username) AS m;
    IF EXISTS (SELECT FROM datatable_roles.user_key_stale(p_workspace, p_username, member_incarnation)) THEN
        PERFORM public.forget_workspace_user(p_workspace, p_username);
    END IF;
    INSERT INTO datatable_roles.tenant_user (workspace, username, incarnation)
    VALUES (p_workspace, p_username, member_incarnation)
    ON CONFLICT ON CONSTRAINT tenant_user_pkey DO NOTHING;
END;
$$;

ALTER FUNCTION datatable_roles.bind_user_key(p_workspace text, p_username text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.check_dbname(p_dbname text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
BEGIN
    PERFORM datatable_roles.require(p_dbname, 'dbname');
    IF p_dbname !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$' THEN
        RAISE EXCEPTION 'invalid database name %', quote_literal(left(p_dbname, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A data table database name is 1 to 63 ASCII letters, digits, ''_'', ''.'' or ''-'' (not first).';
    END IF;
END;
$_$;

ALTER FUNCTION datatable_roles.check_dbname(p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.check_email(p_email text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    PERFORM datatable_roles.require(p_email, 'email');
    IF NOT datatable_roles.email_ok(p_email) THEN
        RAISE EXCEPTION 'invalid email %', quote_literal(left(p_email, 80))
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.check_email(p_email text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.check_name(p_kind text, p_value text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    PERFORM datatable_roles.require(p_value, p_kind);
    IF p_kind IN ('workspace', 'datatable') THEN
        IF NOT datatable_roles.name_ok(p_value, true) THEN
            RAISE EXCEPTION 'invalid % name %', p_kind, quote_literal(left(p_value, 80))
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Use 1 to 255 ASCII letters, digits, ''_'', ''-'' or ''.'' (not first).';
        END IF;
    ELSIF NOT datatable_roles.name_ok(p_value) THEN
        RAISE EXCEPTION 'invalid % name %', p_kind, quote_literal(left(p_value, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use 1 to 255 letters or digits of any script, ''_'', ''-'' or ''.'' (not first); no spaces or control characters.';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.check_name(p_kind text, p_value text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.check_remote_login_name(p_login text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
BEGIN
    IF octet_length(p_login) NOT BETWEEN 1 AND 63 OR strpos(p_login, '$') > 0 THEN
        RAISE EXCEPTION 'invalid login name %', quote_literal(left(p_login, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A login on another server is named with 1 to 63 bytes and no ''$''.';
    END IF;
END;
$_$;

ALTER FUNCTION datatable_roles.check_remote_login_name(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.check_tenant_key(p_key text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    IF p_key IS NULL THEN
        RAISE EXCEPTION 'a tenant key must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_key <> '*' AND NOT (p_key ~ '^[ugf]/' AND datatable_roles.name_ok(substr(p_key, 3))) THEN
        RAISE EXCEPTION 'invalid tenant key %', quote_literal(left(p_key, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A tenant key is u/<username>, g/<group>, f/<folder> or *.';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.check_tenant_key(p_key text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.clear_identity_settings(p_login text, p_dbname text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.clear_identity_settings(p_login text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.clock_now() RETURNS SETOF timestamp with time zone
    LANGUAGE sql STABLE ROWS 1
    AS $$
    SELECT now() + s.clock_offset FROM datatable_roles.settings AS s
$$;

ALTER FUNCTION datatable_roles.clock_now() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.conninfo_for(p_dbname text, p_login text, p_password text) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT format('host=%s port=%s dbname=%s user=%s password=%s',
        datatable_roles.conninfo_value(s.link_host),
        datatable_roles.conninfo_value(current_setting('port')),
        datatable_roles.conninfo_value(p_dbname),
        datatable_roles.conninfo_value(p_login),
        datatable_roles.conninfo_value(p_password))
    FROM datatable_roles.settings AS s
$$;

ALTER FUNCTION datatable_roles.conninfo_for(p_dbname text, p_login text, p_password text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.conninfo_value(p_value text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT '''' || replace(replace(p_value, '\', '\\'), '''', '\''') || ''''
$$;

ALTER FUNCTION datatable_roles.conninfo_value(p_value text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.database_grants_of(p_role text) RETURNS TABLE(datname text)
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

ALTER FUNCTION datatable_roles.database_grants_of(p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.database_key(p_server text, p_dbname text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN p_server = 'local' THEN p_dbname ELSE p_server || '/' || p_dbname END
$$;

ALTER FUNCTION datatable_roles.database_key(p_server text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.databases_holding(p_login text) RETURNS TABLE(datname text, admin_login text)
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

ALTER FUNCTION datatable_roles.databases_holding(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.decide(p_job_id uuid, p_datatable text, p_role text, p_for_migration boolean, p_trace boolean) RETURNS datatable_roles.decision
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    h record;
    candidate record;
    is_admin boolean := false;   -- the result is {admin}
    ids bigint [] := '{}'::bigint [];
    result datatable_roles.decision;
BEGIN
    SELECT c.* INTO h FROM datatable_roles.decide_entry(p_job_id, p_datatable) AS c;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % was never recorded', p_job_id
            USING ERRCODE = 'no_data_found', HINT = 'Call record_job_start when the job starts.';
    END IF;
    IF h.entry_id IS NULL THEN
        RAISE EXCEPTION 'data table % does not exist in workspace %',
            quote_literal(left(p_datatable, 80)), quote_literal(h.job_workspace)
            USING ERRCODE = 'no_data_found';
    END IF;
    result.datatable_id := h.id;
    result.dbname := h.dbname;
    result.server := h.server;
    result.job_workspace := h.job_workspace;
    result.permissioned_as := h.permissioned_as;
    result.viewer_email := h.end_user_email;
    result.is_reference := h.is_reference;
    -- The identity in the governing workspace (identity_in), where a rule or
    -- the trace reads it (R2 reads none). Its own workspace's is what
    -- record_job_start captured, in member_keys' form: that branch of
    -- identity_in, here as a statement of its own, so that a plan with the
    -- other branch is not started for it.
    IF p_role IS NOT NULL OR p_for_migration OR p_trace OR h.default_role <> 'admin' THEN
        IF h.workspace = h.job_workspace THEN
            result.ident_admin := h.is_admin;
            result.ident_keys := array['*', h.permissioned_as]
                || ARRAY(SELECT 'g/' || x FROM unnest(h.groups) AS x)
                || ARRAY(SELECT 'f/' || x FROM unnest(h.folders) AS x);
        ELSE
            SELECT f.is_admin, f.keys INTO result.ident_admin, result.ident_keys
            FROM datatable_roles.identity_in(h.workspace, h.job_workspace, null, null,
                h.email) AS f;
        END IF;
    END IF;

    IF p_role IS NOT NULL THEN
        -- R1 (and R8 when a migration names a role): exactly {R}.
        result.reasons := '{R1}';
        IF p_role = 'admin' THEN
            is_admin := datatable_roles.may_use(result.ident_admin, result.ident_keys, h.admin_tenants);
            result.refused_reason := CASE WHEN is_admin THEN NULL ELSE 'admin_not_tenant' END;
        ELSE
            SELECT r.id, r.enabled, m.tenants, m.role_id IS NOT NULL AS mapped INTO candidate
            FROM datatable_roles.catalog_role AS r
            LEFT JOIN datatable_roles.datatable_role AS m ON m.role_id = r.id AND m.datatable_id = h.id
            WHERE r.name = p_role;
            result.refused_reason := CASE WHEN candidate.id IS NULL OR NOT candidate.mapped THEN 'not_in_map'
                WHEN NOT candidate.enabled THEN 'disabled'
                WHEN NOT datatable_roles.may_use(result.ident_admin, result.ident_keys, candidate.tenants)
                    THEN 'not_tenant' END;
            ids := array[candidate.id];
        END IF;
        result.refused_case := CASE WHEN result.refused_reason IS NOT NULL THEN 'R1' END;
    ELSIF p_for_migration THEN
        -- R8: a migration naming no role runs as admin, when admin may serve.
        result.reasons := '{R8}';
        is_admin := h.default_role = 'admin'
            OR datatable_roles.may_use(result.ident_admin, result.ident_keys, h.admin_tenants);
        result.refused_case := CASE WHEN NOT coalesce(is_admin, false) THEN 'R8' END;
    ELSIF h.default_role = 'admin' THEN
        -- R2, as unnamed_of gives it, without starting that statement's plan
        -- (the hot path).
        result.reasons := '{R2}';
        is_admin := true;
    ELSE
        -- R3/R4 with R9 and R10; R5: never an empty or read-nothing login.
        SELECT u.rules, u.default_id, u.default_enabled, u.default_tenants, u.default_held,
            u.viewer_member, u.viewer_ids, u.held_ids || u.viewer_ids,
            CASE WHEN 'R5' = ANY(u.rules) THEN 'R5' END
        INTO result.reasons, result.default_id, result.default_enabled, result.default_tenants,
            result.default_held, result.viewer_member, result.viewer_ids, ids, result.refused_case
        FROM datatable_roles.unnamed_of(h.id, h.workspace, h.default_role, result.ident_admin,
            result.ident_keys, h.end_user_email) AS u;
    END IF;

    -- R6/R7: the login that holds exactly the result.
    IF result.refused_case IS NULL THEN
        IF is_admin THEN
            result.role_ids := '{}';
            result.role_names := '{admin}';
            result.login_kind := 'admin';
            result.login := h.admin_login;
            result.password := h.admin_password;
        ELSE
            SELECT s.ids, s.names, l.kind, l.login, l.password
            INTO result.role_ids, result.role_names, result.login_kind, result.login, result.password
            FROM datatable_roles.roles_of(ids) AS s
            CROSS JOIN LATERAL datatable_roles.login_of_roles(
                datatable_roles.database_key(h.server, h.dbname), s.ids) AS l;
        END IF;
    END IF;
    RETURN result;
END;
$$;

ALTER FUNCTION datatable_roles.decide(p_job_id uuid, p_datatable text, p_role text, p_for_migration boolean, p_trace boolean) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.decide_entry(p_job_id uuid, p_datatable text) RETURNS TABLE(job_workspace text, permissioned_as text, email text, is_admin boolean, groups text[], folders text[], end_user_email text, entry_id bigint, id bigint, workspace text, dbname text, admin_login text, admin_password text, default_role text, admin_tenants text[], is_reference boolean, server text)
    LANGUAGE sql STABLE
    AS $$
    SELECT j.workspace, j.permissioned_as, j.email, j.is_admin, j.groups, j.folders,
        j.end_user_email, d.id, g.id, g.workspace, g.dbname, g.admin_login, g.admin_password,
        g.default_role, g.admin_tenants, d.governing_id IS NOT NULL, g.server
    FROM datatable_roles.job_perms AS j
    LEFT JOIN datatable_roles.datatable AS d
        ON d.workspace = j.workspace AND d.name = p_datatable
    LEFT JOIN datatable_roles.datatable AS g ON g.id = coalesce(d.governing_id, d.id)
    WHERE j.job_id = p_job_id
$$;

ALTER FUNCTION datatable_roles.decide_entry(p_job_id uuid, p_datatable text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.default_of(p_datatable_id bigint, p_default_role text, p_ident_admin boolean, p_ident_keys text[]) RETURNS TABLE(id bigint, name text, enabled boolean, tenants text[], held boolean, viewer_may_add boolean)
    LANGUAGE sql STABLE
    AS $$
    SELECT c.id, c.name, c.enabled, c.tenants, c.held, EXISTS (
        SELECT FROM datatable_roles.datatable_role AS m
        WHERE m.datatable_id = p_datatable_id AND m.tenants <> '{}'
            AND (m.role_id IS DISTINCT FROM c.id OR NOT c.held)
            AND (SELECT r.enabled FROM datatable_roles.catalog_role AS r WHERE r.id = m.role_id)
    )
    FROM (
        SELECT d.id, d.name, d.enabled, d.tenants, coalesce(d.held, false) AS held
        FROM (SELECT) AS one
        LEFT JOIN (
            SELECT r.id, r.name, r.enabled, m.tenants,
                r.enabled AND datatable_roles.may_use(p_ident_admin, p_ident_keys, m.tenants) AS held
            FROM datatable_roles.catalog_role AS r
            JOIN datatable_roles.datatable_role AS m
                ON m.datatable_id = p_datatable_id AND m.role_id = r.id
            WHERE r.name = p_default_role AND p_default_role <> datatable_roles.no_default()
        ) AS d ON true
        OFFSET 0
    ) AS c
$$;

ALTER FUNCTION datatable_roles.default_of(p_datatable_id bigint, p_default_role text, p_ident_admin boolean, p_ident_keys text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.directory_folders(p_workspace text, p_username text, p_groups text[]) RETURNS SETOF text
    LANGUAGE sql STABLE
    AS $$
    SELECT DISTINCT fa.folder FROM datatable_roles.folder_access AS fa
    WHERE fa.workspace = p_workspace
        AND fa.principal = ANY(('u/' || p_username)
            || ARRAY(SELECT 'g/' || g FROM unnest(p_groups) AS g))
$$;

ALTER FUNCTION datatable_roles.directory_folders(p_workspace text, p_username text, p_groups text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.directory_folders_among(p_workspace text, p_username text, p_groups text[], p_folders text[]) RETURNS SETOF text
    LANGUAGE sql STABLE
    AS $$
    SELECT n.folder
    FROM unnest(p_folders) AS n (folder)
    CROSS JOIN LATERAL (
        SELECT FROM datatable_roles.folder_access AS fa
        WHERE fa.workspace = p_workspace AND fa.folder = n.folder
            AND fa.principal = ANY(('u/' || p_username)
                || ARRAY(SELECT 'g/' || g FROM unnest(p_groups) AS g))
        LIMIT 1
    ) AS reached
$$;

ALTER FUNCTION datatable_roles.directory_folders_among(p_workspace text, p_username text, p_groups text[], p_folders text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.directory_groups(p_workspace text, p_username text, p_email text) RETURNS SETOF text
    LANGUAGE sql STABLE
    AS $$
    SELECT gm.group_name FROM datatable_roles.group_member AS gm
    WHERE gm.workspace = p_workspace AND gm.username = p_username
$$;

ALTER FUNCTION datatable_roles.directory_groups(p_workspace text, p_username text, p_email text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.directory_in_group(p_workspace text, p_username text, p_email text, p_group text) RETURNS SETOF boolean
    LANGUAGE sql STABLE ROWS 1
    AS $$
    SELECT true FROM datatable_roles.group_member AS gm
    WHERE gm.workspace = p_workspace AND gm.group_name = p_group
        AND gm.username = p_username
$$;

ALTER FUNCTION datatable_roles.directory_in_group(p_workspace text, p_username text, p_email text, p_group text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.directory_member(p_workspace text, p_username text) RETURNS TABLE(username text, email text, is_admin boolean, incarnation text)
    LANGUAGE sql STABLE
    AS $$
    SELECT u.username, u.email, u.is_admin, u.incarnation::text
    FROM datatable_roles.workspace_user AS u
    WHERE u.workspace = p_workspace AND u.username = p_username
$$;

ALTER FUNCTION datatable_roles.directory_member(p_workspace text, p_username text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.directory_member_by_email(p_workspace text, p_email text) RETURNS TABLE(username text, email text, is_admin boolean, incarnation text)
    LANGUAGE sql STABLE
    AS $$
    SELECT u.username, u.email, u.is_admin, u.incarnation::text
    FROM datatable_roles.workspace_user AS u
    WHERE u.workspace = p_workspace AND lower(u.email) = lower(p_email)
$$;

ALTER FUNCTION datatable_roles.directory_member_by_email(p_workspace text, p_email text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.directory_reaches_folder(p_workspace text, p_username text, p_email text, p_folder text) RETURNS SETOF boolean
    LANGUAGE sql STABLE ROWS 1
    AS $$
    SELECT true WHERE EXISTS (
        SELECT FROM datatable_roles.folder_access AS fa
        WHERE fa.workspace = p_workspace AND fa.folder = p_folder
            AND (fa.principal = 'u/' || p_username
                OR starts_with(fa.principal, 'g/') AND EXISTS (
                    SELECT FROM datatable_roles.directory_in_group(
                        p_workspace, p_username, p_email, substr(fa.principal, 3))))
    )
$$;

ALTER FUNCTION datatable_roles.directory_reaches_folder(p_workspace text, p_username text, p_email text, p_folder text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.directory_workspace_exists(p_workspace text) RETURNS SETOF boolean
    LANGUAGE sql STABLE ROWS 1
    AS $$
    SELECT true FROM datatable_roles.workspace AS w WHERE w.name = p_workspace
$$;

ALTER FUNCTION datatable_roles.directory_workspace_exists(p_workspace text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.disable_login(p_login text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.disable_login(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.drop_login(p_login text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    IF datatable_roles.guard_changes_roles() THEN
        PERFORM datatable_roles_guard.drop_login(p_login);
    ELSE
        PERFORM datatable_roles.exec_on_login(p_login, format('DROP ROLE %I', p_login));
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.drop_login(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.drop_role_on_servers(p_role_id bigint, p_name text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.drop_role_on_servers(p_role_id bigint, p_name text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.email_ok(p_email text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    SELECT octet_length(p_email) <= 320 AND p_email ~ '^[^[:space:]@]+@[^[:space:]@]+$'
$_$;

ALTER FUNCTION datatable_roles.email_ok(p_email text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.end_sessions_of(p_login text) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.end_sessions_of(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.end_stray_sessions() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.end_stray_sessions() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.ensure_login_keeper(p_login text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.ensure_login_keeper(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.ensure_role_on_server(p_server text, p_role_id bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.ensure_role_on_server(p_server text, p_role_id bigint) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.ensure_set_login(p_dbname text, p_role_ids bigint[], p_server text DEFAULT 'local'::text, OUT login text, OUT password text) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.ensure_set_login(p_dbname text, p_role_ids bigint[], p_server text, OUT login text, OUT password text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.exec_as_login_on(p_server text, p_dbname text, p_login text, p_password text, p_statement text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.session_exec(
        datatable_roles.server_session_open(p_server, p_dbname, p_login, p_password), p_statement);
    PERFORM datatable_roles.session_close('datatable_roles_server');
END;
$$;

ALTER FUNCTION datatable_roles.exec_as_login_on(p_server text, p_dbname text, p_login text, p_password text, p_statement text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.exec_as_manager(p_server text, p_statement text, p_dbname text DEFAULT NULL::text) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT datatable_roles.on_manager_session(p_server, p_statement, p_dbname, false);
$$;

ALTER FUNCTION datatable_roles.exec_as_manager(p_server text, p_statement text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.exec_change(p_server text, p_dbname text, p_statement text, p_as_admin boolean) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.exec_change(p_server text, p_dbname text, p_statement text, p_as_admin boolean) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.exec_in_database(p_dbname text, p_sql text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.link_session_open('datatable_roles_link', p_dbname);
    PERFORM datatable_roles.session_exec('datatable_roles_link',
        'SET search_path = pg_catalog, pg_temp; ' || p_sql);
    PERFORM datatable_roles.session_close('datatable_roles_link');
END;
$$;

ALTER FUNCTION datatable_roles.exec_in_database(p_dbname text, p_sql text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.exec_on_login(p_login text, p_statement text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.exec_on_login(p_login text, p_statement text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.explain_steps(d datatable_roles.decision, p_role text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    g datatable_roles.datatable;
    steps jsonb;
    code text;
BEGIN
    SELECT e.* INTO g FROM datatable_roles.datatable AS e WHERE e.id = d.datatable_id;
    steps := jsonb_build_array(jsonb_build_object(
        'step', 'identity', 'permissioned_as', d.permissioned_as,
        'governing', format('%s/%s', g.workspace, g.name), 'reference', d.is_reference,
        'workspace_admin', d.ident_admin, 'keys', to_jsonb(d.ident_keys),
        'memberships', CASE WHEN g.workspace = d.job_workspace THEN 'captured at job start'
            ELSE 'current, in the governing workspace' END));
    FOREACH code IN ARRAY d.reasons LOOP
        steps := steps || CASE code
            WHEN 'R1' THEN jsonb_build_object('step', 'named role', 'rule', 'R1', 'role', p_role,
                'usable', d.refused_case IS DISTINCT FROM 'R1')
            WHEN 'R8' THEN jsonb_build_object('step', 'migration', 'rule', 'R8',
                'admin', d.refused_case IS DISTINCT FROM 'R8')
            WHEN 'R2' THEN jsonb_build_object('step', 'default', 'rule', 'R2', 'default', 'admin',
                'gives', 'admin', 'why', 'a default of admin is used as is: no tenant check, no viewer lookup')
            WHEN 'R3' THEN jsonb_build_object('step', 'default', 'rule', 'R3',
                'default', g.default_role, 'gives', CASE WHEN d.default_held THEN g.default_role END,
                'why', CASE
                    WHEN d.default_id IS NULL THEN 'the default is not in the role map'
                    WHEN NOT d.default_enabled THEN 'the default role is disabled'
                    WHEN d.ident_admin THEN 'the job identity is a workspace admin'
                    WHEN d.default_held THEN 'the identity is named by ' || array_to_string(ARRAY(
                        SELECT unnest(d.default_tenants) INTERSECT SELECT unnest(d.ident_keys) ORDER BY 1), ', ')
                    ELSE 'the job identity is not a tenant of the default role' END)
            WHEN 'R4' THEN jsonb_build_object('step', 'default', 'rule', 'R4', 'default', NULL,
                'gives', NULL, 'why', 'the data table has no default role')
            WHEN 'R10' THEN jsonb_build_object('step', 'viewer', 'rule', 'R10',
                'why', 'no viewer could add a role here (only the default and admin have tenants): the viewer is not looked up')
            WHEN 'R3/R4' THEN datatable_roles.explain_viewer(d, g)
            WHEN 'R9' THEN datatable_roles.explain_viewer(d, g)
            ELSE '[]'::jsonb END;
    END LOOP;
    RETURN steps;
END;
$$;

ALTER FUNCTION datatable_roles.explain_steps(d datatable_roles.decision, p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.explain_viewer(d datatable_roles.decision, g datatable_roles.datatable) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('step', 'viewer', 'rule', CASE WHEN d.viewer_member THEN 'R3/R4' ELSE 'R9' END,
        'viewer', d.viewer_email, 'member', d.viewer_member,
        'why', CASE
            WHEN d.viewer_email IS NULL THEN 'no viewer was recorded for this job'
            WHEN NOT d.viewer_member THEN 'the viewer is not a member of the governing workspace (or is disabled, or shares the email with another member)'
            ELSE 'tenant lists naming the viewer' END,
        'roles', coalesce((
            SELECT jsonb_agg(jsonb_build_object('role', r.name, 'named_by', to_jsonb(ARRAY(
                SELECT unnest(m.tenants) INTERSECT SELECT unnest(k.keys) ORDER BY 1)))
                ORDER BY r.name)
            FROM datatable_roles.datatable_role AS m
            JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
            WHERE m.datatable_id = g.id AND m.role_id = ANY(d.viewer_ids)), '[]'))
    FROM (
        SELECT CASE WHEN d.viewer_member THEN (
            SELECT datatable_roles.member_keys(g.workspace, v.username, v.email, v.incarnation)
            FROM datatable_roles.directory_member_by_email(g.workspace, d.viewer_email) AS v
        ) END AS keys
    ) AS k
$$;

ALTER FUNCTION datatable_roles.explain_viewer(d datatable_roles.decision, g datatable_roles.datatable) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.fault_point(p_point text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    IF current_setting('datatable_roles.fault', true) IS DISTINCT FROM p_point THEN
        RETURN;
    END IF;
    IF current_setting('datatable_roles.fault_action', true) = 'wait' THEN
        PERFORM pg_advisory_lock(hashtextextended('datatable_roles.fault', 0));
        PERFORM pg_advisory_unlock(hashtextextended('datatable_roles.fault', 0));
    ELSE
        RAISE EXCEPTION 'fault injected at %', p_point USING ERRCODE = 'internal_error';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.fault_point(p_point text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.grant_acl_editor(p_role text) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT datatable_roles.grant_calls(p_role, 'acl')
$$;

ALTER FUNCTION datatable_roles.grant_acl_editor(p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.grant_calls(p_role text, p_kind text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    calls text;
BEGIN
    PERFORM datatable_roles.require(p_role, 'role');
    IF p_kind IS NULL OR p_kind NOT IN ('worker', 'directory', 'acl') THEN
        RAISE EXCEPTION 'invalid kind of calls %', quote_literal(left(p_kind, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Use worker, directory or acl.';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = p_role) THEN
        RAISE EXCEPTION 'role % does not exist', quote_literal(left(p_role, 80))
            USING ERRCODE = 'no_data_found';
    END IF;
    -- Exactly the entry points of the kind (api/95-97), in one statement.
    SELECT string_agg(e.signature, ', ' ORDER BY e.signature) INTO calls
    FROM datatable_roles.entry_point AS e WHERE e.caller = p_kind;
    IF calls IS NULL THEN  -- only before the post-apply hook has loaded the api files
        RAISE EXCEPTION 'no % calls are recorded', p_kind
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run datatable-roles migrate as the package owner.';
    END IF;
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', calls, p_role);
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), p_role);
    INSERT INTO datatable_roles.worker_role (name, kind) VALUES (p_role, p_kind)
    ON CONFLICT DO NOTHING;
END;
$$;

ALTER FUNCTION datatable_roles.grant_calls(p_role text, p_kind text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.grant_directory_writer(p_writer text) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT datatable_roles.grant_calls(p_writer, 'directory')
$$;

ALTER FUNCTION datatable_roles.grant_directory_writer(p_writer text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.grant_worker(p_worker text) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT datatable_roles.grant_calls(p_worker, 'worker')
$$;

ALTER FUNCTION datatable_roles.grant_worker(p_worker text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.guard_changes_roles() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT datatable_roles.pg16_or_later()
        AND to_regprocedure('datatable_roles_guard.drop_login(text)') IS NOT NULL
$$;

ALTER FUNCTION datatable_roles.guard_changes_roles() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.has_identity_setting(p_login text) RETURNS boolean
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

ALTER FUNCTION datatable_roles.has_identity_setting(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.heal_altered_far_logins(p_skip jsonb) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.heal_altered_far_logins(p_skip jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.heal_set_login(p_login text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.heal_set_login(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.hmac_keys(p_key bytea, OUT inner_key bytea, OUT outer_key bytea) RETURNS record
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT
        decode(string_agg(lpad(to_hex(w.word # 3906369333256140342), 16, '0'), '' ORDER BY w.j), 'hex'),
        decode(string_agg(lpad(to_hex(w.word # 6655295901103053916), 16, '0'), '' ORDER BY w.j), 'hex')
    FROM (
        SELECT CASE WHEN length(p_key) > 64 THEN sha256(p_key) ELSE p_key END AS k
    ) AS x
    CROSS JOIN LATERAL (
        SELECT j, ('x' || encode(substring(x.k || decode(repeat('00', 64 - length(x.k)), 'hex')
            FROM 1 + 8 * j FOR 8), 'hex'))::bit(64)::bigint AS word
        FROM generate_series(0, 7) AS j
    ) AS w
$$;

ALTER FUNCTION datatable_roles.hmac_keys(p_key bytea, OUT inner_key bytea, OUT outer_key bytea) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.hmac_sha256(p_key bytea, p_message bytea) RETURNS bytea
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT sha256(h.outer_key || sha256(h.inner_key || p_message))
    FROM datatable_roles.hmac_keys(p_key) AS h
$$;

ALTER FUNCTION datatable_roles.hmac_sha256(p_key bytea, p_message bytea) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.identity_in(p_workspace text, p_own_workspace text, p_own_admin boolean, p_own_keys text[], p_email text) RETURNS TABLE(is_admin boolean, keys text[])
    LANGUAGE sql STABLE
    AS $$
    SELECT p_own_admin, p_own_keys
    WHERE p_workspace = p_own_workspace
    UNION ALL
    SELECT m.username IS NOT NULL AND m.is_admin,
        CASE WHEN m.username IS NULL THEN '{}'::text [] ELSE datatable_roles.member_keys(
            p_workspace, m.username, m.email, m.incarnation) END
    FROM (SELECT) AS one
    LEFT JOIN datatable_roles.directory_member_by_email(p_workspace, p_email) AS m ON true
    WHERE p_workspace <> p_own_workspace
$$;

ALTER FUNCTION datatable_roles.identity_in(p_workspace text, p_own_workspace text, p_own_admin boolean, p_own_keys text[], p_email text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.is_sweepable(p_last_used_at timestamp with time zone, p_password text, p_dbname text, p_role_ids bigint[], p_cutoff timestamp with time zone, p_server text DEFAULT 'local'::text) RETURNS SETOF boolean
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

ALTER FUNCTION datatable_roles.is_sweepable(p_last_used_at timestamp with time zone, p_password text, p_dbname text, p_role_ids bigint[], p_cutoff timestamp with time zone, p_server text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.job_viewer(p_workspace text, p_origin text, p_caller_email text, p_token_job_id uuid) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    viewer text;
    parent datatable_roles.job_perms;
BEGIN
    IF p_origin NOT IN ('app', 'run', 'preview', 'job_token', 'schedule', 'trigger', 'agent_tool') THEN
        RAISE EXCEPTION 'invalid origin %', quote_literal(left(p_origin, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use app, run, preview, job_token, schedule, trigger or agent_tool.';
    END IF;
    IF p_token_job_id IS NOT NULL AND p_origin <> 'job_token' THEN
        RAISE EXCEPTION 'token_job_id is only for origin job_token'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_caller_email IS NOT NULL
        AND p_origin NOT IN ('app', 'run', 'preview') THEN
        RAISE EXCEPTION 'a % job has no caller: caller_email must be NULL', p_origin
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    CASE p_origin
        WHEN 'app' THEN
            IF p_caller_email IS NOT NULL THEN
                PERFORM datatable_roles.check_email(p_caller_email);
            END IF;
            viewer := p_caller_email;
        WHEN 'run', 'preview' THEN
            PERFORM datatable_roles.check_email(p_caller_email);
            viewer := p_caller_email;
        WHEN 'job_token' THEN
            PERFORM datatable_roles.require(p_token_job_id, 'token_job_id');
            SELECT p.* INTO parent FROM datatable_roles.job_perms AS p
            WHERE p.job_id = p_token_job_id;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'job % behind the token was never recorded', p_token_job_id
                    USING ERRCODE = 'no_data_found';
            END IF;
            IF parent.workspace <> p_workspace THEN
                RAISE EXCEPTION 'job % behind the token belongs to another workspace', p_token_job_id
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            viewer := parent.end_user_email;
        ELSE
            viewer := NULL;
    END CASE;

    IF viewer IS NOT NULL AND NOT EXISTS (
        SELECT FROM datatable_roles.directory_member_by_email(p_workspace, viewer)
    ) THEN
        -- Recorded as given (the viewer of a data table another workspace
        -- governs is looked up there); explain would show it only later.
        RAISE NOTICE 'the viewer % is not a member of workspace %: viewer roles of its data tables will not apply',
            quote_literal(left(viewer, 80)), quote_literal(p_workspace)
            USING HINT = 'A viewer is found by email (any case); a disabled member, or an email two members share, names no one.';
    END IF;
    RETURN viewer;
END;
$$;

ALTER FUNCTION datatable_roles.job_viewer(p_workspace text, p_origin text, p_caller_email text, p_token_job_id uuid) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.kept_session_name(p_server text) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT format('datatable_roles_manager %s %s', sv.name, sv.xmin)
    FROM datatable_roles.server AS sv
    WHERE sv.name = p_server
$$;

ALTER FUNCTION datatable_roles.kept_session_name(p_server text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.key_names_member(p_workspace text, p_key text, p_username text, p_email text, p_incarnation text) RETURNS SETOF boolean
    LANGUAGE sql STABLE ROWS 1
    AS $$
    SELECT true WHERE p_key = '*'
        OR p_key = 'u/' || p_username AND NOT EXISTS (
            SELECT FROM datatable_roles.user_key_stale(p_workspace, p_username, p_incarnation))
        OR starts_with(p_key, 'g/') AND EXISTS (
            SELECT FROM datatable_roles.directory_in_group(
                p_workspace, p_username, p_email, substr(p_key, 3)))
        OR starts_with(p_key, 'f/') AND EXISTS (
            SELECT FROM datatable_roles.directory_reaches_folder(
                p_workspace, p_username, p_email, substr(p_key, 3)))
$$;

ALTER FUNCTION datatable_roles.key_names_member(p_workspace text, p_key text, p_username text, p_email text, p_incarnation text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.link_holds(p_role text) RETURNS boolean
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

ALTER FUNCTION datatable_roles.link_holds(p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.link_login() RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT c.login FROM datatable_roles.link_credential AS c
$$;

ALTER FUNCTION datatable_roles.link_login() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.link_login_fails(p_dbname text) RETURNS text
    LANGUAGE sql
    AS $$
    SELECT datatable_roles.login_fails(p_dbname, c.login, c.password)
    FROM datatable_roles.link_credential AS c
$$;

ALTER FUNCTION datatable_roles.link_login_fails(p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.link_session_open(p_name text, p_dbname text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    link datatable_roles.link_credential;
BEGIN
    SELECT c.* INTO link FROM datatable_roles.link_credential AS c FOR SHARE;
    RETURN datatable_roles.session_open(p_name, p_dbname, link.login, link.password);
END;
$$;

ALTER FUNCTION datatable_roles.link_session_open(p_name text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.live_set_login(p_login text) RETURNS TABLE(password text, last_used_at timestamp with time zone)
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

ALTER FUNCTION datatable_roles.live_set_login(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.lock_database_access(p_dbname text) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT pg_catalog.pg_advisory_xact_lock(1262, pg_catalog.hashtext(p_dbname))
$$;

ALTER FUNCTION datatable_roles.lock_database_access(p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.lock_roles_still_usable(p_dbname text, p_role_ids bigint[], p_server text DEFAULT 'local'::text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.lock_roles_still_usable(p_dbname text, p_role_ids bigint[], p_server text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.lock_set_login(p_login text) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('datatable_roles.set_login:' || p_login, 0))
$$;

ALTER FUNCTION datatable_roles.lock_set_login(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.login_fails(p_dbname text, p_login text, p_password text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    RETURN datatable_roles.login_fails_on('local', p_dbname, p_login, p_password);
END;
$$;

ALTER FUNCTION datatable_roles.login_fails(p_dbname text, p_login text, p_password text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.login_fails_on(p_server text, p_dbname text, p_login text, p_password text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.login_fails_on(p_server text, p_dbname text, p_login text, p_password text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.login_group() RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT s.login_group FROM datatable_roles.settings AS s
$$;

ALTER FUNCTION datatable_roles.login_group() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.login_group_name(p_instance uuid) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT 'dtr_logins_' || left(replace(p_instance::text, '-', ''), 20)
$$;

ALTER FUNCTION datatable_roles.login_group_name(p_instance uuid) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.login_intact(p_login text, p_dbname text) RETURNS SETOF boolean
    LANGUAGE sql STABLE ROWS 1
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

ALTER FUNCTION datatable_roles.login_intact(p_login text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.login_keeper(p_login text) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT datatable_roles.login_group() || '_k' || substr(p_login, 8, 2)
$$;

ALTER FUNCTION datatable_roles.login_keeper(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.login_of_roles(p_dbname text, p_role_ids bigint[]) RETURNS TABLE(kind text, login text, password text)
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE WHEN cardinality(p_role_ids) = 1 THEN 'role' ELSE 'set' END, n.login,
        (SELECT u.password FROM datatable_roles.usable_set_login(n.login) AS u)
    FROM (
        SELECT datatable_roles.set_login_named(s.instance_id, p_dbname, p_role_ids) AS login
        FROM datatable_roles.settings AS s
    ) AS n
$$;

ALTER FUNCTION datatable_roles.login_of_roles(p_dbname text, p_role_ids bigint[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.login_settings_elsewhere(p_login text, p_dbname text) RETURNS SETOF boolean
    LANGUAGE sql STABLE ROWS 1
    AS $$
    SELECT true
    FROM pg_catalog.pg_db_role_setting AS rs
    JOIN pg_catalog.pg_roles AS pr ON pr.oid = rs.setrole
    LEFT JOIN pg_catalog.pg_database AS pd ON pd.oid = rs.setdatabase
    WHERE pr.rolname = p_login AND rs.setdatabase <> 0 AND pd.datname IS DISTINCT FROM p_dbname
    LIMIT 1
$$;

ALTER FUNCTION datatable_roles.login_settings_elsewhere(p_login text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.make_login(p_login text, p_dbname text, p_role_ids bigint[], p_server text DEFAULT 'local'::text, OUT password text, OUT verifier text) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.make_login(p_login text, p_dbname text, p_role_ids bigint[], p_server text, OUT password text, OUT verifier text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.make_login_on_server(p_server text, p_login text, p_dbname text, p_names text[], p_verifier text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.make_login_on_server(p_server text, p_login text, p_dbname text, p_names text[], p_verifier text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.may_use(p_ident_admin boolean, p_ident_keys text[], p_tenants text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT p_ident_admin OR p_tenants && p_ident_keys
$$;

ALTER FUNCTION datatable_roles.may_use(p_ident_admin boolean, p_ident_keys text[], p_tenants text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.member_keys(p_workspace text, p_username text) RETURNS text[]
    LANGUAGE sql STABLE
    AS $$
    SELECT datatable_roles.member_keys(p_workspace, m.username, m.email, m.incarnation)
    FROM datatable_roles.directory_member(p_workspace, p_username) AS m
$$;

ALTER FUNCTION datatable_roles.member_keys(p_workspace text, p_username text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.member_keys(p_workspace text, p_username text, p_email text, p_incarnation text) RETURNS text[]
    LANGUAGE sql STABLE
    AS $$
    SELECT array['*']
        || CASE WHEN NOT EXISTS (
            SELECT FROM datatable_roles.user_key_stale(p_workspace, p_username, p_incarnation)
        ) THEN array['u/' || p_username] ELSE '{}' END
        || ARRAY(SELECT 'g/' || g FROM unnest(grp.groups) AS g)
        || ARRAY(
            SELECT 'f/' || f
            FROM datatable_roles.directory_folders(p_workspace, p_username, grp.groups) AS f
            ORDER BY f
        )
    FROM (
        SELECT ARRAY(
            SELECT g FROM datatable_roles.directory_groups(p_workspace, p_username, p_email) AS g
            ORDER BY g
        ) AS groups
        OFFSET 0
    ) AS grp
$$;

ALTER FUNCTION datatable_roles.member_keys(p_workspace text, p_username text, p_email text, p_incarnation text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.membership_statement(p_roles text[], p_admin text, p_grant boolean) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.membership_statement(p_roles text[], p_admin text, p_grant boolean) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.move_objects_of(p_login text) RETURNS text[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.move_objects_of(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.move_statement(p_victim text, p_heir text) RETURNS text
    LANGUAGE sql STABLE
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.move_statement(p_victim text, p_heir text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.name_ok(p_value text, p_ascii boolean DEFAULT false) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    SELECT CASE WHEN p_ascii THEN p_value ~ '^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,254}$'
        ELSE p_value ~ '^[^.].{0,254}$'
            AND p_value ~ '^[A-Za-z0-9_.\-\u00a1-\u00ac\u00ae-\u167f\u1681-\u180d\u180f-\u1fff\u2010-\u2027\u2030-\u205e\u2070-\u2fff\u3001-\ud7ff\ue000-\ufefe\uff00-\uffef\U00010000-\U0010ffff]+$'
    END
$_$;

ALTER FUNCTION datatable_roles.name_ok(p_value text, p_ascii boolean) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.nearest_name(p_name text, p_names text[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    a text := lower(left(p_name, 80));
    b text;
    candidate text;
    best text;
    best_distance integer := 3;
    prev integer [];
    cur integer [];
    i integer;
    j integer;
BEGIN
    FOREACH candidate IN ARRAY coalesce(p_names, '{}') LOOP
        b := lower(left(candidate, 80));
        IF a = b THEN
            cur := array[0];
        ELSIF starts_with(b, a) OR starts_with(a, b) THEN
            cur := array[1];  -- a prefix counts as near
        ELSE
            prev := ARRAY(SELECT generate_series(0, length(b)));
            FOR i IN 1..length(a) LOOP
                cur := array[i];
                FOR j IN 1..length(b) LOOP
                    cur := cur || least(prev[j + 1] + 1, cur[j] + 1,
                        prev[j] + CASE WHEN substr(a, i, 1) = substr(b, j, 1) THEN 0 ELSE 1 END);
                END LOOP;
                prev := cur;
            END LOOP;
            cur := array[prev[length(b) + 1]];
        END IF;
        IF cur[1] < best_distance THEN
            best_distance := cur[1];
            best := candidate;
        END IF;
    END LOOP;
    RETURN best;
END;
$$;

ALTER FUNCTION datatable_roles.nearest_name(p_name text, p_names text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.new_password() RETURNS text
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
    SELECT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
$$;

ALTER FUNCTION datatable_roles.new_password() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.no_default() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '*none*'::text;

ALTER FUNCTION datatable_roles.no_default() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.note_folder_key(p_workspace text, p_folder text) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO datatable_roles.tenant_folder (workspace, folder)
    VALUES (p_workspace, p_folder)
    ON CONFLICT ON CONSTRAINT tenant_folder_pkey DO NOTHING
$$;

ALTER FUNCTION datatable_roles.note_folder_key(p_workspace text, p_folder text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.on_manager_session(p_server text, p_sql text, p_dbname text, p_value boolean) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.on_manager_session(p_server text, p_sql text, p_dbname text, p_value boolean) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.one_role_heir(p_login text, p_dbname text) RETURNS text
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

ALTER FUNCTION datatable_roles.one_role_heir(p_login text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.pg16_or_later() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT current_setting('server_version_num')::integer >= 160000
$$;

ALTER FUNCTION datatable_roles.pg16_or_later() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.pgbouncer_userlist(p_dbname text DEFAULT NULL::text) RETURNS SETOF text
    LANGUAGE sql STABLE
    AS $$
    SELECT format('"%s" "%s"', s.login, s.verifier)
    FROM datatable_roles.datatable_role_set AS s
    WHERE s.password <> '' AND s.verifier IS NOT NULL
        AND (p_dbname IS NULL OR s.dbname = p_dbname)
    ORDER BY s.login
$$;

ALTER FUNCTION datatable_roles.pgbouncer_userlist(p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.preview_note(p_note jsonb) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT set_config('datatable_roles.preview_notes',
        (coalesce(nullif(current_setting('datatable_roles.preview_notes', true), ''), '[]')::jsonb
            || jsonb_build_array(p_note))::text, true)
$$;

ALTER FUNCTION datatable_roles.preview_note(p_note jsonb) OWNER TO dtr_owner;

CREATE TABLE datatable_roles.catalog_role (
    id bigint NOT NULL,
    name text NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE datatable_roles.catalog_role OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.preview_report(p_kind text, p_target datatable_roles.catalog_role, p_entry datatable_roles.datatable, p_notes jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    report jsonb;
BEGIN
    report := jsonb_build_object('change', p_kind, 'role', p_target.name);
    IF p_kind = 'remove' THEN
        report := report || jsonb_build_object('workspace', p_entry.workspace,
            'datatable', p_entry.name);
    END IF;

    -- The data tables: the one a removal edits; every map holding the role for
    -- a disable or a drop; none for a retirement, which edits no map.
    report := report || jsonb_build_object('datatables', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'workspace', d.workspace, 'name', d.name, 'dbname', d.dbname,
            'default', d.default_role = p_target.name,
            'references', to_jsonb(ARRAY(
                SELECT x.workspace || '/' || x.name FROM datatable_roles.datatable AS x
                WHERE x.governing_id = d.id ORDER BY 1)))
            ORDER BY d.workspace, d.name)
        FROM datatable_roles.datatable AS d
        JOIN datatable_roles.datatable_role AS m ON m.datatable_id = d.id AND m.role_id = p_target.id
        WHERE p_kind IN ('disable', 'drop') OR p_kind = 'remove' AND d.id = p_entry.id), '[]'));

    -- The logins the change retires, in its order, each with its sessions.
    report := report || jsonb_build_object('logins', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'login', n.note ->> 'retires', 'dbname', s.dbname, 'server', s.server,
            'roles', to_jsonb(ARRAY(
                SELECT coalesce(r.name, '#' || u.role_id || ' (dropped)')
                FROM unnest(s.role_ids) AS u (role_id)
                LEFT JOIN datatable_roles.catalog_role AS r ON r.id = u.role_id
                ORDER BY coalesce(r.name, '#' || u.role_id || ' (dropped)') COLLATE "C")),
            'live', (n.note ->> 'live')::boolean,
            'pids', coalesce((
                SELECT jsonb_agg(p.pid ORDER BY p.pid::integer)
                FROM jsonb_array_elements(p_notes) AS e (note)
                CROSS JOIN LATERAL jsonb_array_elements(e.note -> 'pids') AS p (pid)
                WHERE e.note ->> 'sessions_of' = n.note ->> 'retires'), '[]'))
            ORDER BY n.i)
        FROM jsonb_array_elements(p_notes) WITH ORDINALITY AS n (note, i)
        LEFT JOIN datatable_roles.datatable_role_set AS s ON s.login = n.note ->> 'retires'
        WHERE n.note ? 'retires'), '[]'));
    report := report || jsonb_build_object('retired', (
        SELECT count(*) FROM jsonb_array_elements(report -> 'logins') AS l (login)
        WHERE (l.login ->> 'live')::boolean));
    IF p_kind = 'drop' THEN
        report := report || jsonb_build_object(
            'role_sessions', coalesce((
                SELECT jsonb_agg(p.pid ORDER BY p.pid::integer)
                FROM jsonb_array_elements(p_notes) AS e (note)
                CROSS JOIN LATERAL jsonb_array_elements(e.note -> 'pids') AS p (pid)
                WHERE e.note ->> 'sessions_of' = p_target.name), '[]'),
            'objects_in', coalesce((
                SELECT jsonb_agg(jsonb_build_object('dbname', h.datname, 'moved_to', h.admin_login)
                    ORDER BY h.datname)
                FROM datatable_roles.databases_holding(p_target.name) AS h), '[]'));
    END IF;
    -- What it would send to other servers (their sessions are not read: a
    -- login there shows no pids).
    report := report || jsonb_build_object('server_changes', coalesce((
        SELECT jsonb_agg(n.note ORDER BY n.i)
        FROM jsonb_array_elements(p_notes) WITH ORDINALITY AS n (note, i)
        WHERE n.note ? 'server'), '[]'));
    RETURN report || jsonb_build_object('sessions', (
        SELECT jsonb_build_object('count', count(*),
            'pids', coalesce(jsonb_agg(p.pid ORDER BY p.pid::integer), '[]'))
        FROM jsonb_array_elements(p_notes) AS e (note)
        CROSS JOIN LATERAL jsonb_array_elements(e.note -> 'pids') AS p (pid)));
END;
$$;

ALTER FUNCTION datatable_roles.preview_report(p_kind text, p_target datatable_roles.catalog_role, p_entry datatable_roles.datatable, p_notes jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.previewing() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(current_setting('datatable_roles.preview', true), '') <> ''
        AND current_setting('datatable_roles.preview', true)
        = pg_current_xact_id_if_assigned()::text
$$;

ALTER FUNCTION datatable_roles.previewing() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.quarantine_statements(p_victim text, p_heir text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    script text;
BEGIN
    PERFORM datatable_roles.require(p_victim, 'victim');
    PERFORM datatable_roles.require(p_heir, 'heir');
    IF p_victim = p_heir THEN
        RAISE EXCEPTION 'the victim and the heir must differ: %', quote_ident(p_victim)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    script := datatable_roles.remote_script_body('quarantine');
    RETURN format('SET LOCAL search_path = pg_catalog, pg_temp; '
        'SELECT pg_catalog.set_config(%L, %L, true), pg_catalog.set_config(%L, %L, true);%s',
        'datatable_roles.quarantine_victim', p_victim, 'datatable_roles.quarantine_heir', p_heir,
        E'\n' || rtrim(script, E' \n;'));
END;
$$;

ALTER FUNCTION datatable_roles.quarantine_statements(p_victim text, p_heir text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.refusal_of(d datatable_roles.decision, p_datatable text, p_role text, OUT message text, OUT hint text) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    g datatable_roles.datatable;
    label text := format('%s/%s', d.job_workspace, p_datatable);
BEGIN
    SELECT e.* INTO g FROM datatable_roles.datatable AS e WHERE e.id = d.datatable_id;
    CASE coalesce(d.refused_reason, d.refused_case)
    WHEN 'admin_not_tenant' THEN
        message := format('data table %s: role admin was named, and the job identity %s may not use it',
            label, d.permissioned_as);
        hint := 'Name a role the identity is a tenant of, or add the identity to the tenants of admin.';
    WHEN 'not_in_map' THEN
        message := format('data table %s: role %s was named, and it is not in the data table''s role map',
            label, quote_literal(left(p_role, 80)));
        hint := coalesce('Did you mean ' || quote_literal(datatable_roles.nearest_name(p_role, ARRAY(
                SELECT r.name FROM datatable_roles.datatable_role AS m
                JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                WHERE m.datatable_id = g.id) || 'admin'::text)) || '? ', '')
            || 'Name a role of the map, or add the role to the map with set_datatable_role_tenants.';
    WHEN 'disabled' THEN
        message := format('data table %s: role %s was named, and it is disabled', label,
            quote_literal(p_role));
        hint := 'Enable the role, or name another one.';
    WHEN 'not_tenant' THEN
        message := format('data table %s: role %s was named, and the job identity %s is not a tenant of it',
            label, quote_literal(p_role), d.permissioned_as);
        hint := 'Add the identity (or one of its groups or folders) to the role''s tenants, or name a role it may use.';
    WHEN 'R8' THEN
        message := format('data table %s: a migration naming no role runs as admin, and the job identity %s may not use admin',
            label, d.permissioned_as);
        hint := 'Name a role in the migration, or add the identity to the tenants of admin.';
    WHEN 'R5' THEN
        message := format('data table %s: no role remains for this connection (%s; %s)', label,
            CASE WHEN g.default_role = datatable_roles.no_default() THEN 'there is no default role'
                WHEN NOT d.default_enabled
                    THEN format('the default role %s is disabled', quote_literal(g.default_role))
                ELSE format('the job identity %s may not use the default role %s',
                    d.permissioned_as, quote_literal(g.default_role)) END,
            CASE WHEN d.viewer_email IS NULL THEN 'no viewer was recorded'
                WHEN NOT coalesce(d.viewer_member, false) AND EXISTS (
                    SELECT FROM datatable_roles.directory_member_by_email(g.workspace, d.viewer_email))
                    THEN 'no role of the map names anyone'
                WHEN NOT coalesce(d.viewer_member, false)
                    THEN 'the viewer is not a member of the governing workspace'
                ELSE 'the viewer is a tenant of no role' END);
        hint := 'Name a role in the connection, set a default role the job identity may use, or add the viewer to a role''s tenants.';
    END CASE;
END;
$$;

ALTER FUNCTION datatable_roles.refusal_of(d datatable_roles.decision, p_datatable text, p_role text, OUT message text, OUT hint text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.refuse(d datatable_roles.decision, p_datatable text, p_role text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    r record;
BEGIN
    SELECT f.message, f.hint INTO r FROM datatable_roles.refusal_of(d, p_datatable, p_role) AS f;
    RAISE EXCEPTION '%', r.message
        USING ERRCODE = 'insufficient_privilege', HINT = r.hint,
              DETAIL = format('refused by rule %s', d.refused_case),
              CONSTRAINT = d.refused_case;
END;
$$;

ALTER FUNCTION datatable_roles.refuse(d datatable_roles.decision, p_datatable text, p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.refuse_admin_password(p_label text, p_admin_login text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    r record;
BEGIN
    SELECT a.message, a.hint INTO r
    FROM datatable_roles.admin_password_refusal(p_label, p_admin_login) AS a;
    RAISE EXCEPTION '%', r.message
        USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'admin_password',
              HINT = r.hint;
END;
$$;

ALTER FUNCTION datatable_roles.refuse_admin_password(p_label text, p_admin_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.refuse_while_pending(p_server text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.refuse_while_pending(p_server text) OWNER TO dtr_owner;

CREATE TABLE datatable_roles.datatable_role_set (
    login text NOT NULL,
    role_ids bigint[] NOT NULL,
    password text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_used_at timestamp with time zone NOT NULL,
    dbname text,
    verifier text,
    rotated_at timestamp with time zone NOT NULL,
    server text DEFAULT 'local'::text NOT NULL
);

ALTER TABLE datatable_roles.datatable_role_set OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.rekey_set_login(p_row datatable_roles.datatable_role_set) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.rekey_set_login(p_row datatable_roles.datatable_role_set) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.remote_admin_of(p_server text, p_dbname text) RETURNS TABLE(login text, password text)
    LANGUAGE sql STABLE
    AS $$
    SELECT d.admin_login, d.admin_password FROM datatable_roles.datatable AS d
    WHERE d.server = p_server AND d.dbname = p_dbname AND d.governing_id IS NULL
    ORDER BY d.id LIMIT 1
$$;

ALTER FUNCTION datatable_roles.remote_admin_of(p_server text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.remote_script_body(p_name text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.remote_script_body(p_name text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.rename_role_on_servers(p_role_id bigint, p_old text, p_new text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.run_or_queue(sr.server, datatable_roles.rename_statement(p_old, p_new),
        format('rename of role %s to %s', p_old, p_new))
    FROM datatable_roles.server_role AS sr WHERE sr.role_id = p_role_id
    ORDER BY sr.server;
END;
$$;

ALTER FUNCTION datatable_roles.rename_role_on_servers(p_role_id bigint, p_old text, p_new text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.rename_statement(p_old text, p_new text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.rename_statement(p_old text, p_new text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.renew_link_login() RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    link text := 'dtr_link_' || left(replace(
        (SELECT s.instance_id::text FROM datatable_roles.settings AS s), '-', ''), 20);
    fresh text := datatable_roles.new_password();
    fresh_verifier text := datatable_roles.verifier_for(fresh);
    held text;
BEGIN
    IF link = datatable_roles.link_login() THEN
        RETURN link;
    END IF;
    EXECUTE format('CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER PASSWORD %L', link, fresh_verifier);
    FOR held IN
        SELECT r.name FROM datatable_roles.catalog_role AS r
        UNION
        SELECT d.admin_login FROM datatable_roles.datatable AS d WHERE d.admin_login IS NOT NULL
    LOOP
        IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = held) THEN
            EXECUTE format('GRANT %I TO %I', held, link);
        END IF;
    END LOOP;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), link);
    UPDATE datatable_roles.link_credential
    SET login = link, password = fresh, verifier = fresh_verifier,
        rotated_at = (SELECT datatable_roles.clock_now());
    RETURN link;
END;
$$;

ALTER FUNCTION datatable_roles.renew_link_login() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require(p_value anyelement, p_argument text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF p_value IS NULL THEN
        RAISE EXCEPTION 'argument % must not be NULL', p_argument
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.require(p_value anyelement, p_argument text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require_datatable(p_workspace text, p_name text) RETURNS datatable_roles.datatable
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable;
BEGIN
    PERFORM datatable_roles.require_workspace(p_workspace);
    PERFORM datatable_roles.require(p_name, 'datatable');
    SELECT d.* INTO entry FROM datatable_roles.datatable AS d
    WHERE d.workspace = p_workspace AND d.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'data table % does not exist in workspace %',
            quote_literal(left(p_name, 80)), quote_literal(p_workspace)
            USING ERRCODE = 'no_data_found', HINT = 'Register it with register_datatable.';
    END IF;
    RETURN entry;
END;
$$;

ALTER FUNCTION datatable_roles.require_datatable(p_workspace text, p_name text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require_governing_datatable(p_workspace text, p_name text) RETURNS datatable_roles.datatable
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable := datatable_roles.require_datatable(p_workspace, p_name);
    governing datatable_roles.datatable;
BEGIN
    IF entry.governing_id IS NOT NULL THEN
        SELECT g.* INTO governing FROM datatable_roles.datatable AS g WHERE g.id = entry.governing_id;
        RAISE EXCEPTION 'data table %/% is a reference to %/%', p_workspace, p_name,
            governing.workspace, governing.name
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Edit the roles of the governing data table instead.';
    END IF;
    RETURN entry;
END;
$$;

ALTER FUNCTION datatable_roles.require_governing_datatable(p_workspace text, p_name text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require_link_reaches(p_dbname text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    why text := datatable_roles.link_login_fails(p_dbname);
BEGIN
    IF why IS NOT NULL THEN
        RAISE EXCEPTION 'database % cannot be reached by the package now', quote_ident(p_dbname)
            USING ERRCODE = 'sqlclient_unable_to_establish_sqlconnection', DETAIL = why,
                  HINT = 'Nothing was changed; try again when the database takes connections.';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.require_link_reaches(p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require_member(p_workspace text, p_username text) RETURNS TABLE(username text, email text, is_admin boolean, incarnation text)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.require_workspace(p_workspace);
    PERFORM datatable_roles.require(p_username, 'username');
    RETURN QUERY SELECT m.username, m.email, m.is_admin, m.incarnation
        FROM datatable_roles.directory_member(p_workspace, p_username) AS m;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'user % is not a member of workspace %',
            quote_literal(left(p_username, 80)), quote_literal(p_workspace)
            USING ERRCODE = 'no_data_found',
                  HINT = 'Add the user with add_workspace_user (or in the platform, with an adapter); a disabled user is no member.';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.require_member(p_workspace text, p_username text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require_own_directory() RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    adapter text := (SELECT s.directory FROM datatable_roles.settings AS s);
BEGIN
    IF adapter <> 'builtin' THEN
        RAISE EXCEPTION 'the directory is read from the platform (the % adapter): it is not written through the package', adapter
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Change users, groups and folders in the platform; call forget_workspace_user when it deletes a user.';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.require_own_directory() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require_reaches(p_server text, p_dbname text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.require_reaches(p_server text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require_role(p_name text) RETURNS datatable_roles.catalog_role
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.require_role(p_name text) OWNER TO dtr_owner;

CREATE TABLE datatable_roles.server (
    name text NOT NULL,
    host text,
    port integer,
    sslmode text,
    maintenance_db text,
    manager_login text,
    manager_password text,
    registered_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT server_check CHECK ((((name = 'local'::text) = (host IS NULL)) AND ((host IS NULL) = (port IS NULL)) AND ((host IS NULL) = (sslmode IS NULL)) AND ((host IS NULL) = (maintenance_db IS NULL)) AND ((host IS NULL) = (manager_login IS NULL)) AND ((host IS NULL) = (manager_password IS NULL)))),
    CONSTRAINT server_port_check CHECK (((port >= 1) AND (port <= 65535)))
);

ALTER TABLE datatable_roles.server OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require_server(p_name text) RETURNS datatable_roles.server
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.require_server(p_name text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.require_workspace(p_workspace text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.require(p_workspace, 'workspace');
    IF NOT EXISTS (SELECT FROM datatable_roles.directory_workspace_exists(p_workspace)) THEN
        RAISE EXCEPTION 'workspace % does not exist', quote_literal(left(p_workspace, 80))
            USING ERRCODE = 'no_data_found',
                  HINT = 'Create it with add_workspace (or in the platform, with an adapter).';
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.require_workspace(p_workspace text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.reset_database_settings(p_login text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.reset_database_settings(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.reset_memberships(p_login text, p_wanted text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.reset_memberships(p_login text, p_wanted text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.reset_settings_as_login(p_login text, p_dbname text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.reset_settings_as_login(p_login text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.retire_logins_holding(p_role_id bigint, p_dbname text, p_server text DEFAULT 'local'::text) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.retire_logins_holding(p_role_id bigint, p_dbname text, p_server text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.retire_statement(p_login text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.retire_statement(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.revoke_database_grants(p_role text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.revoke_database_grants(p_role text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.roles_of(p_role_ids bigint[]) RETURNS TABLE(ids bigint[], names text[])
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(array_agg(r.id ORDER BY r.id), '{}'),
        coalesce(array_agg(r.name ORDER BY r.name COLLATE "C"), '{}')
    FROM datatable_roles.catalog_role AS r
    WHERE r.id = ANY(p_role_ids)
$$;

ALTER FUNCTION datatable_roles.roles_of(p_role_ids bigint[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.rotate_link_login() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    link datatable_roles.link_credential;
    fresh text := datatable_roles.new_password();
    fresh_verifier text := datatable_roles.verifier_for(fresh);
BEGIN
    SELECT c.* INTO link FROM datatable_roles.link_credential AS c FOR UPDATE;
    IF link.rotated_at >= (SELECT datatable_roles.clock_now())
            - (SELECT s.rotate_every FROM datatable_roles.settings AS s)
        AND datatable_roles.link_login_fails(current_database()) IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format('ALTER ROLE %I PASSWORD %L', link.login, fresh_verifier);
    UPDATE datatable_roles.link_credential
    SET password = fresh, verifier = fresh_verifier,
        rotated_at = (SELECT datatable_roles.clock_now());
END;
$$;

ALTER FUNCTION datatable_roles.rotate_link_login() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.rotate_or_heal(p_login text, p_altered_there boolean DEFAULT false) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.rotate_or_heal(p_login text, p_altered_there boolean) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.run_or_queue(p_server text, p_statement text, p_what text) RETURNS boolean
    LANGUAGE sql
    AS $$
    SELECT datatable_roles.run_or_queue_in(p_server, null, p_statement, p_what)
$$;

ALTER FUNCTION datatable_roles.run_or_queue(p_server text, p_statement text, p_what text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.run_or_queue_in(p_server text, p_dbname text, p_statement text, p_what text, p_as_admin boolean DEFAULT false) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.run_or_queue_in(p_server text, p_dbname text, p_statement text, p_what text, p_as_admin boolean) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.scram_verifier(p_password text, p_iterations integer) RETURNS text
    LANGUAGE plpgsql STRICT
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
DECLARE
    secret bytea := convert_to(p_password, 'UTF8');
    salt bytea := decode(replace(gen_random_uuid()::text, '-', ''), 'hex');
    inner_key bytea;
    outer_key bytea;
    u bytea;
    acc bit(256);
    salted bytea;
BEGIN
    -- PBKDF2-HMAC-SHA-256 with the key's padded blocks computed once (the key,
    -- the password, is the same in every iteration) and the running XOR kept
    -- as a bit string: a few C calls per iteration instead of byte loops.
    SELECT h.inner_key, h.outer_key INTO inner_key, outer_key
    FROM datatable_roles.hmac_keys(secret) AS h;
    u := sha256(outer_key || sha256(inner_key || salt || '\x00000001'::bytea));
    acc := ('x' || encode(u, 'hex'))::bit(256);
    FOR i IN 2..p_iterations LOOP
        u := sha256(outer_key || sha256(inner_key || u));
        acc := acc # ('x' || encode(u, 'hex'))::bit(256);
    END LOOP;
    salted := decode((
        SELECT string_agg(lpad(to_hex(substring(acc FROM 1 + 64 * j FOR 64)::bigint), 16, '0'), ''
            ORDER BY j)
        FROM generate_series(0, 3) AS j
    ), 'hex');
    RETURN format(
        'SCRAM-SHA-256$%s:%s$%s:%s',
        p_iterations,
        encode(salt, 'base64'),
        encode(sha256(datatable_roles.hmac_sha256(salted, convert_to('Client Key', 'UTF8'))), 'base64'),
        encode(datatable_roles.hmac_sha256(salted, convert_to('Server Key', 'UTF8')), 'base64')
    );
END;
$_$;

ALTER FUNCTION datatable_roles.scram_verifier(p_password text, p_iterations integer) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.server_conninfo(p_server text, p_dbname text, p_login text, p_password text) RETURNS text
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

ALTER FUNCTION datatable_roles.server_conninfo(p_server text, p_dbname text, p_login text, p_password text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.server_role_marker(p_role_id bigint) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT format('datatable_roles %s role %s', s.instance_id, p_role_id)
    FROM datatable_roles.settings AS s
$$;

ALTER FUNCTION datatable_roles.server_role_marker(p_role_id bigint) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.server_session_open(p_server text, p_dbname text, p_login text, p_password text, p_name text DEFAULT 'datatable_roles_server'::text, p_extra text DEFAULT ''::text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.server_session_open(p_server text, p_dbname text, p_login text, p_password text, p_name text, p_extra text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.server_session_options() RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT '-c search_path=pg_catalog,pg_temp -c statement_timeout=0'
        || ' -c default_transaction_read_only=off -c lock_timeout=0'
$$;

ALTER FUNCTION datatable_roles.server_session_options() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.session_cancel(p_name text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    IF p_name = ANY(datatable_roles_dblink.dblink_get_connections()) THEN
        PERFORM datatable_roles_dblink.dblink_cancel_query(p_name);
    END IF;
    PERFORM datatable_roles.session_close(p_name);
END;
$$;

ALTER FUNCTION datatable_roles.session_cancel(p_name text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.session_close(p_name text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    IF p_name = ANY(datatable_roles_dblink.dblink_get_connections()) THEN
        PERFORM datatable_roles_dblink.dblink_disconnect(p_name);
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.session_close(p_name text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.session_exec(p_name text, p_sql text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.session_exec(p_name text, p_sql text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.session_open(p_name text, p_dbname text, p_login text, p_password text, p_options text DEFAULT NULL::text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.session_close(p_name);
    PERFORM datatable_roles_dblink.dblink_connect(p_name,
        datatable_roles.conninfo_for(p_dbname, p_login, p_password)
        || coalesce(' options=' || datatable_roles.conninfo_value(p_options), ''));
    RETURN p_name;
END;
$$;

ALTER FUNCTION datatable_roles.session_open(p_name text, p_dbname text, p_login text, p_password text, p_options text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.session_value(p_name text, p_sql text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.session_value(p_name text, p_sql text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.set_login_name(p_dbname text, p_role_ids bigint[]) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    RETURN (SELECT n.login FROM datatable_roles.set_login_of(p_dbname, p_role_ids) AS n);
END;
$$;

ALTER FUNCTION datatable_roles.set_login_name(p_dbname text, p_role_ids bigint[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.set_login_named(p_instance_id uuid, p_dbname text, p_sorted_ids bigint[]) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT 'wm_set_' || left(encode(sha256(convert_to(
        p_instance_id::text || ':' || p_dbname || ':' || nullif(array_to_string(p_sorted_ids, ','), ''),
        'UTF8'
    )), 'hex'), 40)
$$;

ALTER FUNCTION datatable_roles.set_login_named(p_instance_id uuid, p_dbname text, p_sorted_ids bigint[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.set_login_of(p_dbname text, p_role_ids bigint[]) RETURNS TABLE(login text)
    LANGUAGE sql STABLE
    AS $$
    SELECT datatable_roles.set_login_named(s.instance_id, p_dbname,
        ARRAY(SELECT DISTINCT i FROM unnest(p_role_ids) AS i ORDER BY i))
    FROM datatable_roles.settings AS s
$$;

ALTER FUNCTION datatable_roles.set_login_of(p_dbname text, p_role_ids bigint[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.shell_word(p_word text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
    SELECT CASE WHEN p_word ~ '^[A-Za-z0-9_.,:/@%+=-]+$' THEN p_word
        ELSE '''' || replace(p_word, '''', '''\''''') || '''' END
$_$;

ALTER FUNCTION datatable_roles.shell_word(p_word text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.signature_of(p_function regprocedure) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT p_function::text
$$;

ALTER FUNCTION datatable_roles.signature_of(p_function regprocedure) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.status_report() RETURNS jsonb
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT jsonb_build_object(
        'instance_id', st.instance_id,
        'profile', CASE WHEN to_regnamespace('datatable_roles_guard') IS NOT NULL
            THEN 'self-hosted' ELSE 'managed' END,
        'unused_after', st.unused_after::text,
        'touch_every', st.touch_every::text,
        'rotate_every', st.rotate_every::text, 'directory', st.directory,
        'login_group', st.login_group,
        'link_login', datatable_roles.link_login(),
        'clock_offset', st.clock_offset::text,
        'now', c.now,
        'datatables', coalesce((
            SELECT jsonb_agg(CASE WHEN g.id IS NOT NULL THEN jsonb_build_object(
                'workspace', d.workspace, 'name', d.name,
                'reference_to', g.workspace || '/' || g.name)
            ELSE jsonb_build_object(
                'workspace', d.workspace, 'name', d.name, 'dbname', d.dbname,
                'server', d.server, 'admin_login', d.admin_login,
                'admin_password_ok', CASE WHEN d.admin_password IS NOT NULL
                    THEN datatable_roles.login_fails_on(d.server, d.dbname, d.admin_login, d.admin_password)
                        IS NULL END,
                'default_role', nullif(d.default_role, datatable_roles.no_default()),
                'default_is_admin', d.default_role = 'admin',
                'roles', jsonb_build_array(jsonb_build_object(
                    'role', 'admin', 'enabled', true, 'tenants', to_jsonb(d.admin_tenants)))
                || coalesce((
                    SELECT jsonb_agg(jsonb_build_object(
                        'role', r.name, 'enabled', r.enabled, 'tenants', to_jsonb(m.tenants))
                        ORDER BY r.name COLLATE "C")
                    FROM datatable_roles.datatable_role AS m
                    JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                    WHERE m.datatable_id = d.id), '[]'::jsonb)) END
                ORDER BY d.workspace, d.name)
            FROM datatable_roles.datatable AS d
            LEFT JOIN datatable_roles.datatable AS g ON g.id = d.governing_id), '[]'::jsonb),
        -- No password: where each server is, its manager, and what it has not applied.
        'servers', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'name', sv.name, 'host', sv.host, 'port', sv.port, 'sslmode', sv.sslmode,
                'manager_login', sv.manager_login,
                'pending', (SELECT count(*) FROM datatable_roles.server_change AS q
                    WHERE q.server = sv.name),
                'first_pending', (SELECT jsonb_build_object('what', q.what, 'since', q.queued_at,
                    'tries', q.tries, 'last_error', q.last_error)
                    FROM datatable_roles.server_change AS q WHERE q.server = sv.name
                    ORDER BY q.id LIMIT 1))
                ORDER BY sv.name)
            FROM datatable_roles.server AS sv), '[]'::jsonb),
        'catalog_roles', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'id', r.id, 'name', r.name, 'enabled', r.enabled, 'created_at', r.created_at,
                'maps', (SELECT count(*) FROM datatable_roles.datatable_role AS m
                    WHERE m.role_id = r.id),
                'can_login', coalesce((SELECT pr.rolcanlogin FROM pg_roles AS pr
                    WHERE pr.rolname = r.name), false))
                ORDER BY r.name COLLATE "C")
            FROM datatable_roles.catalog_role AS r), '[]'::jsonb),
        'set_logins', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'login', s.login,
                'roles', to_jsonb(ARRAY(
                    SELECT coalesce(r.name, '#' || i.id::text || ' (dropped)')
                    FROM unnest(s.role_ids) AS i (id)
                    LEFT JOIN datatable_roles.catalog_role AS r ON r.id = i.id ORDER BY 1)),
                'created_at', s.created_at,
                'last_used_at', s.last_used_at,
                'idle_seconds', extract(EPOCH FROM c.now - s.last_used_at),
                'active', s.password <> '',
                'login_exists', EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = s.login),
                'database', s.dbname,
                'server', s.server,
                'rotated_at', s.rotated_at,
                -- On another server not read (NULL): the sweep rotates it.
                'intact', CASE WHEN s.server = 'local' THEN s.password <> ''
                    AND EXISTS (
                        SELECT FROM datatable_roles.login_intact(s.login, s.dbname)) END,
                'stale', EXISTS (SELECT FROM datatable_roles.is_sweepable(s.last_used_at,
                    s.password, s.dbname, s.role_ids, datatable_roles.sweep_cutoff(null),
                    s.server)))
                ORDER BY s.last_used_at DESC, s.login)
            FROM datatable_roles.datatable_role_set AS s), '[]'::jsonb))
    FROM datatable_roles.settings AS st, datatable_roles.clock_now() AS c (now)
$$;

ALTER FUNCTION datatable_roles.status_report() OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_candidates(p_unused_for interval DEFAULT NULL::interval) RETURNS SETOF text
    LANGUAGE sql STABLE
    AS $$
    SELECT datatable_roles.sweep_candidates_at(datatable_roles.sweep_cutoff(p_unused_for))
$$;

ALTER FUNCTION datatable_roles.sweep_candidates(p_unused_for interval) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_candidates_at(p_cutoff timestamp with time zone) RETURNS SETOF text
    LANGUAGE sql STABLE
    AS $$
    SELECT s.login
    FROM datatable_roles.datatable_role_set AS s
    WHERE EXISTS (SELECT FROM datatable_roles.is_sweepable(
        s.last_used_at, s.password, s.dbname, s.role_ids, p_cutoff, s.server))
    ORDER BY s.login
$$;

ALTER FUNCTION datatable_roles.sweep_candidates_at(p_cutoff timestamp with time zone) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_cutoff(p_unused_for interval) RETURNS timestamp with time zone
    LANGUAGE sql STABLE
    AS $$
    SELECT c.now - coalesce(p_unused_for, s.unused_after)
    FROM datatable_roles.clock_now() AS c (now), datatable_roles.settings AS s
$$;

ALTER FUNCTION datatable_roles.sweep_cutoff(p_unused_for interval) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_drop(p_login text, OUT outcome text, OUT reason text) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.sweep_drop(p_login text, OUT outcome text, OUT reason text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_drop_on_server(p_server text, p_login text, p_dbname text, OUT outcome text, OUT reason text) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.sweep_drop_on_server(p_server text, p_login text, p_dbname text, OUT outcome text, OUT reason text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_pending(p_state jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
    SELECT p_state ->> 'phase' <> 'done'
$$;

ALTER FUNCTION datatable_roles.sweep_pending(p_state jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_phase_begins(p_state jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
    SELECT p_state ->> 'phase' = 'maintain' AND p_state ->> 'i' = '0'
$$;

ALTER FUNCTION datatable_roles.sweep_phase_begins(p_state jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_report(p_state jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
    SELECT jsonb_build_object('examined', p_state -> 'examined', 'dropped', p_state -> 'dropped',
        'skipped', p_state -> 'skipped', 'unfinished', p_state -> 'unfinished',
        'rotated', p_state -> 'rotated', 'healed', p_state -> 'healed',
        'forgotten_user_keys', p_state -> 'forgotten',
        'servers_pending', coalesce(p_state -> 'servers_pending', '[]'::jsonb))
$$;

ALTER FUNCTION datatable_roles.sweep_report(p_state jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_start(p_unused_for interval) RETURNS jsonb
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
    SELECT jsonb_build_object(
        'cutoff', datatable_roles.sweep_cutoff(p_unused_for),
        'phase', 'take_away', 'i', 0, 'examined', 0,
        'dropped', 0, 'skipped', 0, 'unfinished', '[]'::jsonb, 'rotated', 0, 'healed', 0,
        'forgotten', '[]'::jsonb)
$$;

ALTER FUNCTION datatable_roles.sweep_start(p_unused_for interval) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_step(p_state jsonb, p_victims text[]) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    SET jit TO 'off'
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

ALTER FUNCTION datatable_roles.sweep_step(p_state jsonb, p_victims text[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_take_away(p_login text, p_cutoff timestamp with time zone) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.sweep_take_away(p_login text, p_cutoff timestamp with time zone) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sweep_victims(p_state jsonb) RETURNS text[]
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
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

ALTER FUNCTION datatable_roles.sweep_victims(p_state jsonb) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sync_folder_grants(p_workspace text, p_folders jsonb, p_users jsonb, OUT rejected jsonb, OUT changed integer, OUT removed integer) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    judged jsonb;
BEGIN
    WITH given AS (
        SELECT f.key AS folder, f.value AS grants, p.key AS principal, p.value AS access
        FROM jsonb_each(p_folders) AS f
        LEFT JOIN LATERAL jsonb_each(
            CASE WHEN jsonb_typeof(f.value) = 'object' THEN f.value ELSE '{"": null}' END
        ) AS p ON true
        WHERE NOT (jsonb_typeof(f.value) = 'object' AND p.key IS NULL)  -- an empty folder
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('folder', g.folder, 'principal', g.principal,
        'access', g.access, 'reason', CASE
            WHEN jsonb_typeof(g.grants) <> 'object' THEN 'a folder is an object of principal: access'
            WHEN NOT datatable_roles.name_ok(g.folder) THEN 'invalid folder name'
            WHEN g.principal !~ '^[ug]/' OR NOT datatable_roles.name_ok(substr(g.principal, 3))
                THEN 'a principal is u/<username> or g/<group>'
            WHEN g.access IS NULL OR g.access NOT IN ('"owner"', '"write"', '"read"')
                THEN 'access is owner, write or read'
            WHEN starts_with(g.principal, 'u/') AND NOT EXISTS (
                SELECT FROM jsonb_array_elements(p_users) AS v (value)
                WHERE v.value ->> 'username' = substr(g.principal, 3))
                THEN 'not a user of the workspace'
        END)), '[]')
    INTO judged
    FROM given AS g;
    rejected := coalesce((
        SELECT jsonb_agg(jsonb_build_object('kind', 'folder_grant', 'item',
            jsonb_build_object('folder', j.value -> 'folder', 'principal', j.value -> 'principal',
                'access', j.value -> 'access'),
            'reason', j.value -> 'reason'))
        FROM jsonb_array_elements(judged) AS j (value) WHERE j.value -> 'reason' <> 'null'), '[]');
    DELETE FROM datatable_roles.folder_access AS fa
    WHERE fa.workspace = p_workspace AND NOT EXISTS (
        SELECT FROM jsonb_array_elements(judged) AS j (value)
        WHERE j.value -> 'reason' = 'null' AND j.value ->> 'folder' = fa.folder
            AND j.value ->> 'principal' = fa.principal);
    GET DIAGNOSTICS removed = ROW_COUNT;
    INSERT INTO datatable_roles.folder_access AS fa (workspace, folder, principal, access)
    SELECT p_workspace, j.value ->> 'folder', j.value ->> 'principal', j.value ->> 'access'
    FROM jsonb_array_elements(judged) AS j (value) WHERE j.value -> 'reason' = 'null'
    ON CONFLICT ON CONSTRAINT folder_access_pkey DO UPDATE SET access = excluded.access
    WHERE fa.access <> excluded.access;
    GET DIAGNOSTICS changed = ROW_COUNT;
END;
$$;

ALTER FUNCTION datatable_roles.sync_folder_grants(p_workspace text, p_folders jsonb, p_users jsonb, OUT rejected jsonb, OUT changed integer, OUT removed integer) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sync_group_members(p_workspace text, p_groups jsonb, p_users jsonb, OUT rejected jsonb, OUT added integer, OUT removed integer) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    judged jsonb;
BEGIN
    WITH given AS (
        SELECT g.key AS group_name, g.value AS members, m.value AS member
        FROM jsonb_each(p_groups) AS g
        LEFT JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(g.value) = 'array' THEN g.value ELSE '[null]' END
        ) AS m (value) ON true
        WHERE NOT (jsonb_typeof(g.value) = 'array' AND m.value IS NULL)  -- an empty group
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('group_name', g.group_name, 'member', g.member,
        'reason', CASE
            WHEN jsonb_typeof(g.members) <> 'array' THEN 'a group is an array of usernames'
            WHEN NOT datatable_roles.name_ok(g.group_name) THEN 'invalid group name'
            WHEN jsonb_typeof(g.member) IS DISTINCT FROM 'string' THEN 'a member is a username'
            WHEN NOT EXISTS (SELECT FROM jsonb_array_elements(p_users) AS v (value)
                WHERE v.value -> 'username' = g.member) THEN 'not a user of the workspace'
        END)), '[]')
    INTO judged
    FROM given AS g;
    rejected := coalesce((
        SELECT jsonb_agg(jsonb_build_object('kind', 'group_member', 'item',
            jsonb_build_object('group', j.value -> 'group_name', 'member', j.value -> 'member'),
            'reason', j.value -> 'reason'))
        FROM jsonb_array_elements(judged) AS j (value) WHERE j.value -> 'reason' <> 'null'), '[]');
    DELETE FROM datatable_roles.group_member AS gm
    WHERE gm.workspace = p_workspace AND NOT EXISTS (
        SELECT FROM jsonb_array_elements(judged) AS j (value)
        WHERE j.value -> 'reason' = 'null' AND j.value ->> 'group_name' = gm.group_name
            AND j.value ->> 'member' = gm.username);
    GET DIAGNOSTICS removed = ROW_COUNT;
    INSERT INTO datatable_roles.group_member (workspace, group_name, username)
    SELECT p_workspace, j.value ->> 'group_name', j.value ->> 'member'
    FROM jsonb_array_elements(judged) AS j (value) WHERE j.value -> 'reason' = 'null'
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
END;
$$;

ALTER FUNCTION datatable_roles.sync_group_members(p_workspace text, p_groups jsonb, p_users jsonb, OUT rejected jsonb, OUT added integer, OUT removed integer) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.sync_users(p_workspace text, p_users jsonb, OUT taken jsonb, OUT rejected jsonb, OUT added integer, OUT updated integer, OUT removed integer) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    gone text;
BEGIN
    removed := 0;
    WITH given AS (
        SELECT e.value AS item, e.value ->> 'username' AS username, e.value ->> 'email' AS email,
            e.value -> 'is_admin' AS is_admin
        FROM jsonb_array_elements(p_users) AS e (value)
    ), judged AS (
        SELECT g.*, CASE
            WHEN jsonb_typeof(g.item) <> 'object' THEN 'not an object'
            WHEN g.username IS NULL OR NOT datatable_roles.name_ok(g.username) THEN 'invalid username'
            WHEN g.email IS NULL OR NOT datatable_roles.email_ok(g.email) THEN 'invalid email'
            WHEN coalesce(jsonb_typeof(g.is_admin), 'boolean') <> 'boolean' THEN 'is_admin is not a boolean'
            WHEN count(*) OVER (PARTITION BY g.username) > 1 THEN 'username given more than once'
            WHEN count(*) OVER (PARTITION BY lower(g.email)) > 1 THEN 'email shared by several users'
        END AS reason
        FROM given AS g
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('kind', 'user', 'item', j.item, 'reason', j.reason))
            FILTER (WHERE j.reason IS NOT NULL), '[]'),
        coalesce(jsonb_agg(jsonb_build_object('username', j.username, 'email', j.email,
            'is_admin', coalesce(j.is_admin, 'false'))) FILTER (WHERE j.reason IS NULL), '[]')
    INTO rejected, taken
    FROM judged AS j;

    FOR gone IN
        SELECT u.username FROM datatable_roles.workspace_user AS u
        WHERE u.workspace = p_workspace AND NOT EXISTS (
            SELECT FROM jsonb_array_elements(taken) AS v (value)
            WHERE v.value ->> 'username' = u.username)
        ORDER BY u.username
    LOOP
        PERFORM public.remove_workspace_user(p_workspace, gone);
        removed := removed + 1;
    END LOOP;
    -- Emails that change are parked first (no '@': no real email), so that
    -- two users may swap emails under the unique (workspace, lower(email)).
    UPDATE datatable_roles.workspace_user AS u SET email = '#' || u.incarnation
    FROM jsonb_to_recordset(taken) AS v (username text, email text, is_admin boolean)
    WHERE u.workspace = p_workspace AND u.username = v.username AND u.email <> v.email;
    UPDATE datatable_roles.workspace_user AS u SET email = v.email, is_admin = v.is_admin
    FROM jsonb_to_recordset(taken) AS v (username text, email text, is_admin boolean)
    WHERE u.workspace = p_workspace AND u.username = v.username
        AND (u.email <> v.email OR u.is_admin <> v.is_admin);
    GET DIAGNOSTICS updated = ROW_COUNT;
    INSERT INTO datatable_roles.workspace_user (workspace, username, email, is_admin)
    SELECT p_workspace, v.username, v.email, v.is_admin
    FROM jsonb_to_recordset(taken) AS v (username text, email text, is_admin boolean)
    ON CONFLICT ON CONSTRAINT workspace_user_pkey DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
END;
$$;

ALTER FUNCTION datatable_roles.sync_users(p_workspace text, p_users jsonb, OUT taken jsonb, OUT rejected jsonb, OUT added integer, OUT updated integer, OUT removed integer) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.take_admin_login(p_dbname text, p_admin_login text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    db_owner oid;
    problem text;
BEGIN
    SELECT pd.datdba INTO db_owner FROM pg_database AS pd WHERE pd.datname = p_dbname;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'database % does not exist', quote_literal(left(p_dbname, 80))
            USING ERRCODE = 'no_data_found';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = p_admin_login) THEN
        RAISE EXCEPTION 'admin login % does not exist', quote_literal(left(p_admin_login, 80))
            USING ERRCODE = 'no_data_found';
    END IF;
    IF db_owner <> (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = p_admin_login) THEN
        RAISE EXCEPTION 'database % is not owned by admin login %',
            quote_literal(p_dbname), quote_literal(p_admin_login)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The admin login is handed to jobs (R2): it must not be, or reach, the
    -- package owner, nor hold cluster-wide powers, nor own the metadata
    -- database. The refusal names what is wrong.
    IF p_dbname = current_database() THEN
        RAISE EXCEPTION 'database % is the metadata database: it cannot be a data table',
            quote_literal(p_dbname)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Give the data table a database of its own.';
    END IF;
    SELECT array_to_string(ARRAY(
        SELECT a FROM unnest(array[
            CASE WHEN pr.rolsuper THEN 'SUPERUSER' END,
            CASE WHEN pr.rolcreaterole THEN 'CREATEROLE' END,
            CASE WHEN pr.rolcreatedb THEN 'CREATEDB' END,
            CASE WHEN pr.rolreplication THEN 'REPLICATION' END,
            CASE WHEN pr.rolbypassrls THEN 'BYPASSRLS' END,
            CASE WHEN pg_has_role(pr.oid, current_user, 'MEMBER')
                THEN format('member of the package owner %s', current_user) END
        ]) AS a WHERE a IS NOT NULL), ', ')
    INTO problem
    FROM pg_roles AS pr WHERE pr.rolname = p_admin_login;
    IF problem <> '' THEN
        RAISE EXCEPTION 'login % may not be the admin login of a data table: it has %',
            quote_literal(p_admin_login), problem
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Use a plain login (LOGIN and a password, nothing else) that owns only the data table''s database.';
    END IF;
    IF NOT pg_has_role(current_user, p_admin_login, 'USAGE') THEN
        RAISE EXCEPTION 'the package owner % is not a member of admin login %',
            current_user, quote_literal(p_admin_login)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('As a superuser: GRANT %I TO %I%s;', p_admin_login, current_user,
                      CASE WHEN datatable_roles.pg16_or_later() THEN ' WITH ADMIN OPTION' ELSE '' END);
    END IF;
    -- The link login moves objects to the admin login (REASSIGN OWNED needs
    -- the privileges of the target too). Granting it takes ADMIN OPTION from 16 on.
    IF NOT datatable_roles.link_holds(p_admin_login) THEN
        IF datatable_roles.pg16_or_later()
            AND NOT pg_has_role(current_user, p_admin_login, 'USAGE WITH ADMIN OPTION') THEN
            RAISE EXCEPTION 'the package owner % holds admin login % without ADMIN OPTION',
                current_user, quote_literal(p_admin_login)
                USING ERRCODE = 'insufficient_privilege',
                      HINT = format('PostgreSQL 16 and later: as a superuser, GRANT %I TO %I WITH ADMIN OPTION;',
                          p_admin_login, current_user);
        END IF;
        EXECUTE format('GRANT %I TO %I', p_admin_login, datatable_roles.link_login());
    END IF;
END;
$$;

ALTER FUNCTION datatable_roles.take_admin_login(p_dbname text, p_admin_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.take_remote_admin_login(p_server text, p_dbname text, p_admin_login text, p_password text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
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
$_$;

ALTER FUNCTION datatable_roles.take_remote_admin_login(p_server text, p_dbname text, p_admin_login text, p_password text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.unnamed_of(p_datatable_id bigint, p_workspace text, p_default_role text, p_ident_admin boolean, p_ident_keys text[], p_viewer_email text, OUT rules text[], OUT default_id bigint, OUT default_enabled boolean, OUT default_tenants text[], OUT default_held boolean, OUT viewer_member boolean, OUT held_ids bigint[], OUT viewer_ids bigint[]) RETURNS record
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    dflt record;
BEGIN
    held_ids := '{}';
    viewer_ids := '{}';
    IF p_default_role = 'admin' THEN
        rules := '{R2}';
        RETURN;
    END IF;
    SELECT d.* INTO dflt
    FROM datatable_roles.default_of(p_datatable_id, p_default_role, p_ident_admin, p_ident_keys) AS d;
    default_id := dflt.id;
    default_enabled := dflt.enabled;
    default_tenants := dflt.tenants;
    default_held := dflt.held;
    IF dflt.held THEN
        held_ids := array[dflt.id];
    END IF;
    IF dflt.viewer_may_add THEN
        SELECT v.username IS NOT NULL, v.ids INTO viewer_member, viewer_ids
        FROM datatable_roles.viewer_roles_of(p_datatable_id, p_workspace, p_viewer_email) AS v;
    END IF;
    rules := array[CASE WHEN p_default_role = datatable_roles.no_default() THEN 'R4' ELSE 'R3' END,
            CASE WHEN viewer_member IS NULL THEN 'R10' WHEN viewer_member THEN 'R3/R4' ELSE 'R9' END]
        || CASE WHEN held_ids || viewer_ids = '{}' THEN '{R5}'::text [] ELSE '{}' END;
END;
$$;

ALTER FUNCTION datatable_roles.unnamed_of(p_datatable_id bigint, p_workspace text, p_default_role text, p_ident_admin boolean, p_ident_keys text[], p_viewer_email text, OUT rules text[], OUT default_id bigint, OUT default_enabled boolean, OUT default_tenants text[], OUT default_held boolean, OUT viewer_member boolean, OUT held_ids bigint[], OUT viewer_ids bigint[]) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.unreachable(p_sqlstate text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT starts_with(p_sqlstate, '08')
$$;

ALTER FUNCTION datatable_roles.unreachable(p_sqlstate text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.usable_set_login(p_login text) RETURNS TABLE(password text)
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

ALTER FUNCTION datatable_roles.usable_set_login(p_login text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.user_key_stale(p_workspace text, p_username text, p_incarnation text) RETURNS SETOF boolean
    LANGUAGE sql STABLE ROWS 1
    AS $$
    SELECT true FROM datatable_roles.tenant_user AS b
    WHERE b.workspace = p_workspace AND b.username = p_username
        AND b.incarnation IS DISTINCT FROM p_incarnation
$$;

ALTER FUNCTION datatable_roles.user_key_stale(p_workspace text, p_username text, p_incarnation text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.value_as_manager(p_server text, p_query text, p_dbname text DEFAULT NULL::text) RETURNS text
    LANGUAGE sql
    AS $$
    SELECT datatable_roles.on_manager_session(p_server, p_query, p_dbname, true)
$$;

ALTER FUNCTION datatable_roles.value_as_manager(p_server text, p_query text, p_dbname text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.verifier_for(p_password text) RETURNS text
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
    SELECT datatable_roles.scram_verifier(p_password, s.scram_iterations)
    FROM datatable_roles.settings AS s
$$;

ALTER FUNCTION datatable_roles.verifier_for(p_password text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.viewer_roles_of(p_datatable_id bigint, p_workspace text, p_viewer_email text) RETURNS TABLE(username text, email text, incarnation text, ids bigint[])
    LANGUAGE sql STABLE
    AS $$
    SELECT v.username, v.email, v.incarnation,
        CASE WHEN v.username IS NULL THEN '{}'::bigint [] ELSE ARRAY(
            SELECT m.role_id FROM datatable_roles.datatable_role AS m
            WHERE m.datatable_id = p_datatable_id
                AND (SELECT r.enabled FROM datatable_roles.catalog_role AS r WHERE r.id = m.role_id)
                AND EXISTS (
                    SELECT FROM unnest(m.tenants) AS t (k)
                    CROSS JOIN LATERAL datatable_roles.key_names_member(
                        p_workspace, t.k, v.username, v.email, v.incarnation) AS n
                )
        ) END
    FROM (SELECT) AS one
    LEFT JOIN datatable_roles.directory_member_by_email(p_workspace, p_viewer_email) AS v ON true
$$;

ALTER FUNCTION datatable_roles.viewer_roles_of(p_datatable_id bigint, p_workspace text, p_viewer_email text) OWNER TO dtr_owner;

CREATE FUNCTION datatable_roles.wrong_password(p_why text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT coalesce(p_why ~ 'password authentication failed', false)
$$;

ALTER FUNCTION datatable_roles.wrong_password(p_why text) OWNER TO dtr_owner;

CREATE FUNCTION public.add_group_member(workspace text, group_name text, username text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.require_member(add_group_member.workspace, add_group_member.username);
    PERFORM datatable_roles.check_name('group', add_group_member.group_name);
    INSERT INTO datatable_roles.group_member (workspace, group_name, username)
    VALUES (add_group_member.workspace, add_group_member.group_name, add_group_member.username)
    ON CONFLICT DO NOTHING;
END;
$$;

ALTER FUNCTION public.add_group_member(workspace text, group_name text, username text) OWNER TO dtr_owner;

CREATE FUNCTION public.add_workspace(workspace text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.check_name('workspace', add_workspace.workspace);
    INSERT INTO datatable_roles.workspace (name) VALUES (add_workspace.workspace)
    ON CONFLICT DO NOTHING;
END;
$$;

ALTER FUNCTION public.add_workspace(workspace text) OWNER TO dtr_owner;

CREATE FUNCTION public.add_workspace_user(workspace text, username text, email text, is_admin boolean DEFAULT false) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    ws text := add_workspace_user.workspace;
    uname text := add_workspace_user.username;
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.check_name('user', uname);
    PERFORM datatable_roles.check_email(add_workspace_user.email);
    PERFORM datatable_roles.require(add_workspace_user.is_admin, 'is_admin');
    IF EXISTS (
        SELECT FROM datatable_roles.workspace_user AS u
        WHERE u.workspace = ws AND lower(u.email) = lower(add_workspace_user.email)
            AND u.username <> uname
    ) THEN
        RAISE EXCEPTION 'email % already belongs to another user of workspace %',
            quote_literal(add_workspace_user.email), quote_literal(ws)
            USING ERRCODE = 'unique_violation';
    END IF;
    INSERT INTO datatable_roles.workspace_user AS u (workspace, username, email, is_admin)
    VALUES (ws, uname, add_workspace_user.email, add_workspace_user.is_admin)
    ON CONFLICT ON CONSTRAINT workspace_user_pkey
    DO UPDATE SET email = excluded.email, is_admin = excluded.is_admin;
END;
$$;

ALTER FUNCTION public.add_workspace_user(workspace text, username text, email text, is_admin boolean) OWNER TO dtr_owner;

CREATE FUNCTION public.apply_datatable_acl(workspace text, datatable text, target jsonb, change jsonb, statements text[]) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable;
    plan jsonb;
    planned text [];
    first_difference integer;
    audit_id bigint;
    conn text;
    run_as text [];
    acting_for text [];
    n integer := 0;
BEGIN
    PERFORM datatable_roles.require(apply_datatable_acl.statements, 'statements');
    entry := datatable_roles.acl_entry(apply_datatable_acl.workspace, apply_datatable_acl.datatable);
    -- One apply at a time per database: the second plans after the first committed.
    PERFORM pg_advisory_xact_lock(hashtextextended('datatable_roles.acl:' || entry.dbname, 0));
    -- A GRANT or REVOKE on the database rewrites its access list, as first
    -- uses and the sweep do: PostgreSQL fails one of two such writers at once
    -- with XX000 "tuple concurrently updated" (docs/lifecycle.md, locks).
    PERFORM datatable_roles.lock_database_access(entry.dbname);
    plan := datatable_roles.acl_plan(entry, apply_datatable_acl.target, apply_datatable_acl.change);
    planned := ARRAY(SELECT jsonb_array_elements_text(plan -> 'statements'));
    run_as := ARRAY(SELECT jsonb_array_elements_text(plan -> 'run_as'));
    IF planned IS DISTINCT FROM apply_datatable_acl.statements THEN
        SELECT min(i) INTO first_difference
        FROM generate_series(1, greatest(cardinality(planned), cardinality(apply_datatable_acl.statements))) AS i
        WHERE planned[i] IS DISTINCT FROM apply_datatable_acl.statements[i];
        RAISE EXCEPTION 'the plan changed since it was shown: nothing applied'
            USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'plan_changed',
                  DETAIL = format('%s statements were shown, %s are planned now; they differ from statement %s on.',
                      cardinality(apply_datatable_acl.statements), cardinality(planned), first_difference),
                  HINT = 'Plan again with plan_datatable_acl, review the statements and warnings, and apply those.';
    END IF;
    IF cardinality(planned) = 0 THEN
        RETURN plan || jsonb_build_object('applied', 0, 'audit_id', NULL);
    END IF;
    INSERT INTO datatable_roles.acl_change (
        applied_by, workspace, datatable, dbname, target, change, statements, warnings
    )
    VALUES (
        coalesce(nullif(current_setting('role'), 'none'), session_user),
        entry.workspace, entry.name, entry.dbname, plan -> 'target', plan -> 'change', planned,
        plan -> 'warnings'
    )
    RETURNING id INTO audit_id;
    -- On another server the admin login applies: the manager makes it a
    -- member of the roles the statements run as (and of a new owner), for
    -- this apply only (docs/servers.md).
    acting_for := datatable_roles.acl_acting_for(entry, plan);
    IF acting_for <> '{}' THEN
        PERFORM datatable_roles.exec_as_manager(entry.server,
            datatable_roles.membership_statement(acting_for, entry.admin_login, true));
    END IF;
    conn := datatable_roles.acl_connect(entry, true);
    BEGIN
        PERFORM datatable_roles.session_exec(conn,
            'SET ROLE NONE; SET search_path = pg_catalog, pg_temp; BEGIN');
        FOR i IN 1 .. cardinality(planned) LOOP
            -- As the object's owner, so that PostgreSQL records the owner as
            -- grantor and a REVOKE removes the owner's grant (docs/acl.md).
            IF run_as[i] IS NOT NULL THEN
                PERFORM datatable_roles.session_exec(conn, format('SET ROLE %I', run_as[i]));
            END IF;
            PERFORM datatable_roles.session_exec(conn, planned[i]);
            PERFORM datatable_roles.session_exec(conn, 'SET ROLE NONE');
            n := n + 1;
        END LOOP;
        PERFORM datatable_roles.fault_point('acl:before_remote_commit');
        PERFORM datatable_roles.session_exec(conn, 'COMMIT');
    EXCEPTION WHEN OTHERS THEN
        -- Closing the session rolls back whatever ran there.
        PERFORM datatable_roles.acl_disconnect();
        PERFORM datatable_roles.acl_end_acting_for(entry, acting_for);
        RAISE;
    END;
    PERFORM datatable_roles.acl_disconnect();
    PERFORM datatable_roles.acl_end_acting_for(entry, acting_for);
    RETURN plan || jsonb_build_object('applied', n, 'audit_id', audit_id);
END;
$$;

ALTER FUNCTION public.apply_datatable_acl(workspace text, datatable text, target jsonb, change jsonb, statements text[]) OWNER TO dtr_owner;

CREATE FUNCTION public.cached_result_path(job_id uuid, runnable text, args jsonb) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    job datatable_roles.job_perms;
BEGIN
    PERFORM datatable_roles.require(cached_result_path.job_id, 'job_id');
    PERFORM datatable_roles.require(cached_result_path.runnable, 'runnable');
    SELECT p.* INTO job FROM datatable_roles.job_perms AS p WHERE p.job_id = cached_result_path.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % was never recorded', cached_result_path.job_id
            USING ERRCODE = 'no_data_found', HINT = 'Call record_job_start first.';
    END IF;
    RETURN format('%s/cache/%s', job.workspace, encode(sha256(convert_to(
        jsonb_build_array(
            job.workspace, cached_result_path.runnable,
            coalesce(cached_result_path.args, 'null'::jsonb), job.permissioned_as,
            lower(job.end_user_email)
        )::text, 'UTF8'
    )), 'hex'));
END;
$$;

ALTER FUNCTION public.cached_result_path(job_id uuid, runnable text, args jsonb) OWNER TO dtr_owner;

CREATE FUNCTION public.create_datatable_role(name text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    role_name text := create_datatable_role.name;
    new_id bigint;
BEGIN
    PERFORM public.validate_role_name(role_name);
    IF EXISTS (SELECT FROM datatable_roles.catalog_role AS r WHERE lower(r.name) = lower(role_name)) THEN
        RAISE EXCEPTION 'data table role % already exists', quote_literal(role_name)
            USING ERRCODE = 'duplicate_object';
    END IF;
    IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = role_name) THEN
        RAISE EXCEPTION 'a PostgreSQL role named % already exists in this cluster', quote_literal(role_name)
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Role names are cluster-wide; choose another name.';
    END IF;
    INSERT INTO datatable_roles.catalog_role (name) VALUES (role_name) RETURNING id INTO new_id;
    -- The link login is made a member so that it may later move what the role
    -- owns in each data table database (REASSIGN OWNED needs the privileges
    -- of both roles). The owner, its creator, holds ADMIN on it from 16 on.
    BEGIN
        EXECUTE format(
            'CREATE ROLE %I WITH NOLOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION ROLE %I',
            role_name, datatable_roles.link_login()
        );
    EXCEPTION WHEN reserved_name THEN
        RAISE EXCEPTION 'role name % is reserved by PostgreSQL', quote_literal(role_name)
            USING ERRCODE = 'invalid_parameter_value';
    END;
    RETURN new_id;
END;
$$;

ALTER FUNCTION public.create_datatable_role(name text) OWNER TO dtr_owner;

CREATE FUNCTION public.datatable_acl(workspace text, datatable text, target jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable := datatable_roles.acl_entry(datatable_acl.workspace,
        datatable_acl.datatable);
    t jsonb := datatable_roles.acl_target(datatable_acl.target);
    tkind text := datatable_roles.acl_target_kind(t);
    snap jsonb := datatable_roles.acl_snapshot(entry, t, NULL);
    obj jsonb;
    result jsonb;
BEGIN
    obj := CASE tkind WHEN 'database' THEN snap -> 'database' WHEN 'schema' THEN snap -> 'schema'
        ELSE snap -> 'relations' -> 0 END;
    result := jsonb_build_object(
        'datatable', entry.workspace || '/' || entry.name,
        'database', entry.dbname,
        'target', t,
        'kind', CASE WHEN tkind = 'table' THEN datatable_roles.acl_relkind_name(obj ->> 'relkind')
            ELSE tkind END,
        'owner', datatable_roles.acl_label(entry, obj ->> 'owner'),
        'grants', datatable_roles.acl_grants(entry, obj -> 'grants'),
        'server_version_num', (snap ->> 'version')::integer);
    IF obj ->> 'owner' = 'pg_database_owner' THEN
        result := result || jsonb_build_object('owner_note',
            'owned by pg_database_owner, which is the database''s owner: the admin login');
    END IF;
    IF tkind = 'table' THEN
        result := result || jsonb_build_object(
            'row_security', (obj ->> 'row_security')::boolean,
            'force_row_security', (obj ->> 'force_row_security')::boolean,
            'security_invoker', (obj ->> 'security_invoker')::boolean,
            'default_privileges', '[]'::jsonb, 'children', '[]'::jsonb);
        RETURN result;
    END IF;
    result := result || jsonb_build_object('default_privileges', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'for_role', datatable_roles.acl_label(entry, a ->> 'for_role'),
            'kind', CASE a ->> 'objtype' WHEN 'r' THEN 'tables' WHEN 'S' THEN 'sequences'
                WHEN 'f' THEN 'functions' WHEN 'T' THEN 'types' WHEN 'n' THEN 'schemas'
                ELSE a ->> 'objtype' END,
            'grants', datatable_roles.acl_grants(entry, a -> 'grants')))
        FROM jsonb_array_elements(snap -> 'default_acl') AS a), '[]'::jsonb));
    IF tkind = 'database' THEN
        result := result || jsonb_build_object('children', coalesce((
            SELECT jsonb_agg(jsonb_build_object('schema', s ->> 'name',
                'owner', datatable_roles.acl_label(entry, s ->> 'owner')))
            FROM jsonb_array_elements(snap -> 'schemas') AS s), '[]'::jsonb));
    ELSE
        result := result || jsonb_build_object('children', coalesce((
            SELECT jsonb_agg(jsonb_build_object('table', r ->> 'name',
                'kind', datatable_roles.acl_relkind_name(r ->> 'relkind'),
                'owner', datatable_roles.acl_label(entry, r ->> 'owner'),
                'row_security', (r ->> 'row_security')::boolean))
            FROM jsonb_array_elements(snap -> 'relations') AS r), '[]'::jsonb));
    END IF;
    RETURN result;
END;
$$;

ALTER FUNCTION public.datatable_acl(workspace text, datatable text, target jsonb) OWNER TO dtr_owner;

CREATE FUNCTION public.drop_datatable_role(name text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    target datatable_roles.catalog_role := datatable_roles.require_role(drop_datatable_role.name);
    held text;
    failed text [];
BEGIN
    -- The role's row first, as retirement and every resolve take it: no
    -- resolve makes a login of it from here on, and none holds a lock this
    -- drop takes later while waiting for the row.
    PERFORM FROM datatable_roles.catalog_role AS r WHERE r.id = target.id FOR UPDATE;
    -- Then the locks of the logins holding it (retired below), before the
    -- access-list locks of the moves: a sweep or rotation of one of them
    -- (its lock, then an access-list lock) cannot wait for this drop while
    -- it waits for them.
    FOR held IN
        SELECT s.login FROM datatable_roles.datatable_role_set AS s
        WHERE s.role_ids @> array[target.id] ORDER BY s.login
    LOOP
        PERFORM datatable_roles.lock_set_login(held);
    END LOOP;
    -- In sessions of their own: DROP OWNED there also revokes the role's
    -- grants on databases, rows this transaction must not hold meanwhile.
    failed := datatable_roles.move_objects_of(target.name);
    IF failed <> '{}' THEN
        RAISE EXCEPTION 'role % could not be dropped: %', quote_literal(target.name),
            array_to_string(failed, '; ')
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'What could be moved now belongs to the data table''s admin login; fix the rest and drop it again.';
    END IF;
    PERFORM datatable_roles.fault_point('drop_role:after_move');
    PERFORM public.retire_role_set_logins_of(target.name);
    -- Other servers: after the retirements there (queued in order).
    PERFORM datatable_roles.drop_role_on_servers(target.id, target.name);
    UPDATE datatable_roles.datatable AS d SET default_role = datatable_roles.no_default()
    WHERE d.default_role = target.name;
    DELETE FROM datatable_roles.datatable_role AS m WHERE m.role_id = target.id;
    DELETE FROM datatable_roles.catalog_role AS r WHERE r.id = target.id;
    PERFORM datatable_roles.end_sessions_of(target.name);
    PERFORM datatable_roles.revoke_database_grants(target.name);
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

ALTER FUNCTION public.drop_datatable_role(name text) OWNER TO dtr_owner;

CREATE FUNCTION public.explain_datatable_role(job_id uuid, datatable text, role text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
    d datatable_roles.decision;
    r record;
BEGIN
    PERFORM datatable_roles.require(explain_datatable_role.job_id, 'job_id');
    PERFORM datatable_roles.require(explain_datatable_role.datatable, 'datatable');
    d := datatable_roles.decide(explain_datatable_role.job_id, explain_datatable_role.datatable,
        explain_datatable_role.role, false, true);
    IF d.refused_case IS NOT NULL THEN
        SELECT f.message, f.hint INTO r
        FROM datatable_roles.refusal_of(d, explain_datatable_role.datatable,
            explain_datatable_role.role) AS f;
        RETURN jsonb_build_object(
            'job_id', explain_datatable_role.job_id, 'datatable', explain_datatable_role.datatable,
            'role', explain_datatable_role.role,
            'steps', datatable_roles.explain_steps(d, explain_datatable_role.role),
            'refused', jsonb_build_object('rule', d.refused_case, 'message', r.message,
                'hint', r.hint));
    END IF;
    RETURN jsonb_build_object(
        'job_id', explain_datatable_role.job_id, 'datatable', explain_datatable_role.datatable,
        'role', explain_datatable_role.role,
        'steps', datatable_roles.explain_steps(d, explain_datatable_role.role),
        'dbname', d.dbname, 'roles', to_jsonb(d.role_names), 'login', d.login,
        'login_kind', d.login_kind,
        'login_exists', EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = d.login));
END;
$$;

ALTER FUNCTION public.explain_datatable_role(job_id uuid, datatable text, role text) OWNER TO dtr_owner;

CREATE FUNCTION public.forget_workspace_user(workspace text, username text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    tenant_key text := 'u/' || forget_workspace_user.username;
    maps integer;
    admins integer;
BEGIN
    PERFORM datatable_roles.require(forget_workspace_user.workspace, 'workspace');
    PERFORM datatable_roles.require(forget_workspace_user.username, 'username');
    UPDATE datatable_roles.datatable_role AS m
    SET tenants = array_remove(m.tenants, tenant_key)
    FROM datatable_roles.datatable AS d
    WHERE d.id = m.datatable_id AND d.workspace = forget_workspace_user.workspace
        AND tenant_key = ANY(m.tenants);
    GET DIAGNOSTICS maps = ROW_COUNT;
    UPDATE datatable_roles.datatable AS d
    SET admin_tenants = array_remove(d.admin_tenants, tenant_key)
    WHERE d.workspace = forget_workspace_user.workspace AND tenant_key = ANY(d.admin_tenants);
    GET DIAGNOSTICS admins = ROW_COUNT;
    DELETE FROM datatable_roles.tenant_user AS b
    WHERE b.workspace = forget_workspace_user.workspace
        AND b.username = forget_workspace_user.username;
    RETURN maps + admins;
END;
$$;

ALTER FUNCTION public.forget_workspace_user(workspace text, username text) OWNER TO dtr_owner;

CREATE FUNCTION public.heal_refused_login(login text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable;
    why text;
BEGIN
    PERFORM datatable_roles.require(heal_refused_login.login, 'login');
    IF EXISTS (
        SELECT FROM datatable_roles.datatable_role_set AS s WHERE s.login = heal_refused_login.login
    ) THEN
        RETURN datatable_roles.heal_set_login(heal_refused_login.login);
    END IF;
    SELECT d.* INTO entry FROM datatable_roles.datatable AS d
    WHERE d.admin_login = heal_refused_login.login AND d.governing_id IS NULL
    ORDER BY d.id LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'login % is not one this instance hands out',
            quote_ident(left(heal_refused_login.login, 80))
            USING ERRCODE = 'undefined_object';
    END IF;
    why := datatable_roles.login_fails_on(entry.server, entry.dbname, entry.admin_login,
        entry.admin_password);
    IF why IS NULL THEN
        RETURN 'works';
    END IF;
    PERFORM datatable_roles.require_reaches(entry.server, entry.dbname);
    IF datatable_roles.wrong_password(why) THEN
        PERFORM datatable_roles.refuse_admin_password(format('%s/%s', entry.workspace, entry.name),
            entry.admin_login);
    END IF;
    RAISE EXCEPTION 'admin login % is refused by database %', quote_ident(entry.admin_login),
        quote_ident(entry.dbname)
        USING ERRCODE = 'sqlclient_unable_to_establish_sqlconnection', DETAIL = why,
              HINT = 'Not for its password: see the reason (pg_hba.conf, NOLOGIN, CONNECT).';
END;
$$;

ALTER FUNCTION public.heal_refused_login(login text) OWNER TO dtr_owner;

CREATE FUNCTION public.plan_datatable_acl(workspace text, datatable text, target jsonb, change jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    RETURN datatable_roles.acl_plan(
        datatable_roles.acl_entry(plan_datatable_acl.workspace, plan_datatable_acl.datatable),
        plan_datatable_acl.target, plan_datatable_acl.change);
END;
$$;

ALTER FUNCTION public.plan_datatable_acl(workspace text, datatable text, target jsonb, change jsonb) OWNER TO dtr_owner;

CREATE FUNCTION public.preview_datatable_role_change(change text, role text, workspace text DEFAULT NULL::text, datatable text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    kind text := preview_datatable_role_change.change;
    role_name text := preview_datatable_role_change.role;
    target datatable_roles.catalog_role;
    entry datatable_roles.datatable;
    notes jsonb;
BEGIN
    PERFORM datatable_roles.require(kind, 'change');
    PERFORM datatable_roles.require(role_name, 'role');
    IF kind NOT IN ('remove', 'disable', 'retire', 'drop') THEN
        RAISE EXCEPTION 'invalid change %', quote_literal(left(kind, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use remove, disable, retire or drop.';
    END IF;
    IF kind = 'remove' THEN
        PERFORM datatable_roles.require(preview_datatable_role_change.workspace, 'workspace');
        PERFORM datatable_roles.require(preview_datatable_role_change.datatable, 'datatable');
    ELSIF preview_datatable_role_change.workspace IS NOT NULL
        OR preview_datatable_role_change.datatable IS NOT NULL THEN
        RAISE EXCEPTION 'a % applies to the catalog role: workspace and datatable must be NULL', kind
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The switch names this transaction (previewing()).
    PERFORM pg_current_xact_id();
    BEGIN
        PERFORM set_config('datatable_roles.preview', pg_current_xact_id()::text, true);
        PERFORM set_config('datatable_roles.preview_notes', '[]', true);
        CASE kind
            WHEN 'remove' THEN
                PERFORM public.remove_datatable_role(preview_datatable_role_change.workspace,
                    preview_datatable_role_change.datatable, role_name);
            WHEN 'disable' THEN
                PERFORM public.set_datatable_role_enabled(role_name, false);
            WHEN 'retire' THEN
                PERFORM public.retire_role_set_logins_of(role_name);
            ELSE
                PERFORM public.retire_role_set_logins_of(role_name);
                PERFORM datatable_roles.end_sessions_of(role_name);
        END CASE;
        notes := current_setting('datatable_roles.preview_notes')::jsonb;
        RAISE EXCEPTION 'preview rolled back' USING ERRCODE = 'DTRPV';
    EXCEPTION WHEN SQLSTATE 'DTRPV' THEN
        NULL;
    END;

    target := datatable_roles.require_role(role_name);
    IF kind = 'remove' THEN
        entry := datatable_roles.require_governing_datatable(
            preview_datatable_role_change.workspace, preview_datatable_role_change.datatable);
    END IF;
    RETURN datatable_roles.preview_report(kind, target, entry, notes);
END;
$$;

ALTER FUNCTION public.preview_datatable_role_change(change text, role text, workspace text, datatable text) OWNER TO dtr_owner;

CREATE FUNCTION public.reconcile_directory() RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    k record;
    forgotten text [] := '{}'::text [];
    bound integer := 0;
BEGIN
    FOR k IN
        SELECT keys.workspace, keys.username, b.incarnation AS bound_to, m.incarnation AS now_is
        FROM (
            SELECT b.workspace, b.username FROM datatable_roles.tenant_user AS b
            UNION
            SELECT d.workspace, substr(t.k, 3)
            FROM datatable_roles.datatable AS d
            LEFT JOIN datatable_roles.datatable_role AS m ON m.datatable_id = d.id
            CROSS JOIN LATERAL unnest(coalesce(m.tenants, '{}') || d.admin_tenants) AS t (k)
            WHERE starts_with(t.k, 'u/')
        ) AS keys
        LEFT JOIN datatable_roles.tenant_user AS b
            ON b.workspace = keys.workspace AND b.username = keys.username
        LEFT JOIN LATERAL datatable_roles.directory_member(keys.workspace, keys.username) AS m
            ON true
        ORDER BY keys.workspace, keys.username
    LOOP
        IF k.now_is IS NULL OR k.bound_to IS DISTINCT FROM k.now_is AND k.bound_to IS NOT NULL THEN
            PERFORM public.forget_workspace_user(k.workspace, k.username);
            forgotten := forgotten || (k.workspace || '/' || k.username);
        ELSIF k.bound_to IS NULL THEN
            INSERT INTO datatable_roles.tenant_user (workspace, username, incarnation)
            VALUES (k.workspace, k.username, k.now_is);
            bound := bound + 1;
        END IF;
    END LOOP;
    RETURN jsonb_build_object('forgotten', to_jsonb(forgotten), 'bound', bound);
END;
$$;

ALTER FUNCTION public.reconcile_directory() OWNER TO dtr_owner;

CREATE FUNCTION public.record_job_start(job_id uuid, workspace text, permissioned_as text, origin text, caller_email text DEFAULT NULL::text, token_job_id uuid DEFAULT NULL::uuid) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    ws text := record_job_start.workspace;
    identity_name text;
    identity record;
    identity_groups text [];
    identity_folders text [];
    viewer text;
BEGIN
    -- The checks' helpers (each a call) run only to raise their error.
    IF record_job_start.job_id IS NULL OR ws IS NULL OR record_job_start.permissioned_as IS NULL
        OR record_job_start.origin IS NULL THEN
        PERFORM datatable_roles.require(record_job_start.job_id, 'job_id');
        PERFORM datatable_roles.require_workspace(ws);
        PERFORM datatable_roles.require(record_job_start.permissioned_as, 'permissioned_as');
        PERFORM datatable_roles.require(record_job_start.origin, 'origin');
    END IF;
    IF record_job_start.permissioned_as !~ '^u/' THEN
        RAISE EXCEPTION 'invalid permissioned_as %', quote_literal(left(record_job_start.permissioned_as, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'A job identity is u/<username>.';
    END IF;
    identity_name := substr(record_job_start.permissioned_as, 3);
    IF NOT datatable_roles.name_ok(identity_name) THEN
        PERFORM datatable_roles.check_name('user', identity_name);
    END IF;
    -- require_member's lookup, as one statement of this function.
    SELECT m.* INTO identity FROM datatable_roles.directory_member(ws, identity_name) AS m
    WHERE EXISTS (SELECT FROM datatable_roles.directory_workspace_exists(ws));
    IF NOT FOUND THEN
        PERFORM datatable_roles.require_member(ws, identity_name);
    END IF;

    viewer := datatable_roles.job_viewer(ws, record_job_start.origin, record_job_start.caller_email,
        record_job_start.token_job_id);
    IF EXISTS (SELECT FROM datatable_roles.job_perms AS p WHERE p.job_id = record_job_start.job_id) THEN
        RAISE EXCEPTION 'job % is already recorded; its viewer cannot change', record_job_start.job_id
            USING ERRCODE = 'unique_violation';
    END IF;

    -- A username given to someone else since u/<it> was written: its keys
    -- named the one before, and are forgotten now, before they are captured.
    IF EXISTS (SELECT FROM datatable_roles.user_key_stale(ws, identity_name, identity.incarnation)) THEN
        PERFORM public.forget_workspace_user(ws, identity_name);
    END IF;
    -- The identity's groups (member_keys' g/ keys), and of its folders those
    -- a tenant list of the workspace names (tenant_folder): the only f/ keys
    -- a rule can match. Named folders are looked up by key, so the cost
    -- follows the maps, not the identity's folders (docs/rules.md, Inputs).
    -- Statements of this function, so that their plans are kept.
    identity_groups := ARRAY(
        SELECT g FROM datatable_roles.directory_groups(ws, identity_name, identity.email) AS g
        ORDER BY g);
    -- (The named folders as a lateral column: an argument with a subquery
    -- would keep the seam function from being inlined.)
    identity_folders := ARRAY(
        SELECT f
        FROM (
            SELECT ARRAY(SELECT t.folder FROM datatable_roles.tenant_folder AS t
                WHERE t.workspace = ws) AS folders
        ) AS named
        CROSS JOIN LATERAL datatable_roles.directory_folders_among(
            ws, identity_name, identity_groups, named.folders) AS f
        ORDER BY f);
    INSERT INTO datatable_roles.job_perms (
        job_id, workspace, permissioned_as, email, is_admin, groups, folders,
        end_user_email, origin, token_job_id
    ) VALUES (
        record_job_start.job_id, ws, record_job_start.permissioned_as, identity.email, identity.is_admin,
        identity_groups, identity_folders,
        viewer, record_job_start.origin, record_job_start.token_job_id
    );
    RETURN viewer;
END;
$$;

ALTER FUNCTION public.record_job_start(job_id uuid, workspace text, permissioned_as text, origin text, caller_email text, token_job_id uuid) OWNER TO dtr_owner;

CREATE FUNCTION public.reference_datatable(workspace text, name text, governing_workspace text, governing_name text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    target datatable_roles.datatable :=
        datatable_roles.require_datatable(governing_workspace, governing_name);
    new_id bigint;
BEGIN
    PERFORM datatable_roles.require_workspace(reference_datatable.workspace);
    PERFORM datatable_roles.check_name('datatable', reference_datatable.name);
    IF EXISTS (
        SELECT FROM datatable_roles.datatable AS d
        WHERE d.workspace = reference_datatable.workspace AND d.name = reference_datatable.name
    ) THEN
        RAISE EXCEPTION 'data table % already exists in workspace %',
            quote_literal(reference_datatable.name), quote_literal(reference_datatable.workspace)
            USING ERRCODE = 'duplicate_object';
    END IF;
    INSERT INTO datatable_roles.datatable (workspace, name, governing_id)
    VALUES (reference_datatable.workspace, reference_datatable.name, coalesce(target.governing_id, target.id))
    RETURNING id INTO new_id;
    RETURN new_id;
END;
$$;

ALTER FUNCTION public.reference_datatable(workspace text, name text, governing_workspace text, governing_name text) OWNER TO dtr_owner;

CREATE FUNCTION public.register_datatable(workspace text, name text, dbname text, admin_login text, admin_password text, server text DEFAULT 'local'::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    ws text := register_datatable.workspace;
    on_server datatable_roles.server := datatable_roles.require_server(register_datatable.server);
    new_id bigint;
    public_connect boolean;
BEGIN
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.check_name('datatable', register_datatable.name);
    PERFORM datatable_roles.check_dbname(register_datatable.dbname);
    PERFORM datatable_roles.require(register_datatable.admin_login, 'admin_login');
    PERFORM datatable_roles.require(register_datatable.admin_password, 'admin_password');
    IF register_datatable.admin_password = '' THEN
        RAISE EXCEPTION 'admin_password must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT FROM datatable_roles.datatable AS d
        WHERE d.workspace = ws AND d.name = register_datatable.name
    ) THEN
        RAISE EXCEPTION 'data table % already exists in workspace %',
            quote_literal(register_datatable.name), quote_literal(ws)
            USING ERRCODE = 'duplicate_object';
    END IF;
    IF on_server.name <> 'local' THEN
        PERFORM datatable_roles.check_remote_login_name(register_datatable.admin_login);
        PERFORM datatable_roles.take_remote_admin_login(on_server.name, register_datatable.dbname,
            register_datatable.admin_login, register_datatable.admin_password);
        INSERT INTO datatable_roles.datatable (
            workspace, name, dbname, admin_login, admin_password, default_role, server
        )
        VALUES (ws, register_datatable.name, register_datatable.dbname, register_datatable.admin_login,
            register_datatable.admin_password, 'admin', on_server.name)
        RETURNING id INTO new_id;
        UPDATE datatable_roles.datatable AS d SET admin_password = register_datatable.admin_password
        WHERE d.server = on_server.name AND d.admin_login = register_datatable.admin_login AND d.id <> new_id;
        RETURN new_id;
    END IF;
    PERFORM datatable_roles.take_admin_login(register_datatable.dbname, register_datatable.admin_login);
    INSERT INTO datatable_roles.datatable (
        workspace, name, dbname, admin_login, admin_password, admin_verifier, default_role
    )
    VALUES (ws, register_datatable.name, register_datatable.dbname, register_datatable.admin_login,
        register_datatable.admin_password, datatable_roles.adopt_admin_password(
            register_datatable.dbname, register_datatable.admin_login, register_datatable.admin_password),
        'admin')
    RETURNING id INTO new_id;
    -- Other data tables of the same admin login take the password just
    -- proven and the verifier just set (theirs no longer match).
    UPDATE datatable_roles.datatable AS d
    SET admin_password = n.admin_password, admin_verifier = n.admin_verifier
    FROM datatable_roles.datatable AS n
    WHERE n.id = new_id AND d.admin_login = n.admin_login AND d.id <> n.id AND d.server = 'local';
    -- Only the logins the package hands out, and the roles the operator
    -- grants CONNECT to, may connect to a data table's database.
    PERFORM datatable_roles.lock_database_access(register_datatable.dbname);
    SELECT has_database_privilege('public', pd.oid, 'CONNECT') INTO public_connect
    FROM pg_database AS pd WHERE pd.datname = register_datatable.dbname;
    IF public_connect THEN
        EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM PUBLIC', register_datatable.dbname);
        RAISE NOTICE 'REVOKE CONNECT ON DATABASE % FROM PUBLIC: roles that connected to it through PUBLIC can no longer connect',
            quote_ident(register_datatable.dbname)
            USING HINT = format('Grant CONNECT on %s to the roles that need it (its admin login owns it and keeps it).',
                quote_ident(register_datatable.dbname));
    END IF;
    RETURN new_id;
END;
$$;

ALTER FUNCTION public.register_datatable(workspace text, name text, dbname text, admin_login text, admin_password text, server text) OWNER TO dtr_owner;

CREATE FUNCTION public.register_datatable_server(name text, host text, port integer, manager_login text, manager_password text, sslmode text DEFAULT 'require'::text, maintenance_db text DEFAULT 'postgres'::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
DECLARE
    failure text;
    problem text;
BEGIN
    PERFORM datatable_roles.check_name('server', register_datatable_server.name);
    PERFORM datatable_roles.require(register_datatable_server.host, 'host');
    PERFORM datatable_roles.require(register_datatable_server.port, 'port');
    PERFORM datatable_roles.require(register_datatable_server.manager_login, 'manager_login');
    PERFORM datatable_roles.require(register_datatable_server.manager_password, 'manager_password');
    PERFORM datatable_roles.check_dbname(register_datatable_server.maintenance_db);
    PERFORM datatable_roles.check_remote_login_name(register_datatable_server.manager_login);
    IF register_datatable_server.host = '' OR register_datatable_server.manager_password = ''
        OR register_datatable_server.port NOT BETWEEN 1 AND 65535
        OR coalesce(register_datatable_server.sslmode, '') NOT IN
            ('disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full') THEN
        RAISE EXCEPTION 'invalid connection parameters for server %', register_datatable_server.name
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A host, a port from 1 to 65535, an sslmode libpq knows, and a manager password.';
    END IF;
    IF EXISTS (SELECT FROM datatable_roles.server AS sv WHERE sv.name = register_datatable_server.name) THEN
        RAISE EXCEPTION 'server % is already registered', register_datatable_server.name
            USING ERRCODE = 'duplicate_object';
    END IF;
    INSERT INTO datatable_roles.server (name, host, port, sslmode, maintenance_db, manager_login, manager_password)
    VALUES (register_datatable_server.name, register_datatable_server.host, register_datatable_server.port,
        register_datatable_server.sslmode, register_datatable_server.maintenance_db,
        register_datatable_server.manager_login, register_datatable_server.manager_password);
    failure := datatable_roles.login_fails_on(register_datatable_server.name,
        register_datatable_server.maintenance_db, register_datatable_server.manager_login,
        register_datatable_server.manager_password);
    IF failure IS NOT NULL THEN
        RAISE EXCEPTION 'manager login % could not log in to server %', quote_literal(register_datatable_server.manager_login),
            register_datatable_server.name
            USING ERRCODE = CASE WHEN datatable_roles.wrong_password(failure) THEN 'invalid_password'
                      ELSE 'sqlclient_unable_to_establish_sqlconnection' END,
                  DETAIL = failure, HINT = 'Check the host, port, sslmode and the manager''s password.';
    END IF;
    problem := datatable_roles.value_as_manager(register_datatable_server.name, $q$
        SELECT concat_ws(', ',
            CASE WHEN pr.rolsuper THEN 'SUPERUSER' END,
            CASE WHEN NOT pr.rolcreaterole THEN 'no CREATEROLE' END,
            CASE WHEN NOT pg_has_role(current_user, 'pg_signal_backend', 'USAGE')
                THEN 'no pg_signal_backend' END)
        FROM pg_roles AS pr WHERE pr.rolname = current_user$q$);
    IF problem <> '' THEN
        RAISE EXCEPTION 'login % may not manage server %: it has %', quote_literal(register_datatable_server.manager_login),
            register_datatable_server.name, problem
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Use a NOSUPERUSER login with CREATEROLE and pg_signal_backend (a managed service''s admin role).';
    END IF;
END;
$_$;

ALTER FUNCTION public.register_datatable_server(name text, host text, port integer, manager_login text, manager_password text, sslmode text, maintenance_db text) OWNER TO dtr_owner;

CREATE FUNCTION public.remove_datatable_role(workspace text, datatable text, role text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable :=
        datatable_roles.require_governing_datatable(workspace, datatable);
    target datatable_roles.catalog_role;
BEGIN
    PERFORM datatable_roles.require(remove_datatable_role.role, 'role');
    IF remove_datatable_role.role = 'admin' THEN
        RAISE EXCEPTION 'admin is always in the role map of a data table'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Set its tenants to ''{}'' with set_datatable_role_tenants instead.';
    END IF;
    target := datatable_roles.require_role(remove_datatable_role.role);
    -- The role's row first, as retirement and every resolve take it (then the
    -- map rows, then each login's lock): a resolve making a login of it
    -- finishes first and its login is retired below, or sees the removal;
    -- and two removals of the role from data tables on one database run one
    -- after the other, so the second sees the first's and retires.
    PERFORM FROM datatable_roles.catalog_role AS r WHERE r.id = target.id FOR UPDATE;
    DELETE FROM datatable_roles.datatable_role AS m
    WHERE m.datatable_id = entry.id AND m.role_id = target.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role % is not in the role map of data table %/%',
            quote_literal(target.name), entry.workspace, entry.name
            USING ERRCODE = 'no_data_found';
    END IF;
    UPDATE datatable_roles.datatable AS d SET default_role = datatable_roles.no_default()
    WHERE d.id = entry.id AND d.default_role = target.name;
    IF NOT EXISTS (
        SELECT FROM datatable_roles.datatable_role AS m
        JOIN datatable_roles.datatable AS d ON d.id = m.datatable_id
        WHERE m.role_id = target.id AND d.dbname = entry.dbname AND d.server = entry.server
    ) THEN
        PERFORM datatable_roles.retire_logins_holding(target.id, entry.dbname, entry.server);
    END IF;
END;
$$;

ALTER FUNCTION public.remove_datatable_role(workspace text, datatable text, role text) OWNER TO dtr_owner;

CREATE FUNCTION public.remove_group_member(workspace text, group_name text, username text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.require_workspace(remove_group_member.workspace);
    PERFORM datatable_roles.require(remove_group_member.username, 'username');
    PERFORM datatable_roles.require(remove_group_member.group_name, 'group_name');
    DELETE FROM datatable_roles.group_member AS gm
    WHERE gm.workspace = remove_group_member.workspace
        AND gm.group_name = remove_group_member.group_name
        AND gm.username = remove_group_member.username;
    RETURN FOUND;
END;
$$;

ALTER FUNCTION public.remove_group_member(workspace text, group_name text, username text) OWNER TO dtr_owner;

CREATE FUNCTION public.remove_workspace_user(workspace text, username text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    ws text := remove_workspace_user.workspace;
    uname text := remove_workspace_user.username;
    removed boolean;
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.require(uname, 'username');
    DELETE FROM datatable_roles.workspace_user AS u WHERE u.workspace = ws AND u.username = uname;
    removed := FOUND;
    DELETE FROM datatable_roles.group_member AS gm WHERE gm.workspace = ws AND gm.username = uname;
    DELETE FROM datatable_roles.folder_access AS fa
    WHERE fa.workspace = ws AND fa.principal = 'u/' || uname;
    PERFORM public.forget_workspace_user(ws, uname);
    RETURN removed;
END;
$$;

ALTER FUNCTION public.remove_workspace_user(workspace text, username text) OWNER TO dtr_owner;

CREATE FUNCTION public.rename_datatable_role(name text, new_name text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    old_role datatable_roles.catalog_role := datatable_roles.require_role(rename_datatable_role.name);
BEGIN
    PERFORM public.validate_role_name(new_name);
    IF new_name = old_role.name THEN
        RETURN;
    END IF;
    IF EXISTS (
        SELECT FROM datatable_roles.catalog_role AS r
        WHERE lower(r.name) = lower(new_name) AND r.id <> old_role.id
    ) OR EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = new_name) THEN
        RAISE EXCEPTION 'a role named % already exists', quote_literal(new_name)
            USING ERRCODE = 'duplicate_object';
    END IF;
    UPDATE datatable_roles.catalog_role AS r SET name = new_name WHERE r.id = old_role.id;
    UPDATE datatable_roles.datatable AS d SET default_role = new_name
    WHERE d.default_role = old_role.name;
    BEGIN
        EXECUTE format('ALTER ROLE %I RENAME TO %I', old_role.name, new_name);
    EXCEPTION WHEN reserved_name THEN
        RAISE EXCEPTION 'role name % is reserved by PostgreSQL', quote_literal(new_name)
            USING ERRCODE = 'invalid_parameter_value';
    END;
    PERFORM datatable_roles.rename_role_on_servers(old_role.id, old_role.name, new_name);
END;
$$;

ALTER FUNCTION public.rename_datatable_role(name text, new_name text) OWNER TO dtr_owner;

CREATE FUNCTION public.resolve_datatable_role(job_id uuid, datatable text, role text DEFAULT NULL::text, for_migration boolean DEFAULT false, OUT dbname text, OUT login text, OUT password text, OUT roles text[], OUT login_kind text, OUT host text, OUT port integer, OUT sslmode text) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
    AS $$
DECLARE
    d datatable_roles.decision;
BEGIN
    IF resolve_datatable_role.job_id IS NULL OR resolve_datatable_role.datatable IS NULL
        OR resolve_datatable_role.for_migration IS NULL THEN
        PERFORM datatable_roles.require(resolve_datatable_role.job_id, 'job_id');
        PERFORM datatable_roles.require(resolve_datatable_role.datatable, 'datatable');
        PERFORM datatable_roles.require(resolve_datatable_role.for_migration, 'for_migration');
    END IF;
    d := datatable_roles.decide(resolve_datatable_role.job_id, resolve_datatable_role.datatable,
        resolve_datatable_role.role, resolve_datatable_role.for_migration, false);
    IF d.refused_case IS NOT NULL THEN
        PERFORM datatable_roles.refuse(d, resolve_datatable_role.datatable,
            resolve_datatable_role.role);
    END IF;
    IF d.server <> 'local' THEN
        -- Another server (docs/servers.md): where to connect, and no login
        -- while a change the catalog made has not reached it.
        IF EXISTS (SELECT FROM datatable_roles.server_change AS c WHERE c.server = d.server) THEN
            PERFORM datatable_roles.refuse_while_pending(d.server);
        END IF;
        SELECT sv.host, sv.port, sv.sslmode INTO host, port, sslmode
        FROM datatable_roles.server AS sv WHERE sv.name = d.server;
    END IF;
    dbname := d.dbname;
    roles := d.role_names;
    login_kind := d.login_kind;
    login := d.login;
    password := d.password;
    IF password IS NULL THEN
        -- A set login to touch, make or take back.
        SELECT s.login, s.password INTO login, password
        FROM datatable_roles.ensure_set_login(d.dbname, d.role_ids, d.server) AS s;
    END IF;
END;
$$;

ALTER FUNCTION public.resolve_datatable_role(job_id uuid, datatable text, role text, for_migration boolean, OUT dbname text, OUT login text, OUT password text, OUT roles text[], OUT login_kind text, OUT host text, OUT port integer, OUT sslmode text) OWNER TO dtr_owner;

CREATE FUNCTION public.retire_role_set_logins_of(role text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
BEGIN
    RETURN datatable_roles.retire_logins_holding(
        (datatable_roles.require_role(retire_role_set_logins_of.role)).id, NULL);
END;
$$;

ALTER FUNCTION public.retire_role_set_logins_of(role text) OWNER TO dtr_owner;

CREATE FUNCTION public.set_datatable_admin_password(workspace text, name text, admin_password text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable := datatable_roles.require_governing_datatable(
        set_datatable_admin_password.workspace, set_datatable_admin_password.name);
    verifier text;
BEGIN
    PERFORM datatable_roles.require(set_datatable_admin_password.admin_password, 'admin_password');
    verifier := datatable_roles.adopt_admin_password(entry.dbname, entry.admin_login,
        set_datatable_admin_password.admin_password);
    UPDATE datatable_roles.datatable AS d
    SET admin_password = set_datatable_admin_password.admin_password, admin_verifier = verifier
    WHERE d.admin_login = entry.admin_login;
END;
$$;

ALTER FUNCTION public.set_datatable_admin_password(workspace text, name text, admin_password text) OWNER TO dtr_owner;

CREATE FUNCTION public.set_datatable_default_role(workspace text, datatable text, role text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable :=
        datatable_roles.require_governing_datatable(workspace, datatable);
    target datatable_roles.catalog_role;
    new_default text;
BEGIN
    IF set_datatable_default_role.role IS NULL THEN
        new_default := datatable_roles.no_default();
    ELSIF set_datatable_default_role.role = 'admin' THEN
        new_default := 'admin';
        RAISE WARNING 'the default role of data table %/% is now admin', entry.workspace, entry.name
            USING DETAIL = 'admin owns the tables and bypasses row-level security; connections naming no role see every row.';
    ELSE
        target := datatable_roles.require_role(set_datatable_default_role.role);
        IF NOT EXISTS (
            SELECT FROM datatable_roles.datatable_role AS m
            WHERE m.datatable_id = entry.id AND m.role_id = target.id
        ) THEN
            RAISE EXCEPTION 'role % is not in the role map of data table %/%',
                quote_literal(target.name), entry.workspace, entry.name
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Add it with set_datatable_role_tenants first.';
        END IF;
        new_default := target.name;
    END IF;
    UPDATE datatable_roles.datatable AS d SET default_role = new_default WHERE d.id = entry.id;
END;
$$;

ALTER FUNCTION public.set_datatable_default_role(workspace text, datatable text, role text) OWNER TO dtr_owner;

CREATE FUNCTION public.set_datatable_role_enabled(name text, enabled boolean) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    target datatable_roles.catalog_role := datatable_roles.require_role(set_datatable_role_enabled.name);
BEGIN
    PERFORM datatable_roles.require(set_datatable_role_enabled.enabled, 'enabled');
    IF set_datatable_role_enabled.enabled = target.enabled THEN
        RETURN;
    END IF;
    UPDATE datatable_roles.catalog_role AS r SET enabled = set_datatable_role_enabled.enabled
    WHERE r.id = target.id;
    IF NOT set_datatable_role_enabled.enabled THEN
        PERFORM datatable_roles.retire_logins_holding(target.id, NULL);
    END IF;
END;
$$;

ALTER FUNCTION public.set_datatable_role_enabled(name text, enabled boolean) OWNER TO dtr_owner;

CREATE FUNCTION public.set_datatable_role_tenants(workspace text, datatable text, role text, tenants text[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable :=
        datatable_roles.require_governing_datatable(workspace, datatable);
    target datatable_roles.catalog_role;
    tenant_key text;
    clean text [];
BEGIN
    PERFORM datatable_roles.require(set_datatable_role_tenants.role, 'role');
    PERFORM datatable_roles.require(set_datatable_role_tenants.tenants, 'tenants');
    FOREACH tenant_key IN ARRAY set_datatable_role_tenants.tenants LOOP
        PERFORM datatable_roles.check_tenant_key(tenant_key);
        IF tenant_key LIKE 'u/%' THEN
            PERFORM datatable_roles.bind_user_key(entry.workspace, substr(tenant_key, 3));
        ELSIF tenant_key LIKE 'f/%' THEN
            PERFORM datatable_roles.note_folder_key(entry.workspace, substr(tenant_key, 3));
        END IF;
    END LOOP;
    clean := ARRAY(SELECT DISTINCT t FROM unnest(set_datatable_role_tenants.tenants) AS t ORDER BY t);
    IF set_datatable_role_tenants.role = 'admin' THEN
        UPDATE datatable_roles.datatable AS d SET admin_tenants = clean WHERE d.id = entry.id;
        RETURN;
    END IF;
    target := datatable_roles.require_role(set_datatable_role_tenants.role);
    -- On another server, the role is made there when a data table first maps it.
    PERFORM datatable_roles.ensure_role_on_server(entry.server, target.id);
    INSERT INTO datatable_roles.datatable_role AS m (datatable_id, role_id, tenants)
    VALUES (entry.id, target.id, clean)
    ON CONFLICT ON CONSTRAINT datatable_role_pkey DO UPDATE SET tenants = excluded.tenants;
END;
$$;

ALTER FUNCTION public.set_datatable_role_tenants(workspace text, datatable text, role text, tenants text[]) OWNER TO dtr_owner;

CREATE FUNCTION public.set_folder_access(workspace text, folder text, principal text, access text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    ws text := set_folder_access.workspace;
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.check_name('folder', set_folder_access.folder);
    PERFORM datatable_roles.require(set_folder_access.principal, 'principal');
    PERFORM datatable_roles.require(set_folder_access.access, 'access');
    IF set_folder_access.principal !~ '^[ug]/' THEN
        RAISE EXCEPTION 'invalid principal %', quote_literal(left(set_folder_access.principal, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'A principal is u/<username> or g/<group>.';
    END IF;
    IF set_folder_access.access NOT IN ('owner', 'write', 'read', 'none') THEN
        RAISE EXCEPTION 'invalid folder access %', quote_literal(left(set_folder_access.access, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Use owner, write, read or none.';
    END IF;
    IF set_folder_access.access = 'none' THEN
        DELETE FROM datatable_roles.folder_access AS fa
        WHERE fa.workspace = ws AND fa.folder = set_folder_access.folder
            AND fa.principal = set_folder_access.principal;
        RETURN;
    END IF;
    IF set_folder_access.principal LIKE 'u/%' THEN
        PERFORM datatable_roles.require_member(ws, substr(set_folder_access.principal, 3));
    ELSE
        PERFORM datatable_roles.check_name('group', substr(set_folder_access.principal, 3));
    END IF;
    INSERT INTO datatable_roles.folder_access AS fa (workspace, folder, principal, access)
    VALUES (ws, set_folder_access.folder, set_folder_access.principal, set_folder_access.access)
    ON CONFLICT ON CONSTRAINT folder_access_pkey DO UPDATE SET access = excluded.access;
END;
$$;

ALTER FUNCTION public.set_folder_access(workspace text, folder text, principal text, access text) OWNER TO dtr_owner;

CREATE PROCEDURE public.sweep_unused_role_set_logins(INOUT report jsonb DEFAULT NULL::jsonb, IN unused_for interval DEFAULT NULL::interval)
    LANGUAGE plpgsql
    AS $$
DECLARE
    state pg_catalog.jsonb := datatable_roles.sweep_start(unused_for);
    victims pg_catalog.text [] := datatable_roles.sweep_victims(state);
BEGIN
    WHILE datatable_roles.sweep_pending(state) LOOP
        state := datatable_roles.sweep_step(state, victims);
        COMMIT;
        IF datatable_roles.sweep_phase_begins(state) THEN
            victims := datatable_roles.sweep_victims(state);
        END IF;
    END LOOP;
    report := datatable_roles.sweep_report(state);
END;
$$;

ALTER PROCEDURE public.sweep_unused_role_set_logins(INOUT report jsonb, IN unused_for interval) OWNER TO dtr_owner;

CREATE FUNCTION public.sync_workspace_directory(workspace text, directory jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    ws text := sync_workspace_directory.workspace;
    d jsonb := sync_workspace_directory.directory;
    u record;
    g record;
    f record;
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.check_name('workspace', ws);
    PERFORM datatable_roles.require(d, 'directory');
    IF jsonb_typeof(d) <> 'object' OR jsonb_typeof(d -> 'users') IS DISTINCT FROM 'array'
        OR jsonb_typeof(d -> 'groups') IS DISTINCT FROM 'object'
        OR jsonb_typeof(d -> 'folders') IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'a directory is an object with users (an array), groups and folders (objects)'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Give all three, empty when there are none: {"users": [], "groups": {}, "folders": {}}.';
    END IF;
    INSERT INTO datatable_roles.workspace (name) VALUES (ws) ON CONFLICT DO NOTHING;
    SELECT * INTO u FROM datatable_roles.sync_users(ws, d -> 'users');
    SELECT * INTO g FROM datatable_roles.sync_group_members(ws, d -> 'groups', u.taken);
    SELECT * INTO f FROM datatable_roles.sync_folder_grants(ws, d -> 'folders', u.taken);
    RETURN jsonb_build_object('workspace', ws,
        'users', jsonb_build_object('added', u.added, 'updated', u.updated, 'removed', u.removed),
        'group_members', jsonb_build_object('added', g.added, 'removed', g.removed),
        'folder_grants', jsonb_build_object('added_or_changed', f.changed, 'removed', f.removed),
        'rejected', u.rejected || g.rejected || f.rejected);
END;
$$;

ALTER FUNCTION public.sync_workspace_directory(workspace text, directory jsonb) OWNER TO dtr_owner;

CREATE FUNCTION public.usable_datatable_roles(workspace text, datatable text, username text) RETURNS TABLE(role text, source text, roles text[], rule text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $$
DECLARE
    entry datatable_roles.datatable;
    gov datatable_roles.datatable;
    member record;
    ident record;
    u record;
    default_name text;
    alone text [];
    with_viewer text [];
BEGIN
    entry := datatable_roles.require_datatable(usable_datatable_roles.workspace,
        usable_datatable_roles.datatable);
    PERFORM datatable_roles.check_name('user', usable_datatable_roles.username);
    SELECT m.* INTO member
    FROM datatable_roles.require_member(usable_datatable_roles.workspace,
        usable_datatable_roles.username) AS m;
    SELECT g.* INTO gov FROM datatable_roles.datatable AS g
    WHERE g.id = coalesce(entry.governing_id, entry.id);

    -- The identity in the governing workspace (docs/rules.md, Inputs).
    SELECT i.is_admin, i.keys INTO ident
    FROM datatable_roles.identity_in(gov.workspace, entry.workspace, member.is_admin,
        datatable_roles.member_keys(entry.workspace, member.username, member.email,
            member.incarnation), member.email) AS i;

    -- R1: admin (always in the map), then each enabled role of the map the
    -- identity may use, by name.
    RETURN QUERY
    SELECT n.name, 'named'::text, array[n.name], 'R1'::text
    FROM (
        SELECT 'admin'::text AS name, 0 AS rank
        WHERE datatable_roles.may_use(ident.is_admin, ident.keys, gov.admin_tenants)
        UNION ALL
        SELECT r.name, 1
        FROM datatable_roles.datatable_role AS m
        JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
        WHERE m.datatable_id = gov.id AND r.enabled
            AND datatable_roles.may_use(ident.is_admin, ident.keys, m.tenants)
    ) AS n
    ORDER BY n.rank, n.name COLLATE "C";

    -- No role named: R2, or R3/R4 with the member as viewer (R9, R10); R5
    -- when empty (unnamed_of, as decide() applies them).
    SELECT n.* INTO u
    FROM datatable_roles.unnamed_of(gov.id, gov.workspace, gov.default_role, ident.is_admin,
        ident.keys, member.email) AS n;
    IF u.rules[1] = 'R2' THEN
        RETURN QUERY SELECT 'admin'::text, 'default'::text, '{admin}'::text [], 'R2'::text;
        RETURN QUERY SELECT 'admin'::text, 'default_as_viewer'::text, '{admin}'::text [],
            'R2'::text;
        RETURN;
    END IF;
    default_name := nullif(gov.default_role, datatable_roles.no_default());
    SELECT s.names INTO alone FROM datatable_roles.roles_of(u.held_ids) AS s;
    SELECT s.names INTO with_viewer FROM datatable_roles.roles_of(u.held_ids || u.viewer_ids) AS s;
    RETURN QUERY SELECT default_name, 'default'::text, nullif(alone, '{}'),
        CASE WHEN alone = '{}' THEN 'R5' ELSE 'R3' END;
    RETURN QUERY SELECT default_name, 'default_as_viewer'::text, nullif(with_viewer, '{}'),
        CASE WHEN 'R5' = ANY(u.rules) THEN 'R5' ELSE u.rules[1] END;
END;
$$;

ALTER FUNCTION public.usable_datatable_roles(workspace text, datatable text, username text) OWNER TO dtr_owner;

CREATE FUNCTION public.validate_role_name(name text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'datatable_roles', 'pg_temp'
    AS $_$
DECLARE
    folded text := lower(validate_role_name.name);
BEGIN
    PERFORM datatable_roles.require(validate_role_name.name, 'name');
    IF validate_role_name.name = '' THEN
        RAISE EXCEPTION 'a role name must not be empty'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF octet_length(validate_role_name.name) > 63 THEN
        RAISE EXCEPTION 'role name % is longer than 63 bytes', quote_literal(left(validate_role_name.name, 80))
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF validate_role_name.name !~ '^[A-Za-z0-9_-]+$' THEN
        RAISE EXCEPTION 'role name % has a character other than ASCII letters, digits, _ and -',
            quote_literal(validate_role_name.name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF folded IN ('admin', 'postgres', 'public', 'current_user', 'current_role', 'session_user',
            'user', 'all', 'none')
        OR starts_with(folded, 'pg_')
        OR starts_with(folded, 'wm_set_')
        OR starts_with(folded, 'windmill_')
        OR starts_with(folded, 'custom_instance_') THEN
        RAISE EXCEPTION 'role name % is reserved', quote_literal(validate_role_name.name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'admin, postgres, public, current_user, current_role, session_user, user, all, none and the prefixes pg_, wm_set_, windmill_ and custom_instance_ are reserved.';
    END IF;
END;
$_$;

ALTER FUNCTION public.validate_role_name(name text) OWNER TO dtr_owner;

CREATE TABLE datatable_roles.acl_change (
    id bigint NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    applied_by text NOT NULL,
    workspace text NOT NULL,
    datatable text NOT NULL,
    dbname text NOT NULL,
    target jsonb NOT NULL,
    change jsonb NOT NULL,
    statements text[] NOT NULL,
    warnings jsonb DEFAULT '[]'::jsonb NOT NULL
);

ALTER TABLE datatable_roles.acl_change OWNER TO dtr_owner;

ALTER TABLE datatable_roles.acl_change ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME datatable_roles.acl_change_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE datatable_roles.catalog_role ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME datatable_roles.catalog_role_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE datatable_roles.datatable ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME datatable_roles.datatable_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE datatable_roles.datatable_role (
    datatable_id bigint NOT NULL,
    role_id bigint NOT NULL,
    tenants text[] DEFAULT '{}'::text[] NOT NULL
);

ALTER TABLE datatable_roles.datatable_role OWNER TO dtr_owner;

CREATE TABLE datatable_roles.entry_point (
    signature text NOT NULL,
    caller text NOT NULL,
    CONSTRAINT entry_point_caller_check CHECK ((caller = ANY (ARRAY['worker'::text, 'directory'::text, 'acl'::text, 'owner'::text])))
);

ALTER TABLE datatable_roles.entry_point OWNER TO dtr_owner;

CREATE TABLE datatable_roles.folder_access (
    workspace text NOT NULL,
    folder text NOT NULL,
    principal text NOT NULL,
    access text NOT NULL,
    CONSTRAINT folder_access_access_check CHECK ((access = ANY (ARRAY['owner'::text, 'write'::text, 'read'::text]))),
    CONSTRAINT folder_access_principal_check CHECK ((principal ~ '^[ug]/'::text))
);

ALTER TABLE datatable_roles.folder_access OWNER TO dtr_owner;

CREATE TABLE datatable_roles.group_member (
    workspace text NOT NULL,
    group_name text NOT NULL,
    username text NOT NULL
);

ALTER TABLE datatable_roles.group_member OWNER TO dtr_owner;

CREATE TABLE datatable_roles.job_perms (
    job_id uuid NOT NULL,
    workspace text NOT NULL,
    permissioned_as text NOT NULL,
    email text NOT NULL,
    is_admin boolean NOT NULL,
    groups text[] NOT NULL,
    folders text[] NOT NULL,
    end_user_email text,
    origin text NOT NULL,
    token_job_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE datatable_roles.job_perms OWNER TO dtr_owner;

CREATE TABLE datatable_roles.link_credential (
    singleton boolean DEFAULT true NOT NULL,
    login text NOT NULL,
    password text NOT NULL,
    verifier text,
    rotated_at timestamp with time zone,
    CONSTRAINT link_credential_singleton_check CHECK (singleton)
);

ALTER TABLE datatable_roles.link_credential OWNER TO dtr_owner;

CREATE TABLE datatable_roles.remote_script (
    name text NOT NULL,
    body text NOT NULL
);

ALTER TABLE datatable_roles.remote_script OWNER TO dtr_owner;

CREATE TABLE datatable_roles.server_change (
    id bigint NOT NULL,
    server text NOT NULL,
    dbname text,
    as_admin boolean DEFAULT false NOT NULL,
    statement text NOT NULL,
    what text NOT NULL,
    queued_at timestamp with time zone NOT NULL,
    tries integer DEFAULT 0 NOT NULL,
    last_error text
);

ALTER TABLE datatable_roles.server_change OWNER TO dtr_owner;

ALTER TABLE datatable_roles.server_change ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME datatable_roles.server_change_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE datatable_roles.server_role (
    server text NOT NULL,
    role_id bigint NOT NULL
);

ALTER TABLE datatable_roles.server_role OWNER TO dtr_owner;

CREATE TABLE datatable_roles.settings (
    singleton boolean DEFAULT true NOT NULL,
    instance_id uuid DEFAULT gen_random_uuid() NOT NULL,
    clock_offset interval DEFAULT '00:00:00'::interval NOT NULL,
    touch_every interval DEFAULT '1 day'::interval NOT NULL,
    unused_after interval DEFAULT '30 days'::interval NOT NULL,
    scram_iterations integer DEFAULT 16 NOT NULL,
    link_host text DEFAULT '127.0.0.1'::text NOT NULL,
    functions_sha256 text,
    rotate_every interval DEFAULT '1 day'::interval NOT NULL,
    login_group text NOT NULL,
    directory text DEFAULT 'builtin'::text NOT NULL,
    CONSTRAINT settings_directory_check CHECK ((directory = ANY (ARRAY['builtin'::text, 'windmill'::text]))),
    CONSTRAINT settings_scram_iterations_check CHECK (((scram_iterations >= 1) AND (scram_iterations <= 100000))),
    CONSTRAINT settings_singleton_check CHECK (singleton)
);

ALTER TABLE datatable_roles.settings OWNER TO dtr_owner;

CREATE TABLE datatable_roles.tenant_folder (
    workspace text NOT NULL,
    folder text NOT NULL
);

ALTER TABLE datatable_roles.tenant_folder OWNER TO dtr_owner;

CREATE TABLE datatable_roles.tenant_user (
    workspace text NOT NULL,
    username text NOT NULL,
    incarnation text NOT NULL
);

ALTER TABLE datatable_roles.tenant_user OWNER TO dtr_owner;

CREATE TABLE datatable_roles.worker_role (
    name text NOT NULL,
    kind text DEFAULT 'worker'::text NOT NULL,
    CONSTRAINT worker_role_kind_check CHECK ((kind = ANY (ARRAY['worker'::text, 'directory'::text, 'acl'::text])))
);

ALTER TABLE datatable_roles.worker_role OWNER TO dtr_owner;

CREATE TABLE datatable_roles.workspace (
    name text NOT NULL
);

ALTER TABLE datatable_roles.workspace OWNER TO dtr_owner;

CREATE TABLE datatable_roles.workspace_user (
    workspace text NOT NULL,
    username text NOT NULL,
    email text NOT NULL,
    is_admin boolean DEFAULT false NOT NULL,
    incarnation bigint NOT NULL
);

ALTER TABLE datatable_roles.workspace_user OWNER TO dtr_owner;

ALTER TABLE datatable_roles.workspace_user ALTER COLUMN incarnation ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME datatable_roles.workspace_user_incarnation_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY datatable_roles.acl_change
    ADD CONSTRAINT acl_change_pkey PRIMARY KEY (id);

ALTER TABLE ONLY datatable_roles.catalog_role
    ADD CONSTRAINT catalog_role_name_key UNIQUE (name);

ALTER TABLE ONLY datatable_roles.catalog_role
    ADD CONSTRAINT catalog_role_pkey PRIMARY KEY (id);

ALTER TABLE ONLY datatable_roles.datatable
    ADD CONSTRAINT datatable_pkey PRIMARY KEY (id);

ALTER TABLE ONLY datatable_roles.datatable_role
    ADD CONSTRAINT datatable_role_pkey PRIMARY KEY (datatable_id, role_id);

ALTER TABLE ONLY datatable_roles.datatable_role_set
    ADD CONSTRAINT datatable_role_set_pkey PRIMARY KEY (login);

ALTER TABLE ONLY datatable_roles.datatable
    ADD CONSTRAINT datatable_workspace_name_key UNIQUE (workspace, name);

ALTER TABLE ONLY datatable_roles.entry_point
    ADD CONSTRAINT entry_point_pkey PRIMARY KEY (signature);

ALTER TABLE ONLY datatable_roles.folder_access
    ADD CONSTRAINT folder_access_pkey PRIMARY KEY (workspace, folder, principal);

ALTER TABLE ONLY datatable_roles.group_member
    ADD CONSTRAINT group_member_pkey PRIMARY KEY (workspace, group_name, username);

ALTER TABLE ONLY datatable_roles.job_perms
    ADD CONSTRAINT job_perms_pkey PRIMARY KEY (job_id);

ALTER TABLE ONLY datatable_roles.link_credential
    ADD CONSTRAINT link_credential_pkey PRIMARY KEY (singleton);

ALTER TABLE ONLY datatable_roles.remote_script
    ADD CONSTRAINT remote_script_pkey PRIMARY KEY (name);

ALTER TABLE ONLY datatable_roles.server_change
    ADD CONSTRAINT server_change_pkey PRIMARY KEY (id);

ALTER TABLE ONLY datatable_roles.server
    ADD CONSTRAINT server_pkey PRIMARY KEY (name);

ALTER TABLE ONLY datatable_roles.server_role
    ADD CONSTRAINT server_role_pkey PRIMARY KEY (server, role_id);

ALTER TABLE ONLY datatable_roles.settings
    ADD CONSTRAINT settings_pkey PRIMARY KEY (singleton);

ALTER TABLE ONLY datatable_roles.tenant_folder
    ADD CONSTRAINT tenant_folder_pkey PRIMARY KEY (workspace, folder);

ALTER TABLE ONLY datatable_roles.tenant_user
    ADD CONSTRAINT tenant_user_pkey PRIMARY KEY (workspace, username);

ALTER TABLE ONLY datatable_roles.worker_role
    ADD CONSTRAINT worker_role_pkey PRIMARY KEY (name, kind);

ALTER TABLE ONLY datatable_roles.workspace
    ADD CONSTRAINT workspace_pkey PRIMARY KEY (name);

ALTER TABLE ONLY datatable_roles.workspace_user
    ADD CONSTRAINT workspace_user_pkey PRIMARY KEY (workspace, username);

CREATE INDEX acl_change_datatable_idx ON datatable_roles.acl_change USING btree (workspace, datatable, applied_at);

CREATE UNIQUE INDEX catalog_role_lower_name_key ON datatable_roles.catalog_role USING btree (lower(name));

CREATE INDEX datatable_dbname_idx ON datatable_roles.datatable USING btree (dbname);

CREATE INDEX datatable_governing_idx ON datatable_roles.datatable USING btree (governing_id);

CREATE INDEX datatable_role_role_idx ON datatable_roles.datatable_role USING btree (role_id);

CREATE INDEX datatable_role_set_roles_idx ON datatable_roles.datatable_role_set USING gin (role_ids);

CREATE INDEX folder_access_principal_idx ON datatable_roles.folder_access USING btree (workspace, principal);

CREATE INDEX group_member_user_idx ON datatable_roles.group_member USING btree (workspace, username);

CREATE INDEX server_change_server_idx ON datatable_roles.server_change USING btree (server, id);

CREATE UNIQUE INDEX workspace_user_email_key ON datatable_roles.workspace_user USING btree (workspace, lower(email));

ALTER TABLE ONLY datatable_roles.datatable
    ADD CONSTRAINT datatable_governing_id_fkey FOREIGN KEY (governing_id) REFERENCES datatable_roles.datatable(id);

ALTER TABLE ONLY datatable_roles.datatable_role
    ADD CONSTRAINT datatable_role_datatable_id_fkey FOREIGN KEY (datatable_id) REFERENCES datatable_roles.datatable(id) ON DELETE CASCADE;

ALTER TABLE ONLY datatable_roles.datatable_role
    ADD CONSTRAINT datatable_role_role_id_fkey FOREIGN KEY (role_id) REFERENCES datatable_roles.catalog_role(id) ON DELETE CASCADE;

ALTER TABLE ONLY datatable_roles.datatable
    ADD CONSTRAINT datatable_server_fkey FOREIGN KEY (server) REFERENCES datatable_roles.server(name);

ALTER TABLE ONLY datatable_roles.folder_access
    ADD CONSTRAINT folder_access_workspace_fkey FOREIGN KEY (workspace) REFERENCES datatable_roles.workspace(name) ON DELETE CASCADE;

ALTER TABLE ONLY datatable_roles.group_member
    ADD CONSTRAINT group_member_workspace_username_fkey FOREIGN KEY (workspace, username) REFERENCES datatable_roles.workspace_user(workspace, username) ON DELETE CASCADE;

ALTER TABLE ONLY datatable_roles.server_change
    ADD CONSTRAINT server_change_server_fkey FOREIGN KEY (server) REFERENCES datatable_roles.server(name);

ALTER TABLE ONLY datatable_roles.server_role
    ADD CONSTRAINT server_role_role_id_fkey FOREIGN KEY (role_id) REFERENCES datatable_roles.catalog_role(id) ON DELETE CASCADE;

ALTER TABLE ONLY datatable_roles.server_role
    ADD CONSTRAINT server_role_server_fkey FOREIGN KEY (server) REFERENCES datatable_roles.server(name);

ALTER TABLE ONLY datatable_roles.workspace_user
    ADD CONSTRAINT workspace_user_workspace_fkey FOREIGN KEY (workspace) REFERENCES datatable_roles.workspace(name) ON DELETE CASCADE;

GRANT CREATE ON SCHEMA public TO dtr_owner;

REVOKE ALL ON FUNCTION datatable_roles.acl_acting_for(p_entry datatable_roles.datatable, p_plan jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_change_warnings(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_step datatable_roles.acl_step) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_check_change(p_entry datatable_roles.datatable, p_kind text, p_change jsonb, OUT action text, OUT role_name text, OUT on_what text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_check_name(p_kind text, p_value jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_check_privileges(p_privileges jsonb, p_kind text, p_version integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_check_run_as(p_snapshot jsonb, p_run_as text[], p_schema text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_connect(p_entry datatable_roles.datatable, p_as_link boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_creators(p_entry datatable_roles.datatable, p_change jsonb, p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_defaults_of(p_snapshot jsonb, p_creator text, p_objtype text, p_database boolean, p_all text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_disconnect() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_empty_step() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_end_acting_for(p_entry datatable_roles.datatable, p_roles text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_entry(p_workspace text, p_datatable text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_grant_all(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_grant_future(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_creators text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_grant_target(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_grant_warnings(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_step datatable_roles.acl_step) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_grants(p_entry datatable_roles.datatable, p_raw jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_has_public(p_grants jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_in_effect(p_action text, p_privileges text[], p_grants jsonb, p_grantor text, p_grantee text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_kind_privileges(p_kind text, p_version integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_label(p_entry datatable_roles.datatable, p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_live_code(p_entry datatable_roles.datatable, p_snapshot jsonb, p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_note(p_step datatable_roles.acl_step, p_object jsonb, p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_owner_keyword(p_item jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_owner_schema(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_owner_table(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_owner_warnings(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_step datatable_roles.acl_step) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_path_schemas(p_snapshot jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_per_owner(p_names text[], p_owners text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_plan(p_entry datatable_roles.datatable, p_target jsonb, p_change jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_plan_grants(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_plan_owner(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_plan_result(p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb, p_step datatable_roles.acl_step) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_reachable(p_entry datatable_roles.datatable, p_owner text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_relkind_keyword(p_relkind text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_relkind_name(p_relkind text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_require_reachable(p_entry datatable_roles.datatable, p_object text, p_owner text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_role(p_entry datatable_roles.datatable, p_name jsonb, p_key text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_role_kind(p_entry datatable_roles.datatable, p_role text, p_public boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_runs_as_others(p_privileges text[], p_objects text, p_owner text, p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_show_command(p_entry datatable_roles.datatable) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_snapshot(p_entry datatable_roles.datatable, p_target jsonb, p_subject text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_some(p_names text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_statement(p_req datatable_roles.acl_request, p_on text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_target(p_target jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_target_kind(p_target jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_unreachable(p_entry datatable_roles.datatable, p_what text, p_login text, p_why text, p_state text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.acl_warning(p_code text, p_message text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.admin_password_refusal(p_label text, p_admin_login text, OUT message text, OUT hint text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.adopt_admin_password(p_dbname text, p_admin_login text, p_password text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.altered_logins_on_server(p_server text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.apply_server_changes(p_server text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.become_own_instance() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.bind_user_key(p_workspace text, p_username text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.check_dbname(p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.check_email(p_email text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.check_name(p_kind text, p_value text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.check_remote_login_name(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.check_tenant_key(p_key text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.clear_identity_settings(p_login text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.clock_now() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.conninfo_for(p_dbname text, p_login text, p_password text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.conninfo_value(p_value text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.database_grants_of(p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.database_key(p_server text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.databases_holding(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.decide(p_job_id uuid, p_datatable text, p_role text, p_for_migration boolean, p_trace boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.decide_entry(p_job_id uuid, p_datatable text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.default_of(p_datatable_id bigint, p_default_role text, p_ident_admin boolean, p_ident_keys text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.directory_folders(p_workspace text, p_username text, p_groups text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.directory_folders_among(p_workspace text, p_username text, p_groups text[], p_folders text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.directory_groups(p_workspace text, p_username text, p_email text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.directory_in_group(p_workspace text, p_username text, p_email text, p_group text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.directory_member(p_workspace text, p_username text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.directory_member_by_email(p_workspace text, p_email text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.directory_reaches_folder(p_workspace text, p_username text, p_email text, p_folder text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.directory_workspace_exists(p_workspace text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.disable_login(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.drop_login(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.drop_role_on_servers(p_role_id bigint, p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.email_ok(p_email text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.end_sessions_of(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.end_stray_sessions() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.ensure_login_keeper(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.ensure_role_on_server(p_server text, p_role_id bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.ensure_set_login(p_dbname text, p_role_ids bigint[], p_server text, OUT login text, OUT password text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.exec_as_login_on(p_server text, p_dbname text, p_login text, p_password text, p_statement text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.exec_as_manager(p_server text, p_statement text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.exec_change(p_server text, p_dbname text, p_statement text, p_as_admin boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.exec_in_database(p_dbname text, p_sql text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.exec_on_login(p_login text, p_statement text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.explain_steps(d datatable_roles.decision, p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.explain_viewer(d datatable_roles.decision, g datatable_roles.datatable) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.fault_point(p_point text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.grant_acl_editor(p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.grant_calls(p_role text, p_kind text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.grant_directory_writer(p_writer text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.grant_worker(p_worker text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.guard_changes_roles() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.has_identity_setting(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.heal_altered_far_logins(p_skip jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.heal_set_login(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.hmac_keys(p_key bytea, OUT inner_key bytea, OUT outer_key bytea) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.hmac_sha256(p_key bytea, p_message bytea) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.identity_in(p_workspace text, p_own_workspace text, p_own_admin boolean, p_own_keys text[], p_email text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.is_sweepable(p_last_used_at timestamp with time zone, p_password text, p_dbname text, p_role_ids bigint[], p_cutoff timestamp with time zone, p_server text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.job_viewer(p_workspace text, p_origin text, p_caller_email text, p_token_job_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.kept_session_name(p_server text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.key_names_member(p_workspace text, p_key text, p_username text, p_email text, p_incarnation text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.link_holds(p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.link_login() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.link_login_fails(p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.link_session_open(p_name text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.live_set_login(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.lock_database_access(p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.lock_roles_still_usable(p_dbname text, p_role_ids bigint[], p_server text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.lock_set_login(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.login_fails(p_dbname text, p_login text, p_password text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.login_fails_on(p_server text, p_dbname text, p_login text, p_password text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.login_group() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.login_group_name(p_instance uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.login_intact(p_login text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.login_keeper(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.login_of_roles(p_dbname text, p_role_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.login_settings_elsewhere(p_login text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.make_login(p_login text, p_dbname text, p_role_ids bigint[], p_server text, OUT password text, OUT verifier text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.make_login_on_server(p_server text, p_login text, p_dbname text, p_names text[], p_verifier text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.may_use(p_ident_admin boolean, p_ident_keys text[], p_tenants text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.member_keys(p_workspace text, p_username text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.member_keys(p_workspace text, p_username text, p_email text, p_incarnation text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.membership_statement(p_roles text[], p_admin text, p_grant boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.move_objects_of(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.move_statement(p_victim text, p_heir text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.name_ok(p_value text, p_ascii boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.nearest_name(p_name text, p_names text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.new_password() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.no_default() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.note_folder_key(p_workspace text, p_folder text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.on_manager_session(p_server text, p_sql text, p_dbname text, p_value boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.one_role_heir(p_login text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.pg16_or_later() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.pgbouncer_userlist(p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.preview_note(p_note jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.preview_report(p_kind text, p_target datatable_roles.catalog_role, p_entry datatable_roles.datatable, p_notes jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.previewing() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.quarantine_statements(p_victim text, p_heir text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.refusal_of(d datatable_roles.decision, p_datatable text, p_role text, OUT message text, OUT hint text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.refuse(d datatable_roles.decision, p_datatable text, p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.refuse_admin_password(p_label text, p_admin_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.refuse_while_pending(p_server text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.rekey_set_login(p_row datatable_roles.datatable_role_set) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.remote_admin_of(p_server text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.remote_script_body(p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.rename_role_on_servers(p_role_id bigint, p_old text, p_new text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.rename_statement(p_old text, p_new text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.renew_link_login() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require(p_value anyelement, p_argument text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require_datatable(p_workspace text, p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require_governing_datatable(p_workspace text, p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require_link_reaches(p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require_member(p_workspace text, p_username text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require_own_directory() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require_reaches(p_server text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require_role(p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require_server(p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.require_workspace(p_workspace text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.reset_database_settings(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.reset_memberships(p_login text, p_wanted text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.reset_settings_as_login(p_login text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.retire_logins_holding(p_role_id bigint, p_dbname text, p_server text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.retire_statement(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.revoke_database_grants(p_role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.roles_of(p_role_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.rotate_link_login() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.rotate_or_heal(p_login text, p_altered_there boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.run_or_queue(p_server text, p_statement text, p_what text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.run_or_queue_in(p_server text, p_dbname text, p_statement text, p_what text, p_as_admin boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.scram_verifier(p_password text, p_iterations integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.server_conninfo(p_server text, p_dbname text, p_login text, p_password text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.server_role_marker(p_role_id bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.server_session_open(p_server text, p_dbname text, p_login text, p_password text, p_name text, p_extra text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.server_session_options() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.session_cancel(p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.session_close(p_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.session_exec(p_name text, p_sql text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.session_open(p_name text, p_dbname text, p_login text, p_password text, p_options text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.session_value(p_name text, p_sql text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.set_login_name(p_dbname text, p_role_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.set_login_named(p_instance_id uuid, p_dbname text, p_sorted_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.set_login_of(p_dbname text, p_role_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.shell_word(p_word text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.signature_of(p_function regprocedure) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.status_report() FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_candidates(p_unused_for interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_candidates_at(p_cutoff timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_cutoff(p_unused_for interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_drop(p_login text, OUT outcome text, OUT reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_drop_on_server(p_server text, p_login text, p_dbname text, OUT outcome text, OUT reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_pending(p_state jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_phase_begins(p_state jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_report(p_state jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_start(p_unused_for interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_step(p_state jsonb, p_victims text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_take_away(p_login text, p_cutoff timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sweep_victims(p_state jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sync_folder_grants(p_workspace text, p_folders jsonb, p_users jsonb, OUT rejected jsonb, OUT changed integer, OUT removed integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sync_group_members(p_workspace text, p_groups jsonb, p_users jsonb, OUT rejected jsonb, OUT added integer, OUT removed integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.sync_users(p_workspace text, p_users jsonb, OUT taken jsonb, OUT rejected jsonb, OUT added integer, OUT updated integer, OUT removed integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.take_admin_login(p_dbname text, p_admin_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.take_remote_admin_login(p_server text, p_dbname text, p_admin_login text, p_password text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.unnamed_of(p_datatable_id bigint, p_workspace text, p_default_role text, p_ident_admin boolean, p_ident_keys text[], p_viewer_email text, OUT rules text[], OUT default_id bigint, OUT default_enabled boolean, OUT default_tenants text[], OUT default_held boolean, OUT viewer_member boolean, OUT held_ids bigint[], OUT viewer_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.unreachable(p_sqlstate text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.usable_set_login(p_login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.user_key_stale(p_workspace text, p_username text, p_incarnation text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.value_as_manager(p_server text, p_query text, p_dbname text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.verifier_for(p_password text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.viewer_roles_of(p_datatable_id bigint, p_workspace text, p_viewer_email text) FROM PUBLIC;

REVOKE ALL ON FUNCTION datatable_roles.wrong_password(p_why text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.add_group_member(workspace text, group_name text, username text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.add_workspace(workspace text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.add_workspace_user(workspace text, username text, email text, is_admin boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.apply_datatable_acl(workspace text, datatable text, target jsonb, change jsonb, statements text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.cached_result_path(job_id uuid, runnable text, args jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.create_datatable_role(name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.datatable_acl(workspace text, datatable text, target jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.drop_datatable_role(name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.explain_datatable_role(job_id uuid, datatable text, role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.forget_workspace_user(workspace text, username text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.heal_refused_login(login text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.plan_datatable_acl(workspace text, datatable text, target jsonb, change jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.preview_datatable_role_change(change text, role text, workspace text, datatable text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.reconcile_directory() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.record_job_start(job_id uuid, workspace text, permissioned_as text, origin text, caller_email text, token_job_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.reference_datatable(workspace text, name text, governing_workspace text, governing_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.register_datatable(workspace text, name text, dbname text, admin_login text, admin_password text, server text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.register_datatable_server(name text, host text, port integer, manager_login text, manager_password text, sslmode text, maintenance_db text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.remove_datatable_role(workspace text, datatable text, role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.remove_group_member(workspace text, group_name text, username text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.remove_workspace_user(workspace text, username text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.rename_datatable_role(name text, new_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.resolve_datatable_role(job_id uuid, datatable text, role text, for_migration boolean, OUT dbname text, OUT login text, OUT password text, OUT roles text[], OUT login_kind text, OUT host text, OUT port integer, OUT sslmode text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.retire_role_set_logins_of(role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.set_datatable_admin_password(workspace text, name text, admin_password text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.set_datatable_default_role(workspace text, datatable text, role text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.set_datatable_role_enabled(name text, enabled boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.set_datatable_role_tenants(workspace text, datatable text, role text, tenants text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.set_folder_access(workspace text, folder text, principal text, access text) FROM PUBLIC;

REVOKE ALL ON PROCEDURE public.sweep_unused_role_set_logins(INOUT report jsonb, IN unused_for interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.sync_workspace_directory(workspace text, directory jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.usable_datatable_roles(workspace text, datatable text, username text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.validate_role_name(name text) FROM PUBLIC;
