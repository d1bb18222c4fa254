-- agentrt schema version 8: the hop of the call an action decides, so
-- that permission.resolved names it as permission.evaluated did.
--
-- Actions recorded before have theirs from the call's record when the
-- call ran, or else from their run: a run parks at the hop that asked.

ALTER TABLE actions ADD COLUMN hop INTEGER NOT NULL DEFAULT 0;
UPDATE actions SET hop = COALESCE(
    (SELECT c.hop FROM tool_calls c WHERE c.session_id = actions.session_id AND c.id = actions.tool_call_id),
    (SELECT r.hops FROM runs r WHERE r.id = actions.run_id),
    0);
