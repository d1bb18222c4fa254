ALTER TABLE actions DROP COLUMN requested_schema;
DROP INDEX capability_runs_at;
DROP TABLE capability_runs;
DROP INDEX capability_sessions_tenant;
DROP INDEX capability_sessions_session;
DROP TABLE capability_sessions;
