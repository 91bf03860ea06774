-- 0010: owner snapshots of the in-memory recall index (shared/recall_index/snapshot.py). A row
-- holds one owner's analysed memories (records, terms, postings with raw term frequencies) as
-- one blob, and the change-feed sequence it reflects; a cold process decodes it and applies the
-- feed after `seq` instead of re-analysing every memory. It is a cache: it can always be rebuilt
-- from `memories`, and a snapshot of another `format` or older than the pruned feed is ignored.
-- It copies memory text, so every delete of a memory and every change of its text, key,
-- metadata or owner drops the owner's snapshot (with secure_delete the bytes are zeroed); a
-- process writes a new one only when no such change happened after `seq` (shared/store/
-- recall_rows.py). See docs/ARCHITECTURE.md, "Recall engine".
CREATE TABLE recall_snapshots (
    owner_id   TEXT PRIMARY KEY,
    seq        INTEGER NOT NULL,
    format     TEXT NOT NULL,
    data       BLOB NOT NULL,
    at         REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0)
);

CREATE TRIGGER recall_snapshots_delete AFTER DELETE ON memories BEGIN
    DELETE FROM recall_snapshots WHERE owner_id = old.owner_id;
END;

CREATE TRIGGER recall_snapshots_update AFTER UPDATE OF
    owner_id, key, content, search_text, context, metadata ON memories
WHEN old.owner_id IS NOT new.owner_id OR old.key IS NOT new.key
    OR old.content IS NOT new.content OR old.search_text IS NOT new.search_text
    OR old.context IS NOT new.context OR old.metadata IS NOT new.metadata BEGIN
    DELETE FROM recall_snapshots WHERE owner_id IN (old.owner_id, new.owner_id);
END;
