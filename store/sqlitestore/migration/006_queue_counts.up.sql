-- agentrt schema version 6: queue counts for admission. A submission is
-- admitted only while its tenant's and the store's queued tasks are under
-- their limits, checked in the transaction that inserts it; counting the
-- queue there would cost a walk of the queue per submission, so the
-- counts are kept: task_queue_counts by tenant, task_queue_total for
-- every tenant, both changed by triggers in the transaction that changes
-- a task's status. They replace the tasks_queued index, which cost a page
-- of the same changes.
--
-- The counts are a projection of the tasks table: the two INSERTs below
-- rebuild them from it (a test holds the triggers to them).

CREATE TABLE task_queue_counts (
    tenant_id TEXT    NOT NULL PRIMARY KEY,
    queued    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE task_queue_total (
    id     INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    queued INTEGER NOT NULL
);
INSERT INTO task_queue_counts (tenant_id, queued)
    SELECT tenant_id, count(*) FROM tasks WHERE status = 'queued' GROUP BY tenant_id;
INSERT INTO task_queue_total (id, queued)
    SELECT 1, count(*) FROM tasks WHERE status = 'queued';

CREATE TRIGGER tasks_queue_insert AFTER INSERT ON tasks WHEN new.status = 'queued' BEGIN
    INSERT INTO task_queue_counts (tenant_id, queued) VALUES (new.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET queued = queued + 1;
    UPDATE task_queue_total SET queued = queued + 1;
END;
CREATE TRIGGER tasks_queue_update AFTER UPDATE OF status, tenant_id ON tasks
    WHEN (old.status = 'queued' OR new.status = 'queued')
        AND (old.status <> new.status OR old.tenant_id <> new.tenant_id) BEGIN
    UPDATE task_queue_counts SET queued = queued - 1 WHERE old.status = 'queued' AND tenant_id = old.tenant_id;
    INSERT INTO task_queue_counts (tenant_id, queued) SELECT new.tenant_id, 1 WHERE new.status = 'queued'
        ON CONFLICT (tenant_id) DO UPDATE SET queued = queued + 1;
    UPDATE task_queue_total SET queued = queued + (new.status = 'queued') - (old.status = 'queued');
END;
CREATE TRIGGER tasks_queue_delete AFTER DELETE ON tasks WHEN old.status = 'queued' BEGIN
    UPDATE task_queue_counts SET queued = queued - 1 WHERE tenant_id = old.tenant_id;
    UPDATE task_queue_total SET queued = queued - 1;
END;

DROP INDEX tasks_queued;
