-- agentrt schema version 23: workflow runs.
--
-- workflow_runs holds runtype.WorkflowRun, upserted by ID (unique across
-- tenants); its steps are one JSON array (they change with the run).
-- Times are unix nanoseconds, 0 for none. A workflow's agent step is a
-- task that names its run and step (runtype.TaskLineage).
ALTER TABLE tasks ADD COLUMN workflow_run_id TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN workflow_step TEXT NOT NULL DEFAULT '';

CREATE TABLE workflow_runs (
    id           TEXT    NOT NULL PRIMARY KEY,
    tenant_id    TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    workflow     TEXT    NOT NULL,
    session_id   TEXT    NOT NULL,
    thread_id    TEXT    NOT NULL,
    task_id      TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    input        TEXT    NOT NULL,
    steps        TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    ended_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX workflow_runs_tenant ON workflow_runs (tenant_id, id);
