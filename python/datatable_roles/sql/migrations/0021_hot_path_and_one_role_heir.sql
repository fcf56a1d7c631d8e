-- depends: 0020_heal_on_refusal
-- functions: 88b856fbc2a82547f32775bd9f9f65ac4738c27ffc1c37438f168cdde588ea21
-- The resolve's hot path in smaller statements (issue 24): each statement's
-- plan is started whole on every run, branches not taken included, and that
-- start-up was most of a resolve's time (docs/performance.md). decide reads
-- the job and the data table first (decide_entry) and the identity only
-- where a rule reads it; a set login's name is an expression
-- (set_login_named), and usable_set_login takes the name. Signatures that
-- changed are dropped here; the post-apply hook creates the new ones.
-- And what a one-role login made as itself (a client that does not pass
-- the role option, as through PgBouncer) passes to its role when the login
-- is swept, not to the quarantine (one_role_heir). New owner call:
-- datatable_roles.pgbouncer_userlist, PgBouncer's auth_file of verifiers.
DROP FUNCTION IF EXISTS datatable_roles.decide_job(uuid, text, boolean);
DROP FUNCTION IF EXISTS datatable_roles.usable_set_login(text, bigint[]);
