"""Loading an owner's index: from its stored snapshot, else from its rows in chunks.

The two load paths of :class:`shared.recall_index.cache.OwnerCache` (its module docstring says
when each runs). Builds run in worker threads, never on the event loop; snapshots are stored and
features prepared in the background through the cache's :meth:`~OwnerCache.spawn`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from shared.recall_index import snapshot
from shared.recall_index.builder import LOAD_CHUNK, SegmentBuilder, trim_heap
from shared.recall_index.owner import REBUILD_MIN, REBUILD_SHARE, OwnerIndex
from shared.recall_index.prepared import Prepared, Preparer
from shared.recall_index.preparing import drop_foreign_prepared, max_id_of, prepare_later
from shared.recall_index.segment import Memories, SegmentData, segment_from

if TYPE_CHECKING:
    from shared.recall_index.cache import OwnerCache

__all__ = ["SNAPSHOT_FEED_LAG", "SNAPSHOT_LAG", "carried", "from_rows", "from_snapshot"]

SNAPSHOT_LAG = 20_000
"""A stored snapshot more of its owner's content changes (writes, deletes) behind the applied
feed than this is ignored (rebuilt from rows). Access-counter changes do not count: every recall
logs one per recalled memory, so counting them made a busy owner's snapshot useless after ~2,000
requests, and every restart rebuilt and prepared the owner again. Other owners' changes are not
read at all (migration 0013)."""
SNAPSHOT_FEED_LAG = 200_000
"""A stored snapshot further behind the applied feed than this, counting every change, is ignored
without reading the feed (bounds the catch-up read)."""


async def from_rows(self: OwnerCache, owner_id: str, carry: OwnerIndex | None = None) -> OwnerIndex:
    """Read, analyse and index every row of the owner; store a snapshot in the background.

    The feed head is read first, then the rows in rowid order, :data:`LOAD_CHUNK` at a
    time, each chunk analysed in a worker thread while the next is read (a change committed
    meanwhile has a sequence above the head and is applied after the load); only the
    compact analysis of each chunk is kept (:class:`SegmentBuilder`). ``carry``: the index of
    the same owner this one replaces (a rebuild): its prepared features of unchanged records are
    kept, so only new and changed memories are prepared again.
    """
    cpu = 0.0
    seq = await self.source.head()
    builder = SegmentBuilder()

    def add(raw: Sequence[Any]) -> float:
        start = time.thread_time()
        builder.add(self.source.decode(raw))
        return time.thread_time() - start

    raw = await self.source.owner_rows(owner_id, 0, LOAD_CHUNK)
    while raw:
        nxt = None
        if len(raw) == LOAD_CHUNK:  # read the next chunk while this one is analysed
            after = int(raw[-1][0])
            nxt = asyncio.ensure_future(self.source.owner_rows(owner_id, after, LOAD_CHUNK))
        try:
            cpu += await asyncio.to_thread(add, raw)
        except BaseException:
            if nxt is not None:
                nxt.cancel()
            raise
        raw = await nxt if nxt is not None else []

    prepare = self.prepare

    def build() -> tuple[OwnerIndex, SegmentData, bytes, list[Prepared | None] | None]:
        start = time.thread_time()
        data = builder.finish()
        index = OwnerIndex(owner_id, segment_from(data, self.params), seq, self.params)
        index.prepare = prepare
        seed = carried(carry, data.memories, prepare)
        if seed is not None and prepare is not None:  # served at once; the rest comes later
            index.segment.prepared, index.segment.prepared_fp = seed, prepare.fingerprint
        index.build_cpu_ms = (cpu + time.thread_time() - start) * 1000
        # the cache's estimate is about twice a blob's size: skip encoding hopeless ones
        small = index.seg_bytes <= 2 * snapshot.MAX_BYTES
        blob = snapshot.encode(data) if small else b""
        trim_heap()  # the chunks' freed memory, kept mapped by the allocator otherwise
        return index, data, blob, seed

    index, data, blob, seed = await asyncio.to_thread(build)
    if 0 < len(blob) <= snapshot.MAX_BYTES:
        self.spawn(self.save(owner_id, seq, blob, max_id_of(data)))
    if prepare is not None:  # prepared (and stored again) in the background
        self.spawn(prepare_later(index, data, prepare, self.save, seed))
    return index


def carried(
    old: OwnerIndex | None, memories: Memories, prepare: Preparer | None
) -> list[Prepared | None] | None:
    """``old``'s prepared features of ``memories`` by position (None where it has none).

    Only features ``prepare`` made for the same shown record (:meth:`OwnerIndex.prepared_of`);
    None when there is no ``old`` or it holds none. CPU: decodes every record (worker thread).
    """
    if old is None or prepare is None:
        return None
    records = [memories[i] for i in range(len(memories))]
    have = old.prepared_of(records, prepare.fingerprint)
    if not have:
        return None
    return [have.get(m.id) for m in records]


async def from_snapshot(self: OwnerCache, owner_id: str) -> OwnerIndex | None:
    """The owner from its stored snapshot, or None when there is none usable.

    Unusable: another format, older than the pruned feed, more than
    :data:`SNAPSHOT_LAG` content changes (or :data:`SNAPSHOT_FEED_LAG` changes of any kind)
    behind, a catch-up that would outgrow the delta
    (:meth:`OwnerIndex.needs_rebuild`), or undecodable. Features prepared under another
    preparer than :attr:`prepare` are dropped and prepared again in the background.
    """
    stored = await self.source.load_snapshot(owner_id)
    if stored is None or stored[1] != snapshot.FORMAT:
        return None
    seq, _, blob = stored
    if self.applied - seq > SNAPSHOT_FEED_LAG or seq + 1 < await self.source.tail():
        return None

    prepare = self.prepare

    def build() -> tuple[OwnerIndex, SegmentData] | None:
        cpu = time.thread_time()
        data = snapshot.decode(blob)
        if data is None:
            return None
        drop_foreign_prepared(data, prepare)
        index = OwnerIndex(owner_id, segment_from(data, self.params), seq, self.params)
        index.prepare = prepare
        index.build_cpu_ms = (time.thread_time() - cpu) * 1000
        index.from_snapshot = True
        return index, data

    built = await asyncio.to_thread(build)
    if built is None:
        return None
    index, data = built
    caught = await self.changes_between(seq, max(seq, self.applied), owner_id)
    content = [c for c in caught if c.op != "a"]
    if len(content) > SNAPSHOT_LAG:
        return None
    churn = {c.memory_id for c in content}
    if len(churn) > max(REBUILD_MIN, REBUILD_SHARE * len(index.segment)):
        return None
    if prepare is not None and data.prepared is None:
        self.spawn(prepare_later(index, data, prepare, self.save))
    return index
