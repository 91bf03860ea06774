"""Background preparation of a loaded owner's request-path features.

A memory's block line and echo features (:mod:`shared.recall_index.prepared`) come with an owner's
snapshot. An owner loaded from its rows, or from a snapshot prepared under another redaction
configuration (preparer fingerprint), has none: :func:`prepare_later` prepares every memory in
slices of :data:`PREPARE_SLICE` on the event loop and stores the snapshot again with them; until
then recall renders that owner's lines on the fly. Slices on the loop rather than one worker
thread: a Python thread holding the GIL makes the loop wait up to the interpreter's switch
interval (5 ms) at every system call a request makes, so while a 10,000-memory owner was prepared
in a thread (about a second) requests on one core took 15-30 ms instead of 1.5 ms; a slice
delays a request by at most one slice (about 1-2 ms). Memories changed later are prepared as they
enter the delta, a few per feed read (:data:`PREPARE_INLINE`), so the event loop never prepares a
batch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from shared.recall_index import snapshot
from shared.recall_index.owner import OwnerIndex
from shared.recall_index.prepared import Prepared, Preparer
from shared.recall_index.segment import SegmentData

log = logging.getLogger("mnemogate.recall_index")

__all__ = [
    "PREPARE_INLINE",
    "PREPARE_MAX_DOCS",
    "PREPARE_SLICE",
    "drop_foreign_prepared",
    "max_id_of",
    "prepare_later",
]

PREPARE_SLICE = 16
"""Memories prepared per step of the event loop by :func:`prepare_later` (~1-2 ms)."""
PREPARE_INLINE = 32
"""Changed memories of an owner prepared inline by a feed read (~3 ms; more: rendered by recall)."""
PREPARE_MAX_DOCS = 250_000
"""Larger owners are not prepared in the background (~0.1 ms per memory: 25 s of CPU at this
size); recall renders their lines on the fly, memoised per process."""


def max_id_of(data: SegmentData) -> int:
    """The largest memory rowid in ``data`` (0 when empty): the most its snapshot can hold."""
    ids = data.cols["ids"]
    return int(ids.max()) if len(ids) else 0


def drop_foreign_prepared(data: SegmentData, prepare: Preparer | None) -> None:
    """Drop ``data``'s prepared features (in place) unless ``prepare`` made them.

    Features of another preparer fingerprint (another redaction configuration) must never be
    served; the owner is then prepared again in the background (:func:`prepare_later`).
    """
    if prepare is None or data.prepared_fp != prepare.fingerprint:
        data.prepared, data.prepared_fp = None, ""


async def prepare_later(
    index: OwnerIndex,
    data: SegmentData,
    prepare: Preparer,
    save: Callable[[str, int, bytes, int | None], Awaitable[None]],
    seed: Sequence[Prepared | None] | None = None,
) -> None:
    """Prepare every memory of a loaded owner in slices on the loop, then store its snapshot.

    ``save(owner_id, seq, blob, max_id)`` stores it (the store refuses a snapshot when a memory
    it holds changed since; one estimated above :data:`shared.recall_index.snapshot.MAX_BYTES`
    is not encoded). ``seed``: features already prepared by ``prepare`` for exactly these
    records, by position (None where missing), e.g. carried over from the index a rebuild
    replaces (:mod:`shared.recall_index.rebuild`): only the missing ones are prepared.
    Owners above :data:`PREPARE_MAX_DOCS` are left unprepared. Never raises: a failure leaves
    recall rendering this owner's lines on the fly.
    """
    if len(index.segment) > PREPARE_MAX_DOCS:
        return
    small = index.seg_bytes <= 2 * snapshot.MAX_BYTES  # the estimate is ~2x a blob's size
    try:
        memories = data.memories
        held: list[Prepared | None] = list(seed) if seed is not None else [None] * len(memories)
        missing = [i for i, p in enumerate(held) if p is None]
        for start in range(0, len(missing), PREPARE_SLICE):
            for i in missing[start : start + PREPARE_SLICE]:
                held[i] = prepare(memories[i])
            await asyncio.sleep(0)  # requests run between slices
        prepared: list[Prepared] = [p for p in held if p is not None]
        blob = b""
        if small:  # one C-level encode (~10 ms per 10,000 memories): off the loop
            blob = await asyncio.to_thread(
                snapshot.encode_prepared, data, prepared, prepare.fingerprint
            )
    except Exception:  # a cache: recall keeps rendering this owner's lines on the fly
        log.warning("preparing recalled lines failed", exc_info=True)
        return
    index.segment.prepared, index.segment.prepared_fp = prepared, prepare.fingerprint
    index.seg_bytes = index.segment.nbytes()
    if 0 < len(blob) <= snapshot.MAX_BYTES:
        await save(index.owner_id, index.seq, blob, max_id_of(data))
