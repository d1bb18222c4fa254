ALTER TABLE turns DROP COLUMN kind;
DROP INDEX threads_source;
ALTER TABLE threads DROP COLUMN source_thread_id;
ALTER TABLE threads DROP COLUMN lineage;
ALTER TABLE messages DROP COLUMN boundary;
