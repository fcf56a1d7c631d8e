-- The directory writer's calls: the platform's users, groups and folders in
-- mirror mode, the hook for a user it deletes, and the reconciliation.
-- Granted by datatable_roles.grant_directory_writer; the owner may run them
-- too. Each is SECURITY DEFINER, search_path pinned. The rules they keep are
-- in core/15_directory.sql.

CREATE OR REPLACE FUNCTION public.add_workspace(workspace text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require_own_directory();
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
    PERFORM datatable_roles.require_own_directory();
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
-- one transaction: a removed principal names nobody afterwards, even when
-- the username is given to someone else. Removing a user who is not there
-- changes nothing and returns false.
CREATE OR REPLACE FUNCTION public.remove_workspace_user(workspace text, username text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    ws text := remove_workspace_user.workspace;
    uname text := remove_workspace_user.username;
    removed boolean;
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.require(uname, 'username');
    DELETE FROM datatable_roles.workspace_user AS u WHERE u.workspace = ws AND u.username = uname;
    removed := FOUND;
    DELETE FROM datatable_roles.group_member AS gm WHERE gm.workspace = ws AND gm.username = uname;
    DELETE FROM datatable_roles.folder_access AS fa
    WHERE fa.workspace = ws AND fa.principal = 'u/' || uname;
    PERFORM public.forget_workspace_user(ws, uname);
    RETURN removed;
END;
$$;

CREATE OR REPLACE FUNCTION public.add_group_member(workspace text, group_name text, username text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.require_member(add_group_member.workspace, add_group_member.username);
    PERFORM datatable_roles.check_name('group', add_group_member.group_name);
    INSERT INTO datatable_roles.group_member (workspace, group_name, username)
    VALUES (add_group_member.workspace, add_group_member.group_name, add_group_member.username)
    ON CONFLICT DO NOTHING;
END;
$$;

-- Removing a membership that is not there changes nothing and returns false.
CREATE OR REPLACE FUNCTION public.remove_group_member(
    workspace text, group_name text, username text
)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.require_workspace(remove_group_member.workspace);
    PERFORM datatable_roles.require(remove_group_member.username, 'username');
    PERFORM datatable_roles.require(remove_group_member.group_name, 'group_name');
    DELETE FROM datatable_roles.group_member AS gm
    WHERE gm.workspace = remove_group_member.workspace
        AND gm.group_name = remove_group_member.group_name
        AND gm.username = remove_group_member.username;
    RETURN FOUND;
END;
$$;

-- principal is u/<username> (an existing user) or g/<group>; access is
-- 'owner', 'write', 'read', or 'none' to take the grant away (a no-op when
-- there is none).
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
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.require_workspace(ws);
    PERFORM datatable_roles.check_name('folder', set_folder_access.folder);
    PERFORM datatable_roles.require(set_folder_access.principal, 'principal');
    PERFORM datatable_roles.require(set_folder_access.access, 'access');
    IF set_folder_access.principal !~ '^[ug]/' THEN
        RAISE EXCEPTION 'invalid principal %', quote_literal(left(set_folder_access.principal, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'A principal is u/<username> or g/<group>.';
    END IF;
    IF set_folder_access.access NOT IN ('owner', 'write', 'read', 'none') THEN
        RAISE EXCEPTION 'invalid folder access %', quote_literal(left(set_folder_access.access, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Use owner, write, read or none.';
    END IF;
    IF set_folder_access.access = 'none' THEN
        DELETE FROM datatable_roles.folder_access AS fa
        WHERE fa.workspace = ws AND fa.folder = set_folder_access.folder
            AND fa.principal = set_folder_access.principal;
        RETURN;
    END IF;
    IF set_folder_access.principal LIKE 'u/%' THEN
        PERFORM datatable_roles.require_member(ws, substr(set_folder_access.principal, 3));
    ELSE
        PERFORM datatable_roles.check_name('group', substr(set_folder_access.principal, 3));
    END IF;
    INSERT INTO datatable_roles.folder_access AS fa (workspace, folder, principal, access)
    VALUES (ws, set_folder_access.folder, set_folder_access.principal, set_folder_access.access)
    ON CONFLICT ON CONSTRAINT folder_access_pkey DO UPDATE SET access = excluded.access;
END;
$$;

-- Brings one workspace's directory (mirror mode) to exactly the state given,
-- in one transaction, creating the workspace if needed:
--   {"users": [{"username": "ann", "email": "ann@x.io", "is_admin": false}, ...],
--    "groups": {"<group>": ["<username>", ...], ...},
--    "folders": {"<folder>": {"u/<username>" or "g/<group>": "owner"|"write"|"read"}, ...}}
-- All three keys are required (22023 otherwise). A row that cannot be taken
-- (bad name or email, a username given twice, an email shared by several
-- users, a membership or grant naming a user not taken) is left out and
-- reported, not raised: the rest is applied. Users left out are removed
-- like remove_workspace_user (keys forgotten). Returns counts and rejected.
CREATE OR REPLACE FUNCTION public.sync_workspace_directory(workspace text, directory jsonb)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    ws text := sync_workspace_directory.workspace;
    d jsonb := sync_workspace_directory.directory;
    u record;
    g record;
    f record;
BEGIN
    PERFORM datatable_roles.require_own_directory();
    PERFORM datatable_roles.check_name('workspace', ws);
    PERFORM datatable_roles.require(d, 'directory');
    IF jsonb_typeof(d) <> 'object' OR jsonb_typeof(d -> 'users') IS DISTINCT FROM 'array'
        OR jsonb_typeof(d -> 'groups') IS DISTINCT FROM 'object'
        OR jsonb_typeof(d -> 'folders') IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'a directory is an object with users (an array), groups and folders (objects)'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Give all three, empty when there are none: {"users": [], "groups": {}, "folders": {}}.';
    END IF;
    INSERT INTO datatable_roles.workspace (name) VALUES (ws) ON CONFLICT DO NOTHING;
    SELECT * INTO u FROM datatable_roles.sync_users(ws, d -> 'users');
    SELECT * INTO g FROM datatable_roles.sync_group_members(ws, d -> 'groups', u.taken);
    SELECT * INTO f FROM datatable_roles.sync_folder_grants(ws, d -> 'folders', u.taken);
    RETURN jsonb_build_object('workspace', ws,
        'users', jsonb_build_object('added', u.added, 'updated', u.updated, 'removed', u.removed),
        'group_members', jsonb_build_object('added', g.added, 'removed', g.removed),
        'folder_grants', jsonb_build_object('added_or_changed', f.changed, 'removed', f.removed),
        'rejected', u.rejected || g.rejected || f.rejected);
END;
$$;

-- Takes u/<username> out of every tenant list of the workspace and forgets
-- whom it named. The platform calls it when it deletes a user (adapter
-- mode); remove_workspace_user and the reconciliation call it too. Returns
-- how many tenant lists changed.
CREATE OR REPLACE FUNCTION public.forget_workspace_user(workspace text, username text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    tenant_key text := 'u/' || forget_workspace_user.username;
    maps integer;
    admins integer;
BEGIN
    PERFORM datatable_roles.require(forget_workspace_user.workspace, 'workspace');
    PERFORM datatable_roles.require(forget_workspace_user.username, 'username');
    UPDATE datatable_roles.datatable_role AS m
    SET tenants = array_remove(m.tenants, tenant_key)
    FROM datatable_roles.datatable AS d
    WHERE d.id = m.datatable_id AND d.workspace = forget_workspace_user.workspace
        AND tenant_key = ANY(m.tenants);
    GET DIAGNOSTICS maps = ROW_COUNT;
    UPDATE datatable_roles.datatable AS d
    SET admin_tenants = array_remove(d.admin_tenants, tenant_key)
    WHERE d.workspace = forget_workspace_user.workspace AND tenant_key = ANY(d.admin_tenants);
    GET DIAGNOSTICS admins = ROW_COUNT;
    DELETE FROM datatable_roles.tenant_user AS b
    WHERE b.workspace = forget_workspace_user.workspace
        AND b.username = forget_workspace_user.username;
    RETURN maps + admins;
END;
$$;

-- The reconciliation (run by each sweep, on demand, and when an adapter is
-- installed): every u/ key whose person left the directory, or whose
-- username now belongs to someone else, is forgotten; a u/ key not yet
-- bound (written before bindings existed) is bound to its member, or
-- forgotten when there is none. Returns {"forgotten": [u/ keys as
-- workspace/username], "bound": n}.
CREATE OR REPLACE FUNCTION public.reconcile_directory()
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    k record;
    forgotten text [] := '{}'::text [];
    bound integer := 0;
BEGIN
    FOR k IN
        SELECT keys.workspace, keys.username, b.incarnation AS bound_to, m.incarnation AS now_is
        FROM (
            SELECT b.workspace, b.username FROM datatable_roles.tenant_user AS b
            UNION
            SELECT d.workspace, substr(t.k, 3)
            FROM datatable_roles.datatable AS d
            LEFT JOIN datatable_roles.datatable_role AS m ON m.datatable_id = d.id
            CROSS JOIN LATERAL unnest(coalesce(m.tenants, '{}') || d.admin_tenants) AS t (k)
            WHERE starts_with(t.k, 'u/')
        ) AS keys
        LEFT JOIN datatable_roles.tenant_user AS b
            ON b.workspace = keys.workspace AND b.username = keys.username
        LEFT JOIN LATERAL datatable_roles.directory_member(keys.workspace, keys.username) AS m
            ON true
        ORDER BY keys.workspace, keys.username
    LOOP
        IF k.now_is IS NULL OR k.bound_to IS DISTINCT FROM k.now_is AND k.bound_to IS NOT NULL THEN
            PERFORM public.forget_workspace_user(k.workspace, k.username);
            forgotten := forgotten || (k.workspace || '/' || k.username);
        ELSIF k.bound_to IS NULL THEN
            INSERT INTO datatable_roles.tenant_user (workspace, username, incarnation)
            VALUES (k.workspace, k.username, k.now_is);
            bound := bound + 1;
        END IF;
    END LOOP;
    RETURN jsonb_build_object('forgotten', to_jsonb(forgotten), 'bound', bound);
END;
$$;

-- The directory calls (datatable_roles.entry_point), read by grant_calls,
-- the doctor and tests/test_docs_agree.py. A typo fails here.
INSERT INTO datatable_roles.entry_point (signature, caller)
SELECT datatable_roles.signature_of(f.f) AS signature, 'directory' AS caller
FROM unnest(ARRAY[
    'public.add_workspace(text)',
    'public.add_workspace_user(text,text,text,boolean)',
    'public.remove_workspace_user(text,text)',
    'public.add_group_member(text,text,text)',
    'public.remove_group_member(text,text,text)',
    'public.set_folder_access(text,text,text,text)',
    'public.sync_workspace_directory(text,jsonb)',
    'public.forget_workspace_user(text,text)',
    'public.reconcile_directory()'
]::regprocedure[]) AS f (f);
