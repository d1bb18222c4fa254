DROP TRIGGER actions_count_delete;
DROP TRIGGER actions_count_update;
DROP TRIGGER actions_count_insert;
DROP TABLE action_counts;
DROP INDEX turns_tenant_status;
