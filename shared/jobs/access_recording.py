"""Batching of injection bookkeeping.

The request path records which memories it injected in memory, and one ``record_access`` job per
(owner, end user) is enqueued per flush interval, instead of one job per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from shared.jobs.payloads import RECORD_ACCESS, RecordAccessPayload
from shared.jobs.queue import JobQueue

log = logging.getLogger("mnemogate.jobs")

FLUSH_INTERVAL_S = 1.0


class _Pending:
    """Injections of one (owner, end user) since the last flush."""

    __slots__ = ("ids", "requests", "tokens")

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.requests = 0
        self.tokens = 0


class AccessBatcher:
    """Collects injected memory rowids per (owner, end user); :meth:`flush` enqueues them.

    ``add`` is synchronous and O(ids); nothing here touches the store on the request path.
    """

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self._pending: dict[tuple[str, str], _Pending] = {}

    def add(self, owner_id: str, user_id: str, memory_ids: list[int], tokens: int = 0) -> None:
        """Remember one request that injected ``memory_ids`` for ``owner_id``/``user_id``.

        ``tokens``: the estimated tokens that request injected.
        """
        if memory_ids:
            pending = self._pending.setdefault((owner_id, user_id), _Pending())
            pending.ids.extend(memory_ids)
            pending.requests += 1
            pending.tokens += max(0, tokens)

    async def flush(self, now: float | None = None) -> int:
        """Enqueue one ``record_access`` job per (owner, user) pending; returns how many."""
        pending, self._pending = self._pending, {}
        at = time.time() if now is None else now
        for (owner_id, user_id), item in pending.items():
            await self.queue.enqueue(
                RECORD_ACCESS,
                RecordAccessPayload(
                    memory_ids=item.ids,
                    at=at,
                    owner_id=owner_id,
                    user_id=user_id,
                    requests=item.requests,
                    tokens=item.tokens,
                ),
            )
        return len(pending)

    async def run(self, interval_s: float = FLUSH_INTERVAL_S) -> None:
        """Flush every ``interval_s`` seconds until cancelled; a final flush on the way out."""
        try:
            while True:
                await asyncio.sleep(interval_s)
                try:
                    await self.flush()
                except Exception:
                    log.exception("flushing access records failed")
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.flush())
