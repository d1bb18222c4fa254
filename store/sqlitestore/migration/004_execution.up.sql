-- agentrt schema version 4: sandbox escalation offers on actions.
--
-- An action of type sandbox_escalation offers to rerun a tool call that
-- the sandbox refused under a wider profile; escalation names that
-- profile. Other actions have ''.

ALTER TABLE actions ADD COLUMN escalation TEXT NOT NULL DEFAULT '';
