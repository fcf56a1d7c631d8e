-- The grants editor's reading of a data table's database (docs/acl.md),
-- stored by the post-apply hook as datatable_roles.remote_script 'acl_read'.
-- acl_snapshot runs this file once in each session it opens there, as the
-- admin login with the search_path pinned to pg_catalog, pg_temp, then
--     EXECUTE datatable_roles_acl_read(schema, table, subject)
-- with the target's schema ($1, NULL for the database), its table ($2, NULL
-- for a schema or the database) and the role a change names ($3): names go
-- in as parameters only, never into the statement's text.
--
-- One JSON document: the server version; the search paths a session there
-- may start with (compiled default, the admin login's, every per-role or
-- per-database setting) and the schemas named like a role ("$user"); the
-- database, the schema $1 and the relation $2 with owners, grants (the rows
-- of each ACL, PostgreSQL's default when there is none), row security and
-- security_invoker; the schemas of the database; the relations and routines
-- of the schema; its default privileges (the database-wide ones without a
-- schema); what depends on the schema (for an owner hand-over); whether $3
-- may CREATE in the database and the schema; and live, the code an owner
-- hand-over would pass on with the objects of the target (docs/acl.md, "Live
-- code"), whoever owns it now: SECURITY DEFINER routines; routines
-- PostgreSQL calls without an EXECUTE check (range, type, operator class,
-- operator and conversion support functions); views that are not
-- security_invoker; enabled user triggers and rules; relations whose
-- indexes, constraints, defaults, statistics, policies or materialized view
-- query call a user routine or operator (ANALYZE, autovacuum and REFRESH run
-- those as the owner; writes as the writer); and relations with a column of
-- a range type whose support function is a user routine. A user routine is
-- one created after initdb (oid >= 16384) that is not an extension member.
PREPARE datatable_roles_acl_read (name, name, name) AS
WITH ns AS (
    SELECT n.oid, n.nspname, n.nspowner, n.nspacl FROM pg_namespace AS n WHERE n.nspname = $1
),

rel AS (
    SELECT
        c.oid, c.relname, c.relkind, c.relowner, c.relacl, c.relrowsecurity,
        c.relforcerowsecurity,
        coalesce((
            SELECT o.option_value::boolean FROM pg_options_to_table(c.reloptions) AS o
            WHERE o.option_name = 'security_invoker'
        ), FALSE) AS invoker,
        EXISTS (  -- noqa: LT01, LT06
            SELECT FROM pg_depend AS x
            WHERE
                x.classid = 'pg_class'::regclass
                AND x.objid = c.oid AND x.deptype = 'e'
        ) AS extension,
        (
            SELECT (pg_identify_object('pg_class'::regclass, t.oid, 0)).identity
            FROM pg_depend AS x JOIN pg_class AS t ON t.oid = x.refobjid
            WHERE
                x.classid = 'pg_class'::regclass AND x.objid = c.oid
                AND x.refclassid = 'pg_class'::regclass AND x.deptype IN ('a', 'i')
                AND c.relkind = 'S'
            LIMIT 1
        ) AS owned_by
    FROM pg_class AS c JOIN ns ON ns.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
),

dep AS (
    SELECT
        d.classid, d.objid, i.type, i.identity,
        CASE d.classid
            WHEN 'pg_class'::regclass
                THEN (SELECT c.relowner FROM pg_class AS c WHERE c.oid = d.objid)
            WHEN 'pg_proc'::regclass
                THEN (SELECT p.proowner FROM pg_proc AS p WHERE p.oid = d.objid)
            WHEN 'pg_type'::regclass
                THEN (SELECT t.typowner FROM pg_type AS t WHERE t.oid = d.objid)
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
        CASE
            WHEN d.classid = 'pg_type'::regclass
                THEN (SELECT t.typtype FROM pg_type AS t WHERE t.oid = d.objid)
        END AS typtype,
        EXISTS (  -- noqa: LT01, LT06
            SELECT FROM pg_depend AS x
            WHERE
                x.classid = d.classid AND x.objid = d.objid
                AND x.deptype = 'e'
        ) AS extension,
        d.classid = 'pg_class'::regclass AND EXISTS (
            SELECT FROM pg_depend AS x JOIN pg_class AS c ON c.oid = x.objid
            WHERE
                x.classid = 'pg_class'::regclass AND x.objid = d.objid AND c.relkind = 'S'
                AND x.refclassid = 'pg_class'::regclass AND x.deptype IN ('a', 'i')
        ) AS follows_table,
        d.classid = 'pg_type'::regclass AND EXISTS (
            SELECT FROM pg_depend AS x
            WHERE
                x.classid = 'pg_type'::regclass AND x.objid = d.objid
                AND x.refclassid = 'pg_type'::regclass AND x.deptype = 'i'
        ) AS follows_type
    FROM pg_depend AS d
    CROSS JOIN LATERAL pg_identify_object(d.classid, d.objid, 0) AS i
    WHERE
        d.refclassid = 'pg_namespace'::regclass AND d.refobjid = (SELECT ns.oid FROM ns)
        AND d.deptype = 'n'
),

the_table AS (SELECT $2 AS relname),

in_scope AS (
    SELECT
        rel.oid, rel.relkind, rel.relowner, rel.invoker, rel.extension,
        format('%I.%I', (SELECT ns.nspname FROM ns), rel.relname) AS qname
    FROM rel
    WHERE
        rel.relkind <> 'S'
        AND rel.relname = coalesce((SELECT t.relname FROM the_table AS t), rel.relname)
),

routine AS (
    SELECT
        p.oid, p.proowner, p.prosecdef, i.type, i.identity,
        EXISTS (  -- noqa: LT01, LT06
            SELECT FROM pg_depend AS x
            WHERE
                x.classid = 'pg_proc'::regclass
                AND x.objid = p.oid AND x.deptype = 'e'
        ) AS extension
    FROM pg_proc AS p CROSS JOIN LATERAL pg_identify_object('pg_proc'::regclass, p.oid, 0) AS i
    WHERE
        p.pronamespace = (SELECT ns.oid FROM ns)
        AND NOT EXISTS (SELECT FROM the_table AS t WHERE t.relname IS NOT NULL)
),

user_code AS (
    SELECT 'pg_proc'::regclass AS classid, p.oid FROM pg_proc AS p WHERE p.oid >= 16384
    UNION ALL
    SELECT 'pg_operator'::regclass, o.oid FROM pg_operator AS o WHERE o.oid >= 16384
),

user_code_free AS (
    SELECT u.classid, u.oid FROM user_code AS u
    WHERE NOT EXISTS (
        SELECT FROM pg_depend AS x
        WHERE
            x.classid = u.classid AND x.objid = u.oid
            AND x.deptype = 'e'
    )
),

parts AS (
    SELECT 'pg_class'::regclass AS classid, x.indexrelid AS objid, x.indrelid AS relid
    FROM pg_index AS x
    UNION ALL
    SELECT 'pg_constraint'::regclass, x.oid, x.conrelid FROM pg_constraint AS x
    UNION ALL
    SELECT 'pg_attrdef'::regclass, x.oid, x.adrelid FROM pg_attrdef AS x
    UNION ALL
    SELECT 'pg_statistic_ext'::regclass, x.oid, x.stxrelid FROM pg_statistic_ext AS x
    UNION ALL
    SELECT 'pg_policy'::regclass, x.oid, x.polrelid FROM pg_policy AS x
    UNION ALL
    SELECT 'pg_rewrite'::regclass, x.oid, x.ev_class FROM pg_rewrite AS x
    JOIN pg_class AS c ON c.oid = x.ev_class WHERE c.relkind = 'm'
),

live (object, owner, extension, why, fix) AS (
    SELECT
        r.type || ' ' || r.identity, r.proowner, r.extension,
        'SECURITY DEFINER: it runs as its owner for every caller',
        format('ALTER %s %s SECURITY INVOKER', upper(r.type), r.identity)
    FROM routine AS r WHERE r.prosecdef
    UNION ALL
    SELECT
        r.type || ' ' || r.identity, r.proowner, r.extension,
        'PostgreSQL calls it without an EXECUTE check (a support function of a range, type, operator class, operator or conversion), as whoever uses or analyzes the data',  -- noqa: LT05
        'drop what uses it (the type, operator class, operator or conversion), then the function'
    FROM routine AS r
    WHERE
        r.oid >= 16384 AND (
            EXISTS (SELECT FROM pg_range AS g WHERE r.oid IN (g.rngsubdiff, g.rngcanonical))
            OR EXISTS (
                SELECT FROM pg_type AS t
                WHERE r.oid IN (
                    t.typinput, t.typoutput, t.typreceive, t.typsend, t.typmodin, t.typmodout,
                    t.typanalyze, t.typsubscript
                )
            )
            OR EXISTS (SELECT FROM pg_amproc AS a WHERE a.amproc = r.oid)
            OR EXISTS (SELECT FROM pg_operator AS o WHERE r.oid IN (o.oprrest, o.oprjoin))
            OR EXISTS (SELECT FROM pg_conversion AS v WHERE v.conproc = r.oid)
        )
    UNION ALL
    SELECT
        'view ' || s.qname, s.relowner, s.extension,
        'not security_invoker: it reads its tables as its owner for every caller',
        format('ALTER VIEW %s SET (security_invoker = true)', s.qname)
    FROM in_scope AS s WHERE s.relkind = 'v' AND NOT s.invoker
    UNION ALL
    SELECT
        format('trigger %I on %s', g.tgname, s.qname), s.relowner, s.extension,
        'its function runs as whoever writes the table',
        format(
            'DROP TRIGGER %I ON %s (or ALTER TABLE %s DISABLE TRIGGER %I)', g.tgname, s.qname,
            s.qname, g.tgname
        )
    FROM in_scope AS s JOIN pg_trigger AS g ON g.tgrelid = s.oid
    WHERE NOT g.tgisinternal AND g.tgenabled <> 'D'
    UNION ALL
    SELECT
        format('rule %I on %s', w.rulename, s.qname), s.relowner, s.extension,
        'it rewrites the queries of whoever uses the relation',
        format('DROP RULE %I ON %s', w.rulename, s.qname)
    FROM in_scope AS s JOIN pg_rewrite AS w ON w.ev_class = s.oid
    WHERE w.rulename <> '_RETURN' AND w.ev_enabled <> 'D'
    UNION ALL
    SELECT
        'relation ' || s.qname, s.relowner, s.extension,
        format(
            'its indexes, constraints, defaults, statistics, policies or query call %s: ANALYZE, autovacuum and REFRESH run them as its owner, writes as the writer',  -- noqa: LT05
            string_agg(DISTINCT (pg_identify_object(u.classid, u.oid, 0)).identity, ', ')
        ),
        'drop the index, constraint, default, statistics, policy or materialized view that calls them, or check what they call'  -- noqa: LT05
    FROM in_scope AS s JOIN parts AS t ON t.relid = s.oid
    JOIN pg_depend AS d ON d.classid = t.classid AND d.objid = t.objid
    JOIN user_code_free AS u ON u.classid = d.refclassid AND u.oid = d.refobjid
    GROUP BY s.qname, s.relowner, s.extension
    UNION ALL
    SELECT
        'relation ' || s.qname, s.relowner, s.extension,
        format(
            'a column of range type %s, whose support function PostgreSQL calls without an EXECUTE check when it analyzes or indexes the data',  -- noqa: LT05
            string_agg(DISTINCT format_type(g.rngtypid, NULL), ', ')
        ),
        'drop the column, or the range type''s support function'
    FROM in_scope AS s
    JOIN pg_attribute AS a ON a.attrelid = s.oid AND a.attnum > 0 AND NOT a.attisdropped
    JOIN pg_range AS g ON g.rngtypid = a.atttypid
    WHERE g.rngsubdiff >= 16384 OR g.rngcanonical >= 16384
    GROUP BY s.qname, s.relowner, s.extension
)

SELECT jsonb_build_object(
    'version', current_setting('server_version_num')::integer,
    'paths', to_jsonb(ARRAY(
        SELECT s.boot_val FROM pg_settings AS s WHERE s.name = 'search_path'
        UNION ALL
        SELECT s.reset_val FROM pg_settings AS s WHERE s.name = 'search_path'
        UNION ALL
        SELECT substr(cfg, 13) FROM pg_db_role_setting AS s, unnest(s.setconfig) AS cfg
        WHERE s.setdatabase IN (0, (
            SELECT d.oid FROM pg_database AS d
            WHERE d.datname = current_database()
        ))
        AND starts_with(cfg, 'search_path=')
    )),
    'role_schemas', to_jsonb(ARRAY(
        SELECT n.nspname::text FROM pg_namespace AS n
        WHERE EXISTS (SELECT FROM pg_roles AS r WHERE r.rolname = n.nspname)
        ORDER BY 1  -- noqa: AM06
    )),
    'database', (
        SELECT
            jsonb_build_object(
                'name', d.datname, 'owner', pg_get_userbyid(d.datdba),
                'grants', (
                    SELECT
                        coalesce(jsonb_agg(jsonb_build_object(
                            'grantee',
                            CASE
                                WHEN a.grantee = 0 THEN 'PUBLIC'
                                ELSE pg_get_userbyid(a.grantee)::text
                            END,
                            'public', a.grantee = 0, 'grantor', pg_get_userbyid(a.grantor)::text,
                            'privilege', a.privilege_type, 'grantable', a.is_grantable
                        )
                        ORDER BY a.grantee, a.privilege_type), '[]'::jsonb)
                    FROM aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) AS a
                ),
                'subject_create', has_database_privilege($3, d.oid, 'CREATE')
            )
        FROM pg_database AS d WHERE d.datname = current_database()
    ),
    'schemas', coalesce((
        SELECT
            jsonb_agg(
                jsonb_build_object('name', n.nspname, 'owner', pg_get_userbyid(n.nspowner))
                ORDER BY n.nspname COLLATE "C"
            )
        FROM pg_namespace AS n
        WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
    ), '[]'::jsonb),
    'schema', (
        SELECT
            jsonb_build_object(
                'name', ns.nspname, 'owner', pg_get_userbyid(ns.nspowner),
                'grants', (
                    SELECT
                        coalesce(jsonb_agg(jsonb_build_object(
                            'grantee',
                            CASE
                                WHEN a.grantee = 0 THEN 'PUBLIC'
                                ELSE pg_get_userbyid(a.grantee)::text
                            END,
                            'public', a.grantee = 0, 'grantor', pg_get_userbyid(a.grantor)::text,
                            'privilege', a.privilege_type, 'grantable', a.is_grantable
                        )
                        ORDER BY a.grantee, a.privilege_type), '[]'::jsonb)
                    FROM aclexplode(coalesce(ns.nspacl, acldefault('n', ns.nspowner))) AS a
                ),
                'subject_create', has_schema_privilege($3, ns.oid, 'CREATE')
            )
        FROM ns
    ),
    'relations', coalesce((
        SELECT
            jsonb_agg(jsonb_build_object(
                'name', rel.relname, 'relkind', rel.relkind,
                'owner', pg_get_userbyid(rel.relowner), 'row_security', rel.relrowsecurity,
                'force_row_security', rel.relforcerowsecurity, 'security_invoker', rel.invoker,
                'extension', rel.extension, 'owned_by', rel.owned_by,
                'grants', (
                    SELECT
                        coalesce(jsonb_agg(jsonb_build_object(
                            'grantee',
                            CASE
                                WHEN a.grantee = 0 THEN 'PUBLIC'
                                ELSE pg_get_userbyid(a.grantee)::text
                            END,
                            'public', a.grantee = 0, 'grantor', pg_get_userbyid(a.grantor)::text,
                            'privilege', a.privilege_type, 'grantable', a.is_grantable
                        )
                        ORDER BY a.grantee, a.privilege_type), '[]'::jsonb)
                    FROM aclexplode(coalesce(rel.relacl, acldefault(
                        CASE WHEN rel.relkind = 'S' THEN 's' ELSE 'r' END::"char", rel.relowner
                    ))) AS a
                )
            )
            ORDER BY rel.relname COLLATE "C")
        FROM rel WHERE $2 IS NULL OR rel.relname = $2
    ), '[]'::jsonb),
    'routines', coalesce((
        SELECT
            jsonb_agg(jsonb_build_object(
                'identity', (pg_identify_object('pg_proc'::regclass, p.oid, 0)).identity,
                'prokind', p.prokind, 'owner', pg_get_userbyid(p.proowner),
                'extension', EXISTS (
                    SELECT FROM pg_depend AS x
                    WHERE
                        x.classid = 'pg_proc'::regclass
                        AND x.objid = p.oid AND x.deptype = 'e'
                ),
                'grants', (
                    SELECT
                        coalesce(jsonb_agg(jsonb_build_object(
                            'grantee',
                            CASE
                                WHEN a.grantee = 0 THEN 'PUBLIC'
                                ELSE pg_get_userbyid(a.grantee)::text
                            END,
                            'public', a.grantee = 0, 'grantor', pg_get_userbyid(a.grantor)::text,
                            'privilege', a.privilege_type, 'grantable', a.is_grantable
                        )
                        ORDER BY a.grantee, a.privilege_type), '[]'::jsonb)
                    FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
                )
            )
            ORDER BY (pg_identify_object('pg_proc'::regclass, p.oid, 0)).identity COLLATE "C")
        FROM pg_proc AS p WHERE p.pronamespace = (SELECT ns.oid FROM ns) AND $2 IS NULL
    ), '[]'::jsonb),
    'default_acl', coalesce((
        SELECT
            jsonb_agg(jsonb_build_object(
                'for_role', pg_get_userbyid(da.defaclrole),
                'objtype', da.defaclobjtype, 'grants', (
                    SELECT
                        coalesce(jsonb_agg(jsonb_build_object(
                            'grantee',
                            CASE
                                WHEN a.grantee = 0 THEN 'PUBLIC'
                                ELSE pg_get_userbyid(a.grantee)::text
                            END,
                            'public', a.grantee = 0, 'grantor', pg_get_userbyid(a.grantor)::text,
                            'privilege', a.privilege_type, 'grantable', a.is_grantable
                        )
                        ORDER BY a.grantee, a.privilege_type), '[]'::jsonb)
                    FROM aclexplode(da.defaclacl) AS a
                )
            )
            ORDER BY pg_get_userbyid(da.defaclrole) COLLATE "C", da.defaclobjtype)
        FROM pg_default_acl AS da
        WHERE $2 IS NULL AND da.defaclnamespace = coalesce((SELECT ns.oid FROM ns), 0)
    ), '[]'::jsonb),
    'owned', coalesce((
        SELECT
            jsonb_agg(jsonb_build_object(
                'type', dep.type, 'identity', dep.identity,
                'owner', pg_get_userbyid(dep.owner), 'typtype', dep.typtype,
                'extension', dep.extension, 'follows_table', dep.follows_table,
                'follows_type', dep.follows_type
            )
            -- a multirange before its range: ALTER TYPE of the range on 16
            -- leaves the multirange's array type behind
            ORDER BY dep.follows_type DESC, dep.type, dep.identity COLLATE "C")
        FROM dep WHERE $2 IS NULL
    ), '[]'::jsonb),
    'no_usage', to_jsonb(ARRAY(
        SELECT DISTINCT pg_get_userbyid(o.owner)::text
        FROM (
            SELECT rel.relowner AS owner FROM rel
            UNION
            SELECT p.proowner FROM pg_proc AS p WHERE p.pronamespace = (SELECT ns.oid FROM ns)
        ) AS o
        WHERE NOT has_schema_privilege(o.owner, (SELECT ns.oid FROM ns), 'USAGE')
    )),
    'live', coalesce((
        SELECT
            jsonb_agg(
                jsonb_build_object(
                    'object', live.object, 'owner', pg_get_userbyid(live.owner),
                    'extension', live.extension, 'why', live.why, 'fix', live.fix
                )
                ORDER BY live.object COLLATE "C", live.why
            )
        FROM live
    ), '[]'::jsonb)
)::text;
