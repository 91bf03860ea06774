"""Shared fixtures: a fake upstream (real HTTP), a real gateway on 127.0.0.1, Redis, the store.

Nothing of the project is mocked: the gateway runs under uvicorn on a free port, the database is
a real migrated SQLite file with sqlite-vec, Redis is the real server, workers are real processes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import IO

import pytest
import redis

from tests.fakes.upstream import FakeUpstream
from tests.harness import TEST_QUEUE_NAME, GatewayHarness
from tests.waiting import READY_TIMEOUT_S, TEST_RECALL_TIMEOUT_MS

REDIS_URL = os.environ.get("MNEMOGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")


@pytest.fixture(scope="session")
def upstream_server() -> Iterator[FakeUpstream]:
    fake = FakeUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture
def upstream(upstream_server: FakeUpstream) -> Iterator[FakeUpstream]:
    upstream_server.reset()
    yield upstream_server
    upstream_server.reset()


@pytest.fixture
def gateway_factory(tmp_path, upstream) -> Iterator[object]:
    """Start gateways: ``gateway_factory(**settings_overrides) -> GatewayHarness``."""
    started: list[GatewayHarness] = []

    def make(**overrides: object) -> GatewayHarness:
        overrides.setdefault("db_path", str(tmp_path / "mnemogate.db"))
        overrides.setdefault("upstream_base_url", upstream.base_url)
        overrides.setdefault("upstream_api_key", "sk-upstream-test")
        overrides.setdefault("queue_name", TEST_QUEUE_NAME)
        # a background build per test gateway would load the machine: tests that want it ask
        overrides.setdefault("static_table_autobuild", False)
        # recall must not be cut by its 250 ms production budget on a loaded test machine;
        # tests of the budget itself set their own
        overrides.setdefault("recall_timeout_ms", TEST_RECALL_TIMEOUT_MS)
        gw = GatewayHarness(overrides).start()
        started.append(gw)
        return gw

    yield make
    for gw in started:
        gw.stop()


@pytest.fixture
def gateway(gateway_factory) -> GatewayHarness:
    """An embedded-mode gateway (no Redis) with default settings."""
    return gateway_factory()


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A real Redis database reserved for tests, flushed before and after."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        pytest.fail(f"Redis is not reachable at {REDIS_URL}: .ci/run starts one")
    client.flushdb()
    yield REDIS_URL
    client.flushdb()
    client.close()


@pytest.fixture
def worker_process(tmp_path, redis_url) -> Iterator[object]:
    """Start ``mnemogate worker`` subprocesses against the test DB and Redis."""
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[IO[bytes]] = []

    def start(db_path: str, *args: str, **env_overrides: str) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env.update(
            {
                "MNEMOGATE_DB_PATH": db_path,
                "MNEMOGATE_REDIS_URL": redis_url,
                "MNEMOGATE_QUEUE_NAME": TEST_QUEUE_NAME,
                # a worker that hangs prints its threads' stacks on SIGABRT (tests send it
                # before killing one that did not exit)
                "PYTHONFAULTHANDLER": "1",
                **{f"MNEMOGATE_{k.upper()}": v for k, v in env_overrides.items()},
            }
        )
        log = open(tmp_path / f"worker-{len(procs)}.log", "wb")  # noqa: SIM115
        logs.append(log)
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "worker", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=READY_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for log in logs:
        log.close()


def run(coro):
    """Run a coroutine to completion from synchronous test code."""
    return asyncio.run(coro)
