-- depends: 0017_attack_round_four
-- functions: 08d08ca27a97d4f83e29cfb5e011699129bed4a4e4627bcaa0d3c71934eb32f1
-- Issue 23 (the trust tiers in the layout): the function sources move into
-- sql/functions/core, remote and api, which changes no installed function by
-- itself. Two tables the post-apply hook fills from those files:
-- entry_point, each public call and the kind of caller it is for, written by
-- the api/ files and read by grant_calls, doctor and the docs' test; and
-- remote_script, the scripts that run in a data table's database (the
-- quarantine of a retired login's objects, the grants editor's reading of a
-- table), kept as real .sql files so that sqlfluff and plpgsql_check read them.

CREATE TABLE datatable_roles.entry_point (
    -- The function's regprocedure text (text, not regprocedure: pg_upgrade
    -- refuses reg* columns in user tables).
    signature text PRIMARY KEY,
    caller text NOT NULL CHECK (caller IN ('worker', 'directory', 'acl', 'owner'))
);

CREATE TABLE datatable_roles.remote_script (
    name text PRIMARY KEY,
    body text NOT NULL
);

-- The pieces of the grants editor's planner (sql/functions/remote/90_acl.sql)
-- pass these between them: the checked request, and what a piece planned
-- (its statements and run_as, the objects a warning names, its warnings).
CREATE TYPE datatable_roles.acl_request AS (
    target jsonb,           -- checked (acl_target)
    target_kind text,       -- 'database', 'schema' or 'table'
    action text,            -- 'grant', 'revoke' or 'owner'
    role_name text,         -- the Postgres role granted to, revoked from or handed to
    on_what text,           -- the change's "on" (NULL for owner)
    object_kind text,       -- the kind of object privileges go on (NULL for owner)
    privileges text [],     -- checked (acl_check_privileges; NULL for owner)
    snapshot jsonb          -- acl_snapshot's
);

CREATE TYPE datatable_roles.acl_step AS (
    statements text [],
    run_as text [],
    in_effect text [],      -- objects (creators) where the change holds already
    names text [],          -- objects acted on (owner: extension members left out)
    skipped text [],        -- objects left out
    public_on text [],      -- objects PUBLIC holds privileges on
    no_rls text [],         -- relations without row-level security
    not_invoker text [],    -- views that are not security_invoker
    warnings jsonb
);

-- The grants editor's remote read is sql/functions/remote/scripts/acl_read.sql
-- now (remote_script 'acl_read'), no longer SQL text built by functions.
DROP FUNCTION IF EXISTS datatable_roles.acl_read_sql(text, text, text);
DROP FUNCTION IF EXISTS datatable_roles.acl_live_sql();
DROP FUNCTION IF EXISTS datatable_roles.acl_sql_grants(text);
