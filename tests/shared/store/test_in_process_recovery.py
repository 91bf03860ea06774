"""Embedded mode's durable jobs against a real migrated SQLite outbox: a start-up recovery runs
every unfinished job (whatever its relay-attempt count), pages through a long backlog with
bounded concurrency, and removes each record only once its job has run."""

from __future__ import annotations

import asyncio

from shared.jobs.payloads import LEARN, LearnPayload, encode_payload, job_id_for
from shared.jobs.queue import IN_PROCESS_CONCURRENCY, RECOVERY_CONCURRENCY, InProcessQueue
from shared.store import Store


def _payload(i: int) -> bytes:
    return encode_payload(_decoded(i))


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


async def test_a_burst_of_jobs_runs_a_few_at_a_time_and_every_one_is_recorded(tmp_path):
    # under load learning waits its turn instead of competing with requests for the event loop;
    # every waiting job is in the outbox (a crash loses none of them) until it has run
    store = await Store.open(str(tmp_path / "burst.db"))
    running = 0
    peak = 0
    ran: list[bytes] = []
    release = asyncio.Event()
    full = asyncio.Event()

    async def runner(name: str, data: bytes) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == IN_PROCESS_CONCURRENCY:
            full.set()
        await release.wait()
        running -= 1
        ran.append(data)

    queue = InProcessQueue(runner, store.outbox)
    try:
        n = 40
        for i in range(n):
            await queue.enqueue(LEARN, _decoded(i))
        await asyncio.wait_for(full.wait(), 60)  # the first jobs have started
        assert running == IN_PROCESS_CONCURRENCY
        assert await store.outbox.count() == n  # the waiting ones are recorded too
        release.set()
        await asyncio.wait_for(queue.drain(), 60)
        assert sorted(ran) == sorted(_payload(i) for i in range(n))
        assert peak == IN_PROCESS_CONCURRENCY
        assert await store.outbox.count() == 0
    finally:
        await store.close()


def _decoded(i: int) -> LearnPayload:
    return LearnPayload(
        owner_id="krec",
        user_id="",
        session_id=None,
        user_turns=[f"I prefer Zorblang{i}"],
        created_at=1_700_000_000.0 + i,
        request_id=f"r{i}",
    )
