"""sqlite-vec tier: tenant partitioning, the shared visibility filter, signature changes."""

from __future__ import annotations

import time

import numpy as np
import pytest

from shared.engine import record_of
from shared.errors import VectorIndexError
from shared.fts_query import index_text
from shared.models import NewMemory, Scope
from shared.store import Store
from shared.store.sqlite_vec import SqliteVecIndex
from shared.vector_index.base import VectorRecord

DIM = 8


def unit(v) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


@pytest.fixture
async def store(tmp_path):
    s = await Store.open(str(tmp_path / "v.db"))
    yield s
    await s.close()


@pytest.mark.parametrize("quantization", ["float32", "int8"])
async def test_other_tenants_nearer_vectors_never_starve_or_leak(store, quantization):
    index = SqliteVecIndex(store.writer, store.reader, store.memories, quantization=quantization)
    await index.ensure(DIM, "test:model:8")
    target = unit([1, 0, 0, 0, 0, 0, 0, 0])
    mine, _ = await store.writes.upsert(NewMemory(owner_id="A", content="mine"))
    far = unit([0.2, 1, 0, 0, 0, 0, 0, 0])  # A's memory is not very near the query
    # owner B: 10,000 memories all nearer to the query than A's
    now = time.time()
    rows = [
        (
            f"mem_b{i}",
            "B",
            "semantic",
            "fact",
            f"k{i}",
            f"b {i}",
            index_text(f"b {i}", None),
            now,
            now,
        )
        for i in range(10_000)
    ]
    await store.writer.execute("BEGIN")
    await store.writer.executemany(
        "INSERT INTO memories (public_id, owner_id, type, category, key, content, search_text, "
        "created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
        rows,
    )
    await store.writer.execute("COMMIT")
    b_ids = [
        r[0]
        async for r in await store.writer.execute(
            "SELECT id FROM memories WHERE owner_id = 'B' ORDER BY id"
        )
    ]
    rng = np.random.default_rng(1)
    near = target + rng.normal(0, 0.01, (len(b_ids), DIM)).astype(np.float32)
    await index.upsert(
        [
            VectorRecord(
                memory_id=i,
                owner_id="B",
                user_id="",
                session_id=None,
                type="semantic",
                created_at=now,
                expires_at=None,
                vector=[float(x) for x in unit(near[j])],
            )
            for j, i in enumerate(b_ids)
        ]
    )
    await index.upsert([record_of(mine, far)])
    hits = await index.search(target, Scope(owner_id="A"), 5, time.time())
    assert [h.memory_id for h in hits] == [mine.id]
    assert abs(hits[0].score - float(target @ far)) < 0.03  # cosine similarity
    b_hits = await index.search(target, Scope(owner_id="B"), 5, time.time())
    assert len(b_hits) == 5 and mine.id not in {h.memory_id for h in b_hits}


async def test_expiry_user_and_session_filters_apply_to_vector_hits(store):
    index = SqliteVecIndex(store.writer, store.reader, store.memories)
    await index.ensure(DIM, "test:model:8")
    v = unit([1, 1, 0, 0, 0, 0, 0, 0])
    now = time.time()
    cases = {
        "live": NewMemory(owner_id="A", content="live"),
        "expired": NewMemory(owner_id="A", content="expired", expires_at=now - 5),
        "other user": NewMemory(owner_id="A", content="u2", user_id="u2"),
        "own user": NewMemory(owner_id="A", content="u1", user_id="u1"),
        "session": NewMemory(owner_id="A", content="s", session_id="s1"),
        "global": NewMemory(owner_id="global", content="g"),
    }
    ids = {}
    for name, new in cases.items():
        m, _ = await store.writes.upsert(new)
        ids[name] = m.id
        await index.upsert([record_of(m, v)])
    found = {h.memory_id for h in await index.search(v, Scope(owner_id="A", user_id="u1"), 10, now)}
    assert found == {ids["live"], ids["own user"], ids["global"]}
    in_session = await index.search(v, Scope(owner_id="A", session_id="s1"), 10, now)
    assert ids["session"] in {h.memory_id for h in in_session}


async def test_delete_any_path_removes_the_vector(store):
    index = SqliteVecIndex(store.writer, store.reader, store.memories)
    await index.ensure(DIM, "test:model:8")
    m, _ = await store.writes.upsert(NewMemory(owner_id="A", content="x"))
    await index.upsert([record_of(m, unit([1, 0, 0, 0, 0, 0, 0, 1]))])
    assert await index.count() == 1
    await store.writes.delete(m.public_id)
    assert await index.count() == 0


async def test_signature_change_rebuilds_and_marks_everything_for_reindex(store):
    index = SqliteVecIndex(store.writer, store.reader, store.memories)
    assert await index.ensure(DIM, "a:m:8") is True
    m, _ = await store.writes.upsert(NewMemory(owner_id="A", content="x"))
    await index.upsert([record_of(m, unit([1] * DIM))])
    await store.writes.mark_indexed([(m.id, m.updated_at)])
    assert await store.memories.count_pending_reindex() == 0
    assert await index.ensure(DIM, "a:m:8") is False
    assert await index.ensure(4, "b:other:4") is True
    assert await index.count() == 0
    assert await store.memories.count_pending_reindex() == 1
    assert await index.usable_for("b:other:4")
    with pytest.raises(VectorIndexError):
        await index.ensure(0, "x:y:0")
