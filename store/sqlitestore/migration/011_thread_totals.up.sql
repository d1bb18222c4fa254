-- agentrt schema version 11: a thread's running totals. A turn's load
-- (the coordinator's conversation cache checks its thread against them)
-- and a thread's read model (its message count) would otherwise read
-- every message and turn of the thread, so that a long session slows
-- down with its length. thread_totals keeps, per thread:
--
--   last_seq      the highest message sequence,
--   messages      how many messages it has,
--   rollback_gen  a count that rises whenever one of its turns becomes,
--                 or stops being, cancelled by a rollback (status
--                 cancelled, reason rolled_back): such a turn's messages
--                 leave the conversation, or come back.
--
-- Triggers change them in the transaction that inserts a message or
-- writes a turn. They are a projection of the messages and turns tables:
-- the INSERT below rebuilds them from those (storetest holds the store
-- to it).

CREATE TABLE thread_totals (
    thread_id    TEXT    NOT NULL PRIMARY KEY,
    last_seq     INTEGER NOT NULL,
    messages     INTEGER NOT NULL,
    rollback_gen INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen)
    SELECT th.id,
        COALESCE((SELECT max(seq) FROM messages m WHERE m.thread_id = th.id), 0),
        (SELECT count(*) FROM messages m WHERE m.thread_id = th.id),
        (SELECT count(*) FROM turns t INDEXED BY turns_session
            WHERE t.session_id = th.session_id AND t.thread_id = th.id
            AND t.status = 'cancelled' AND t.status_reason = 'rolled_back')
    FROM threads th;

CREATE TRIGGER threads_totals_insert AFTER INSERT ON threads BEGIN
    INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen) VALUES (new.id, 0, 0, 0)
        ON CONFLICT (thread_id) DO NOTHING;
END;
CREATE TRIGGER messages_totals_insert AFTER INSERT ON messages BEGIN
    INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen) VALUES (new.thread_id, new.seq, 1, 0)
        ON CONFLICT (thread_id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq), messages = messages + 1;
END;
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
