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
from shared.recall_index.matrix import PATCH_MAX, OwnerMatrix
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


def _brute(vectors: dict[int, np.ndarray], query: np.ndarray, k: int) -> list[int]:
    """The ``k`` ids of highest cosine with ``query`` (ties by smaller id)."""
    return sorted(vectors, key=lambda i: (-float(vectors[i] @ query), i))[:k]


class Seeded:
    """Owner ``o`` with ``n`` random unit vectors, its matrix read once by ``matrices``."""

    def __init__(self, rng, written, index, current, matrices) -> None:
        self.rng, self.written, self.index = rng, written, index
        self.current, self.matrices = current, matrices

    async def add(self, store: Store, vectors: list[np.ndarray]) -> list[Memory]:
        """Memories of ``vectors`` written (and tracked in ``current``)."""
        added, _ = await with_vectors(store, [""] * len(vectors), vectors)
        self.current.update({m.id: v for m, v in zip(added, vectors, strict=True)})
        return added


async def seeded(store: Store, keywords, n: int, seed: int) -> Seeded:
    rng = np.random.default_rng(seed)
    vectors = [_unit(rng.standard_normal(DIM)) for _ in range(n)]
    written, index = await with_vectors(store, [""] * n, vectors)
    matrices = VectorMatrices(index, keywords)
    await matrices.search(vectors[0], Scope(owner_id="o"), 5, time.time())
    current = {m.id: v for m, v in zip(written, vectors, strict=True)}
    return Seeded(rng, written, index, current, matrices)


async def test_writes_patch_the_matrix_and_search_as_a_fresh_read(stored) -> None:
    # a few writes after the owner's matrix was read patch it (only their rows are read): new
    # memories are found, a deleted one never again, a re-embedded one by its new vector, and
    # the answers are those of a matrix read afresh from the store
    store, keywords = stored
    o = await seeded(store, keywords, 60, 11)
    written, index, current, matrices = o.written, o.index, o.current, o.matrices
    scope = Scope(owner_id="o")
    probes = [_unit(o.rng.standard_normal(DIM)) for _ in range(20)]
    base = matrices._mats["o"]

    more = await o.add(store, probes[1:4])
    victim = written[0]
    await store.writes.delete(victim.public_id)
    current.pop(victim.id)
    moved = written[1]
    await index.upsert(
        [
            VectorRecord(
                memory_id=moved.id,
                owner_id="o",
                user_id="",
                session_id=None,
                type=moved.type,
                created_at=moved.created_at,
                expires_at=None,
                vector=probes[4].tolist(),
            )
        ]
    )
    # re-embedded: the job writes the vector, then clears the flag (a change of the memory)
    await store.writes.mark_indexed([(moved.id, moved.updated_at)])
    current[moved.id] = probes[4]
    await keywords.cache.fresh()

    fresh = VectorMatrices(index, keywords)  # reads the owner whole
    for q in probes:
        hits = await matrices.search(q, scope, 5, time.time())
        again = await fresh.search(q, scope, 5, time.time())
        assert hits is not None and again is not None
        assert [h.memory_id for h in hits] == [h.memory_id for h in again] == _brute(current, q, 5)
        assert [h.score for h in hits] == pytest.approx([h.score for h in again], abs=1e-6)
    patched = matrices._mats["o"]
    assert patched.ids is base.ids and patched is not base  # patched, the base not re-read
    assert victim.id not in patched.cosines(probes[0], np.array([victim.id]))
    got = matrices.similarities(probes[4], scope, [moved.id, more[0].id])
    assert got[moved.id] == pytest.approx(1.0, abs=1e-5)
    assert got[more[0].id] == pytest.approx(float(probes[1] @ probes[4]), abs=1e-5)


async def test_the_matrix_is_patched_across_a_rebuild_of_the_keyword_index(stored) -> None:
    # a rebuilt keyword index continues its predecessor's lineage: the vector matrix is patched
    # with the rows written meanwhile instead of being read whole again
    store, keywords = stored
    o = await seeded(store, keywords, 300, 5)
    rng, index, current, matrices = o.rng, o.index, o.current, o.matrices
    scope = Scope(owner_id="o")
    base = matrices._mats["o"]
    old = keywords.cache.owners["o"]
    while not keywords.cache.rebuilding:  # 40 at a time: past the delta bound, not a mass change
        await o.add(store, [_unit(rng.standard_normal(DIM)) for _ in range(40)])
        await matrices.search(base.mat[0], scope, 5, time.time())  # patched as writes arrive
        assert len(current) < 2000, "no rebuild started"
    await asyncio.wait_for(keywords.cache.settle(), READY_TIMEOUT_S)
    assert keywords.cache.owners["o"] is not old
    fresh = VectorMatrices(index, keywords)
    for q in [_unit(rng.standard_normal(DIM)) for _ in range(10)]:
        hits = await matrices.search(q, scope, 5, time.time())
        again = await fresh.search(q, scope, 5, time.time())
        assert hits is not None and again is not None
        assert [h.memory_id for h in hits] == [h.memory_id for h in again] == _brute(current, q, 5)
    assert matrices._mats["o"].ids is base.ids  # never read whole again


async def test_patches_past_the_bound_are_merged_in_memory(stored) -> None:
    # past PATCH_MAX patched rows the base and the patch are merged, not read from the store
    # again: a row removed from the vector table behind the feed's back (no change logged) stays
    # in the merged matrix, which a whole read would have dropped
    store, keywords = stored
    o = await seeded(store, keywords, 100, 9)
    rng, written, current, matrices = o.rng, o.written, o.current, o.matrices
    scope = Scope(owner_id="o")
    first = current[written[0].id]
    await o.index.delete([written[0].id])  # unlogged: the cached matrix keeps its row
    while len(current) <= 100 + PATCH_MAX:
        await o.add(store, [_unit(rng.standard_normal(DIM)) for _ in range(50)])
        await matrices.search(first, scope, 5, time.time())
    merged = matrices._mats["o"]
    assert merged.patched < PATCH_MAX and len(merged.ids) > 100  # merged into a new base
    assert written[0].id in merged.cosines(first, np.array([written[0].id]))  # not re-read
    for q in [_unit(rng.standard_normal(DIM)) for _ in range(10)]:
        hits = await matrices.search(q, scope, 5, time.time())
        assert hits is not None
        assert [h.memory_id for h in hits] == _brute(current, q, 5)


def test_masked_rows_nearest_the_query_never_shorten_the_answer() -> None:
    # the 30 rows nearest the query are superseded (deleted, no new vector): more rows than the
    # first ask covers, so the base is asked again for enough live ones
    rng = np.random.default_rng(3)
    query = _unit(np.eye(DIM, dtype=np.float32)[0])
    distances = np.sort(rng.uniform(0.01, 1.5, 60))
    mat = np.stack([_unit(query + d * _unit(rng.standard_normal(DIM))) for d in distances])
    ids = np.arange(1, 61, dtype=np.int64)
    base = OwnerMatrix("o", object(), 0, ids, mat)
    nearest = _brute({int(i): mat[i - 1] for i in ids}, query, 30)
    empty = (np.zeros(0, np.int64), np.zeros((0, DIM), np.float32))
    patched = base.patch(1, nearest, empty)
    got, sims = patched.best(query, 5)
    live = {int(i): mat[i - 1] for i in ids if int(i) not in nearest}
    assert got == _brute(live, query, 5)
    assert sims == pytest.approx([float(mat[i - 1] @ query) for i in got], abs=1e-6)
    assert patched.cosines(query, np.array([nearest[0], got[0]])).keys() == {got[0]}
    assert base.best(query, 2)[0] == nearest[:2]  # the base object itself is unchanged
