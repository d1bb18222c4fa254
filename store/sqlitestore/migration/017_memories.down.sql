DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_insert;
DROP TABLE memories_fts;
DROP TABLE memories;
