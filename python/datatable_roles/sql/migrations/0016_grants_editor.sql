-- depends: 0015_speed_sweep
-- functions: e6aaa938980fc9d61115b8a5595ac2dea3d58f9fcd8c2b9ee3637138dba23ff2
-- The grants editor (docs/acl.md): datatable_acl, plan_datatable_acl and
-- apply_datatable_acl read, plan and apply grants in a data table's
-- database; every apply is recorded here; a platform role may be given the
-- editor's calls (grant_calls kind 'acl').

-- Who applied which statements, where and when. No password is ever in a
-- statement of the editor, so none is here.
CREATE TABLE datatable_roles.acl_change (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now(),
    applied_by text NOT NULL,
    workspace text NOT NULL,
    datatable text NOT NULL,
    dbname text NOT NULL,
    target jsonb NOT NULL,
    change jsonb NOT NULL,
    statements text[] NOT NULL,
    warnings jsonb NOT NULL DEFAULT '[]'
);

CREATE INDEX acl_change_datatable_idx
ON datatable_roles.acl_change (workspace, datatable, applied_at);

REVOKE ALL ON datatable_roles.acl_change FROM PUBLIC;

-- The roles granted the editor's calls, beside the worker's and the
-- directory writer's.
ALTER TABLE datatable_roles.worker_role
DROP CONSTRAINT worker_role_kind_check,
ADD CONSTRAINT worker_role_kind_check CHECK (kind IN ('worker', 'directory', 'acl'));
