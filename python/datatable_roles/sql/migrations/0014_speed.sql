-- depends: 0013_directory_seam
-- functions: bd771af9b168abc281d6fdc9b85509371ca4cbcb03b5bf8009c4510dffcfd7e7
-- Speed (docs/performance.md): functions of the hot paths planned with
-- their callers instead of on every call.

-- login_intact is set-returning now (inlined into the resolve's query).
DROP FUNCTION IF EXISTS datatable_roles.login_intact(text, text, text);
