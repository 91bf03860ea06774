"""Embedded mode loses no acknowledged learning: a real ``mnemogate serve`` process gets a burst
of learning requests (5 at a time), is SIGKILLed as soon as the last response arrived, and is
restarted; every exchange the client saw answered is learned (the in-process job is recorded
durably before the response completes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import sqlean

from tests.fakes.upstream import FakeUpstream, free_port

BURST = 50
CONCURRENCY = 5


def _sql(db: str, query: str) -> list[tuple[Any, ...]]:
    conn = sqlean.connect(db)
    try:
        return [tuple(r) for r in conn.execute(query).fetchall()]
    finally:
        conn.close()


def _wait(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _learned(db: str) -> set[int]:
    rows = _sql(db, "SELECT content FROM memories")
    return {i for i in range(BURST) if any(f"Zeta{i:02d}" in r[0] for r in rows)}


def test_sigkill_after_a_burst_loses_no_acknowledged_exchange(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    db = str(tmp_path / "burst.db")
    port = free_port()
    env = dict(os.environ)
    env.update(
        {
            "MNEMOGATE_DB_PATH": db,
            "MNEMOGATE_UPSTREAM_BASE_URL": upstream.base_url,
            "MNEMOGATE_UPSTREAM_API_KEY": "sk-upstream-test",
            "MNEMOGATE_EMBEDDING_SOURCE": "none",
            "MNEMOGATE_LIFECYCLE_SCHEDULE": "false",
        }
    )
    env.pop("MNEMOGATE_REDIS_URL", None)
    cli = [sys.executable, "-m", "services.cli"]
    made = subprocess.run(
        [*cli, "keys", "create", "--name", "burst"], env=env, capture_output=True, check=True
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

        _wait(up, 60, "the gateway")
        return proc

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

    first = serve("serve-1.log")
    try:
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            acknowledged = {i for i in pool.map(chat, range(BURST)) if i is not None}
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    assert len(acknowledged) == BURST
    before = _learned(db)

    second = serve("serve-2.log")
    try:
        _wait(lambda: _sql(db, "SELECT COUNT(*) FROM job_outbox") == [(0,)], 120, "recovery")
        _wait(lambda: acknowledged <= _learned(db), 60, "every acknowledged exchange")
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    print(f"learned before the kill: {len(before)}/{BURST}; after restart: {len(_learned(db))}")
