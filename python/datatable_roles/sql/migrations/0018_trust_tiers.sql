-- depends: 0017_attack_round_four
-- functions: 5a9fba8782a30b6f0c2d2e829a18b2d795fe3f4e6acb62440374b9c74c268572
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
