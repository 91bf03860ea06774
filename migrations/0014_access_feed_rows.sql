-- 0014: access counters reach the change feed from the statement that counts them, one
-- set-based INSERT per batch (shared/store/memories record_access), instead of a row trigger that
-- ran once per updated memory. Same rows (one 'a' change per memory whose counters moved); the
-- trigger's per-row program cost ~10 µs of the ~12 µs an access update took, the set-based insert
-- well under 1 µs (see docs/ARCHITECTURE.md, "Recall engine").
DROP TRIGGER IF EXISTS memory_changes_access;
