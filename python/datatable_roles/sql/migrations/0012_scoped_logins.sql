-- depends: 0011_link_memberships
-- functions: 8c3da145085463f997b4443a9c9df52324e97371890c1ab5279d6044002fc7e5
-- Hostile scripts (docs/trust.md): every login handed to a job is scoped to
-- one data table database, catalog roles are never logged in as, passwords
-- are rotated and healed, and generated logins share a login group.

ALTER TABLE datatable_roles.settings
ADD COLUMN rotate_every interval NOT NULL DEFAULT '1 day',
ADD COLUMN login_group text;

-- The login group: every generated login is a member, for pg_hba.conf rules.
DO $$
DECLARE
    grp text := 'dtr_logins_' || left(replace(
        (SELECT s.instance_id::text FROM datatable_roles.settings AS s), '-', ''), 20);
BEGIN
    EXECUTE format('CREATE ROLE %I WITH NOLOGIN NOINHERIT', grp);
    UPDATE datatable_roles.settings SET login_group = grp;
END;
$$;

ALTER TABLE datatable_roles.settings ALTER COLUMN login_group SET NOT NULL;

-- The verifier the package set on the admin login (NULL until the data table
-- is registered again or given its password: set_datatable_admin_password).
ALTER TABLE datatable_roles.datatable ADD COLUMN admin_verifier text;

-- A login's database, the verifier the package set, and when.
ALTER TABLE datatable_roles.datatable_role_set
ADD COLUMN dbname text,
ADD COLUMN verifier text,
ADD COLUMN rotated_at timestamptz;

UPDATE datatable_roles.datatable_role_set SET rotated_at = created_at;

ALTER TABLE datatable_roles.datatable_role_set ALTER COLUMN rotated_at SET NOT NULL;

ALTER TABLE datatable_roles.link_credential
ADD COLUMN verifier text,
ADD COLUMN rotated_at timestamptz;

-- Logins made before: catalog roles' own logins and set logins that reach
-- every database where their roles are mapped. The roles lose LOGIN, their
-- password and every CONNECT; the set logins are retired (the sweep drops
-- them, moving what they own); the sessions of both end.
DO $$
DECLARE
    old text;
    db record;
BEGIN
    FOR old IN SELECT r.name FROM datatable_roles.catalog_role AS r
        WHERE EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = r.name) ORDER BY r.id
    LOOP
        EXECUTE format('ALTER ROLE %I WITH NOLOGIN PASSWORD NULL', old);
        FOR db IN
            SELECT pd.datname FROM pg_database AS pd, aclexplode(pd.datacl) AS a
            WHERE a.grantee = old::regrole AND a.privilege_type = 'CONNECT'
        LOOP
            EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM %I', db.datname, old);
        END LOOP;
    END LOOP;
    UPDATE datatable_roles.datatable_role_set SET password = '' WHERE dbname IS NULL;
    FOR old IN SELECT s.login FROM datatable_roles.datatable_role_set AS s
        JOIN pg_roles AS pr ON pr.rolname = s.login
        WHERE s.dbname IS NULL AND pr.rolcanlogin ORDER BY s.login
    LOOP
        EXECUTE format('ALTER ROLE %I WITH NOLOGIN', old);
    END LOOP;
    PERFORM pg_terminate_backend(a.pid) FROM pg_stat_activity AS a
    WHERE a.usename IN (
        SELECT r.name FROM datatable_roles.catalog_role AS r
        UNION ALL
        SELECT s.login FROM datatable_roles.datatable_role_set AS s WHERE s.dbname IS NULL
    );
END;
$$;

ALTER TABLE datatable_roles.catalog_role DROP COLUMN password;

-- The link login moves and drops what a login left in any database of the
-- cluster, this one included, whose CONNECT bootstrap took from PUBLIC.
DO $$
BEGIN
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(),
        (SELECT c.login FROM datatable_roles.link_credential AS c));
END;
$$;

-- Functions whose signature or result changed, or that are gone (an install
-- that never ran an earlier post-apply has none of them).
DROP FUNCTION IF EXISTS datatable_roles.sync_connect_grants(bigint);
DROP FUNCTION IF EXISTS datatable_roles.set_login_of(bigint[]);
DROP FUNCTION IF EXISTS datatable_roles.set_login_name(bigint[]);
DROP FUNCTION IF EXISTS datatable_roles.usable_set_login(bigint[]);
DROP FUNCTION IF EXISTS datatable_roles.ensure_set_login(bigint[]);
DROP FUNCTION IF EXISTS datatable_roles.login_of_roles(bigint[]);
DROP FUNCTION IF EXISTS datatable_roles.default_of(bigint, text, boolean, text[]);
DROP FUNCTION IF EXISTS datatable_roles.is_sweepable(timestamptz, text, bigint[], timestamptz);
