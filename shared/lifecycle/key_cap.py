"""The per-key memory cap: learning past it evicts the least relevant memories, never fails.

A key's cap (``max_memories`` count, ``max_bytes`` bytes of content; stored with the key, see
:class:`shared.models.ApiKey`) is enforced after each learn job of that key. Eviction uses the
lifecycle capacity order (non-immune first, lowest relevance, least recently used) over all the
key's memories, and :meth:`shared.store.memories.lifecycle.LifecycleStore.evict` (FTS5, sqlite-vec,
``eviction`` events with reason ``key_capacity``); the rowids go to ``on_deleted`` (Qdrant).
See docs/ARCHITECTURE.md, "Controlling memory".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from shared.lifecycle.decay import type_ttl_s
from shared.models import MEMORY_TYPES
from shared.retrieval import retention_of
from shared.settings import Settings
from shared.store import Store

log = logging.getLogger("mnemogate.lifecycle")

#: Candidates read per round.
BATCH = 200
#: Rounds per call (bounds the work of one learn job; the next job continues).
MAX_ROUNDS = 50


def _excess(count: int, size: int, max_count: int, max_bytes: int) -> bool:
    return (max_count > 0 and count > max_count) or (max_bytes > 0 and size > max_bytes)


async def enforce_key_cap(
    store: Store,
    settings: Settings,
    owner_id: str,
    now: float,
    on_deleted: Callable[[list[int]], Awaitable[None]] | None = None,
) -> list[int]:
    """Evict a key's least relevant memories until its cap holds.

    Evict ``owner_id``'s least relevant memories until its key's cap holds; returns the rowids
    evicted (``[]`` for no key, no cap, or under the cap).

    Raises:
        StoreError: the database failed (the learn job is retried; what it learned stays).
    """
    key = await store.keys.get(owner_id)
    max_count = (key.max_memories or 0) if key else 0
    max_bytes = (key.max_bytes or 0) if key else 0
    if max_count <= 0 and max_bytes <= 0:
        return []
    retention = retention_of(settings)
    immune = [t for t in MEMORY_TYPES if type_ttl_s(t, retention) is None]
    evicted: list[int] = []
    count, size = await store.key_cap.totals(owner_id)
    for _round in range(MAX_ROUNDS):
        if not _excess(count, size, max_count, max_bytes):
            break
        rows = await store.key_cap.candidates(
            owner_id,
            immune_types=immune,
            access_immunity=retention.access_immunity,
            limit=BATCH,
        )
        chosen = []
        for row, nbytes in rows:
            if not _excess(count, size, max_count, max_bytes):
                break
            chosen.append(row)
            count, size = count - 1, size - nbytes
        if not chosen:
            break
        gone = await store.lifecycle.evict([(r, "key_capacity") for r in chosen], now)
        evicted.extend(gone)
        if gone and on_deleted is not None:
            try:
                await on_deleted(gone)
            except Exception:  # recall re-checks vector hits against SQLite; the hook retries
                log.exception("vector delete after key-cap eviction failed")
        count, size = await store.key_cap.totals(owner_id)
    return evicted
