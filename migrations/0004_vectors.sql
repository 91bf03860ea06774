-- 0004: vector tier bookkeeping. The vec0 table itself is created at run time (its dimension is
-- only known once the embedding source is), by shared/store/vectors.py.
ALTER TABLE memory_vec_meta ADD COLUMN int8_scale REAL;   -- global int8 scale (value mapped to 127)
ALTER TABLE memory_vec_meta ADD COLUMN table_name TEXT NOT NULL DEFAULT 'vec_memories';
