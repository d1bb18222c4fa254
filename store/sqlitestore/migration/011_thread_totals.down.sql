DROP TRIGGER turns_totals_update;
DROP TRIGGER turns_totals_insert;
DROP TRIGGER messages_totals_insert;
DROP TRIGGER threads_totals_insert;
DROP TABLE thread_totals;
