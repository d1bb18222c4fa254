-- agentrt schema version 20: delegation (subagents and jobs).
--
-- A delegated task names its place in the tree (runtype.TaskLineage):
-- the task that waits for it, the tree's root, its depth, and the
-- subagent or job item it works for. A task's children are a range of
-- tasks_parent, which holds only delegated tasks. A task's rewrite
-- leaves parent_task_id alone (it is part of the UPDATE's key, see
-- qUpdateTask), so a step pays nothing for the index.
--
-- subagents, jobs and job_items hold runtype.Subagent, Job and JobItem,
-- upserted by ID (an ID is unique across tenants). They change a few
-- times in their lives, so each list filter has its index; lists page
-- by ID (each index ends in the key). Times are unix nanoseconds, 0 for
-- none; a job item's last_error is its failure's JSON, NULL for none.
-- A job's items are keyed by (job_id, idx), in list order.
ALTER TABLE tasks ADD COLUMN parent_task_id TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN root_task_id TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN subagent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN job_id TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN job_item_id TEXT NOT NULL DEFAULT '';
CREATE INDEX tasks_parent ON tasks (tenant_id, parent_task_id) WHERE parent_task_id <> '';

CREATE TABLE subagents (
    id                  TEXT    NOT NULL PRIMARY KEY,
    tenant_id           TEXT    NOT NULL,
    principal_id        TEXT    NOT NULL,
    session_id          TEXT    NOT NULL,
    thread_id           TEXT    NOT NULL,
    agent               TEXT    NOT NULL,
    name                TEXT    NOT NULL,
    parent_thread_id    TEXT    NOT NULL,
    parent_turn_id      TEXT    NOT NULL,
    parent_task_id      TEXT    NOT NULL,
    parent_tool_call_id TEXT    NOT NULL,
    root_task_id        TEXT    NOT NULL,
    depth               INTEGER NOT NULL,
    workspace           TEXT    NOT NULL,
    last_task_id        TEXT    NOT NULL,
    inputs              INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    closed_at           INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX subagents_session ON subagents (tenant_id, session_id);
CREATE INDEX subagents_parent ON subagents (tenant_id, parent_task_id, parent_tool_call_id);
CREATE INDEX subagents_root ON subagents (tenant_id, root_task_id);

CREATE TABLE jobs (
    id             TEXT    NOT NULL PRIMARY KEY,
    tenant_id      TEXT    NOT NULL,
    principal_id   TEXT    NOT NULL,
    session_id     TEXT    NOT NULL,
    thread_id      TEXT    NOT NULL,
    task_id        TEXT    NOT NULL,
    agent          TEXT    NOT NULL,
    instruction    TEXT    NOT NULL,
    parent_task_id TEXT    NOT NULL,
    root_task_id   TEXT    NOT NULL,
    depth          INTEGER NOT NULL,
    concurrency    INTEGER NOT NULL,
    max_attempts   INTEGER NOT NULL,
    status         TEXT    NOT NULL,
    items          INTEGER NOT NULL,
    completed      INTEGER NOT NULL,
    failed         INTEGER NOT NULL,
    cancelled      INTEGER NOT NULL,
    running        INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    ended_at       INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX jobs_session ON jobs (tenant_id, session_id);
CREATE INDEX jobs_parent ON jobs (tenant_id, parent_task_id);

CREATE TABLE job_items (
    job_id     TEXT    NOT NULL,
    idx        INTEGER NOT NULL,
    id         TEXT    NOT NULL UNIQUE,
    tenant_id  TEXT    NOT NULL,
    input      TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    attempts   INTEGER NOT NULL,
    task_id    TEXT    NOT NULL,
    thread_id  TEXT    NOT NULL,
    result     TEXT    NOT NULL,
    last_error TEXT,
    retry      INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;
CREATE INDEX job_items_status ON job_items (job_id, status);
