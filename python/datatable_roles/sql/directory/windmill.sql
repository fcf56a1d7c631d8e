-- The Windmill adapter (docs/integration.md): the directory seam of
-- sql/functions/10_directory_seam.sql, over Windmill's own tables in schema
-- public of its database: workspace (deleted), usr (disabled, created_at),
-- usr_to_group, email_to_igroup (instance groups), folder (owners,
-- extra_perms). Installed by `datatable-roles migrate --directory windmill`,
-- and again by every migrate after. What the package owner needs on those
-- tables is granted by sql/windmill-grants.sql (Windmill's table owner runs
-- it); this file checks it first and refuses, naming what is missing,
-- rather than read empty tables through Windmill's row-level security.
--
-- Decisions (docs/integration.md, "Windmill"):
-- - a disabled user, or any user of a deleted workspace, is no one;
-- - emails are compared case-insensitively, and an email that two enabled
--   users of a workspace share names no one;
-- - a member's groups are usr_to_group, their instance groups (by the
--   email Windmill stores for them) and 'all';
-- - a folder is reached by its owners and by every extra_perms key, write
--   (true) or read (false);
-- - an instance superadmin (password.super_admin) without a usr row is not
--   a member, and super_admin adds nothing: workspace admin is usr.is_admin;
-- - a username's incarnation is usr.created_at.

-- What the package owner lacks to read Windmill's directory whole.
CREATE OR REPLACE FUNCTION datatable_roles.windmill_directory_problems()
RETURNS text[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ARRAY(
        SELECT problem FROM (
            SELECT 1 AS o, t.name, CASE
                WHEN to_regclass('public.' || t.name) IS NULL
                    THEN format('table public.%s is missing', t.name)
                WHEN NOT has_table_privilege(('public.' || t.name)::regclass, 'SELECT')
                    THEN format('%s may not read public.%s (GRANT SELECT)', current_user, t.name)
                WHEN c.relrowsecurity AND NOT (r.rolsuper OR r.rolbypassrls
                    OR c.relowner = r.oid AND NOT c.relforcerowsecurity)
                    AND (NOT EXISTS (
                        SELECT FROM pg_policy AS p
                        WHERE p.polrelid = c.oid AND p.polpermissive AND p.polcmd IN ('r', '*')
                            AND pg_get_expr(p.polqual, p.polrelid) = 'true'
                            AND (p.polroles = '{0}' OR EXISTS (
                                SELECT FROM unnest(p.polroles) AS pr (oid)
                                WHERE pg_has_role(current_user, pr.oid, 'USAGE')))
                    ) OR EXISTS (
                        SELECT FROM pg_policy AS p
                        WHERE p.polrelid = c.oid AND NOT p.polpermissive
                            AND p.polcmd IN ('r', '*')
                            AND coalesce(pg_get_expr(p.polqual, p.polrelid), 'true') <> 'true'
                            AND (p.polroles = '{0}' OR EXISTS (
                                SELECT FROM unnest(p.polroles) AS pr (oid)
                                WHERE pg_has_role(current_user, pr.oid, 'USAGE')))
                    ))
                    THEN format('row-level security on public.%s hides rows from %s'
                        || ' (a policy FOR SELECT TO %s USING (true))', t.name, current_user,
                        current_user)
            END AS problem
            FROM unnest(array['workspace', 'usr', 'usr_to_group', 'email_to_igroup', 'folder'])
                AS t (name)
            LEFT JOIN pg_class AS c ON c.oid = to_regclass('public.' || t.name)
            CROSS JOIN pg_roles AS r
            WHERE r.rolname = current_user
            UNION ALL
            SELECT 2, i.name, format('index %s is missing', i.name)
            FROM (VALUES
                ('usr (workspace_id, lower(email))', 'usr',
                    'USING btree (workspace_id, lower((email)::text))'),
                ('usr_to_group (workspace_id, usr, ...)', 'usr_to_group',
                    'USING btree (workspace_id, usr'),
                ('email_to_igroup (email, ...)', 'email_to_igroup', 'USING btree (email'),
                ('folder USING gin (owners)', 'folder', 'USING gin (owners)'),
                ('folder USING gin (extra_perms)', 'folder', 'USING gin (extra_perms)')
            ) AS i (name, tbl, def)
            WHERE to_regclass('public.' || i.tbl) IS NOT NULL AND NOT EXISTS (
                SELECT FROM pg_index AS x
                WHERE x.indrelid = to_regclass('public.' || i.tbl)
                    AND strpos(pg_get_indexdef(x.indexrelid), i.def) > 0
            )
        ) AS p
        WHERE p.problem IS NOT NULL
        ORDER BY p.o, p.name
    )
$$;

DO $$
DECLARE
    problems text [] := datatable_roles.windmill_directory_problems();
BEGIN
    IF problems <> '{}' THEN
        RAISE EXCEPTION 'the Windmill adapter cannot read Windmill''s directory: %',
            array_to_string(problems, '; ')
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('As the owner of Windmill''s tables (or a superuser), run: psql -d %s'
                      || ' -v owner=%s -f sql/windmill-grants.sql; then migrate again.',
                      current_database(), current_user);
    END IF;
END;
$$;

-- A live workspace: not deleted.
CREATE OR REPLACE FUNCTION datatable_roles.directory_workspace_exists(p_workspace text)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true FROM public.workspace AS w WHERE w.id = p_workspace AND NOT w.deleted
$$;

-- An enabled user of a live workspace.
CREATE OR REPLACE FUNCTION datatable_roles.directory_member(p_workspace text, p_username text)
RETURNS TABLE (username text, email text, is_admin boolean, incarnation text)
LANGUAGE sql STABLE
AS $$
    SELECT u.username::text, u.email::text, u.is_admin,
        extract(EPOCH FROM u.created_at)::text
    FROM public.usr AS u
    WHERE u.workspace_id = p_workspace AND u.username = p_username AND NOT u.disabled
        AND NOT EXISTS (
            SELECT FROM public.workspace AS w WHERE w.id = p_workspace AND w.deleted
        )
$$;

-- The one enabled user with this email (any case); none when two share it.
CREATE OR REPLACE FUNCTION datatable_roles.directory_member_by_email(
    p_workspace text, p_email text
)
RETURNS TABLE (username text, email text, is_admin boolean, incarnation text)
LANGUAGE sql STABLE
AS $$
    SELECT m.username, m.email, m.is_admin, m.incarnation
    FROM (
        SELECT u.username::text AS username, u.email::text AS email, u.is_admin,
            extract(EPOCH FROM u.created_at)::text AS incarnation, count(*) OVER () AS sharing
        FROM public.usr AS u
        WHERE u.workspace_id = p_workspace AND lower(u.email) = lower(p_email)
            AND NOT u.disabled AND NOT EXISTS (
                SELECT FROM public.workspace AS w WHERE w.id = p_workspace AND w.deleted
            )
    ) AS m
    WHERE m.sharing = 1
$$;

-- Workspace groups, instance groups (by the member's stored email), and all.
CREATE OR REPLACE FUNCTION datatable_roles.directory_groups(
    p_workspace text, p_username text, p_email text
)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT ug.group_::text FROM public.usr_to_group AS ug
    WHERE ug.workspace_id = p_workspace AND ug.usr = p_username
    UNION
    SELECT ei.igroup::text FROM public.email_to_igroup AS ei WHERE ei.email = p_email
    UNION
    SELECT 'all'
$$;

CREATE OR REPLACE FUNCTION datatable_roles.directory_in_group(
    p_workspace text, p_username text, p_email text, p_group text
)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true WHERE p_group = 'all'
        OR EXISTS (
            SELECT FROM public.usr_to_group AS ug
            WHERE ug.workspace_id = p_workspace AND ug.usr = p_username AND ug.group_ = p_group
        )
        OR EXISTS (
            SELECT FROM public.email_to_igroup AS ei
            WHERE ei.email = p_email AND ei.igroup = p_group
        )
$$;

-- Folders whose owners or extra_perms name the member or one of its groups
-- (the GIN indexes on owners and extra_perms find them).
CREATE OR REPLACE FUNCTION datatable_roles.directory_folders(
    p_workspace text, p_username text, p_groups text[]
)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    -- One probe of each GIN index per principal: the planner prices && and
    -- ?| over a whole array as cheap, and scanned 500 folders (2 ms) rather
    -- than use the indexes (0.4 ms).
    SELECT DISTINCT f.name::text
    FROM unnest(('u/' || p_username) || ARRAY(SELECT 'g/' || g FROM unnest(p_groups) AS g))
        AS p (principal)
    JOIN public.folder AS f
        ON f.workspace_id = p_workspace
            AND (f.owners @> ARRAY[p.principal::varchar] OR f.extra_perms ? p.principal)
$$;

-- Each named folder by its key (a LIMIT 1 lateral: a probe per folder),
-- its owners and extra_perms keys tested against the member's principals.
CREATE OR REPLACE FUNCTION datatable_roles.directory_folders_among(
    p_workspace text, p_username text, p_groups text[], p_folders text[]
)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT n.folder
    FROM unnest(p_folders) AS n (folder)
    CROSS JOIN LATERAL (
        SELECT FROM public.folder AS f
        WHERE f.workspace_id = p_workspace AND f.name = n.folder
            AND (f.owners && (('u/' || p_username)
                    || ARRAY(SELECT 'g/' || g FROM unnest(p_groups) AS g))::varchar []
                OR f.extra_perms ?| (('u/' || p_username)
                    || ARRAY(SELECT 'g/' || g FROM unnest(p_groups) AS g)))
        LIMIT 1
    ) AS reached
$$;

-- The folder by its key, then its principals (owners and extra_perms keys)
-- tested inside: a lateral expansion of the principals would be estimated
-- at a hundred rows and tip the plan to a sequential scan of folder.
CREATE OR REPLACE FUNCTION datatable_roles.directory_reaches_folder(
    p_workspace text, p_username text, p_email text, p_folder text
)
RETURNS SETOF boolean
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT true WHERE EXISTS (
        SELECT FROM public.folder AS f
        WHERE f.workspace_id = p_workspace AND f.name = p_folder
            AND EXISTS (
                SELECT FROM (
                    SELECT o::text FROM unnest(f.owners) AS o
                    UNION ALL
                    SELECT k FROM jsonb_object_keys(
                        CASE WHEN jsonb_typeof(f.extra_perms) = 'object'
                            THEN f.extra_perms ELSE '{}' END
                    ) AS k
                ) AS p (principal)
                WHERE p.principal = 'u/' || p_username
                    OR starts_with(p.principal, 'g/') AND EXISTS (
                        SELECT FROM datatable_roles.directory_in_group(
                            p_workspace, p_username, p_email, substr(p.principal, 3)))
            )
    )
$$;
