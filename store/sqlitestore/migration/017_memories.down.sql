DROP TABLE memory_words;
DROP TABLE memories_fts;
DROP TABLE memories;
