-- 0013: one owner's changes in a sequence range, read through an index. A cold owner's index,
-- loaded from its snapshot, catches up with the changes made since the snapshot: before, that
-- read every owner's changes (access counters included) and kept the owner's own, so a cold load
-- cost grew with the whole database's traffic since the snapshot (see docs/ARCHITECTURE.md,
-- "Recall engine").
CREATE INDEX memory_changes_owner_seq ON memory_changes (owner_id, seq);
