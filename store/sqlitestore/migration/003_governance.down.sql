DROP TABLE receipts;
DROP TABLE policy_grants;
DROP TABLE actions;
ALTER TABLE sessions DROP COLUMN policy_mode;
