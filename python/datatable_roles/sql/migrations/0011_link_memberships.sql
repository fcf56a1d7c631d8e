-- depends: 0010_functions_apart
-- functions: cd06073e493ea22e77d83749f21b23e547a818bfcb00c82962aaaa0b8f3efcde
-- PostgreSQL 16 and later refuse to make the link login a member of the
-- package owner (granting a role takes ADMIN OPTION on it, which no role
-- holds on itself). The link login now holds, itself, what moving objects
-- needs: every catalog role and every registered admin login (and a set
-- login while the sweep moves what it owns). An install from 0.1.0 (15 only)
-- loses the old membership and gets those grants.
DO $$
DECLARE
    link text := (SELECT c.login FROM datatable_roles.link_credential AS c);
    granted text;
BEGIN
    IF EXISTS (
        SELECT FROM pg_auth_members AS m
        WHERE m.roleid = (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = current_user)
            AND m.member = (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = link)
    ) THEN
        EXECUTE format('REVOKE %I FROM %I', current_user, link);
    END IF;
    FOR granted IN
        SELECT r.name FROM datatable_roles.catalog_role AS r
        UNION
        SELECT d.admin_login FROM datatable_roles.datatable AS d WHERE d.admin_login IS NOT NULL
    LOOP
        -- A direct membership row (0.1.0 ran on 15 only, where the link
        -- login's INHERIT attribute makes every one inherit).
        IF EXISTS (SELECT FROM pg_roles AS pr WHERE pr.rolname = granted)
            AND NOT EXISTS (
                SELECT FROM pg_auth_members AS m
                WHERE m.roleid = (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = granted)
                    AND m.member = (SELECT pr.oid FROM pg_roles AS pr WHERE pr.rolname = link)
            ) THEN
            EXECUTE format('GRANT %I TO %I', granted, link);
        END IF;
    END LOOP;
END;
$$;
