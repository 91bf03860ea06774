"""The worker's log shows job ids and functions, never job arguments or results (real worker,
real Redis, real SQLite): a learn job whose user turn holds a marker leaves no marker in the log.
"""

from __future__ import annotations

import time
from pathlib import Path

from shared.jobs.payloads import LEARN, LearnPayload
from tests.fakes.upstream import FakeUpstream
from tests.harness import enqueue_to_redis

MARKER = "ZQ9LOGMARKER9QZ"


def test_worker_log_names_the_job_but_not_its_text(
    tmp_path: Path, redis_url: str, worker_process, upstream: FakeUpstream
) -> None:
    db = str(tmp_path / "logs.db")

    payload = LearnPayload(
        owner_id="k1",
        user_id="",
        session_id=None,
        user_turns=[f"I prefer Haskell, my locker word is {MARKER}"],
        assistant_text=f"Noted {MARKER}",
        created_at=time.time(),
        request_id="r1",
    )
    job_id = enqueue_to_redis(db, redis_url, LEARN, payload)
    proc = worker_process(db, "--burst", upstream_base_url=upstream.base_url)
    assert proc.wait(timeout=60) == 0
    log = (tmp_path / "worker-0.log").read_text(errors="replace")
    assert f"{job_id}:{LEARN}(…)" in log  # the job start names its id and function
    assert f"{job_id}:{LEARN} ●" in log  # its end, without the result
    assert MARKER not in log
