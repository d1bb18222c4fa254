-- Placeholder for schema version 17, which another branch of issue 18 adds;
-- the merge replaces this file with that migration.
SELECT 1;
