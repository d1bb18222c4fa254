CREATE INDEX tasks_queued ON tasks (tenant_id) WHERE status = 'queued';
DROP TRIGGER tasks_queue_delete;
DROP TRIGGER tasks_queue_update;
DROP TRIGGER tasks_queue_insert;
DROP TABLE task_queue_total;
DROP TABLE task_queue_counts;
