-- agentrt schema version 21: schedules and their fires.
--
-- schedules holds runtype.Schedule: tools is a JSON array of strings
-- ('[]' for none), durations are integer nanoseconds, times unix
-- nanoseconds (0 for none). version is the optimistic concurrency token
-- of store.Batch.Schedules: an update names the version it read.
-- schedules_due serves ScheduleListDue, across tenants, and holds only
-- the schedules with a next check, so a poll costs what it returns;
-- schedules_soonest orders a tenant's active schedules with a next fire
-- by it.
--
-- fires holds runtype.Fire, upserted by ID; failure is the failure's
-- JSON, NULL for none. A fire time is recorded once: fires_time makes
-- (schedule_id, fire_at) unique for the fires not triggered by hand.
-- fires_schedule lists a schedule's fires by ID. An idempotency key
-- (a schedule's creation, a manual trigger) is unique: schedules_key in
-- the tenant, fires_key in the schedule.
--
-- A task a schedule started names its schedule and fire; a turn keeps
-- the overrides it runs with (runtype.TurnOverrides as JSON, NULL for
-- none).
ALTER TABLE tasks ADD COLUMN schedule_id TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN fire_id TEXT NOT NULL DEFAULT '';
ALTER TABLE turns ADD COLUMN overrides TEXT;

CREATE TABLE schedules (
    id                   TEXT    NOT NULL PRIMARY KEY,
    tenant_id            TEXT    NOT NULL,
    principal_id         TEXT    NOT NULL,
    name                 TEXT    NOT NULL,
    agent                TEXT    NOT NULL,
    session_id           TEXT    NOT NULL,
    instance             TEXT    NOT NULL,
    kind                 TEXT    NOT NULL,
    cron                 TEXT    NOT NULL,
    time_zone            TEXT    NOT NULL,
    every                INTEGER NOT NULL,
    at                   INTEGER NOT NULL,
    start_at             INTEGER NOT NULL,
    input                TEXT    NOT NULL,
    params               TEXT    NOT NULL,
    input_schema         TEXT    NOT NULL,
    model                TEXT    NOT NULL,
    tools                TEXT    NOT NULL,
    inactivity_timeout   INTEGER NOT NULL,
    overlap              TEXT    NOT NULL,
    catchup_window       INTEGER NOT NULL,
    pause_after_failures INTEGER NOT NULL,
    pre_run_tool         TEXT    NOT NULL,
    pre_run_input        TEXT    NOT NULL,
    webhook              TEXT    NOT NULL,
    status               TEXT    NOT NULL,
    paused_reason        TEXT    NOT NULL,
    next_fire_at         INTEGER NOT NULL,
    next_check_at        INTEGER NOT NULL,
    running              INTEGER NOT NULL,
    buffered             INTEGER NOT NULL,
    consecutive_failures INTEGER NOT NULL,
    fires                INTEGER NOT NULL,
    last_fire_at         INTEGER NOT NULL,
    trace_id             TEXT    NOT NULL,
    version              INTEGER NOT NULL,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    idempotency_key      TEXT    NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX schedules_key ON schedules (tenant_id, idempotency_key) WHERE idempotency_key <> '';
CREATE INDEX schedules_due ON schedules (next_check_at) WHERE next_check_at <> 0;
CREATE INDEX schedules_tenant ON schedules (tenant_id, id);
CREATE INDEX schedules_soonest ON schedules (tenant_id, next_fire_at) WHERE status = 'active' AND next_fire_at <> 0;

CREATE TABLE fires (
    id                TEXT    NOT NULL PRIMARY KEY,
    schedule_id       TEXT    NOT NULL,
    tenant_id         TEXT    NOT NULL,
    fire_at           INTEGER NOT NULL,
    manual            INTEGER NOT NULL,
    status            TEXT    NOT NULL,
    reason            TEXT    NOT NULL,
    missed_count      INTEGER NOT NULL,
    thread_id         TEXT    NOT NULL,
    turn_id           TEXT    NOT NULL,
    task_id           TEXT    NOT NULL,
    failure           TEXT,
    delivery          TEXT    NOT NULL,
    delivery_attempts INTEGER NOT NULL,
    delivery_error    TEXT    NOT NULL,
    delivery_next_at  INTEGER NOT NULL,
    delivered_at      INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    ended_at          INTEGER NOT NULL,
    idempotency_key   TEXT    NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX fires_key ON fires (schedule_id, idempotency_key) WHERE idempotency_key <> '';
CREATE UNIQUE INDEX fires_time ON fires (schedule_id, fire_at) WHERE manual = 0;
CREATE INDEX fires_schedule ON fires (tenant_id, schedule_id, id);
