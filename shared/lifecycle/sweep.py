"""The lifecycle sweep: delete expired and decayed memories, then enforce per-owner capacity.

Run by the ``sweep`` job (hourly arq cron in the worker) and by ``mnemogate sweep [--dry-run]``.

Bounded work and memory:

- The typed-decay pass scans ``memories`` in rowid order in batches of ``sweep_batch_size`` rows
  (keyset paging), at most ``sweep_max_scan`` rows per run. It starts at the persisted cursor
  (``lifecycle_state.sweep_cursor``), wraps once to the start of the table, and stops when it
  comes back to where it began (a full pass) or the scan cap is reached. Each batch's deletions,
  their ``eviction`` events and the new cursor commit in one transaction, so a crash or restart
  resumes where the last committed batch ended and never re-applies or skips work.
- Only one batch of rows is held at a time; evicted items are streamed to an optional
  ``listener`` rather than collected.

Capacity (``max_memories_per_owner`` > 0): each bucket of one owner and one end user
(``user_id``; ``''`` is the owner-wide bucket) keeps at most that many memories. Over it, the
excess is evicted in :func:`shared.lifecycle.decay.capacity_order`: non-immune first, lowest
relevance, least recently used; immune memories (immune type or access-immune) go only when
nothing else is left.

Deletion by any path leaves no FTS5 row (trigger) and no ``vec_memories`` row (see
:meth:`shared.store.memories.lifecycle.LifecycleStore.evict`); ``on_deleted(rowids)`` is awaited
after each committed batch so the Qdrant tier can delete its points too.

Dry run: nothing is deleted, no event is recorded and the cursor does not move; the listener
receives every memory that would go.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

import msgspec

from shared.errors import ConfigurationError
from shared.lifecycle.decay import (
    EvictionReason,
    LifecycleRow,
    eviction_reason,
    type_ttl_s,
)
from shared.models import MEMORY_TYPES
from shared.retrieval import retention_of
from shared.settings import Settings
from shared.store import Store
from shared.store.memories.lifecycle import SWEEP_CURSOR, LifecycleStore

log = logging.getLogger("mnemogate.lifecycle")

OnDeleted = Callable[[list[int]], Awaitable[None]]
"""Hook awaited with the rowids deleted by one committed batch (e.g. Qdrant point deletion)."""
Listener = Callable[[LifecycleRow, EvictionReason], None]
"""Called for every memory deleted (or, in a dry run, that would be deleted)."""


class SweepReport(msgspec.Struct, kw_only=True):
    """Outcome of one sweep run. Counts are memories; times are seconds.

    ``by_reason`` maps ``expired`` / ``decayed`` / ``capacity`` to counts. ``cursor_start`` and
    ``cursor_end`` are rowids (0 = start of the table); ``full_pass`` is True when the run
    covered every row. ``hook_failures`` counts batches whose ``on_deleted`` hook raised.
    """

    dry_run: bool
    scanned: int = 0
    deleted: int = 0
    by_reason: dict[str, int] = msgspec.field(default_factory=dict)
    cursor_start: int = 0
    cursor_end: int = 0
    full_pass: bool = False
    hook_failures: int = 0
    duration_s: float = 0.0


async def _after_delete(
    report: SweepReport,
    items: Sequence[tuple[LifecycleRow, EvictionReason]],
    deleted: Sequence[int],
    on_deleted: OnDeleted | None,
    listener: Listener | None,
) -> None:
    gone = set(deleted)
    for row, reason in items:
        if row.id in gone:
            report.by_reason[reason] = report.by_reason.get(reason, 0) + 1
            if listener is not None:
                listener(row, reason)
    report.deleted += len(gone)
    if on_deleted is not None and deleted:
        try:
            await on_deleted(list(deleted))
        except Exception:
            # The SQLite rows are gone either way, and recall re-checks every vector hit
            # against SQLite, so an orphaned point is invisible; the hook owns its retries.
            report.hook_failures += 1
            log.exception("on_deleted hook failed for %d memories", len(deleted))


def _validate(settings: Settings) -> tuple[int, int]:
    if settings.sweep_batch_size < 1:
        raise ConfigurationError("sweep_batch_size must be >= 1")
    if settings.sweep_max_scan < 1:
        raise ConfigurationError("sweep_max_scan must be >= 1")
    return settings.sweep_batch_size, settings.sweep_max_scan


async def sweep(
    store: Store,
    settings: Settings,
    now: float,
    *,
    dry_run: bool = False,
    on_deleted: OnDeleted | None = None,
    listener: Listener | None = None,
) -> SweepReport:
    """One sweep run at ``now`` (unix seconds): typed-decay pass, then capacity.

    Returns a :class:`SweepReport`. Idempotent: running twice deletes nothing twice.

    Raises:
        ConfigurationError: ``sweep_batch_size`` or ``sweep_max_scan`` below 1.
        StoreError: the database failed (committed batches stay committed; the cursor is at the
            last committed batch).
    """
    _validate(settings)
    started = time.perf_counter()
    start = int(await store.lifecycle.get_state(SWEEP_CURSOR) or 0)
    report = SweepReport(dry_run=dry_run, cursor_start=start)
    would_go: dict[int, tuple[str, str]] = {}  # dry run: rowid -> bucket
    pass_ = _DecayPass(store.lifecycle, settings, now, report, would_go, on_deleted, listener)
    report.cursor_end = await pass_.run(start)
    if settings.max_memories_per_owner > 0:
        await _enforce_capacity(
            store, settings, now, report, would_go, dry_run, on_deleted, listener
        )
    report.duration_s = time.perf_counter() - started
    return report


class _DecayPass:
    """The typed-decay pass of one sweep: bounded, resumable scan with one wrap-around."""

    def __init__(
        self,
        lc: LifecycleStore,
        settings: Settings,
        now: float,
        report: SweepReport,
        would_go: dict[int, tuple[str, str]],
        on_deleted: OnDeleted | None,
        listener: Listener | None,
    ) -> None:
        self.lc, self.now, self.report, self.would_go = lc, now, report, would_go
        self.batch, self.max_scan = settings.sweep_batch_size, settings.sweep_max_scan
        self.retention = retention_of(settings)
        self.on_deleted, self.listener = on_deleted, listener

    async def run(self, start: int) -> int:
        """Scan from rowid ``start`` to the end, then from the beginning back to ``start``.

        At most ``sweep_max_scan`` rows; returns the rowid where the scan stopped.
        """
        report = self.report
        cursor, wrapped = start, False
        while report.scanned < self.max_scan:
            limit = min(self.batch, self.max_scan - report.scanned)
            rows = await self.lc.scan(cursor, limit, upto_id=start if wrapped else None)
            if rows:
                report.scanned += len(rows)
                cursor = rows[-1].id
                await self._evict(rows, cursor)
                if wrapped and cursor >= start:
                    report.full_pass = True
                    break
            if not rows or len(rows) < limit:  # the end of this range is reached
                if wrapped or start == 0:
                    report.full_pass = True
                    break
                wrapped, cursor = True, 0  # wrap once to the beginning
                if not report.dry_run:
                    await self.lc.set_state(SWEEP_CURSOR, "0", self.now)
        return cursor

    async def _evict(self, rows: list[LifecycleRow], cursor: int) -> None:
        """Delete (dry run: note) the rows of one batch that decayed or expired."""
        now, report = self.now, self.report
        items = [(row, why) for row in rows if (why := eviction_reason(row, self.retention, now))]
        if report.dry_run:
            self.would_go.update((row.id, (row.owner_id, row.user_id)) for row, _ in items)
            await _after_delete(report, items, [r.id for r, _ in items], None, self.listener)
        else:
            deleted = await self.lc.evict(items, now, state=(SWEEP_CURSOR, str(cursor)))
            await _after_delete(report, items, deleted, self.on_deleted, self.listener)


async def _enforce_capacity(
    store: Store,
    settings: Settings,
    now: float,
    report: SweepReport,
    would_go: dict[int, tuple[str, str]],
    dry_run: bool,
    on_deleted: OnDeleted | None,
    listener: Listener | None,
) -> None:
    """Evict the excess of every bucket over ``max_memories_per_owner`` (see module docs)."""
    retention = retention_of(settings)
    immune_types = [t for t in MEMORY_TYPES if type_ttl_s(t, retention) is None]
    cap, batch = settings.max_memories_per_owner, settings.sweep_batch_size
    pending = Counter(would_go.values())
    lc = store.lifecycle
    for owner_id, user_id, count in await lc.buckets_over(cap):
        excess = count - cap - pending[(owner_id, user_id)]
        offset = 0
        while excess > 0:
            rows = await lc.capacity_candidates(
                owner_id,
                user_id,
                immune_types=immune_types,
                access_immunity=retention.access_immunity,
                limit=min(excess, batch) if not dry_run else batch,
                offset=offset,
            )
            if not rows:
                break
            if dry_run:
                offset += len(rows)
                chosen = [r for r in rows if r.id not in would_go][:excess]
                items: list[tuple[LifecycleRow, EvictionReason]] = [(r, "capacity") for r in chosen]
                await _after_delete(report, items, [r.id for r in chosen], None, listener)
                excess -= len(chosen)
                continue
            items = [(r, "capacity") for r in rows]
            deleted = await lc.evict(items, now)
            await _after_delete(report, items, deleted, on_deleted, listener)
            excess -= len(deleted)
            if not deleted:
                break
