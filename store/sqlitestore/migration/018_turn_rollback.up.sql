-- agentrt schema version 18: rollback_thread takes completed turns back.
-- turns.rolled_back_at (Unix nanoseconds, 0 when not) marks a turn whose
-- messages left its thread's conversation while its facts and status
-- stand. thread_totals.rollback_gen now rises when a turn becomes, or
-- stops being, rolled back either way: cancelled by a newer turn's
-- rollback (status cancelled, reason rolled_back) or marked.
-- turns_rolled_back indexes both kinds, per thread, for the coordinator's
-- read of them.
ALTER TABLE turns ADD COLUMN rolled_back_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX turns_rolled_back ON turns (thread_id, id)
    WHERE rolled_back_at <> 0 OR (status = 'cancelled' AND status_reason = 'rolled_back');
DROP TRIGGER turns_totals_insert;
DROP TRIGGER turns_totals_update;
CREATE TRIGGER turns_totals_insert AFTER INSERT ON turns
    WHEN new.rolled_back_at <> 0 OR (new.status = 'cancelled' AND new.status_reason = 'rolled_back') BEGIN
    INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen) VALUES (new.thread_id, 0, 0, 1)
        ON CONFLICT (thread_id) DO UPDATE SET rollback_gen = rollback_gen + 1;
END;
CREATE TRIGGER turns_totals_update AFTER UPDATE OF status, status_reason, rolled_back_at ON turns
    WHEN (old.rolled_back_at <> 0 OR (old.status = 'cancelled' AND old.status_reason = 'rolled_back'))
        <> (new.rolled_back_at <> 0 OR (new.status = 'cancelled' AND new.status_reason = 'rolled_back')) BEGIN
    INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen) VALUES (new.thread_id, 0, 0, 1)
        ON CONFLICT (thread_id) DO UPDATE SET rollback_gen = rollback_gen + 1;
END;
