"""The per-process keyword recall cache: owner indexes kept fresh from the change feed.

* Cold owner: its stored snapshot (:mod:`shared.recall_index.snapshot`: analysed rows and the feed
  sequence they reflect) is decoded and indexed in a worker thread, then the feed after that
  sequence is applied; without a usable snapshot the feed head is read, then its rows in rowid
  chunks, each analysed in a worker thread while the next is read
  (:class:`shared.recall_index.builder.SegmentBuilder`), the feed after that head is applied, and a
  new snapshot is stored in the background. Memories' request-path features come with the
  snapshot, else are prepared in the background (:mod:`shared.recall_index.preparing`). The event
  loop never runs a build; concurrent requests for the same owner share one load.
* Freshness: every recall reflects every write committed (by any process) before it started.
  :meth:`OwnerCache.fresh` answers from the cache at once only while the source's change hint
  (SQLite: the wal-index header, which every commit of every process rewrites) equals the one
  taken when the last completed feed read started, and that read started less than
  ``freshness_s`` (default 0.2 s) ago; otherwise a synchronous probe of the source
  (:meth:`RecallSource.has_changes_after`) decides whether the feed must be read first. A
  background watcher reads the feed (one ``since`` query; the new changes grouped per cached
  owner: current rows re-read and re-indexed, deleted ones tombstoned) within :data:`WATCH_S`
  of the hint moving and every ``freshness_s / 2``, so requests rarely wait for a read.
  A write committed by this process (any path through
  ``shared.store.connection.transaction`` on the store's writer) marks the cache stale, so
  this process's next recall reads the feed first.
* Bounds: the indexes' estimated bytes stay under ``budget_bytes``; the least recently used
  owners are evicted first. The owner being loaded, the global partition and the two most
  recently used owners are never evicted, so an owner larger than the whole budget is still
  loaded and answered (with the global partition): it evicts every other owner, and is evicted
  by the next loads of other owners.
* An owner whose delta outgrew its segment is rebuilt in the background while its index keeps
  answering (:mod:`shared.recall_index.rebuild`); after a mass change (a quarter of it at once),
  or when the cache fell behind a pruned feed, it is dropped and reloaded on its next use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, defaultdict
from collections.abc import Coroutine
from typing import Any

from shared.models import GLOBAL_OWNER
from shared.recall_index import snapshot
from shared.recall_index.feed import RecallSource
from shared.recall_index.loading import from_rows, from_snapshot
from shared.recall_index.owner import OwnerIndex
from shared.recall_index.prepared import Preparer
from shared.recall_index.preparing import PREPARE_INLINE
from shared.recall_index.rebuild import rebuild_later
from shared.recall_index.segment import Bm25Params
from shared.store.recall_rows import Change

log = logging.getLogger("mnemogate.recall_index")

__all__ = ["FEED_BATCH", "OwnerCache"]

FEED_BATCH = 2000
"""Changes read per feed query."""
WATCH_S = 0.01
"""How often the background watcher looks at the change hint (seconds; a ``stat``)."""
PRUNE_EVERY_S = 600.0
"""How often a process prunes the feed (any process may; pruning is idempotent)."""
PRUNE_AGE_S = 3600.0
"""Changes older than this are pruned (a process idle for longer rebuilds its cache)."""
PRUNE_KEEP = 10_000
"""The newest changes are always kept."""
ACCESS_LAG_S = 1.0
"""How late access counters may be seen: the change probe answers (skipping them) while the
last feed read started less than this ago. Under load a feed read takes several rounds of the
requests in flight; with the freshness window alone (0.2 s) every request then waited for one
(0.3-0.6 s at 50 in flight). Counters only extend retention, and the watcher reads them within
:data:`WATCH_S` of their commit on a quiet loop."""
TOUCH_INLINE = 256
"""Access-counter changes a feed read applies itself; more go to the background catch-up."""
TOUCH_SLICE = 500
"""Memories whose counters one catch-up step reads and applies (one query, ~2-3 ms of the loop)."""


class OwnerCache:
    """Owner indexes (LRU, bounded in bytes) fed by a :class:`RecallSource`."""

    def __init__(
        self,
        source: RecallSource,
        params: Bm25Params,
        *,
        budget_bytes: int,
        freshness_s: float = 0.2,
        prepare: Preparer | None = None,
    ) -> None:
        self.source = source
        self.params = params
        #: Prepares each indexed memory's block line and echo features (None: not prepared;
        #: the request path then renders on the fly).
        self.prepare = prepare
        self.budget_bytes = budget_bytes
        self.freshness_s = freshness_s
        self.owners: OrderedDict[str, OwnerIndex] = OrderedDict()
        self.applied = -1  # feed sequence applied to every cached owner; -1 = not started
        self.polled_at = -1e9
        self.stale = True
        self._hint: object = None
        self.loads = 0
        self.lock = asyncio.Lock()  # held by feed reads, loads' catch-ups and rebuild swaps
        self.rebuilding: dict[str, asyncio.Task[object]] = {}  # owner -> background rebuild
        self._loading: dict[str, asyncio.Task[OwnerIndex]] = {}
        self._pruned_at = time.monotonic()
        self._tasks: set[asyncio.Task[object]] = set()
        self._watcher: asyncio.Future[None] | None = None
        #: Memories with access-counter changes not applied yet, per cached owner.
        self._touch: defaultdict[str, set[int]] = defaultdict(set)
        self._toucher: asyncio.Task[object] | None = None

    @property
    def nbytes(self) -> int:
        """Estimated bytes of every cached owner index."""
        return sum(o.nbytes() for o in self.owners.values())

    def mark_stale(self) -> None:
        """Force a feed read before the next answer (this process committed a write)."""
        self.stale = True

    async def fresh(self) -> None:
        """Make the cache reflect every write committed before this call.

        Make the cache reflect every write committed (by any process) before this call: answer
        from the cache at once when the source's change hint is what it was when the last
        completed feed read started (nothing was committed since) and that read started less
        than ``freshness_s`` ago; else when a synchronous probe finds no change after what is
        applied (access counters aside: they may lag by :data:`ACCESS_LAG_S`) and the last read
        started less than that ago; else read the feed now. A write of this process marks the
        cache stale, which forces the read. A background watcher reads the feed within
        :data:`WATCH_S` of the hint moving, so requests rarely wait for a read; the access
        counters a read brings are applied by it when few, else in background slices.

        Raises:
            StoreError: the feed could not be read.
        """
        if self.fresh_now():
            return
        requested = time.monotonic()
        if not self.stale and self.applied >= 0:
            hint = self.source.change_hint()
            # A read in progress has not advanced ``applied`` past what it is applying, so
            # "nothing after applied" means the cache is as fresh as a read started now, but for
            # access counters, which the probe ignores: they may lag by ACCESS_LAG_S only, so the
            # probe answers only while the last read is that recent (the watcher keeps it so).
            fresh_enough = requested - self.polled_at < ACCESS_LAG_S  # >= any freshness_s
            if fresh_enough and self.source.has_changes_after(self.applied) is False:
                self._hint = hint  # taken before the probe: a later commit moves it again
                return
        await self._read_feed(requested)

    def fresh_now(self) -> bool:
        """Whether :meth:`fresh` may return at once: no I/O but one change-hint read.

        True when this process wrote nothing since, the change hint is what it was when the last
        completed feed read started, and that read started less than ``freshness_s`` ago. Also
        starts the background watcher when it is not running (it needs a running event loop).
        """
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.ensure_future(self._watch())
        if self.stale or self.applied < 0:
            return False
        age = time.monotonic() - self.polled_at
        return age < self.freshness_s and self.source.change_hint() == self._hint

    async def _read_feed(self, requested: float | None) -> None:
        """Read the feed, unless a read that started at or after ``requested`` completed."""
        async with self.lock:
            if requested is not None and not self.stale and self.polled_at >= requested:
                return  # another task's read started after this request: it saw every commit
            started = time.monotonic()
            self.stale = False
            hint = self.source.change_hint()  # before the read: later commits change it
            try:
                await self._poll()
            except BaseException:
                self.stale = True
                raise
            self.polled_at = started
            self._hint = hint
        if started - self._pruned_at > PRUNE_EVERY_S:
            self._pruned_at = started
            self.spawn(self._prune())

    async def _watch(self) -> None:
        """Read the feed whenever the change hint moves.

        Read the feed whenever the change hint moves (checked every :data:`WATCH_S`) or half
        the freshness window passed, so requests rarely wait for a feed read.
        """
        while True:
            await asyncio.sleep(WATCH_S)
            moved = self.source.change_hint() != self._hint
            old = time.monotonic() - self.polled_at >= self.freshness_s / 2
            if (moved or old) and not self.lock.locked():
                try:
                    await self._read_feed(None)
                except Exception as exc:  # e.g. the store closed: stop; a request restarts it
                    log.info("change-feed watcher stopped: %s", exc)
                    return

    async def _poll(self) -> None:
        """Apply the feed's new changes; one query (``since``) when nothing changed.

        The head is read only on the first poll and after falling behind a pruned feed: a
        steady-state poll is one round trip to the store, so a request that must wait for
        freshness waits for one query, not two.
        """
        if self.applied < 0:
            self.applied = await self.source.head()
            return
        while True:
            changes = await self.source.since(self.applied, FEED_BATCH)
            if not changes:
                break
            if changes[0].seq > self.applied + 1 and await self.source.tail() > self.applied + 1:
                log.info("recall cache fell behind the pruned change feed; dropping it")
                self.owners.clear()
                self.applied = await self.source.head()
                return
            await self.apply(changes)
            self.applied = changes[-1].seq
            if len(changes) < FEED_BATCH:
                break

    async def apply(self, changes: list[Change]) -> None:
        """Apply feed changes to the cached owners (call under :attr:`lock`)."""
        written: dict[str, set[int]] = defaultdict(set)
        touched: dict[str, set[int]] = defaultdict(set)
        for c in changes:
            if c.owner_id in self.owners:
                (touched if c.op == "a" else written)[c.owner_id].add(c.memory_id)
        for owner_id, ids in written.items():
            index = self.owners[owner_id]
            if len(ids) > max(256, len(index.segment) // 4):
                del self.owners[owner_id]  # a mass change (e.g. relevance decay): reload
                continue
            rows = await self.source.rows(sorted(ids))
            index.note_written(ids)
            inline = len(ids) <= PREPARE_INLINE  # the event loop prepares a few memories only
            for memory_id in ids:
                row = rows.get(memory_id)
                if row is None or row.memory.owner_id != owner_id:
                    index.remove(memory_id)
                else:
                    index.upsert(row.memory, row.search_text, row.context, prepare=inline)
            if index.needs_rebuild():  # built again in the background; this one answers
                rebuild_later(self, owner_id, index)
        for owner_id, ids in touched.items():
            self._touch[owner_id] |= ids
        await self._apply_touches()

    async def _apply_touches(self) -> None:
        """Apply pending access counters: a few at once, many in background slices.

        Counters need not be seen at once (:meth:`fresh`), and after a flush of the access
        batcher a feed read brings thousands: applying them inside the read made every request
        waiting for it wait 0.1-0.3 s under load, and held the event loop for tens of ms. Called
        under the feed lock; one catch-up runs at a time and nothing is applied inline while it
        runs, so counters (read current from the store) never go back.
        """
        if not self._touch or (self._toucher is not None and not self._toucher.done()):
            return
        if sum(len(ids) for ids in self._touch.values()) <= TOUCH_INLINE:
            await self._drain_touches()
        else:
            self._toucher = self.spawn(self._touch_later())

    async def _touch_slice(self, owner_id: str, ids: list[int]) -> None:
        """Read ``ids``' current counters and apply them to the owner's index (if still held)."""
        held = self.owners.get(owner_id)
        if held is None:
            return
        counters = await self.source.access(ids)
        if self.owners.get(owner_id) is held:  # not reloaded meanwhile (it has newer counters)
            for memory_id, (count, at) in counters.items():
                held.touch(memory_id, count, at)

    async def _drain_touches(self) -> None:
        """Apply the pending counters in :data:`TOUCH_SLICE` steps (one query each; StoreError)."""
        while self._touch:
            owner_id = next(iter(self._touch))
            ids = sorted(self._touch.pop(owner_id))
            for start in range(0, len(ids), TOUCH_SLICE):
                await self._touch_slice(owner_id, ids[start : start + TOUCH_SLICE])

    async def _touch_later(self) -> None:
        """:meth:`_drain_touches` in the background (a failure is logged, not raised)."""
        try:
            await self._drain_touches()
        except Exception:  # counters only: the next access change of a memory brings it again
            log.warning("applying access counters failed", exc_info=True)

    async def owner(self, owner_id: str) -> OwnerIndex:
        """The index of ``owner_id`` (loaded when cold). Call :meth:`fresh` first.

        Raises:
            StoreError: the owner could not be loaded.
        """
        cached = self.owners.get(owner_id)
        if cached is not None:
            self.owners.move_to_end(owner_id)
            return cached
        task = self._loading.get(owner_id)
        if task is None:
            task = asyncio.create_task(self._load(owner_id))
            self._loading[owner_id] = task
            task.add_done_callback(lambda _t: self._loading.pop(owner_id, None))
        return await asyncio.shield(task)

    async def _load(self, owner_id: str) -> OwnerIndex:
        index = await from_snapshot(self, owner_id)
        if index is None:
            index = await from_rows(self, owner_id)
        async with self.lock:
            if 0 <= index.seq < self.applied:  # changes between the snapshot and what was applied
                caught = await self.changes_between(index.seq, self.applied, owner_id)
                self.owners[owner_id] = index
                await self.apply(caught)
            else:
                self.owners[owner_id] = index
            self.loads += 1
            self._evict(keep=owner_id)
        return self.owners.get(owner_id, index)

    async def save(self, owner_id: str, seq: int, blob: bytes, max_id: int | None = None) -> None:
        """Store an owner's snapshot blob taken at feed sequence ``seq``; never raises."""
        try:
            await self.source.save_snapshot(owner_id, seq, snapshot.FORMAT, blob, max_id)
        except Exception:  # a cache: the next cold load builds from rows again
            log.warning("storing a recall snapshot failed", exc_info=True)

    async def changes_between(self, after: int, upto: int, owner_id: str) -> list[Change]:
        """``owner_id``'s changes with ``after < seq <= upto``, oldest first (StoreError)."""
        out: list[Change] = []
        while after < upto:
            batch = await self.source.since(after, FEED_BATCH, owner_id)
            batch = [c for c in batch if c.seq <= upto]
            if not batch:
                break
            out.extend(batch)
            after = batch[-1].seq
        return out

    def _evict(self, keep: str) -> None:
        """Evict least recently used owners until under budget.

        Never evicted: ``keep``, the global partition and the two most recently used owners. A
        request searches its owner and the global partition: evicting one of them to make room
        for the other, when an owner is above the budget, would reload one on every request.
        """
        total = self.nbytes
        order = list(self.owners)
        protected = {keep, GLOBAL_OWNER, *order[-2:]}
        for owner_id in order:
            if total <= self.budget_bytes:
                break
            if owner_id not in protected:
                total -= self.owners.pop(owner_id).nbytes()

    def forget(self, memory_ids: list[int]) -> None:
        """Drop memories from every cached owner at once (no feed read needed)."""
        for index in self.owners.values():
            for memory_id in memory_ids:
                index.remove(memory_id)

    def spawn(self, coro: Coroutine[Any, Any, object]) -> asyncio.Task[object]:
        """Run ``coro`` in the background (awaited by :meth:`settle`, cancelled by close)."""
        task: asyncio.Task[object] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _prune(self) -> None:
        try:
            await self.source.prune(time.time() - PRUNE_AGE_S, PRUNE_KEEP)
        except Exception:  # pruning is housekeeping: the next period retries
            log.warning("pruning the change feed failed", exc_info=True)

    async def settle(self) -> None:
        """Wait for the background work started so far (snapshot writes, feed pruning)."""
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        """Cancel background work and close the source."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(BaseException):
                await self._watcher
        for task in list(self._tasks) + list(self._loading.values()):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        await self.source.close()
