-- 0009: user control. Per-key memory switches and cap, forget tombstones. See docs/ARCHITECTURE.md,
-- "Controlling memory".
--
-- api_keys.recall_enabled / learn_enabled: NULL = inherit (provider, then global settings),
-- 0 = off, 1 = on. max_memories / max_bytes: per-key cap on the key's memories (count, and bytes
-- of content); NULL or 0 = no cap. Learning past the cap evicts the least relevant memories.
ALTER TABLE api_keys ADD COLUMN recall_enabled INTEGER;
ALTER TABLE api_keys ADD COLUMN learn_enabled INTEGER;
ALTER TABLE api_keys ADD COLUMN max_memories INTEGER;
ALTER TABLE api_keys ADD COLUMN max_bytes INTEGER;

-- One row per forget: what learning queued before it may not write again. term_hashes is a JSON
-- array of SHA-256 prefixes of the target's stems (never the words themselves); created_at is
-- the forget request's time (unix seconds). Learn jobs of requests made at or before it drop
-- every memory holding all of these stems.
CREATE TABLE forget_tombstones (
    id           INTEGER PRIMARY KEY,
    owner_id     TEXT NOT NULL,
    user_id      TEXT NOT NULL DEFAULT '',
    term_hashes  TEXT NOT NULL,
    created_at   REAL NOT NULL
);
CREATE INDEX forget_tombstones_owner_time ON forget_tombstones (owner_id, user_id, created_at);
