-- agentrt PostgreSQL schema version 1: the SQLite schema after its
-- migration 24 (store/sqlitestore/migration/001…024), in PostgreSQL.
--
-- The tables, columns (in the same order), keys, unique constraints and
-- indexes are SQLite's, so the SQL core of package sqlitestore and its row
-- codec run on either; read the SQLite migrations for what each table
-- holds and why. The translation:
--
--   - INTEGER is BIGINT, TEXT is TEXT, BLOB is BYTEA, REAL is DOUBLE
--     PRECISION. Booleans stay BIGINT 0/1 and times BIGINT unix
--     nanoseconds (0 for none), as in SQLite.
--   - Every TEXT column compares byte by byte (COLLATE "C"), as SQLite's
--     BINARY does, whatever the database's default collation: ids sort,
--     page and compare the same on both stores.
--   - A column that is SQLite's rowid (events.cursor, event_scopes.id,
--     memories.seq) is an identity column. Unlike a rowid it never hands
--     a number out twice, even after the largest row is deleted.
--   - SQLite's secondary indexes on a WITHOUT ROWID table end in the
--     table's primary key, which the queries' order relies on (a list by
--     tenant and status reads newest first without sorting); here the key
--     is written out at the end of each such index. Unique indexes are as
--     they are.
--   - The triggers that keep the projections (task_queue_counts and
--     task_queue_total, thread_totals, thread_turn_counts,
--     action_counts) are PL/pgSQL functions with the SQLite trigger's
--     name, fired by row-level triggers with the same events and WHEN.
--   - memories_fts, SQLite's contentless FTS5 index of each memory's
--     words (store.MemoryWords), is a table of one tsvector per memory
--     under its seq (rowid), with a GIN index; like FTS5's it keeps no
--     copy of the text. Its words are lexemes as they are (no parser, no
--     dictionary):
--       insert  INSERT INTO memories_fts (rowid, words)
--                   VALUES ($1, array_to_tsvector(string_to_array($2, ' ')))
--       delete  DELETE FROM memories_fts WHERE rowid = $1
--       search  SELECT rowid FROM memories_fts WHERE words @@ $1::tsquery
--               with $1 one word, unquoted (store.MemoryWords yields
--               lowercased letters and digits only, which tsquery's input
--               takes as one lexeme).
--
-- The migration runner's table (agentrt_schema_migrations) is not here:
-- the runner creates it.

CREATE TABLE sessions (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id    TEXT COLLATE "C" NOT NULL,
    principal_id TEXT COLLATE "C" NOT NULL,
    agent        TEXT COLLATE "C" NOT NULL,
    title        TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    policy_mode  TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX sessions_tenant_created ON sessions (tenant_id, created_at, id);

CREATE TABLE threads (
    id               TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    session_id       TEXT COLLATE "C" NOT NULL,
    tenant_id        TEXT COLLATE "C" NOT NULL,
    principal_id     TEXT COLLATE "C" NOT NULL,
    created_at       BIGINT  NOT NULL,
    lineage          TEXT COLLATE "C",
    source_thread_id TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX threads_session ON threads (session_id, id);
CREATE INDEX threads_source ON threads (source_thread_id, id) WHERE source_thread_id <> '';

CREATE TABLE turns (
    id              TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    session_id      TEXT COLLATE "C" NOT NULL,
    thread_id       TEXT COLLATE "C" NOT NULL,
    tenant_id       TEXT COLLATE "C" NOT NULL,
    principal_id    TEXT COLLATE "C" NOT NULL,
    agent           TEXT COLLATE "C" NOT NULL,
    idempotency_key TEXT COLLATE "C" NOT NULL,
    input           TEXT COLLATE "C" NOT NULL,
    status          TEXT COLLATE "C" NOT NULL,
    status_reason   TEXT COLLATE "C" NOT NULL,
    result          TEXT COLLATE "C" NOT NULL,
    failure         TEXT COLLATE "C",
    task_id         TEXT COLLATE "C" NOT NULL,
    run_id          TEXT COLLATE "C" NOT NULL,
    trace_id        TEXT COLLATE "C" NOT NULL,
    usage           TEXT COLLATE "C" NOT NULL,
    created_at      BIGINT  NOT NULL,
    started_at      BIGINT  NOT NULL,
    ended_at        BIGINT  NOT NULL,
    kind            TEXT COLLATE "C" NOT NULL DEFAULT '',
    rolled_back_at  BIGINT  NOT NULL DEFAULT 0,
    overrides       TEXT COLLATE "C"
);
CREATE INDEX turns_tenant ON turns (tenant_id, id);
CREATE INDEX turns_session ON turns (session_id, id);
CREATE UNIQUE INDEX turns_idempotency_key ON turns (tenant_id, idempotency_key) WHERE idempotency_key <> '';
CREATE INDEX turns_thread_open ON turns (thread_id, id) WHERE status <> 'completed';
CREATE INDEX turns_tenant_status ON turns (tenant_id, status, id);
CREATE INDEX turns_rolled_back ON turns (thread_id, id)
    WHERE rolled_back_at <> 0 OR (status = 'cancelled' AND status_reason = 'rolled_back');

CREATE TABLE tasks (
    id               TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    session_id       TEXT COLLATE "C" NOT NULL,
    thread_id        TEXT COLLATE "C" NOT NULL,
    turn_id          TEXT COLLATE "C" NOT NULL,
    tenant_id        TEXT COLLATE "C" NOT NULL,
    principal_id     TEXT COLLATE "C" NOT NULL,
    objective        TEXT COLLATE "C" NOT NULL,
    status           TEXT COLLATE "C" NOT NULL,
    status_reason    TEXT COLLATE "C" NOT NULL,
    current_run_id   TEXT COLLATE "C" NOT NULL,
    result           TEXT COLLATE "C" NOT NULL,
    failure          TEXT COLLATE "C",
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL,
    started_at       BIGINT  NOT NULL,
    ended_at         BIGINT  NOT NULL,
    attempts         BIGINT  NOT NULL DEFAULT 0,
    queued_at        BIGINT  NOT NULL DEFAULT 0,
    due_at           BIGINT  NOT NULL DEFAULT 0,
    lease_owner      TEXT COLLATE "C" NOT NULL DEFAULT '',
    lease_epoch      BIGINT  NOT NULL DEFAULT 0,
    lease_expires_at BIGINT  NOT NULL DEFAULT 0,
    control          TEXT COLLATE "C" NOT NULL DEFAULT '',
    parent_task_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    root_task_id     TEXT COLLATE "C" NOT NULL DEFAULT '',
    depth            BIGINT  NOT NULL DEFAULT 0,
    subagent_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    job_id           TEXT COLLATE "C" NOT NULL DEFAULT '',
    job_item_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    schedule_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    fire_id          TEXT COLLATE "C" NOT NULL DEFAULT '',
    workflow_run_id  TEXT COLLATE "C" NOT NULL DEFAULT '',
    workflow_step    TEXT COLLATE "C" NOT NULL DEFAULT '',
    -- Makes lease_epoch a key column: a claim, which moves the epoch,
    -- then waits for a fence (FOR KEY SHARE) under way, while a renewal,
    -- which does not, never waits for one (see pgstore.Store.ApplyLease).
    CONSTRAINT tasks_lease_key UNIQUE (id, lease_epoch)
);
CREATE INDEX tasks_session ON tasks (session_id, id);
CREATE INDEX tasks_due ON tasks (due_at, queued_at, id) WHERE due_at <> 0;
CREATE INDEX tasks_due_started ON tasks (due_at, queued_at, id) WHERE due_at <> 0 AND current_run_id <> '';
CREATE INDEX tasks_thread ON tasks (thread_id, queued_at, id);
CREATE INDEX tasks_open ON tasks (thread_id, queued_at, id)
    WHERE status NOT IN ('completed', 'failed', 'cancelled', 'timed_out', 'lost', 'blocked');
CREATE INDEX tasks_parent ON tasks (tenant_id, parent_task_id, id) WHERE parent_task_id <> '';

CREATE TABLE runs (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    task_id      TEXT COLLATE "C" NOT NULL,
    turn_id      TEXT COLLATE "C" NOT NULL,
    session_id   TEXT COLLATE "C" NOT NULL,
    thread_id    TEXT COLLATE "C" NOT NULL,
    tenant_id    TEXT COLLATE "C" NOT NULL,
    principal_id TEXT COLLATE "C" NOT NULL,
    attempt      BIGINT  NOT NULL,
    status       TEXT COLLATE "C" NOT NULL,
    failure      TEXT COLLATE "C",
    hops         BIGINT  NOT NULL,
    tool_hops    BIGINT  NOT NULL,
    usage        TEXT COLLATE "C" NOT NULL,
    started_at   BIGINT  NOT NULL,
    ended_at     BIGINT  NOT NULL,
    routing      TEXT COLLATE "C",
    worker       TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX runs_session ON runs (session_id, id);
CREATE INDEX runs_task ON runs (task_id, id);
CREATE INDEX runs_tenant_started ON runs (tenant_id, started_at, id);

CREATE TABLE messages (
    thread_id    TEXT COLLATE "C" NOT NULL,
    seq          BIGINT  NOT NULL,
    session_id   TEXT COLLATE "C" NOT NULL,
    turn_id      TEXT COLLATE "C" NOT NULL,
    run_id       TEXT COLLATE "C" NOT NULL,
    tenant_id    TEXT COLLATE "C" NOT NULL,
    principal_id TEXT COLLATE "C" NOT NULL,
    role         TEXT COLLATE "C" NOT NULL,
    content      TEXT COLLATE "C" NOT NULL,
    tool_calls   TEXT COLLATE "C",
    tool_call_id TEXT COLLATE "C" NOT NULL,
    is_error     BIGINT  NOT NULL,
    created_at   BIGINT  NOT NULL,
    reasoning    TEXT COLLATE "C",
    boundary     TEXT COLLATE "C",
    PRIMARY KEY (thread_id, seq)
);

CREATE TABLE tool_calls (
    session_id       TEXT COLLATE "C" NOT NULL,
    id               TEXT COLLATE "C" NOT NULL,
    run_id           TEXT COLLATE "C" NOT NULL,
    turn_id          TEXT COLLATE "C" NOT NULL,
    thread_id        TEXT COLLATE "C" NOT NULL,
    tenant_id        TEXT COLLATE "C" NOT NULL,
    principal_id     TEXT COLLATE "C" NOT NULL,
    step_id          TEXT COLLATE "C" NOT NULL,
    hop              BIGINT  NOT NULL,
    name             TEXT COLLATE "C" NOT NULL,
    arguments        TEXT COLLATE "C" NOT NULL,
    arguments_sha256 TEXT COLLATE "C" NOT NULL,
    idempotency_key  TEXT COLLATE "C" NOT NULL,
    status           TEXT COLLATE "C" NOT NULL,
    decision         TEXT COLLATE "C" NOT NULL,
    result_preview   TEXT COLLATE "C" NOT NULL,
    output_ref       TEXT COLLATE "C" NOT NULL,
    output_bytes     BIGINT  NOT NULL,
    failure          TEXT COLLATE "C",
    started_at       BIGINT  NOT NULL,
    ended_at         BIGINT  NOT NULL,
    progress         DOUBLE PRECISION,
    progress_total   DOUBLE PRECISION,
    progress_message TEXT COLLATE "C",
    progress_at      BIGINT,
    PRIMARY KEY (session_id, id)
);
CREATE INDEX tool_calls_output_ref ON tool_calls (output_ref, tenant_id, started_at) WHERE output_ref <> '';

CREATE TABLE blobs (
    tenant_id    TEXT COLLATE "C" NOT NULL,
    ref          TEXT COLLATE "C" NOT NULL,
    principal_id TEXT COLLATE "C" NOT NULL,
    media_type   TEXT COLLATE "C" NOT NULL,
    data         BYTEA   NOT NULL,
    created_at   BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, ref)
);

CREATE TABLE limits (
    tenant_id    TEXT COLLATE "C" NOT NULL,
    scope        TEXT COLLATE "C" NOT NULL,
    scope_id     TEXT COLLATE "C" NOT NULL,
    principal_id TEXT COLLATE "C" NOT NULL,
    max_tokens   BIGINT  NOT NULL,
    max_cost_usd DOUBLE PRECISION NOT NULL,
    updated_at   BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, scope, scope_id)
);

CREATE TABLE actions (
    id               TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id        TEXT COLLATE "C" NOT NULL,
    principal_id     TEXT COLLATE "C" NOT NULL,
    session_id       TEXT COLLATE "C" NOT NULL,
    thread_id        TEXT COLLATE "C" NOT NULL,
    turn_id          TEXT COLLATE "C" NOT NULL,
    task_id          TEXT COLLATE "C" NOT NULL,
    run_id           TEXT COLLATE "C" NOT NULL,
    tool_call_id     TEXT COLLATE "C" NOT NULL,
    type             TEXT COLLATE "C" NOT NULL,
    tool_name        TEXT COLLATE "C" NOT NULL,
    input_preview    TEXT COLLATE "C" NOT NULL,
    arguments_sha256 TEXT COLLATE "C" NOT NULL,
    prompt           TEXT COLLATE "C" NOT NULL,
    decisions        TEXT COLLATE "C" NOT NULL,
    reason_code      TEXT COLLATE "C" NOT NULL,
    rule_ids         TEXT COLLATE "C" NOT NULL,
    status           TEXT COLLATE "C" NOT NULL,
    created_at       BIGINT  NOT NULL,
    expires_at       BIGINT  NOT NULL,
    resolution       TEXT COLLATE "C",
    escalation       TEXT COLLATE "C" NOT NULL DEFAULT '',
    input            TEXT COLLATE "C" NOT NULL DEFAULT '',
    hop              BIGINT  NOT NULL DEFAULT 0,
    requested_schema BYTEA
);
CREATE INDEX actions_tenant_status ON actions (tenant_id, status, id);
CREATE INDEX actions_tenant_session ON actions (tenant_id, session_id, id);
CREATE INDEX actions_tenant_run ON actions (tenant_id, run_id, id);
CREATE INDEX actions_status ON actions (status, id);

CREATE TABLE policy_grants (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id    TEXT COLLATE "C" NOT NULL,
    principal_id TEXT COLLATE "C" NOT NULL,
    session_id   TEXT COLLATE "C" NOT NULL,
    agent        TEXT COLLATE "C" NOT NULL,
    tool_name    TEXT COLLATE "C" NOT NULL,
    action_id    TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT  NOT NULL
);
CREATE INDEX policy_grants_tenant_session ON policy_grants (tenant_id, session_id, id);

CREATE TABLE task_queue_counts (
    tenant_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    queued    BIGINT  NOT NULL
);
CREATE TABLE task_queue_total (
    id     BIGINT  NOT NULL PRIMARY KEY CHECK (id = 1),
    queued BIGINT  NOT NULL
);
INSERT INTO task_queue_total (id, queued) VALUES (1, 0);

CREATE TABLE api_tokens (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id    TEXT COLLATE "C" NOT NULL,
    principal_id TEXT COLLATE "C" NOT NULL,
    role         TEXT COLLATE "C" NOT NULL,
    name         TEXT COLLATE "C" NOT NULL,
    prefix       TEXT COLLATE "C" NOT NULL,
    hash         TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT  NOT NULL,
    last_used_at BIGINT  NOT NULL,
    revoked_at   BIGINT  NOT NULL
);
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (hash);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id, created_at, id);

CREATE TABLE thread_totals (
    thread_id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    last_seq            BIGINT  NOT NULL,
    messages            BIGINT  NOT NULL,
    rollback_gen        BIGINT  NOT NULL,
    input_tokens        BIGINT  NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT  NOT NULL DEFAULT 0,
    output_tokens       BIGINT  NOT NULL DEFAULT 0,
    reasoning_tokens    BIGINT  NOT NULL DEFAULT 0,
    cost_usd            DOUBLE PRECISION NOT NULL DEFAULT 0
);

CREATE TABLE thread_turn_counts (
    thread_id TEXT COLLATE "C" NOT NULL,
    status    TEXT COLLATE "C" NOT NULL,
    turns     BIGINT  NOT NULL,
    PRIMARY KEY (thread_id, status)
);

CREATE TABLE event_scopes (
    id         BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    tenant_id  TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL,
    thread_id  TEXT COLLATE "C" NOT NULL,
    turn_id    TEXT COLLATE "C" NOT NULL,
    task_id    TEXT COLLATE "C" NOT NULL,
    run_id     TEXT COLLATE "C" NOT NULL,
    trace_id   TEXT COLLATE "C" NOT NULL,
    runtime_id TEXT COLLATE "C" NOT NULL
);

CREATE TABLE events (
    cursor     BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    session_id TEXT COLLATE "C" NOT NULL,
    sequence   BIGINT  NOT NULL,
    scope      BIGINT  NOT NULL,
    body       BYTEA   NOT NULL,
    UNIQUE (session_id, sequence)
);

CREATE TABLE receipts (
    tenant_id  TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL,
    seq        BIGINT  NOT NULL,
    cursor     BIGINT  NOT NULL,
    hash       BYTEA   NOT NULL,
    created_at BIGINT  NOT NULL,
    event_id   TEXT COLLATE "C",
    event_type TEXT COLLATE "C",
    body       BYTEA,
    prev_hash  TEXT COLLATE "C",
    PRIMARY KEY (tenant_id, session_id, seq)
);

CREATE TABLE action_counts (
    tenant_id TEXT COLLATE "C" NOT NULL,
    status    TEXT COLLATE "C" NOT NULL,
    n         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, status)
);

CREATE TABLE capability_sessions (
    id                TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id         TEXT COLLATE "C" NOT NULL,
    principal_id      TEXT COLLATE "C" NOT NULL,
    session_id        TEXT COLLATE "C" NOT NULL,
    server            TEXT COLLATE "C" NOT NULL,
    transport         TEXT COLLATE "C" NOT NULL,
    protocol_version  TEXT COLLATE "C" NOT NULL,
    server_session_id TEXT COLLATE "C" NOT NULL,
    status            TEXT COLLATE "C" NOT NULL,
    generation        BIGINT  NOT NULL,
    expires_at        BIGINT  NOT NULL,
    resume_cursor     TEXT COLLATE "C" NOT NULL,
    error             TEXT COLLATE "C" NOT NULL,
    runtime_id        TEXT COLLATE "C" NOT NULL,
    created_at        BIGINT  NOT NULL,
    updated_at        BIGINT  NOT NULL
);
CREATE INDEX capability_sessions_session ON capability_sessions (tenant_id, session_id, created_at, id);
CREATE INDEX capability_sessions_tenant ON capability_sessions (tenant_id, created_at, id);

CREATE TABLE capability_runs (
    tenant_id             TEXT COLLATE "C" NOT NULL,
    capability_session_id TEXT COLLATE "C" NOT NULL,
    run_id                TEXT COLLATE "C" NOT NULL,
    principal_id          TEXT COLLATE "C" NOT NULL,
    at                    BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, capability_session_id, run_id)
);
CREATE INDEX capability_runs_at ON capability_runs (tenant_id, capability_session_id, at, run_id);

CREATE TABLE memories (
    seq          BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    id           TEXT COLLATE "C" NOT NULL UNIQUE,
    tenant_id    TEXT COLLATE "C" NOT NULL,
    agent        TEXT COLLATE "C" NOT NULL,
    instance     TEXT COLLATE "C" NOT NULL DEFAULT '',
    principal_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    source       TEXT COLLATE "C" NOT NULL,
    session_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    turn_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    run_id       TEXT COLLATE "C" NOT NULL DEFAULT '',
    tool_call_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    content      TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT  NOT NULL
);
CREATE INDEX memories_scope ON memories (tenant_id, agent, instance, seq);

CREATE TABLE memories_fts (
    rowid BIGINT   NOT NULL PRIMARY KEY,
    words tsvector NOT NULL
);
CREATE INDEX memories_fts_words ON memories_fts USING gin (words);

CREATE TABLE memory_words (
    word     TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    memories BIGINT  NOT NULL
);
CREATE TABLE memory_stats (
    id       BIGINT  NOT NULL PRIMARY KEY CHECK (id = 1),
    memories BIGINT  NOT NULL,
    words    BIGINT  NOT NULL
);
INSERT INTO memory_stats (id, memories, words) VALUES (1, 0, 0);

CREATE TABLE subagents (
    id                  TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id           TEXT COLLATE "C" NOT NULL,
    principal_id        TEXT COLLATE "C" NOT NULL,
    session_id          TEXT COLLATE "C" NOT NULL,
    thread_id           TEXT COLLATE "C" NOT NULL,
    agent               TEXT COLLATE "C" NOT NULL,
    name                TEXT COLLATE "C" NOT NULL,
    parent_thread_id    TEXT COLLATE "C" NOT NULL,
    parent_turn_id      TEXT COLLATE "C" NOT NULL,
    parent_task_id      TEXT COLLATE "C" NOT NULL,
    parent_tool_call_id TEXT COLLATE "C" NOT NULL,
    root_task_id        TEXT COLLATE "C" NOT NULL,
    depth               BIGINT  NOT NULL,
    workspace           TEXT COLLATE "C" NOT NULL,
    last_task_id        TEXT COLLATE "C" NOT NULL,
    inputs              BIGINT  NOT NULL,
    created_at          BIGINT  NOT NULL,
    updated_at          BIGINT  NOT NULL,
    closed_at           BIGINT  NOT NULL
);
CREATE INDEX subagents_session ON subagents (tenant_id, session_id, id);
CREATE INDEX subagents_parent ON subagents (tenant_id, parent_task_id, parent_tool_call_id, id);
CREATE INDEX subagents_root ON subagents (tenant_id, root_task_id, id);

CREATE TABLE jobs (
    id             TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id      TEXT COLLATE "C" NOT NULL,
    principal_id   TEXT COLLATE "C" NOT NULL,
    session_id     TEXT COLLATE "C" NOT NULL,
    thread_id      TEXT COLLATE "C" NOT NULL,
    task_id        TEXT COLLATE "C" NOT NULL,
    agent          TEXT COLLATE "C" NOT NULL,
    instruction    TEXT COLLATE "C" NOT NULL,
    parent_task_id TEXT COLLATE "C" NOT NULL,
    root_task_id   TEXT COLLATE "C" NOT NULL,
    depth          BIGINT  NOT NULL,
    concurrency    BIGINT  NOT NULL,
    max_attempts   BIGINT  NOT NULL,
    status         TEXT COLLATE "C" NOT NULL,
    items          BIGINT  NOT NULL,
    completed      BIGINT  NOT NULL,
    failed         BIGINT  NOT NULL,
    cancelled      BIGINT  NOT NULL,
    running        BIGINT  NOT NULL,
    created_at     BIGINT  NOT NULL,
    updated_at     BIGINT  NOT NULL,
    ended_at       BIGINT  NOT NULL
);
CREATE INDEX jobs_session ON jobs (tenant_id, session_id, id);
CREATE INDEX jobs_parent ON jobs (tenant_id, parent_task_id, id);

CREATE TABLE job_items (
    job_id     TEXT COLLATE "C" NOT NULL,
    idx        BIGINT  NOT NULL,
    id         TEXT COLLATE "C" NOT NULL UNIQUE,
    tenant_id  TEXT COLLATE "C" NOT NULL,
    input      TEXT COLLATE "C" NOT NULL,
    status     TEXT COLLATE "C" NOT NULL,
    attempts   BIGINT  NOT NULL,
    task_id    TEXT COLLATE "C" NOT NULL,
    thread_id  TEXT COLLATE "C" NOT NULL,
    result     TEXT COLLATE "C" NOT NULL,
    last_error TEXT COLLATE "C",
    retry      BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL,
    PRIMARY KEY (job_id, idx)
);
CREATE INDEX job_items_status ON job_items (job_id, status, idx);

CREATE TABLE schedules (
    id                   TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id            TEXT COLLATE "C" NOT NULL,
    principal_id         TEXT COLLATE "C" NOT NULL,
    name                 TEXT COLLATE "C" NOT NULL,
    agent                TEXT COLLATE "C" NOT NULL,
    session_id           TEXT COLLATE "C" NOT NULL,
    instance             TEXT COLLATE "C" NOT NULL,
    kind                 TEXT COLLATE "C" NOT NULL,
    cron                 TEXT COLLATE "C" NOT NULL,
    time_zone            TEXT COLLATE "C" NOT NULL,
    every                BIGINT  NOT NULL,
    at                   BIGINT  NOT NULL,
    start_at             BIGINT  NOT NULL,
    input                TEXT COLLATE "C" NOT NULL,
    params               TEXT COLLATE "C" NOT NULL,
    input_schema         TEXT COLLATE "C" NOT NULL,
    model                TEXT COLLATE "C" NOT NULL,
    tools                TEXT COLLATE "C" NOT NULL,
    inactivity_timeout   BIGINT  NOT NULL,
    overlap              TEXT COLLATE "C" NOT NULL,
    catchup_window       BIGINT  NOT NULL,
    pause_after_failures BIGINT  NOT NULL,
    pre_run_tool         TEXT COLLATE "C" NOT NULL,
    pre_run_input        TEXT COLLATE "C" NOT NULL,
    webhook              TEXT COLLATE "C" NOT NULL,
    status               TEXT COLLATE "C" NOT NULL,
    paused_reason        TEXT COLLATE "C" NOT NULL,
    next_fire_at         BIGINT  NOT NULL,
    next_check_at        BIGINT  NOT NULL,
    running              BIGINT  NOT NULL,
    buffered             BIGINT  NOT NULL,
    consecutive_failures BIGINT  NOT NULL,
    fires                BIGINT  NOT NULL,
    last_fire_at         BIGINT  NOT NULL,
    trace_id             TEXT COLLATE "C" NOT NULL,
    version              BIGINT  NOT NULL,
    created_at           BIGINT  NOT NULL,
    updated_at           BIGINT  NOT NULL,
    idempotency_key      TEXT COLLATE "C" NOT NULL
);
CREATE UNIQUE INDEX schedules_key ON schedules (tenant_id, idempotency_key) WHERE idempotency_key <> '';
CREATE INDEX schedules_due ON schedules (next_check_at, id) WHERE next_check_at <> 0;
CREATE INDEX schedules_tenant ON schedules (tenant_id, id);
CREATE INDEX schedules_soonest ON schedules (tenant_id, next_fire_at, id) WHERE status = 'active' AND next_fire_at <> 0;

CREATE TABLE fires (
    id                TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    schedule_id       TEXT COLLATE "C" NOT NULL,
    tenant_id         TEXT COLLATE "C" NOT NULL,
    fire_at           BIGINT  NOT NULL,
    manual            BIGINT  NOT NULL,
    status            TEXT COLLATE "C" NOT NULL,
    reason            TEXT COLLATE "C" NOT NULL,
    missed_count      BIGINT  NOT NULL,
    thread_id         TEXT COLLATE "C" NOT NULL,
    turn_id           TEXT COLLATE "C" NOT NULL,
    task_id           TEXT COLLATE "C" NOT NULL,
    failure           TEXT COLLATE "C",
    delivery          TEXT COLLATE "C" NOT NULL,
    delivery_attempts BIGINT  NOT NULL,
    delivery_error    TEXT COLLATE "C" NOT NULL,
    delivery_next_at  BIGINT  NOT NULL,
    delivered_at      BIGINT  NOT NULL,
    created_at        BIGINT  NOT NULL,
    updated_at        BIGINT  NOT NULL,
    ended_at          BIGINT  NOT NULL,
    idempotency_key   TEXT COLLATE "C" NOT NULL
);
CREATE UNIQUE INDEX fires_key ON fires (schedule_id, idempotency_key) WHERE idempotency_key <> '';
CREATE UNIQUE INDEX fires_time ON fires (schedule_id, fire_at) WHERE manual = 0;
CREATE INDEX fires_schedule ON fires (tenant_id, schedule_id, id);

CREATE TABLE instances (
    id             TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id      TEXT COLLATE "C" NOT NULL,
    principal_id   TEXT COLLATE "C" NOT NULL,
    name           TEXT COLLATE "C" NOT NULL,
    agent          TEXT COLLATE "C" NOT NULL,
    session_id     TEXT COLLATE "C" NOT NULL,
    state          TEXT COLLATE "C" NOT NULL,
    state_version  BIGINT  NOT NULL,
    schema_version BIGINT  NOT NULL,
    version        BIGINT  NOT NULL,
    created_at     BIGINT  NOT NULL,
    updated_at     BIGINT  NOT NULL,
    last_woken_at  BIGINT  NOT NULL
);
CREATE UNIQUE INDEX instances_name ON instances (tenant_id, name);
CREATE INDEX instances_session ON instances (tenant_id, session_id);
CREATE INDEX instances_agent ON instances (tenant_id, agent, id);

CREATE TABLE workflow_runs (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id    TEXT COLLATE "C" NOT NULL,
    principal_id TEXT COLLATE "C" NOT NULL,
    workflow     TEXT COLLATE "C" NOT NULL,
    session_id   TEXT COLLATE "C" NOT NULL,
    thread_id    TEXT COLLATE "C" NOT NULL,
    task_id      TEXT COLLATE "C" NOT NULL,
    status       TEXT COLLATE "C" NOT NULL,
    input        TEXT COLLATE "C" NOT NULL,
    steps        TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    ended_at     BIGINT  NOT NULL
);
CREATE INDEX workflow_runs_tenant ON workflow_runs (tenant_id, id);

-- The projections' triggers (SQLite migrations 6, 11, 13 and 18).

-- task_queue_counts and task_queue_total: the queued tasks, by tenant and
-- in all.
CREATE FUNCTION tasks_queue_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_queue_counts AS c (tenant_id, queued) VALUES (new.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET queued = c.queued + 1;
    UPDATE task_queue_total SET queued = queued + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER tasks_queue_insert AFTER INSERT ON tasks
    FOR EACH ROW WHEN (new.status = 'queued') EXECUTE FUNCTION tasks_queue_insert();

CREATE FUNCTION tasks_queue_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF old.status = 'queued' THEN
        UPDATE task_queue_counts SET queued = queued - 1 WHERE tenant_id = old.tenant_id;
    END IF;
    IF new.status = 'queued' THEN
        INSERT INTO task_queue_counts AS c (tenant_id, queued) VALUES (new.tenant_id, 1)
            ON CONFLICT (tenant_id) DO UPDATE SET queued = c.queued + 1;
    END IF;
    UPDATE task_queue_total
        SET queued = queued + (new.status = 'queued')::int - (old.status = 'queued')::int;
    RETURN NULL;
END $$;
CREATE TRIGGER tasks_queue_update AFTER UPDATE OF status, tenant_id ON tasks
    FOR EACH ROW WHEN ((old.status = 'queued' OR new.status = 'queued')
        AND (old.status <> new.status OR old.tenant_id <> new.tenant_id))
    EXECUTE FUNCTION tasks_queue_update();

CREATE FUNCTION tasks_queue_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE task_queue_counts SET queued = queued - 1 WHERE tenant_id = old.tenant_id;
    UPDATE task_queue_total SET queued = queued - 1;
    RETURN NULL;
END $$;
CREATE TRIGGER tasks_queue_delete AFTER DELETE ON tasks
    FOR EACH ROW WHEN (old.status = 'queued') EXECUTE FUNCTION tasks_queue_delete();

-- thread_totals: each thread's last message, messages, rollback
-- generation and its runs' usage; thread_turn_counts: its turns by
-- status.
CREATE FUNCTION threads_totals_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen) VALUES (new.id, 0, 0, 0)
        ON CONFLICT (thread_id) DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER threads_totals_insert AFTER INSERT ON threads
    FOR EACH ROW EXECUTE FUNCTION threads_totals_insert();

CREATE FUNCTION messages_totals_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO thread_totals AS t (thread_id, last_seq, messages, rollback_gen) VALUES (new.thread_id, new.seq, 1, 0)
        ON CONFLICT (thread_id) DO UPDATE SET last_seq = GREATEST(t.last_seq, excluded.last_seq), messages = t.messages + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER messages_totals_insert AFTER INSERT ON messages
    FOR EACH ROW EXECUTE FUNCTION messages_totals_insert();

-- turns_totals_insert and turns_totals_update: a turn became, or stopped
-- being, rolled back (marked, or cancelled by a newer turn's rollback).
CREATE FUNCTION turns_totals_rollback() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO thread_totals AS t (thread_id, last_seq, messages, rollback_gen) VALUES (new.thread_id, 0, 0, 1)
        ON CONFLICT (thread_id) DO UPDATE SET rollback_gen = t.rollback_gen + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER turns_totals_insert AFTER INSERT ON turns
    FOR EACH ROW WHEN (new.rolled_back_at <> 0 OR (new.status = 'cancelled' AND new.status_reason = 'rolled_back'))
    EXECUTE FUNCTION turns_totals_rollback();
CREATE TRIGGER turns_totals_update AFTER UPDATE OF status, status_reason, rolled_back_at ON turns
    FOR EACH ROW WHEN ((old.rolled_back_at <> 0 OR (old.status = 'cancelled' AND old.status_reason = 'rolled_back'))
        <> (new.rolled_back_at <> 0 OR (new.status = 'cancelled' AND new.status_reason = 'rolled_back')))
    EXECUTE FUNCTION turns_totals_rollback();

CREATE FUNCTION turns_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO thread_turn_counts AS c (thread_id, status, turns) VALUES (new.thread_id, new.status, 1)
        ON CONFLICT (thread_id, status) DO UPDATE SET turns = c.turns + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER turns_counts_insert AFTER INSERT ON turns
    FOR EACH ROW EXECUTE FUNCTION turns_counts_insert();

CREATE FUNCTION turns_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE thread_turn_counts SET turns = turns - 1 WHERE thread_id = old.thread_id AND status = old.status;
    INSERT INTO thread_turn_counts AS c (thread_id, status, turns) VALUES (new.thread_id, new.status, 1)
        ON CONFLICT (thread_id, status) DO UPDATE SET turns = c.turns + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER turns_counts_update AFTER UPDATE OF status, thread_id ON turns
    FOR EACH ROW WHEN (old.status <> new.status OR old.thread_id <> new.thread_id)
    EXECUTE FUNCTION turns_counts_update();

-- A run's usage (JSON text, runtype.Usage) added to its thread's totals,
-- a missing field counting 0, as json_extract's NULL does in SQLite.
CREATE FUNCTION runs_totals_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    u jsonb := new.usage::jsonb;
BEGIN
    INSERT INTO thread_totals AS t (thread_id, last_seq, messages, rollback_gen,
        input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_usd)
    VALUES (new.thread_id, 0, 0, 0,
        COALESCE((u->>'inputTokens')::bigint, 0), COALESCE((u->>'cachedInputTokens')::bigint, 0),
        COALESCE((u->>'outputTokens')::bigint, 0), COALESCE((u->>'reasoningTokens')::bigint, 0),
        COALESCE((u->>'costUsd')::double precision, 0))
    ON CONFLICT (thread_id) DO UPDATE SET
        input_tokens = t.input_tokens + excluded.input_tokens,
        cached_input_tokens = t.cached_input_tokens + excluded.cached_input_tokens,
        output_tokens = t.output_tokens + excluded.output_tokens,
        reasoning_tokens = t.reasoning_tokens + excluded.reasoning_tokens,
        cost_usd = t.cost_usd + excluded.cost_usd;
    RETURN NULL;
END $$;
CREATE TRIGGER runs_totals_insert AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION runs_totals_insert();

CREATE FUNCTION runs_totals_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o jsonb := old.usage::jsonb;
    u jsonb := new.usage::jsonb;
BEGIN
    UPDATE thread_totals SET
        input_tokens = input_tokens - COALESCE((o->>'inputTokens')::bigint, 0),
        cached_input_tokens = cached_input_tokens - COALESCE((o->>'cachedInputTokens')::bigint, 0),
        output_tokens = output_tokens - COALESCE((o->>'outputTokens')::bigint, 0),
        reasoning_tokens = reasoning_tokens - COALESCE((o->>'reasoningTokens')::bigint, 0),
        cost_usd = cost_usd - COALESCE((o->>'costUsd')::double precision, 0)
    WHERE thread_id = old.thread_id;
    INSERT INTO thread_totals AS t (thread_id, last_seq, messages, rollback_gen,
        input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_usd)
    VALUES (new.thread_id, 0, 0, 0,
        COALESCE((u->>'inputTokens')::bigint, 0), COALESCE((u->>'cachedInputTokens')::bigint, 0),
        COALESCE((u->>'outputTokens')::bigint, 0), COALESCE((u->>'reasoningTokens')::bigint, 0),
        COALESCE((u->>'costUsd')::double precision, 0))
    ON CONFLICT (thread_id) DO UPDATE SET
        input_tokens = t.input_tokens + excluded.input_tokens,
        cached_input_tokens = t.cached_input_tokens + excluded.cached_input_tokens,
        output_tokens = t.output_tokens + excluded.output_tokens,
        reasoning_tokens = t.reasoning_tokens + excluded.reasoning_tokens,
        cost_usd = t.cost_usd + excluded.cost_usd;
    RETURN NULL;
END $$;
CREATE TRIGGER runs_totals_update AFTER UPDATE OF usage, thread_id ON runs
    FOR EACH ROW WHEN (old.usage <> new.usage OR old.thread_id <> new.thread_id)
    EXECUTE FUNCTION runs_totals_update();

-- action_counts: the actions by tenant and status.
CREATE FUNCTION actions_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO action_counts AS c (tenant_id, status, n) VALUES (new.tenant_id, new.status, 1)
        ON CONFLICT (tenant_id, status) DO UPDATE SET n = c.n + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER actions_count_insert AFTER INSERT ON actions
    FOR EACH ROW EXECUTE FUNCTION actions_count_insert();

CREATE FUNCTION actions_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE action_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND status = old.status;
    INSERT INTO action_counts AS c (tenant_id, status, n) VALUES (new.tenant_id, new.status, 1)
        ON CONFLICT (tenant_id, status) DO UPDATE SET n = c.n + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER actions_count_update AFTER UPDATE OF status, tenant_id ON actions
    FOR EACH ROW WHEN (old.status <> new.status OR old.tenant_id <> new.tenant_id)
    EXECUTE FUNCTION actions_count_update();

CREATE FUNCTION actions_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE action_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND status = old.status;
    RETURN NULL;
END $$;
CREATE TRIGGER actions_count_delete AFTER DELETE ON actions
    FOR EACH ROW EXECUTE FUNCTION actions_count_delete();
