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
    started = time.monotonic()
    cursor = after_id
    seen = after_id
    copied = 0
    skipped = 0
    pending: list[VectorRecord] = []

    async def report() -> None:
        if progress is None:
            return
        result = progress(
            BackfillProgress(
                copied=copied,
                skipped=skipped,
                last_id=cursor,
                elapsed_s=time.monotonic() - started,
            )
        )
        if inspect.isawaitable(result):
            await result

    async def flush() -> None:
        nonlocal cursor, copied
        chunk = pending[:batch_size]
        await index.upsert(chunk)
        del pending[: len(chunk)]
        copied += len(chunk)
        cursor = chunk[-1].memory_id
        await report()

    async for batch in records_source:
        for record in batch:
            if record.memory_id <= after_id:
                skipped += 1
                continue
            if record.memory_id <= seen:
                raise ValueError(
                    f"backfill source is not in ascending memory_id order "
                    f"({record.memory_id} after {seen})"
                )
            seen = record.memory_id
            pending.append(record)
            if len(pending) >= batch_size:
                await flush()
    while pending:
        await flush()
    await report()
    return cursor
