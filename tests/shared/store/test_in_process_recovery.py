"""Embedded mode's durable jobs against a real migrated SQLite outbox: a start-up recovery runs
every unfinished job (whatever its relay-attempt count), pages through a long backlog with
bounded concurrency, and removes each record only once its job has run."""

from __future__ import annotations

import asyncio

from shared.jobs.payloads import LEARN, LearnPayload, encode_payload, job_id_for
from shared.jobs.queue import RECOVERY_CONCURRENCY, InProcessQueue
from shared.store import Store


def _payload(i: int) -> bytes:
    return encode_payload(
        LearnPayload(
            owner_id="krec",
            user_id="",
            session_id=None,
            user_turns=[f"I prefer Zorblang{i}"],
            created_at=1_700_000_000.0 + i,
            request_id=f"r{i}",
        )
    )


async def test_recovery_runs_every_unfinished_job_with_bounded_concurrency(tmp_path):
    store = await Store.open(str(tmp_path / "rec.db"))
    n = 450  # more than two pages
    for i in range(n):
        data = _payload(i)
        await store.outbox.add(LEARN, job_id_for(LEARN, data), data)
        if i % 3 == 0:  # relay failures while Redis was down (queue mode) count for nothing here
            for _ in range(6):
                await store.outbox.mark_failed(i + 1, "redis down")
    ran: list[bytes] = []
    running = 0
    peak = 0

    async def runner(name: str, data: bytes) -> None:
        nonlocal running, peak
        assert name == LEARN
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001)
        running -= 1
        ran.append(data)

    queue = InProcessQueue(runner, store.outbox)
    try:
        assert await queue.recover() == n
        await queue.drain()
        assert sorted(ran) == sorted(_payload(i) for i in range(n))
        assert 1 < peak <= RECOVERY_CONCURRENCY
        assert await store.outbox.count() == 0
        assert await queue.recover() == 0  # nothing left
    finally:
        await store.close()


async def test_a_job_enqueued_during_recovery_runs_once(tmp_path):
    store = await Store.open(str(tmp_path / "rec2.db"))
    data = _payload(1)
    await store.outbox.add(LEARN, job_id_for(LEARN, data), data)
    calls: list[bytes] = []
    release = asyncio.Event()

    async def runner(name: str, payload: bytes) -> None:
        calls.append(payload)
        await release.wait()

    queue = InProcessQueue(runner, store.outbox)
    try:
        recovery = asyncio.create_task(queue.recover())
        await asyncio.sleep(0.05)
        payload = LearnPayload(
            owner_id="krec",
            user_id="",
            session_id=None,
            user_turns=["I prefer Zorblang1"],
            created_at=1_700_000_001.0,
            request_id="r1",
        )
        await queue.enqueue(LEARN, payload)  # the same job, enqueued again: not run twice
        release.set()
        assert await recovery == 1
        await queue.drain()
        assert calls == [data]
        assert await store.outbox.count() == 0
    finally:
        await store.close()
