"""Owner snapshots: an owner's analysed rows, encoded once, so a cold load skips the analysis.

A snapshot is :class:`shared.recall_index.segment.SegmentData` (memory records, per-document filter
columns, terms, postings with raw term frequencies, document lengths; no BM25 parameter is baked
in) as one MessagePack blob (msgspec; numpy arrays as raw little-endian bytes), stored by the store
with the change-feed sequence its rows reflect (in parts of at most 64 MB with a checksummed
manifest, :func:`shared.store.recall_rows.save_snapshot`, so an owner of 1M memories has one too).
It is a cache: a load decodes it, builds the segment with the current parameters and applies the
feed after that sequence; a snapshot of another :data:`FORMAT`, one older than the pruned feed, one
with a part missing or corrupt, or one that fails to decode is ignored and the owner is built from
its rows (and a new snapshot written). A memory record is decoded only when a search returns it
(:class:`LazyMemories`), and so are its prepared features (:mod:`shared.recall_index.prepared`:
block line, echo features; kept with the fingerprint of the preparer that made them), so a load
costs the arrays, the vocabulary and the BM25 weights: ~15 ms of CPU at 10,000 memories against
~300 ms for the analysis and ~1 s for the preparation it replaces.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from shared.models import Memory
from shared.recall_index.builder import LazyMemories, LazyRecords
from shared.recall_index.prepared import Prepared
from shared.recall_index.segment import COLUMNS, SegmentData

__all__ = [
    "FORMAT",
    "MAX_BYTES",
    "LazyMemories",
    "LazyPrepared",
    "decode",
    "encode",
    "encode_prepared",
]

ANALYSIS_VERSION = 3
"""Bump when :mod:`shared.recall_index.analysis` or the blob layout changes (2: stored in parts,
migration 0012; 3: prepared features)."""
FORMAT = (
    f"seg{ANALYSIS_VERSION}-"
    + hashlib.sha256(",".join(Memory.__struct_fields__).encode()).hexdigest()[:12]
)
"""Snapshot encoding version: the analysis version and :class:`Memory`'s field list."""
MAX_BYTES = 4 * 1024 * 1024 * 1024
"""Larger snapshots are not written (~1 GB per 1M memories of LoCoMo-sized text; the store keeps
a snapshot in parts of :data:`shared.store.recall_rows.PART_BYTES`, so SQLite's 1 GB blob limit
does not apply)."""

_ARRAYS = {
    "term_start": "<i8",
    "post_doc": "<i4",
    "tf_own": "<f4",
    "tf_ctx": "<f4",
    "own_len": "<i4",
    "ctx_len": "<i4",
}
"""Array fields of :class:`SegmentData` and their stored dtypes."""


class _RawBlob(msgspec.Struct, array_like=True):
    """A decoded blob: records and arrays are views into the blob (no copy)."""

    memories: list[msgspec.Raw]
    users: list[str]
    sessions: list[str]
    terms: list[str]
    arrays: dict[str, memoryview]
    prepared: list[msgspec.Raw] | None
    prepared_fp: str


class _Blob(msgspec.Struct, array_like=True):
    memories: list[msgspec.Raw]
    users: list[str]
    sessions: list[str]
    terms: list[str]
    arrays: dict[str, bytes]
    prepared: list[Prepared] | None
    prepared_fp: str


class LazyPrepared(LazyRecords[Prepared]):
    """Prepared features by position, each decoded from its MessagePack bytes on first access."""

    _decoder = msgspec.msgpack.Decoder(Prepared)

    def __init__(self, raw: list[msgspec.Raw]) -> None:
        super().__init__(raw, self._decoder)


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_RawBlob)


def encode(data: SegmentData) -> bytes:
    """One blob of ``data`` (CPU only, ~10 ms per 10,000 memories)."""
    arrays = {name: getattr(data, name).astype(dt).tobytes() for name, dt in _ARRAYS.items()}
    arrays.update(
        {f"col.{c}": data.cols[c].astype(np.dtype(t)).tobytes() for c, t in COLUMNS.items()}
    )
    mem = data.memories
    n = len(mem)
    if isinstance(mem, LazyMemories):
        records = [mem.encoded(i) for i in range(n)]
    else:
        records = [msgspec.Raw(_ENCODER.encode(mem[i])) for i in range(n)]
    held = [] if data.prepared is None else [data.prepared[i] for i in range(n)]
    # a partly prepared list (a rebuild's carry-over) is stored as not prepared
    done: list[Prepared] | None = [p for p in held if p is not None]
    if data.prepared is None or len(done or ()) < n:
        done = None
    return _ENCODER.encode(
        _Blob(
            records,
            data.users,
            data.sessions,
            data.terms,
            arrays,
            done,
            data.prepared_fp if done is not None else "",
        )
    )


def encode_prepared(data: SegmentData, prepared: list[Prepared], fingerprint: str) -> bytes:
    """The blob of ``data`` with ``prepared`` (one per memory, made under ``fingerprint``)."""
    return encode(msgspec.structs.replace(data, prepared=prepared, prepared_fp=fingerprint))


def decode(blob: bytes | bytearray) -> SegmentData | None:
    """The data of an :func:`encode` blob, or None when it is not a consistent one."""
    try:
        b = _DECODER.decode(blob)
        got: dict[str, npt.NDArray[Any]] = {
            name: np.frombuffer(b.arrays[name], dtype=dt) for name, dt in _ARRAYS.items()
        }
        cols = {c: np.frombuffer(b.arrays[f"col.{c}"], dtype=t).copy() for c, t in COLUMNS.items()}
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError, ValueError):
        return None
    data = SegmentData(
        LazyMemories(b.memories, len(blob)),
        cols,
        b.users,
        b.sessions,
        b.terms,
        **got,
        prepared=None if b.prepared is None else LazyPrepared(b.prepared),
        prepared_fp=b.prepared_fp if b.prepared is not None else "",
    )
    n, postings = len(b.memories), len(data.post_doc)
    consistent = (
        (b.prepared is None or len(b.prepared) == n)
        and len(data.term_start) == len(data.terms) + 1
        and int(data.term_start[-1]) == postings
        and len(data.tf_own) == len(data.tf_ctx) == postings
        and len(data.own_len) == len(data.ctx_len) == n
        and all(len(col) == n for col in cols.values())
        and (postings == 0 or 0 <= int(data.post_doc.min()) <= int(data.post_doc.max()) < n)
    )
    return data if consistent else None
