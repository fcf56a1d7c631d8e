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
