-- agentrt schema version 14: MCP capability sessions, and the JSON Schema
-- of an elicitation action.
--
-- A capability session is the runtime's connection to one MCP server for
-- one agentrt session, upserted whenever its status changes (a handful of
-- times in its life), so it can afford an index per list: a session's
-- capability sessions are a range of capability_sessions_session, a
-- tenant's of capability_sessions_tenant, both in list order (created_at,
-- id). Times are unix nanoseconds, 0 for none (expires_at).
--
-- capability_runs records each run that used a capability session, once
-- (the primary key ignores a repeat). A read shows a capability session's
-- last runs: the primary key's range of its runs, read newest first
-- through capability_runs_at, stops after them however many there are.
--
-- actions.requested_schema is an elicitation's JSON Schema, NULL for
-- every other action.
CREATE TABLE capability_sessions (
    id                TEXT    NOT NULL PRIMARY KEY,
    tenant_id         TEXT    NOT NULL,
    principal_id      TEXT    NOT NULL,
    session_id        TEXT    NOT NULL,
    server            TEXT    NOT NULL,
    transport         TEXT    NOT NULL,
    protocol_version  TEXT    NOT NULL,
    server_session_id TEXT    NOT NULL,
    status            TEXT    NOT NULL,
    generation        INTEGER NOT NULL,
    expires_at        INTEGER NOT NULL,
    resume_cursor     TEXT    NOT NULL,
    error             TEXT    NOT NULL,
    runtime_id        TEXT    NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX capability_sessions_session ON capability_sessions (tenant_id, session_id, created_at, id);
CREATE INDEX capability_sessions_tenant ON capability_sessions (tenant_id, created_at, id);

CREATE TABLE capability_runs (
    tenant_id             TEXT    NOT NULL,
    capability_session_id TEXT    NOT NULL,
    run_id                TEXT    NOT NULL,
    principal_id          TEXT    NOT NULL,
    at                    INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, capability_session_id, run_id)
) WITHOUT ROWID;
CREATE INDEX capability_runs_at ON capability_runs (tenant_id, capability_session_id, at, run_id);

ALTER TABLE actions ADD COLUMN requested_schema BLOB;
