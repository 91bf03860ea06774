"""Deleting a memory by any path leaves no FTS5 row, no sqlite-vec row and no Qdrant point
(see "Lifecycle" in ``docs/ARCHITECTURE.md``).

The vector tiers are real: ``vec_memories`` is built by :meth:`SqliteVecIndex.ensure` and Qdrant is
qdrant-client's local mode, both behind a real :class:`Engine`. The lifecycle paths run through
the shared job handlers (what the worker and embedded mode run), the store delete through the
``vector_delete`` handler that REST and MCP deletes enqueue. Gateway-level paths (REST, MCP, the
summarize job) are in ``tests/services/gateway/test_qdrant_tier.py``, the CLI in
``tests/services/test_cli_qdrant.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from shared.engine import Engine, record_of
from shared.jobs.handlers import execute
from shared.jobs.payloads import (
    SUMMARIZE,
    SWEEP,
    SummarizePayload,
    SweepPayload,
    VectorDeletePayload,
    encode_payload,
)
from shared.jobs.vector_sync import delete_vectors
from shared.runtime import assemble_job_context, in_process_queue
from shared.runtime_settings import RuntimeSettings
from shared.settings import load_settings
from shared.store import Store
from shared.store.sqlite_vec import SqliteVecIndex
from shared.vector_index.qdrant import QdrantVectorIndex, make_qdrant_index
from tests.lifecycle_seed import DAY, add, fts_matches, fts_rows, ids, query

PATHS = ["store_delete", "sweep", "capacity", "summarize"]
DIM = 4
SIG = f"static:test:{DIM}"

pytestmark = pytest.mark.filterwarnings(
    "ignore:Payload indexes have no effect:UserWarning",
    "ignore:Local mode performs exact:UserWarning",
)


async def qdrant_ids(qdrant: QdrantVectorIndex) -> set[int]:
    points, _ = await qdrant.client.scroll(qdrant.collection, limit=1000, with_payload=False)
    return {int(p.id) for p in points}


async def delete_by(tmp_path: Path, path: str) -> tuple[str, int, int, set[int]]:
    """Seed three memories with vectors in sqlite-vec and Qdrant, delete one by ``path``, check
    FTS5; returns (db, victim rowid, kept rowid, rowids left in Qdrant)."""
    db = str(tmp_path / "d.db")
    now = time.time()
    store = await Store.open(db)
    http = httpx.AsyncClient()
    qdrant = make_qdrant_index(":memory:", "", "mem", "float32", 2.0)
    engine = Engine(
        embedder=None,
        sqlite_vec=SqliteVecIndex(store.writer, store.reader, store.memories),
        qdrant=qdrant,
    )
    try:
        await engine.sqlite_vec.ensure(DIM, SIG)
        await qdrant.ensure(DIM, SIG)
        old = now - 60 * DAY
        victim = await add(
            store, "quokkaword sits here. extra filler words for length.", created=old
        )
        other = await add(
            store, "another memory entirely. with more filler words here.", created=old
        )
        keep = await add(store, "keeper fact", type="factual", category="fact", created=now)
        found = await store.memories.get_many([victim, other, keep])
        records = [
            record_of(found[i], np.eye(DIM, dtype=np.float32)[n])
            for n, i in enumerate((victim, other, keep))
        ]
        await engine.sqlite_vec.upsert(records)
        await qdrant.upsert(records)
        assert await qdrant_ids(qdrant) == {victim, other, keep}
        assert await engine.sqlite_vec.count() == 3
        assert fts_matches(db, "quokkaword") == 1 and fts_rows(db, victim) == 1
        assert await store.lifecycle.vec_table_exists()

        settings = load_settings({}, db_path=db)
        if path == "capacity":
            settings = load_settings({}, db_path=db, max_memories_per_owner=1)
        live = RuntimeSettings(settings, store.settings)
        jc = await assemble_job_context(live, store, http, engine, in_process_queue)
        if path == "store_delete":
            memory = found[victim]
            await store.writes.delete(memory.public_id)
            payload = VectorDeletePayload(memory_ids=[victim], requested_at=now)
            assert (await delete_vectors(jc, payload))["deleted"] == 1
        elif path == "sweep":
            await execute(jc, SWEEP, encode_payload(SweepPayload(requested_at=now)))
        elif path == "capacity":
            await store.writes.record_access([victim, other], now)  # not decayed any more
            await execute(jc, SWEEP, encode_payload(SweepPayload(requested_at=now)))
        else:
            await store.writes.record_access([victim, other], now - 20 * DAY)  # live, old
            payload_s = SummarizePayload(owner_id="key_a", older_than_days=30, requested_at=now)
            await execute(jc, SUMMARIZE, encode_payload(payload_s))

        assert victim not in ids(db) and keep in ids(db)
        assert fts_rows(db, victim) == 0
        # Only a live row (a summary that kept the sentence) may still match, never the original.
        live = query(db, "SELECT count(*) FROM memories WHERE content LIKE '%quokkaword%'")[0][0]
        assert fts_matches(db, "quokkaword") == live
        if path == "summarize":
            assert query(db, "SELECT count(*) FROM memories WHERE category = 'summary'")[0][0] == 1
        else:
            assert live == 0
        left = await qdrant_ids(qdrant)
    finally:
        await qdrant.close()
        await http.aclose()
        await store.close()
    return db, victim, keep, left


@pytest.mark.parametrize("path", PATHS)
async def test_deletion_leaves_no_fts_row(tmp_path: Path, path: str) -> None:
    await delete_by(tmp_path, path)


@pytest.mark.parametrize("path", PATHS)
async def test_deletion_leaves_no_vec_row(tmp_path: Path, path: str) -> None:
    db, victim, keep, _ = await delete_by(tmp_path, path)
    vec_rows = "SELECT count(*) FROM vec_memories WHERE memory_id = ?"
    assert query(db, vec_rows, (victim,))[0][0] == 0
    assert query(db, vec_rows, (keep,))[0][0] == 1


@pytest.mark.parametrize("path", PATHS)
async def test_deletion_leaves_no_qdrant_point(tmp_path: Path, path: str) -> None:
    _, victim, keep, left = await delete_by(tmp_path, path)
    assert victim not in left
    assert keep in left


async def test_vector_delete_skips_a_reused_rowid(tmp_path: Path) -> None:
    """SQLite reuses the largest rowid: a late ``vector_delete`` must not remove the point of
    the new memory that now owns the id."""
    db = str(tmp_path / "r.db")
    store = await Store.open(db)
    http = httpx.AsyncClient()
    qdrant = make_qdrant_index(":memory:", "", "mem", "float32", 2.0)
    engine = Engine(
        embedder=None,
        sqlite_vec=SqliteVecIndex(store.writer, store.reader, store.memories),
        qdrant=qdrant,
    )
    try:
        await qdrant.ensure(DIM, SIG)
        now = time.time()
        first = await add(store, "first memory", created=now)
        gone = (await store.memories.get_many([first]))[first]
        await store.writes.delete(gone.public_id)
        second = await add(store, "second memory", created=now)
        assert second == first  # the rowid came back
        memory = (await store.memories.get_many([second]))[second]
        await qdrant.upsert([record_of(memory, np.eye(DIM, dtype=np.float32)[0])])
        live = RuntimeSettings(load_settings({}, db_path=db), store.settings)
        jc = await assemble_job_context(live, store, http, engine, in_process_queue)
        payload = VectorDeletePayload(memory_ids=[first], requested_at=now)
        assert await delete_vectors(jc, payload) == {"deleted": 0, "skipped_live": 1}
        assert await qdrant_ids(qdrant) == {second}
    finally:
        await qdrant.close()
        await http.aclose()
        await store.close()
