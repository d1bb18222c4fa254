ALTER TABLE actions DROP COLUMN input;
ALTER TABLE actions DROP COLUMN escalation;
