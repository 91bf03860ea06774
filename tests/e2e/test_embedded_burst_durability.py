"""Embedded mode loses no acknowledged learning: a real ``mnemogate serve`` process gets a burst
of learning requests (5 at a time), is SIGKILLed as soon as the last response arrived, and is
restarted; every exchange the client saw answered is learned (the in-process job is recorded
durably before the response completes)."""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.upstream import FakeUpstream, free_port
from tests.processes import create_key, db_rows, gateway_env, serve
from tests.waiting import wait_until

BURST = 50
CONCURRENCY = 5


def _learned(db: str) -> set[int]:
    rows = db_rows(db, "SELECT content FROM memories")
    return {i for i in range(BURST) if any(f"Zeta{i:02d}" in r[0] for r in rows)}


def test_sigkill_after_a_burst_loses_no_acknowledged_exchange(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    db = str(tmp_path / "burst.db")
    port = free_port()
    env = gateway_env(db, upstream.base_url, embedding_source="none")
    secret = create_key(env, "burst")

    def chat(i: int) -> int | None:
        body: dict[str, Any] = {
            "model": "m",
            "messages": [{"role": "user", "content": f"I prefer Zeta{i:02d}"}],
        }
        if i % 5 == 4:
            body["stream"] = True
        try:
            resp = httpx.post(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                headers={"authorization": f"Bearer {secret}"},
                json=body,
                timeout=60,
            )
        except httpx.HTTPError:
            return None
        return i if resp.status_code == 200 else None

    with serve(env, port, tmp_path / "serve-1.log") as first:
        try:
            with ThreadPoolExecutor(CONCURRENCY) as pool:
                acknowledged = {i for i in pool.map(chat, range(BURST)) if i is not None}
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
    assert len(acknowledged) == BURST
    before = _learned(db)

    with serve(env, port, tmp_path / "serve-2.log"):
        wait_until(
            lambda: db_rows(db, "SELECT COUNT(*) FROM job_outbox") == [(0,)],
            timeout_s=120,
            what="recovery",
        )
        wait_until(
            lambda: acknowledged <= _learned(db), timeout_s=60, what="every acknowledged exchange"
        )
    print(f"learned before the kill: {len(before)}/{BURST}; after restart: {len(_learned(db))}")
