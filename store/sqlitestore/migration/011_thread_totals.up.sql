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
--                 leave the conversation, or come back,
--   input_tokens … cost_usd  the sum of its runs' usage;
--
-- and thread_turn_counts its turns by status, while turns_thread_open
-- indexes the turns that are not completed (a read model shows them
-- however old).
--
-- Triggers change them in the transaction that inserts a message or
-- writes a turn or run. They are a projection of the messages, turns and
-- runs tables: the INSERTs below rebuild them from those (storetest holds
-- the stores to it).

CREATE TABLE thread_totals (
    thread_id    TEXT    NOT NULL PRIMARY KEY,
    last_seq     INTEGER NOT NULL,
    messages     INTEGER NOT NULL,
    rollback_gen INTEGER NOT NULL,
    input_tokens        INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens       INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens    INTEGER NOT NULL DEFAULT 0,
    cost_usd            REAL    NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen)
    SELECT th.id,
        COALESCE((SELECT max(seq) FROM messages m WHERE m.thread_id = th.id), 0),
        (SELECT count(*) FROM messages m WHERE m.thread_id = th.id),
        (SELECT count(*) FROM turns t INDEXED BY turns_session
            WHERE t.session_id = th.session_id AND t.thread_id = th.id
            AND t.status = 'cancelled' AND t.status_reason = 'rolled_back')
    FROM threads th;
UPDATE thread_totals SET
    input_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.inputTokens')), 0) FROM runs WHERE runs.thread_id = thread_totals.thread_id),
    cached_input_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.cachedInputTokens')), 0) FROM runs WHERE runs.thread_id = thread_totals.thread_id),
    output_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.outputTokens')), 0) FROM runs WHERE runs.thread_id = thread_totals.thread_id),
    reasoning_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.reasoningTokens')), 0) FROM runs WHERE runs.thread_id = thread_totals.thread_id),
    cost_usd = (SELECT TOTAL(json_extract(usage, '$.costUsd')) FROM runs WHERE runs.thread_id = thread_totals.thread_id);

CREATE TABLE thread_turn_counts (
    thread_id TEXT    NOT NULL,
    status    TEXT    NOT NULL,
    turns     INTEGER NOT NULL,
    PRIMARY KEY (thread_id, status)
) WITHOUT ROWID;
INSERT INTO thread_turn_counts (thread_id, status, turns)
    SELECT thread_id, status, count(*) FROM turns GROUP BY thread_id, status;
CREATE INDEX turns_thread_open ON turns (thread_id, id) WHERE status <> 'completed';

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
CREATE TRIGGER turns_counts_insert AFTER INSERT ON turns BEGIN
    INSERT INTO thread_turn_counts (thread_id, status, turns) VALUES (new.thread_id, new.status, 1)
        ON CONFLICT (thread_id, status) DO UPDATE SET turns = turns + 1;
END;
CREATE TRIGGER turns_counts_update AFTER UPDATE OF status, thread_id ON turns
    WHEN old.status <> new.status OR old.thread_id <> new.thread_id BEGIN
    UPDATE thread_turn_counts SET turns = turns - 1 WHERE thread_id = old.thread_id AND status = old.status;
    INSERT INTO thread_turn_counts (thread_id, status, turns) VALUES (new.thread_id, new.status, 1)
        ON CONFLICT (thread_id, status) DO UPDATE SET turns = turns + 1;
END;
CREATE TRIGGER runs_totals_insert AFTER INSERT ON runs BEGIN
    INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen,
        input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_usd)
    VALUES (new.thread_id, 0, 0, 0,
        COALESCE(json_extract(new.usage, '$.inputTokens'), 0), COALESCE(json_extract(new.usage, '$.cachedInputTokens'), 0),
        COALESCE(json_extract(new.usage, '$.outputTokens'), 0), COALESCE(json_extract(new.usage, '$.reasoningTokens'), 0),
        COALESCE(json_extract(new.usage, '$.costUsd'), 0))
    ON CONFLICT (thread_id) DO UPDATE SET
        input_tokens = input_tokens + excluded.input_tokens, cached_input_tokens = cached_input_tokens + excluded.cached_input_tokens,
        output_tokens = output_tokens + excluded.output_tokens, reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
        cost_usd = cost_usd + excluded.cost_usd;
END;
CREATE TRIGGER runs_totals_update AFTER UPDATE OF usage, thread_id ON runs
    WHEN old.usage <> new.usage OR old.thread_id <> new.thread_id BEGIN
    UPDATE thread_totals SET
        input_tokens = input_tokens - COALESCE(json_extract(old.usage, '$.inputTokens'), 0),
        cached_input_tokens = cached_input_tokens - COALESCE(json_extract(old.usage, '$.cachedInputTokens'), 0),
        output_tokens = output_tokens - COALESCE(json_extract(old.usage, '$.outputTokens'), 0),
        reasoning_tokens = reasoning_tokens - COALESCE(json_extract(old.usage, '$.reasoningTokens'), 0),
        cost_usd = cost_usd - COALESCE(json_extract(old.usage, '$.costUsd'), 0)
    WHERE thread_id = old.thread_id;
    INSERT INTO thread_totals (thread_id, last_seq, messages, rollback_gen,
        input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_usd)
    VALUES (new.thread_id, 0, 0, 0,
        COALESCE(json_extract(new.usage, '$.inputTokens'), 0), COALESCE(json_extract(new.usage, '$.cachedInputTokens'), 0),
        COALESCE(json_extract(new.usage, '$.outputTokens'), 0), COALESCE(json_extract(new.usage, '$.reasoningTokens'), 0),
        COALESCE(json_extract(new.usage, '$.costUsd'), 0))
    ON CONFLICT (thread_id) DO UPDATE SET
        input_tokens = input_tokens + excluded.input_tokens, cached_input_tokens = cached_input_tokens + excluded.cached_input_tokens,
        output_tokens = output_tokens + excluded.output_tokens, reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
        cost_usd = cost_usd + excluded.cost_usd;
END;
