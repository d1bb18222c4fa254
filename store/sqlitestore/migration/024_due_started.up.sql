-- agentrt schema version 24: tasks_due_started lists the due tasks that
-- started (a resume, a retry, a lost worker's task), which a worker takes
-- before new ones: reading them no longer reads, nor sorts, every due
-- task of a long queue.
CREATE INDEX tasks_due_started ON tasks (due_at, queued_at) WHERE due_at <> 0 AND current_run_id <> '';
