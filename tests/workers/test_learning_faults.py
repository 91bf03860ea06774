"""Learning is never lost: real ``mnemogate worker`` subprocesses, real Redis, real SQLite.

- a worker SIGKILLed in the middle of a batch, then restarted: every job's effect stored once;
- Redis stopped: chats still succeed fast, jobs wait in ``job_outbox``, the relay delivers them
  once Redis is back (a private redis-server on its own port, started and stopped here);
- a transient store failure is retried with backoff; a job that exhausts its retries is a dead
  letter (event + worker log line); an LLM extraction failure is visible in the arq job result.
Faults are injected into the real database (a failing trigger), never by mocking project code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlean
from arq.jobs import Job

from services.gateway.app import arq_pool
from shared.extraction import EXTRACTION_PROMPT
from shared.jobs.payloads import LEARN, LearnPayload, encode_payload, job_id_for
from shared.jobs.queue import ArqQueue, job_deserializer
from shared.store import Store
from tests.fakes.upstream import free_port
from tests.harness import TEST_QUEUE_NAME
from tests.waiting import READY_TIMEOUT_S


def migrate(db: str) -> None:
    async def go() -> None:
        store = await Store.open(db)
        await store.close()

    asyncio.run(go())


def sql(db: str, query: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlean.connect(db, isolation_level=None)
    try:
        return [tuple(r) for r in conn.execute(query, params).fetchall()]
    finally:
        conn.close()


def wait_until(predicate, timeout_s: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + max(timeout_s, READY_TIMEOUT_S)
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def learn_payload(i: int, owner: str = "kbatch") -> LearnPayload:
    return LearnPayload(
        owner_id=owner,
        user_id="",
        session_id=None,
        user_turns=[f"I prefer Zorblang{i} for scripting"],
        created_at=1_700_000_000.0 + i,
        request_id=f"r{i}",
    )


async def enqueue_all(redis_url: str, db: str, payloads: list[LearnPayload]) -> list[str]:
    store = await Store.open(db)
    queue = ArqQueue(arq_pool(redis_url, TEST_QUEUE_NAME), store.outbox)
    try:
        return [await queue.enqueue(LEARN, p) for p in payloads]
    finally:
        await queue.close()
        await store.close()


def test_worker_killed_mid_batch_then_restarted_stores_every_effect_once(
    tmp_path, redis_url, worker_process
):
    db = str(tmp_path / "kill.db")
    migrate(db)
    n = 400
    asyncio.run(enqueue_all(redis_url, db, [learn_payload(i) for i in range(n)]))
    # 5 s per job: a loaded machine must not time jobs out (1 s dead-lettered 86 of 400 there)
    proc = worker_process(db, job_timeout_s="5")

    def stored() -> int:
        return int(sql(db, "SELECT COUNT(*) FROM memories")[0][0])

    wait_until(lambda: stored() >= n // 5, what="the batch to start")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=READY_TIMEOUT_S)
    at_kill = stored()
    assert 0 < at_kill < 2 * n, "the kill must land in the middle of the batch"

    # restart: jobs the dead worker held run again once their in-progress lock expires
    # (job_timeout_s 5 + 2 s margin + arq's 10 s); --burst exits when the queue is drained
    started = time.monotonic()
    again = worker_process(db, "--burst", job_timeout_s="5")
    assert again.wait(timeout=2 * READY_TIMEOUT_S) == 0
    print(
        f"stored at kill: {at_kill}/{2 * n}; restart drained in {time.monotonic() - started:.1f}s"
    )

    facts = sql(db, "SELECT key, COUNT(*) FROM memories WHERE category != 'turn' GROUP BY key")
    assert len(facts) == n and all(count == 1 for _, count in facts)
    contents = sql(db, "SELECT content FROM memories WHERE category = 'turn'")
    assert sorted(c for (c,) in contents) == sorted(
        f"I prefer Zorblang{i} for scripting" for i in range(n)
    )
    assert sql(db, "SELECT COUNT(*) FROM memory_events WHERE kind = 'dead_letter'") == [(0,)]
    assert sql(db, "SELECT COUNT(*) FROM learn_cursors") == [(n,)]


@contextlib.contextmanager
def private_redis(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A redis-server of our own on ``port`` (no persistence); stopped by its pid after."""
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _listening(port), 10, "redis-server")
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=READY_TIMEOUT_S)


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return False


def test_redis_down_jobs_wait_in_outbox_then_are_relayed(
    tmp_path, gateway_factory, upstream, worker_process
):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    db = str(tmp_path / "outbox.db")
    texts = ["I prefer Kotlin for Android", "I'll use Terraform for infra", "My name is Carol"]
    migrate(db)  # queue mode: the gateway does not migrate (`mnemogate migrate` does)
    with private_redis(port):
        gw = gateway_factory(db_path=db, redis_url=url, outbox_relay_interval_s=0.3)
        owner, secret = gw.create_key("outbox")
    # Redis is down now: every request still answers (the enqueue runs after the response and
    # parks the job in the outbox); how fast is not asserted, a loaded machine is slow
    with httpx.Client(base_url=gw.base_url, timeout=READY_TIMEOUT_S) as client:  # keep-alive
        for text in texts:
            resp = client.post(
                "/v1/chat/completions",
                headers={"authorization": f"Bearer {secret}"},
                json={"model": "fake-model", "messages": [{"role": "user", "content": text}]},
            )
            assert resp.status_code == 200
    wait_until(lambda: sql(db, "SELECT COUNT(*) FROM job_outbox") == [(3,)], what="outbox rows")
    assert gw.memories(owner) == []
    names = {name for (name,) in sql(db, "SELECT job_name FROM job_outbox")}
    assert names == {LEARN}

    with private_redis(port):  # Redis is back on the same port
        worker = worker_process(db, redis_url=url)
        items = gw.wait_for_memories(
            lambda ms: len([m for m in ms if m.category != "turn"]) == 3, owner_id=owner
        )
        wait_until(lambda: sql(db, "SELECT COUNT(*) FROM job_outbox") == [(0,)], what="relay")
        worker.terminate()  # while its Redis is still up, so it shuts down at once
        worker.wait(timeout=READY_TIMEOUT_S)
    assert sorted(m.content for m in items if m.category != "turn") == [
        "User decided to use Terraform for infra",
        "User prefers Kotlin for Android",
        "User's name is Carol",
    ]


def set_store_fault(db: str, on: bool) -> None:
    """Make every memory insert fail (``on``) or work again, via a trigger and a flag table."""
    conn = sqlean.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS test_fault (on_ INTEGER)")
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS test_fail_inserts BEFORE INSERT ON memories "
        "WHEN EXISTS (SELECT 1 FROM test_fault) "
        "BEGIN SELECT RAISE(ABORT, 'injected store failure'); END"
    )
    conn.execute("DELETE FROM test_fault")
    if on:
        conn.execute("INSERT INTO test_fault VALUES (1)")
    conn.close()


def test_worker_retries_transient_failures_and_dead_letters_exhausted_jobs(
    tmp_path, gateway_factory, upstream, redis_url, worker_process
):
    db = str(tmp_path / "retry.db")
    gw = gateway_factory(db_path=db, redis_url=redis_url)
    migrate(db)
    owner, secret = gw.create_key("retry")
    worker_process(db, job_max_tries="3")
    log = Path(tmp_path / "worker-0.log")

    def chat(text: str) -> None:
        resp = httpx.post(
            gw.base_url + "/v1/chat/completions",
            headers={"authorization": f"Bearer {secret}"},
            json={"model": "fake-model", "messages": [{"role": "user", "content": text}]},
        )
        assert resp.status_code == 200

    # the worker is ready once its start-up cron (outbox relay) ran
    wait_until(lambda: log.exists() and "cron:relay_outbox" in log.read_text(), 30, "worker")
    # 1. the store fails until the first retry is logged: the retried job then succeeds
    set_store_fault(db, True)
    chat("I prefer Zig for tooling")
    wait_until(lambda: "retrying" in log.read_text(), 10, "a retry")
    set_store_fault(db, False)
    gw.wait_for_memories(lambda ms: any(m.content == "User prefers Zig for tooling" for m in ms))
    assert sql(db, "SELECT COUNT(*) FROM memory_events WHERE kind = 'dead_letter'") == [(0,)]

    # 2. the store keeps failing: after 3 tries the job is a dead letter (event + log line)
    set_store_fault(db, True)
    chat("I prefer Odin for games")
    wait_until(
        lambda: sql(db, "SELECT COUNT(*) FROM memory_events WHERE kind = 'dead_letter'") == [(1,)],
        what="dead letter",
    )
    ((owner_id, detail),) = sql(
        db, "SELECT owner_id, detail FROM memory_events WHERE kind = 'dead_letter'"
    )
    letter = json.loads(str(detail))
    assert owner_id == owner and letter["job"] == LEARN and letter["tries"] == 3
    assert "injected store failure" in letter["error"] and len(letter["payload_sha256"]) == 64
    wait_until(lambda: "dead letter: job learn" in log.read_text(), 5, "the log line")
    # ids and a hash, never the user's text, in the event and the worker's log
    assert "Odin" not in str(detail) and "Odin" not in log.read_text()
    assert "payload_hex" not in letter and "payload_hex" not in log.read_text()
    assert not any("Odin" in m.content for m in gw.memories(owner))


def test_llm_extraction_failure_is_in_the_arq_job_result(
    tmp_path, upstream, redis_url, worker_process
):
    def respond(body):
        assert body["messages"][0]["content"] == EXTRACTION_PROMPT
        return 200, {"choices": [{"message": {"role": "assistant", "content": "no json here"}}]}

    upstream.responder = respond
    db = str(tmp_path / "llm.db")
    migrate(db)
    payload = learn_payload(7, owner="kllm")
    (job_id,) = asyncio.run(enqueue_all(redis_url, db, [payload]))
    assert job_id == job_id_for(LEARN, encode_payload(payload))
    proc = worker_process(
        db,
        "--burst",
        extraction="llm",
        llm_extractor_model="extract-model",
        llm_extractor_min_turns="1",
        upstream_base_url=upstream.base_url,
    )
    assert proc.wait(timeout=30) == 0

    async def result() -> dict[str, object]:
        pool = arq_pool(redis_url, TEST_QUEUE_NAME)
        try:
            job = Job(job_id, pool, _deserializer=job_deserializer)
            value: dict[str, object] = await job.result(timeout=READY_TIMEOUT_S)
            return value
        finally:
            await pool.aclose()

    outcome = asyncio.run(result())
    assert outcome["extractor"] == "regex-fallback"
    assert "no JSON fact list" in str(outcome["llm_error"]) and outcome["facts"] == 1
    assert sql(db, "SELECT COUNT(*) FROM memory_events WHERE kind = 'extraction_failed'") == [(1,)]


@pytest.fixture(autouse=True)
def _quiet_upstream(upstream):  # every test here gets a fresh fake provider
    return upstream
