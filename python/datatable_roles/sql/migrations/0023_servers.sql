-- depends: 0022_named_folders_and_login_keepers
-- functions: 6635b128202eaaf6e9914b2bb20b2b8a3aa1a8ec26a61e77b227775c324bade2
-- Data tables on other PostgreSQL servers (issue 25, SPEC section 17), part 1.
-- A server is registered with its connection parameters and a manager login
-- there (NOSUPERUSER CREATEROLE); the metadata database's own cluster is the
-- server `local`, made here, and every existing data table and login is on it.
-- server_role notes which catalog roles exist on which other server;
-- server_change holds the role statements a server has not applied yet (it
-- was unreachable), in order: while a server has one, resolves for its data
-- tables refuse (docs/servers.md).
CREATE TABLE datatable_roles.server (
    name text NOT NULL,
    host text,
    port integer,
    sslmode text,
    maintenance_db text,
    manager_login text,
    manager_password text,
    registered_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT server_pkey PRIMARY KEY (name),
    -- local is this cluster, reached as today; every other server has all of it.
    CONSTRAINT server_check CHECK (
        (name = 'local') = (host IS NULL)
        AND (host IS NULL) = (port IS NULL)
        AND (host IS NULL) = (sslmode IS NULL)
        AND (host IS NULL) = (maintenance_db IS NULL)
        AND (host IS NULL) = (manager_login IS NULL)
        AND (host IS NULL) = (manager_password IS NULL)
    ),
    CONSTRAINT server_port_check CHECK (port BETWEEN 1 AND 65535)
);

INSERT INTO datatable_roles.server (name) VALUES ('local');

ALTER TABLE datatable_roles.datatable
ADD COLUMN server text NOT NULL DEFAULT 'local'
CONSTRAINT datatable_server_fkey REFERENCES datatable_roles.server (name);

ALTER TABLE datatable_roles.datatable_role_set
ADD COLUMN server text NOT NULL DEFAULT 'local';

CREATE TABLE datatable_roles.server_role (
    server text NOT NULL,
    role_id bigint NOT NULL,
    CONSTRAINT server_role_pkey PRIMARY KEY (server, role_id),
    CONSTRAINT server_role_server_fkey FOREIGN KEY (server)
    REFERENCES datatable_roles.server (name),
    CONSTRAINT server_role_role_id_fkey FOREIGN KEY (role_id)
    REFERENCES datatable_roles.catalog_role (id) ON DELETE CASCADE
);

CREATE TABLE datatable_roles.server_change (
    id bigint GENERATED ALWAYS AS IDENTITY,
    server text NOT NULL,
    dbname text,
    as_admin boolean NOT NULL DEFAULT FALSE,
    statement text NOT NULL,
    what text NOT NULL,
    queued_at timestamptz NOT NULL,
    tries integer NOT NULL DEFAULT 0,
    last_error text,
    CONSTRAINT server_change_pkey PRIMARY KEY (id),
    CONSTRAINT server_change_server_fkey FOREIGN KEY (server)
    REFERENCES datatable_roles.server (name)
);

CREATE INDEX server_change_server_idx ON datatable_roles.server_change (server, id);

-- register_datatable takes the server as a sixth argument (default local).
DROP FUNCTION IF EXISTS public.register_datatable(text, text, text, text, text);
-- The decision carries the data table's server; resolve_datatable_role
-- returns where to connect (host, port, sslmode); make_login takes the server.
DROP FUNCTION IF EXISTS datatable_roles.decide_entry(uuid, text);
ALTER TYPE datatable_roles.decision ADD ATTRIBUTE server text;
DROP FUNCTION IF EXISTS public.resolve_datatable_role(uuid, text, text, boolean);
DROP FUNCTION IF EXISTS datatable_roles.make_login(text, text, bigint[]);
-- These take the server too (a database is named by server and name).
DROP FUNCTION IF EXISTS datatable_roles.ensure_set_login(text, bigint[]);
DROP FUNCTION IF EXISTS datatable_roles.lock_roles_still_usable(text, bigint[]);
DROP FUNCTION IF EXISTS datatable_roles.retire_logins_holding(bigint, text);
DROP FUNCTION IF EXISTS datatable_roles.is_sweepable(
    timestamptz, text, text, bigint[], timestamptz
);
