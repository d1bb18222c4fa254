-- Placeholder on branch i16-index for another helper's migration 013 of issue 16;
-- the lead drops it when the branches are merged and renumbered.
SELECT 1;
