-- The directory seam (docs/integration.md): the only functions through which
-- the package reads users, groups, folders and workspaces. This file is the
-- default implementation, over the package's own tables (filled by the
-- directory calls of 15_directory.sql). An adapter (sql/directory/*.sql, e.g.
-- windmill.sql) replaces exactly these functions, with the same signatures,
-- over a platform's own tables.
--
-- Contract, for every implementation:
-- - LANGUAGE sql STABLE, one SELECT, no SET clause and no SECURITY DEFINER,
--   and set-returning (PostgreSQL inlines a scalar SQL function only when it
--   has no subquery), so that the planner inlines them into the package's
--   queries. A yes/no question returns one row (true) for yes, none for no.
--   They run as the package owner, who must be able to read every row (RLS
--   included).
-- - A member is someone who may act in a live workspace now: a user that is
--   disabled, or of a deleted workspace, is no one (no row).
-- - incarnation changes when a username is given to someone else (deleted,
--   then reused): u/ tenant keys are bound to it (15_directory.sql).
-- - Lookups are by key: each comment names the index it needs.

-- A row when the workspace is live. Index: the workspace's primary key.
CREATE OR REPLACE FUNCTION datatable_roles.directory_workspace_exists(p_workspace text)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true FROM datatable_roles.workspace AS w WHERE w.name = p_workspace
$$;

-- The member with this username (zero or one row). Index: (workspace, username).
CREATE OR REPLACE FUNCTION datatable_roles.directory_member(p_workspace text, p_username text)
RETURNS TABLE (username text, email text, is_admin boolean, incarnation text)
LANGUAGE sql STABLE
AS $$
    SELECT u.username, u.email, u.is_admin, u.incarnation::text
    FROM datatable_roles.workspace_user AS u
    WHERE u.workspace = p_workspace AND u.username = p_username
$$;

-- The member whose email is this one, compared case-insensitively (zero or
-- one row). When several members share it, none is returned: an email that
-- names two people names no one. Index: (workspace, lower(email)). The
-- package's own table keeps emails unique per workspace.
CREATE OR REPLACE FUNCTION datatable_roles.directory_member_by_email(
    p_workspace text, p_email text
)
RETURNS TABLE (username text, email text, is_admin boolean, incarnation text)
LANGUAGE sql STABLE
AS $$
    SELECT u.username, u.email, u.is_admin, u.incarnation::text
    FROM datatable_roles.workspace_user AS u
    WHERE u.workspace = p_workspace AND lower(u.email) = lower(p_email)
$$;

-- The groups of a member, each once. Index: memberships by (workspace, user).
CREATE OR REPLACE FUNCTION datatable_roles.directory_groups(
    p_workspace text, p_username text, p_email text
)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT gm.group_name FROM datatable_roles.group_member AS gm
    WHERE gm.workspace = p_workspace AND gm.username = p_username
$$;

-- A row when a member is in a group. Index: memberships by (workspace,
-- group, user).
CREATE OR REPLACE FUNCTION datatable_roles.directory_in_group(
    p_workspace text, p_username text, p_email text, p_group text
)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true FROM datatable_roles.group_member AS gm
    WHERE gm.workspace = p_workspace AND gm.group_name = p_group
        AND gm.username = p_username
$$;

-- The folders that a member (p_username, in p_groups) owns or may read or
-- write, each once. Index: folder grants by (workspace, principal).
CREATE OR REPLACE FUNCTION datatable_roles.directory_folders(
    p_workspace text, p_username text, p_groups text[]
)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT DISTINCT fa.folder FROM datatable_roles.folder_access AS fa
    WHERE fa.workspace = p_workspace
        AND fa.principal = ANY(('u/' || p_username)
            || ARRAY(SELECT 'g/' || g FROM unnest(p_groups) AS g))
$$;

-- Of p_folders (each given once), those that a member (p_username, in
-- p_groups) owns or may read or write: directory_folders, asked about named
-- folders only. Each is probed by key (a LIMIT 1 lateral, so that the plan
-- stays a probe per folder). Index: folder grants by (workspace, folder).
CREATE OR REPLACE FUNCTION datatable_roles.directory_folders_among(
    p_workspace text, p_username text, p_groups text[], p_folders text[]
)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT n.folder
    FROM unnest(p_folders) AS n (folder)
    CROSS JOIN LATERAL (
        SELECT FROM datatable_roles.folder_access AS fa
        WHERE fa.workspace = p_workspace AND fa.folder = n.folder
            AND fa.principal = ANY(('u/' || p_username)
                || ARRAY(SELECT 'g/' || g FROM unnest(p_groups) AS g))
        LIMIT 1
    ) AS reached
$$;

-- A row when a member owns or may read or write one folder, directly or
-- through a group. Index: folder grants by (workspace, folder).
CREATE OR REPLACE FUNCTION datatable_roles.directory_reaches_folder(
    p_workspace text, p_username text, p_email text, p_folder text
)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true WHERE EXISTS (
        SELECT FROM datatable_roles.folder_access AS fa
        WHERE fa.workspace = p_workspace AND fa.folder = p_folder
            AND (fa.principal = 'u/' || p_username
                OR starts_with(fa.principal, 'g/') AND EXISTS (
                    SELECT FROM datatable_roles.directory_in_group(
                        p_workspace, p_username, p_email, substr(fa.principal, 3))))
    )
$$;
