ALTER TABLE actions DROP COLUMN escalation;
