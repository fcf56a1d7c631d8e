-- The quarantine (docs/lifecycle.md, docs/trust.md): run in a data table's
-- database by the link login (a member of the victim and of the heir, the
-- admin login that owns the database), through quarantine_statements, which
-- sets its two parameters first as transaction-local settings:
--   datatable_roles.quarantine_victim  the role whose objects pass on
--   datatable_roles.quarantine_heir    the admin login they pass to
-- and after which the caller runs `REASSIGN OWNED BY victim TO heir; DROP
-- OWNED BY victim` in the same implicit transaction. The heir owns the
-- database and bypasses RLS, so nothing of the victim's may run with its
-- rights or show rows to anyone: definer routines become invoker, views
-- security_invoker; every grant on the victim's objects is revoked, EXECUTE on
-- its routines even from their owner; triggers and rules are disabled; and
-- whatever a search path could resolve moves to a quarantine schema
-- wm_quarantine_<16 hex> of the heir's, one per source schema, with no USAGE
-- for anyone else (a schema the victim owns is renamed so). A function of the
-- victim's that PostgreSQL calls with no EXECUTE check (a range's subtype_diff)
-- gets an inert body; a relation that would call another live role's is
-- refused. Nothing is dropped. Temporary schemas and pg_toast are left alone:
-- nobody else can reach them.
-- Everything is qualified, and identities are read back at each statement
-- (%I, regprocedure, regoperator), so that odd names and earlier moves cannot
-- misdirect it. tests/plpgsql_check.sql checks the block.
DO $quarantine$
DECLARE
    victim_name constant pg_catalog.text :=
        pg_catalog.current_setting('datatable_roles.quarantine_victim');
    heir_name constant pg_catalog.text :=
        pg_catalog.current_setting('datatable_roles.quarantine_heir');
    victim_id pg_catalog.oid;
    heir_id pg_catalog.oid;
    moves pg_catalog.jsonb;
    quarantine pg_catalog.jsonb := '{}'::pg_catalog.jsonb;
    qname pg_catalog.text;
    stamp pg_catalog.text := pg_catalog.to_char(
        pg_catalog.timezone('UTC', pg_catalog.now()), 'YYYY-MM-DD HH24:MI:SS "UTC"');
    obj record;
    leftover pg_catalog.text;
    -- Temporary schemas and pg_toast: nobody else can reach what is in them,
    -- so nothing there is touched.
    hidden_schemas constant pg_catalog.text := '^(pg_(toast_)?temp_[0-9]+|pg_toast)$';
    -- Who besides the owner holds a grant on each of the victim's objects (a
    -- relation's columns included), keyed '<class> <oid>': the roles each
    -- REVOKE below names after PUBLIC.
    grantees_of pg_catalog.jsonb;
    -- Before 17 a multirange type has privileges of its own; from 17 on, its
    -- range type's (and GRANT/REVOKE on it fail).
    multirange_acl constant pg_catalog.bool :=
        pg_catalog.current_setting('server_version_num')::pg_catalog.int4 < 170000;
BEGIN
    SELECT r.oid INTO victim_id FROM pg_catalog.pg_roles AS r WHERE r.rolname = victim_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role % does not exist', pg_catalog.quote_ident(victim_name)
            USING ERRCODE = 'undefined_object';
    END IF;
    SELECT r.oid INTO heir_id FROM pg_catalog.pg_roles AS r WHERE r.rolname = heir_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role % does not exist', pg_catalog.quote_ident(heir_name)
            USING ERRCODE = 'undefined_object';
    END IF;

    -- What a search path could resolve, owned by the victim, outside its own
    -- schemas (renamed below, contents and all). Not listed: indexes, toast,
    -- row and array types (they move with their table or element type),
    -- sequences owned by a column (they move with the table), shell types
    -- (cannot move) and extension members (their extension's business).
    SELECT coalesce(pg_catalog.jsonb_agg(m.* ORDER BY m.nsp, m.kind, m.obj), '[]')
    INTO moves
    FROM (
        SELECT 'relation' AS kind, 'pg_catalog.pg_class'::pg_catalog.regclass AS cls,
            c.oid AS obj, c.relnamespace AS nsp
        FROM pg_catalog.pg_class AS c
        WHERE c.relowner = victim_id AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
            AND (c.relkind <> 'S' OR NOT EXISTS (
                SELECT FROM pg_catalog.pg_depend AS d
                WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
                    AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
                    AND d.refobjsubid > 0 AND d.deptype IN ('a', 'i')
            ))
        UNION ALL
        SELECT 'routine', 'pg_catalog.pg_proc'::pg_catalog.regclass, p.oid, p.pronamespace
        FROM pg_catalog.pg_proc AS p WHERE p.proowner = victim_id
        UNION ALL
        SELECT 'type', 'pg_catalog.pg_type'::pg_catalog.regclass, t.oid, t.typnamespace
        FROM pg_catalog.pg_type AS t
        WHERE t.typowner = victim_id AND t.typisdefined
            AND NOT EXISTS (SELECT FROM pg_catalog.pg_type AS e WHERE e.typarray = t.oid)
            AND (t.typrelid = 0 OR EXISTS (
                SELECT FROM pg_catalog.pg_class AS c
                WHERE c.oid = t.typrelid AND c.relkind = 'c'
            ))
        UNION ALL
        SELECT 'operator', 'pg_catalog.pg_operator'::pg_catalog.regclass, o.oid, o.oprnamespace
        FROM pg_catalog.pg_operator AS o WHERE o.oprowner = victim_id
        UNION ALL
        SELECT 'collation', 'pg_catalog.pg_collation'::pg_catalog.regclass, l.oid,
            l.collnamespace
        FROM pg_catalog.pg_collation AS l WHERE l.collowner = victim_id
        UNION ALL
        SELECT 'conversion', 'pg_catalog.pg_conversion'::pg_catalog.regclass, v.oid,
            v.connamespace
        FROM pg_catalog.pg_conversion AS v WHERE v.conowner = victim_id
        UNION ALL
        SELECT 'text search configuration', 'pg_catalog.pg_ts_config'::pg_catalog.regclass,
            f.oid, f.cfgnamespace
        FROM pg_catalog.pg_ts_config AS f WHERE f.cfgowner = victim_id
        UNION ALL
        SELECT 'text search dictionary', 'pg_catalog.pg_ts_dict'::pg_catalog.regclass,
            y.oid, y.dictnamespace
        FROM pg_catalog.pg_ts_dict AS y WHERE y.dictowner = victim_id
    ) AS m
    JOIN pg_catalog.pg_namespace AS n ON n.oid = m.nsp
    WHERE n.nspowner <> victim_id
        AND n.nspname !~ hidden_schemas
        AND NOT EXISTS (
            SELECT FROM pg_catalog.pg_depend AS d
            WHERE d.classid = m.cls AND d.objid = m.obj AND d.deptype = 'e'
        );

    -- Quarantine schemas: the victim's own schemas renamed, and a new one of
    -- the heir's for each schema that objects move out of. Only the owner
    -- (the heir, after REASSIGN) keeps any privilege on them.
    FOR obj IN
        SELECT n.oid, n.nspname, n.nspowner = victim_id AS owned
        FROM pg_catalog.pg_namespace AS n
        WHERE (n.nspowner = victim_id
                AND n.nspname !~ hidden_schemas)
            OR n.oid IN (
                SELECT (e.value ->> 'nsp')::pg_catalog.oid
                FROM pg_catalog.jsonb_array_elements(moves) AS e
            )
        ORDER BY n.nspname
    LOOP
        LOOP
            qname := 'wm_quarantine_' || pg_catalog.left(pg_catalog.encode(pg_catalog.sha256(
                pg_catalog.uuid_send(pg_catalog.gen_random_uuid())), 'hex'), 16);
            EXIT WHEN NOT EXISTS (
                SELECT FROM pg_catalog.pg_namespace AS n WHERE n.nspname = qname
            );
        END LOOP;
        IF obj.owned THEN
            EXECUTE pg_catalog.format('ALTER SCHEMA %I RENAME TO %I', obj.nspname, qname);
            EXECUTE pg_catalog.format('COMMENT ON SCHEMA %I IS %L', qname, pg_catalog.format(
                'Schema %s of role %s, renamed and quarantined at %s before it passed to %s.',
                pg_catalog.quote_ident(obj.nspname), pg_catalog.quote_ident(victim_name), stamp,
                pg_catalog.quote_ident(heir_name)));
        ELSE
            EXECUTE pg_catalog.format('CREATE SCHEMA %I AUTHORIZATION %I', qname, heir_name);
            EXECUTE pg_catalog.format('COMMENT ON SCHEMA %I IS %L', qname, pg_catalog.format(
                'Objects of role %s from schema %s, quarantined at %s before they passed to %s.',
                pg_catalog.quote_ident(victim_name), pg_catalog.quote_ident(obj.nspname), stamp,
                pg_catalog.quote_ident(heir_name)));
            quarantine := quarantine || pg_catalog.jsonb_build_object(obj.oid::pg_catalog.text,
                qname);
        END IF;
        -- The heir's default privileges may have granted some on the new one.
        EXECUTE (
            SELECT pg_catalog.format('REVOKE ALL ON SCHEMA %I FROM %s CASCADE', qname,
                pg_catalog.concat_ws(', ', 'PUBLIC', pg_catalog.string_agg(DISTINCT
                    pg_catalog.quote_ident(r.rolname), ', ')))
            FROM pg_catalog.pg_namespace AS n
            LEFT JOIN pg_catalog.aclexplode(n.nspacl) AS a ON a.grantee <> n.nspowner
            LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
            WHERE n.nspname = qname
        );
    END LOOP;

    SELECT coalesce(pg_catalog.jsonb_object_agg(g.cls || ' ' || g.obj, g.names), '{}')
    INTO grantees_of
    FROM (
        SELECT x.cls, x.obj::pg_catalog.text AS obj,
            pg_catalog.string_agg(DISTINCT pg_catalog.quote_ident(r.rolname), ', ') AS names
        FROM (
            SELECT 'routine' AS cls, p.oid AS obj, p.proacl AS acl, p.proowner AS owner
            FROM pg_catalog.pg_proc AS p WHERE p.proowner = victim_id
            UNION ALL
            SELECT 'relation', c.oid, c.relacl, c.relowner
            FROM pg_catalog.pg_class AS c WHERE c.relowner = victim_id
            UNION ALL
            SELECT 'relation', c.oid, t.attacl, c.relowner
            FROM pg_catalog.pg_class AS c
            JOIN pg_catalog.pg_attribute AS t ON t.attrelid = c.oid AND t.attacl IS NOT NULL
            WHERE c.relowner = victim_id
            UNION ALL
            SELECT 'type', t.oid, t.typacl, t.typowner
            FROM pg_catalog.pg_type AS t WHERE t.typowner = victim_id
            UNION ALL
            SELECT 'large object', l.oid, l.lomacl, l.lomowner
            FROM pg_catalog.pg_largeobject_metadata AS l WHERE l.lomowner = victim_id
            UNION ALL
            SELECT 'server', s.oid, s.srvacl, s.srvowner
            FROM pg_catalog.pg_foreign_server AS s WHERE s.srvowner = victim_id
        ) AS x
        CROSS JOIN LATERAL pg_catalog.aclexplode(x.acl) AS a
        JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
        WHERE a.grantee <> x.owner
        GROUP BY x.cls, x.obj
    ) AS g;

    -- Routines: nothing runs with the owner's rights, and nobody may execute
    -- them, not even the owner: an expression that calls one (an index's, a
    -- default, a check, a policy, a view, an operator, a cast) would run it
    -- as whoever evaluates it, the heir included (ANALYZE and autovacuum
    -- evaluate index expressions as the table's owner). The heir can grant
    -- itself EXECUTE back.
    FOR obj IN
        SELECT p.oid, p.prokind, p.prosecdef, grantees_of ->> ('routine ' || p.oid) AS grantees
        FROM pg_catalog.pg_proc AS p
        JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
        WHERE p.proowner = victim_id
            AND n.nspname !~ hidden_schemas
    LOOP
        IF obj.prosecdef THEN
            EXECUTE pg_catalog.format('ALTER ROUTINE %s SECURITY INVOKER',
                obj.oid::pg_catalog.regprocedure);
        END IF;
        EXECUTE pg_catalog.format('REVOKE ALL ON ROUTINE %s FROM %s CASCADE',
            obj.oid::pg_catalog.regprocedure, pg_catalog.concat_ws(', ', 'PUBLIC',
                pg_catalog.quote_ident(victim_name), obj.grantees));
    END LOOP;

    -- Relations: views read with the reader's rights; no grant on a relation
    -- or any of its columns is left (REVOKE on the table takes its columns'
    -- too); user triggers and rules (but a view's own _RETURN) are disabled.
    -- A view's INSTEAD OF triggers and rules cannot be disabled; only the heir
    -- can write through the view now, and its routines run for nobody.
    FOR obj IN
        SELECT c.oid, c.relkind, n.nspname, c.relname,
            grantees_of ->> ('relation ' || c.oid) AS grantees,
        c.relkind IN ('r', 'p', 'f') AND EXISTS (
            SELECT FROM pg_catalog.pg_trigger AS g
            WHERE g.tgrelid = c.oid AND NOT g.tgisinternal AND g.tgenabled <> 'D'
        ) AS triggers
        FROM pg_catalog.pg_class AS c
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE c.relowner = victim_id AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
            AND n.nspname !~ hidden_schemas
    LOOP
        IF obj.relkind = 'v' THEN
            EXECUTE pg_catalog.format('ALTER VIEW %I.%I SET (security_invoker = true)',
                obj.nspname, obj.relname);
        END IF;
        EXECUTE pg_catalog.format('REVOKE ALL ON %s %I.%I FROM %s CASCADE',
            CASE obj.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, obj.nspname,
            obj.relname, pg_catalog.concat_ws(', ', 'PUBLIC', obj.grantees));
        IF obj.triggers THEN
            EXECUTE pg_catalog.format('ALTER %s %I.%I DISABLE TRIGGER USER',
                CASE obj.relkind WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, obj.nspname,
                obj.relname);
        END IF;
    END LOOP;
    FOR obj IN
        SELECT n.nspname, c.relname, w.rulename
        FROM pg_catalog.pg_rewrite AS w
        JOIN pg_catalog.pg_class AS c ON c.oid = w.ev_class
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE c.relowner = victim_id AND c.relkind IN ('r', 'p')
            AND w.rulename <> '_RETURN' AND w.ev_enabled <> 'D'
            AND n.nspname !~ hidden_schemas
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %I.%I DISABLE RULE %I',
            obj.nspname, obj.relname, obj.rulename);
    END LOOP;

    -- Triggers of other roles' tables that call the victim's routines (which
    -- fire without an EXECUTE check), where the link login may alter the table.
    FOR obj IN
        SELECT c.relowner, c.relkind, n.nspname, c.relname, g.tgname
        FROM pg_catalog.pg_trigger AS g
        JOIN pg_catalog.pg_proc AS p ON p.oid = g.tgfoid
        JOIN pg_catalog.pg_class AS c ON c.oid = g.tgrelid
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE p.proowner = victim_id AND c.relowner <> victim_id
            AND NOT g.tgisinternal AND g.tgenabled <> 'D' AND c.relkind IN ('r', 'p', 'f')
            AND n.nspname !~ hidden_schemas
        ORDER BY n.nspname, c.relname, g.tgname
    LOOP
        IF pg_catalog.pg_has_role(obj.relowner, 'USAGE') THEN
            EXECUTE pg_catalog.format('ALTER %s %I.%I DISABLE TRIGGER %I',
                CASE obj.relkind WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, obj.nspname,
                obj.relname, obj.tgname);
        END IF;
    END LOOP;

    -- Types and domains: no USAGE for anyone but the owner (PUBLIC has it by
    -- default).
    FOR obj IN
        SELECT t.typtype, n.nspname, t.typname, grantees_of ->> ('type ' || t.oid) AS grantees
        FROM pg_catalog.pg_type AS t
        JOIN pg_catalog.pg_namespace AS n ON n.oid = t.typnamespace
        WHERE t.typowner = victim_id AND t.typisdefined
            AND NOT EXISTS (SELECT FROM pg_catalog.pg_type AS e WHERE e.typarray = t.oid)
            AND (t.typrelid = 0 OR EXISTS (
                SELECT FROM pg_catalog.pg_class AS c
                WHERE c.oid = t.typrelid AND c.relkind = 'c'
            ))
            AND (t.typtype <> 'm' OR multirange_acl)
            AND n.nspname !~ hidden_schemas
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON %s %I.%I FROM %s CASCADE',
            CASE obj.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, obj.nspname, obj.typname,
            pg_catalog.concat_ws(', ', 'PUBLIC', obj.grantees));
    END LOOP;

    -- Large objects and foreign servers: no grant left.
    FOR obj IN
        SELECT l.oid, grantees_of ->> ('large object ' || l.oid) AS grantees
        FROM pg_catalog.pg_largeobject_metadata AS l
        WHERE l.lomowner = victim_id AND l.lomacl IS NOT NULL
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON LARGE OBJECT %s FROM %s CASCADE', obj.oid,
            pg_catalog.concat_ws(', ', 'PUBLIC', obj.grantees));
    END LOOP;
    FOR obj IN
        SELECT s.srvname, grantees_of ->> ('server ' || s.oid) AS grantees
        FROM pg_catalog.pg_foreign_server AS s
        WHERE s.srvowner = victim_id AND s.srvacl IS NOT NULL
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON FOREIGN SERVER %I FROM %s CASCADE',
            obj.srvname, pg_catalog.concat_ws(', ', 'PUBLIC', obj.grantees));
    END LOOP;

    -- A subscription applies a remote publisher's changes as its owner.
    FOR obj IN
        SELECT s.subname FROM pg_catalog.pg_subscription AS s
        WHERE s.subowner = victim_id AND s.subenabled AND s.subdbid = (
            SELECT d.oid FROM pg_catalog.pg_database AS d
            WHERE d.datname = pg_catalog.current_database()
        )
    LOOP
        EXECUTE pg_catalog.format('ALTER SUBSCRIPTION %I DISABLE', obj.subname);
    END LOOP;

    -- The moves, last, each statement naming the object as it is now.
    FOR obj IN
        SELECT e.value ->> 'kind' AS kind, (e.value ->> 'obj')::pg_catalog.oid AS oid,
            quarantine ->> (e.value ->> 'nsp') AS target
        FROM pg_catalog.jsonb_array_elements(moves) AS e
    LOOP
        EXECUTE CASE obj.kind
            WHEN 'relation' THEN (
                SELECT pg_catalog.format('ALTER %s %I.%I SET SCHEMA %I',
                    CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                        WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
                    n.nspname, c.relname, obj.target)
                FROM pg_catalog.pg_class AS c
                JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                WHERE c.oid = obj.oid
            )
            WHEN 'routine' THEN pg_catalog.format('ALTER ROUTINE %s SET SCHEMA %I',
                obj.oid::pg_catalog.regprocedure, obj.target)
            WHEN 'type' THEN (
                SELECT pg_catalog.format('ALTER %s %I.%I SET SCHEMA %I',
                    CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END,
                    n.nspname, t.typname, obj.target)
                FROM pg_catalog.pg_type AS t
                JOIN pg_catalog.pg_namespace AS n ON n.oid = t.typnamespace
                WHERE t.oid = obj.oid
            )
            WHEN 'operator' THEN pg_catalog.format('ALTER OPERATOR %s SET SCHEMA %I',
                obj.oid::pg_catalog.regoperator, obj.target)
            WHEN 'collation' THEN pg_catalog.format('ALTER COLLATION %s SET SCHEMA %I',
                obj.oid::pg_catalog.regcollation, obj.target)
            ELSE (
                SELECT pg_catalog.format('ALTER %s %I.%I SET SCHEMA %I',
                    pg_catalog.upper(obj.kind), n.nspname, x.name, obj.target)
                FROM (
                    SELECT v.conname AS name, v.connamespace AS nsp
                    FROM pg_catalog.pg_conversion AS v
                    WHERE obj.kind = 'conversion' AND v.oid = obj.oid
                    UNION ALL
                    SELECT f.cfgname, f.cfgnamespace FROM pg_catalog.pg_ts_config AS f
                    WHERE obj.kind = 'text search configuration' AND f.oid = obj.oid
                    UNION ALL
                    SELECT y.dictname, y.dictnamespace FROM pg_catalog.pg_ts_dict AS y
                    WHERE obj.kind = 'text search dictionary' AND y.oid = obj.oid
                ) AS x
                JOIN pg_catalog.pg_namespace AS n ON n.oid = x.nsp
            )
        END;
    END LOOP;

    -- ---- Functions PostgreSQL calls without an EXECUTE check ----------------
    -- Revoking EXECUTE does not stop these: ANALYZE (as the table's owner, the
    -- heir from now on) and GiST indexes call a range's subtype_diff, range
    -- input its canonical function, and so on down the list below. Of them a
    -- role that is not a superuser can name only a range's subtype_diff
    -- (docs/trust.md); the rest are listed too, for what a superuser may have
    -- pointed at a function of the victim's. Each such function in a trusted
    -- language gets, in place, an inert SQL body of the same signature, so
    -- nothing that uses it is dropped or breaks: a difference of 0 (ANALYZE and
    -- GiST still work, with flat estimates), the identity for a canonical
    -- function, else NULL; the old body is kept in its comment. C and internal
    -- functions only a superuser can make.
    -- Run after the moves: their schemas are now the victim's or the heir's,
    -- where CREATE OR REPLACE is allowed.
    FOR obj IN
        SELECT p.oid, n.nspname, p.proname, l.lanname, p.prosrc, pg_catalog.min(u.use) AS use
        FROM (
            SELECT g.rngsubdiff::pg_catalog.oid AS fn, 'subdiff' AS use
            FROM pg_catalog.pg_range AS g
            UNION ALL
            SELECT g.rngcanonical::pg_catalog.oid, 'canonical' FROM pg_catalog.pg_range AS g
            UNION ALL
            SELECT a.amproc::pg_catalog.oid, 'other' FROM pg_catalog.pg_amproc AS a
            UNION ALL
            SELECT f.fn::pg_catalog.oid, 'other' FROM pg_catalog.pg_type AS t
            CROSS JOIN LATERAL (VALUES (t.typinput), (t.typoutput), (t.typreceive),
                (t.typsend), (t.typmodin), (t.typmodout), (t.typanalyze),
                (t.typsubscript)) AS f (fn)
            UNION ALL
            SELECT f.fn::pg_catalog.oid, 'other' FROM pg_catalog.pg_operator AS o
            CROSS JOIN LATERAL (VALUES (o.oprrest), (o.oprjoin)) AS f (fn)
            UNION ALL
            SELECT v.conproc::pg_catalog.oid, 'other' FROM pg_catalog.pg_conversion AS v
            UNION ALL
            SELECT s.prosupport::pg_catalog.oid, 'other' FROM pg_catalog.pg_proc AS s
            UNION ALL
            SELECT f.fn::pg_catalog.oid, 'other' FROM pg_catalog.pg_ts_parser AS s
            CROSS JOIN LATERAL (VALUES (s.prsstart), (s.prstoken), (s.prsend),
                (s.prsheadline), (s.prslextype)) AS f (fn)
            UNION ALL
            SELECT f.fn::pg_catalog.oid, 'other' FROM pg_catalog.pg_ts_template AS s
            CROSS JOIN LATERAL (VALUES (s.tmplinit), (s.tmpllexize)) AS f (fn)
            UNION ALL
            SELECT f.fn::pg_catalog.oid, 'other' FROM pg_catalog.pg_transform AS s
            CROSS JOIN LATERAL (VALUES (s.trffromsql), (s.trftosql)) AS f (fn)
            UNION ALL
            SELECT f.fn, 'other' FROM pg_catalog.pg_foreign_data_wrapper AS s
            CROSS JOIN LATERAL (VALUES (s.fdwhandler), (s.fdwvalidator)) AS f (fn)
            UNION ALL
            SELECT f.fn, 'other' FROM pg_catalog.pg_language AS s
            CROSS JOIN LATERAL (VALUES (s.lanplcallfoid), (s.laninline),
                (s.lanvalidator)) AS f (fn)
            UNION ALL
            SELECT s.amhandler::pg_catalog.oid, 'other' FROM pg_catalog.pg_am AS s
            UNION ALL
            SELECT s.evtfoid, 'other' FROM pg_catalog.pg_event_trigger AS s
        ) AS u
        JOIN pg_catalog.pg_proc AS p ON p.oid = u.fn
        JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
        JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang
        WHERE p.proowner = victim_id AND p.prokind = 'f' AND l.lanpltrusted
            AND n.nspname !~ hidden_schemas
            AND NOT EXISTS (
                SELECT FROM pg_catalog.pg_depend AS d
                WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                    AND d.objid = p.oid AND d.deptype = 'e'
            )
        GROUP BY p.oid, n.nspname, p.proname, l.lanname, p.prosrc
        ORDER BY n.nspname, p.proname, p.oid
    LOOP
        -- CREATE OR REPLACE wants EXECUTE too, revoked above: lent for the replace.
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %I',
            obj.oid::pg_catalog.regprocedure, victim_name);
        EXECUTE pg_catalog.format(
            'CREATE OR REPLACE FUNCTION %I.%I(%s) RETURNS %s LANGUAGE sql IMMUTABLE AS %L',
            obj.nspname, obj.proname, pg_catalog.pg_get_function_arguments(obj.oid),
            pg_catalog.pg_get_function_result(obj.oid),
            CASE obj.use
                WHEN 'subdiff' THEN 'SELECT 0::pg_catalog.float8'
                WHEN 'canonical' THEN 'SELECT $1'
                ELSE (
                    SELECT 'SELECT NULL::' || pg_catalog.format_type(p.prorettype, NULL)
                    FROM pg_catalog.pg_proc AS p WHERE p.oid = obj.oid
                )
            END);
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM %I',
            obj.oid::pg_catalog.regprocedure, victim_name);
        EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L',
            obj.oid::pg_catalog.regprocedure, pg_catalog.format(
                'Function of role %s made inert at %s: PostgreSQL calls it with no EXECUTE'
                ' check (%s). Its body was, in %s: %s', pg_catalog.quote_ident(victim_name),
                stamp, CASE obj.use WHEN 'other' THEN 'support function'
                    ELSE 'range ' || obj.use END, obj.lanname, obj.prosrc));
    END LOOP;
    -- A relation of the victim's (a table's column, an index's key) of a range
    -- type, or a domain or multirange over one, whose subtype_diff is another
    -- live role's would run that role's code as the heir. The link login cannot
    -- replace it: refuse the move, so that the relation stays the victim's
    -- (NOLOGIN, no rights) until that role is swept or dropped in turn.
    SELECT pg_catalog.string_agg(DISTINCT pg_catalog.format('%s (%s)',
        x.rel::pg_catalog.regclass, x.fn::pg_catalog.regprocedure), ', ')
    INTO leftover
    FROM (
        WITH RECURSIVE base (typ, top) AS (
            SELECT t.oid, t.oid FROM pg_catalog.pg_type AS t
            UNION ALL
            SELECT t.typbasetype, b.top FROM base AS b
            JOIN pg_catalog.pg_type AS t ON t.oid = b.typ AND t.typbasetype <> 0
        )
        SELECT c.oid AS rel, g.rngsubdiff::pg_catalog.oid AS fn
        FROM pg_catalog.pg_class AS c
        JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND NOT a.attisdropped
        JOIN base AS b ON b.top = a.atttypid
        JOIN pg_catalog.pg_range AS g ON b.typ IN (g.rngtypid, g.rngmultitypid)
        JOIN pg_catalog.pg_proc AS p ON p.oid = g.rngsubdiff
        JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang
        JOIN pg_catalog.pg_roles AS r ON r.oid = p.proowner
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE c.relowner = victim_id AND l.lanpltrusted AND NOT r.rolsuper
            AND p.proowner NOT IN (victim_id, heir_id)
            AND n.nspname !~ hidden_schemas
    ) AS x;
    IF leftover IS NOT NULL THEN
        RAISE EXCEPTION 'objects of % call functions of other roles with no EXECUTE check: %',
            pg_catalog.quote_ident(victim_name), leftover
            USING ERRCODE = 'object_in_use',
                HINT = 'Sweep or drop the roles that own those functions first.';
    END IF;
    -- ---- end of functions called without an EXECUTE check -----------------

    -- Nothing may be left granted: better a move that fails (and is tried
    -- again by the next sweep) than one that hands the heir a live grant.
    SELECT pg_catalog.string_agg(x.what, ', ') INTO leftover FROM (
        SELECT c.oid::pg_catalog.regclass::pg_catalog.text AS what
        FROM pg_catalog.pg_class AS c
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE c.relowner = victim_id
            AND n.nspname !~ hidden_schemas
            AND (EXISTS (
                SELECT FROM pg_catalog.aclexplode(c.relacl) AS a WHERE a.grantee <> c.relowner
            ) OR EXISTS (
                SELECT FROM pg_catalog.pg_attribute AS t
                CROSS JOIN LATERAL pg_catalog.aclexplode(t.attacl) AS a
                WHERE t.attrelid = c.oid AND a.grantee <> c.relowner
            ))
        UNION ALL
        SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text
        FROM pg_catalog.pg_proc AS p
        JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
        WHERE p.proowner = victim_id
            AND n.nspname !~ hidden_schemas
            AND (p.prosecdef OR p.proacl IS NULL
                OR EXISTS (SELECT FROM pg_catalog.aclexplode(p.proacl)))
        UNION ALL
        SELECT pg_catalog.format_type(t.oid, NULL)
        FROM pg_catalog.pg_type AS t
        JOIN pg_catalog.pg_namespace AS n ON n.oid = t.typnamespace
        WHERE t.typowner = victim_id AND t.typisdefined
            AND NOT EXISTS (SELECT FROM pg_catalog.pg_type AS e WHERE e.typarray = t.oid)
            AND (t.typrelid = 0 OR EXISTS (
                SELECT FROM pg_catalog.pg_class AS c
                WHERE c.oid = t.typrelid AND c.relkind = 'c'
            ))
            AND (t.typtype <> 'm' OR multirange_acl)
            AND n.nspname !~ hidden_schemas
            AND (t.typacl IS NULL OR EXISTS (
                SELECT FROM pg_catalog.aclexplode(t.typacl) AS a WHERE a.grantee <> t.typowner
            ))
        UNION ALL
        SELECT 'large object ' || l.oid FROM pg_catalog.pg_largeobject_metadata AS l
        WHERE l.lomowner = victim_id AND EXISTS (
            SELECT FROM pg_catalog.aclexplode(l.lomacl) AS a WHERE a.grantee <> l.lomowner
        )
    ) AS x;
    IF leftover IS NOT NULL THEN
        RAISE EXCEPTION 'quarantine of the objects of % left grants or definer rights on %',
            pg_catalog.quote_ident(victim_name), leftover
            USING ERRCODE = 'internal_error';
    END IF;
END
$quarantine$;
