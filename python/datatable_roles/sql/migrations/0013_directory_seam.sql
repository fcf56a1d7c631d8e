-- depends: 0012_scoped_logins
-- functions: 4643dd4e9ea7a0ef659e35f1292299c1c4e76065e39baf3d615fad94e92b27ae
-- The directory seam (docs/integration.md): the rules read users, groups,
-- folders and workspaces only through the directory_* functions, which an
-- adapter (sql/directory/windmill.sql) may replace; u/ tenant keys are bound
-- to the person they named (tenant_user), so a reused username inherits
-- nothing; mirror mode gains idempotent removals, a bulk sync and a
-- directory writer role.

-- Which directory the seam reads: the package's own tables, or an adapter's.
ALTER TABLE datatable_roles.settings
ADD COLUMN directory text NOT NULL DEFAULT 'builtin'
CONSTRAINT settings_directory_check CHECK (directory IN ('builtin', 'windmill'));

-- A username's incarnation: a user removed and added again is someone else.
ALTER TABLE datatable_roles.workspace_user
ADD COLUMN incarnation bigint GENERATED ALWAYS AS IDENTITY;

-- Whom each u/ key of a tenant list named when it was written.
CREATE TABLE datatable_roles.tenant_user (
    workspace text NOT NULL,
    username text NOT NULL,
    incarnation text NOT NULL,
    CONSTRAINT tenant_user_pkey PRIMARY KEY (workspace, username)
);

INSERT INTO datatable_roles.tenant_user (workspace, username, incarnation)
SELECT DISTINCT d.workspace, u.username, u.incarnation::text
FROM datatable_roles.datatable AS d
LEFT JOIN datatable_roles.datatable_role AS m ON m.datatable_id = d.id
CROSS JOIN LATERAL unnest(coalesce(m.tenants, '{}') || d.admin_tenants) AS t (k)
JOIN datatable_roles.workspace_user AS u
    ON u.workspace = d.workspace AND t.k = 'u/' || u.username;

-- Data tables name a workspace of whichever directory is read (the seam
-- checks it is live), not a row of the package's own table.
ALTER TABLE datatable_roles.datatable DROP CONSTRAINT datatable_workspace_fkey;

-- The roles granted the worker's calls, or the directory writer's.
ALTER TABLE datatable_roles.worker_role
ADD COLUMN kind text NOT NULL DEFAULT 'worker'
CONSTRAINT worker_role_kind_check CHECK (kind IN ('worker', 'directory'));
ALTER TABLE datatable_roles.worker_role
DROP CONSTRAINT worker_role_pkey,
ADD CONSTRAINT worker_role_pkey PRIMARY KEY (name, kind);

-- Removals now say whether there was something to remove (boolean).
DROP FUNCTION IF EXISTS public.remove_workspace_user(text, text);
DROP FUNCTION IF EXISTS public.remove_group_member(text, text, text);
DROP FUNCTION IF EXISTS datatable_roles.require_user(text, text);
DROP FUNCTION IF EXISTS datatable_roles.viewer_roles_of(bigint, text, text);
