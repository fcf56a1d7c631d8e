-- The grants editor's plan (docs/acl.md): from the checked change and the
-- snapshot that 90_acl_read.sql took as the admin login, the statements of
-- one change (the owner hand-over, or the grants on the target, on all its
-- objects and on future ones) and the warnings shown beside them. Nothing
-- here connects anywhere; api/97_acl_editor.sql applies a plan through the
-- link login.

-- A relkind's name.
CREATE OR REPLACE FUNCTION datatable_roles.acl_relkind_name(p_relkind text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE p_relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table'
        WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table'
        WHEN 'S' THEN 'sequence' END
$$;

-- The keyword of ALTER ... OWNER TO for a relkind.
CREATE OR REPLACE FUNCTION datatable_roles.acl_relkind_keyword(p_relkind text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE p_relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
        WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END
$$;

-- The schema names on the search paths of p_snapshot ("$user" stands for
-- every schema named like a role), unquoted.
CREATE OR REPLACE FUNCTION datatable_roles.acl_path_schemas(p_snapshot jsonb)
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
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
$$;

-- A warning of a plan.
CREATE OR REPLACE FUNCTION datatable_roles.acl_warning(p_code text, p_message text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
    SELECT jsonb_build_object('code', p_code, 'message', p_message)
$$;

-- A list of names for a message: the first five, and how many more.
CREATE OR REPLACE FUNCTION datatable_roles.acl_some(p_names text[])
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT array_to_string(p_names[1:5], ', ')
        || CASE WHEN cardinality(p_names) > 5
            THEN format(' and %s more', cardinality(p_names) - 5) ELSE '' END
$$;

-- The live code (scripts/acl_read.sql) an owner hand-over of p_snapshot's target to
-- p_role would pass on: what changes owner (not p_role's already, not an
-- extension member, an owner the link login acts for). To the admin login it
-- is refused (55000, CONSTRAINT live_code), naming each object and how to
-- make it inert; to a catalog role it is a live_code warning.
CREATE OR REPLACE FUNCTION datatable_roles.acl_live_code(
    p_entry datatable_roles.datatable, p_snapshot jsonb, p_role text
)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

-- A runs_as_others warning for a grant of TRIGGER or MAINTAIN (ALL
-- included) on p_objects (tables, as a message names them), owned by
-- p_owner (a label, or NULL when several or not yet known): both let the
-- grantee make code run as other roles.
CREATE OR REPLACE FUNCTION datatable_roles.acl_runs_as_others(
    p_privileges text[], p_objects text, p_owner text, p_role text
)
RETURNS jsonb
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

-- Refuses (42501) a GRANT / REVOKE to run as an owner without USAGE on the
-- target's schema: PostgreSQL would not let that owner name its objects.
CREATE OR REPLACE FUNCTION datatable_roles.acl_check_run_as(
    p_snapshot jsonb, p_run_as text[], p_schema text
)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

-- Names grouped by owner, in the order of each owner's first name: one
-- GRANT / REVOKE each, run as that owner.
CREATE OR REPLACE FUNCTION datatable_roles.acl_per_owner(p_names text[], p_owners text[])
RETURNS TABLE (owner text, names text[])
LANGUAGE sql IMMUTABLE
AS $$
    SELECT u.o, array_agg(u.n ORDER BY u.i)
    FROM unnest(p_names, p_owners) WITH ORDINALITY AS u (n, o, i)
    GROUP BY u.o ORDER BY min(u.i)
$$;

-- Whether a GRANT (p_action 'grant') or REVOKE of p_privileges to or from
-- p_grantee would change nothing, given p_grants (raw grants, or default
-- privileges): the grantee holds them all (a grant) or none of them (a
-- revoke) from p_grantor, the owner (or creator) that the statement runs
-- as and that PostgreSQL records as its grantor. Another grantor's grant is
-- not the statement's to give or take.
CREATE OR REPLACE FUNCTION datatable_roles.acl_in_effect(
    p_action text, p_privileges text[], p_grants jsonb, p_grantor text, p_grantee text
)
RETURNS boolean
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

-- The default privileges of p_creator for objects of p_objtype ('r', 'S',
-- 'f', 'n') as raw grants: its pg_default_acl entry in the snapshot, or
-- without one, database-wide, PostgreSQL's built-in default (the creator
-- holds every privilege on what it creates, p_all).
CREATE OR REPLACE FUNCTION datatable_roles.acl_defaults_of(
    p_snapshot jsonb, p_creator text, p_objtype text, p_database boolean, p_all text[]
)
RETURNS jsonb
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

-- The planner (docs/acl.md). acl_plan checks the target and the change,
-- reads the data table's database once (acl_snapshot), then hands the
-- checked request (datatable_roles.acl_request) to the owner hand-over plan
-- (acl_plan_owner) or to the grants plan (acl_plan_grants: on the target,
-- on all objects of a schema, on future objects). Each piece adds what it
-- finds to a datatable_roles.acl_step (statements, run_as, the objects
-- sorted by what a warning says of them, warnings); the warnings pieces
-- read that step. Both types are in migration 0018.

-- An empty step of a plan.
CREATE OR REPLACE FUNCTION datatable_roles.acl_empty_step()
RETURNS datatable_roles.acl_step
LANGUAGE sql IMMUTABLE
AS $$
    SELECT ROW('{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '[]')::datatable_roles.acl_step
$$;

-- Whether raw grants hold one to PUBLIC.
CREATE OR REPLACE FUNCTION datatable_roles.acl_has_public(p_grants jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT coalesce(p_grants @? '$[*] ? (@.public == true)', false)
$$;

-- Refuses (42501) to act on p_object (as a message names it) owned by
-- p_owner when the link login does not act for p_owner (acl_reachable).
CREATE OR REPLACE FUNCTION datatable_roles.acl_require_reachable(
    p_entry datatable_roles.datatable, p_object text, p_owner text
)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF NOT datatable_roles.acl_reachable(p_entry, p_owner) THEN
        RAISE EXCEPTION '% is owned by %, which is neither admin nor a catalog role',
            p_object, quote_literal(p_owner)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END;
$$;

-- p_step with p_name (an object of the snapshot, p_object) noted where a
-- warning names it: PUBLIC holds privileges on it; it is a relation without
-- row-level security, or a view that is not security_invoker.
CREATE OR REPLACE FUNCTION datatable_roles.acl_note(
    p_step datatable_roles.acl_step, p_object jsonb, p_name text
)
RETURNS datatable_roles.acl_step
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

-- The GRANT or REVOKE of the request's privileges on p_on (an ON clause).
CREATE OR REPLACE FUNCTION datatable_roles.acl_statement(
    p_req datatable_roles.acl_request, p_on text
)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format(CASE p_req.action WHEN 'grant' THEN 'GRANT %s ON %s TO %I'
        ELSE 'REVOKE %s ON %s FROM %I' END,
        array_to_string(p_req.privileges, ', '), p_on, p_req.role_name)
$$;

-- A plan as plan_datatable_acl returns it.
CREATE OR REPLACE FUNCTION datatable_roles.acl_plan_result(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb,
    p_step datatable_roles.acl_step
)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
    SELECT jsonb_build_object('datatable', p_entry.workspace || '/' || p_entry.name,
        'target', p_req.target, 'change', p_change, 'statements', to_jsonb(p_step.statements),
        'run_as', to_jsonb(p_step.run_as), 'warnings', p_step.warnings,
        'nothing_to_do', cardinality(p_step.statements) = 0)
$$;

-- The checks of a change (its JSON shape, its role, its "on" and "for")
-- for a target of kind p_kind: what it does ('grant', 'revoke' or
-- 'owner'), to or from which Postgres role, and on what (NULL for owner).
-- Raises 22004 / 22023 / P0002.
CREATE OR REPLACE FUNCTION datatable_roles.acl_check_change(
    p_entry datatable_roles.datatable, p_kind text, p_change jsonb,
    OUT action text, OUT role_name text, OUT on_what text
)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

---------------------------------------------------------------- owner

-- The keyword of ALTER ... OWNER TO for an object of a schema (an 'owned'
-- item of the snapshot), or NULL when there is none.
CREATE OR REPLACE FUNCTION datatable_roles.acl_owner_keyword(p_item jsonb)
RETURNS text
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

-- The hand-over of a schema and of what is in it: its statements, the
-- extension members left out (names, and their warning) and the objects
-- left out otherwise (skipped). Raises 42501.
CREATE OR REPLACE FUNCTION datatable_roles.acl_owner_schema(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request
)
RETURNS datatable_roles.acl_step
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

-- The hand-over of a table (or view, sequence, ...): its statement, if it
-- changes owner. Raises 22023 / 42501.
CREATE OR REPLACE FUNCTION datatable_roles.acl_owner_table(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request
)
RETURNS text[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

-- The warnings of an owner hand-over, after those of p_step. Raises 55000
-- (acl_live_code).
CREATE OR REPLACE FUNCTION datatable_roles.acl_owner_warnings(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request,
    p_step datatable_roles.acl_step
)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
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
$$;

-- The plan of an owner hand-over (of a schema or a table: the database
-- stays the admin login's, 22023).
CREATE OR REPLACE FUNCTION datatable_roles.acl_plan_owner(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb
)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

---------------------------------------------------------------- grant / revoke

-- A GRANT or REVOKE on the target itself: the database, a schema or a table.
-- Raises 42501.
CREATE OR REPLACE FUNCTION datatable_roles.acl_grant_target(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request
)
RETURNS datatable_roles.acl_step
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

-- A GRANT or REVOKE on all tables, sequences or functions of a schema: one
-- statement per owner, run as that owner; objects whose owner the link
-- login does not act for are left out (a warning).
CREATE OR REPLACE FUNCTION datatable_roles.acl_grant_all(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request
)
RETURNS datatable_roles.acl_step
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

-- The creating roles whose default privileges a change "on": "future ..."
-- sets: its "for" (checked: 22023 / P0002), else the admin login and every
-- other catalog role of the map.
CREATE OR REPLACE FUNCTION datatable_roles.acl_creators(
    p_entry datatable_roles.datatable, p_change jsonb, p_role text
)
RETURNS text[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

-- Default privileges ("on": "future ..."): one ALTER DEFAULT PRIVILEGES per
-- creating role of p_creators, in the target schema or database-wide.
CREATE OR REPLACE FUNCTION datatable_roles.acl_grant_future(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_creators text[]
)
RETURNS datatable_roles.acl_step
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
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
$$;

-- The warnings of a grant about what the grantee can then do: shadow names
-- on a search path, read rows without row-level security, make code run as
-- others, read through a view as its owner.
CREATE OR REPLACE FUNCTION datatable_roles.acl_grant_warnings(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request,
    p_step datatable_roles.acl_step
)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
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
$$;

-- The last warnings of a grant or revoke: PUBLIC holds privileges anyway;
-- the change holds already (nothing_to_do).
CREATE OR REPLACE FUNCTION datatable_roles.acl_change_warnings(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request,
    p_step datatable_roles.acl_step
)
RETURNS jsonb
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

-- The plan of a GRANT or REVOKE: the privileges checked against the kind
-- of object they go on (22023), then the statements on the target, on all
-- objects of a schema or on future objects, and their warnings.
CREATE OR REPLACE FUNCTION datatable_roles.acl_plan_grants(
    p_entry datatable_roles.datatable, p_req datatable_roles.acl_request, p_change jsonb
)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
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

-- The plan of one change on one target (docs/acl.md): {target, change,
-- statements, warnings}. Reads the data table's database, changes nothing.
CREATE OR REPLACE FUNCTION datatable_roles.acl_plan(
    p_entry datatable_roles.datatable, p_target jsonb, p_change jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
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
