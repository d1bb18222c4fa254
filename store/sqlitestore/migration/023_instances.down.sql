DROP TABLE instances;
