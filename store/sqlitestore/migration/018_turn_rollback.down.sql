DROP TRIGGER turns_totals_insert;
DROP TRIGGER turns_totals_update;
CREATE TRIGGER turns_totals_insert AFTER INSERT ON turns
    WHEN new.status = 'cancelled' AND new.status_reason = 'rolled_back' BEGIN
    INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen) VALUES (new.thread_id, 0, 0, 1)
        ON CONFLICT (thread_id) DO UPDATE SET rollback_gen = rollback_gen + 1;
END;
CREATE TRIGGER turns_totals_update AFTER UPDATE OF status, status_reason ON turns
    WHEN (old.status = 'cancelled' AND old.status_reason = 'rolled_back')
        <> (new.status = 'cancelled' AND new.status_reason = 'rolled_back') BEGIN
    INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen) VALUES (new.thread_id, 0, 0, 1)
        ON CONFLICT (thread_id) DO UPDATE SET rollback_gen = rollback_gen + 1;
END;
DROP INDEX turns_rolled_back;
ALTER TABLE turns DROP COLUMN rolled_back_at;
