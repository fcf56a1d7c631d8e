-- What the package owner needs on Windmill's directory tables, for the
-- Windmill adapter (sql/directory/windmill.sql). Run once, in Windmill's
-- database, as the owner of Windmill's tables or a superuser:
--     psql -d <windmill database> -v owner=<package owner> -f sql/windmill-grants.sql
-- It grants SELECT and nothing else, lets the package owner (only) read
-- every row of the two tables Windmill protects with row-level security
-- (its policies are TO windmill_user and windmill_admin), and adds the one
-- index the adapter needs that Windmill lacks. Idempotent.

\set ON_ERROR_STOP on

GRANT SELECT ON public.workspace, public.usr, public.usr_to_group, public.email_to_igroup,
public.folder TO :"owner";

DROP POLICY IF EXISTS datatable_roles_read ON public.usr_to_group;
CREATE POLICY datatable_roles_read ON public.usr_to_group FOR SELECT TO :"owner" USING (true);

DROP POLICY IF EXISTS datatable_roles_read ON public.folder;
CREATE POLICY datatable_roles_read ON public.folder FOR SELECT TO :"owner" USING (true);

-- Viewers are found by email in any case: Windmill's own index is on email.
CREATE INDEX IF NOT EXISTS usr_workspace_lower_email_idx
ON public.usr (workspace_id, lower(email));
