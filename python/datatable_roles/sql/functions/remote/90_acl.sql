-- The grants editor (docs/acl.md): read what roles may touch in a data
-- table's database, plan GRANT / REVOKE / ALTER DEFAULT PRIVILEGES / ALTER
-- ... OWNER TO statements for one change, and apply exactly the statements
-- shown, in one transaction there, audited here.
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

-- A subquery of the remote read: the rows of an ACL expression, as JSON.
CREATE OR REPLACE FUNCTION datatable_roles.acl_sql_grants(p_acl text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format($q$(SELECT coalesce(jsonb_agg(jsonb_build_object(
        'grantee', CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee)::text END,
        'public', a.grantee = 0, 'grantor', pg_get_userbyid(a.grantor)::text,
        'privilege', a.privilege_type, 'grantable', a.is_grantable)
        ORDER BY a.grantee, a.privilege_type), '[]'::jsonb) FROM aclexplode(%s) AS a)$q$, p_acl)
$$;

-- CTEs of the remote read (after ns, rel and the_table): live, the code an owner
-- hand-over would pass on with the objects of the target (docs/acl.md, "Live
-- code"), whoever owns it now: SECURITY DEFINER routines; routines PostgreSQL
-- calls without an EXECUTE check (range, type, operator class, operator and
-- conversion support functions); views that are not security_invoker;
-- enabled user triggers and rules; relations whose indexes, constraints,
-- defaults, statistics, policies or materialized view query call a user
-- routine or operator (ANALYZE, autovacuum and REFRESH run those as the
-- owner; writes as the writer); and relations with a column of a range type
-- whose support function is a user routine. A user routine is one created
-- after initdb (oid >= 16384) that is not an extension member.
CREATE OR REPLACE FUNCTION datatable_roles.acl_live_sql()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT $q$
in_scope AS (
    SELECT rel.oid, rel.relkind, rel.relowner, rel.invoker, rel.extension,
        format('%I.%I', (SELECT ns.nspname FROM ns), rel.relname) AS qname
    FROM rel WHERE rel.relkind <> 'S'
        AND rel.relname = coalesce((SELECT t.relname FROM the_table AS t), rel.relname)
),
routine AS (
    SELECT p.oid, p.proowner, p.prosecdef, i.type, i.identity,
        EXISTS (SELECT FROM pg_depend AS x WHERE x.classid = 'pg_proc'::regclass
            AND x.objid = p.oid AND x.deptype = 'e') AS extension
    FROM pg_proc AS p CROSS JOIN LATERAL pg_identify_object('pg_proc'::regclass, p.oid, 0) AS i
    WHERE p.pronamespace = (SELECT ns.oid FROM ns)
        AND NOT EXISTS (SELECT FROM the_table AS t WHERE t.relname IS NOT NULL)
),
user_code AS (
    SELECT 'pg_proc'::regclass AS classid, p.oid FROM pg_proc AS p WHERE p.oid >= 16384
    UNION ALL
    SELECT 'pg_operator'::regclass, o.oid FROM pg_operator AS o WHERE o.oid >= 16384
),
user_code_free AS (
    SELECT u.classid, u.oid FROM user_code AS u
    WHERE NOT EXISTS (SELECT FROM pg_depend AS x WHERE x.classid = u.classid AND x.objid = u.oid
        AND x.deptype = 'e')
),
parts AS (
    SELECT 'pg_class'::regclass AS classid, x.indexrelid AS objid, x.indrelid AS relid FROM pg_index AS x
    UNION ALL SELECT 'pg_constraint'::regclass, x.oid, x.conrelid FROM pg_constraint AS x
    UNION ALL SELECT 'pg_attrdef'::regclass, x.oid, x.adrelid FROM pg_attrdef AS x
    UNION ALL SELECT 'pg_statistic_ext'::regclass, x.oid, x.stxrelid FROM pg_statistic_ext AS x
    UNION ALL SELECT 'pg_policy'::regclass, x.oid, x.polrelid FROM pg_policy AS x
    UNION ALL SELECT 'pg_rewrite'::regclass, x.oid, x.ev_class FROM pg_rewrite AS x
        JOIN pg_class AS c ON c.oid = x.ev_class WHERE c.relkind = 'm'
),
live (object, owner, extension, why, fix) AS (
    SELECT r.type || ' ' || r.identity, r.proowner, r.extension,
        'SECURITY DEFINER: it runs as its owner for every caller',
        format('ALTER %s %s SECURITY INVOKER', upper(r.type), r.identity)
    FROM routine AS r WHERE r.prosecdef
    UNION ALL
    SELECT r.type || ' ' || r.identity, r.proowner, r.extension,
        'PostgreSQL calls it without an EXECUTE check (a support function of a range, type, operator class, operator or conversion), as whoever uses or analyzes the data',
        'drop what uses it (the type, operator class, operator or conversion), then the function'
    FROM routine AS r
    WHERE r.oid >= 16384 AND (
        EXISTS (SELECT FROM pg_range AS g WHERE r.oid IN (g.rngsubdiff, g.rngcanonical))
        OR EXISTS (SELECT FROM pg_type AS t WHERE r.oid IN (t.typinput, t.typoutput, t.typreceive,
            t.typsend, t.typmodin, t.typmodout, t.typanalyze, t.typsubscript))
        OR EXISTS (SELECT FROM pg_amproc AS a WHERE a.amproc = r.oid)
        OR EXISTS (SELECT FROM pg_operator AS o WHERE r.oid IN (o.oprrest, o.oprjoin))
        OR EXISTS (SELECT FROM pg_conversion AS v WHERE v.conproc = r.oid))
    UNION ALL
    SELECT 'view ' || s.qname, s.relowner, s.extension,
        'not security_invoker: it reads its tables as its owner for every caller',
        format('ALTER VIEW %s SET (security_invoker = true)', s.qname)
    FROM in_scope AS s WHERE s.relkind = 'v' AND NOT s.invoker
    UNION ALL
    SELECT format('trigger %I on %s', g.tgname, s.qname), s.relowner, s.extension,
        'its function runs as whoever writes the table',
        format('DROP TRIGGER %I ON %s (or ALTER TABLE %s DISABLE TRIGGER %I)', g.tgname, s.qname,
            s.qname, g.tgname)
    FROM in_scope AS s JOIN pg_trigger AS g ON g.tgrelid = s.oid
    WHERE NOT g.tgisinternal AND g.tgenabled <> 'D'
    UNION ALL
    SELECT format('rule %I on %s', w.rulename, s.qname), s.relowner, s.extension,
        'it rewrites the queries of whoever uses the relation',
        format('DROP RULE %I ON %s', w.rulename, s.qname)
    FROM in_scope AS s JOIN pg_rewrite AS w ON w.ev_class = s.oid
    WHERE w.rulename <> '_RETURN' AND w.ev_enabled <> 'D'
    UNION ALL
    SELECT 'relation ' || s.qname, s.relowner, s.extension,
        format('its indexes, constraints, defaults, statistics, policies or query call %s: ANALYZE, autovacuum and REFRESH run them as its owner, writes as the writer',
            string_agg(DISTINCT (pg_identify_object(u.classid, u.oid, 0)).identity, ', ')),
        'drop the index, constraint, default, statistics, policy or materialized view that calls them, or check what they call'
    FROM in_scope AS s JOIN parts AS t ON t.relid = s.oid
    JOIN pg_depend AS d ON d.classid = t.classid AND d.objid = t.objid
    JOIN user_code_free AS u ON u.classid = d.refclassid AND u.oid = d.refobjid
    GROUP BY s.qname, s.relowner, s.extension
    UNION ALL
    SELECT 'relation ' || s.qname, s.relowner, s.extension,
        format('a column of range type %s, whose support function PostgreSQL calls without an EXECUTE check when it analyzes or indexes the data',
            string_agg(DISTINCT format_type(g.rngtypid, NULL), ', ')),
        'drop the column, or the range type''s support function'
    FROM in_scope AS s JOIN pg_attribute AS a ON a.attrelid = s.oid AND a.attnum > 0
        AND NOT a.attisdropped
    JOIN pg_range AS g ON g.rngtypid = a.atttypid
    WHERE g.rngsubdiff >= 16384 OR g.rngcanonical >= 16384
    GROUP BY s.qname, s.relowner, s.extension
)$q$
$$;

-- The query the remote read runs in the data table's database (with its
-- search_path pinned to pg_catalog, pg_temp): one JSON document with the
-- server version; the search paths a session there may start with
-- (compiled default, the admin login's, every per-role or per-database
-- setting) and the schemas named like a role ("$user"); the database, the
-- schema p_schema and the relation p_table with owners, grants, row
-- security and security_invoker; the schemas of the database; the
-- relations and routines of the schema; its default privileges (the
-- database-wide ones without a schema); what depends on the schema (for
-- an owner hand-over); and whether p_subject may CREATE in the database and
-- the schema. Names go in as literals only.
CREATE OR REPLACE FUNCTION datatable_roles.acl_read_sql(p_schema text, p_table text, p_subject text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format($q$
WITH ns AS (
    SELECT n.oid, n.nspname, n.nspowner, n.nspacl FROM pg_namespace AS n WHERE n.nspname = %1$L
),
rel AS (
    SELECT c.oid, c.relname, c.relkind, c.relowner, c.relacl, c.relrowsecurity,
        c.relforcerowsecurity,
        coalesce((SELECT o.option_value::boolean FROM pg_options_to_table(c.reloptions) AS o
            WHERE o.option_name = 'security_invoker'), false) AS invoker,
        EXISTS (SELECT FROM pg_depend AS x WHERE x.classid = 'pg_class'::regclass
            AND x.objid = c.oid AND x.deptype = 'e') AS extension,
        (SELECT (pg_identify_object('pg_class'::regclass, t.oid, 0)).identity
        FROM pg_depend AS x JOIN pg_class AS t ON t.oid = x.refobjid
            WHERE x.classid = 'pg_class'::regclass AND x.objid = c.oid
                AND x.refclassid = 'pg_class'::regclass AND x.deptype IN ('a', 'i')
                AND c.relkind = 'S' LIMIT 1) AS owned_by
    FROM pg_class AS c JOIN ns ON ns.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
),
dep AS (
    SELECT d.classid, d.objid, i.type, i.identity,
        CASE d.classid
            WHEN 'pg_class'::regclass THEN (SELECT c.relowner FROM pg_class AS c WHERE c.oid = d.objid)
            WHEN 'pg_proc'::regclass THEN (SELECT p.proowner FROM pg_proc AS p WHERE p.oid = d.objid)
            WHEN 'pg_type'::regclass THEN (SELECT t.typowner FROM pg_type AS t WHERE t.oid = d.objid)
            WHEN 'pg_operator'::regclass
                THEN (SELECT o.oprowner FROM pg_operator AS o WHERE o.oid = d.objid)
            WHEN 'pg_opclass'::regclass
                THEN (SELECT o.opcowner FROM pg_opclass AS o WHERE o.oid = d.objid)
            WHEN 'pg_opfamily'::regclass
                THEN (SELECT o.opfowner FROM pg_opfamily AS o WHERE o.oid = d.objid)
            WHEN 'pg_collation'::regclass
                THEN (SELECT o.collowner FROM pg_collation AS o WHERE o.oid = d.objid)
            WHEN 'pg_conversion'::regclass
                THEN (SELECT o.conowner FROM pg_conversion AS o WHERE o.oid = d.objid)
            WHEN 'pg_ts_dict'::regclass
                THEN (SELECT o.dictowner FROM pg_ts_dict AS o WHERE o.oid = d.objid)
            WHEN 'pg_ts_config'::regclass
                THEN (SELECT o.cfgowner FROM pg_ts_config AS o WHERE o.oid = d.objid)
            WHEN 'pg_statistic_ext'::regclass
                THEN (SELECT o.stxowner FROM pg_statistic_ext AS o WHERE o.oid = d.objid)
        END AS owner,
        CASE WHEN d.classid = 'pg_type'::regclass
            THEN (SELECT t.typtype FROM pg_type AS t WHERE t.oid = d.objid) END AS typtype,
        EXISTS (SELECT FROM pg_depend AS x WHERE x.classid = d.classid AND x.objid = d.objid
            AND x.deptype = 'e') AS extension,
        d.classid = 'pg_class'::regclass AND EXISTS (
            SELECT FROM pg_depend AS x JOIN pg_class AS c ON c.oid = x.objid
            WHERE x.classid = 'pg_class'::regclass AND x.objid = d.objid AND c.relkind = 'S'
                AND x.refclassid = 'pg_class'::regclass AND x.deptype IN ('a', 'i')
        ) AS follows_table,
        d.classid = 'pg_type'::regclass AND EXISTS (
            SELECT FROM pg_depend AS x WHERE x.classid = 'pg_type'::regclass AND x.objid = d.objid
                AND x.refclassid = 'pg_type'::regclass AND x.deptype = 'i'
        ) AS follows_type
    FROM pg_depend AS d
    CROSS JOIN LATERAL pg_identify_object(d.classid, d.objid, 0) AS i
    WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = (SELECT ns.oid FROM ns)
        AND d.deptype = 'n'
),
the_table AS (SELECT %2$L::name AS relname),
%9$s
SELECT jsonb_build_object(
    'version', current_setting('server_version_num')::integer,
    'paths', to_jsonb(ARRAY(
        SELECT s.boot_val FROM pg_settings AS s WHERE s.name = 'search_path'
        UNION ALL
        SELECT s.reset_val FROM pg_settings AS s WHERE s.name = 'search_path'
        UNION ALL
        SELECT substr(cfg, 13) FROM pg_db_role_setting AS s, unnest(s.setconfig) AS cfg
        WHERE s.setdatabase IN (0, (SELECT d.oid FROM pg_database AS d
            WHERE d.datname = current_database()))
            AND starts_with(cfg, 'search_path=')
    )),
    'role_schemas', to_jsonb(ARRAY(
        SELECT n.nspname::text FROM pg_namespace AS n
        WHERE EXISTS (SELECT FROM pg_roles AS r WHERE r.rolname = n.nspname) ORDER BY 1
    )),
    'database', (
        SELECT jsonb_build_object('name', d.datname, 'owner', pg_get_userbyid(d.datdba),
            'grants', %4$s,
            'subject_create', has_database_privilege(%3$L::name, d.oid, 'CREATE'))
        FROM pg_database AS d WHERE d.datname = current_database()
    ),
    'schemas', coalesce((
        SELECT jsonb_agg(jsonb_build_object('name', n.nspname, 'owner', pg_get_userbyid(n.nspowner))
            ORDER BY n.nspname COLLATE "C")
        FROM pg_namespace AS n
        WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
    ), '[]'::jsonb),
    'schema', (
        SELECT jsonb_build_object('name', ns.nspname, 'owner', pg_get_userbyid(ns.nspowner),
            'grants', %5$s,
            'subject_create', has_schema_privilege(%3$L::name, ns.oid, 'CREATE'))
        FROM ns
    ),
    'relations', coalesce((
        SELECT jsonb_agg(jsonb_build_object('name', rel.relname, 'relkind', rel.relkind,
            'owner', pg_get_userbyid(rel.relowner), 'row_security', rel.relrowsecurity,
            'force_row_security', rel.relforcerowsecurity, 'security_invoker', rel.invoker,
            'extension', rel.extension, 'owned_by', rel.owned_by, 'grants', %6$s)
            ORDER BY rel.relname COLLATE "C")
        FROM rel WHERE %2$L IS NULL OR rel.relname = %2$L
    ), '[]'::jsonb),
    'routines', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'identity', (pg_identify_object('pg_proc'::regclass, p.oid, 0)).identity,
            'prokind', p.prokind, 'owner', pg_get_userbyid(p.proowner),
            'extension', EXISTS (SELECT FROM pg_depend AS x WHERE x.classid = 'pg_proc'::regclass
                AND x.objid = p.oid AND x.deptype = 'e'),
            'grants', %7$s)
            ORDER BY (pg_identify_object('pg_proc'::regclass, p.oid, 0)).identity COLLATE "C")
        FROM pg_proc AS p WHERE p.pronamespace = (SELECT ns.oid FROM ns) AND %2$L IS NULL
    ), '[]'::jsonb),
    'default_acl', coalesce((
        SELECT jsonb_agg(jsonb_build_object('for_role', pg_get_userbyid(a.defaclrole),
            'objtype', a.defaclobjtype, 'grants', %8$s)
            ORDER BY pg_get_userbyid(a.defaclrole) COLLATE "C", a.defaclobjtype)
        FROM pg_default_acl AS a
        WHERE %2$L IS NULL AND a.defaclnamespace = coalesce((SELECT ns.oid FROM ns), 0)
    ), '[]'::jsonb),
    'owned', coalesce((
        SELECT jsonb_agg(jsonb_build_object('type', dep.type, 'identity', dep.identity,
            'owner', pg_get_userbyid(dep.owner), 'typtype', dep.typtype,
            'extension', dep.extension, 'follows_table', dep.follows_table,
            'follows_type', dep.follows_type)
            -- a multirange before its range: ALTER TYPE of the range on 16
            -- leaves the multirange's array type behind
            ORDER BY dep.follows_type DESC, dep.type, dep.identity COLLATE "C")
        FROM dep WHERE %2$L IS NULL
    ), '[]'::jsonb),
    'no_usage', to_jsonb(ARRAY(
        SELECT DISTINCT pg_get_userbyid(o.owner)::text
        FROM (SELECT rel.relowner AS owner FROM rel
            UNION SELECT p.proowner FROM pg_proc AS p WHERE p.pronamespace = (SELECT ns.oid FROM ns)) AS o
        WHERE NOT has_schema_privilege(o.owner, (SELECT ns.oid FROM ns), 'USAGE')
    )),
    'live', coalesce((
        SELECT jsonb_agg(jsonb_build_object('object', live.object, 'owner', pg_get_userbyid(live.owner),
            'extension', live.extension, 'why', live.why, 'fix', live.fix)
            ORDER BY live.object COLLATE "C", live.why)
        FROM live
    ), '[]'::jsonb)
)::text
$q$, p_schema, p_table, p_subject,
        datatable_roles.acl_sql_grants('coalesce(d.datacl, acldefault(''d'', d.datdba))'),
        datatable_roles.acl_sql_grants('coalesce(ns.nspacl, acldefault(''n'', ns.nspowner))'),
        datatable_roles.acl_sql_grants(
            'coalesce(rel.relacl, acldefault(CASE WHEN rel.relkind = ''S'' THEN ''s'' ELSE ''r'' END::"char", rel.relowner))'),
        datatable_roles.acl_sql_grants('coalesce(p.proacl, acldefault(''f'', p.proowner))'),
        datatable_roles.acl_sql_grants('a.defaclacl'),
        datatable_roles.acl_live_sql())
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
-- login (applying). The connection string goes to dblink_connect as an
-- argument, never into statement text. A changed admin password is
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
    IF p_as_link THEN
        BEGIN
            PERFORM datatable_roles.link_session_open('datatable_roles_acl', p_entry.dbname);
        EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection THEN
            GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL, state = RETURNED_SQLSTATE;
            PERFORM datatable_roles.acl_unreachable(p_entry, 'link login',
                datatable_roles.link_login(), why, state);
        END;
    ELSE
        IF p_entry.admin_verifier IS NOT NULL
            AND NOT datatable_roles.verifier_is(p_entry.admin_login, p_entry.admin_verifier) THEN
            RAISE EXCEPTION 'the password of admin login % was changed outside the package',
                quote_literal(p_entry.admin_login)
                USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'admin_password',
                      HINT = 'Give the package the admin login''s password again: set_datatable_admin_password(workspace, name, admin_password).';
        END IF;
        BEGIN
            PERFORM datatable_roles.session_open('datatable_roles_acl', p_entry.dbname,
                p_entry.admin_login, p_entry.admin_password);
        EXCEPTION WHEN sqlclient_unable_to_establish_sqlconnection THEN
            GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL, state = RETURNED_SQLSTATE;
            PERFORM datatable_roles.acl_unreachable(p_entry, 'admin login', p_entry.admin_login, why, state);
        END;
    END IF;
    RETURN 'datatable_roles_acl';
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
        PERFORM datatable_roles_dblink.dblink_exec(conn, 'SET ROLE NONE');
        -- Qualified: the session's search_path is not pinned yet.
        SELECT v.p INTO session_path
        FROM datatable_roles_dblink.dblink(conn, 'SELECT pg_catalog.current_setting(''search_path'')')
            AS v (p text);
        PERFORM datatable_roles_dblink.dblink_exec(conn, 'SET search_path = pg_catalog, pg_temp');
        SELECT v.j INTO snap
        FROM datatable_roles_dblink.dblink(conn, datatable_roles.acl_read_sql(
            p_target ->> 'schema', p_target ->> 'table', p_subject)) AS v (j text);
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

-- The live code (acl_live_sql) an owner hand-over of p_snapshot's target to
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
    target jsonb := datatable_roles.acl_target(p_target);
    tkind text := datatable_roles.acl_target_kind(target);
    action text;
    bad text;
    role_name text;
    on_what text;
    snap jsonb;
    version integer;
    privs text [];
    privs_sql text;
    creators text [];
    creator text;
    item jsonb;
    rel jsonb;
    names text [] := '{}'::text [];
    skipped text [] := '{}'::text [];
    public_on text [] := '{}'::text [];
    no_rls text [] := '{}'::text [];
    not_invoker text [] := '{}'::text [];
    in_effect text [] := '{}'::text [];   -- objects (creators) where the change holds already
    statements text [] := '{}'::text [];
    run_as text [] := '{}'::text [];
    owners text [] := '{}'::text [];
    grp record;
    warnings jsonb := '[]'::jsonb;
    normalized jsonb;
    object_kind text;
    verb text;
    qualified text;
    keyword text;
    path_schemas text [];
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
    IF action <> 'owner' THEN
        IF p_change ? 'on' AND jsonb_typeof(p_change -> 'on') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION '"on" must be a JSON string' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        on_what := coalesce(p_change ->> 'on', 'target');
        IF NOT (on_what = 'target'
            OR (tkind = 'schema' AND on_what IN ('all tables', 'all sequences', 'all functions'))
            OR (tkind IN ('schema', 'database')
                AND on_what IN ('future tables', 'future sequences', 'future functions'))
            OR (tkind = 'database' AND on_what = 'future schemas')) THEN
            RAISE EXCEPTION '"on": % does not apply to a % target', quote_literal(left(on_what, 80)), tkind
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = CASE tkind
                          WHEN 'database' THEN 'On the database: target, future tables, future sequences, future functions, future schemas.'
                          WHEN 'schema' THEN 'On a schema: target, all tables, all sequences, all functions, future tables, future sequences, future functions.'
                          ELSE 'On a table: target.' END;
        END IF;
        IF p_change ? 'for' AND NOT starts_with(on_what, 'future ') THEN
            RAISE EXCEPTION '"for" goes only with "on": "future ..." (default privileges)'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    snap := datatable_roles.acl_snapshot(p_entry, target, role_name);
    version := (snap ->> 'version')::integer;
    rel := CASE WHEN tkind = 'table' THEN snap -> 'relations' -> 0 END;
    path_schemas := datatable_roles.acl_path_schemas(snap);

    ---------------------------------------------------------------- owner
    IF action = 'owner' THEN
        normalized := jsonb_build_object('owner', p_change -> 'owner');
        IF tkind = 'database' THEN
            RAISE EXCEPTION 'the database of a data table stays owned by its admin login'
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Hand over a schema or a table instead.';
        END IF;
        IF tkind = 'schema' THEN
            IF role_name <> p_entry.admin_login AND NOT (snap -> 'database' ->> 'subject_create')::boolean THEN
                RAISE EXCEPTION 'role % may not own schema %: it has no CREATE on database %',
                    quote_literal(role_name), quote_literal(target ->> 'schema'), quote_literal(p_entry.dbname)
                    USING ERRCODE = 'insufficient_privilege',
                          HINT = 'PostgreSQL lets a schema pass only to a role that may CREATE in the database. Grant it first (a change of its own, on {"database": true}), or hand the schema to admin.';
            END IF;
            IF NOT datatable_roles.acl_reachable(p_entry, snap -> 'schema' ->> 'owner') THEN
                RAISE EXCEPTION 'schema % is owned by %, which is neither admin nor a catalog role',
                    quote_literal(target ->> 'schema'), quote_literal(snap -> 'schema' ->> 'owner')
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF snap -> 'schema' ->> 'owner' <> role_name AND NOT (role_name = p_entry.admin_login
                AND snap -> 'schema' ->> 'owner' = 'pg_database_owner') THEN
                statements := statements || format('ALTER SCHEMA %I OWNER TO %I', target ->> 'schema', role_name);
            END IF;
            FOR item IN SELECT e FROM jsonb_array_elements(snap -> 'owned') AS e LOOP
                -- An owned sequence follows its table; from PostgreSQL 17 on, a
                -- multirange type follows its range type (15 and 16 alter it apart).
                IF (item ->> 'owner') = role_name OR (item ->> 'follows_table')::boolean
                    OR ((item ->> 'follows_type')::boolean AND version >= 170000) THEN
                    CONTINUE;
                ELSIF (item ->> 'extension')::boolean THEN
                    names := names || (item ->> 'identity');
                    CONTINUE;
                ELSIF (item ->> 'type') IN ('text search parser', 'text search template')
                    OR NOT datatable_roles.acl_reachable(p_entry, item ->> 'owner') THEN
                    skipped := skipped || format('%s %s (owner %s)', item ->> 'type', item ->> 'identity',
                        item ->> 'owner');
                    CONTINUE;
                END IF;
                keyword := CASE item ->> 'type'
                    WHEN 'type' THEN CASE WHEN item ->> 'typtype' = 'd' THEN 'DOMAIN' ELSE 'TYPE' END
                    WHEN 'composite type' THEN 'TYPE'
                    WHEN 'statistics object' THEN 'STATISTICS'
                    ELSE upper(item ->> 'type') END;
                IF keyword NOT IN ('TABLE', 'VIEW', 'MATERIALIZED VIEW', 'FOREIGN TABLE', 'SEQUENCE',
                    'TYPE', 'DOMAIN', 'FUNCTION', 'PROCEDURE', 'AGGREGATE', 'OPERATOR',
                    'OPERATOR CLASS', 'OPERATOR FAMILY', 'COLLATION', 'CONVERSION',
                    'TEXT SEARCH DICTIONARY', 'TEXT SEARCH CONFIGURATION', 'STATISTICS') THEN
                    skipped := skipped || format('%s %s (no ALTER ... OWNER TO for it)', item ->> 'type',
                        item ->> 'identity');
                    CONTINUE;
                END IF;
                -- identity is pg_identify_object's: schema-qualified, every name quoted.
                statements := statements || format('ALTER %s %s OWNER TO %I', keyword,
                    item ->> 'identity', role_name);
            END LOOP;
            IF cardinality(names) > 0 THEN
                warnings := warnings || datatable_roles.acl_warning('extension_member', format(
                    'left out, as members of an extension (ALTER EXTENSION ... decides them): %s',
                    datatable_roles.acl_some(names)));
            END IF;
        ELSE
            IF (rel ->> 'owned_by') IS NOT NULL THEN
                RAISE EXCEPTION 'sequence %.% belongs to %: its owner follows the table''s',
                    quote_ident(target ->> 'schema'), quote_ident(target ->> 'table'), rel ->> 'owned_by'
                    USING ERRCODE = 'invalid_parameter_value',
                          HINT = 'Hand over the table instead.';
            END IF;
            IF NOT datatable_roles.acl_reachable(p_entry, rel ->> 'owner') THEN
                RAISE EXCEPTION '%.% is owned by %, which is neither admin nor a catalog role',
                    quote_ident(target ->> 'schema'), quote_ident(target ->> 'table'),
                    quote_literal(rel ->> 'owner')
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF rel ->> 'owner' <> role_name THEN
                IF NOT (snap -> 'schema' ->> 'subject_create')::boolean THEN
                    RAISE EXCEPTION 'role % may not own %.%: it has no CREATE on schema %',
                        quote_literal(role_name), quote_ident(target ->> 'schema'),
                        quote_ident(target ->> 'table'), quote_literal(target ->> 'schema')
                        USING ERRCODE = 'insufficient_privilege',
                              HINT = 'PostgreSQL lets an object pass only to a role that may CREATE in its schema. Grant CREATE on the schema first (a change of its own), or hand the whole schema over.';
                END IF;
                statements := statements || format('ALTER %s %I.%I OWNER TO %I',
                    datatable_roles.acl_relkind_keyword(rel ->> 'relkind'),
                    target ->> 'schema', target ->> 'table', role_name);
            END IF;
        END IF;
        IF cardinality(skipped) > 0 THEN
            warnings := warnings || datatable_roles.acl_warning('left_out', format(
                'left out (their owner is neither admin nor a catalog role, or they have no owner to change): %s',
                datatable_roles.acl_some(skipped)));
        END IF;
        IF role_name <> p_entry.admin_login AND cardinality(statements) > 0 THEN
            warnings := warnings || datatable_roles.acl_warning('owner_bypasses_rls', format(
                '%s will own what it is handed: an owner bypasses row-level security (unless FORCE ROW LEVEL SECURITY), may alter, drop and grant it, and every login holding %s gets that',
                role_name, role_name));
        END IF;
        IF (snap -> (CASE WHEN tkind = 'table' THEN 'relations' ELSE 'schema' END)) @? '$.**.public ? (@ == true)' THEN
            warnings := warnings || datatable_roles.acl_warning('public_grant', format(
                'PUBLIC holds privileges on %s: every role reaches it, whoever owns it',
                CASE WHEN tkind = 'table' THEN format('%I.%I', target ->> 'schema', target ->> 'table')
                    ELSE format('schema %I', target ->> 'schema') END));
        END IF;
        IF cardinality(statements) = 0 THEN
            warnings := warnings || datatable_roles.acl_warning('nothing_to_do', format(
                '%s owns it all already', datatable_roles.acl_label(p_entry, role_name)));
        END IF;
        warnings := warnings || datatable_roles.acl_live_code(p_entry, snap, role_name);
        -- ALTER ... OWNER TO runs as the link login: it needs both owners' rights.
        RETURN jsonb_build_object('datatable', p_entry.workspace || '/' || p_entry.name,
            'target', target, 'change', normalized, 'statements', to_jsonb(statements),
            'run_as', to_jsonb(array_fill(NULL::text, ARRAY[cardinality(statements)])),
            'warnings', warnings, 'nothing_to_do', cardinality(statements) = 0);
    END IF;

    ---------------------------------------------------------------- grant / revoke
    object_kind := CASE
        WHEN on_what = 'target' AND tkind = 'table' AND rel ->> 'relkind' = 'S' THEN 'sequence'
        WHEN on_what = 'target' THEN tkind
        WHEN on_what IN ('all tables', 'future tables') THEN 'table'
        WHEN on_what IN ('all sequences', 'future sequences') THEN 'sequence'
        WHEN on_what IN ('all functions', 'future functions') THEN 'function'
        ELSE 'schema' END;
    privs := datatable_roles.acl_check_privileges(p_change -> action, object_kind, version);
    privs_sql := array_to_string(privs, ', ');
    verb := CASE action WHEN 'grant' THEN 'GRANT %s ON %s TO %I' ELSE 'REVOKE %s ON %s FROM %I' END;
    IF action = 'grant' AND object_kind = 'database' AND 'CONNECT' = ANY(privs)
        AND role_name <> p_entry.admin_login THEN
        RAISE EXCEPTION 'CONNECT is never granted to a catalog role: every login holding % could then connect to %',
            quote_literal(role_name), quote_literal(p_entry.dbname)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Logins handed to jobs get CONNECT on their one database from the package itself.';
    END IF;

    IF on_what = 'target' THEN
        IF tkind = 'database' THEN
            IF datatable_roles.acl_in_effect(action, privs, snap -> 'database' -> 'grants',
                snap -> 'database' ->> 'owner', role_name) THEN
                in_effect := in_effect || format('database %I', p_entry.dbname);
            ELSE
                statements := statements || format(verb, privs_sql, format('DATABASE %I', p_entry.dbname), role_name);
                run_as := run_as || p_entry.admin_login;
            END IF;
            IF snap -> 'database' -> 'grants' @? '$[*] ? (@.public == true)' THEN
                public_on := public_on || format('database %I', p_entry.dbname);
            END IF;
        ELSIF tkind = 'schema' THEN
            IF NOT datatable_roles.acl_reachable(p_entry, snap -> 'schema' ->> 'owner') THEN
                RAISE EXCEPTION 'schema % is owned by %, which is neither admin nor a catalog role',
                    quote_literal(target ->> 'schema'), quote_literal(snap -> 'schema' ->> 'owner')
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF datatable_roles.acl_in_effect(action, privs, snap -> 'schema' -> 'grants',
                snap -> 'schema' ->> 'owner', role_name) THEN
                in_effect := in_effect || format('schema %I', target ->> 'schema');
            ELSE
                statements := statements || format(verb, privs_sql, format('SCHEMA %I', target ->> 'schema'), role_name);
                -- pg_database_owner is the admin login here (it owns the database)
                run_as := run_as || CASE WHEN snap -> 'schema' ->> 'owner' = 'pg_database_owner'
                    THEN p_entry.admin_login ELSE snap -> 'schema' ->> 'owner' END;
            END IF;
            IF snap -> 'schema' -> 'grants' @? '$[*] ? (@.public == true)' THEN
                public_on := public_on || format('schema %I', target ->> 'schema');
            END IF;
        ELSE
            IF NOT datatable_roles.acl_reachable(p_entry, rel ->> 'owner') THEN
                RAISE EXCEPTION '%.% is owned by %, which is neither admin nor a catalog role',
                    quote_ident(target ->> 'schema'), quote_ident(target ->> 'table'),
                    quote_literal(rel ->> 'owner')
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
            qualified := format('%I.%I', target ->> 'schema', target ->> 'table');
            IF datatable_roles.acl_in_effect(action, privs, rel -> 'grants', rel ->> 'owner', role_name) THEN
                in_effect := in_effect || qualified;
            ELSE
                statements := statements || format(verb, privs_sql,
                    CASE WHEN rel ->> 'relkind' = 'S' THEN 'SEQUENCE ' ELSE 'TABLE ' END || qualified, role_name);
                run_as := run_as || (rel ->> 'owner');
            END IF;
            IF rel -> 'grants' @? '$[*] ? (@.public == true)' THEN
                public_on := public_on || qualified;
            END IF;
            IF rel ->> 'relkind' IN ('r', 'p', 'm', 'f') AND NOT (rel ->> 'row_security')::boolean THEN
                no_rls := no_rls || qualified;
            ELSIF rel ->> 'relkind' = 'v' AND NOT (rel ->> 'security_invoker')::boolean THEN
                not_invoker := not_invoker || qualified;
            END IF;
        END IF;
    ELSIF starts_with(on_what, 'all ') THEN
        IF object_kind = 'function' THEN
            FOR item IN SELECT e FROM jsonb_array_elements(snap -> 'routines') AS e LOOP
                IF NOT datatable_roles.acl_reachable(p_entry, item ->> 'owner') THEN
                    skipped := skipped || format('%s (owner %s)', item ->> 'identity', item ->> 'owner');
                    CONTINUE;
                ELSIF datatable_roles.acl_in_effect(action, privs, item -> 'grants', item ->> 'owner', role_name) THEN
                    in_effect := in_effect || (item ->> 'identity');
                    CONTINUE;
                END IF;
                names := names || (item ->> 'identity');
                owners := owners || (item ->> 'owner');
                IF item -> 'grants' @? '$[*] ? (@.public == true)' THEN
                    public_on := public_on || (item ->> 'identity');
                END IF;
            END LOOP;
            FOR grp IN SELECT * FROM datatable_roles.acl_per_owner(names, owners) LOOP
                statements := statements || format(verb, privs_sql,
                    'ROUTINE ' || array_to_string(grp.names, ', '), role_name);
                run_as := run_as || grp.owner;
            END LOOP;
        ELSE
            FOR item IN SELECT e FROM jsonb_array_elements(snap -> 'relations') AS e LOOP
                IF (object_kind = 'sequence') <> (item ->> 'relkind' = 'S') THEN
                    CONTINUE;
                END IF;
                qualified := format('%I.%I', target ->> 'schema', item ->> 'name');
                IF NOT datatable_roles.acl_reachable(p_entry, item ->> 'owner') THEN
                    skipped := skipped || format('%s (owner %s)', qualified, item ->> 'owner');
                    CONTINUE;
                ELSIF datatable_roles.acl_in_effect(action, privs, item -> 'grants', item ->> 'owner', role_name) THEN
                    in_effect := in_effect || qualified;
                    CONTINUE;
                END IF;
                names := names || qualified;
                owners := owners || (item ->> 'owner');
                IF item -> 'grants' @? '$[*] ? (@.public == true)' THEN
                    public_on := public_on || qualified;
                END IF;
                IF item ->> 'relkind' IN ('r', 'p', 'm', 'f') AND NOT (item ->> 'row_security')::boolean THEN
                    no_rls := no_rls || qualified;
                ELSIF item ->> 'relkind' = 'v' AND NOT (item ->> 'security_invoker')::boolean THEN
                    not_invoker := not_invoker || qualified;
                END IF;
            END LOOP;
            FOR grp IN SELECT * FROM datatable_roles.acl_per_owner(names, owners) LOOP
                statements := statements || format(verb, privs_sql,
                    CASE object_kind WHEN 'sequence' THEN 'SEQUENCE ' ELSE 'TABLE ' END
                    || array_to_string(grp.names, ', '), role_name);
                run_as := run_as || grp.owner;
            END LOOP;
        END IF;
        IF cardinality(names) = 0 AND cardinality(in_effect) = 0 THEN
            warnings := warnings || datatable_roles.acl_warning('nothing_to_do', format(
                'schema %I has no %s the package can act on', target ->> 'schema', substr(on_what, 5)));
        END IF;
        IF cardinality(skipped) > 0 THEN
            warnings := warnings || datatable_roles.acl_warning('left_out', format(
                'left out, as their owner is neither admin nor a catalog role (a set login''s objects are its own): %s',
                datatable_roles.acl_some(skipped)));
        END IF;
    ELSE
        -- Default privileges: one statement per creating role.
        IF p_change ? 'for' THEN
            IF jsonb_typeof(p_change -> 'for') <> 'array' OR jsonb_array_length(p_change -> 'for') = 0 THEN
                RAISE EXCEPTION '"for" is a non-empty JSON array of role names'
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            creators := ARRAY(
                SELECT DISTINCT datatable_roles.acl_role(p_entry, e, 'for')
                FROM jsonb_array_elements(p_change -> 'for') AS e ORDER BY 1);
        ELSE
            creators := ARRAY(
                SELECT p_entry.admin_login
                UNION
                SELECT r.name FROM datatable_roles.datatable_role AS m
                JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
                WHERE m.datatable_id = p_entry.id AND r.name <> role_name
                ORDER BY 1);
        END IF;
        FOREACH creator IN ARRAY creators LOOP
            IF datatable_roles.acl_in_effect(action, privs, datatable_roles.acl_defaults_of(snap, creator,
                CASE on_what WHEN 'future tables' THEN 'r' WHEN 'future sequences' THEN 'S'
                    WHEN 'future functions' THEN 'f' ELSE 'n' END,
                tkind = 'database', datatable_roles.acl_kind_privileges(object_kind, version)),
                creator, role_name) THEN
                in_effect := in_effect || datatable_roles.acl_label(p_entry, creator);
                CONTINUE;
            END IF;
            statements := statements || format('ALTER DEFAULT PRIVILEGES FOR ROLE %I%s %s',
                creator,
                CASE WHEN tkind = 'schema' THEN format(' IN SCHEMA %I', target ->> 'schema') ELSE '' END,
                format(verb, privs_sql, upper(substr(on_what, 8)), role_name));
            run_as := run_as || NULL::text;   -- the creator's, whoever runs it
        END LOOP;
        warnings := warnings || datatable_roles.acl_warning('default_privileges', format(
            'default privileges bind only %s created later by %s%s; objects that exist now are not touched%s, and objects a set login (a job holding several roles) creates are its own and are not covered',
            substr(on_what, 8),
            array_to_string(ARRAY(SELECT datatable_roles.acl_label(p_entry, c) FROM unnest(creators) AS c), ', '),
            CASE WHEN tkind = 'schema' THEN format(' in schema %I', target ->> 'schema') ELSE ' in any schema' END,
            CASE WHEN on_what = 'future schemas' THEN ''
                ELSE format(' (use "all %s")', substr(on_what, 8)) END));
        IF action = 'grant' AND on_what = 'future tables' THEN
            warnings := warnings || datatable_roles.acl_warning('rls_disabled',
                'tables are created with row-level security disabled: enable it on each new table before its rows matter (ALTER TABLE ... ENABLE ROW LEVEL SECURITY)');
        ELSIF on_what = 'future functions' THEN
            warnings := warnings || datatable_roles.acl_warning('public_grant',
                'PUBLIC gets EXECUTE on every new function by default, unless default privileges revoke it');
        END IF;
        IF snap -> 'default_acl' @? '$[*].grants[*] ? (@.public == true)' THEN
            warnings := warnings || datatable_roles.acl_warning('public_grant',
                'default privileges here grant to PUBLIC: every role reaches those objects when they are created');
        END IF;
    END IF;

    PERFORM datatable_roles.acl_check_run_as(snap, run_as, target ->> 'schema');
    IF action = 'grant' THEN
        IF 'CREATE' = ANY(privs) AND object_kind = 'schema' AND (
            (on_what = 'target' AND (target ->> 'schema') = ANY(path_schemas))
            OR on_what = 'future schemas') THEN
            warnings := warnings || datatable_roles.acl_warning('search_path_create', format(
                'CREATE on %s, which %s on a default search_path (%s): %s can create objects that shadow those other roles, the admin login among them, find there (CVE-2018-1058)',
                CASE WHEN on_what = 'target' THEN format('schema %I', target ->> 'schema') ELSE 'new schemas' END,
                CASE WHEN on_what = 'target' THEN 'is' ELSE 'may be' END,
                array_to_string(path_schemas, ', '), role_name));
        ELSIF 'CREATE' = ANY(privs) AND object_kind = 'database' THEN
            warnings := warnings || datatable_roles.acl_warning('search_path_create', format(
                'CREATE on database %I lets %s create schemas; one named like a role is first on that role''s search_path ("$user"), and objects there shadow the ones it means (CVE-2018-1058)',
                p_entry.dbname, role_name));
        END IF;
        IF cardinality(no_rls) > 0 THEN
            warnings := warnings || datatable_roles.acl_warning('rls_disabled', format(
                'row-level security is disabled (or impossible) on %s: every login holding %s reaches all its rows',
                datatable_roles.acl_some(no_rls), role_name));
        END IF;
        IF object_kind = 'table' THEN
            warnings := warnings || datatable_roles.acl_runs_as_others(privs,
                CASE WHEN on_what = 'target' THEN qualified WHEN on_what = 'all tables'
                    THEN datatable_roles.acl_some(names) ELSE 'new tables' END,
                CASE WHEN on_what = 'target' THEN datatable_roles.acl_label(p_entry, rel ->> 'owner') END,
                role_name);
        END IF;
        IF cardinality(not_invoker) > 0 THEN
            warnings := warnings || datatable_roles.acl_warning('view_not_invoker', format(
                'view %s is not security_invoker: it reads its tables as its owner, so %s reaches the rows its owner reaches, not its own (ALTER VIEW ... SET (security_invoker = true))',
                datatable_roles.acl_some(not_invoker), role_name));
        END IF;
    END IF;
    IF cardinality(public_on) > 0 THEN
        warnings := warnings || datatable_roles.acl_warning('public_grant', format(
            'PUBLIC holds privileges on %s: every role reaches it, whatever is granted or revoked here',
            datatable_roles.acl_some(public_on)));
    END IF;
    IF cardinality(statements) = 0 AND cardinality(in_effect) > 0 THEN
        warnings := warnings || datatable_roles.acl_warning('nothing_to_do', format(
            CASE WHEN action = 'grant' THEN '%s holds %s already, %s'
                WHEN starts_with(on_what, 'future ') AND tkind = 'schema'
                    THEN '%s holds none of %s, %s: nothing to revoke here (default privileges in a schema only add to the database-wide ones: revoke those on the database target)'
                WHEN starts_with(on_what, 'future ')
                    THEN '%s holds none of %s, %s: nothing to revoke'
                ELSE '%s holds none of %s, %s: nothing to revoke (a grant another grantor made is not the owner''s to take back; datatable_acl shows every grant)' END,
            datatable_roles.acl_label(p_entry, role_name), privs_sql,
            CASE WHEN starts_with(on_what, 'future ')
                THEN format('in the default privileges for %s created by %s', substr(on_what, 8),
                    datatable_roles.acl_some(in_effect))
                ELSE format('granted by the owner on %s', datatable_roles.acl_some(in_effect)) END));
    END IF;
    normalized := jsonb_build_object(action, to_jsonb(privs),
        CASE action WHEN 'grant' THEN 'to' ELSE 'from' END, p_change -> CASE action WHEN 'grant' THEN 'to' ELSE 'from' END,
        'on', on_what);
    IF starts_with(on_what, 'future ') THEN
        normalized := normalized || jsonb_build_object('for', to_jsonb(ARRAY(
            SELECT datatable_roles.acl_label(p_entry, c) FROM unnest(creators) AS c)));
    END IF;
    RETURN jsonb_build_object('datatable', p_entry.workspace || '/' || p_entry.name,
        'target', target, 'change', normalized, 'statements', to_jsonb(statements),
        'run_as', to_jsonb(run_as), 'warnings', warnings, 'nothing_to_do', cardinality(statements) = 0);
END;
$$;
