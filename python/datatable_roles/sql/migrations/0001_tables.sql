-- The package's tables, in the private schema datatable_roles.
-- Public entry points live in schema public (so they are callable unqualified);
-- everything they read or write is here, and only the package owner can reach it.

-- Nothing the owner creates is executable by PUBLIC unless granted explicitly.
ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM public;

CREATE SCHEMA datatable_roles;

-- One row: this instance's identity and its tunables. clock_offset is the
-- injected time of the tests (0 in production).
CREATE TABLE datatable_roles.settings (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    instance_id uuid NOT NULL DEFAULT gen_random_uuid(),
    clock_offset interval NOT NULL DEFAULT '0',
    touch_every interval NOT NULL DEFAULT '1 day',
    unused_after interval NOT NULL DEFAULT '30 days',
    scram_iterations integer NOT NULL DEFAULT 16
    CHECK (scram_iterations BETWEEN 1 AND 100000)
);

INSERT INTO datatable_roles.settings DEFAULT VALUES;

-- The directory: the one part a platform replaces with its own tables
-- (docs/integration.md).
CREATE TABLE datatable_roles.workspace (
    name text PRIMARY KEY
);

CREATE TABLE datatable_roles.workspace_user (
    workspace text NOT NULL REFERENCES datatable_roles.workspace ON DELETE CASCADE,
    username text NOT NULL,
    email text NOT NULL,
    is_admin boolean NOT NULL DEFAULT false,
    PRIMARY KEY (workspace, username)
);

CREATE UNIQUE INDEX workspace_user_email_key
ON datatable_roles.workspace_user (workspace, lower(email));

CREATE TABLE datatable_roles.group_member (
    workspace text NOT NULL,
    group_name text NOT NULL,
    username text NOT NULL,
    PRIMARY KEY (workspace, group_name, username),
    FOREIGN KEY (workspace, username)
    REFERENCES datatable_roles.workspace_user ON DELETE CASCADE
);

CREATE INDEX group_member_user_idx
ON datatable_roles.group_member (workspace, username);

-- principal is u/<username> or g/<group>; 'none' access is a deleted row.
CREATE TABLE datatable_roles.folder_access (
    workspace text NOT NULL REFERENCES datatable_roles.workspace ON DELETE CASCADE,
    folder text NOT NULL,
    principal text NOT NULL CHECK (principal ~ '^[ug]/'),
    access text NOT NULL CHECK (access IN ('owner', 'write', 'read')),
    PRIMARY KEY (workspace, folder, principal)
);

CREATE INDEX folder_access_principal_idx
ON datatable_roles.folder_access (workspace, principal);

-- The role catalog. Each role is a real login named exactly like the role;
-- password is that login's generated password (never shown to anyone but
-- the resolver's caller).
CREATE TABLE datatable_roles.catalog_role (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE,
    enabled boolean NOT NULL DEFAULT true,
    password text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Names differing only in case would be two Postgres roles that read alike.
CREATE UNIQUE INDEX catalog_role_lower_name_key
ON datatable_roles.catalog_role (lower(name));

-- A data table, or a reference to another workspace's data table
-- (governing_id set; then everything is decided by the governing entry).
-- default_role is 'admin', a catalog role name, or the no-default marker
-- '*none*' (not a valid role name: R12).
CREATE TABLE datatable_roles.datatable (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace text NOT NULL REFERENCES datatable_roles.workspace ON DELETE CASCADE,
    name text NOT NULL,
    governing_id bigint REFERENCES datatable_roles.datatable,
    dbname text,
    admin_login text,
    admin_password text,
    default_role text,
    admin_tenants text[] NOT NULL DEFAULT '{}',
    UNIQUE (workspace, name),
    CHECK (
        (governing_id IS null)
        = (
            dbname IS NOT null
            AND admin_login IS NOT null
            AND admin_password IS NOT null
            AND default_role IS NOT null
        )
    )
);

CREATE INDEX datatable_governing_idx ON datatable_roles.datatable (governing_id);

CREATE INDEX datatable_dbname_idx ON datatable_roles.datatable (dbname);

-- The role map: catalog roles usable on a data table, with their tenants.
CREATE TABLE datatable_roles.datatable_role (
    datatable_id bigint NOT NULL
    REFERENCES datatable_roles.datatable ON DELETE CASCADE,
    role_id bigint NOT NULL REFERENCES datatable_roles.catalog_role ON DELETE CASCADE,
    tenants text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (datatable_id, role_id)
);

CREATE INDEX datatable_role_role_idx ON datatable_roles.datatable_role (role_id);

-- One row per set login of this instance (SPEC section 6). An empty password
-- means: take the login back (new password, LOGIN) on next use.
CREATE TABLE datatable_roles.datatable_role_set (
    login text PRIMARY KEY,
    role_ids bigint[] NOT NULL,
    password text NOT NULL,
    created_at timestamptz NOT NULL,
    last_used_at timestamptz NOT NULL
);

CREATE INDEX datatable_role_set_roles_idx
ON datatable_roles.datatable_role_set USING gin (role_ids);

-- What a job runs as and who is watching, written once at start.
CREATE TABLE datatable_roles.job_perms (
    job_id uuid PRIMARY KEY,
    workspace text NOT NULL,
    permissioned_as text NOT NULL,
    email text NOT NULL,
    is_admin boolean NOT NULL,
    groups text[] NOT NULL,
    folders text[] NOT NULL,
    end_user_email text,
    origin text NOT NULL,
    token_job_id uuid,
    created_at timestamptz NOT NULL DEFAULT now()
);
