-- 0002: memory lifecycle (issue 7). Never edit once applied; add a new file.

-- Persisted lifecycle progress, so a restart never resets it (CASES L4):
--   sweep_cursor          last memories.id the sweep scanned (0 = start of a new pass)
--   relevance_decayed_at  unix seconds of the last relevance-decay run
CREATE TABLE lifecycle_state (
    name        TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    updated_at  REAL NOT NULL
);

-- Summarization picks old episodic memories per owner / end user / session, oldest first.
CREATE INDEX memories_type_created ON memories (type, owner_id, user_id, created_at);
