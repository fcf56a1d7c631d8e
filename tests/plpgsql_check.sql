-- plpgsql_check over every PL/pgSQL function and procedure owned by the package owner
-- (psql variable :owner), in any schema, and over the DO blocks of the remote scripts. Run
-- by tests/run_checks.sh in a scratch copy of the template database that has the
-- plpgsql_check extension.
-- Prints every finding; fails when any finding has level 'error' or nothing was checked.
\set ON_ERROR_STOP 1
\set QUIET 1

CREATE TEMP TABLE candidates AS
SELECT
    p.oid::regprocedure AS fn,
    p.prorettype = 'trigger'::regtype AS is_trigger,
    -- A trigger function is checked against a table it is attached to.
    (
        SELECT t.tgrelid::regclass
        FROM pg_trigger AS t
        WHERE t.tgfoid = p.oid
        ORDER BY t.tgrelid
        LIMIT 1
    ) AS relid
FROM pg_proc AS p
INNER JOIN pg_language AS l ON p.prolang = l.oid
WHERE l.lanname = 'plpgsql' AND p.proowner = :'owner'::regrole;

CREATE TEMP TABLE checked AS
SELECT fn, coalesce(relid, 0::oid::regclass) AS relid
FROM candidates
WHERE NOT (is_trigger AND relid IS NULL);

-- The DO blocks of the scripts run in a data table's database
-- (datatable_roles.remote_script, from sql/functions/remote/scripts/): each
-- block's body becomes a temporary function pg_temp.script_<name>_<n>, checked
-- as the functions are. A script that is not a DO block has nothing to check.
CREATE TEMP TABLE script_blocks AS
SELECT
    s.name,
    b.n,
    b.m[2] AS body
FROM datatable_roles.remote_script AS s
CROSS JOIN
    LATERAL regexp_matches(s.body, '\mDO\s+(\$\w*\$)(.*)\1', 'g')
    WITH ORDINALITY AS b (m, n);

DO $$
DECLARE
    block record;
BEGIN
    FOR block IN SELECT * FROM script_blocks ORDER BY name, n LOOP
        EXECUTE format(
            'CREATE FUNCTION pg_temp.%I() RETURNS void LANGUAGE plpgsql AS %L',
            'script_' || block.name || '_' || block.n, block.body
        );
    END LOOP;
END
$$;

INSERT INTO checked (fn, relid)
SELECT
    p.oid::regprocedure AS fn,
    0::oid::regclass AS relid
FROM pg_proc AS p
WHERE
    p.pronamespace = pg_my_temp_schema()
    AND p.proname LIKE 'script\_%';

CREATE TEMP TABLE findings AS
SELECT
    c.fn,
    r.level,
    r.lineno,
    r.sqlstate,
    r.message,
    r.detail,
    r.hint,
    r.statement,
    r.query,
    r.context
FROM checked AS c
CROSS JOIN LATERAL plpgsql_check_function_tb(
    c.fn, c.relid, security_warnings => TRUE
) AS r;

-- A trigger function attached to no table cannot be checked: listed, not failed.
INSERT INTO findings (fn, level, message)
SELECT
    fn,
    'not checked' AS level,
    'trigger function attached to no table' AS message
FROM candidates
WHERE is_trigger AND relid IS NULL;

\echo 'Findings:'
\pset expanded auto
SELECT
    fn,
    level,
    lineno,
    sqlstate,
    message,
    detail,
    hint,
    statement,
    query,
    context
FROM findings
ORDER BY fn::text, lineno;
\pset expanded off

SELECT
    (SELECT count(*) FROM checked) AS functions_checked,
    count(*) FILTER (WHERE level = 'error') AS errors,
    count(*) FILTER (WHERE level <> 'error') AS warnings
FROM findings;

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM checked) THEN
        RAISE EXCEPTION 'plpgsql_check: no PL/pgSQL function of the package owner was checked';
    END IF;
    IF EXISTS (SELECT FROM findings WHERE level = 'error') THEN
        RAISE EXCEPTION 'plpgsql_check: % error(s), listed above',
            (SELECT count(*) FROM findings WHERE level = 'error');
    END IF;
END
$$;
