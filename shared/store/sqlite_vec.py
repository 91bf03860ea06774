"""The sqlite-vec vector tier: a ``vec0`` table partitioned by owner, in the store's database.

``vec_memories(memory_id INTEGER PRIMARY KEY, owner_id TEXT PARTITION KEY, embedding float[D] |
int8[D] distance_metric=cosine)``. The owner partition key makes tenant-filtered KNN ~10x faster and
means a KNN can never return, or be crowded out by, another tenant's rows (see "Tenancy and access"
in ``docs/ARCHITECTURE.md``). End-user, session, expiry and retention filters are applied to the KNN
candidates by the store's shared visibility filter (:meth:`MemoryStore.filter_visible`), with
oversampling.

The table is created when the embedding dimension is known; ``memory_vec_meta`` records its
dimension and embedding signature (``source:model:dim[:int8]``). A different signature drops and
recreates the table and marks every memory for re-embedding. A trigger deletes a memory's vector
with the memory, whatever path deletes it.

int8: one global scale (``max |x|`` of the first batch, see :mod:`shared.vector_index.quantize`);
with the cosine metric a uniform scale does not change the ranking, it only sets the resolution.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

import aiosqlite
import numpy as np
import numpy.typing as npt

from shared.errors import VectorIndexError
from shared.models import GLOBAL_OWNER, Scope
from shared.store.connection import store_errors, transaction
from shared.store.memories import MemoryStore, Retention, visibility_sql
from shared.vector_index.base import VectorHit, VectorRecord

#: Vectors with a smaller L2 norm have no direction (cosine undefined) and are not stored.
MIN_NORM = 1e-6

TABLE = "vec_memories"
OVERSAMPLE = 3
META_TTL_S = 2.0
LOOKUP_BATCH = 100
"""Point lookups per statement of :meth:`SqliteVecIndex.vectors_of` (SQLite allows 500 terms in a
compound SELECT, ``SQLITE_MAX_COMPOUND_SELECT``)."""
INT8_MAX = 127
ROTATION_SEED = 20_240_601


@functools.lru_cache(maxsize=8)
def rotation(dim: int) -> npt.NDArray[np.float32]:
    """A fixed random orthogonal ``dim`` x ``dim`` matrix (QR of a seeded Gaussian matrix).

    Applied before int8 quantization: an orthogonal map preserves cosine similarity exactly, and
    spreads the variance evenly over dimensions, so a single global int8 scale loses less (the
    random-rotation step of e.g. RaBitQ, Gao & Long, SIGMOD 2024). PCA-reduced static vectors
    have very unequal dimension spreads: int8 KNN agreement with float rose from 0.965 to the
    figure in the notes with it (bench/locomo_recall.py --compare-int8).
    """
    rng = np.random.default_rng(ROTATION_SEED + dim)
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    q = q * np.sign(np.diag(r))  # make the decomposition unique
    return q.astype(np.float32)


class VecMeta:
    """Row of ``memory_vec_meta``: dimension, signature, global int8 scale (or None)."""

    def __init__(self, dim: int, signature: str, int8_scale: float | None) -> None:
        self.dim = dim
        self.signature = signature
        self.int8_scale = int8_scale


class SqliteVecIndex:
    """:class:`shared.vector_index.base.VectorIndex` over sqlite-vec in the store database.

    ``writer``: the store's writer connection (DDL and upserts); ``memories``: a reader-side
    :class:`MemoryStore` for the visibility filter; ``quantization``: ``float32`` or ``int8``.
    """

    name = "sqlite-vec"

    def __init__(
        self,
        writer: aiosqlite.Connection,
        reader: aiosqlite.Connection,
        memories: MemoryStore,
        *,
        quantization: str = "float32",
        retention: Retention | None = None,
    ) -> None:
        self.writer = writer
        self.reader = reader
        self.memories = memories
        self.int8 = quantization == "int8"
        self.retention = retention
        self._meta: VecMeta | None = None
        self._meta_read_at = 0.0

    # ---- metadata --------------------------------------------------------------------------
    async def meta(self, *, refresh: bool = False) -> VecMeta | None:
        """The current table metadata.

        Cached for :data:`META_TTL_S` seconds (another process may rebuild the table); ``refresh``
        re-reads it now.
        """
        fresh = time.monotonic() - self._meta_read_at < META_TTL_S
        if self._meta is not None and fresh and not refresh:
            return self._meta
        self._meta_read_at = time.monotonic()
        with store_errors("reading vector metadata"):
            _rows = list(
                await self.reader.execute_fetchall(
                    "SELECT dim, signature, int8_scale FROM memory_vec_meta WHERE id = 1"
                )
            )
            row = _rows[0] if _rows else None
        self._meta = VecMeta(int(row[0]), str(row[1]), row[2]) if row else None
        return self._meta

    def full_signature(self, signature: str) -> str:
        """The embedding signature with the storage suffix (``:int8`` when quantized)."""
        return signature + (":int8" if self.int8 else "")

    async def ensure(self, dim: int, signature: str) -> bool:
        """Create ``vec_memories`` for ``dim`` if missing or if the signature changed.

        Returns True when the table was (re)built; every memory is then marked for reindex.

        Raises:
            VectorIndexError: ``dim`` is not positive, or the DDL failed.
        """
        if dim <= 0:
            raise VectorIndexError("embedding dimension unknown", code="vector_dim_unknown")
        wanted = self.full_signature(signature)
        meta = await self.meta(refresh=True)
        if meta is not None and meta.signature == wanted and await self._table_exists():
            return False
        column = f"int8[{dim}]" if self.int8 else f"float[{dim}]"
        try:
            with store_errors("creating the vector table"):
                async with transaction(self.writer):
                    await self.writer.execute(f"DROP TABLE IF EXISTS {TABLE}")
                    await self.writer.execute(
                        f"CREATE VIRTUAL TABLE {TABLE} USING vec0(memory_id INTEGER PRIMARY KEY, "
                        f"owner_id TEXT PARTITION KEY, embedding {column} distance_metric=cosine)"
                    )
                    await self.writer.execute(
                        "CREATE TRIGGER IF NOT EXISTS memories_vec_delete "
                        "AFTER DELETE ON memories "
                        f"BEGIN DELETE FROM {TABLE} WHERE memory_id = old.id; END"
                    )
                    await self.writer.execute(
                        "INSERT INTO memory_vec_meta (id, dim, signature, reset_at, int8_scale) "
                        "VALUES (1, ?, ?, ?, NULL) ON CONFLICT (id) DO UPDATE SET dim = "
                        "excluded.dim, signature = excluded.signature, reset_at = "
                        "excluded.reset_at, int8_scale = NULL",
                        (dim, wanted, time.time()),
                    )
                    await self.writer.execute("UPDATE memories SET needs_reindex = 1")
        except Exception as exc:
            raise VectorIndexError(f"cannot build the vector table: {exc}") from exc
        self._meta = VecMeta(dim, wanted, None)
        return True

    async def usable_for(self, signature: str) -> bool:
        """True when the table exists and holds vectors of ``signature``'s space."""
        meta = await self.meta()
        return meta is not None and meta.signature == self.full_signature(signature)

    async def _table_exists(self) -> bool:
        async with self.reader.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)
        ) as cur:
            return await cur.fetchone() is not None

    # ---- encoding --------------------------------------------------------------------------
    def _encode(self, vector: npt.NDArray[np.float32], scale: float | None) -> bytes:
        if not self.int8:
            return np.asarray(vector, dtype=np.float32).tobytes()
        s = scale or 1.0
        v = np.asarray(vector, dtype=np.float32)
        v = rotation(v.shape[0]) @ v
        q = np.clip(np.rint(v / s * INT8_MAX), -INT8_MAX, INT8_MAX)
        return bytes(q.astype(np.int8).tobytes())

    def _param(self) -> str:
        return "vec_int8(?)" if self.int8 else "?"

    async def _int8_scale(self, vectors: npt.NDArray[np.float32]) -> float | None:
        if not self.int8:
            return None
        meta = await self.meta()
        if meta is not None and meta.int8_scale:
            return float(meta.int8_scale)
        scale = float(np.max(np.abs(vectors @ rotation(vectors.shape[1]).T))) or 1.0
        with store_errors("saving the int8 scale"):
            async with transaction(self.writer):
                await self.writer.execute(
                    "UPDATE memory_vec_meta SET int8_scale = ? WHERE id = 1", (scale,)
                )
        if meta is not None:
            meta.int8_scale = scale
        return scale

    # ---- writes and reads ------------------------------------------------------------------
    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace the vectors of ``records`` (vec0 has no UPSERT: delete + insert)."""
        if not records:
            return
        mat = np.asarray([r.vector for r in records], dtype=np.float32)
        # A zero vector (a text with no known word piece) has no direction: cosine distance to
        # it is NULL. Such memories get no vector (an older one is removed); keyword finds them.
        usable = np.linalg.norm(mat, axis=1) > MIN_NORM
        if not usable.all():
            await self.delete(
                [r.memory_id for r, ok in zip(records, usable, strict=True) if not ok]
            )
            records = [r for r, ok in zip(records, usable, strict=True) if ok]
            mat = mat[usable]
            if not records:
                return
        scale = await self._int8_scale(mat)
        rows = [
            (r.memory_id, r.owner_id, self._encode(mat[i], scale)) for i, r in enumerate(records)
        ]
        ids = [(r.memory_id,) for r in records]
        try:
            with store_errors("writing vectors"):
                async with transaction(self.writer):
                    await self.writer.executemany(f"DELETE FROM {TABLE} WHERE memory_id = ?", ids)
                    await self.writer.executemany(
                        f"INSERT INTO {TABLE} (memory_id, owner_id, embedding) "
                        f"VALUES (?, ?, {self._param()})",
                        rows,
                    )
        except Exception as exc:
            raise VectorIndexError(f"sqlite-vec write failed: {exc}") from exc

    async def delete(self, memory_ids: Sequence[int]) -> None:
        """Remove vectors by memory rowid (the delete trigger already covers memory deletes)."""
        if not memory_ids or await self.meta() is None:
            return
        with store_errors("deleting vectors"):
            async with transaction(self.writer):
                await self.writer.executemany(
                    f"DELETE FROM {TABLE} WHERE memory_id = ?", [(i,) for i in memory_ids]
                )

    async def owner_vectors(self, owner_id: str) -> list[tuple[int, bytes]]:
        """Every ``(memory_id, embedding bytes)`` of one owner partition (reader connection).

        A scan of the partition's chunks: ~0.25 s at 10,000 rows of 256 float32 here.

        Raises:
            StoreError: the read failed.
        """
        with store_errors("reading an owner's vectors"):
            rows = await self.reader.execute_fetchall(
                f"SELECT memory_id, embedding FROM {TABLE} WHERE owner_id = ?", (owner_id,)
            )
        return [(int(r[0]), bytes(r[1])) for r in rows]

    async def vectors_of(self, owner_id: str, memory_ids: Sequence[int]) -> list[tuple[int, bytes]]:
        """``(memory_id, embedding bytes)`` of those of ``memory_ids`` the owner has a row for.

        One point lookup per id (vec0 answers ``memory_id = ?`` from its rowid index, ~30 µs,
        but scans every chunk of the table for ``memory_id IN (...)``: 0.1-0.2 s at 10,000
        rows), :data:`LOOKUP_BATCH` of them per statement joined by ``UNION ALL``.

        Raises:
            StoreError: the read failed.
        """
        out: list[tuple[int, bytes]] = []
        one = f"SELECT memory_id, embedding FROM {TABLE} WHERE memory_id = ? AND owner_id = ?"
        for start in range(0, len(memory_ids), LOOKUP_BATCH):
            part = memory_ids[start : start + LOOKUP_BATCH]
            with store_errors("reading vectors"):
                rows = await self.reader.execute_fetchall(
                    " UNION ALL ".join([one] * len(part)),
                    [v for memory_id in part for v in (memory_id, owner_id)],
                )
            out.extend((int(r[0]), bytes(r[1])) for r in rows)
        return out

    async def search(
        self, vector: npt.NDArray[np.float32], scope: Scope, k: int, now: float
    ) -> list[VectorHit]:
        """KNN inside the owner's partition (and the global one), then the visibility filter.

        Returns at most ``k`` hits, nearest first, cosine similarity = 1 − cosine distance.

        Raises:
            VectorIndexError: no vector table, or the query failed.
        """
        meta = await self.meta()
        if meta is None:
            raise VectorIndexError("no vector table yet", code="vector_index_missing")
        if float(np.linalg.norm(vector)) <= MIN_NORM:
            return []  # a query with no known word piece has no neighbours
        blob = self._encode(vector, meta.int8_scale)
        owners = [scope.owner_id]
        if scope.include_global and scope.owner_id != GLOBAL_OWNER:
            owners.append(GLOBAL_OWNER)
        # One statement: a KNN per owner partition, then the shared visibility filter joined on
        # the memory rows (user, session, expiry, retention), oversampled to survive filtering.
        knn = " UNION ALL ".join(
            f"SELECT memory_id, distance FROM {TABLE} WHERE embedding MATCH {self._param()} "
            "AND k = ? AND owner_id = ?"
            for _ in owners
        )
        cond, params = visibility_sql(scope, now, self.retention)
        knn_params: list[Any] = []
        for owner in owners:
            knn_params.extend([blob, k * OVERSAMPLE, owner])
        sql = (
            f"WITH knn AS MATERIALIZED ({knn}) SELECT knn.memory_id, knn.distance FROM knn "
            f"JOIN memories m ON m.id = knn.memory_id WHERE {cond} "
            "ORDER BY knn.distance, knn.memory_id LIMIT ?"
        )
        try:
            rows = await self.reader.execute_fetchall(sql, [*knn_params, *params, k])
        except Exception as exc:
            raise VectorIndexError(f"sqlite-vec search failed: {exc}") from exc
        return [VectorHit(int(r[0]), 1.0 - float(r[1])) for r in rows if r[1] is not None]

    async def count(self) -> int:
        """Number of stored vectors (0 without a table)."""
        if await self.meta() is None or not await self._table_exists():
            return 0
        _rows = list(await self.reader.execute_fetchall(f"SELECT COUNT(*) FROM {TABLE}"))
        row = _rows[0] if _rows else None
        return int(row[0]) if row else 0

    async def health(self) -> str:
        """``ok`` when the table exists, else why not."""
        try:
            meta = await self.meta(refresh=True)
            if meta is None or not await self._table_exists():
                return "no vector table yet"
            return "ok"
        except Exception as exc:
            return f"error: {type(exc).__name__}"
