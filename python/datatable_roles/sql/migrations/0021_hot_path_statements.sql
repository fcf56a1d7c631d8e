-- depends: 0020_heal_on_refusal
-- functions: a593976b4431e65c5374cd0eecccab3ad695a8db2377381f70abde4bb3625c95
-- The resolve's hot path in smaller statements (issue 24): each statement's
-- plan is started whole on every run, branches not taken included, and that
-- start-up was most of a resolve's time (docs/performance.md). decide reads
-- the job and the data table first (decide_entry) and the identity only
-- where a rule reads it; a set login's name is an expression
-- (set_login_named), and usable_set_login takes the name. Signatures that
-- changed are dropped here; the post-apply hook creates the new ones.
DROP FUNCTION IF EXISTS datatable_roles.decide_job(uuid, text, boolean);
DROP FUNCTION IF EXISTS datatable_roles.usable_set_login(text, bigint[]);
