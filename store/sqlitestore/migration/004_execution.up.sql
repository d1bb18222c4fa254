-- agentrt schema version 4: sandbox escalation offers on actions.
--
-- An action of type sandbox_escalation offers to rerun a tool call that
-- the sandbox refused under a wider profile; escalation names that
-- profile. Other actions have ''. input is the input a call was decided
-- with when a hook rewrote it or a person edited it before it parked
-- again; '' means the model's arguments.

ALTER TABLE actions ADD COLUMN escalation TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN input TEXT NOT NULL DEFAULT '';
