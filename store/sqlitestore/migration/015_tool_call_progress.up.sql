-- agentrt schema version 15: the last progress a running tool call
-- reported (an MCP server's progress notifications), NULL in every column
-- when it reported none. progress_at is unix nanoseconds.
ALTER TABLE tool_calls ADD COLUMN progress REAL;
ALTER TABLE tool_calls ADD COLUMN progress_total REAL;
ALTER TABLE tool_calls ADD COLUMN progress_message TEXT;
ALTER TABLE tool_calls ADD COLUMN progress_at INTEGER;
