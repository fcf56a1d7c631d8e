-- The directory: workspaces, their users, groups and folder grants
-- (docs/integration.md). Adds are idempotent (a platform mirrors its
-- directory with them); removing something that is not there is an error
-- (P0002). member_keys is the read side the rules use.

-- The keys that name a member of a workspace: '*', u/<user>, g/<each group>,
-- f/<each folder the member owns or may read or write, directly or through a group>.
CREATE OR REPLACE FUNCTION datatable_roles.member_keys(p_workspace text, p_username text)
RETURNS text[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT array['*', 'u/' || p_username] || grp.keys || coalesce((
            SELECT array_agg(DISTINCT 'f/' || fa.folder)
            FROM datatable_roles.folder_access AS fa
            WHERE fa.workspace = p_workspace
                AND fa.principal = ANY(('u/' || p_username) || grp.keys)
        ), '{}')
        FROM (
            SELECT ARRAY(
                SELECT 'g/' || gm.group_name
                FROM datatable_roles.group_member AS gm
                WHERE gm.workspace = p_workspace AND gm.username = p_username
            ) AS keys
            OFFSET 0
        ) AS grp
    );
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles.require_workspace(p_workspace text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require(p_workspace, 'workspace');
    IF NOT EXISTS (SELECT FROM datatable_roles.workspace AS w WHERE w.name = p_workspace) THEN
        RAISE EXCEPTION 'workspace % does not exist', quote_literal(p_workspace)
            USING ERRCODE = 'no_data_found', HINT = 'Create it with add_workspace.';
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles.require_user(p_workspace text, p_username text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require_workspace(p_workspace);
    PERFORM datatable_roles.require(p_username, 'username');
    IF NOT EXISTS (
        SELECT FROM datatable_roles.workspace_user AS u
        WHERE u.workspace = p_workspace AND u.username = p_username
    ) THEN
        RAISE EXCEPTION 'user % is not a member of workspace %',
            quote_literal(p_username), quote_literal(p_workspace)
            USING ERRCODE = 'no_data_found', HINT = 'Add the user with add_workspace_user.';
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION public.add_workspace(workspace text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.check_name('workspace', add_workspace.workspace);
    INSERT INTO datatable_roles.workspace (name) VALUES (add_workspace.workspace)
    ON CONFLICT DO NOTHING;
END;
$$;

-- Adds a user, or updates the email and admin flag of an existing one.
CREATE OR REPLACE FUNCTION public.add_workspace_user(
    workspace text, username text, email text, is_admin boolean DEFAULT false
)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    ws text := add_workspace_user.workspace;
    uname text := add_workspace_user.username;
BEGIN
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.check_name('user', uname);
    PERFORM datatable_roles.check_email(add_workspace_user.email);
    PERFORM datatable_roles.require(add_workspace_user.is_admin, 'is_admin');
    IF EXISTS (
        SELECT FROM datatable_roles.workspace_user AS u
        WHERE u.workspace = ws AND lower(u.email) = lower(add_workspace_user.email)
            AND u.username <> uname
    ) THEN
        RAISE EXCEPTION 'email % already belongs to another user of workspace %',
            quote_literal(add_workspace_user.email), quote_literal(ws)
            USING ERRCODE = 'unique_violation';
    END IF;
    INSERT INTO datatable_roles.workspace_user AS u (workspace, username, email, is_admin)
    VALUES (ws, uname, add_workspace_user.email, add_workspace_user.is_admin)
    ON CONFLICT ON CONSTRAINT workspace_user_pkey
    DO UPDATE SET email = excluded.email, is_admin = excluded.is_admin;
END;
$$;

-- Removes a user with their memberships, folder grants and tenant keys, in
-- one transaction: a removed principal names nobody afterwards.
CREATE OR REPLACE FUNCTION public.remove_workspace_user(workspace text, username text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    ws text := remove_workspace_user.workspace;
    tenant_key text := 'u/' || remove_workspace_user.username;
BEGIN
    PERFORM datatable_roles.require_user(ws, remove_workspace_user.username);
    DELETE FROM datatable_roles.workspace_user AS u
    WHERE u.workspace = ws AND u.username = remove_workspace_user.username;
    DELETE FROM datatable_roles.folder_access AS fa
    WHERE fa.workspace = ws AND fa.principal = tenant_key;
    UPDATE datatable_roles.datatable_role AS m
    SET tenants = array_remove(m.tenants, tenant_key)
    FROM datatable_roles.datatable AS d
    WHERE d.id = m.datatable_id AND d.workspace = ws AND tenant_key = ANY(m.tenants);
    UPDATE datatable_roles.datatable AS d
    SET admin_tenants = array_remove(d.admin_tenants, tenant_key)
    WHERE d.workspace = ws AND tenant_key = ANY(d.admin_tenants);
END;
$$;

CREATE OR REPLACE FUNCTION public.add_group_member(workspace text, group_name text, username text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require_user(add_group_member.workspace, add_group_member.username);
    PERFORM datatable_roles.check_name('group', add_group_member.group_name);
    INSERT INTO datatable_roles.group_member (workspace, group_name, username)
    VALUES (add_group_member.workspace, add_group_member.group_name, add_group_member.username)
    ON CONFLICT DO NOTHING;
END;
$$;

CREATE OR REPLACE FUNCTION public.remove_group_member(
    workspace text, group_name text, username text
)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require_user(remove_group_member.workspace, remove_group_member.username);
    PERFORM datatable_roles.check_name('group', remove_group_member.group_name);
    DELETE FROM datatable_roles.group_member AS gm
    WHERE gm.workspace = remove_group_member.workspace
        AND gm.group_name = remove_group_member.group_name
        AND gm.username = remove_group_member.username;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'user % is not in group %',
            quote_literal(remove_group_member.username), quote_literal(remove_group_member.group_name)
            USING ERRCODE = 'no_data_found';
    END IF;
END;
$$;

-- principal is u/<username> (an existing user) or g/<group>; access is
-- 'owner', 'write', 'read', or 'none' to take the grant away.
CREATE OR REPLACE FUNCTION public.set_folder_access(
    workspace text, folder text, principal text, access text
)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    ws text := set_folder_access.workspace;
BEGIN
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.check_name('folder', set_folder_access.folder);
    PERFORM datatable_roles.require(set_folder_access.principal, 'principal');
    PERFORM datatable_roles.require(set_folder_access.access, 'access');
    IF set_folder_access.principal !~ '^[ug]/' THEN
        RAISE EXCEPTION 'invalid principal %', quote_literal(left(set_folder_access.principal, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'A principal is u/<username> or g/<group>.';
    END IF;
    IF set_folder_access.principal LIKE 'u/%' THEN
        PERFORM datatable_roles.require_user(ws, substr(set_folder_access.principal, 3));
    ELSE
        PERFORM datatable_roles.check_name('group', substr(set_folder_access.principal, 3));
    END IF;
    IF set_folder_access.access NOT IN ('owner', 'write', 'read', 'none') THEN
        RAISE EXCEPTION 'invalid folder access %', quote_literal(left(set_folder_access.access, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Use owner, write, read or none.';
    END IF;
    IF set_folder_access.access = 'none' THEN
        DELETE FROM datatable_roles.folder_access AS fa
        WHERE fa.workspace = ws AND fa.folder = set_folder_access.folder
            AND fa.principal = set_folder_access.principal;
    ELSE
        INSERT INTO datatable_roles.folder_access AS fa (workspace, folder, principal, access)
        VALUES (ws, set_folder_access.folder, set_folder_access.principal, set_folder_access.access)
        ON CONFLICT ON CONSTRAINT folder_access_pkey DO UPDATE SET access = excluded.access;
    END IF;
END;
$$;
