"""The access batcher: one ``record_access`` job per (owner, end user) and flush, every tick
while traffic is light and at most every busy interval while it is heavy, through a real
in-process queue that runs the real job handler on a migrated store."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from shared.jobs.access_recording import BUSY_INJECTIONS, AccessBatcher, flush_due
from shared.jobs.payloads import RECORD_ACCESS, RecordAccessPayload, decode_payload
from shared.jobs.queue import InProcessQueue
from shared.models import NewMemory
from shared.store import Store

WAIT_S = 60.0


def test_light_traffic_flushes_on_every_tick_and_heavy_traffic_waits():
    assert flush_due(0, 0.0, 5.0)
    assert flush_due(BUSY_INJECTIONS - 1, 0.0, 5.0)
    assert not flush_due(BUSY_INJECTIONS, 4.99, 5.0)
    assert flush_due(BUSY_INJECTIONS, 5.0, 5.0)
    assert flush_due(10 * BUSY_INJECTIONS, 7.0, 5.0)


async def _until(check, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("busy", [False, True])
async def test_the_run_loop_records_every_injection(tmp_path, busy):
    store = await Store.open(str(tmp_path / "acc.db"))
    m, _ = await store.writes.upsert(NewMemory(owner_id="o", content="the red kite"))
    jobs: list[RecordAccessPayload] = []

    async def runner(name: str, data: bytes) -> None:
        assert name == RECORD_ACCESS
        payload = decode_payload(name, data)
        assert isinstance(payload, RecordAccessPayload)
        await store.writes.record_access(payload.memory_ids, payload.at)
        jobs.append(payload)

    queue = InProcessQueue(runner, store.outbox)
    batcher = AccessBatcher(queue)
    n = BUSY_INJECTIONS if busy else 3
    for _ in range(n):
        batcher.add("o", "", [m.id], tokens=5)
    task = asyncio.create_task(batcher.run(interval_s=0.01, busy_interval_s=0.2))
    try:
        await _until(lambda: jobs, "no flush")
        assert len(jobs) == 1 and jobs[0].requests == n and jobs[0].tokens == 5 * n
        await queue.drain()
        got = await store.memories.get_many([m.id])
        assert got[m.id].access_count == n
        batcher.add("o", "", [m.id])  # counted by the final flush when the loop stops
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await queue.drain()
        await store.close()
    assert sum(len(j.memory_ids) for j in jobs) == n + 1
