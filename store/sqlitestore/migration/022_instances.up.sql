-- agentrt schema version 22: named agent instances.
--
-- instances holds runtype.Instance, written with optimistic concurrency
-- (version; see store.Batch.Instances). A name is unique in its tenant;
-- the tool finds an instance by its session. Times are unix nanoseconds,
-- 0 for none.
CREATE TABLE instances (
    id             TEXT    NOT NULL PRIMARY KEY,
    tenant_id      TEXT    NOT NULL,
    principal_id   TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    agent          TEXT    NOT NULL,
    session_id     TEXT    NOT NULL,
    state          TEXT    NOT NULL,
    state_version  INTEGER NOT NULL,
    schema_version INTEGER NOT NULL,
    version        INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    last_woken_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX instances_name ON instances (tenant_id, name);
CREATE INDEX instances_session ON instances (tenant_id, session_id);
CREATE INDEX instances_agent ON instances (tenant_id, agent, id);
