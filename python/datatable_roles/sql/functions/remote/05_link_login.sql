-- The link login (docs/lifecycle.md, docs/trust.md): who it is, what it
-- holds, its sessions in data table databases, and its password's rotation
-- and renewal. Used by the catalog, the data tables, the lifecycle and the
-- grants editor, so it is installed before all of them.

-- The link login of this instance: sessions the package opens in data table
-- databases log in as it (exec_in_database). It is a member of every catalog
-- role and every registered admin login, and of a set login while the sweep
-- moves what that login owns; it is not a member of the package owner.
CREATE OR REPLACE FUNCTION datatable_roles.link_login()
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT c.login FROM datatable_roles.link_credential AS c
$$;

-- Whether the link login holds p_role's privileges through a grant of its
-- own: a membership row that inherits (16 records that per grant; on 15 the
-- link login's INHERIT attribute decides, and it has it). Read from the row,
-- not with pg_has_role(link, ...): that computes the link login's whole
-- membership list (every catalog role), in time quadratic in its length,
-- whenever the session last asked about another role.
CREATE OR REPLACE FUNCTION datatable_roles.link_holds(p_role text)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT EXISTS (
        SELECT FROM pg_catalog.pg_auth_members AS m
        WHERE m.roleid = (SELECT pr.oid FROM pg_catalog.pg_roles AS pr WHERE pr.rolname = p_role)
            AND m.member = (
                SELECT pr.oid FROM pg_catalog.pg_roles AS pr
                WHERE pr.rolname = datatable_roles.link_login()
            )
            AND coalesce((to_jsonb(m) ->> 'inherit_option')::boolean, true)
    )
$$;

-- Opens the named session to p_dbname as the link login (session_open).
-- FOR SHARE: a rotation of the link login's password (rotate_link_login)
-- commits first, or waits for this transaction.
CREATE OR REPLACE FUNCTION datatable_roles.link_session_open(p_name text, p_dbname text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    link datatable_roles.link_credential;
BEGIN
    SELECT c.* INTO link FROM datatable_roles.link_credential AS c FOR SHARE;
    RETURN datatable_roles.session_open(p_name, p_dbname, link.login, link.password);
END;
$$;

-- A login attempt as the link login into p_dbname (login_fails).
CREATE OR REPLACE FUNCTION datatable_roles.link_login_fails(p_dbname text)
RETURNS text
LANGUAGE sql
AS $$
    SELECT datatable_roles.login_fails(p_dbname, c.login, c.password)
    FROM datatable_roles.link_credential AS c
$$;

-- A login refused in p_dbname is refused for itself only when the link
-- login, whose password the package holds, still gets in there: 08001 with
-- libpq's reason otherwise (the server is away, full, or refuses the
-- package too), and nothing is changed on the strength of that refusal.
CREATE OR REPLACE FUNCTION datatable_roles.require_link_reaches(p_dbname text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    why text := datatable_roles.link_login_fails(p_dbname);
BEGIN
    IF why IS NOT NULL THEN
        RAISE EXCEPTION 'database % cannot be reached by the package now', quote_ident(p_dbname)
            USING ERRCODE = 'sqlclient_unable_to_establish_sqlconnection', DETAIL = why,
                  HINT = 'Nothing was changed; try again when the database takes connections.';
    END IF;
END;
$$;

-- Runs statements in a database of the cluster as the link login, in a
-- session of their own (committed there, whatever happens here). The
-- session pins its search_path before anything else runs: a data table's
-- admin or a swept login may have planted objects on the default one.
CREATE OR REPLACE FUNCTION datatable_roles.exec_in_database(p_dbname text, p_sql text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.link_session_open('datatable_roles_link', p_dbname);
    PERFORM datatable_roles.session_exec('datatable_roles_link',
        'SET search_path = pg_catalog, pg_temp; ' || p_sql);
    PERFORM datatable_roles.session_close('datatable_roles_link');
END;
$$;

-- The link login gets a new password every rotate_every, and at once when
-- the one the package holds no longer logs in (a real login attempt into
-- this database, where the link login has CONNECT: pg_authid is not read).
CREATE OR REPLACE FUNCTION datatable_roles.rotate_link_login()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    link datatable_roles.link_credential;
    fresh text := datatable_roles.new_password();
    fresh_verifier text := datatable_roles.verifier_for(fresh);
BEGIN
    SELECT c.* INTO link FROM datatable_roles.link_credential AS c FOR UPDATE;
    IF link.rotated_at >= (SELECT datatable_roles.clock_now())
            - (SELECT s.rotate_every FROM datatable_roles.settings AS s)
        AND datatable_roles.link_login_fails(current_database()) IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format('ALTER ROLE %I PASSWORD %L', link.login, fresh_verifier);
    UPDATE datatable_roles.link_credential
    SET password = fresh, verifier = fresh_verifier,
        rotated_at = (SELECT datatable_roles.clock_now());
END;
$$;

-- A metadata database copied from another (CREATE DATABASE ... TEMPLATE)
-- shares the original's instance id and link login, and a rotation in one
-- would lock the other out. As the owner, after giving the copy an instance
-- id of its own (UPDATE datatable_roles.settings SET instance_id =
-- gen_random_uuid()): SELECT datatable_roles.renew_link_login(); makes the
-- copy a link login of its own, with the memberships and CONNECT it needs.
-- Returns its name.
CREATE OR REPLACE FUNCTION datatable_roles.renew_link_login()
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    link text := 'dtr_link_' || left(replace(
        (SELECT s.instance_id::text FROM datatable_roles.settings AS s), '-', ''), 20);
    fresh text := datatable_roles.new_password();
    fresh_verifier text := datatable_roles.verifier_for(fresh);
    held text;
BEGIN
    IF link = datatable_roles.link_login() THEN
        RETURN link;
    END IF;
    EXECUTE format('CREATE ROLE %I WITH LOGIN INHERIT NOSUPERUSER PASSWORD %L', link, fresh_verifier);
    FOR held IN
        SELECT r.name FROM datatable_roles.catalog_role AS r
        UNION
        SELECT d.admin_login FROM datatable_roles.datatable AS d WHERE d.admin_login IS NOT NULL
    LOOP
        IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = held) THEN
            EXECUTE format('GRANT %I TO %I', held, link);
        END IF;
    END LOOP;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), link);
    UPDATE datatable_roles.link_credential
    SET login = link, password = fresh, verifier = fresh_verifier,
        rotated_at = (SELECT datatable_roles.clock_now());
    RETURN link;
END;
$$;
