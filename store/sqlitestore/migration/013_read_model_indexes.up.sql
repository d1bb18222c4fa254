-- agentrt schema version 13: the operator's reads stay flat as the store
-- grows.
--
-- turns_tenant_status lists a tenant's turns in one status, newest first,
-- reading only those: the requests listed by status (agentrt requests
-- --status failed, the overview's attention and open requests) walked
-- turns_tenant through every turn of the tenant to find the few that wait
-- or failed. Rows in a set of statuses are a merge of one walk per status.
CREATE INDEX turns_tenant_status ON turns (tenant_id, status, id);

-- action_counts counts the actions by tenant and status, for health and
-- the metrics: counting the pending ones walked an index through every
-- pending action, one per parked session. Triggers change the counts in
-- the transaction that changes an action, as task_queue_counts
-- (migration 6) does for the queue. The counts are a projection of the
-- actions table: the INSERT below rebuilds them from it (a test holds the
-- triggers to it).
CREATE TABLE action_counts (
    tenant_id TEXT    NOT NULL,
    status    TEXT    NOT NULL,
    n         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, status)
) WITHOUT ROWID;
INSERT INTO action_counts (tenant_id, status, n)
    SELECT tenant_id, status, count(*) FROM actions GROUP BY tenant_id, status;

CREATE TRIGGER actions_count_insert AFTER INSERT ON actions BEGIN
    INSERT INTO action_counts (tenant_id, status, n) VALUES (new.tenant_id, new.status, 1)
        ON CONFLICT (tenant_id, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER actions_count_update AFTER UPDATE OF status, tenant_id ON actions
    WHEN old.status <> new.status OR old.tenant_id <> new.tenant_id BEGIN
    UPDATE action_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND status = old.status;
    INSERT INTO action_counts (tenant_id, status, n) VALUES (new.tenant_id, new.status, 1)
        ON CONFLICT (tenant_id, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER actions_count_delete AFTER DELETE ON actions BEGIN
    UPDATE action_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND status = old.status;
END;
