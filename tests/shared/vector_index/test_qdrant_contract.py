"""QdrantVectorIndex contract against qdrant-client's local mode (no Qdrant server can run here).

Local mode is brute force and ignores quantization and payload indexes, but it evaluates the same
filters, so these tests pin the filter semantics (owner isolation, user, session, expiry at the
adapter level), the collection lifecycle (create, signature, dimension mismatch,
recreate), writes, cleanup and the resumable backfill.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Iterable, Sequence

import numpy as np
import numpy.typing as npt
import pytest
from qdrant_client import AsyncQdrantClient

from shared.errors import VectorIndexError
from shared.models import GLOBAL_OWNER, Scope
from shared.vector_index.base import VectorRecord
from shared.vector_index.qdrant import (
    DIM_KEY,
    SIGNATURE_KEY,
    QdrantVectorIndex,
    make_qdrant_index,
)
from shared.vector_index.qdrant_backfill import BackfillProgress, backfill

DIM = 8
SIG = f"static:test:{DIM}"
NOW = 1_700_000_000.0

pytestmark = pytest.mark.filterwarnings(
    "ignore:Payload indexes have no effect:UserWarning",
    "ignore:Local mode performs exact:UserWarning",
)


def unit(values: Iterable[float]) -> list[float]:
    v = np.asarray(list(values), dtype=np.float32)
    return [float(x) for x in v / np.linalg.norm(v)]


def axis(i: int, noise: float = 0.0, seed: int = 0) -> list[float]:
    """A unit vector near basis axis ``i`` (``noise`` > 0 tilts it pseudo-randomly)."""
    rng = np.random.default_rng(seed)
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    if noise:
        v += rng.normal(0.0, noise, DIM).astype(np.float32)
    return unit(v)


def query(i: int) -> npt.NDArray[np.float32]:
    return np.asarray(axis(i), dtype=np.float32)


def rec(
    memory_id: int,
    owner_id: str = "owner-a",
    *,
    user_id: str = "",
    session_id: str | None = None,
    expires_at: float | None = None,
    vector: list[float] | None = None,
    type: str = "semantic",
) -> VectorRecord:
    return VectorRecord(
        memory_id=memory_id,
        owner_id=owner_id,
        user_id=user_id,
        session_id=session_id,
        type=type,
        created_at=NOW - 100.0,
        expires_at=expires_at,
        vector=vector if vector is not None else axis(0),
    )


@pytest.fixture
async def client() -> AsyncIterator[AsyncQdrantClient]:
    c = AsyncQdrantClient(location=":memory:")
    yield c
    await c.close()


@pytest.fixture
async def index(client: AsyncQdrantClient) -> QdrantVectorIndex:
    idx = QdrantVectorIndex(client, "mem", timeout_s=5.0)
    assert await idx.ensure(DIM, SIG) is True
    return idx


async def ids(idx: QdrantVectorIndex, scope: Scope, k: int = 10, now: float = NOW) -> list[int]:
    return [h.memory_id for h in await idx.search(query(0), scope, k, now)]


# ---- collection lifecycle --------------------------------------------------------------------
async def test_ensure_creates_cosine_collection_with_signature(client: AsyncQdrantClient) -> None:
    idx = QdrantVectorIndex(client, "fresh")
    assert await idx.health() != "ok"  # never "green" before the collection exists
    assert await idx.count() == 0
    assert await idx.ensure(DIM, SIG) is True
    info = await client.get_collection("fresh")
    vectors = info.config.params.vectors
    assert vectors is not None and not isinstance(vectors, dict)
    assert vectors.size == DIM
    assert vectors.distance.value == "Cosine"
    assert info.config.metadata == {SIGNATURE_KEY: SIG, DIM_KEY: DIM}
    assert await idx.ensure(DIM, SIG) is False  # idempotent
    # a second adapter (another process) finds the existing collection fitting
    assert await QdrantVectorIndex(client, "fresh").ensure(DIM, SIG) is False
    assert await idx.health() == "ok"


async def test_int8_collection_gets_scalar_quantization(client: AsyncQdrantClient) -> None:
    idx = QdrantVectorIndex(client, "q8", quantization="int8")
    assert await idx.ensure(DIM, SIG + ":int8") is True
    await idx.upsert([rec(1, vector=axis(0)), rec(2, vector=axis(1))])
    hits = await idx.search(query(0), Scope(owner_id="owner-a"), 2, NOW)
    assert [h.memory_id for h in hits] == [1, 2]
    # changing only the quantization keeps the vectors (no recreate needed)
    other = QdrantVectorIndex(client, "q8", quantization="float32")
    assert await other.ensure(DIM, SIG) is False
    assert await other.count() == 2
    info = await client.get_collection("q8")
    assert info.config.metadata is not None
    assert info.config.metadata[SIGNATURE_KEY] == SIG


async def test_dimension_mismatch_names_the_remedy(
    client: AsyncQdrantClient, index: QdrantVectorIndex
) -> None:
    await index.upsert([rec(1)])
    other = QdrantVectorIndex(client, "mem")
    with pytest.raises(VectorIndexError) as err:
        await other.ensure(16, "static:bigger:16")
    assert err.value.code == "qdrant_dimension_mismatch"
    assert "mnemogate qdrant recreate" in err.value.message
    assert "8" in err.value.message and "16" in err.value.message
    # health reports the same reason instead of "ok"
    assert "mnemogate qdrant recreate" in await other.health()
    # nothing was dropped
    assert await other.count() == 1


async def test_changed_model_same_dimension_is_reported(
    client: AsyncQdrantClient, index: QdrantVectorIndex
) -> None:
    other = QdrantVectorIndex(client, "mem")
    with pytest.raises(VectorIndexError) as err:
        await other.ensure(DIM, f"remote:another-model:{DIM}")
    assert err.value.code == "qdrant_signature_mismatch"
    assert "mnemogate qdrant recreate" in err.value.message
    assert SIG in err.value.message


async def test_recreate_drops_and_rebuilds(
    client: AsyncQdrantClient, index: QdrantVectorIndex
) -> None:
    await index.upsert([rec(1), rec(2)])
    other = QdrantVectorIndex(client, "mem")
    with pytest.raises(VectorIndexError):
        await other.ensure(16, "static:bigger:16")
    await other.recreate(16, "static:bigger:16")
    assert await other.count() == 0
    assert await other.ensure(16, "static:bigger:16") is False
    assert await other.health() == "ok"
    info = await client.get_collection("mem")
    assert info.config.metadata == {SIGNATURE_KEY: "static:bigger:16", DIM_KEY: 16}


async def test_upsert_with_wrong_dimension_is_refused(index: QdrantVectorIndex) -> None:
    with pytest.raises(VectorIndexError) as err:
        await index.upsert([rec(1, vector=unit([1.0] * 4))])
    assert err.value.code == "qdrant_dimension_mismatch"


async def test_missing_collection_fails_search_with_code(client: AsyncQdrantClient) -> None:
    idx = QdrantVectorIndex(client, "never-created")
    with pytest.raises(VectorIndexError) as err:
        await idx.search(query(0), Scope(owner_id="a"), 5, NOW)
    assert err.value.code == "qdrant_collection_missing"


def test_factory_builds_a_local_index() -> None:
    idx = make_qdrant_index(":memory:", "", "mem", "int8", 1.5)
    assert idx.name == "qdrant"
    assert idx.quantization == "int8"
    assert idx.timeout_s == 1.5
    with pytest.raises(ValueError):
        make_qdrant_index("", "", "mem", "float32", 1.0)


async def test_factory_sends_api_key() -> None:
    from tests.fakes.qdrant import FakeQdrant

    with FakeQdrant() as fake, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Api key is used with an insecure connection"
        idx = make_qdrant_index(fake.url, "secret-key", "mem", "float32", 2.0)
        assert await idx.health() == "ok"
        await idx.close()
    assert fake.requests, "no request reached the fake"
    assert all(h.get("api-key") == "secret-key" for _, _, h, _ in fake.requests)


# ---- writes ----------------------------------------------------------------------------------
async def test_upsert_is_idempotent_and_replaces(index: QdrantVectorIndex) -> None:
    await index.upsert([rec(1, vector=axis(0)), rec(2, vector=axis(1))])
    await index.upsert([rec(1, vector=axis(0)), rec(2, vector=axis(1))])
    assert await index.count() == 2
    hits = await index.search(query(0), Scope(owner_id="owner-a"), 2, NOW)
    assert hits[0].memory_id == 1
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[1].score == pytest.approx(0.0, abs=1e-5)
    # re-sync after an update: the new vector and payload win
    await index.upsert([rec(2, vector=axis(0), user_id="u1")])
    assert await ids(index, Scope(owner_id="owner-a")) == [1]
    assert sorted(await ids(index, Scope(owner_id="owner-a", user_id="u1"))) == [1, 2]


async def test_delete_removes_and_ignores_missing(index: QdrantVectorIndex) -> None:
    await index.upsert([rec(1), rec(2), rec(3)])
    await index.delete([2, 999])
    await index.delete([])
    assert await index.count() == 2
    assert sorted(await ids(index, Scope(owner_id="owner-a"))) == [1, 3]


async def test_cleanup_expired_deletes_only_expired(index: QdrantVectorIndex) -> None:
    await index.upsert(
        [
            rec(1, expires_at=None),
            rec(2, expires_at=NOW - 1),
            rec(3, expires_at=NOW),  # expires_at <= now: expired
            rec(4, expires_at=NOW + 3600),
        ]
    )
    assert await index.cleanup_expired(NOW) == 2
    assert await index.count() == 2
    assert sorted(await ids(index, Scope(owner_id="owner-a"))) == [1, 4]
    assert await index.cleanup_expired(NOW) == 0


# ---- filtered search -------------------------------------------------------------------------
async def test_owner_isolation_no_starvation_no_leak(index: QdrantVectorIndex) -> None:
    """Owner B's 2,000 nearer vectors neither starve owner A's results nor leak into them."""
    nearer = [rec(10_000 + i, "owner-b", vector=axis(0, noise=0.01, seed=i)) for i in range(2_000)]
    for start in range(0, len(nearer), 500):
        await index.upsert(nearer[start : start + 500])
    mine = [rec(i, "owner-a", vector=axis(0, noise=0.6, seed=i)) for i in range(1, 6)]
    await index.upsert(mine)
    hits = await index.search(query(0), Scope(owner_id="owner-a"), 10, NOW)
    assert sorted(h.memory_id for h in hits) == [1, 2, 3, 4, 5]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    b_hits = await index.search(query(0), Scope(owner_id="owner-b"), 10, NOW)
    assert len(b_hits) == 10
    assert all(h.memory_id >= 10_000 for h in b_hits)


async def test_user_sub_scope(index: QdrantVectorIndex) -> None:
    await index.upsert(
        [
            rec(1, user_id=""),  # owner-wide
            rec(2, user_id="alice"),
            rec(3, user_id="bob"),
        ]
    )
    assert await ids(index, Scope(owner_id="owner-a")) == [1]
    assert sorted(await ids(index, Scope(owner_id="owner-a", user_id="alice"))) == [1, 2]
    assert sorted(await ids(index, Scope(owner_id="owner-a", user_id="bob"))) == [1, 3]


async def test_session_scope(index: QdrantVectorIndex) -> None:
    await index.upsert([rec(1), rec(2, session_id="s1"), rec(3, session_id="s2")])
    assert await ids(index, Scope(owner_id="owner-a")) == [1]
    assert sorted(await ids(index, Scope(owner_id="owner-a", session_id="s1"))) == [1, 2]
    assert sorted(await ids(index, Scope(owner_id="owner-a", session_id="s2"))) == [1, 3]


async def test_expired_memory_is_never_returned(index: QdrantVectorIndex) -> None:
    """At the adapter level: an expiry in the past hides the memory."""
    await index.upsert(
        [
            rec(1, expires_at=NOW - 1, vector=axis(0)),  # exact match, but expired
            rec(2, expires_at=NOW + 60, vector=axis(0, noise=0.3)),
            rec(3, expires_at=None, vector=axis(1)),
        ]
    )
    assert sorted(await ids(index, Scope(owner_id="owner-a"))) == [2, 3]
    # later, the second one has expired too
    assert await ids(index, Scope(owner_id="owner-a"), now=NOW + 60) == [3]


async def test_global_memories_follow_include_global(index: QdrantVectorIndex) -> None:
    await index.upsert([rec(1, "owner-a"), rec(2, GLOBAL_OWNER), rec(3, "owner-b")])
    assert sorted(await ids(index, Scope(owner_id="owner-a"))) == [1, 2]
    assert await ids(index, Scope(owner_id="owner-a", include_global=False)) == [1]
    assert await ids(index, Scope(owner_id=GLOBAL_OWNER)) == [2]


async def test_filters_combine(index: QdrantVectorIndex) -> None:
    await index.upsert(
        [
            rec(1, user_id="alice", session_id="s1", expires_at=NOW + 5),
            rec(2, user_id="alice", session_id="s1", expires_at=NOW - 5),
            rec(3, user_id="bob", session_id="s1"),
            rec(4, "owner-b", user_id="alice", session_id="s1"),
            rec(5, GLOBAL_OWNER, session_id="s9"),
        ]
    )
    scope = Scope(owner_id="owner-a", user_id="alice", session_id="s1")
    assert await ids(index, scope) == [1]


async def test_top_k_is_not_capped(index: QdrantVectorIndex) -> None:
    await index.upsert([rec(i, vector=axis(i % DIM, noise=0.2, seed=i)) for i in range(1, 101)])
    hits = await index.search(query(0), Scope(owner_id="owner-a"), 50, NOW)
    assert len(hits) == 50
    assert len({h.memory_id for h in hits}) == 50
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(-1.0 - 1e-5 <= h.score <= 1.0 + 1e-5 for h in hits)
    assert await index.search(query(0), Scope(owner_id="owner-a"), 0, NOW) == []


# ---- backfill --------------------------------------------------------------------------------
async def batches_of(
    records: Sequence[VectorRecord], size: int, after_id: int = 0
) -> AsyncIterator[Sequence[VectorRecord]]:
    """A store-like source honouring the resume cursor, in ascending memory_id order."""
    todo = [r for r in records if r.memory_id > after_id]
    for start in range(0, len(todo), size):
        yield todo[start : start + size]


def existing_memories(n: int) -> list[VectorRecord]:
    return [
        rec(i, "owner-a" if i % 2 else "owner-b", vector=axis(i % DIM, noise=0.1, seed=i))
        for i in range(1, n + 1)
    ]


async def test_backfill_copies_pre_existing_memories(index: QdrantVectorIndex) -> None:
    records = existing_memories(250)
    seen: list[BackfillProgress] = []
    last = await backfill(index, batches_of(records, 70), batch_size=32, progress=seen.append)
    assert last == 250
    assert await index.count() == 250
    assert seen[-1].copied == 250 and seen[-1].last_id == 250
    cursors = [p.last_id for p in seen]
    assert cursors == sorted(cursors)
    hits = await index.search(query(1), Scope(owner_id="owner-a"), 200, NOW)
    assert len(hits) == 125 and all(h.memory_id % 2 == 1 for h in hits)


async def test_backfill_resumes_from_cursor(index: QdrantVectorIndex) -> None:
    records = existing_memories(100)

    class Stop(Exception):
        pass

    async def interrupted() -> AsyncIterator[Sequence[VectorRecord]]:
        async for batch in batches_of(records, 10):
            if batch[0].memory_id > 40:
                raise Stop
            yield batch

    cursor = 0

    async def persist(p: BackfillProgress) -> None:  # async callbacks are awaited
        nonlocal cursor
        cursor = p.last_id

    with pytest.raises(Stop):
        await backfill(index, interrupted(), batch_size=10, progress=persist)
    assert cursor == 40
    assert await index.count() == 40
    # resume: even a source that ignores the cursor is fine (already-copied records skipped)
    seen: list[BackfillProgress] = []
    last = await backfill(
        index, batches_of(records, 25), after_id=cursor, batch_size=10, progress=seen.append
    )
    assert last == 100
    assert seen[-1].copied == 60 and seen[-1].skipped == 40
    assert await index.count() == 100
    # nothing left: the cursor stays put
    assert await backfill(index, batches_of(records, 25, after_id=100), after_id=100) == 100


async def test_backfill_rejects_unordered_source(index: QdrantVectorIndex) -> None:
    records = existing_memories(5)
    shuffled = [records[2], records[0]]

    async def source() -> AsyncIterator[Sequence[VectorRecord]]:
        yield shuffled

    with pytest.raises(ValueError, match="ascending"):
        await backfill(index, source())
