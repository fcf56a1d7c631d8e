-- depends: 0023_servers
-- functions: 42e53f3057c39ca53b8c1786e79eae1f369576b88c706e7dbf10a307f195d257
-- The sweep heals logins on other servers that someone changed there (a
-- setting a script gave its own login, an attribute), as it does here: one
-- look per server (altered_logins_on_server), then the re-key of each
-- (rotate_or_heal's new argument). rotate_or_heal(text) is dropped; the
-- post-apply hook creates the new signature.
DROP FUNCTION IF EXISTS datatable_roles.rotate_or_heal(text);
