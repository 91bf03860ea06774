"""Statistics over the memories a principal may see (``GET /api/memory/stats``)."""

from __future__ import annotations

from typing import Any

from shared.access_policy import Principal, readable_owners
from shared.errors import InvalidRequest
from shared.store import Store

#: Range of the ``days`` window of per-day event sums.
MAX_STATS_DAYS = 365


async def memory_stats(
    store: Store, p: Principal, owner_id: str | None, days: int, now: float
) -> dict[str, Any]:
    """Statistics over the memories ``p`` may see (a client: its own only).

    The figures are those of :meth:`shared.store.memories.admin.MemoryAdminStore.stats`, plus
    ``owner_id`` and ``days`` (1..365).

    Raises:
        InvalidRequest: ``days`` out of range. NotFound: a client naming another owner.
        StoreError: the database failed.
    """
    if not 1 <= days <= MAX_STATS_DAYS:
        raise InvalidRequest(f"days must be within 1..{MAX_STATS_DAYS}")
    requested = owner_id if p.admin else (owner_id or p.key_id)
    stats = await store.admin.stats(readable_owners(p, requested), days=days, now=now)
    return {"owner_id": requested, "days": days, **stats}
