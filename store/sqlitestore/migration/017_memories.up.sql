-- agentrt schema version 17: agents' long-term memories (store.Memories).
-- One row per memory, scoped by (tenant_id, agent, instance), with the
-- provenance of who wrote it; memories_fts indexes the content for BM25
-- ranked search (FTS5, porter stemming over unicode61 tokens), kept in
-- step by triggers. created_at is unix nanoseconds.
CREATE TABLE memories (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    instance TEXT NOT NULL DEFAULT '',
    principal_id TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    turn_id TEXT NOT NULL DEFAULT '',
    run_id TEXT NOT NULL DEFAULT '',
    tool_call_id TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX memories_scope ON memories (tenant_id, agent, instance, seq);
CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, content = 'memories', content_rowid = 'seq', tokenize = 'porter unicode61'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;
