-- Shared helpers: argument checks, the package clock, passwords and SCRAM
-- verifiers, set login names, and the fault points of the crash tests.
-- Owned by the package owner; nothing here is executable by anyone else.

-- The no-default marker (R12): deliberately not a valid role name.
CREATE OR REPLACE FUNCTION datatable_roles.no_default() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '*none*';

-- Time as the package sees it: now() plus the injected offset of the tests
-- (settings.clock_offset, 0 in production). The one clock every path reads.
-- A one-row SQL function without a SET clause, so that the planner inlines it
-- into the query that reads it: `FROM datatable_roles.clock_now() AS c (now)`,
-- or `(SELECT datatable_roles.clock_now())` as a value.
CREATE OR REPLACE FUNCTION datatable_roles.clock_now()
RETURNS SETOF timestamptz
LANGUAGE sql STABLE ROWS 1
AS $$
    SELECT now() + s.clock_offset FROM datatable_roles.settings AS s
$$;

-- PostgreSQL 16 changed role grants (ADMIN OPTION to grant, per-grant INHERIT
-- and SET, no naming of attributes one lacks): the few places that differ ask.
CREATE OR REPLACE FUNCTION datatable_roles.pg16_or_later()
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT current_setting('server_version_num')::integer >= 160000
$$;

-- Raise 22004 when a required argument is NULL.
CREATE OR REPLACE FUNCTION datatable_roles.require(p_value anyelement, p_argument text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF p_value IS NULL THEN
        RAISE EXCEPTION 'argument % must not be NULL', p_argument
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
END;
$$;

-- Names of users, groups and folders, as platforms make them (Windmill's
-- are ^[\w-]+$ with Unicode \w: 'josé'): 1 to 255 characters, each an ASCII
-- letter, digit, '_', '-' or '.' (not first), or a character above U+00A0
-- that is not a space, a control, a format or bidi control, a line
-- separator or a surrogate. The same rule, whatever the database's locale
-- (\w follows it). Workspace and data table names stay ASCII (p_ascii).
CREATE OR REPLACE FUNCTION datatable_roles.name_ok(p_value text, p_ascii boolean DEFAULT false)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_ascii THEN p_value ~ '^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,254}$'
        ELSE p_value ~ '^[^.].{0,254}$'
            AND p_value ~ '^[A-Za-z0-9_.\-\u00a1-\u00ac\u00ae-\u167f\u1681-\u180d\u180f-\u1fff\u2010-\u2027\u2030-\u205e\u2070-\u2fff\u3001-\ud7ff\ue000-\ufefe\uff00-\uffef\U00010000-\U0010ffff]+$'
    END
$$;

CREATE OR REPLACE FUNCTION datatable_roles.check_name(p_kind text, p_value text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    PERFORM datatable_roles.require(p_value, p_kind);
    IF p_kind IN ('workspace', 'datatable') THEN
        IF NOT datatable_roles.name_ok(p_value, true) THEN
            RAISE EXCEPTION 'invalid % name %', p_kind, quote_literal(left(p_value, 80))
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Use 1 to 255 ASCII letters, digits, ''_'', ''-'' or ''.'' (not first).';
        END IF;
    ELSIF NOT datatable_roles.name_ok(p_value) THEN
        RAISE EXCEPTION 'invalid % name %', p_kind, quote_literal(left(p_value, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use 1 to 255 letters or digits of any script, ''_'', ''-'' or ''.'' (not first); no spaces or control characters.';
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION datatable_roles.email_ok(p_email text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT octet_length(p_email) <= 320 AND p_email ~ '^[^[:space:]@]+@[^[:space:]@]+$'
$$;

CREATE OR REPLACE FUNCTION datatable_roles.check_email(p_email text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    PERFORM datatable_roles.require(p_email, 'email');
    IF NOT datatable_roles.email_ok(p_email) THEN
        RAISE EXCEPTION 'invalid email %', quote_literal(left(p_email, 80))
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END;
$$;

-- The name of p_names nearest to p_name (the same but for case, then a
-- prefix, then an edit distance of at most 2, all case-insensitive), for
-- "did you mean" hints on refusal paths only. NULL when none is near.
CREATE OR REPLACE FUNCTION datatable_roles.nearest_name(p_name text, p_names text[])
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    a text := lower(left(p_name, 80));
    b text;
    candidate text;
    best text;
    best_distance integer := 3;
    prev integer [];
    cur integer [];
    i integer;
    j integer;
BEGIN
    FOREACH candidate IN ARRAY coalesce(p_names, '{}') LOOP
        b := lower(left(candidate, 80));
        IF a = b THEN
            cur := array[0];
        ELSIF starts_with(b, a) OR starts_with(a, b) THEN
            cur := array[1];  -- a prefix counts as near
        ELSE
            prev := ARRAY(SELECT generate_series(0, length(b)));
            FOR i IN 1..length(a) LOOP
                cur := array[i];
                FOR j IN 1..length(b) LOOP
                    cur := cur || least(prev[j + 1] + 1, cur[j] + 1,
                        prev[j] + CASE WHEN substr(a, i, 1) = substr(b, j, 1) THEN 0 ELSE 1 END);
                END LOOP;
                prev := cur;
            END LOOP;
            cur := array[prev[length(b) + 1]];
        END IF;
        IF cur[1] < best_distance THEN
            best_distance := cur[1];
            best := candidate;
        END IF;
    END LOOP;
    RETURN best;
END;
$$;

-- Tenant keys (docs/rules.md): u/<user>, g/<group>, f/<folder> or '*'.
-- Anything else is rejected when written, never ignored.
CREATE OR REPLACE FUNCTION datatable_roles.check_tenant_key(p_key text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF p_key IS NULL THEN
        RAISE EXCEPTION 'a tenant key must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_key <> '*' AND NOT (p_key ~ '^[ugf]/' AND datatable_roles.name_ok(substr(p_key, 3))) THEN
        RAISE EXCEPTION 'invalid tenant key %', quote_literal(left(p_key, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A tenant key is u/<username>, g/<group>, f/<folder> or *.';
    END IF;
END;
$$;

-- Names of data table databases: they go into connection strings and
-- statements, so nothing libpq, a shell or a log reader could misread:
-- 1 to 63 ASCII letters, digits, '_', '.', '-', not starting with '.' or '-'.
CREATE OR REPLACE FUNCTION datatable_roles.check_dbname(p_dbname text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    PERFORM datatable_roles.require(p_dbname, 'dbname');
    IF p_dbname !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$' THEN
        RAISE EXCEPTION 'invalid database name %', quote_literal(left(p_dbname, 80))
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A data table database name is 1 to 63 ASCII letters, digits, ''_'', ''.'' or ''-'' (not first).';
    END IF;
END;
$$;

-- A libpq connection string value: in single quotes, with backslash and
-- quote escaped by a backslash (quote_literal's E'...' form is not libpq's).
CREATE OR REPLACE FUNCTION datatable_roles.conninfo_value(p_value text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT '''' || replace(replace(p_value, '\', '\\'), '''', '\''') || ''''
$$;

-- The connection string of a session the package opens in a database of
-- this cluster (settings.link_host, this server's port).
CREATE OR REPLACE FUNCTION datatable_roles.conninfo_for(
    p_dbname text, p_login text, p_password text
)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT format('host=%s port=%s dbname=%s user=%s password=%s',
        datatable_roles.conninfo_value(s.link_host),
        datatable_roles.conninfo_value(current_setting('port')),
        datatable_roles.conninfo_value(p_dbname),
        datatable_roles.conninfo_value(p_login),
        datatable_roles.conninfo_value(p_password))
    FROM datatable_roles.settings AS s
$$;

-- The instance's login group: every login the package hands to a job is a
-- member (NOLOGIN, no privileges), for pg_hba.conf rules (docs/trust.md).
CREATE OR REPLACE FUNCTION datatable_roles.login_group()
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT s.login_group FROM datatable_roles.settings AS s
$$;

-- 64 hex digits from two random UUIDs: 244 bits from pg_strong_random.
CREATE OR REPLACE FUNCTION datatable_roles.new_password() RETURNS text
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
    SELECT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
$$;

-- HMAC's inner and outer keys (RFC 2104): the key padded to 64 bytes, XORed
-- with 0x36 and with 0x5c eight bytes at a time (as bigints), in one
-- statement instead of 128 set_byte calls.
CREATE OR REPLACE FUNCTION datatable_roles.hmac_keys(
    p_key bytea, OUT inner_key bytea, OUT outer_key bytea
)
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT
        decode(string_agg(lpad(to_hex(w.word # 3906369333256140342), 16, '0'), '' ORDER BY w.j), 'hex'),
        decode(string_agg(lpad(to_hex(w.word # 6655295901103053916), 16, '0'), '' ORDER BY w.j), 'hex')
    FROM (
        SELECT CASE WHEN length(p_key) > 64 THEN sha256(p_key) ELSE p_key END AS k
    ) AS x
    CROSS JOIN LATERAL (
        SELECT j, ('x' || encode(substring(x.k || decode(repeat('00', 64 - length(x.k)), 'hex')
            FROM 1 + 8 * j FOR 8), 'hex'))::bit(64)::bigint AS word
        FROM generate_series(0, 7) AS j
    ) AS w
$$;

-- HMAC-SHA-256 (RFC 2104) over the core sha256(), so no extension is needed.
CREATE OR REPLACE FUNCTION datatable_roles.hmac_sha256(p_key bytea, p_message bytea)
RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT sha256(h.outer_key || sha256(h.inner_key || p_message))
    FROM datatable_roles.hmac_keys(p_key) AS h
$$;

-- A SCRAM-SHA-256 verifier (RFC 5802/7677) for p_password, computed here so
-- that the plaintext never appears in statement text. Generated passwords
-- carry over 128 random bits, so a low iteration count loses nothing and
-- makes every connection cheaper (settings.scram_iterations).
CREATE OR REPLACE FUNCTION datatable_roles.scram_verifier(p_password text, p_iterations integer)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
DECLARE
    secret bytea := convert_to(p_password, 'UTF8');
    salt bytea := decode(replace(gen_random_uuid()::text, '-', ''), 'hex');
    inner_key bytea;
    outer_key bytea;
    u bytea;
    acc bit(256);
    salted bytea;
BEGIN
    -- PBKDF2-HMAC-SHA-256 with the key's padded blocks computed once (the key,
    -- the password, is the same in every iteration) and the running XOR kept
    -- as a bit string: a few C calls per iteration instead of byte loops.
    SELECT h.inner_key, h.outer_key INTO inner_key, outer_key
    FROM datatable_roles.hmac_keys(secret) AS h;
    u := sha256(outer_key || sha256(inner_key || salt || '\x00000001'::bytea));
    acc := ('x' || encode(u, 'hex'))::bit(256);
    FOR i IN 2..p_iterations LOOP
        u := sha256(outer_key || sha256(inner_key || u));
        acc := acc # ('x' || encode(u, 'hex'))::bit(256);
    END LOOP;
    salted := decode((
        SELECT string_agg(lpad(to_hex(substring(acc FROM 1 + 64 * j FOR 64)::bigint), 16, '0'), ''
            ORDER BY j)
        FROM generate_series(0, 3) AS j
    ), 'hex');
    RETURN format(
        'SCRAM-SHA-256$%s:%s$%s:%s',
        p_iterations,
        encode(salt, 'base64'),
        encode(sha256(datatable_roles.hmac_sha256(salted, convert_to('Client Key', 'UTF8'))), 'base64'),
        encode(datatable_roles.hmac_sha256(salted, convert_to('Server Key', 'UTF8')), 'base64')
    );
END;
$$;

-- The verifier of a new password, at this instance's iteration count.
CREATE OR REPLACE FUNCTION datatable_roles.verifier_for(p_password text) RETURNS text
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
    SELECT datatable_roles.scram_verifier(p_password, s.scram_iterations)
    FROM datatable_roles.settings AS s
$$;

-- A fault point the crash tests arm in their own session:
--   SET datatable_roles.fault = '<point>'; SET datatable_roles.fault_action = 'error' | 'wait'
-- 'wait' blocks on an advisory lock the test holds, so that it can terminate
-- this backend exactly here. Unarmed, it costs one setting lookup.
CREATE OR REPLACE FUNCTION datatable_roles.fault_point(p_point text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, datatable_roles, pg_temp
AS $$
BEGIN
    IF current_setting('datatable_roles.fault', true) IS DISTINCT FROM p_point THEN
        RETURN;
    END IF;
    IF current_setting('datatable_roles.fault_action', true) = 'wait' THEN
        PERFORM pg_advisory_lock(hashtextextended('datatable_roles.fault', 0));
        PERFORM pg_advisory_unlock(hashtextextended('datatable_roles.fault', 0));
    ELSE
        RAISE EXCEPTION 'fault injected at %', p_point USING ERRCODE = 'internal_error';
    END IF;
END;
$$;
