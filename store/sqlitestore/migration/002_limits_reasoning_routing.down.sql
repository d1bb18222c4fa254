DROP TABLE limits;
DROP INDEX runs_tenant_started;
ALTER TABLE runs DROP COLUMN routing;
ALTER TABLE messages DROP COLUMN reasoning;
