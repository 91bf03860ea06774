"""``mnemogate sweep`` / ``summarize`` with Qdrant as the vector tier: the deleted memories' points
leave Qdrant too, and a Qdrant failure parks ``vector_delete`` jobs in the outbox
for a worker to retry instead of losing them. Qdrant is the fake REST server (real HTTP): the
CLI runs in its own process, where qdrant-client's local mode would be a different instance.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from shared.jobs.payloads import VECTOR_DELETE, VectorDeletePayload
from tests.fakes.qdrant import FakeQdrant
from tests.fakes.upstream import FakeUpstream
from tests.lifecycle_seed import DAY, add, ids, query
from tests.services.test_cli_lifecycle import cli, seed

COLLECTION = "mem_cli"


@pytest.fixture
def fake_qdrant() -> Iterator[FakeQdrant]:
    fake = FakeQdrant().start()
    yield fake
    fake.stop()


def qdrant_env(fake: FakeQdrant, upstream: FakeUpstream) -> dict[str, str]:
    return {
        "vector_tier": "qdrant",
        "qdrant_url": fake.url,
        "qdrant_collection": COLLECTION,
        "qdrant_timeout_s": "1",
        # an embedding source must be configured for the vector tiers to exist (never called)
        "embedding_source": "remote",
        "embedding_base_url": upstream.base_url,
        "embedding_model": "fake-embed",
    }


def deleted_points(fake: FakeQdrant) -> set[int]:
    out: set[int] = set()
    for method, path, _headers, body in fake.requests:
        if method == "POST" and path == f"/collections/{COLLECTION}/points/delete":
            out |= {int(i) for i in body["points"]}
    return out


def test_cli_sweep_deletes_points_from_qdrant(
    tmp_path: Path, fake_qdrant: FakeQdrant, upstream: FakeUpstream
) -> None:
    db = str(tmp_path / "q.db")
    now = time.time()
    victim, keep = seed(
        db,
        lambda s: _pair(s, now),
    )
    out = cli(db, "sweep", **qdrant_env(fake_qdrant, upstream))
    assert out.returncode == 0, out.stdout + out.stderr
    assert ids(db) == {keep}
    assert deleted_points(fake_qdrant) == {victim}


def test_cli_summarize_deletes_originals_from_qdrant(
    tmp_path: Path, fake_qdrant: FakeQdrant, upstream: FakeUpstream
) -> None:
    db = str(tmp_path / "q.db")
    now = time.time()

    async def go(store):
        return [
            await add(store, text, created=now - 40 * DAY, accesses=1, accessed_at=now - 20 * DAY)
            for text in (
                "quokkaword sits here. extra filler words for length.",
                "another memory entirely. with more filler words here.",
            )
        ]

    originals = seed(db, go)
    out = cli(db, "summarize", "--older-than-days", "30", **qdrant_env(fake_qdrant, upstream))
    assert out.returncode == 0, out.stdout + out.stderr
    assert not set(originals) & ids(db)
    assert deleted_points(fake_qdrant) == set(originals)


def test_cli_sweep_parks_the_qdrant_delete_when_qdrant_fails(
    tmp_path: Path, fake_qdrant: FakeQdrant, upstream: FakeUpstream
) -> None:
    db = str(tmp_path / "q.db")
    now = time.time()
    victim, keep = seed(db, lambda s: _pair(s, now))
    fake_qdrant.fail_status = 503
    out = cli(db, "sweep", **qdrant_env(fake_qdrant, upstream))
    assert out.returncode == 0, out.stdout + out.stderr
    assert ids(db) == {keep}  # SQLite (FTS, sqlite-vec) does not wait for Qdrant
    parked = query(db, "SELECT job_name, payload FROM job_outbox")
    assert [name for name, _ in parked] == [VECTOR_DELETE]
    payload = msgspec.msgpack.decode(parked[0][1], type=VectorDeletePayload)
    assert payload.memory_ids == [victim]


async def _pair(store, now: float) -> tuple[int, int]:
    victim = await add(store, "we talked about the zebrafish experiment", created=now - 40 * DAY)
    keep = await add(
        store,
        "the user is allergic to walnuts",
        type="factual",
        category="fact",
        created=now - 400 * DAY,
    )
    return victim, keep
