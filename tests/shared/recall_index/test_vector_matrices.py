"""The in-memory vector leg (shared/recall_index/vectors.py).

Against a brute-force reference: the nearest rows of the matrix belong to another end user, so
the visibility rule has to skip past the first k rows (records are looked up k at a time) to
find the caller's own. And a search cancelled while the owner's vectors are being read (the
recall budget ran out) leaves the read to finish for the next request.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from shared.models import Memory, NewMemory, Scope
from shared.recall_index.vectors import OVERSAMPLE, VectorMatrices
from shared.store import Store
from shared.store.sqlite_vec import SqliteVecIndex
from shared.vector_index.base import VectorRecord
from tests.waiting import READY_TIMEOUT_S

DIM = 8


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


async def with_vectors(
    store: Store, users: list[str], vectors: list[np.ndarray], dim: int = DIM
) -> tuple[list[Memory], SqliteVecIndex]:
    """Owner ``o``'s memories of ``users`` (one each) and their ``dim``-wide ``vectors``."""
    news = [NewMemory(owner_id="o", user_id=u, content=f"memory {i}") for i, u in enumerate(users)]
    written = [m for m, _ in await store.writes.upsert_many(news)]
    index = SqliteVecIndex(store.writer, store.reader, store.memories)
    await index.ensure(dim, "test")
    records = [
        VectorRecord(
            memory_id=m.id,
            owner_id="o",
            user_id=m.user_id,
            session_id=None,
            type=m.type,
            created_at=m.created_at,
            expires_at=None,
            vector=v.tolist(),
        )
        for m, v in zip(written, vectors, strict=True)
    ]
    await index.upsert(records)
    return written, index


@pytest.mark.parametrize("other_first", [0, 3, 5, 12, 19, 20, 30])
async def test_knn_equals_brute_force_under_the_visibility_rule(stored, other_first) -> None:
    store, keywords = stored
    rng = np.random.default_rng(other_first)
    query = _unit(np.eye(DIM, dtype=np.float32)[0])
    # the first `other_first` nearest rows are bob's, the rest owner-wide or alice's
    users = ["bob"] * other_first + [("", "alice")[i % 2] for i in range(40)]
    distances = np.sort(rng.uniform(0.01, 1.5, len(users)))
    vectors = [_unit(query + d * _unit(rng.standard_normal(DIM))) for d in distances]
    written, index = await with_vectors(store, users, vectors)
    matrices = VectorMatrices(index, keywords)
    scope = Scope(owner_id="o", user_id="alice")
    sims = np.array([float(v @ query) for v in vectors], dtype=np.float32)
    for k in (1, 2, 5, 10):
        hits = await matrices.search(query, scope, k, time.time())
        assert hits is not None
        window = np.argsort(-sims, kind="stable")[: k * OVERSAMPLE]
        want = [written[i].id for i in window if written[i].user_id in ("", "alice")][:k]
        assert [h.memory_id for h in hits] == want
        pos = {m.id: i for i, m in enumerate(written)}
        assert [h.score for h in hits] == pytest.approx([sims[pos[h.memory_id]] for h in hits])


async def test_a_cancelled_search_leaves_the_matrix_read_to_finish(stored) -> None:
    store, keywords = stored
    rng = np.random.default_rng(1)
    vectors = [_unit(rng.standard_normal(DIM)) for _ in range(50)]
    written, index = await with_vectors(store, [""] * 50, vectors)
    matrices = VectorMatrices(index, keywords)
    scope = Scope(owner_id="o")
    search = asyncio.ensure_future(matrices.search(vectors[0], scope, 5, time.time()))
    for _ in range(100_000):  # until the read of the owner's vectors has started
        if matrices._reads:
            break
        await asyncio.sleep(0)
    assert matrices._reads, "the matrix read never started"
    (read,) = matrices._reads.values()
    search.cancel()  # the recall budget ran out while the vectors were being read
    with pytest.raises(asyncio.CancelledError):
        await search
    matrix = await asyncio.wait_for(read, READY_TIMEOUT_S)  # the read went on
    assert matrices._mats["o"] is matrix and not matrices._reads
    hits = await matrices.search(vectors[0], scope, 5, time.time())
    assert hits is not None and hits[0].memory_id == written[0].id


async def test_similarities_are_the_cosines_of_any_cached_row(stored) -> None:
    # fusion scores keyword hits outside the vector leg's top k by their own cosine: every row of
    # the searched owner's matrix answers, ids without a row are left out, and a matrix read
    # before a write is not used (it may hold an old vector) until the next search re-reads it
    store, keywords = stored
    rng = np.random.default_rng(7)
    vectors = [_unit(rng.standard_normal(DIM)) for _ in range(30)]
    written, index = await with_vectors(store, [""] * 30, vectors)
    matrices = VectorMatrices(index, keywords)
    scope = Scope(owner_id="o")
    query = vectors[0]
    assert matrices.similarities(query, scope, [written[5].id]) == {}  # nothing read yet
    hits = await matrices.search(query, scope, 3, time.time())
    assert hits is not None and len(hits) == 3
    far = [m.id for m in written[10:]] + [10_000_000]  # mostly outside the top 3; one unknown id
    got = matrices.similarities(query, scope, far)
    want = {m.id: float(v @ query) for m, v in zip(written[10:], vectors[10:], strict=True)}
    assert got.keys() == want.keys()
    assert [got[i] for i in want] == pytest.approx(list(want.values()), abs=1e-5)
    assert matrices.similarities(np.zeros(DIM, np.float32), scope, far) == {}
    assert matrices.similarities(query, Scope(owner_id="other"), far) == {}

    await store.writes.upsert(NewMemory(owner_id="o", content="a later memory"))
    await keywords.cache.fresh()  # the owner's index applies the write: its generation moves
    assert matrices.similarities(query, scope, far) == {}
    await matrices.search(query, scope, 3, time.time())
    assert matrices.similarities(query, scope, far).keys() == want.keys()
