-- agentrt schema version 6: API tokens. A token is kept as the hex SHA-256
-- of its text, never the text: authentication hashes what a request
-- presents and looks the hash up through api_tokens_hash, so every
-- process on the file sees a token created, rotated or revoked by any of
-- them at once. prefix is the token's first characters, for people to
-- recognize it by. Times are unix nanoseconds, 0 for never (last_used_at,
-- revoked_at).

CREATE TABLE api_tokens (
    id           TEXT    NOT NULL PRIMARY KEY,
    tenant_id    TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    role         TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    prefix       TEXT    NOT NULL,
    hash         TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL,
    revoked_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (hash);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id, created_at);
