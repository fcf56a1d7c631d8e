-- depends: 0009_lifecycle
-- functions: eafb689d40e25483b33ec1acb4b618a20d48b08e6afe290ab96e5fc625f76949
-- From here on every function's current text lives in sql/functions/*.sql,
-- applied after the migrations by post-apply.py. Migrations keep tables,
-- types, indexes, data moves, and what a function file cannot say: here,
-- dropping the functions whose signature or return type changed.

-- Which function sources are installed (written by post-apply.py).
ALTER TABLE datatable_roles.settings ADD COLUMN functions_sha256 text;

-- The roles given the worker's grants, so that every upgrade grants them
-- again what a dropped and re-made function lost. Those of an install from
-- 0.1.0 are read off resolve_datatable_role's privileges.
CREATE TABLE datatable_roles.worker_role (
    name text PRIMARY KEY
);

INSERT INTO datatable_roles.worker_role (name)
SELECT DISTINCT pr.rolname
FROM pg_proc AS p
CROSS JOIN LATERAL aclexplode(p.proacl) AS a
INNER JOIN pg_roles AS pr ON a.grantee = pr.oid
WHERE
    p.oid = 'public.resolve_datatable_role(uuid, text, text, boolean)'::regprocedure
    AND a.privilege_type = 'EXECUTE'
    AND a.grantee <> p.proowner;

-- resolve_datatable_role returns login_kind too.
DROP FUNCTION public.resolve_datatable_role(uuid, text, text, boolean);

-- A decision carries the login it gets (R6/R7) and, when it may be handed
-- out with no write, its password.
DROP FUNCTION datatable_roles.decide(uuid, text, text, boolean, boolean);
DROP TYPE datatable_roles.decision;
CREATE TYPE datatable_roles.decision AS (
    datatable_id bigint,     -- the governing entry
    dbname text,
    role_ids bigint [],      -- the catalog ids held, sorted ('{}' for admin)
    role_names text [],      -- the names held, sorted ({admin} for admin)
    login_kind text,         -- 'admin', 'role' (R6) or 'set' (R7)
    login text,
    password text,           -- NULL: a set login to touch, make or take back
    refused_case text,       -- set when refused: the rule that refused
    refused_message text,
    refused_hint text,
    steps jsonb              -- the trace, when asked for
);

-- The clock is one inlinable, set-returning SQL function.
DROP FUNCTION datatable_roles.clock_now();
