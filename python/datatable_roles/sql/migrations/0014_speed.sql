-- depends: 0013_directory_seam
-- functions: eedd5200e066c7d2fccd2a87a51d217e8c454896bb32106e5708c6457edbd045
-- Speed (docs/performance.md): functions of the hot paths planned with
-- their callers instead of on every call.

-- login_intact is set-returning now (inlined into the resolve's query).
DROP FUNCTION IF EXISTS datatable_roles.login_intact(text, text, text);
