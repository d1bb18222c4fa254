-- agentrt schema version 19: the tasks that hold their thread (neither
-- ended nor blocked), by thread, so that submitting a turn and claiming
-- one read only those, not every task the thread ever had.
CREATE INDEX tasks_open ON tasks (thread_id, queued_at)
    WHERE status NOT IN ('completed', 'failed', 'cancelled', 'timed_out', 'lost', 'blocked');
