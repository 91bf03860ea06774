"""Two gateway processes and one worker on one database: each gateway's recall cache follows the
store's change feed.

"At once", precisely: with ``recall_freshness_ms`` = F, a recall that STARTS at least F after a
write committed (in any process) reflects it: the gateway reads the feed before answering
whenever its last read started more than F ago. In the process that committed the write, every
recall that starts after the commit reflects it (the commit marks its cache stale). So:

* a memory the worker learned from gateway A's traffic is injected by gateway B on the first
  request B starts F after the memory was committed (B's cache for that owner is warm: the
  change arrives through the feed, not through a cold load), which is well within one second;
* after ``DELETE /api/memory/{id}`` through A returned, A never injects the memory again, and B
  never does for any request started F later.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shared.store import Store
from tests.conftest import run
from tests.fakes.upstream import FakeUpstream, free_port
from tests.harness import TEST_QUEUE_NAME

FRESHNESS_MS = 200
TEACH = "My favourite colour is teal"
ASK = "What is my favourite colour?"


@pytest.fixture
def gateways(tmp_path: Path, redis_url: str, upstream: FakeUpstream) -> Iterator[list[str]]:
    db = str(tmp_path / "shared.db")
    run(_migrate(db))
    env = dict(os.environ)
    env.update(
        {
            "MNEMOGATE_DB_PATH": db,
            "MNEMOGATE_REDIS_URL": redis_url,
            "MNEMOGATE_QUEUE_NAME": TEST_QUEUE_NAME,
            "MNEMOGATE_UPSTREAM_BASE_URL": upstream.base_url,
            "MNEMOGATE_UPSTREAM_API_KEY": "sk-upstream-test",
            "MNEMOGATE_EMBEDDING_SOURCE": "none",
            "MNEMOGATE_RECALL_FRESHNESS_MS": str(FRESHNESS_MS),
            "MNEMOGATE_RECALL_TIMEOUT_MS": "5000",  # a loaded CI machine must not time recall out
        }
    )
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        worker = [sys.executable, "-m", "services.cli", "worker"]
        procs.append(_spawn(worker, env, tmp_path / "worker.log"))
        for name in ("a", "b"):
            port = free_port()
            cmd = [sys.executable, "-m", "services.cli", "serve", "--port", str(port)]
            procs.append(_spawn(cmd, env, tmp_path / f"gateway-{name}.log"))
            urls.append(f"http://127.0.0.1:{port}")
        for url in urls:
            _wait_ready(url)
        yield [db, *urls]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _spawn(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),
    )


def _wait_ready(url: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not start")


async def _migrate(db: str) -> None:
    store = await Store.open(db)
    await store.close()


async def _key(db: str) -> tuple[str, str]:
    store = await Store.open(db)
    try:
        key, secret = await store.keys.create("multi")
        return key.id, secret
    finally:
        await store.close()


async def _teal_memories(db: str, owner_id: str) -> list[str]:
    store = await Store.open(db)
    try:
        items, _ = await store.memories.list(owner_id=owner_id, limit=1000)
        return [m.public_id for m in items if "teal" in m.content]
    finally:
        await store.close()


def _chat(url: str, secret: str, text: str, *, learn: bool) -> httpx.Response:
    headers = {"authorization": f"Bearer {secret}"}
    if not learn:
        headers["x-mnemogate-no-learn"] = "true"
    resp = httpx.post(
        url + "/v1/chat/completions",
        headers=headers,
        json={"model": "fake-model", "messages": [{"role": "user", "content": text}]},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    return resp


def _injects_teal(url: str, secret: str, upstream: FakeUpstream) -> bool:
    upstream.requests.clear()
    resp = _chat(url, secret, ASK, learn=False)
    sent = str(upstream.requests[-1]["messages"])
    if "teal" in sent:
        assert int(resp.headers["x-mnemogate-memory-injected"]) > 0
    return "teal" in sent


def test_learned_on_one_gateway_recalled_and_deleted_on_another(
    gateways: list[str], upstream: FakeUpstream
) -> None:
    db, a, b = gateways
    owner, secret = run(_key(db))
    assert not _injects_teal(b, secret, upstream)  # B's cache now holds this owner (warm)

    _chat(a, secret, TEACH, learn=True)  # the worker learns it and writes the store
    deadline = time.monotonic() + 30
    while not run(_teal_memories(db, owner)):
        assert time.monotonic() < deadline, "the worker never wrote the memory"
        time.sleep(0.02)
    time.sleep(FRESHNESS_MS / 1000)  # the freshness window, the only wait allowed
    assert _injects_teal(b, secret, upstream), "B did not see the worker's write within F"
    assert _injects_teal(a, secret, upstream)

    while remaining := run(_teal_memories(db, owner)):  # re-listed: nothing may be left
        for public_id in remaining:
            resp = httpx.delete(
                f"{a}/api/memory/{public_id}",
                headers={"authorization": f"Bearer {secret}"},
                timeout=30,
            )
            assert resp.status_code in (200, 204), resp.text
    assert not _injects_teal(a, secret, upstream)  # the deleting gateway: at once
    time.sleep(FRESHNESS_MS / 1000)
    for _ in range(3):  # and the other one for every request started F later
        assert not _injects_teal(b, secret, upstream)
