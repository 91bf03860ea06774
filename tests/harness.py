"""Test harness: a real gateway (uvicorn on 127.0.0.1) in a background thread, plus direct
store access for assertions. Used by tests and never by the product."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from services.gateway.app import create_app
from services.gateway.http_protocol import GatewayHttpProtocol
from shared.models import Memory
from shared.settings import Settings, load_settings
from shared.store import Store
from tests.fakes.server import ThreadedUvicorn
from tests.fakes.upstream import free_port
from tests.waiting import READY_TIMEOUT_S, wait_until

T = TypeVar("T")

#: arq queue of this test run: concurrent runs on one Redis never take each other's jobs.
TEST_QUEUE_NAME = f"mnemogate-test:{os.getpid()}"


def run_sync(coro: Awaitable[T]) -> T:
    """Run ``coro`` in a fresh event loop (synchronous tests)."""
    return asyncio.run(coro)  # type: ignore[arg-type]


def enqueue_to_redis(db_path: str, redis_url: str, job_name: str, payload: Any) -> str:
    """Enqueue one job on this run's arq queue as a gateway does; returns its job id."""
    from services.gateway.app import arq_pool
    from shared.jobs.queue import ArqQueue

    async def enqueue() -> str:
        store = await Store.open(db_path)
        queue = ArqQueue(arq_pool(redis_url, TEST_QUEUE_NAME), store.outbox)
        try:
            return await queue.enqueue(job_name, payload)
        finally:
            await queue.close()
            await store.close()

    return asyncio.run(enqueue())


class GatewayHarness:
    """A gateway built by ``create_app(settings)`` served by uvicorn in a thread."""

    def __init__(self, overrides: dict[str, Any]) -> None:
        self.port = free_port()
        self.settings: Settings = load_settings({}, **overrides)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.app = create_app(self.settings)
        self._server: ThreadedUvicorn | None = None

    def start(self) -> GatewayHarness:
        """Serve the app and return once it answers and its embedding model has loaded
        (polled up to :data:`~tests.waiting.READY_TIMEOUT_S`; never a fixed sleep)."""
        self._server = ThreadedUvicorn(self.app, self.port, lifespan="on", http=GatewayHttpProtocol)
        self._server.start()
        wait_until(self._warmed_up, what=f"gateway on port {self.port} warmed up")
        return self

    def _warmed_up(self) -> bool:
        try:
            resp = httpx.get(self.base_url + "/readyz", timeout=READY_TIMEOUT_S)
        except httpx.TransportError:
            return False
        checks: dict[str, str] = resp.json()["checks"]
        return checks.get("embedding") != "warming_up"

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    # ---- store access (own connection, own loop) ---------------------------------------------
    def with_store(self, fn: Callable[[Store], Awaitable[T]]) -> T:
        async def go() -> T:
            store = await Store.open(self.settings.db_path)
            try:
                return await fn(store)
            finally:
                await store.close()

        return run_sync(go())

    def create_key(self, name: str = "test") -> tuple[str, str]:
        """Create a client key; returns (key id, secret)."""

        async def go(store: Store) -> tuple[str, str]:
            key, secret = await store.keys.create(name)
            return key.id, secret

        return self.with_store(go)

    def memories(self, owner_id: str | None = None) -> list[Memory]:
        async def go(store: Store) -> list[Memory]:
            items, _ = await store.memories.list(owner_id=owner_id, limit=1000)
            return items

        return self.with_store(go)

    def wait_for_memories(
        self,
        predicate: Callable[[list[Memory]], bool],
        owner_id: str | None = None,
        timeout_s: float = READY_TIMEOUT_S,
    ) -> list[Memory]:
        """Poll the store until ``predicate(memories)`` holds; raises AssertionError on timeout."""
        seen: list[Memory] = []

        def probe() -> tuple[list[Memory]] | None:
            seen[:] = self.memories(owner_id)
            # a tuple, so that an empty list satisfying the predicate still counts as reached
            return (list(seen),) if predicate(seen) else None

        try:
            return wait_until(probe, timeout_s=timeout_s, what="memories condition")[0]
        except AssertionError as exc:
            raise AssertionError(f"{exc}; memories: {[m.content for m in seen]}") from None
