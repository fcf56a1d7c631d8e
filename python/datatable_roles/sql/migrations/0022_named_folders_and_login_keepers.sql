-- depends: 0021_hot_path_and_one_role_heir
-- functions: cec9cfb59e3091e13cce91d1b33e6e09bf834a734900c0ea23053e4344348c44
-- record_job_start captures what the rules need, and no more (issue 24):
-- of the identity's folders, those a tenant list of its workspace names.
-- Testing each of them by key costs what the maps name; listing every
-- folder the identity reaches (one probe per principal, its groups
-- included) was most of record_job_start's time. tenant_folder notes the
-- folders that set_datatable_role_tenants writes into a list (f/ keys of
-- role maps and of admin's tenants); the lists of now are noted here.
-- And login keepers (16+ without the guard, the managed profile): each new
-- login is made with a keeper role holding ADMIN OPTION on it, and the
-- sweep disables and drops it as that keeper, so that PostgreSQL's check
-- walks the keeper's few memberships, not every role the owner made
-- (functions only; logins made before keep being changed as the owner).
CREATE TABLE datatable_roles.tenant_folder (
    workspace text NOT NULL,
    folder text NOT NULL,
    CONSTRAINT tenant_folder_pkey PRIMARY KEY (workspace, folder)
);

INSERT INTO datatable_roles.tenant_folder (workspace, folder)
SELECT DISTINCT d.workspace, substr(t.k, 3) AS folder
FROM datatable_roles.datatable AS d
LEFT JOIN datatable_roles.datatable_role AS m ON m.datatable_id = d.id
CROSS JOIN LATERAL unnest(coalesce(m.tenants, '{}') || d.admin_tenants) AS t (k)
WHERE starts_with(t.k, 'f/');
