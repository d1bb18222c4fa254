DROP TABLE memory_stats;
DROP TABLE memory_words;
DROP TABLE memories_fts;
DROP TABLE memories;
