DROP INDEX tasks_due_started;
