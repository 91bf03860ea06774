"""Rebuilding an owner's index in the background while the current one keeps answering.

An owner whose delta outgrew its threshold (:meth:`~shared.recall_index.owner.OwnerIndex.
needs_rebuild`: :data:`~shared.recall_index.owner.REBUILD_SHARE` of it replaced or added) used to
be dropped from the cache, so the next request loaded it cold, and every request in flight for
that owner waited for the load (hundreds of ms at 10,000 memories): with learning on, every few
hundred learned memories stalled the owner's requests past the recall budget. Now the index in
use stays in the cache, absorbing changes in its delta as before, while a new one is built from
the owner's rows (:func:`shared.recall_index.loading.from_rows`, which keeps the old index's
prepared features of unchanged memories). The new index is swapped in under the feed lock after
the changes committed since its build started are applied to it, so no change is lost and no
request waits for the build. One rebuild per owner runs at a time. docs/ARCHITECTURE.md,
"Recall engine".
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shared.recall_index.loading import from_rows
from shared.recall_index.owner import OwnerIndex

if TYPE_CHECKING:
    from shared.recall_index.cache import OwnerCache

log = logging.getLogger("mnemogate.recall_index")

__all__ = ["rebuild_later"]


def rebuild_later(cache: OwnerCache, owner_id: str, old: OwnerIndex) -> None:
    """Start rebuilding ``owner_id`` (cached as ``old``) unless a rebuild of it is running."""
    running = cache.rebuilding.get(owner_id)
    if running is not None and not running.done():
        return
    cache.rebuilding[owner_id] = cache.spawn(_rebuild(cache, owner_id, old))


async def _rebuild(cache: OwnerCache, owner_id: str, old: OwnerIndex) -> None:
    """Build ``owner_id`` from its rows, catch it up and swap it for ``old`` (never raises).

    Nothing is swapped when ``old`` is no longer the cached index (evicted, or dropped after a
    mass change) by then: that owner is loaded afresh on its next use.
    """
    try:
        new = await from_rows(cache, owner_id, carry=old)
        async with cache.lock:
            if cache.owners.get(owner_id) is not old:
                return
            caught = []
            if 0 <= new.seq < cache.applied:  # committed during the build: applied to new too
                caught = await cache.changes_between(new.seq, cache.applied, owner_id)
            new.continue_from(old)  # the vector matrix is patched, not read again
            cache.owners[owner_id] = new
            await cache.apply(caught)
            cache.loads += 1
    except Exception:  # the old index keeps answering; the next write past the bound retries
        log.warning("rebuilding the recall index of an owner failed", exc_info=True)
