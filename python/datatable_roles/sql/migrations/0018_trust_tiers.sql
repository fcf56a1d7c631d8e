-- depends: 0017_attack_round_four
-- functions: 5409d6279af518776bfcf2124c5af76c490d78f2cb12ccee5abd9c7d8a61f441
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

-- The pieces of the grants editor's planner (sql/functions/remote/91_acl_plan.sql)
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

-- decide() returns the decision with reason codes and the facts the rules
-- read; explain's trace and the refusals' messages are rendered from them
-- (sql/functions/core/62_explain.sql). decide keeps its signature and is
-- recreated by the post-apply hook.
ALTER TYPE datatable_roles.decision DROP ATTRIBUTE IF EXISTS refused_message;
ALTER TYPE datatable_roles.decision DROP ATTRIBUTE IF EXISTS refused_hint;
ALTER TYPE datatable_roles.decision DROP ATTRIBUTE IF EXISTS steps;
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE refused_reason text;  -- for R1: why it refused
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE reasons text[];  -- the rules applied, in order
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE job_workspace text;
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE permissioned_as text;
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE viewer_email text;  -- the job's recorded viewer
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE is_reference boolean;
-- the identity in the governing workspace
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE ident_admin boolean;
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE ident_keys text[];
-- the default (R3), when in the map
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE default_id bigint;
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE default_enabled boolean;
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE default_tenants text[];
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE default_held boolean;
-- NULL: the viewer was not looked up (R10)
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE viewer_member boolean;
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE viewer_ids bigint[];
