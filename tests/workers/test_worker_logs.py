"""The worker's log shows job ids and functions, never job arguments or results (real worker,
real Redis, real SQLite): a learn job whose user turn holds a marker leaves no marker in the log.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from services.gateway.app import arq_pool
from shared.jobs.payloads import LEARN, LearnPayload
from shared.jobs.queue import ArqQueue
from shared.store import Store
from tests.fakes.upstream import FakeUpstream
from tests.harness import TEST_QUEUE_NAME

MARKER = "ZQ9LOGMARKER9QZ"


def test_worker_log_names_the_job_but_not_its_text(
    tmp_path: Path, redis_url: str, worker_process, upstream: FakeUpstream
) -> None:
    db = str(tmp_path / "logs.db")

    async def enqueue() -> str:
        store = await Store.open(db)
        queue = ArqQueue(arq_pool(redis_url, TEST_QUEUE_NAME), store.outbox)
        try:
            payload = LearnPayload(
                owner_id="k1",
                user_id="",
                session_id=None,
                user_turns=[f"I prefer Haskell, my locker word is {MARKER}"],
                assistant_text=f"Noted {MARKER}",
                created_at=time.time(),
                request_id="r1",
            )
            return await queue.enqueue(LEARN, payload)
        finally:
            await queue.close()
            await store.close()

    job_id = asyncio.run(enqueue())
    proc = worker_process(db, "--burst", upstream_base_url=upstream.base_url)
    assert proc.wait(timeout=60) == 0
    log = (tmp_path / "worker-0.log").read_text(errors="replace")
    assert f"{job_id}:{LEARN}(…)" in log  # the job start names its id and function
    assert f"{job_id}:{LEARN} ●" in log  # its end, without the result
    assert MARKER not in log
