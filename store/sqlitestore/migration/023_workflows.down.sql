DROP TABLE workflow_runs;
ALTER TABLE tasks DROP COLUMN workflow_step;
ALTER TABLE tasks DROP COLUMN workflow_run_id;
