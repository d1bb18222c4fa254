-- agentrt schema version 16: a thread's context outlives the model's
-- window. messages.boundary (JSON, NULL for most messages) marks a
-- compaction summary or a reset's handoff; threads.lineage (JSON, NULL for
-- a thread that began on its own) links a reset's or a fork's thread to
-- the one it continues, and threads.source_thread_id indexes that link
-- both ways; turns.kind is '' for a turn that answers its input, or a
-- maintenance turn (compact, reset).
ALTER TABLE messages ADD COLUMN boundary TEXT;
ALTER TABLE threads ADD COLUMN lineage TEXT;
ALTER TABLE threads ADD COLUMN source_thread_id TEXT NOT NULL DEFAULT '';
CREATE INDEX threads_source ON threads (source_thread_id) WHERE source_thread_id <> '';
ALTER TABLE turns ADD COLUMN kind TEXT NOT NULL DEFAULT '';
