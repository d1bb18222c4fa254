-- agentrt schema version 9: sessions list newest first by creation time,
-- whatever their ids look like, and say when they were last active.
--
-- sessions_tenant_created orders a tenant's sessions by creation time,
-- then id: a page of the list reads its rows in index order, and a
-- page's last session (created_at and id never change) is where the
-- next starts. It replaces sessions_tenant, which ordered them by id: a
-- caller-named session ("customer-42") sorted by its name.
--
-- updated_at becomes the latest submission or end of the session's turns
-- (store.SessionActivity), which writing a turn keeps; the UPDATE below
-- gives recorded sessions theirs from the turns table.

CREATE INDEX sessions_tenant_created ON sessions (tenant_id, created_at, id);
DROP INDEX sessions_tenant;
UPDATE sessions SET updated_at = max(updated_at, COALESCE(
    (SELECT max(max(t.created_at, t.ended_at)) FROM turns t WHERE t.session_id = sessions.id AND t.tenant_id = sessions.tenant_id),
    0));
