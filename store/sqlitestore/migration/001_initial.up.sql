-- agentrt schema version 1: the records of runtype and the event log.
--
-- Times are unix nanoseconds (UTC), 0 for the zero time. Failure, usage and
-- message tool calls are JSON text.
--
-- Every b-tree a commit touches costs a WAL frame (a page write) at commit,
-- and frames, not rows, are what a durable step pays for. So tables keyed by
-- text are WITHOUT ROWID (one b-tree instead of a table plus its primary
-- key index), indexes are the minimum the Reader methods need, and lists
-- "oldest first" order by creation time then id. Lists by turn (events,
-- tool calls) look the turn's session up and use the session's key.

CREATE TABLE sessions (
    id           TEXT    NOT NULL PRIMARY KEY,
    tenant_id    TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    title        TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_tenant ON sessions (tenant_id, id);

CREATE TABLE threads (
    id           TEXT    NOT NULL PRIMARY KEY,
    session_id   TEXT    NOT NULL,
    tenant_id    TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX threads_session ON threads (session_id);

CREATE TABLE turns (
    id              TEXT    NOT NULL PRIMARY KEY,
    session_id      TEXT    NOT NULL,
    thread_id       TEXT    NOT NULL,
    tenant_id       TEXT    NOT NULL,
    principal_id    TEXT    NOT NULL,
    agent           TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    input           TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    status_reason   TEXT    NOT NULL,
    result          TEXT    NOT NULL,
    failure         TEXT,
    task_id         TEXT    NOT NULL,
    run_id          TEXT    NOT NULL,
    trace_id        TEXT    NOT NULL,
    usage           TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    started_at      INTEGER NOT NULL,
    ended_at        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX turns_tenant ON turns (tenant_id, id);
CREATE INDEX turns_session ON turns (session_id, id);
CREATE UNIQUE INDEX turns_idempotency_key ON turns (tenant_id, idempotency_key) WHERE idempotency_key <> '';

CREATE TABLE tasks (
    id             TEXT    NOT NULL PRIMARY KEY,
    session_id     TEXT    NOT NULL,
    thread_id      TEXT    NOT NULL,
    turn_id        TEXT    NOT NULL,
    tenant_id      TEXT    NOT NULL,
    principal_id   TEXT    NOT NULL,
    objective      TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    status_reason  TEXT    NOT NULL,
    current_run_id TEXT    NOT NULL,
    result         TEXT    NOT NULL,
    failure        TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    started_at     INTEGER NOT NULL,
    ended_at       INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tasks_session ON tasks (session_id);

CREATE TABLE runs (
    id           TEXT    NOT NULL PRIMARY KEY,
    task_id      TEXT    NOT NULL,
    turn_id      TEXT    NOT NULL,
    session_id   TEXT    NOT NULL,
    thread_id    TEXT    NOT NULL,
    tenant_id    TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    attempt      INTEGER NOT NULL,
    status       TEXT    NOT NULL,
    failure      TEXT,
    hops         INTEGER NOT NULL,
    tool_hops    INTEGER NOT NULL,
    usage        TEXT    NOT NULL,
    started_at   INTEGER NOT NULL,
    ended_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX runs_session ON runs (session_id);
CREATE INDEX runs_task ON runs (task_id);

CREATE TABLE messages (
    thread_id    TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    session_id   TEXT    NOT NULL,
    turn_id      TEXT    NOT NULL,
    run_id       TEXT    NOT NULL,
    tenant_id    TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    role         TEXT    NOT NULL,
    content      TEXT    NOT NULL,
    tool_calls   TEXT,
    tool_call_id TEXT    NOT NULL,
    is_error     INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (thread_id, seq)
);

-- Provider-given tool call ids are unique only within a session. A list by
-- turn finds the turn's session first, so the primary key serves both.
CREATE TABLE tool_calls (
    session_id       TEXT    NOT NULL,
    id               TEXT    NOT NULL,
    run_id           TEXT    NOT NULL,
    turn_id          TEXT    NOT NULL,
    thread_id        TEXT    NOT NULL,
    tenant_id        TEXT    NOT NULL,
    principal_id     TEXT    NOT NULL,
    step_id          TEXT    NOT NULL,
    hop              INTEGER NOT NULL,
    name             TEXT    NOT NULL,
    arguments        TEXT    NOT NULL,
    arguments_sha256 TEXT    NOT NULL,
    idempotency_key  TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    decision         TEXT    NOT NULL,
    result_preview   TEXT    NOT NULL,
    output_ref       TEXT    NOT NULL,
    output_bytes     INTEGER NOT NULL,
    failure          TEXT,
    started_at       INTEGER NOT NULL,
    ended_at         INTEGER NOT NULL,
    PRIMARY KEY (session_id, id)
);

CREATE TABLE blobs (
    tenant_id    TEXT    NOT NULL,
    ref          TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    media_type   TEXT    NOT NULL,
    data         BLOB    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, ref)
);

-- cursor is the store-wide position: the rowid, one more than the largest
-- before it. Events are never deleted from the end of the log, so a cursor
-- is never handed out twice; AUTOINCREMENT would guarantee the same at the
-- price of a sqlite_sequence page in every commit. data is the event's
-- envelope JSON, byte for byte.
--
-- Within a session, sequence order is cursor order: the store only takes an
-- event whose sequence is above its session's last (checked by the driver,
-- where it costs a map lookup rather than a trigger per row). So the one
-- per-session index, on (session_id, sequence), also serves reads of a
-- session after a cursor. Every index keyed by session costs a page write
-- per session per commit, which is what bounds group commit, so there is no
-- other.
CREATE TABLE events (
    cursor     INTEGER NOT NULL PRIMARY KEY,
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    sequence   INTEGER NOT NULL,
    turn_id    TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    data       BLOB    NOT NULL,
    UNIQUE (session_id, sequence)
);
