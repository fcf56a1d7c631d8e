-- The worker's calls: what the platform's worker role runs for each job
-- (record it, resolve or explain a data table's login, heal a login whose
-- connection was refused, the result cache's path) and the roles a member
-- may use, for a role picker. Granted by
-- datatable_roles.grant_worker; the owner may run them too. Each is
-- SECURITY DEFINER: it runs as the package owner with its search_path pinned.

-- Records a job once. The viewer (end_user_email) comes from the origin:
--   app                the session behind the request: caller_email, or NULL (anonymous)
--   run, preview       the caller: caller_email (required)
--   job_token          the recorded viewer of token_job_id (looked up, never passed)
--   schedule, trigger, agent_tool   nobody
-- An argument the origin does not use must be NULL, so nothing else can
-- supply a viewer (datatable_roles.job_viewer). The identity's admin flag,
-- groups and the folders the workspace's tenant lists name are captured
-- now. Returns the recorded viewer.
CREATE OR REPLACE FUNCTION public.record_job_start(
    job_id uuid,
    workspace text,
    permissioned_as text,
    origin text,
    caller_email text DEFAULT null,
    token_job_id uuid DEFAULT null
)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    ws text := record_job_start.workspace;
    identity_name text;
    identity record;
    identity_groups text [];
    identity_folders text [];
    viewer text;
BEGIN
    -- The checks' helpers (each a call) run only to raise their error.
    IF record_job_start.job_id IS NULL OR ws IS NULL OR record_job_start.permissioned_as IS NULL
        OR record_job_start.origin IS NULL THEN
        PERFORM datatable_roles.require(record_job_start.job_id, 'job_id');
        PERFORM datatable_roles.require_workspace(ws);
        PERFORM datatable_roles.require(record_job_start.permissioned_as, 'permissioned_as');
        PERFORM datatable_roles.require(record_job_start.origin, 'origin');
    END IF;
    IF record_job_start.permissioned_as !~ '^u/' THEN
        RAISE EXCEPTION 'invalid permissioned_as %', quote_literal(left(record_job_start.permissioned_as, 80))
            USING ERRCODE = 'invalid_parameter_value', HINT = 'A job identity is u/<username>.';
    END IF;
    identity_name := substr(record_job_start.permissioned_as, 3);
    IF NOT datatable_roles.name_ok(identity_name) THEN
        PERFORM datatable_roles.check_name('user', identity_name);
    END IF;
    -- require_member's lookup, as one statement of this function.
    SELECT m.* INTO identity FROM datatable_roles.directory_member(ws, identity_name) AS m
    WHERE EXISTS (SELECT FROM datatable_roles.directory_workspace_exists(ws));
    IF NOT FOUND THEN
        PERFORM datatable_roles.require_member(ws, identity_name);
    END IF;

    viewer := datatable_roles.job_viewer(ws, record_job_start.origin, record_job_start.caller_email,
        record_job_start.token_job_id);
    IF EXISTS (SELECT FROM datatable_roles.job_perms AS p WHERE p.job_id = record_job_start.job_id) THEN
        RAISE EXCEPTION 'job % is already recorded; its viewer cannot change', record_job_start.job_id
            USING ERRCODE = 'unique_violation';
    END IF;

    -- A username given to someone else since u/<it> was written: its keys
    -- named the one before, and are forgotten now, before they are captured.
    IF EXISTS (SELECT FROM datatable_roles.user_key_stale(ws, identity_name, identity.incarnation)) THEN
        PERFORM public.forget_workspace_user(ws, identity_name);
    END IF;
    -- The identity's groups (member_keys' g/ keys), and of its folders those
    -- a tenant list of the workspace names (tenant_folder): the only f/ keys
    -- a rule can match. Named folders are looked up by key, so the cost
    -- follows the maps, not the identity's folders (docs/rules.md, Inputs).
    -- Statements of this function, so that their plans are kept.
    identity_groups := ARRAY(
        SELECT g FROM datatable_roles.directory_groups(ws, identity_name, identity.email) AS g
        ORDER BY g);
    -- (The named folders as a lateral column: an argument with a subquery
    -- would keep the seam function from being inlined.)
    identity_folders := ARRAY(
        SELECT f
        FROM (
            SELECT ARRAY(SELECT t.folder FROM datatable_roles.tenant_folder AS t
                WHERE t.workspace = ws) AS folders
        ) AS named
        CROSS JOIN LATERAL datatable_roles.directory_folders_among(
            ws, identity_name, identity_groups, named.folders) AS f
        ORDER BY f);
    INSERT INTO datatable_roles.job_perms (
        job_id, workspace, permissioned_as, email, is_admin, groups, folders,
        end_user_email, origin, token_job_id
    ) VALUES (
        record_job_start.job_id, ws, record_job_start.permissioned_as, identity.email, identity.is_admin,
        identity_groups, identity_folders,
        viewer, record_job_start.origin, record_job_start.token_job_id
    );
    RETURN viewer;
END;
$$;

-- Which login a job's connection to a data table uses (docs/rules.md).
-- Returns one row: the database, the login, its password, the roles it
-- holds (sorted names; {admin} for the admin login) and login_kind ('admin',
-- 'role' or 'set'), and for a data table on another server where to
-- connect (host, port, sslmode; NULL for local: the metadata database's
-- cluster). A refusal raises 42501 with the data table, the rule
-- (also in the error's CONSTRAINT field, e.g. 'R5'), and the fix. A login
-- whose password was changed outside the package is handed out as stored:
-- the connection is refused, and heal_refused_login heals it.
CREATE OR REPLACE FUNCTION public.resolve_datatable_role(
    job_id uuid, datatable text, role text DEFAULT null, for_migration boolean DEFAULT false,
    OUT dbname text, OUT login text, OUT password text, OUT roles text[], OUT login_kind text,
    OUT host text, OUT port integer, OUT sslmode text
)
RETURNS record
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
-- Generic plans: every statement here and in decide() is a lookup by key,
-- and a custom plan (which PL/pgSQL keeps choosing when the generic one is
-- estimated dearer) is planned anew on every call, the inlined functions
-- included.
SET plan_cache_mode = force_generic_plan
-- No JIT: the catalog lookups of the heal check are estimated (a singleton
-- settings table read as hundreds of rows) above jit_above_cost, and
-- compiling the plan took 430 ms for a statement that runs in 1 ms.
SET jit = off
AS $$
DECLARE
    d datatable_roles.decision;
BEGIN
    IF resolve_datatable_role.job_id IS NULL OR resolve_datatable_role.datatable IS NULL
        OR resolve_datatable_role.for_migration IS NULL THEN
        PERFORM datatable_roles.require(resolve_datatable_role.job_id, 'job_id');
        PERFORM datatable_roles.require(resolve_datatable_role.datatable, 'datatable');
        PERFORM datatable_roles.require(resolve_datatable_role.for_migration, 'for_migration');
    END IF;
    d := datatable_roles.decide(resolve_datatable_role.job_id, resolve_datatable_role.datatable,
        resolve_datatable_role.role, resolve_datatable_role.for_migration, false);
    IF d.refused_case IS NOT NULL THEN
        PERFORM datatable_roles.refuse(d, resolve_datatable_role.datatable,
            resolve_datatable_role.role);
    END IF;
    IF d.server <> 'local' THEN
        -- Another server (docs/servers.md): where to connect, and no login
        -- while a change the catalog made has not reached it.
        IF EXISTS (SELECT FROM datatable_roles.server_change AS c WHERE c.server = d.server) THEN
            PERFORM datatable_roles.refuse_while_pending(d.server);
        END IF;
        SELECT sv.host, sv.port, sv.sslmode INTO host, port, sslmode
        FROM datatable_roles.server AS sv WHERE sv.name = d.server;
    END IF;
    dbname := d.dbname;
    roles := d.role_names;
    login_kind := d.login_kind;
    login := d.login;
    password := d.password;
    IF password IS NULL THEN
        -- A set login to touch, make or take back.
        SELECT s.login, s.password INTO login, password
        FROM datatable_roles.ensure_set_login(d.dbname, d.role_ids, d.server) AS s;
    END IF;
END;
$$;

-- The decision of resolve_datatable_role, step by step, as jsonb, with no
-- side effects (STABLE): it never creates or changes a login, and shows no
-- password.
CREATE OR REPLACE FUNCTION public.explain_datatable_role(
    job_id uuid, datatable text, role text DEFAULT null
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
SET jit = off
AS $$
DECLARE
    d datatable_roles.decision;
    r record;
BEGIN
    PERFORM datatable_roles.require(explain_datatable_role.job_id, 'job_id');
    PERFORM datatable_roles.require(explain_datatable_role.datatable, 'datatable');
    d := datatable_roles.decide(explain_datatable_role.job_id, explain_datatable_role.datatable,
        explain_datatable_role.role, false, true);
    IF d.refused_case IS NOT NULL THEN
        SELECT f.message, f.hint INTO r
        FROM datatable_roles.refusal_of(d, explain_datatable_role.datatable,
            explain_datatable_role.role) AS f;
        RETURN jsonb_build_object(
            'job_id', explain_datatable_role.job_id, 'datatable', explain_datatable_role.datatable,
            'role', explain_datatable_role.role,
            'steps', datatable_roles.explain_steps(d, explain_datatable_role.role),
            'refused', jsonb_build_object('rule', d.refused_case, 'message', r.message,
                'hint', r.hint));
    END IF;
    RETURN jsonb_build_object(
        'job_id', explain_datatable_role.job_id, 'datatable', explain_datatable_role.datatable,
        'role', explain_datatable_role.role,
        'steps', datatable_roles.explain_steps(d, explain_datatable_role.role),
        'dbname', d.dbname, 'roles', to_jsonb(d.role_names), 'login', d.login,
        'login_kind', d.login_kind,
        'login_exists', EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = d.login));
END;
$$;

-- A result cache path that belongs to the run's job identity and recorded
-- viewer (two schedules of one script with the same args, run as two
-- identities, may resolve differently, so they never share an entry): the
-- same inputs give the same path, args are hashed independent of key order
-- (jsonb keeps keys sorted), and runs of one identity with no viewer share
-- one entry.
CREATE OR REPLACE FUNCTION public.cached_result_path(job_id uuid, runnable text, args jsonb)
RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    job datatable_roles.job_perms;
BEGIN
    PERFORM datatable_roles.require(cached_result_path.job_id, 'job_id');
    PERFORM datatable_roles.require(cached_result_path.runnable, 'runnable');
    SELECT p.* INTO job FROM datatable_roles.job_perms AS p WHERE p.job_id = cached_result_path.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % was never recorded', cached_result_path.job_id
            USING ERRCODE = 'no_data_found', HINT = 'Call record_job_start first.';
    END IF;
    RETURN format('%s/cache/%s', job.workspace, encode(sha256(convert_to(
        jsonb_build_array(
            job.workspace, cached_result_path.runnable,
            coalesce(cached_result_path.args, 'null'::jsonb), job.permissioned_as,
            lower(job.end_user_email)
        )::text, 'UTF8'
    )), 'hex'));
END;
$$;

-- The roles a member may name on a data table (R1), and what a connection
-- naming no role would give a job run as u/<username>: with no viewer who
-- adds a role ('default'), and with the member as the job's own viewer
-- ('default_as_viewer'). Built of the rules' own pieces (60_rules.sql):
-- identity_in for the identity, may_use for R1, unnamed_of for the default
-- and the viewer (R2-R5, R9, R10), roles_of for the sorted names. The
-- identity is the member's now, as record_job_start would capture it; under
-- a reference it is looked up by email in the governing workspace, as
-- decide() does. No
-- tenant key and no other member is shown.
CREATE OR REPLACE FUNCTION public.usable_datatable_roles(
    workspace text, datatable text, username text
)
RETURNS TABLE (role text, source text, roles text[], rule text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable;
    gov datatable_roles.datatable;
    member record;
    ident record;
    u record;
    default_name text;
    alone text [];
    with_viewer text [];
BEGIN
    entry := datatable_roles.require_datatable(usable_datatable_roles.workspace,
        usable_datatable_roles.datatable);
    PERFORM datatable_roles.check_name('user', usable_datatable_roles.username);
    SELECT m.* INTO member
    FROM datatable_roles.require_member(usable_datatable_roles.workspace,
        usable_datatable_roles.username) AS m;
    SELECT g.* INTO gov FROM datatable_roles.datatable AS g
    WHERE g.id = coalesce(entry.governing_id, entry.id);

    -- The identity in the governing workspace (docs/rules.md, Inputs).
    SELECT i.is_admin, i.keys INTO ident
    FROM datatable_roles.identity_in(gov.workspace, entry.workspace, member.is_admin,
        datatable_roles.member_keys(entry.workspace, member.username, member.email,
            member.incarnation), member.email) AS i;

    -- R1: admin (always in the map), then each enabled role of the map the
    -- identity may use, by name.
    RETURN QUERY
    SELECT n.name, 'named'::text, array[n.name], 'R1'::text
    FROM (
        SELECT 'admin'::text AS name, 0 AS rank
        WHERE datatable_roles.may_use(ident.is_admin, ident.keys, gov.admin_tenants)
        UNION ALL
        SELECT r.name, 1
        FROM datatable_roles.datatable_role AS m
        JOIN datatable_roles.catalog_role AS r ON r.id = m.role_id
        WHERE m.datatable_id = gov.id AND r.enabled
            AND datatable_roles.may_use(ident.is_admin, ident.keys, m.tenants)
    ) AS n
    ORDER BY n.rank, n.name COLLATE "C";

    -- No role named: R2, or R3/R4 with the member as viewer (R9, R10); R5
    -- when empty (unnamed_of, as decide() applies them).
    SELECT n.* INTO u
    FROM datatable_roles.unnamed_of(gov.id, gov.workspace, gov.default_role, ident.is_admin,
        ident.keys, member.email) AS n;
    IF u.rules[1] = 'R2' THEN
        RETURN QUERY SELECT 'admin'::text, 'default'::text, '{admin}'::text [], 'R2'::text;
        RETURN QUERY SELECT 'admin'::text, 'default_as_viewer'::text, '{admin}'::text [],
            'R2'::text;
        RETURN;
    END IF;
    default_name := nullif(gov.default_role, datatable_roles.no_default());
    SELECT s.names INTO alone FROM datatable_roles.roles_of(u.held_ids) AS s;
    SELECT s.names INTO with_viewer FROM datatable_roles.roles_of(u.held_ids || u.viewer_ids) AS s;
    RETURN QUERY SELECT default_name, 'default'::text, nullif(alone, '{}'),
        CASE WHEN alone = '{}' THEN 'R5' ELSE 'R3' END;
    RETURN QUERY SELECT default_name, 'default_as_viewer'::text, nullif(with_viewer, '{}'),
        CASE WHEN 'R5' = ANY(u.rules) THEN 'R5' ELSE u.rules[1] END;
END;
$$;

-- A job's connection with a login that resolve handed out was refused
-- (28P01): the worker calls this, then resolves again (Client.connect
-- does). Nothing on the hot path reads passwords (pg_authid is the
-- superuser's), so a password a script gave its login shows itself here.
-- For a set login the stored password is proven to fail by a real login
-- attempt before the login is re-keyed (heal_set_login): 'healed', 'works'
-- (it logs in: a spurious report changes nothing) or 'gone' (the next
-- resolve makes it again). A data table's admin login, whose password the
-- package does not own, raises 55000 (CONSTRAINT admin_password) once a
-- login attempt failed for its password, or returns 'works'. 42704 for any
-- other login; 08001 when the database cannot be reached, or refuses the
-- admin login for another reason (nothing changed).
CREATE OR REPLACE FUNCTION public.heal_refused_login(login text)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    entry datatable_roles.datatable;
    why text;
BEGIN
    PERFORM datatable_roles.require(heal_refused_login.login, 'login');
    IF EXISTS (
        SELECT FROM datatable_roles.datatable_role_set AS s WHERE s.login = heal_refused_login.login
    ) THEN
        RETURN datatable_roles.heal_set_login(heal_refused_login.login);
    END IF;
    SELECT d.* INTO entry FROM datatable_roles.datatable AS d
    WHERE d.admin_login = heal_refused_login.login AND d.governing_id IS NULL
    ORDER BY d.id LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'login % is not one this instance hands out',
            quote_ident(left(heal_refused_login.login, 80))
            USING ERRCODE = 'undefined_object';
    END IF;
    why := datatable_roles.login_fails_on(entry.server, entry.dbname, entry.admin_login,
        entry.admin_password);
    IF why IS NULL THEN
        RETURN 'works';
    END IF;
    PERFORM datatable_roles.require_reaches(entry.server, entry.dbname);
    IF datatable_roles.wrong_password(why) THEN
        PERFORM datatable_roles.refuse_admin_password(format('%s/%s', entry.workspace, entry.name),
            entry.admin_login);
    END IF;
    RAISE EXCEPTION 'admin login % is refused by database %', quote_ident(entry.admin_login),
        quote_ident(entry.dbname)
        USING ERRCODE = 'sqlclient_unable_to_establish_sqlconnection', DETAIL = why,
              HINT = 'Not for its password: see the reason (pg_hba.conf, NOLOGIN, CONNECT).';
END;
$$;

-- The worker calls (datatable_roles.entry_point), read by grant_calls,
-- the doctor and tests/test_docs_agree.py. A typo fails here.
INSERT INTO datatable_roles.entry_point (signature, caller)
SELECT datatable_roles.signature_of(f.f) AS signature, 'worker' AS caller
FROM unnest(ARRAY[
    'public.record_job_start(uuid,text,text,text,text,uuid)',
    'public.resolve_datatable_role(uuid,text,text,boolean)',
    'public.explain_datatable_role(uuid,text,text)',
    'public.cached_result_path(uuid,text,jsonb)',
    'public.usable_datatable_roles(text,text,text)',
    'public.heal_refused_login(text)'
]::regprocedure[]) AS f (f);
