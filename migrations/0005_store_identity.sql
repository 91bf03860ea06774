-- 0005: a random identity per database. Gateways and workers on one database derive their
-- default arq queue name from it, so two deployments sharing a Redis database never take each
-- other's jobs (shared/jobs/queue.py resolve_queue_name).
CREATE TABLE store_identity (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    store_id TEXT NOT NULL,
    created_at REAL NOT NULL
);
INSERT INTO store_identity VALUES (1, lower(hex(randomblob(8))), (julianday('now') - 2440587.5) * 86400.0);
