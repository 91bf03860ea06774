-- 0007: the change feed of the memories table. Every write that can change what recall finds or
-- shows (a new row, a change of a searched, filtered or injected column, a delete, the end of an
-- embedding: needs_reindex) appends one row; access-counter updates append an 'a' row (only the retention filter reads them). Each
-- process keeps its in-memory recall index fresh by reading the rows after the last sequence it
-- applied (shared/recall_index/feed.py). Old rows are pruned; a reader that fell behind the
-- pruned range rebuilds its cache. See docs/ARCHITECTURE.md, "Recall engine".
CREATE TABLE memory_changes (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id  INTEGER NOT NULL,
    owner_id   TEXT NOT NULL,
    op         TEXT NOT NULL CHECK (op IN ('u', 'd', 'a')),   -- upsert, delete, access counters
    at         REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0)
);

CREATE TRIGGER memory_changes_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memory_changes (memory_id, owner_id, op) VALUES (new.id, new.owner_id, 'u');
END;

CREATE TRIGGER memory_changes_update AFTER UPDATE OF
    owner_id, user_id, session_id, type, category, key, content, search_text, context, metadata,
    expires_at, relevance, created_at, updated_at, needs_reindex ON memories BEGIN
    INSERT INTO memory_changes (memory_id, owner_id, op) VALUES (new.id, new.owner_id, 'u');
    INSERT INTO memory_changes (memory_id, owner_id, op)
        SELECT old.id, old.owner_id, 'd' WHERE old.owner_id IS NOT new.owner_id;
END;

CREATE TRIGGER memory_changes_access AFTER UPDATE OF access_count, last_accessed_at ON memories
WHEN old.access_count IS NOT new.access_count
    OR old.last_accessed_at IS NOT new.last_accessed_at BEGIN
    INSERT INTO memory_changes (memory_id, owner_id, op) VALUES (new.id, new.owner_id, 'a');
END;

CREATE TRIGGER memory_changes_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memory_changes (memory_id, owner_id, op) VALUES (old.id, old.owner_id, 'd');
END;
