-- 0001: core schema. Times are unix seconds (REAL). Never edit once applied; add a new file.

CREATE TABLE api_keys (
    id            TEXT PRIMARY KEY,              -- public id, e.g. key_3f9a...
    name          TEXT NOT NULL,
    key_hash      TEXT NOT NULL UNIQUE,          -- sha256 hex of the secret; the secret is never stored
    prefix        TEXT NOT NULL,                 -- first characters of the secret, for display
    created_at    REAL NOT NULL,
    revoked_at    REAL,
    last_used_at  REAL
);

CREATE TABLE memories (
    id                INTEGER PRIMARY KEY,       -- rowid: FTS5 and vec0 join on it
    public_id         TEXT NOT NULL UNIQUE,
    owner_id          TEXT NOT NULL,             -- api key id, or 'global'
    user_id           TEXT NOT NULL DEFAULT '',  -- end user behind the key; '' = owner-wide
    session_id        TEXT,                      -- set only for session-scoped memories
    type              TEXT NOT NULL CHECK (type IN ('factual','episodic','procedural','semantic')),
    category          TEXT NOT NULL CHECK (category IN
                        ('preference','decision','pattern','fact','correction','context','turn','summary')),
    key               TEXT NOT NULL,             -- upsert key, unique per owner + user
    content           TEXT NOT NULL,
    search_text       TEXT NOT NULL,             -- what the FTS5 index sees (content, key, CJK bigrams)
    metadata          TEXT NOT NULL DEFAULT '{}',
    source            TEXT NOT NULL DEFAULT 'api',
    created_at        REAL NOT NULL,
    updated_at        REAL NOT NULL,
    expires_at        REAL,
    last_accessed_at  REAL,
    access_count      INTEGER NOT NULL DEFAULT 0,
    relevance         REAL NOT NULL DEFAULT 1.0,
    needs_reindex     INTEGER NOT NULL DEFAULT 1,
    UNIQUE (owner_id, user_id, key)
);
CREATE INDEX memories_owner_updated ON memories (owner_id, user_id, updated_at);
CREATE INDEX memories_expires ON memories (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX memories_reindex ON memories (needs_reindex) WHERE needs_reindex = 1;

-- External-content FTS5 index keyed on the integer rowid. The update trigger fires only when
-- search_text changes, so access-counter updates never rewrite the index (DESIGN §3, §7).
CREATE VIRTUAL TABLE memory_fts USING fts5(
    search_text,
    content = 'memories',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memory_fts (rowid, search_text) VALUES (new.id, new.search_text);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF search_text ON memories
WHEN old.search_text IS NOT new.search_text BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
    INSERT INTO memory_fts (rowid, search_text) VALUES (new.id, new.search_text);
END;

CREATE TABLE memory_vec_meta (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    dim        INTEGER NOT NULL,
    signature  TEXT NOT NULL,                   -- source:model:dim[:int8]
    reset_at   REAL NOT NULL
);

CREATE TABLE memory_events (
    id          INTEGER PRIMARY KEY,
    owner_id    TEXT NOT NULL,
    user_id     TEXT NOT NULL DEFAULT '',
    memory_id   INTEGER,
    kind        TEXT NOT NULL,                  -- injection, extraction, capture, eviction, ...
    count       INTEGER NOT NULL DEFAULT 1,
    detail      TEXT NOT NULL DEFAULT '{}',
    created_at  REAL NOT NULL
);
CREATE INDEX memory_events_owner_time ON memory_events (owner_id, created_at);
CREATE INDEX memory_events_kind_time ON memory_events (kind, created_at);

CREATE TABLE job_outbox (
    id            INTEGER PRIMARY KEY,
    job_name      TEXT NOT NULL,
    job_id        TEXT NOT NULL UNIQUE,         -- idempotency key, also the arq job id
    payload       BLOB NOT NULL,                -- msgspec-encoded payload
    created_at    REAL NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT
);

CREATE TABLE settings (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    version     INTEGER NOT NULL,
    data        TEXT NOT NULL,                  -- JSON object of runtime overrides
    updated_at  REAL NOT NULL
);

-- Per-conversation learning cursor: how many user turns of a conversation were already learned.
CREATE TABLE learn_cursors (
    owner_id         TEXT NOT NULL,
    user_id          TEXT NOT NULL DEFAULT '',
    conversation_id  TEXT NOT NULL,
    learned_turns    INTEGER NOT NULL,
    updated_at       REAL NOT NULL,
    PRIMARY KEY (owner_id, user_id, conversation_id)
);
