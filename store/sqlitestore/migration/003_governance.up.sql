-- agentrt schema version 3: governance. Actions a person must decide,
-- the grants their approvals add, each session's permission mode, and the
-- evidence receipts that chain a session's sealed events.
--
-- Actions are written when the policy asks, and rewritten once, when they
-- are resolved (only while pending: the driver's UPDATE checks the
-- status), so they can afford an index per list filter; ids sort by
-- creation, and each index ends in the primary key, so a list reads newest
-- first without sorting. decisions and rule_ids are JSON arrays of
-- strings, resolution a JSON object, NULL while pending.
--
-- A grant without a session applies in every session: session_id is ''.
--
-- A receipt body is the sealed event's data, byte for byte, often larger
-- than a WITHOUT ROWID row should be (it would spill to overflow pages), so
-- receipts is a rowid table like events. Its primary key numbers a
-- session's chain: a second process appending to the same chain conflicts
-- instead of forking it. The writer reads a chain's last (seq, hash)
-- through the key, once per session per batch.

ALTER TABLE sessions ADD COLUMN policy_mode TEXT NOT NULL DEFAULT '';

CREATE TABLE actions (
    id               TEXT    NOT NULL PRIMARY KEY,
    tenant_id        TEXT    NOT NULL,
    principal_id     TEXT    NOT NULL,
    session_id       TEXT    NOT NULL,
    thread_id        TEXT    NOT NULL,
    turn_id          TEXT    NOT NULL,
    task_id          TEXT    NOT NULL,
    run_id           TEXT    NOT NULL,
    tool_call_id     TEXT    NOT NULL,
    type             TEXT    NOT NULL,
    tool_name        TEXT    NOT NULL,
    input_preview    TEXT    NOT NULL,
    arguments_sha256 TEXT    NOT NULL,
    prompt           TEXT    NOT NULL,
    decisions        TEXT    NOT NULL,
    reason_code      TEXT    NOT NULL,
    rule_ids         TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    resolution       TEXT
) WITHOUT ROWID;
CREATE INDEX actions_tenant_status ON actions (tenant_id, status);
CREATE INDEX actions_tenant_session ON actions (tenant_id, session_id);
CREATE INDEX actions_tenant_run ON actions (tenant_id, run_id);
-- The expiry sweep lists pending actions across tenants.
CREATE INDEX actions_status ON actions (status, id);

CREATE TABLE policy_grants (
    id           TEXT    NOT NULL PRIMARY KEY,
    tenant_id    TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    session_id   TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    tool_name    TEXT    NOT NULL,
    action_id    TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX policy_grants_tenant_session ON policy_grants (tenant_id, session_id);

CREATE TABLE receipts (
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    event_id   TEXT    NOT NULL,
    event_type TEXT    NOT NULL,
    body       BLOB    NOT NULL,
    prev_hash  TEXT    NOT NULL,
    hash       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id, seq)
);
