-- depends: 0021_hot_path_and_one_role_heir
-- functions: ddfeee19592628f79b2b9cd1729c41f9464481a6ecc57b273828d1a80d2ba148
-- record_job_start captures what the rules need, and no more (issue 24):
-- of the identity's folders, those a tenant list of its workspace names.
-- Testing each of them by key costs what the maps name; listing every
-- folder the identity reaches (one probe per principal, its groups
-- included) was most of record_job_start's time. tenant_folder notes the
-- folders that set_datatable_role_tenants writes into a list (f/ keys of
-- role maps and of admin's tenants); the lists of now are noted here.
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
