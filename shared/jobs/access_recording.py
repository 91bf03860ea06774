"""Batching of injection bookkeeping.

The request path records which memories it injected in memory, and one ``record_access`` job per
(owner, end user) is enqueued per flush, instead of one job per request: every second while
traffic is light, every :data:`BUSY_FLUSH_INTERVAL_S` while it is heavy (docs/ARCHITECTURE.md,
"Recall engine").
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
"""How often pending injections are looked at, and flushed while traffic is light (seconds)."""
BUSY_FLUSH_INTERVAL_S = 5.0
"""The longest pending injections wait while traffic is heavy (seconds).

A flush costs per distinct memory: the counter update of its row, its change-feed row, and the
read of its new counters by every gateway's recall cache (about 25 microseconds in all on the
loaded 2-core development machine). Under load the same memories are injected again and again
within seconds, so a longer window counts them in fewer rows: measured with ``bench/gateway.py``'s
request mix (keyword recall at 10,000 memories, c=10), 5 s instead of 1 s cut the gateway's CPU
per request by about 5 %. Counters only extend retention (typed decay counts days), and the
injection statistics arrive up to this much later."""
BUSY_INJECTIONS = 1000
"""Pending injections (memory rowids, repeats included) from which traffic counts as heavy: a
flush then waits for :data:`BUSY_FLUSH_INTERVAL_S` (about 100 requests per second injecting ten
memories each)."""


def flush_due(
    pending: int, waited_s: float, busy_interval_s: float = BUSY_FLUSH_INTERVAL_S
) -> bool:
    """Whether a flush tick flushes. Pure.

    Always while fewer than :data:`BUSY_INJECTIONS` injections are pending (``pending``, repeats
    included), else once ``waited_s`` (seconds since the last flush) reaches ``busy_interval_s``.
    """
    return pending < BUSY_INJECTIONS or waited_s >= busy_interval_s


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

    def pending_injections(self) -> int:
        """Injected rowids waiting for the next flush, repeats included."""
        return sum(len(p.ids) for p in self._pending.values())

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

    async def run(
        self, interval_s: float = FLUSH_INTERVAL_S, busy_interval_s: float = BUSY_FLUSH_INTERVAL_S
    ) -> None:
        """Flush until cancelled; a final flush on the way out.

        Every ``interval_s`` seconds while fewer than :data:`BUSY_INJECTIONS` injections are
        pending, else once ``busy_interval_s`` seconds have passed since the last flush.
        """
        flushed = time.monotonic()
        try:
            while True:
                await asyncio.sleep(interval_s)
                waited = time.monotonic() - flushed
                if not flush_due(self.pending_injections(), waited, busy_interval_s):
                    continue
                flushed = time.monotonic()
                try:
                    await self.flush()
                except Exception:
                    log.exception("flushing access records failed")
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.flush())
