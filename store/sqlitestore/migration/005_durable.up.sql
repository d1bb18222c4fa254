-- agentrt schema version 5: durable scheduling. Tasks carry what a worker
-- needs to claim them from the store: when they were queued and are next
-- due, the lease a worker holds on them (owner, epoch, expiry), an
-- operator's standing control (cancel, pause) and how many runs they had.
-- Runs name the worker that ran them.
--
-- Times are unix nanoseconds like the others, 0 for none: a due_at of 0
-- means the task is not due. Rewriting a task whole leaves the scheduling
-- columns alone (only lease changes and task updates set them), and the
-- usual rewrite is an UPDATE that assigns no indexed column, so the two
-- indexes cost a page when a task is created or rescheduled, not when its
-- status changes.
--
-- tasks_due holds only the tasks that are due some time and lists them in
-- the order workers claim them (due_at, queued_at, then the key, which a
-- WITHOUT ROWID index ends with). tasks_thread finds the tasks queued
-- before one in its thread: a queued task waits for the open ones.
--
-- Existing tasks count as queued when they were created, with as many
-- attempts as they have runs. Those a worker would have run (queued, or
-- cut off while running) are due at once, so that the first start after
-- the upgrade takes them up; parked and finished ones are not due.
--
-- tasks_queued counts a tenant's queued tasks for admission.

ALTER TABLE tasks ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN queued_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN due_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN lease_expires_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN control TEXT NOT NULL DEFAULT '';
UPDATE tasks SET queued_at = created_at, attempts = (SELECT count(*) FROM runs WHERE runs.task_id = tasks.id);
UPDATE tasks SET due_at = created_at WHERE status IN ('accepted', 'queued', 'preparing', 'running', 'cancelling');
CREATE INDEX tasks_queued ON tasks (tenant_id) WHERE status = 'queued';
CREATE INDEX tasks_due ON tasks (due_at, queued_at) WHERE due_at <> 0;
CREATE INDEX tasks_thread ON tasks (thread_id, queued_at);

ALTER TABLE runs ADD COLUMN worker TEXT NOT NULL DEFAULT '';
