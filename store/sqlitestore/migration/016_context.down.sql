-- agentrt schema version 16 is the lead's (context boundaries, lineage,
-- turn kinds) on main; this placeholder keeps the i18-memory branch's
-- numbering whole until it is merged. Take main's 016 on merge.
SELECT 1;
