ALTER TABLE tool_calls DROP COLUMN progress_at;
ALTER TABLE tool_calls DROP COLUMN progress_message;
ALTER TABLE tool_calls DROP COLUMN progress_total;
ALTER TABLE tool_calls DROP COLUMN progress;
