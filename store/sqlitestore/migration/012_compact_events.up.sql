-- agentrt schema version 12: a compact step record.
--
-- An event used to store its whole envelope as JSON, with the ids that
-- every event of a run repeats (runtime, session, thread, turn, task, run,
-- trace) in each row. Those ids are now stored once, in an event_scopes
-- row that the events of a run share, and each event names its scope by
-- number. The stored body is the envelope's JSON, byte for byte, with
-- the scope's fields, the schema version and the sequence (the
-- events.sequence column) each replaced by one control byte; a body that
-- starts with byte 0x01 is so compacted, one that starts with '{' is the
-- JSON as it was (the events recorded before this version). Control bytes
-- cannot appear in JSON, so reading puts the fields back exactly (see
-- compact.go). The wire and the event stream still carry the same bytes.
--
-- event_scopes rows are never changed or deleted, so a process may cache
-- which row holds which ids; a run that starts again in another process
-- gets a second row with the same ids, which reads back the same.
-- Events filtered by tenant or turn read those through their scope.
--
-- A receipt used to copy its sealed event's JSON and ids. It now names
-- the event by cursor and keeps only its hash (32 bytes, not 64 hex
-- characters) and time: the body, the event's id and type are the
-- event's, and prev_hash is the hash of the receipt before it. Receipts
-- are small enough now for a WITHOUT ROWID table, one b-tree instead of
-- two. The columns event_id, event_type, body and prev_hash remain, NULL,
-- for a recorded receipt that does not match its event or its chain as
-- the rule says (none should): it keeps what it had, so that verifying
-- the chain finds what it found before.
--
-- Existing events keep their JSON as it was, with a scope of their
-- tenant, session and turn.
CREATE TABLE event_scopes (
    id         INTEGER NOT NULL PRIMARY KEY,
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    thread_id  TEXT    NOT NULL,
    turn_id    TEXT    NOT NULL,
    task_id    TEXT    NOT NULL,
    run_id     TEXT    NOT NULL,
    trace_id   TEXT    NOT NULL,
    runtime_id TEXT    NOT NULL
);
INSERT INTO event_scopes (tenant_id, session_id, thread_id, turn_id, task_id, run_id, trace_id, runtime_id)
    SELECT DISTINCT tenant_id, session_id, '', turn_id, '', '', '', '' FROM events ORDER BY 1, 2, 4;
CREATE INDEX event_scopes_v11 ON event_scopes (tenant_id, session_id, turn_id);

ALTER TABLE events RENAME TO events_v11;
CREATE TABLE events (
    cursor     INTEGER NOT NULL PRIMARY KEY,
    session_id TEXT    NOT NULL,
    sequence   INTEGER NOT NULL,
    scope      INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    UNIQUE (session_id, sequence)
);
INSERT INTO events (cursor, session_id, sequence, scope, body)
    SELECT e.cursor, e.session_id, e.sequence, s.id, e.data
    FROM events_v11 e JOIN event_scopes s INDEXED BY event_scopes_v11
        ON s.tenant_id = e.tenant_id AND s.session_id = e.session_id AND s.turn_id = e.turn_id;

-- Each receipt's event: the session's event with its id, type and body.
CREATE TEMP TABLE receipt_events (
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    cursor     INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id, seq)
) WITHOUT ROWID;
CREATE TEMP TABLE event_ids AS
    SELECT cursor, tenant_id, session_id, type, json_extract(data, '$.eventId') AS event_id
    FROM events_v11 WHERE json_valid(data) AND session_id IN (SELECT session_id FROM receipts);
CREATE INDEX temp.event_ids_key ON event_ids (session_id, event_id);
INSERT OR IGNORE INTO receipt_events (tenant_id, session_id, seq, cursor)
    SELECT r.tenant_id, r.session_id, r.seq, i.cursor
    FROM receipts r JOIN event_ids i ON i.session_id = r.session_id AND i.event_id = r.event_id
        AND i.tenant_id = r.tenant_id AND i.type = r.event_type
    JOIN events_v11 e ON e.cursor = i.cursor AND e.data = r.body;

ALTER TABLE receipts RENAME TO receipts_v11;
CREATE TABLE receipts (
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    cursor     INTEGER NOT NULL,
    hash       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    event_id   TEXT,
    event_type TEXT,
    body       BLOB,
    prev_hash  TEXT,
    PRIMARY KEY (tenant_id, session_id, seq)
) WITHOUT ROWID;
INSERT INTO receipts (tenant_id, session_id, seq, cursor, hash, created_at, event_id, event_type, body, prev_hash)
    SELECT r.tenant_id, r.session_id, r.seq, COALESCE(m.cursor, 0),
        CASE WHEN length(r.hash) = 64 AND r.hash = lower(r.hash) AND unhex(r.hash) IS NOT NULL
            THEN unhex(r.hash) ELSE r.hash END,
        r.created_at,
        CASE WHEN m.cursor IS NULL THEN r.event_id END,
        CASE WHEN m.cursor IS NULL THEN r.event_type END,
        CASE WHEN m.cursor IS NULL THEN r.body END,
        CASE WHEN r.prev_hash IS NOT COALESCE((SELECT p.hash FROM receipts_v11 p
            WHERE p.tenant_id = r.tenant_id AND p.session_id = r.session_id AND p.seq = r.seq - 1), '')
            THEN r.prev_hash END
    FROM receipts_v11 r LEFT JOIN receipt_events m
        ON m.tenant_id = r.tenant_id AND m.session_id = r.session_id AND m.seq = r.seq;

DROP TABLE temp.receipt_events;
DROP TABLE temp.event_ids;
DROP TABLE receipts_v11;
DROP TABLE events_v11;
DROP INDEX event_scopes_v11;
