-- depends: 0014_speed
-- functions: bd771af9b168abc281d6fdc9b85509371ca4cbcb03b5bf8009c4510dffcfd7e7
-- Speed, part 2 (docs/performance.md): the sweep, first use and the resolve paths.

-- login_settings_elsewhere is set-returning now (inlined into the sweep's
-- query over every live login).
DROP FUNCTION IF EXISTS datatable_roles.login_settings_elsewhere(text, text);

-- is_sweepable is set-returning now (inlined where it is used), and a sweep's
-- step reads its logins from an array of their own (sweep_victims) instead of
-- from its state.
DROP FUNCTION IF EXISTS datatable_roles.is_sweepable(
    timestamptz, text, text, bigint[], timestamptz
);
DROP FUNCTION IF EXISTS datatable_roles.sweep_step(jsonb);
