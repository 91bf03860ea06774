"""The sqlite-vec tier searched in memory: one matrix product per owner partition.

Per cached owner (see :mod:`shared.recall_index.cache`), the owner's rows of ``vec_memories`` are
read once into a row-normalised float32 matrix; a query is one ``matrix @ query`` (cosine
similarity), a partial sort, then the visibility rule on the few best rows using the memories the
keyword index already holds (:func:`shared.recall_index.visibility.visible_row`, the rule of
``visibility_sql``). When the owner's index applied writes since the matrix was made (the change
feed logs memory writes, deletes and the end of an embedding, which clears ``needs_reindex``), only
the written memories' rows are read and patched in (:mod:`shared.recall_index.matrix`); the owner is
read whole again only for a reloaded index or another vector space. int8 tables hold rotated vectors
(``shared.store.sqlite_vec.rotation``): the query is rotated the same way, which leaves cosine
similarities unchanged.

A large matrix is searched in two stages (:mod:`shared.recall_index.preselect`): the query's
projection on the owner's leading principal directions scores every row on a few dimensions,
and only the best of those rows get their exact cosine. A scan of every full row reads the whole
matrix per query (10 MB at 10k x 256 float32: memory-bound, ~0.4 ms on one core here).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Coroutine, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from shared.blas_threads import limit_blas_threads
from shared.models import GLOBAL_OWNER, Scope
from shared.recall_index import KeywordIndex
from shared.recall_index.matrix import PATCH_MAX, OwnerMatrix, normalised_rows
from shared.recall_index.owner import OwnerIndex
from shared.recall_index.preselect import Preselect, build_preselect
from shared.recall_index.visibility import visible_row
from shared.store.sqlite_vec import SqliteVecIndex, VecMeta, rotation
from shared.vector_index.base import VectorHit

__all__ = ["VectorMatrices"]

ZERO_NORM = 1e-6
"""A query vector this short has no direction (no known word piece): no neighbours."""
OVERSAMPLE = 4
"""Rows taken from the matrix per wanted hit before the visibility rule."""


def _space(meta: VecMeta) -> tuple[object, ...]:
    """What stored rows' coordinates depend on: dimension and signature (``...[:int8]``)."""
    return (meta.dim, meta.signature)


class VectorMatrices:
    """KNN over per-owner matrices (None from :meth:`search` means: use the SQL tier).

    ``preselect_dims``: principal directions of the first stage of a large matrix's search
    (:mod:`shared.recall_index.preselect`); 0 scans every full row (exact).
    """

    def __init__(
        self, sqlite_vec: SqliteVecIndex, keywords: KeywordIndex, preselect_dims: int = 0
    ) -> None:
        self.sqlite_vec = sqlite_vec
        self.keywords = keywords
        self.preselect_dims = preselect_dims
        self._mats: dict[str, OwnerMatrix] = {}
        self._reads: dict[tuple[str, int, int], asyncio.Future[OwnerMatrix]] = {}
        # One OpenBLAS thread makes ``matrix @ query`` about twice as cheap as einsum's own
        # loop; with several threads it costs more (shared/blas_threads.py).
        self._blas = limit_blas_threads()

    async def _matrix(self, index: OwnerIndex, meta: VecMeta) -> OwnerMatrix:
        """The owner's current matrix: read once per owner index lineage, then patched per write.

        A write of a few memories since the held matrix was made is applied by reading only their
        rows (:meth:`OwnerMatrix.patch`; merged in a worker thread once the patches exceed
        :data:`PATCH_MAX` rows), also across a rebuild of the keyword index (it continues the
        lineage); the whole owner is read again only for a reloaded index (a new lineage), another
        vector space, or when the writes are no longer known (:meth:`OwnerIndex.written_since`).
        Either read runs as its own task, shared by every request that needs it and finishing even
        when they give up (the recall budget cancels a request, never the read): a read longer than
        the budget used to be cancelled and started again by every request, so the vector leg of a
        large owner never came back on a busy machine.
        """
        held = self._mats.get(index.owner_id)
        if held is not None and held.lineage is not index.lineage:
            held = None  # made for an index this one did not rebuild: read whole
        if held is not None and held.generation == index.generation:
            return held
        key = (index.owner_id, id(index.lineage), index.generation)
        task = self._reads.get(key)
        if task is None:
            changed = None
            if held is not None and held.space == _space(meta):
                changed = index.written_since(held.generation)
            read: Coroutine[Any, Any, OwnerMatrix]
            if held is not None and changed is not None:
                read = self._patch(held, index, changed, meta.dim)
            else:
                read = self._read(index, meta)
            task = self._reads[key] = asyncio.ensure_future(read)
            task.add_done_callback(lambda done: self._read_done(key, done))
        return await asyncio.shield(task)

    def _read_done(self, key: tuple[str, int, int], task: asyncio.Future[OwnerMatrix]) -> None:
        if self._reads.get(key) is task:
            del self._reads[key]
        if not task.cancelled():
            task.exception()  # retrieved: a failure is raised to the requests awaiting it

    def _keep(self, made: OwnerMatrix) -> OwnerMatrix:
        """Hold ``made`` as its owner's matrix unless a newer one is held; returns it."""
        held = self._mats.get(made.owner_id)
        if held is None or held.lineage is not made.lineage or held.generation <= made.generation:
            self._mats[made.owner_id] = made
        if len(self._mats) > 4 * max(1, len(self.keywords.cache.owners)):
            for owner_id in [o for o in self._mats if o not in self.keywords.cache.owners]:
                del self._mats[owner_id]
        return made

    async def _patch(
        self, held: OwnerMatrix, index: OwnerIndex, changed: set[int], dim: int
    ) -> OwnerMatrix:
        """``held`` with the current rows of ``changed`` (point lookups: ~30 µs per row)."""
        generation = index.generation
        rows = await self.sqlite_vec.vectors_of(index.owner_id, sorted(changed))
        dtype = np.int8 if self.sqlite_vec.int8 else np.float32
        made = held.patch(generation, changed, normalised_rows(rows, dim, dtype))
        if made.patched > PATCH_MAX:  # merged in a worker thread, never read whole again
            made = await asyncio.to_thread(made.compacted, self.preselect_dims)
        return self._keep(made)

    async def _read(self, index: OwnerIndex, meta: VecMeta) -> OwnerMatrix:
        """Read the owner's vectors (connection thread) and build the matrix (worker thread)."""
        generation = index.generation
        rows = await self.sqlite_vec.owner_vectors(index.owner_id)
        dtype = np.int8 if self.sqlite_vec.int8 else np.float32
        ids, mat, pre = await asyncio.to_thread(self._build, rows, meta.dim, dtype)
        return self._keep(
            OwnerMatrix(
                index.owner_id, index.lineage, generation, ids, mat, pre, space=_space(meta)
            )
        )

    def _build(
        self, rows: list[Any], dim: int, dtype: type[np.generic]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], Preselect | None]:
        """The matrix of ``rows`` and its first stage (worker thread)."""
        ids, mat = normalised_rows(rows, dim, dtype)
        return ids, mat, build_preselect(mat, self.preselect_dims)

    async def search(
        self, vector: npt.NDArray[np.float32], scope: Scope, k: int, now: float
    ) -> list[VectorHit] | None:
        """The ``k`` nearest visible memories.

        The ``k`` nearest visible memories (cosine similarity, best first), or None when the
        table is not readable this way (no table yet).

        Raises:
            StoreError: the store failed.
        """
        meta = await self.sqlite_vec.meta()
        if meta is None or k <= 0:
            return None
        q = self._query(vector)
        if q is None:
            return []
        await self.keywords.cache.fresh()
        owners = [scope.owner_id]
        if scope.include_global and scope.owner_id != GLOBAL_OWNER:
            owners.append(GLOBAL_OWNER)
        hits: list[VectorHit] = []
        for owner_id in owners:
            index = await self.keywords.cache.owner(owner_id)
            matrix = await self._matrix(index, meta)
            hits.extend(self._best(matrix, index, q, scope, k, now, owner_id != scope.owner_id))
        hits.sort(key=lambda h: (-h.score, h.memory_id))
        return hits[:k]

    def _query(self, vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32] | None:
        """``vector`` unit-length (rotated like an int8 table's rows), or None: no direction."""
        q = np.asarray(vector, dtype=np.float32)
        # sqrt(q . q) as np.linalg.norm computes it (the same sdot; a float32 division by the
        # double square root rounds as by the float32 one), without its call overhead
        norm = math.sqrt(float(q @ q))
        if norm <= ZERO_NORM:
            return None
        q = q / norm
        if self.sqlite_vec.int8:
            q = rotation(q.shape[0]) @ q
        return q

    def similarities(
        self, vector: npt.NDArray[np.float32], scope: Scope, memory_ids: Iterable[int]
    ) -> dict[int, float]:
        """Cosine similarity of ``vector`` with each of ``memory_ids`` whose row is cached.

        For hybrid fusion (:func:`shared.fusion.combsum_fuse`): a keyword hit the vector leg did
        not return is scored by its own cosine instead of counting 0. Only matrices already read
        by :meth:`search` for ``scope``'s partitions (the caller's owner, and the global one when
        ``scope`` includes it) and still current (no write since they were read) are used;
        nothing is read from the store, so a memory whose matrix is not cached or current, or
        that has no vector yet, is absent from the answer. Visibility is the caller's business
        (the ids come from legs that applied it). CPU only: a binary search and a dot product
        per id, computed as :meth:`search` computes it (:func:`~shared.recall_index.preselect.
        best_rows`), so a memory has the same cosine in both.

        Returns:
            ``{memory_id: cosine in -1..1}`` for the ids found; empty for a zero ``vector``.
        """
        q = self._query(vector)
        wanted = np.fromiter(set(memory_ids), dtype=np.int64)
        if q is None or len(wanted) == 0:
            return {}
        out: dict[int, float] = {}
        for owner_id in dict.fromkeys(
            (scope.owner_id, GLOBAL_OWNER if scope.include_global else scope.owner_id)
        ):
            m = self._mats.get(owner_id)
            current = self.keywords.cache.owners.get(owner_id)
            if m is None or current is None or m.lineage is not current.lineage:
                continue
            if m.generation != current.generation:
                continue  # not read for the current index, or a write since: may be stale
            out.update(m.cosines(q, wanted))
        return out

    def _best(
        self,
        m: OwnerMatrix,
        index: OwnerIndex,
        q: npt.NDArray[np.float32],
        scope: Scope,
        k: int,
        now: float,
        any_user: bool,
    ) -> list[VectorHit]:
        # BLAS sgemv on one thread, else einsum's own loop: a BLAS matrix-vector product on
        # OpenBLAS's default threads was 3-7x slower on a busy 2-core host (blas_threads.py)
        take = min(m.rows, k * OVERSAMPLE)
        if take == 0:
            return []
        ids, scores = m.best(q, take, blas=self._blas)
        take = len(ids)
        retention = self.sqlite_vec.retention
        out: list[VectorHit] = []
        # Records are looked up k at a time, best first: when the first k rows are visible (the
        # common case) the other (OVERSAMPLE - 1) * k are never touched.
        for start in range(0, take, k):
            found = index.lookup(ids[start : start + k])
            for memory_id, score in zip(
                ids[start : start + k], scores[start : start + k], strict=True
            ):
                memory = found.get(memory_id)
                if memory is not None and visible_row(
                    memory, scope, now, retention, any_user=any_user
                ):
                    out.append(VectorHit(memory.id, score))
                    if len(out) == k:
                        return out
        return out
