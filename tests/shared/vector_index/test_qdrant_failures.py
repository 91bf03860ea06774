"""QdrantVectorIndex against a fake Qdrant REST server (real HTTP on 127.0.0.1) that fails or hangs.

Every failure must surface as ``VectorIndexError`` with a short code, within the configured
timeout, so recall can fall back to sqlite-vec / keyword and the worker can retry writes.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import numpy as np
import pytest
from qdrant_client import AsyncQdrantClient

from shared.errors import VectorIndexError
from shared.models import Scope
from shared.vector_index.base import VectorRecord
from shared.vector_index.qdrant import DIM_KEY, SIGNATURE_KEY, QdrantVectorIndex, make_qdrant_index
from tests.fakes.qdrant import FakeQdrant
from tests.fakes.upstream import free_port

DIM = 4
SIG = f"static:test:{DIM}"
TIMEOUT_S = 0.5
SCOPE = Scope(owner_id="owner-a", user_id="u1", session_id="s1")
QUERY = np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
RECORD = VectorRecord(
    memory_id=7,
    owner_id="owner-a",
    user_id="",
    session_id=None,
    type="semantic",
    created_at=1.0,
    expires_at=None,
    vector=[1.0, 0.0, 0.0, 0.0],
)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeQdrant]:
    fake = FakeQdrant().start()
    yield fake
    fake.stop()


@pytest.fixture
def fake(server: FakeQdrant) -> Iterator[FakeQdrant]:
    server.reset()
    yield server
    server.reset()


@pytest.fixture
async def index(fake: FakeQdrant) -> AsyncIterator[QdrantVectorIndex]:
    idx = make_qdrant_index(fake.url, "", "mem", "float32", TIMEOUT_S)
    yield idx
    await idx.close()


async def test_happy_path_over_http(fake: FakeQdrant, index: QdrantVectorIndex) -> None:
    fake.points = [{"id": 7, "version": 1, "score": 0.93}, {"id": 3, "version": 1, "score": 0.5}]
    fake.count = 2
    hits = await index.search(QUERY, SCOPE, 25, 100.0)
    assert [(h.memory_id, h.score) for h in hits] == [(7, 0.93), (3, 0.5)]
    assert await index.count() == 2
    assert await index.health() == "ok"
    query = next(b for m, p, _, b in fake.requests if p == "/collections/mem/points/query")
    assert query["limit"] == 25
    assert query["filter"]["must"], "the scope filter is sent to Qdrant"
    assert "owner-a" in str(query["filter"])


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_error_maps_to_unavailable(
    fake: FakeQdrant, index: QdrantVectorIndex, status: int
) -> None:
    fake.fail_status = status
    with pytest.raises(VectorIndexError) as err:
        await index.search(QUERY, SCOPE, 5, 100.0)
    assert err.value.code == "qdrant_unavailable"
    assert str(status) in err.value.message
    with pytest.raises(VectorIndexError) as err:
        await index.upsert([RECORD])
    assert err.value.code == "qdrant_unavailable"
    with pytest.raises(VectorIndexError) as err:
        await index.ensure(DIM, SIG)
    assert err.value.code == "qdrant_unavailable"
    reason = await index.health()
    assert reason != "ok" and "qdrant_unavailable" in reason


async def test_unauthorized_is_reported(fake: FakeQdrant, index: QdrantVectorIndex) -> None:
    fake.fail_status = 401
    with pytest.raises(VectorIndexError) as err:
        await index.delete([1, 2])
    assert err.value.code == "qdrant_unauthorized"
    assert "qdrant_unauthorized" in await index.health()


async def test_hang_times_out_within_the_timeout(
    fake: FakeQdrant, index: QdrantVectorIndex
) -> None:
    fake.hang_s = 30.0
    for call in (
        lambda: index.search(QUERY, SCOPE, 5, 100.0),
        lambda: index.upsert([RECORD]),
        lambda: index.delete([7]),
    ):
        started = time.monotonic()
        with pytest.raises(VectorIndexError) as err:
            await call()
        elapsed = time.monotonic() - started
        assert err.value.code == "qdrant_timeout"
        # not before the timeout, and long before the 30 s hang (a loaded machine adds delay)
        assert TIMEOUT_S * 0.9 <= elapsed < fake.hang_s / 2
    # ensure / cleanup are bounded by the (longer) admin timeout
    admin = QdrantVectorIndex(
        AsyncQdrantClient(url=fake.url, timeout=5, check_compatibility=False),
        "mem",
        timeout_s=TIMEOUT_S,
        admin_timeout_s=0.8,
    )
    admin_calls: list[Callable[[], Awaitable[object]]] = [
        lambda: admin.ensure(DIM, SIG),
        lambda: admin.cleanup_expired(100.0),
    ]
    for admin_call in admin_calls:
        started = time.monotonic()
        with pytest.raises(VectorIndexError) as err:
            await admin_call()
        assert err.value.code == "qdrant_timeout"
        assert 0.7 <= time.monotonic() - started < fake.hang_s / 2
    await admin.close()
    started = time.monotonic()
    reason = await index.health()
    assert time.monotonic() - started < fake.hang_s / 2  # the timeout fired, not the hang
    assert "qdrant_timeout" in reason


async def test_plain_client_pointed_at_the_fake(fake: FakeQdrant) -> None:
    """The adapter also bounds a caller-built client (``timeout`` in whole seconds)."""
    client = AsyncQdrantClient(
        url=fake.url, timeout=5, prefer_grpc=False, check_compatibility=False
    )
    idx = QdrantVectorIndex(client, "mem", timeout_s=0.3)
    fake.hang_s = 10.0
    started = time.monotonic()
    with pytest.raises(VectorIndexError) as err:
        await idx.count()
    assert err.value.code == "qdrant_timeout"
    assert time.monotonic() - started < fake.hang_s / 2  # the timeout fired, not the hang
    await client.close()


async def test_connection_refused_maps_to_unavailable() -> None:
    idx = make_qdrant_index(f"http://127.0.0.1:{free_port()}", "", "mem", "float32", 2.0)
    with pytest.raises(VectorIndexError) as err:
        await idx.search(QUERY, SCOPE, 5, 100.0)
    assert err.value.code == "qdrant_unavailable"
    assert (await idx.health()).startswith("qdrant_unavailable")
    await idx.close()


async def test_recovers_after_an_outage(fake: FakeQdrant, index: QdrantVectorIndex) -> None:
    """A failed write leaves no stale state: the worker's retry succeeds once Qdrant is back."""
    fake.fail_status = 503
    with pytest.raises(VectorIndexError):
        await index.upsert([RECORD])
    fake.fail_status = None
    await index.upsert([RECORD])
    upserts = [b for m, p, _, b in fake.requests if m == "PUT" and p == "/collections/mem/points"]
    assert len(upserts) == 2
    assert upserts[-1]["points"][0]["id"] == 7
    assert upserts[-1]["points"][0]["payload"] == {
        "memory_id": 7,
        "owner_id": "owner-a",
        "user_id": "",
        "session_id": None,
        "type": "semantic",
        "created_at": 1.0,
        "expires_at": None,
    }


async def collection_info_json(dim: int, metadata: dict[str, Any]) -> dict[str, Any]:
    """A real CollectionInfo body (as the server sends it), produced by local mode."""
    local = AsyncQdrantClient(location=":memory:")
    idx = QdrantVectorIndex(local, "mem")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        await idx.ensure(dim, str(metadata[SIGNATURE_KEY]))
    info = await local.get_collection("mem")
    await local.close()
    return info.model_dump(mode="json", exclude_none=True)


async def test_dimension_mismatch_over_http(fake: FakeQdrant, index: QdrantVectorIndex) -> None:
    info = await collection_info_json(DIM, {SIGNATURE_KEY: SIG, DIM_KEY: DIM})
    fake.responses[("GET", "/collections/mem")] = (200, {"result": info, "status": "ok"})
    with pytest.raises(VectorIndexError) as err:
        await index.ensure(384, "onnx:minilm:384")
    assert err.value.code == "qdrant_dimension_mismatch"
    assert "mnemogate qdrant recreate" in err.value.message
    assert "mnemogate qdrant recreate" in await index.health()
    # the matching signature is accepted, payload indexes are (re)declared
    fresh = make_qdrant_index(fake.url, "", "mem", "float32", TIMEOUT_S)
    assert await fresh.ensure(DIM, SIG) is False
    indexed = {b["field_name"] for m, p, _, b in fake.requests if p == "/collections/mem/index"}
    assert indexed == {"owner_id", "user_id", "session_id", "type", "created_at", "expires_at"}
    await fresh.close()


async def test_create_over_http_sends_schema(fake: FakeQdrant, index: QdrantVectorIndex) -> None:
    fake.collection_exists = False
    idx = make_qdrant_index(fake.url, "", "mem", "int8", TIMEOUT_S)
    assert await idx.ensure(DIM, SIG + ":int8") is True
    create = next(b for m, p, _, b in fake.requests if m == "PUT" and p == "/collections/mem")
    assert create["vectors"] == {"size": DIM, "distance": "Cosine"}
    assert create["quantization_config"]["scalar"]["type"] == "int8"
    assert create["metadata"] == {SIGNATURE_KEY: SIG + ":int8", DIM_KEY: DIM}
    owner_index = next(
        b
        for _, p, _, b in fake.requests
        if p == "/collections/mem/index" and b["field_name"] == "owner_id"
    )
    assert owner_index["field_schema"]["is_tenant"] is True
    await idx.search(QUERY, SCOPE, 5, 100.0)
    query = next(b for m, p, _, b in fake.requests if p == "/collections/mem/points/query")
    assert query["params"]["quantization"]["rescore"] is True
    await idx.close()
