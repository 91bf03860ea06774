-- 0012: owner snapshots stored in parts (shared/store/recall_rows.py), so an owner of any size
-- (1M memories: ~1 GB of snapshot, beyond SQLite's 1 GB blob limit and too large for one
-- statement's memory) loads from its snapshot instead of re-analysing every row. The row of
-- `recall_snapshots` now holds a manifest (number of parts, total bytes, CRC-32 of each part) and
-- `recall_snapshot_parts` the parts in order; a part that is missing or fails its checksum makes
-- the snapshot unusable (the owner is rebuilt from its rows). Deleting an owner's snapshot row
-- (the triggers of 0010 do it on every delete or text change of its memories) deletes its parts.
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
