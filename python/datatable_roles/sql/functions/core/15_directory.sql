-- The directory as the rules see it (tenant keys of a member, and u/ keys
-- that never pass to a reused username), and the directory calls of mirror
-- mode (docs/integration.md). Everything here reads the directory through
-- the seam (10_directory_seam.sql), so it works the same over an adapter.

-- The workspace must be live (P0002 otherwise).
CREATE OR REPLACE FUNCTION datatable_roles.require_workspace(p_workspace text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require(p_workspace, 'workspace');
    IF NOT EXISTS (SELECT FROM datatable_roles.directory_workspace_exists(p_workspace)) THEN
        RAISE EXCEPTION 'workspace % does not exist', quote_literal(left(p_workspace, 80))
            USING ERRCODE = 'no_data_found',
                  HINT = 'Create it with add_workspace (or in the platform, with an adapter).';
    END IF;
END;
$$;

-- The member with this username in a live workspace (P0002 otherwise: no
-- such user, or disabled).
CREATE OR REPLACE FUNCTION datatable_roles.require_member(p_workspace text, p_username text)
RETURNS TABLE (username text, email text, is_admin boolean, incarnation text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require_workspace(p_workspace);
    PERFORM datatable_roles.require(p_username, 'username');
    RETURN QUERY SELECT m.username, m.email, m.is_admin, m.incarnation
        FROM datatable_roles.directory_member(p_workspace, p_username) AS m;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'user % is not a member of workspace %',
            quote_literal(left(p_username, 80)), quote_literal(p_workspace)
            USING ERRCODE = 'no_data_found',
                  HINT = 'Add the user with add_workspace_user (or in the platform, with an adapter); a disabled user is no member.';
    END IF;
END;
$$;

-- A row when u/<username> no longer names this person: a u/ key is bound to
-- the incarnation of the member it named when it was written (tenant_user),
-- so a username deleted and given to someone else names no one until an
-- operator names the new person. One primary-key lookup.
CREATE OR REPLACE FUNCTION datatable_roles.user_key_stale(
    p_workspace text, p_username text, p_incarnation text
)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true FROM datatable_roles.tenant_user AS b
    WHERE b.workspace = p_workspace AND b.username = p_username
        AND b.incarnation IS DISTINCT FROM p_incarnation
$$;

-- The keys that name a member of a workspace: '*', u/<user>, g/<each group>,
-- f/<each folder the member owns or may read or write, directly or through
-- a group>.
CREATE OR REPLACE FUNCTION datatable_roles.member_keys(
    p_workspace text, p_username text, p_email text, p_incarnation text
)
RETURNS text[]
LANGUAGE sql STABLE
AS $$
    SELECT array['*']
        || CASE WHEN NOT EXISTS (
            SELECT FROM datatable_roles.user_key_stale(p_workspace, p_username, p_incarnation)
        ) THEN array['u/' || p_username] ELSE '{}' END
        || ARRAY(SELECT 'g/' || g FROM unnest(grp.groups) AS g)
        || ARRAY(
            SELECT 'f/' || f
            FROM datatable_roles.directory_folders(p_workspace, p_username, grp.groups) AS f
            ORDER BY f
        )
    FROM (
        SELECT ARRAY(
            SELECT g FROM datatable_roles.directory_groups(p_workspace, p_username, p_email) AS g
            ORDER BY g
        ) AS groups
        OFFSET 0
    ) AS grp
$$;

-- The same, for a username (NULL when it names no member).
CREATE OR REPLACE FUNCTION datatable_roles.member_keys(p_workspace text, p_username text)
RETURNS text[]
LANGUAGE sql STABLE
AS $$
    SELECT datatable_roles.member_keys(p_workspace, m.username, m.email, m.incarnation)
    FROM datatable_roles.directory_member(p_workspace, p_username) AS m
$$;

-- A row when one tenant key names a member: exactly when member_keys would
-- list it, at the cost of one lookup by key (the viewer path tests the map's
-- keys rather than expanding the member's memberships).
CREATE OR REPLACE FUNCTION datatable_roles.key_names_member(
    p_workspace text, p_key text, p_username text, p_email text, p_incarnation text
)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true WHERE p_key = '*'
        OR p_key = 'u/' || p_username AND NOT EXISTS (
            SELECT FROM datatable_roles.user_key_stale(p_workspace, p_username, p_incarnation))
        OR starts_with(p_key, 'g/') AND EXISTS (
            SELECT FROM datatable_roles.directory_in_group(
                p_workspace, p_username, p_email, substr(p_key, 3)))
        OR starts_with(p_key, 'f/') AND EXISTS (
            SELECT FROM datatable_roles.directory_reaches_folder(
                p_workspace, p_username, p_email, substr(p_key, 3)))
$$;

-- Binds u/<username>, about to be written into a tenant list, to the member
-- it names now (P0002 when there is none). A binding to someone before
-- (the username was reused) is forgotten first, with every key it held.
CREATE OR REPLACE FUNCTION datatable_roles.bind_user_key(p_workspace text, p_username text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    member_incarnation text;
BEGIN
    SELECT m.incarnation INTO member_incarnation
    FROM datatable_roles.require_member(p_workspace, p_username) AS m;
    IF EXISTS (SELECT FROM datatable_roles.user_key_stale(p_workspace, p_username, member_incarnation)) THEN
        PERFORM public.forget_workspace_user(p_workspace, p_username);
    END IF;
    INSERT INTO datatable_roles.tenant_user (workspace, username, incarnation)
    VALUES (p_workspace, p_username, member_incarnation)
    ON CONFLICT ON CONSTRAINT tenant_user_pkey DO NOTHING;
END;
$$;

-- Notes f/<folder>, about to be written into a tenant list of the
-- workspace, in tenant_folder: the folders whose keys record_job_start
-- captures. Never taken out (a folder no list names any more is only
-- tested in vain), so a job's captured keys are never fewer than its
-- workspace's lists named when it started.
CREATE OR REPLACE FUNCTION datatable_roles.note_folder_key(p_workspace text, p_folder text)
RETURNS void
LANGUAGE sql
AS $$
    INSERT INTO datatable_roles.tenant_folder (workspace, folder)
    VALUES (p_workspace, p_folder)
    ON CONFLICT ON CONSTRAINT tenant_folder_pkey DO NOTHING
$$;

-- The directory calls below write the package's own tables (mirror mode);
-- with an adapter, the platform's tables are the directory, and they
-- refuse (55000).
CREATE OR REPLACE FUNCTION datatable_roles.require_own_directory()
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    adapter text := (SELECT s.directory FROM datatable_roles.settings AS s);
BEGIN
    IF adapter <> 'builtin' THEN
        RAISE EXCEPTION 'the directory is read from the platform (the % adapter): it is not written through the package', adapter
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Change users, groups and folders in the platform; call forget_workspace_user when it deletes a user.';
    END IF;
END;
$$;

-- sync_workspace_directory (api/96_directory.sql), in three steps. Each
-- judges its part of the input, reports what it cannot take in rejected
-- ([{kind, item, reason}], in input order) and brings the tables to the
-- rest. Users first: the users taken ([{username, email, is_admin}]) are
-- what the memberships and grants may name; users not given are removed like
-- remove_workspace_user (keys forgotten).
CREATE OR REPLACE FUNCTION datatable_roles.sync_users(
    p_workspace text, p_users jsonb,
    OUT taken jsonb, OUT rejected jsonb, OUT added integer, OUT updated integer,
    OUT removed integer
)
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    gone text;
BEGIN
    removed := 0;
    WITH given AS (
        SELECT e.value AS item, e.value ->> 'username' AS username, e.value ->> 'email' AS email,
            e.value -> 'is_admin' AS is_admin
        FROM jsonb_array_elements(p_users) AS e (value)
    ), judged AS (
        SELECT g.*, CASE
            WHEN jsonb_typeof(g.item) <> 'object' THEN 'not an object'
            WHEN g.username IS NULL OR NOT datatable_roles.name_ok(g.username) THEN 'invalid username'
            WHEN g.email IS NULL OR NOT datatable_roles.email_ok(g.email) THEN 'invalid email'
            WHEN coalesce(jsonb_typeof(g.is_admin), 'boolean') <> 'boolean' THEN 'is_admin is not a boolean'
            WHEN count(*) OVER (PARTITION BY g.username) > 1 THEN 'username given more than once'
            WHEN count(*) OVER (PARTITION BY lower(g.email)) > 1 THEN 'email shared by several users'
        END AS reason
        FROM given AS g
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('kind', 'user', 'item', j.item, 'reason', j.reason))
            FILTER (WHERE j.reason IS NOT NULL), '[]'),
        coalesce(jsonb_agg(jsonb_build_object('username', j.username, 'email', j.email,
            'is_admin', coalesce(j.is_admin, 'false'))) FILTER (WHERE j.reason IS NULL), '[]')
    INTO rejected, taken
    FROM judged AS j;

    FOR gone IN
        SELECT u.username FROM datatable_roles.workspace_user AS u
        WHERE u.workspace = p_workspace AND NOT EXISTS (
            SELECT FROM jsonb_array_elements(taken) AS v (value)
            WHERE v.value ->> 'username' = u.username)
        ORDER BY u.username
    LOOP
        PERFORM public.remove_workspace_user(p_workspace, gone);
        removed := removed + 1;
    END LOOP;
    -- Emails that change are parked first (no '@': no real email), so that
    -- two users may swap emails under the unique (workspace, lower(email)).
    UPDATE datatable_roles.workspace_user AS u SET email = '#' || u.incarnation
    FROM jsonb_to_recordset(taken) AS v (username text, email text, is_admin boolean)
    WHERE u.workspace = p_workspace AND u.username = v.username AND u.email <> v.email;
    UPDATE datatable_roles.workspace_user AS u SET email = v.email, is_admin = v.is_admin
    FROM jsonb_to_recordset(taken) AS v (username text, email text, is_admin boolean)
    WHERE u.workspace = p_workspace AND u.username = v.username
        AND (u.email <> v.email OR u.is_admin <> v.is_admin);
    GET DIAGNOSTICS updated = ROW_COUNT;
    INSERT INTO datatable_roles.workspace_user (workspace, username, email, is_admin)
    SELECT p_workspace, v.username, v.email, v.is_admin
    FROM jsonb_to_recordset(taken) AS v (username text, email text, is_admin boolean)
    ON CONFLICT ON CONSTRAINT workspace_user_pkey DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
END;
$$;

-- Group memberships: judged once (reason null: taken), then split into
-- rejected and taken; memberships not taken are removed.
CREATE OR REPLACE FUNCTION datatable_roles.sync_group_members(
    p_workspace text, p_groups jsonb, p_users jsonb,
    OUT rejected jsonb, OUT added integer, OUT removed integer
)
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    judged jsonb;
BEGIN
    WITH given AS (
        SELECT g.key AS group_name, g.value AS members, m.value AS member
        FROM jsonb_each(p_groups) AS g
        LEFT JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(g.value) = 'array' THEN g.value ELSE '[null]' END
        ) AS m (value) ON true
        WHERE NOT (jsonb_typeof(g.value) = 'array' AND m.value IS NULL)  -- an empty group
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('group_name', g.group_name, 'member', g.member,
        'reason', CASE
            WHEN jsonb_typeof(g.members) <> 'array' THEN 'a group is an array of usernames'
            WHEN NOT datatable_roles.name_ok(g.group_name) THEN 'invalid group name'
            WHEN jsonb_typeof(g.member) IS DISTINCT FROM 'string' THEN 'a member is a username'
            WHEN NOT EXISTS (SELECT FROM jsonb_array_elements(p_users) AS v (value)
                WHERE v.value -> 'username' = g.member) THEN 'not a user of the workspace'
        END)), '[]')
    INTO judged
    FROM given AS g;
    rejected := coalesce((
        SELECT jsonb_agg(jsonb_build_object('kind', 'group_member', 'item',
            jsonb_build_object('group', j.value -> 'group_name', 'member', j.value -> 'member'),
            'reason', j.value -> 'reason'))
        FROM jsonb_array_elements(judged) AS j (value) WHERE j.value -> 'reason' <> 'null'), '[]');
    DELETE FROM datatable_roles.group_member AS gm
    WHERE gm.workspace = p_workspace AND NOT EXISTS (
        SELECT FROM jsonb_array_elements(judged) AS j (value)
        WHERE j.value -> 'reason' = 'null' AND j.value ->> 'group_name' = gm.group_name
            AND j.value ->> 'member' = gm.username);
    GET DIAGNOSTICS removed = ROW_COUNT;
    INSERT INTO datatable_roles.group_member (workspace, group_name, username)
    SELECT p_workspace, j.value ->> 'group_name', j.value ->> 'member'
    FROM jsonb_array_elements(judged) AS j (value) WHERE j.value -> 'reason' = 'null'
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
END;
$$;

-- Folder grants, the same way; a grant taken replaces the principal's access.
CREATE OR REPLACE FUNCTION datatable_roles.sync_folder_grants(
    p_workspace text, p_folders jsonb, p_users jsonb,
    OUT rejected jsonb, OUT changed integer, OUT removed integer
)
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    judged jsonb;
BEGIN
    WITH given AS (
        SELECT f.key AS folder, f.value AS grants, p.key AS principal, p.value AS access
        FROM jsonb_each(p_folders) AS f
        LEFT JOIN LATERAL jsonb_each(
            CASE WHEN jsonb_typeof(f.value) = 'object' THEN f.value ELSE '{"": null}' END
        ) AS p ON true
        WHERE NOT (jsonb_typeof(f.value) = 'object' AND p.key IS NULL)  -- an empty folder
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('folder', g.folder, 'principal', g.principal,
        'access', g.access, 'reason', CASE
            WHEN jsonb_typeof(g.grants) <> 'object' THEN 'a folder is an object of principal: access'
            WHEN NOT datatable_roles.name_ok(g.folder) THEN 'invalid folder name'
            WHEN g.principal !~ '^[ug]/' OR NOT datatable_roles.name_ok(substr(g.principal, 3))
                THEN 'a principal is u/<username> or g/<group>'
            WHEN g.access IS NULL OR g.access NOT IN ('"owner"', '"write"', '"read"')
                THEN 'access is owner, write or read'
            WHEN starts_with(g.principal, 'u/') AND NOT EXISTS (
                SELECT FROM jsonb_array_elements(p_users) AS v (value)
                WHERE v.value ->> 'username' = substr(g.principal, 3))
                THEN 'not a user of the workspace'
        END)), '[]')
    INTO judged
    FROM given AS g;
    rejected := coalesce((
        SELECT jsonb_agg(jsonb_build_object('kind', 'folder_grant', 'item',
            jsonb_build_object('folder', j.value -> 'folder', 'principal', j.value -> 'principal',
                'access', j.value -> 'access'),
            'reason', j.value -> 'reason'))
        FROM jsonb_array_elements(judged) AS j (value) WHERE j.value -> 'reason' <> 'null'), '[]');
    DELETE FROM datatable_roles.folder_access AS fa
    WHERE fa.workspace = p_workspace AND NOT EXISTS (
        SELECT FROM jsonb_array_elements(judged) AS j (value)
        WHERE j.value -> 'reason' = 'null' AND j.value ->> 'folder' = fa.folder
            AND j.value ->> 'principal' = fa.principal);
    GET DIAGNOSTICS removed = ROW_COUNT;
    INSERT INTO datatable_roles.folder_access AS fa (workspace, folder, principal, access)
    SELECT p_workspace, j.value ->> 'folder', j.value ->> 'principal', j.value ->> 'access'
    FROM jsonb_array_elements(judged) AS j (value) WHERE j.value -> 'reason' = 'null'
    ON CONFLICT ON CONSTRAINT folder_access_pkey DO UPDATE SET access = excluded.access
    WHERE fa.access <> excluded.access;
    GET DIAGNOSTICS changed = ROW_COUNT;
END;
$$;
