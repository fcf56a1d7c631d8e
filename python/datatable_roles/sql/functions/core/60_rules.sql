-- The resolution rules: all of docs/rules.md (R1-R12), and which login a
-- result gets (R6/R7). decide() applies them, once, for both
-- resolve_datatable_role (which hands the login out) and
-- explain_datatable_role (which shows the steps). It returns the decision
-- with reason codes; 62_explain.sql renders them in words.
--
-- The pieces decide() is built of are one-row SQL functions without a SET
-- clause, so that the planner inlines them into decide's queries (no call,
-- and the plan is kept with decide's); unnamed_of is PL/pgSQL, so that the
-- viewer's lookup starts a plan only when it runs. Each map entry's enabled flag is read
-- by primary key, so that no plan scans the catalog.

-- may_use (docs/rules.md): the identity is an admin of the governing
-- workspace (every role, admin included), or the role's tenant list on the
-- data table names one of its keys (member_keys). NULL tenants (a role not
-- in the map) give NULL, which every caller takes as no.
CREATE OR REPLACE FUNCTION datatable_roles.may_use(
    p_ident_admin boolean, p_ident_keys text[], p_tenants text[]
)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT p_ident_admin OR p_tenants && p_ident_keys
$$;

-- R3/R4: the default (none for the no-default marker, R12, which names no
-- catalog role) is held when it is enabled and may_use(job identity).
-- viewer_may_add is false when no viewer could add a role (R10: no enabled
-- role but the default has tenants here, and the default is already held or
-- names nobody); then the viewer is not looked up at all.
CREATE OR REPLACE FUNCTION datatable_roles.default_of(
    p_datatable_id bigint, p_default_role text, p_ident_admin boolean, p_ident_keys text[]
)
RETURNS TABLE (
    id bigint, name text, enabled boolean, tenants text[], held boolean,
    viewer_may_add boolean
)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, c.name, c.enabled, c.tenants, c.held, EXISTS (
        SELECT FROM datatable_roles.datatable_role AS m
        WHERE m.datatable_id = p_datatable_id AND m.tenants <> '{}'
            AND (m.role_id IS DISTINCT FROM c.id OR NOT c.held)
            AND (SELECT r.enabled FROM datatable_roles.catalog_role AS r WHERE r.id = m.role_id)
    )
    FROM (
        SELECT d.id, d.name, d.enabled, d.tenants, coalesce(d.held, false) AS held
        FROM (SELECT) AS one
        LEFT JOIN (
            SELECT r.id, r.name, r.enabled, m.tenants,
                r.enabled AND datatable_roles.may_use(p_ident_admin, p_ident_keys, m.tenants) AS held
            FROM datatable_roles.catalog_role AS r
            JOIN datatable_roles.datatable_role AS m
                ON m.datatable_id = p_datatable_id AND m.role_id = r.id
            WHERE r.name = p_default_role AND p_default_role <> datatable_roles.no_default()
        ) AS d ON true
        OFFSET 0
    ) AS c
$$;

-- The viewer's roles: the enabled roles of the map whose tenant lists name the
-- viewer, a member of the governing workspace found by email through the
-- directory seam (no row, so username NULL and ids empty, for no viewer, one
-- outside that workspace, a disabled one, or an email several members share:
-- R9). Each tenant key is tested against the directory by key
-- (key_names_member), so the cost follows the map's tenant lists, not the
-- viewer's memberships.
CREATE OR REPLACE FUNCTION datatable_roles.viewer_roles_of(
    p_datatable_id bigint, p_workspace text, p_viewer_email text
)
RETURNS TABLE (username text, email text, incarnation text, ids bigint[])
LANGUAGE sql STABLE
AS $$
    SELECT v.username, v.email, v.incarnation,
        CASE WHEN v.username IS NULL THEN '{}'::bigint [] ELSE ARRAY(
            SELECT m.role_id FROM datatable_roles.datatable_role AS m
            WHERE m.datatable_id = p_datatable_id
                AND (SELECT r.enabled FROM datatable_roles.catalog_role AS r WHERE r.id = m.role_id)
                AND EXISTS (
                    SELECT FROM unnest(m.tenants) AS t (k)
                    CROSS JOIN LATERAL datatable_roles.key_names_member(
                        p_workspace, t.k, v.username, v.email, v.incarnation) AS n
                )
        ) END
    FROM (SELECT) AS one
    LEFT JOIN datatable_roles.directory_member_by_email(p_workspace, p_viewer_email) AS v ON true
$$;

-- The identity in the governing workspace (docs/rules.md, Inputs): its own
-- memberships (p_own_admin, p_own_keys) when the governing workspace is its
-- own, else its current ones there, found by email (none when not a
-- member). Used by decide() and usable_datatable_roles.
CREATE OR REPLACE FUNCTION datatable_roles.identity_in(
    p_workspace text, p_own_workspace text, p_own_admin boolean, p_own_keys text[], p_email text
)
RETURNS TABLE (is_admin boolean, keys text[])
LANGUAGE sql STABLE
AS $$
    SELECT p_own_admin, p_own_keys
    WHERE p_workspace = p_own_workspace
    UNION ALL
    SELECT m.username IS NOT NULL AND m.is_admin,
        CASE WHEN m.username IS NULL THEN '{}'::text [] ELSE datatable_roles.member_keys(
            p_workspace, m.username, m.email, m.incarnation) END
    FROM (SELECT) AS one
    LEFT JOIN datatable_roles.directory_member_by_email(p_workspace, p_email) AS m ON true
    WHERE p_workspace <> p_own_workspace
$$;

-- No role named: R2 (a default of admin gives admin, with no tenant check
-- and no viewer lookup), else R3/R4 with the viewer (R9, R10): the default
-- the identity holds (default_of) and the viewer's roles (viewer_roles_of,
-- looked up only when a viewer could add one). rules: the rules applied, in
-- order: {R2}, or the default's (R3, or R4 with no default), the viewer's
-- (R3/R4 a member, R9 none, R10 not looked up) and R5 when no role remains.
-- Used by decide() and usable_datatable_roles. PL/pgSQL, so that each
-- statement starts its own small plan only when it runs.
CREATE OR REPLACE FUNCTION datatable_roles.unnamed_of(
    p_datatable_id bigint, p_workspace text, p_default_role text,
    p_ident_admin boolean, p_ident_keys text[], p_viewer_email text,
    OUT rules text[], OUT default_id bigint, OUT default_enabled boolean,
    OUT default_tenants text[], OUT default_held boolean, OUT viewer_member boolean,
    OUT held_ids bigint[], OUT viewer_ids bigint[]
)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    dflt record;
BEGIN
    held_ids := '{}';
    viewer_ids := '{}';
    IF p_default_role = 'admin' THEN
        rules := '{R2}';
        RETURN;
    END IF;
    SELECT d.* INTO dflt
    FROM datatable_roles.default_of(p_datatable_id, p_default_role, p_ident_admin, p_ident_keys) AS d;
    default_id := dflt.id;
    default_enabled := dflt.enabled;
    default_tenants := dflt.tenants;
    default_held := dflt.held;
    IF dflt.held THEN
        held_ids := array[dflt.id];
    END IF;
    IF dflt.viewer_may_add THEN
        SELECT v.username IS NOT NULL, v.ids INTO viewer_member, viewer_ids
        FROM datatable_roles.viewer_roles_of(p_datatable_id, p_workspace, p_viewer_email) AS v;
    END IF;
    rules := array[CASE WHEN p_default_role = datatable_roles.no_default() THEN 'R4' ELSE 'R3' END,
            CASE WHEN viewer_member IS NULL THEN 'R10' WHEN viewer_member THEN 'R3/R4' ELSE 'R9' END]
        || CASE WHEN held_ids || viewer_ids = '{}' THEN '{R5}'::text [] ELSE '{}' END;
END;
$$;

-- The roles of a set of catalog ids: sorted ids and names sorted bytewise.
CREATE OR REPLACE FUNCTION datatable_roles.roles_of(p_role_ids bigint[])
RETURNS TABLE (ids bigint[], names text[])
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(array_agg(r.id ORDER BY r.id), '{}'),
        coalesce(array_agg(r.name ORDER BY r.name COLLATE "C"), '{}')
    FROM datatable_roles.catalog_role AS r
    WHERE r.id = ANY(p_role_ids)
$$;


-- R6/R7, which login a non-empty set of catalog roles gets on the data
-- table's database: the scoped login of exactly that set there ('role' for
-- one role, whose sessions act as the role; 'set' for several). Catalog
-- roles are never logged in as: a role's own login would reach every
-- database where the role is mapped, in any workspace. The password comes
-- with it when the login may be handed out with no write (usable_set_login).
-- The admin login, for a result of {admin}, is decide()'s to pick.
-- p_role_ids sorted and distinct, as roles_of gives them.
CREATE OR REPLACE FUNCTION datatable_roles.login_of_roles(p_dbname text, p_role_ids bigint[])
RETURNS TABLE (kind text, login text, password text)
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN cardinality(p_role_ids) = 1 THEN 'role' ELSE 'set' END, n.login,
        (SELECT u.password FROM datatable_roles.usable_set_login(n.login) AS u)
    FROM (
        SELECT datatable_roles.set_login_named(s.instance_id, p_dbname, p_role_ids) AS login
        FROM datatable_roles.settings AS s
    ) AS n
$$;

-- What decide() reads first, in one statement (inlined into its query): the
-- job, the entry it names (entry_id) and the governing entry (id). No row:
-- no such job. The identity is decide's next statement, run only where a
-- rule reads it: a statement's plan is started whole on every run, so a
-- branch it does not take still costs (docs/performance.md).
CREATE OR REPLACE FUNCTION datatable_roles.decide_entry(p_job_id uuid, p_datatable text)
RETURNS TABLE (
    job_workspace text, permissioned_as text, email text, is_admin boolean, groups text[],
    folders text[], end_user_email text, entry_id bigint, id bigint, workspace text,
    dbname text, admin_login text, admin_password text, default_role text,
    admin_tenants text[], is_reference boolean, server text
)
LANGUAGE sql STABLE
AS $$
    SELECT j.workspace, j.permissioned_as, j.email, j.is_admin, j.groups, j.folders,
        j.end_user_email, d.id, g.id, g.workspace, g.dbname, g.admin_login, g.admin_password,
        g.default_role, g.admin_tenants, d.governing_id IS NOT NULL, g.server
    FROM datatable_roles.job_perms AS j
    LEFT JOIN datatable_roles.datatable AS d
        ON d.workspace = j.workspace AND d.name = p_datatable
    LEFT JOIN datatable_roles.datatable AS g ON g.id = coalesce(d.governing_id, d.id)
    WHERE j.job_id = p_job_id
$$;

-- Decides without side effects (STABLE: PL/pgSQL refuses writes here).
-- Unknown job or data table raise P0002; a refusal is returned, not raised:
-- refused_case names the rule (and for R1 refused_reason why), and the
-- decision carries what the rules found (reasons, the rules applied in
-- order; the identity; the default and the viewer), which 62_explain.sql
-- renders as explain's trace and the refusal's message and hint. decide
-- formats no message. Few and small statements on purpose (each costs, and
-- so does each plan node a statement starts, taken or not): one for the job
-- and the data table (decide_entry; R2 ends there), one for the identity
-- (identity_in), one for a named role or for the default and the viewer
-- (unnamed_of), and one for the login (login_of_roles). p_trace looks the
-- identity up even where no rule reads it (R2), for explain.
--
-- No SET clause (it would save and restore the setting on every call, on
-- the hot path): decide is called only by resolve_datatable_role and
-- explain_datatable_role, SECURITY DEFINER functions that pin search_path,
-- and it names every object of the package with its schema.
CREATE OR REPLACE FUNCTION datatable_roles.decide(
    p_job_id uuid, p_datatable text, p_role text, p_for_migration boolean, p_trace boolean
)
RETURNS datatable_roles.decision
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    h record;
    candidate record;
    is_admin boolean := false;   -- the result is {admin}
    ids bigint [] := '{}'::bigint [];
    result datatable_roles.decision;
BEGIN
    SELECT c.* INTO h FROM datatable_roles.decide_entry(p_job_id, p_datatable) AS c;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % was never recorded', p_job_id
            USING ERRCODE = 'no_data_found', HINT = 'Call record_job_start when the job starts.';
    END IF;
    IF h.entry_id IS NULL THEN
        RAISE EXCEPTION 'data table % does not exist in workspace %',
            quote_literal(left(p_datatable, 80)), quote_literal(h.job_workspace)
            USING ERRCODE = 'no_data_found';
    END IF;
    result.datatable_id := h.id;
    result.dbname := h.dbname;
    result.server := h.server;
    result.job_workspace := h.job_workspace;
    result.permissioned_as := h.permissioned_as;
    result.viewer_email := h.end_user_email;
    result.is_reference := h.is_reference;
    -- The identity in the governing workspace (identity_in), where a rule or
    -- the trace reads it (R2 reads none). Its own workspace's is what
    -- record_job_start captured, in member_keys' form: that branch of
    -- identity_in, here as a statement of its own, so that a plan with the
    -- other branch is not started for it.
    IF p_role IS NOT NULL OR p_for_migration OR p_trace OR h.default_role <> 'admin' THEN
        IF h.workspace = h.job_workspace THEN
            result.ident_admin := h.is_admin;
            result.ident_keys := array['*', h.permissioned_as]
                || ARRAY(SELECT 'g/' || x FROM unnest(h.groups) AS x)
                || ARRAY(SELECT 'f/' || x FROM unnest(h.folders) AS x);
        ELSE
            SELECT f.is_admin, f.keys INTO result.ident_admin, result.ident_keys
            FROM datatable_roles.identity_in(h.workspace, h.job_workspace, null, null,
                h.email) AS f;
        END IF;
    END IF;

    IF p_role IS NOT NULL THEN
        -- R1 (and R8 when a migration names a role): exactly {R}.
        result.reasons := '{R1}';
        IF p_role = 'admin' THEN
            is_admin := datatable_roles.may_use(result.ident_admin, result.ident_keys, h.admin_tenants);
            result.refused_reason := CASE WHEN is_admin THEN NULL ELSE 'admin_not_tenant' END;
        ELSE
            SELECT r.id, r.enabled, m.tenants, m.role_id IS NOT NULL AS mapped INTO candidate
            FROM datatable_roles.catalog_role AS r
            LEFT JOIN datatable_roles.datatable_role AS m ON m.role_id = r.id AND m.datatable_id = h.id
            WHERE r.name = p_role;
            result.refused_reason := CASE WHEN candidate.id IS NULL OR NOT candidate.mapped THEN 'not_in_map'
                WHEN NOT candidate.enabled THEN 'disabled'
                WHEN NOT datatable_roles.may_use(result.ident_admin, result.ident_keys, candidate.tenants)
                    THEN 'not_tenant' END;
            ids := array[candidate.id];
        END IF;
        result.refused_case := CASE WHEN result.refused_reason IS NOT NULL THEN 'R1' END;
    ELSIF p_for_migration THEN
        -- R8: a migration naming no role runs as admin, when admin may serve.
        result.reasons := '{R8}';
        is_admin := h.default_role = 'admin'
            OR datatable_roles.may_use(result.ident_admin, result.ident_keys, h.admin_tenants);
        result.refused_case := CASE WHEN NOT coalesce(is_admin, false) THEN 'R8' END;
    ELSIF h.default_role = 'admin' THEN
        -- R2, as unnamed_of gives it, without starting that statement's plan
        -- (the hot path).
        result.reasons := '{R2}';
        is_admin := true;
    ELSE
        -- R3/R4 with R9 and R10; R5: never an empty or read-nothing login.
        SELECT u.rules, u.default_id, u.default_enabled, u.default_tenants, u.default_held,
            u.viewer_member, u.viewer_ids, u.held_ids || u.viewer_ids,
            CASE WHEN 'R5' = ANY(u.rules) THEN 'R5' END
        INTO result.reasons, result.default_id, result.default_enabled, result.default_tenants,
            result.default_held, result.viewer_member, result.viewer_ids, ids, result.refused_case
        FROM datatable_roles.unnamed_of(h.id, h.workspace, h.default_role, result.ident_admin,
            result.ident_keys, h.end_user_email) AS u;
    END IF;

    -- R6/R7: the login that holds exactly the result.
    IF result.refused_case IS NULL THEN
        IF is_admin THEN
            result.role_ids := '{}';
            result.role_names := '{admin}';
            result.login_kind := 'admin';
            result.login := h.admin_login;
            result.password := h.admin_password;
        ELSE
            SELECT s.ids, s.names, l.kind, l.login, l.password
            INTO result.role_ids, result.role_names, result.login_kind, result.login, result.password
            FROM datatable_roles.roles_of(ids) AS s
            CROSS JOIN LATERAL datatable_roles.login_of_roles(
                datatable_roles.database_key(h.server, h.dbname), s.ids) AS l;
        END IF;
    END IF;
    RETURN result;
END;
$$;
