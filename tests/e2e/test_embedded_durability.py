"""Embedded mode loses no learning to a crash: a real ``mnemogate serve`` process is SIGKILLed
while its learn job is in flight, and the next start finishes the job (durable in-process jobs
through ``job_outbox``). Real SQLite, real HTTP, the fake provider as upstream and extractor."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx

from shared.extraction import EXTRACTION_PROMPT
from tests.fakes.upstream import FakeUpstream, free_port
from tests.processes import create_key, db_rows, gateway_env, serve
from tests.waiting import READY_TIMEOUT_S, wait_until


def _wait(predicate, timeout_s: float, what: str) -> None:
    wait_until(predicate, timeout_s=max(timeout_s, READY_TIMEOUT_S), what=what)


def _is_extraction(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or [{}]
    return messages[0].get("content") == EXTRACTION_PROMPT


def test_sigkill_during_a_learn_job_then_restart_learns_it(tmp_path: Path, upstream: FakeUpstream):
    db = str(tmp_path / "crash.db")
    port = free_port()
    env = gateway_env(
        db,
        upstream.base_url,
        extraction="llm",
        llm_extractor_model="extract-model",
        llm_extractor_min_turns="1",
        embedding_source="none",
    )
    secret = create_key(env, "crash")

    # the extractor call hangs: the learn job is in flight when the process dies
    upstream.delay_for = lambda body: 3600.0 if _is_extraction(body) else 0.0
    with serve(env, port, tmp_path / "serve-1.log") as first:
        try:
            resp = httpx.post(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                headers={"authorization": f"Bearer {secret}"},
                json={"model": "m", "messages": [{"role": "user", "content": "My name is Carol"}]},
                timeout=READY_TIMEOUT_S,
            )
            assert resp.status_code == 200
            _wait(
                lambda: any(_is_extraction(b) for b in upstream.requests), 10, "the extractor call"
            )
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=READY_TIMEOUT_S)
    assert db_rows(db, "SELECT job_name FROM job_outbox") == [("learn",)]
    assert db_rows(db, "SELECT COUNT(*) FROM memories WHERE category != 'turn'") == [(0,)]

    # the extractor works again; the next start runs the interrupted job
    upstream.delay_for = None
    facts = [{"content": "User's name is Carol", "category": "identity"}]
    upstream.responder = lambda body: (
        200,
        {"choices": [{"message": {"role": "assistant", "content": json.dumps(facts)}}]},
    )
    with serve(env, port, tmp_path / "serve-2.log"):
        _wait(
            lambda: (
                db_rows(db, "SELECT content FROM memories WHERE category != 'turn'")
                == [("User's name is Carol",)]
            ),
            30,
            "the recovered learn job",
        )
        _wait(lambda: db_rows(db, "SELECT COUNT(*) FROM job_outbox") == [(0,)], 10, "the record")
    assert "recovered 1 unfinished in-process jobs" in (tmp_path / "serve-2.log").read_text()
