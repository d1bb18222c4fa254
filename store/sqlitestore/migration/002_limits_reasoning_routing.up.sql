-- agentrt schema version 2: reasoning blocks on messages, routing on runs,
-- budget limits, and totals of usage by tenant.
--
-- Reasoning and routing are JSON text like the other structured columns,
-- NULL when a message has no reasoning or a run was not routed yet; rows
-- written before this version read back as having none.
--
-- A limit is set through the control plane for one session or a whole
-- tenant and replaced whole, so its key is (tenant_id, scope, scope_id) and
-- the table is WITHOUT ROWID like the other text-keyed tables.
--
-- Usage totals sum the usage column of a tenant's runs started since some
-- time. runs_tenant_started serves them (and tenant-wide run lists); a
-- session's total uses runs_session. The run rewrite after every step
-- leaves tenant_id and started_at alone, so the index costs a page when a
-- run is created, not per step.

ALTER TABLE messages ADD COLUMN reasoning TEXT;

ALTER TABLE runs ADD COLUMN routing TEXT;
CREATE INDEX runs_tenant_started ON runs (tenant_id, started_at);

CREATE TABLE limits (
    tenant_id    TEXT    NOT NULL,
    scope        TEXT    NOT NULL,
    scope_id     TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    max_tokens   INTEGER NOT NULL,
    max_cost_usd REAL    NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, scope, scope_id)
) WITHOUT ROWID;
