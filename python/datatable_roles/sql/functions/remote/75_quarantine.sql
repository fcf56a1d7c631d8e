-- Objects left behind (docs/lifecycle.md, docs/trust.md): what a swept login or
-- a dropped role owned in a data table's database passes to that database's
-- admin login (REASSIGN OWNED), kept but inert first.

-- SQL text for a data table's database, run there through dblink by the link
-- login, which the caller follows with `; REASSIGN OWNED BY p_victim TO
-- p_heir; DROP OWNED BY p_victim` in the same implicit transaction: the
-- script 'quarantine' (sql/functions/remote/scripts/quarantine.sql, in
-- remote_script), which says what it does. The role names reach it as
-- transaction-local settings (set_config, read back with current_setting),
-- each a literal (format %L) of its own: they never enter the script's text.
CREATE OR REPLACE FUNCTION datatable_roles.quarantine_statements(p_victim text, p_heir text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    script text;
BEGIN
    PERFORM datatable_roles.require(p_victim, 'victim');
    PERFORM datatable_roles.require(p_heir, 'heir');
    IF p_victim = p_heir THEN
        RAISE EXCEPTION 'the victim and the heir must differ: %', quote_ident(p_victim)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    script := datatable_roles.remote_script_body('quarantine');
    RETURN format('SET LOCAL search_path = pg_catalog, pg_temp; '
        'SELECT pg_catalog.set_config(%L, %L, true), pg_catalog.set_config(%L, %L, true);%s',
        'datatable_roles.quarantine_victim', p_victim, 'datatable_roles.quarantine_heir', p_heir,
        E'\n' || rtrim(script, E' \n;'));
END;
$$;
