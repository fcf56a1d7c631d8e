-- depends: 0013_directory_seam
-- functions: 748bac6e8bf369359dd34706160433b743d733c86867f13f29ea00851ec86cca
-- Speed (docs/performance.md): functions of the hot paths planned with
-- their callers instead of on every call.

-- login_intact is set-returning now (inlined into the resolve's query).
DROP FUNCTION IF EXISTS datatable_roles.login_intact(text, text, text);
