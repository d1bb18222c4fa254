-- Reverting 012 puts every event's JSON back whole (a compacted body's
-- control bytes replaced by the fields of its scope, as compact.go reads
-- them) and gives receipts back their copies.
ALTER TABLE events RENAME TO events_v12;
CREATE TABLE events (
    cursor     INTEGER NOT NULL PRIMARY KEY,
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    sequence   INTEGER NOT NULL,
    turn_id    TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    data       BLOB    NOT NULL,
    UNIQUE (session_id, sequence)
);
WITH whole AS (
    SELECT e.cursor, s.tenant_id, e.session_id, e.sequence, s.turn_id,
        CASE WHEN substr(e.body, 1, 1) = x'01' THEN CAST(
            replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
                substr(CAST(e.body AS TEXT), 2),
                char(2), '"schemaVersion":"agentruntime-0.4.0",'),
                char(3), '"runtimeId":"' || s.runtime_id || '",'),
                char(4), '"sequence":' || e.sequence || ','),
                char(5), '"sessionId":"' || s.session_id || '",'),
                char(6), '"threadId":"' || s.thread_id || '",'),
                char(7), '"turnId":"' || s.turn_id || '",'),
                char(8), '"taskId":"' || s.task_id || '",'),
                char(11), '"runId":"' || s.run_id || '",'),
                char(12), '"attemptId":"' || s.run_id || '",'),
                char(14), '"traceId":"' || s.trace_id || '",')
            AS BLOB) ELSE e.body END AS data
    FROM events_v12 e JOIN event_scopes s ON s.id = e.scope
)
INSERT INTO events (cursor, tenant_id, session_id, sequence, turn_id, type, data)
    SELECT cursor, tenant_id, session_id, sequence, turn_id, COALESCE(json_extract(data, '$.type'), ''), data FROM whole;

ALTER TABLE receipts RENAME TO receipts_v12;
CREATE TABLE receipts (
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    event_id   TEXT    NOT NULL,
    event_type TEXT    NOT NULL,
    body       BLOB    NOT NULL,
    prev_hash  TEXT    NOT NULL,
    hash       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id, seq)
);
WITH hexed AS (
    SELECT r.*, CASE WHEN typeof(r.hash) = 'blob' THEN lower(hex(r.hash)) ELSE r.hash END AS hex_hash
    FROM receipts_v12 r
)
INSERT INTO receipts (tenant_id, session_id, seq, event_id, event_type, body, prev_hash, hash, created_at)
    SELECT r.tenant_id, r.session_id, r.seq,
        COALESCE(r.event_id, json_extract(e.data, '$.eventId'), ''),
        COALESCE(r.event_type, json_extract(e.data, '$.type'), ''),
        COALESCE(r.body, e.data, x''),
        COALESCE(r.prev_hash, lag(r.hex_hash, 1, '') OVER (PARTITION BY r.tenant_id, r.session_id ORDER BY r.seq)),
        r.hex_hash, r.created_at
    FROM hexed r LEFT JOIN events e ON e.cursor = r.cursor AND r.cursor <> 0;

DROP TABLE receipts_v12;
DROP TABLE events_v12;
DROP TABLE event_scopes;
