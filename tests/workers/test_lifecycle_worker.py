"""Lifecycle jobs through a real arq worker process (``mnemogate worker --burst``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec
from arq import create_pool
from arq.connections import RedisSettings
from arq.jobs import Job

from shared.jobs.payloads import (
    DECAY_RELEVANCE,
    SWEEP,
    DecayRelevancePayload,
    SweepPayload,
    encode_payload,
    job_id_for,
)
from shared.jobs.queue import job_deserializer, job_serializer
from shared.store import Store
from shared.store.memories.lifecycle import RELEVANCE_DECAYED_AT
from tests.harness import TEST_QUEUE_NAME
from tests.lifecycle_seed import DAY, add, ids, query, seed_cases
from tests.waiting import READY_TIMEOUT_S


async def enqueue(redis_url: str, name: str, payload: msgspec.Struct) -> str:
    pool = await create_pool(
        RedisSettings.from_dsn(redis_url),
        job_serializer=job_serializer,
        job_deserializer=job_deserializer,
        default_queue_name=TEST_QUEUE_NAME,
    )
    data = encode_payload(payload)
    job_id = job_id_for(name, data)
    try:
        assert await pool.enqueue_job(name, data, _job_id=job_id) is not None
    finally:
        await pool.aclose()
    return job_id


async def result(redis_url: str, job_id: str) -> Any:
    pool = await create_pool(
        RedisSettings.from_dsn(redis_url),
        job_serializer=job_serializer,
        job_deserializer=job_deserializer,
        default_queue_name=TEST_QUEUE_NAME,
    )
    try:
        return await Job(job_id, pool, _deserializer=job_deserializer).result(
            timeout=READY_TIMEOUT_S
        )
    finally:
        await pool.aclose()


def drain(worker_process, db: str, **env: str) -> None:
    # no scheduled sweep: a cron run at minute 7 would scan rows these tests count on
    proc = worker_process(db, "--burst", lifecycle_schedule="false", **env)
    assert proc.wait(timeout=60) == 0


async def test_l1_to_l3_sweep_job_in_worker(tmp_path: Path, redis_url: str, worker_process) -> None:
    db = str(tmp_path / "w.db")
    store = await Store.open(db)
    case = await seed_cases(store, time.time())
    await store.close()

    dry_id = await enqueue(redis_url, SWEEP, SweepPayload(dry_run=True, requested_at=time.time()))
    drain(worker_process, db)
    dry = await result(redis_url, dry_id)
    assert dry["dry_run"] and dry["deleted"] == 1 and dry["by_reason"] == {"decayed": 1}
    assert ids(db) == set(case.values())

    job_id = await enqueue(redis_url, SWEEP, SweepPayload(requested_at=time.time()))
    drain(worker_process, db)
    report = await result(redis_url, job_id)
    assert report["deleted"] == 1
    assert ids(db) == {case["L2"], case["L3"], case["fresh"]}
    kinds = query(db, "SELECT kind, memory_id FROM memory_events WHERE kind = 'eviction'")
    assert kinds == [("eviction", case["L1"])]


async def test_l4_progress_survives_worker_restarts(
    tmp_path: Path, redis_url: str, worker_process
) -> None:
    db = str(tmp_path / "w.db")
    now = time.time()
    store = await Store.open(db)
    await add(store, "fresh one", created=now)
    await add(store, "fresh two", created=now)
    old = await add(store, "old episodic", created=now - 60 * DAY)
    idle = await add(
        store, "idle but typed-immune", type="semantic", category="fact", created=now - 90 * DAY
    )
    # The last decay run happened 30 days ago; the workers were down since.
    await store.lifecycle.set_state(RELEVANCE_DECAYED_AT, repr(now - 30 * DAY), now - 30 * DAY)
    await store.close()
    env = {"sweep_max_scan": "2", "sweep_batch_size": "1"}

    await enqueue(redis_url, SWEEP, SweepPayload(requested_at=1.0))
    drain(worker_process, db, **env)
    assert old in ids(db)  # first run scanned rows 1-2 only
    await enqueue(redis_url, SWEEP, SweepPayload(requested_at=2.0))
    drain(worker_process, db, **env)  # a new worker process resumes at the persisted cursor
    assert old not in ids(db)

    decay_id = await enqueue(redis_url, DECAY_RELEVANCE, DecayRelevancePayload(requested_at=now))
    drain(worker_process, db)
    report = await result(redis_url, decay_id)
    assert abs(report["elapsed_s"] - 30 * DAY) < 120  # caught up, not reset
    rel = dict(query(db, "SELECT id, relevance FROM memories"))
    assert abs(rel[idle] - 0.5) < 1e-3

    await enqueue(redis_url, DECAY_RELEVANCE, DecayRelevancePayload(requested_at=now + 1))
    drain(worker_process, db)  # another restart: only the seconds since the last run apply
    assert abs(dict(query(db, "SELECT id, relevance FROM memories"))[idle] - 0.5) < 1e-3
