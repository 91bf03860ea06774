"""Backfill: copy existing memories' vectors into a new or recreated Qdrant collection.

The store side (the caller) supplies the records as an async iterator of batches, in ascending
``memory_id`` order, starting after a resume cursor. :func:`backfill` re-chunks them into
``batch_size`` upserts and, after each one is acknowledged by Qdrant, reports a
:class:`BackfillProgress` whose ``last_id`` is the resume cursor: persist it in the progress
callback (e.g. the store's ``cursors`` table) and pass it back as ``after_id`` to resume after a
crash or a Qdrant outage. Upserts are idempotent, so replaying a chunk is harmless.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import msgspec

from shared.vector_index.base import VectorIndex, VectorRecord


class BackfillProgress(msgspec.Struct, frozen=True, kw_only=True):
    """Where a backfill stands.

    ``copied``: records upserted by this run (records at or below the starting cursor are not
    counted); ``skipped``: records at or below the cursor that the source yielded anyway;
    ``last_id``: the highest memory_id known to be in the index (the resume cursor);
    ``elapsed_s``: seconds since this run started.
    """

    copied: int
    skipped: int
    last_id: int
    elapsed_s: float


ProgressCallback = Callable[[BackfillProgress], Awaitable[None] | None]


async def backfill(
    index: VectorIndex,
    records_source: AsyncIterator[Sequence[VectorRecord]],
    *,
    after_id: int = 0,
    batch_size: int = 256,
    progress: ProgressCallback | None = None,
) -> int:
    """Upsert every record of ``records_source`` with ``memory_id > after_id`` into ``index``.

    ``records_source`` yields batches (any size, possibly empty) in ascending ``memory_id``
    order; records at or below ``after_id`` are skipped (a source may ignore the cursor).
    ``batch_size`` (>= 1) is the number of points per upsert. ``progress`` (sync or async) is
    called after each acknowledged upsert and once at the end. The index must already be
    ensured for the records' dimension.

    Returns the resume cursor: the last memory_id copied (``after_id`` if nothing was).

    Raises:
        ValueError: ``batch_size < 1``, or the source is not in ascending ``memory_id`` order
            (the cursor would then skip records).
        VectorIndexError: the index failed; everything up to the last reported ``last_id`` is
            in the index, resume from it.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    copier = _Copier(index, after_id, batch_size, progress)
    async for batch in records_source:
        for record in batch:
            await copier.add(record)
    while copier.pending:
        await copier.flush()
    await copier.report()
    return copier.cursor


class _Copier:
    """The state of one backfill run: resume cursor, counts, records waiting for an upsert."""

    def __init__(
        self,
        index: VectorIndex,
        after_id: int,
        batch_size: int,
        progress: ProgressCallback | None,
    ) -> None:
        self.index = index
        self.after_id = after_id
        self.batch_size = batch_size
        self.progress = progress
        self.started = time.monotonic()
        self.cursor = self.seen = after_id
        self.copied = self.skipped = 0
        self.pending: list[VectorRecord] = []

    async def add(self, record: VectorRecord) -> None:
        """Queue ``record`` (skipped at or below the resume cursor); upsert a full batch.

        Raises:
            ValueError: ``record`` is not after the previous one (``memory_id`` order).
        """
        if record.memory_id <= self.after_id:
            self.skipped += 1
            return
        if record.memory_id <= self.seen:
            raise ValueError(
                f"backfill source is not in ascending memory_id order "
                f"({record.memory_id} after {self.seen})"
            )
        self.seen = record.memory_id
        self.pending.append(record)
        if len(self.pending) >= self.batch_size:
            await self.flush()

    async def flush(self) -> None:
        """Upsert up to ``batch_size`` waiting records, move the cursor, report progress."""
        chunk = self.pending[: self.batch_size]
        await self.index.upsert(chunk)
        del self.pending[: len(chunk)]
        self.copied += len(chunk)
        self.cursor = chunk[-1].memory_id
        await self.report()

    async def report(self) -> None:
        """Call the progress callback (sync or async), if any."""
        if self.progress is None:
            return
        result = self.progress(
            BackfillProgress(
                copied=self.copied,
                skipped=self.skipped,
                last_id=self.cursor,
                elapsed_s=time.monotonic() - self.started,
            )
        )
        if inspect.isawaitable(result):
            await result
