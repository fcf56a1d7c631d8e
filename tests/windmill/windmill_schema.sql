-- Minimal re-creation of Windmill's directory tables (workspace, usr, group_, usr_to_group,
-- folder, instance_group, email_to_igroup, password) as they stand after Windmill's SQL
-- migrations (github.com/windmill-labs/windmill, backend/migrations/), with their columns,
-- defaults, keys, indexes and row-level security.
--
-- ROLES: this file must not create roles. It assumes that the roles windmill_user and
-- windmill_admin already exist: the test creates them before loading this file. (In Windmill,
-- init-db-as-superuser.sql / the first migration create them; windmill_admin has BYPASSRLS
-- and is granted windmill_user. This file neither assumes nor sets those attributes.)
--
-- Sources, per table (migration file names; commit = the commit at which the file was read):
--   workspace      20220123221903_first.up.sql (2e132878e466dd8c5a58a15455919312490f8707)
--                  20220624170622_workspace_premium.up.sql (c22f0f27404d...) -- premium
--                  the `domain` column of first.up.sql was dropped by a later migration.
--   usr            20220123221903_first.up.sql: table, PK, CHECKs, index_usr_email, and
--                  created_at timestamptz NOT NULL DEFAULT now();
--                  a later migration widened email to varchar(255) and made proper_email
--                  case-insensitive (~*); another added added_via jsonb + GIN idx_usr_added_via.
--   group_         20220123221903_first.up.sql (table, proper_name, extra_perms, GIN index).
--   usr_to_group   20220123221903_first.up.sql (table, fk_group, RLS, both policies, no TO);
--                  a later migration (not located by file name) re-created both policies
--                  TO windmill_user; 20241006144414_admin_policy.up.sql
--                  (3788b647645806cad809a7f3b237d38211655fbd) added admin_policy.
--   folder         Dec-2022 migration that renames app_version.flow_id and creates folder with
--                  both GIN indexes (file name not resolved; it lies between
--                  20221203080006_apps_2 and 20221219051235_folders_2);
--                  20221219051235_folders_2.up.sql (4329d259887da71eb2b2a67f73947b0fbe9f3941):
--                  ENABLE RLS + FOR ALL policies (later dropped); the TO windmill_user migration
--                  above re-created them; a later migration (not located by file name) split them
--                  into the _select/_insert/_update/_delete policies below;
--                  20241006144414_admin_policy.up.sql: admin_policy;
--                  summary, edited_at, created_by: later ADD COLUMNs.
--   instance_group 20230720092702_instance_groups.up.sql
--                  (169d93e7b4ffdaeb6cf45d80f6f0feae7639cf7a) created (name PK, summary,
--                  external_id varchar(1000)); later migrations give the final columns
--                  name, summary, id varchar(1000), scim_display_name, external_id varchar(512).
--   email_to_igroup 20230720092702_instance_groups.up.sql: PRIMARY KEY (email, igroup).
--   password       20220123221903_first.up.sql; 20221214105402_first_time_users.up.sql
--                  (69001bd61abe2253b3e081583667d11c0aacc975) first_time_user; later migrations:
--                  email/name/company varchar(255), login_type enum -> varchar(50), username,
--                  devops.
-- The final state was cross-checked against a pg_dump-style dump of Windmill's full schema held
-- in the public code index (path not resolvable) and backend/summarized_schema.txt
-- (commit 017a82c697ff96eae6d69307ac3b925670718ab7).
--
-- Omitted on purpose:
--   workspace.parent_workspace_id, is_dev_workspace, dev_workspace_label (workspace forking /
--   dev-workspace migrations of 2025-2026, with index workspace_parent_idx, unique index
--   workspace_canonical_dev_idx and CHECK workspace_dev_requires_parent): not part of the
--   directory model and still changing upstream.
--   Triggers on workspace (workspace_premium_change_trigger, pg_notify only).
-- Nothing here references a table outside this set, so every FK is kept.
-- Policy expressions are Windmill's, written without the `public.` qualifier that some
-- migrations use (pg_dump shows the same expressions unqualified).

CREATE TABLE workspace (
    id varchar(50) PRIMARY KEY,
    name varchar(50) NOT NULL,
    owner varchar(50) NOT NULL,
    deleted boolean NOT NULL DEFAULT false,
    premium boolean NOT NULL DEFAULT false,
    CONSTRAINT proper_id CHECK (id ~ '^\w+(-\w+)*$')
);

CREATE TABLE usr (
    workspace_id varchar(50) NOT NULL REFERENCES workspace (id),
    username varchar(50) NOT NULL,
    email varchar(255) NOT NULL,
    is_admin boolean NOT NULL DEFAULT false,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    operator boolean NOT NULL DEFAULT false,
    disabled boolean NOT NULL DEFAULT false,
    role varchar(50),
    added_via jsonb,
    PRIMARY KEY (workspace_id, username),
    CONSTRAINT proper_username CHECK (username ~ '^[\w-]+$'),
    -- noqa: disable=LT05
    CONSTRAINT proper_email CHECK (
        email ~* '^(?:[a-z0-9!#$%&''*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&''*+/=?^_`{|}~-]+)*|"(?:[\x01-\x08\x0b\x0c\x0e-\x1f\x21\x23-\x5b\x5d-\x7f]|\\[\x01-\x09\x0b\x0c\x0e-\x7f])*")@(?:(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?|\[(?:(?:(2(5[0-5]|[0-4][0-9])|1[0-9][0-9]|[1-9]?[0-9]))\.){3}(?:(2(5[0-5]|[0-4][0-9])|1[0-9][0-9]|[1-9]?[0-9])|[a-z0-9-]*[a-z0-9]:(?:[\x01-\x08\x0b\x0c\x0e-\x1f\x21-\x5a\x53-\x7f]|\\[\x01-\x09\x0b\x0c\x0e-\x7f])+)\])$'
    )
    -- noqa: enable=LT05
);

CREATE INDEX index_usr_email ON usr (email);
CREATE INDEX idx_usr_added_via ON usr USING gin (added_via);

CREATE TABLE group_ (
    workspace_id varchar(50) NOT NULL REFERENCES workspace (id),
    name varchar(50) NOT NULL,
    summary text,
    extra_perms jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (workspace_id, name),
    CONSTRAINT proper_name CHECK (name ~ '^[\w-]+$')
);

CREATE INDEX group_extra_perms ON group_ USING gin (extra_perms);

CREATE TABLE usr_to_group (
    workspace_id varchar(50) NOT NULL REFERENCES workspace (id),
    group_ varchar(50) NOT NULL,
    usr varchar(50) NOT NULL DEFAULT 'ruben',
    CONSTRAINT fk_group FOREIGN KEY (workspace_id, group_)
    REFERENCES group_ (workspace_id, name),
    PRIMARY KEY (workspace_id, usr, group_)
);

CREATE TABLE folder (
    name varchar(255) NOT NULL,
    workspace_id varchar(50) NOT NULL,
    display_name varchar(100) NOT NULL,
    owners varchar(255)[] NOT NULL,
    extra_perms jsonb NOT NULL DEFAULT '{}',
    summary text,
    edited_at timestamp with time zone,
    created_by varchar(50),
    FOREIGN KEY (workspace_id) REFERENCES workspace (id) ON DELETE CASCADE,
    PRIMARY KEY (workspace_id, name)
);

CREATE INDEX folder_extra_perms ON folder USING gin (extra_perms);
CREATE INDEX folder_owners ON folder USING gin (owners);

-- No FK to usr, workspace or email_to_igroup in Windmill.
CREATE TABLE instance_group (
    name varchar(255) PRIMARY KEY,
    summary varchar(2000),
    id varchar(1000),
    scim_display_name varchar(255),
    external_id varchar(512)
);

-- No FK to instance_group or password in Windmill; no index besides the primary key.
CREATE TABLE email_to_igroup (
    email varchar(255) NOT NULL,
    igroup varchar(255) NOT NULL,
    PRIMARY KEY (email, igroup)
);

-- Instance-level users (not workspace-scoped); no RLS.
CREATE TABLE password (
    email varchar(255) PRIMARY KEY,
    password_hash varchar(100),
    login_type varchar(50) NOT NULL,
    super_admin boolean NOT NULL DEFAULT false,
    verified boolean NOT NULL DEFAULT false,
    name varchar(255),
    company varchar(255),
    first_time_user boolean NOT NULL DEFAULT false,
    username varchar(50),
    devops boolean NOT NULL DEFAULT false
);

-- Windmill's roles get every table through ALTER DEFAULT PRIVILEGES (and explicit GRANTs in
-- some migrations, e.g. GRANT ALL ON folder TO windmill_user / windmill_admin).
GRANT ALL ON workspace, usr, group_, usr_to_group, folder, instance_group, email_to_igroup,
password TO windmill_user, windmill_admin;

-- Row-level security. Of these eight tables only usr_to_group and folder have it in Windmill.

ALTER TABLE usr_to_group ENABLE ROW LEVEL SECURITY;

CREATE POLICY admin_policy ON usr_to_group TO windmill_admin USING (true);

CREATE POLICY see_extra_perms_user ON usr_to_group TO windmill_user
USING (true)
WITH CHECK ((EXISTS (
    SELECT 1
    FROM group_
    WHERE (
        ((usr_to_group.group_)::text = (group_.name)::text)
        AND ((usr_to_group.workspace_id)::text = (group_.workspace_id)::text)
        AND ((group_.extra_perms ->> concat('u/', current_setting('session.user'::text))))::boolean
    )
)));

CREATE POLICY see_extra_perms_groups ON usr_to_group TO windmill_user
USING (true)
WITH CHECK ((EXISTS (
    SELECT
        f.key,
        f.value
    FROM group_ AS g,
        LATERAL jsonb_each_text(g.extra_perms) AS f (key, value)
    WHERE (
        ((usr_to_group.group_)::text = (g.name)::text)
        AND ((usr_to_group.workspace_id)::text = (g.workspace_id)::text)
        AND (split_part(f.key, '/'::text, 1) = 'g'::text)
        AND (f.key = any(
            regexp_split_to_array(current_setting('session.pgroups'::text), ','::text)
        ))
        AND (f.value)::boolean
    )
)));

ALTER TABLE folder ENABLE ROW LEVEL SECURITY;

CREATE POLICY admin_policy ON folder TO windmill_admin USING (true);

CREATE POLICY see_extra_perms_user_select ON folder FOR SELECT TO windmill_user
USING (
    extra_perms ? concat('u/', current_setting('session.user'))
    OR concat('u/', current_setting('session.user')) = any(owners)
);

CREATE POLICY see_extra_perms_user_insert ON folder FOR INSERT TO windmill_user
WITH CHECK ((concat('u/', current_setting('session.user')) = any(owners)));

CREATE POLICY see_extra_perms_user_update ON folder FOR UPDATE TO windmill_user
USING ((concat('u/', current_setting('session.user')) = any(owners)));

CREATE POLICY see_extra_perms_user_delete ON folder FOR DELETE TO windmill_user
USING ((concat('u/', current_setting('session.user')) = any(owners)));

CREATE POLICY see_extra_perms_groups_select ON folder FOR SELECT TO windmill_user
USING (
    extra_perms ?| regexp_split_to_array(current_setting('session.pgroups'), ',')::text[]
    OR EXISTS (
        SELECT o FROM unnest(owners) AS o
        WHERE o = any(regexp_split_to_array(current_setting('session.pgroups'), ',')::text[])
    )
);

CREATE POLICY see_extra_perms_groups_insert ON folder FOR INSERT TO windmill_user
WITH CHECK (EXISTS (
    SELECT o FROM unnest(owners) AS o
    WHERE o = any(regexp_split_to_array(current_setting('session.pgroups'), ',')::text[])
));

CREATE POLICY see_extra_perms_groups_update ON folder FOR UPDATE TO windmill_user
USING (EXISTS (
    SELECT o FROM unnest(owners) AS o
    WHERE o = any(regexp_split_to_array(current_setting('session.pgroups'), ',')::text[])
));

CREATE POLICY see_extra_perms_groups_delete ON folder FOR DELETE TO windmill_user
USING (EXISTS (
    SELECT o FROM unnest(owners) AS o
    WHERE o = any(regexp_split_to_array(current_setting('session.pgroups'), ',')::text[])
));
