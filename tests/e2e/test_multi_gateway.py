"""Two gateway processes and one worker on one database: each gateway's recall cache follows the
store's change feed.

"At once", precisely: a recall that STARTS after a write committed (in any process) reflects it.
Before answering, a gateway compares SQLite's wal-index header with the one of its last feed
read and, when it moved, probes the feed (docs/ARCHITECTURE.md, "Recall engine"). So, with no
wait in between:

* a memory the worker learned from gateway A's traffic is injected by gateway B on the first
  request B starts after the memory was committed (B's cache for that owner is warm: the change
  arrives through the feed, not through a cold load);
* after ``DELETE /api/memory/{id}`` through A returned, neither A nor B injects the memory again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shared.store import Store
from tests.conftest import run
from tests.fakes.upstream import FakeUpstream, free_port
from tests.harness import TEST_QUEUE_NAME
from tests.waiting import READY_TIMEOUT_S, TEST_RECALL_TIMEOUT_MS, wait_until

#: The largest window the settings allow: requests below start inside it, so only the change hint
#: and the feed probe (not the window running out) can make a gateway see another's write.
FRESHNESS_MS = 1000
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
            # a loaded CI machine must not time recall out
            "MNEMOGATE_RECALL_TIMEOUT_MS": str(TEST_RECALL_TIMEOUT_MS),
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
                proc.wait(timeout=READY_TIMEOUT_S)
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


def _wait_ready(url: str) -> None:
    def up() -> bool:
        try:
            return httpx.get(url + "/healthz", timeout=READY_TIMEOUT_S).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(up, what=f"gateway {url} answering /healthz")


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
        timeout=READY_TIMEOUT_S,
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
    wait_until(lambda: run(_teal_memories(db, owner)), what="the worker's memory")
    assert _injects_teal(b, secret, upstream), "B's next recall did not see the worker's write"
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
    for _ in range(3):  # and the other one too, from its next request on
        assert not _injects_teal(b, secret, upstream)
