"""Embedded mode loses no learning to a crash: a real ``mnemogate serve`` process is SIGKILLed
while its learn job is in flight, and the next start finishes the job (durable in-process jobs
through ``job_outbox``). Real SQLite, real HTTP, the fake provider as upstream and extractor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import sqlean

from shared.extraction import EXTRACTION_PROMPT
from tests.fakes.upstream import FakeUpstream, free_port
from tests.waiting import READY_TIMEOUT_S


def _sql(db: str, query: str) -> list[tuple[Any, ...]]:
    conn = sqlean.connect(db)
    try:
        return [tuple(r) for r in conn.execute(query).fetchall()]
    finally:
        conn.close()


def _wait(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + max(timeout_s, READY_TIMEOUT_S)
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _is_extraction(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or [{}]
    return messages[0].get("content") == EXTRACTION_PROMPT


def test_sigkill_during_a_learn_job_then_restart_learns_it(tmp_path: Path, upstream: FakeUpstream):
    db = str(tmp_path / "crash.db")
    port = free_port()
    env = dict(os.environ)
    env.update(
        {
            "MNEMOGATE_DB_PATH": db,
            "MNEMOGATE_UPSTREAM_BASE_URL": upstream.base_url,
            "MNEMOGATE_UPSTREAM_API_KEY": "sk-upstream-test",
            "MNEMOGATE_EXTRACTION": "llm",
            "MNEMOGATE_LLM_EXTRACTOR_MODEL": "extract-model",
            "MNEMOGATE_LLM_EXTRACTOR_MIN_TURNS": "1",
            "MNEMOGATE_EMBEDDING_SOURCE": "none",
            "MNEMOGATE_LIFECYCLE_SCHEDULE": "false",
        }
    )
    env.pop("MNEMOGATE_REDIS_URL", None)
    cli = [sys.executable, "-m", "services.cli"]
    made = subprocess.run(
        [*cli, "keys", "create", "--name", "crash"], env=env, capture_output=True, check=True
    )
    secret = made.stdout.decode().strip().splitlines()[-1]

    def serve(log_name: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [*cli, "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / log_name, "wb"),  # noqa: SIM115
        )

        def up() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        _wait(up, 30, "the gateway")
        return proc

    # the extractor call hangs: the learn job is in flight when the process dies
    upstream.delay_for = lambda body: 3600.0 if _is_extraction(body) else 0.0
    first = serve("serve-1.log")
    try:
        resp = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            headers={"authorization": f"Bearer {secret}"},
            json={"model": "m", "messages": [{"role": "user", "content": "My name is Carol"}]},
            timeout=READY_TIMEOUT_S,
        )
        assert resp.status_code == 200
        _wait(lambda: any(_is_extraction(b) for b in upstream.requests), 10, "the extractor call")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=READY_TIMEOUT_S)
    assert _sql(db, "SELECT job_name FROM job_outbox") == [("learn",)]
    assert _sql(db, "SELECT COUNT(*) FROM memories WHERE category != 'turn'") == [(0,)]

    # the extractor works again; the next start runs the interrupted job
    upstream.delay_for = None
    facts = [{"content": "User's name is Carol", "category": "identity"}]
    upstream.responder = lambda body: (
        200,
        {"choices": [{"message": {"role": "assistant", "content": json.dumps(facts)}}]},
    )
    second = serve("serve-2.log")
    try:
        _wait(
            lambda: (
                _sql(db, "SELECT content FROM memories WHERE category != 'turn'")
                == [("User's name is Carol",)]
            ),
            30,
            "the recovered learn job",
        )
        _wait(lambda: _sql(db, "SELECT COUNT(*) FROM job_outbox") == [(0,)], 10, "the record")
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=20)
    assert "recovered 1 unfinished in-process jobs" in (tmp_path / "serve-2.log").read_text()
