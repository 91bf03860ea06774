"""Building an owner's analysed rows chunk by chunk, with compact memory records.

A cold load from rows reads the owner in rowid-ordered chunks (:data:`LOAD_CHUNK` rows) and hands
each to :meth:`SegmentBuilder.add` (in a worker thread): the chunk's texts are analysed
(:func:`shared.recall_index.analysis.analyse_many`), its (term, document) pairs counted with numpy
and kept as four compact arrays, and each memory record kept as its MessagePack bytes
(:class:`LazyMemories`, decoded again only when a search returns it). The chunk's token lists and
row objects are then freed, so the peak memory of a load is the finished index plus one chunk's
analysis, not every token of every memory as Python strings at once (at 100k memories the one-shot
analysis peaked at ~770 MB over the index; at 1M it did not finish). :meth:`finish` merges the
chunks with one stable sort by term id (chunks are in document order, so each term's postings stay
in ascending document order). Term ids are in order of first occurrence over the chunks; each
term's postings and frequencies are exactly those of a one-shot analysis of all rows.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from shared.models import Memory
from shared.recall_index.analysis import analyse_many, context_text
from shared.recall_index.segment import (
    COLUMNS,
    Bm25Params,
    Segment,
    SegmentData,
    segment_from,
    touched_at,
)
from shared.recall_index.visibility import TYPE_CODE, expires_value
from shared.store.recall_rows import IndexedRow

__all__ = [
    "LOAD_CHUNK",
    "LazyMemories",
    "LazyRecords",
    "SegmentBuilder",
    "analyse_rows",
    "build_segment",
    "records_at",
    "trim_heap",
]

T = TypeVar("T")

LOAD_CHUNK = 5000
"""Rows per chunk of a cold load (one read and one analysis step each)."""
RECORD_OVERHEAD = 80
"""Estimated bytes per record besides its MessagePack bytes (its ``Raw`` view and two list
slots), counted in :attr:`LazyMemories.nbytes`."""


class LazyRecords(Generic[T]):
    """Records by position, each decoded from its MessagePack bytes on first access.

    ``raw``: the records' MessagePack bytes (views into a snapshot blob or a chunk's buffer);
    ``decoder``: a msgspec decoder of one record type.
    """

    def __init__(self, raw: list[msgspec.Raw], decoder: msgspec.msgpack.Decoder[T]) -> None:
        self.raw = raw
        self.decoder = decoder
        self.done: list[T | None] = [None] * len(raw)

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, pos: int, /) -> T:
        record = self.done[pos]
        if record is None:
            record = self.done[pos] = self.decoder.decode(self.raw[pos])
        return record

    def take(self, positions: Sequence[int], /) -> list[T]:
        """The records at ``positions``, in that order (decoded where not yet).

        One call for a search's hits instead of one ``__getitem__`` per hit (the hot path).

        Raises:
            IndexError: a position out of range.
        """
        done = self.done
        return [r if (r := done[pos]) is not None else self[pos] for pos in positions]


def records_at(seq: Any, positions: Sequence[int]) -> list[Any]:
    """``[seq[i] for i in positions]``, through :meth:`LazyRecords.take` when ``seq`` is lazy."""
    if isinstance(seq, LazyRecords):
        return seq.take(positions)
    return [seq[i] for i in positions]


class LazyMemories(LazyRecords[Memory]):
    """Memory records by position, each decoded from its MessagePack bytes on first access.

    ``raw[i]`` is the record's MessagePack encoding (``msgspec.Raw``: a view into a snapshot
    blob or into a chunk's buffer encoded by :class:`SegmentBuilder`); ``nbytes`` the bytes they
    keep alive.
    """

    _decoder = msgspec.msgpack.Decoder(Memory)

    def __init__(self, raw: list[msgspec.Raw], nbytes: int) -> None:
        super().__init__(raw, self._decoder)
        self.nbytes = nbytes

    def __setitem__(self, pos: int, memory: Memory, /) -> None:
        self.done[pos] = memory

    def encoded(self, pos: int) -> msgspec.Raw:
        """The current record at ``pos`` as MessagePack (re-encoded only if it was replaced)."""
        memory = self.done[pos]
        return self.raw[pos] if memory is None else msgspec.Raw(_ENCODER.encode(memory))


_ENCODER = msgspec.msgpack.Encoder()
_RECORDS = msgspec.msgpack.Decoder(list[msgspec.Raw])


class SegmentBuilder:
    """Accumulates chunks of :class:`IndexedRow` into one :class:`SegmentData` (CPU only)."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.users: dict[str, int] = {}
        self.sessions: dict[str, int] = {}
        self.records: list[msgspec.Raw] = []
        self.record_bytes = 0
        self.n = 0
        self._pairs: list[tuple[npt.NDArray[Any], ...]] = []
        self._cols: list[dict[str, npt.NDArray[Any]]] = []
        self._lens: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]] = []

    def add(self, docs: Sequence[IndexedRow]) -> None:
        """Analyse one chunk of rows (documents ``n .. n + len(docs) - 1``)."""
        if not docs:
            return
        own, own_len = analyse_many([row.search_text for row in docs])
        ctx, ctx_len = analyse_many([context_text(row.context) for row in docs])
        vocab = self.vocab
        for term in dict.fromkeys(itertools.chain(own, ctx)):  # distinct, first-occurrence order
            if term not in vocab:
                vocab[term] = len(vocab)
        m = len(docs)
        tid = np.fromiter(
            map(vocab.__getitem__, itertools.chain(own, ctx)), np.int64, count=len(own) + len(ctx)
        )
        local = np.arange(m, dtype=np.int64)
        did = np.concatenate([np.repeat(local, own_len), np.repeat(local, ctx_len)])
        pairs, inverse = np.unique(tid * m + did, return_inverse=True)
        inverse = inverse.reshape(-1)
        tf_all = np.bincount(inverse, minlength=len(pairs))
        tf_ctx = np.bincount(inverse[len(own) :], minlength=len(pairs))
        self._pairs.append(
            (
                (pairs // m).astype(np.int32),
                (pairs % m + self.n).astype(np.int32),
                (tf_all - tf_ctx).astype(np.float32),
                tf_ctx.astype(np.float32),
            )
        )
        self._lens.append(
            (np.asarray(own_len, dtype=np.int32), np.asarray(ctx_len, dtype=np.int32))
        )
        self._cols.append(self._columns([row.memory for row in docs]))
        # one buffer per chunk, records as views into it: no small allocation per record survives
        blob = _ENCODER.encode([row.memory for row in docs])
        self.records.extend(_RECORDS.decode(blob))
        self.record_bytes += len(blob) + RECORD_OVERHEAD * m
        self.n += m

    def _columns(self, memories: list[Memory]) -> dict[str, npt.NDArray[Any]]:
        """:data:`COLUMNS` of one chunk, user and session codes shared across chunks."""
        n = len(memories)
        users, sessions = self.users, self.sessions

        def code(codes: dict[str, int], value: str | None) -> int:
            if not value:
                return 0
            return codes.setdefault(value, len(codes) + 1)

        def col(name: str, values: Any) -> npt.NDArray[Any]:
            return np.fromiter(values, dtype=COLUMNS[name], count=n)

        return {
            "ids": col("ids", (m.id for m in memories)),
            "user": col("user", (code(users, m.user_id) for m in memories)),
            "session": col("session", (code(sessions, m.session_id) for m in memories)),
            "expires": col("expires", (expires_value(m.expires_at) for m in memories)),
            "type": col("type", (TYPE_CODE[m.type] for m in memories)),
            "access": col("access", (m.access_count for m in memories)),
            "touched": col("touched", (touched_at(m) for m in memories)),
        }

    def finish(self) -> SegmentData:
        """The analysed rows of every chunk added (the builder must not be used afterwards)."""
        parts = self._pairs
        self._pairs = []
        tid = _cat([p[0] for p in parts], np.int32)
        order = np.argsort(tid, kind="stable")  # chunks are in document order: postings stay so
        post_doc = _cat([p[1] for p in parts], np.int32)[order]
        tf_own = _cat([p[2] for p in parts], np.float32)[order]
        tf_ctx = _cat([p[3] for p in parts], np.float32)[order]
        counts = np.bincount(tid, minlength=len(self.vocab))
        del parts, order, tid
        term_start = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(counts, out=term_start[1:])
        cols = {c: _cat([ch[c] for ch in self._cols], dt) for c, dt in COLUMNS.items()}
        return SegmentData(
            LazyMemories(self.records, self.record_bytes),
            cols,
            list(self.users),
            list(self.sessions),
            list(self.vocab),
            term_start,
            post_doc,
            tf_own,
            tf_ctx,
            _cat([lens[0] for lens in self._lens], np.int32),
            _cat([lens[1] for lens in self._lens], np.int32),
        )


def _cat(arrays: list[npt.NDArray[Any]], dtype: Any) -> npt.NDArray[Any]:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)


def trim_heap() -> None:
    """Return the C heap's free pages to the OS (glibc ``malloc_trim(0)``; no-op elsewhere).

    A load from rows frees gigabytes of short-lived chunk data (token strings, row tuples,
    temporaries) that glibc keeps mapped: at 1M memories the process kept 3.3 GB of RSS for an
    index estimated at 1.5 GB, 1.4 GB after a trim. ctypes releases the GIL during the call.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.malloc_trim(0)


def analyse_rows(docs: Sequence[IndexedRow]) -> SegmentData:
    """Analyse memory rows with their search fields in one chunk (CPU only; off the event loop)."""
    builder = SegmentBuilder()
    builder.add(docs)
    return builder.finish()


def build_segment(docs: Sequence[IndexedRow], p: Bm25Params) -> Segment:
    """Index memory rows: :func:`segment_from` of :func:`analyse_rows` (CPU only)."""
    return segment_from(analyse_rows(docs), p)
