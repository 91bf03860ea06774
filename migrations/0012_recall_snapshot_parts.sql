-- 0012: owner snapshots stored in parts (shared/store/recall_rows.py), so an owner of any size
-- (1M memories: ~1 GB of snapshot, beyond SQLite's 1 GB blob limit and too large for one
-- statement's memory) loads from its snapshot instead of re-analysing every row. The row of
-- `recall_snapshots` now holds a manifest (number of parts, total bytes, CRC-32 of each part) and
-- `recall_snapshot_parts` the parts in order; a part that is missing or fails its checksum makes
-- the snapshot unusable (the owner is rebuilt from its rows). Parts are written one per
-- transaction before the manifest (a 1 GB snapshot must not hold the write lock for seconds), so
-- parts may exist without a manifest for a moment (or after a crash): every delete or text change
-- of an owner's memory deletes its parts as well as its manifest (the triggers below mirror those
-- of 0010), and deleting a manifest deletes its parts.
-- `memories_owner_rowid` lets a cold load read an owner's rows in rowid-ordered chunks (one range
-- scan each) instead of all at once (at 1M memories the single read held gigabytes of rows).
-- Snapshots of the single-blob layout are dropped (their format is no longer read).
-- See docs/ARCHITECTURE.md, "Recall engine".
DELETE FROM recall_snapshots;

CREATE TABLE recall_snapshot_parts (
    owner_id   TEXT NOT NULL,
    part       INTEGER NOT NULL,
    data       BLOB NOT NULL,
    PRIMARY KEY (owner_id, part)
);

CREATE TRIGGER recall_snapshot_parts_delete AFTER DELETE ON recall_snapshots BEGIN
    DELETE FROM recall_snapshot_parts WHERE owner_id = old.owner_id;
END;

CREATE INDEX memories_owner_rowid ON memories (owner_id, id);

CREATE TRIGGER recall_snapshot_parts_memory_delete AFTER DELETE ON memories BEGIN
    DELETE FROM recall_snapshot_parts WHERE owner_id = old.owner_id;
END;

CREATE TRIGGER recall_snapshot_parts_memory_update AFTER UPDATE OF
    owner_id, key, content, search_text, context, metadata ON memories
WHEN old.owner_id IS NOT new.owner_id OR old.key IS NOT new.key
    OR old.content IS NOT new.content OR old.search_text IS NOT new.search_text
    OR old.context IS NOT new.context OR old.metadata IS NOT new.metadata BEGIN
    DELETE FROM recall_snapshot_parts WHERE owner_id IN (old.owner_id, new.owner_id);
END;
