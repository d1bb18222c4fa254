-- agentrt schema version 17: agents' long-term memories (store.Memories).
-- One row per memory, scoped by (tenant_id, agent, instance), with the
-- provenance of who wrote it; created_at is unix nanoseconds.
-- memories_fts indexes each memory's words (store.MemoryWords, written by
-- the driver in the memory's transaction) under the memory's seq: the
-- inverted index searches start from. It keeps no copy of the text
-- (contentless).
-- memory_words counts the memories holding each word and memory_stats the
-- memories and their words, kept by the driver in the same transactions:
-- the statistics of BM25, and how a search chooses its words by rarity
-- with a keyed read each.
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
    words, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0'
);
CREATE TABLE memory_words (
    word TEXT PRIMARY KEY,
    memories INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE memory_stats (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    memories INTEGER NOT NULL,
    words INTEGER NOT NULL
);
INSERT INTO memory_stats (id, memories, words) VALUES (1, 0, 0);
