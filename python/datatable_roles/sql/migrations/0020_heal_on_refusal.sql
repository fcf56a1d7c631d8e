-- depends: 0019_cancel_reaches_remote
-- functions: 9aa588d8447788f7d66e726be936cebdc4e602655cf87fae2ace35c4b0addbb7
-- No step reads pg_authid any more (issue 24): a password a script gave its
-- login shows itself when the next job's connection is refused, and the new
-- worker call heal_refused_login proves with a real login attempt that the
-- stored password fails before it re-keys the login (or, for a data table's
-- admin login, names the fix). The resolve no longer calls the superuser
-- step's guard datatable_roles_guard.verifier_is, so the package installs
-- without it (managed PostgreSQL). Signatures that changed are dropped here;
-- the post-apply hook creates the new ones.
DROP FUNCTION IF EXISTS datatable_roles.verifier_is(text, text);
DROP FUNCTION IF EXISTS datatable_roles.login_intact(text, text, text);
DROP FUNCTION IF EXISTS datatable_roles.decide_job(uuid, text, boolean);
