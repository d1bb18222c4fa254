-- agentrt schema version 11 is reserved for a change made alongside
-- version 12 (the thread projections); this placeholder keeps the versions
-- without a gap until both are merged, and does nothing.
SELECT 1;
