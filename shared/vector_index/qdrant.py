"""Qdrant as the vector tier for large tenants, behind :class:`VectorIndex`.

One collection holds every tenant. Each point is one memory:

- point id = ``memory_id`` (the integer rowid of ``memories``; Qdrant ids are unsigned ints);
- vector = the L2-normalised embedding, cosine distance, optional int8 scalar quantization
  (``quantile`` 0.99, kept in RAM) with rescoring on the original vectors at search time;
- payload ``{memory_id, owner_id, user_id, session_id, type, created_at, expires_at}``; times are
  unix seconds (float), ``user_id`` ``""`` = owner-wide, ``session_id`` / ``expires_at`` are stored
  as JSON ``null`` when absent (no sentinel): filters use ``IsNullCondition`` for them.
- payload indexes: keyword for ``owner_id`` (``is_tenant=True``: Qdrant co-locates each tenant's
  points), ``user_id``, ``session_id``, ``type``; float for ``created_at``, ``expires_at``.

Every search is filtered INSIDE Qdrant (the filter is part of the HNSW traversal, never applied
after a global top-k) with exactly the semantics of
:func:`shared.store.memories.visibility_sql` minus retention (re-checked by the caller)::

    ((owner_id == scope.owner AND user_id IN ("", scope.user))
        OR owner_id == "global"            -- only if include_global and owner != "global")
    AND (session_id IS NULL [OR session_id == scope.session])
    AND (expires_at IS NULL OR expires_at > now)

The embedding signature (``source:model:dim[:int8]``) and dimension live in the collection's
metadata (``{"mnemogate_signature": str, "mnemogate_dim": int}``; Qdrant server >= 1.16), so no
special point pollutes searches or counts. :meth:`QdrantVectorIndex.ensure` never drops data: a
changed dimension or embedding model raises :class:`VectorIndexError` naming the remedy
(``mnemogate qdrant recreate``, which also re-embeds every memory into the new collection); only
the ``:int8`` suffix may change in place (the quantization config is updated, vectors are kept).

Exceptions are mapped by :mod:`shared.vector_index.qdrant_errors`; each call is bounded on the
client side (``asyncio.timeout``: ``timeout_s`` for request-path calls, ``admin_timeout_s`` for
ensure/recreate/cleanup), whatever the transport does.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Literal

import numpy as np
import numpy.typing as npt
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import UnexpectedResponse

from shared.errors import VectorIndexError
from shared.models import Scope
from shared.vector_index.base import VectorHit, VectorRecord
from shared.vector_index.qdrant_errors import MAPPED_ERRORS, already_exists, map_error
from shared.vector_index.qdrant_payload import expired_filter, record_payload, visibility_filter

QdrantQuantization = Literal["float32", "int8"]

REMEDY = (
    "run `mnemogate qdrant recreate` (drops the collection, creates it for the current model and "
    "re-embeds every memory into it)"
)
SIGNATURE_KEY = "mnemogate_signature"
DIM_KEY = "mnemogate_dim"
INT8_SUFFIX = ":int8"
#: Rescoring fetches oversampling × k int8 candidates and re-ranks them on the float32 originals
#: (Qdrant docs, "Quantization: searching with quantization").
INT8_OVERSAMPLING = 2.0
INT8_QUANTILE = 0.99

#: ensure / recreate / cleanup (collections, indexes, deletes by filter): never on the request path.
ADMIN_TIMEOUT_S = 30.0
KEYWORD_FIELDS: tuple[str, ...] = ("owner_id", "user_id", "session_id", "type")
FLOAT_FIELDS: tuple[str, ...] = ("created_at", "expires_at")


def _base_signature(signature: str) -> str:
    """``signature`` without its ``:int8`` suffix (what decides whether vectors are reusable)."""
    return signature[: -len(INT8_SUFFIX)] if signature.endswith(INT8_SUFFIX) else signature


class QdrantVectorIndex:
    """:class:`shared.vector_index.base.VectorIndex` over one Qdrant collection.

    ``client``: an ``AsyncQdrantClient`` (server or local mode); ``collection``: its name;
    ``quantization``: ``"float32"`` or ``"int8"`` (scalar, rescored); ``timeout_s`` (seconds,
    > 0) bounds every request-path call (search, upsert, delete, count, health);
    ``admin_timeout_s`` (default ``max(30, timeout_s)``) bounds the slow administrative ones
    (ensure, recreate, cleanup_expired), which create collections and indexes or scan payloads.
    All methods raise :class:`VectorIndexError` on failure (see the module docstring for the
    codes). Call :meth:`ensure` before writing; searches on a missing collection fail with
    ``qdrant_collection_missing`` so recall falls back to sqlite-vec.
    """

    name = "qdrant"

    def __init__(
        self,
        client: AsyncQdrantClient,
        collection: str,
        *,
        quantization: QdrantQuantization = "float32",
        timeout_s: float = 2.0,
        admin_timeout_s: float | None = None,
    ) -> None:
        if quantization not in ("float32", "int8"):
            raise ValueError(f"quantization must be 'float32' or 'int8', not {quantization!r}")
        if not timeout_s > 0:
            raise ValueError("timeout_s must be > 0")
        self.client = client
        self.collection = collection
        self.quantization: QdrantQuantization = quantization
        self.timeout_s = float(timeout_s)
        self.admin_timeout_s = (
            max(ADMIN_TIMEOUT_S, self.timeout_s) if admin_timeout_s is None else admin_timeout_s
        )
        self._dim: int | None = None
        self._signature: str | None = None
        self._problem: str | None = None

    # ---- plumbing ----------------------------------------------------------------------------
    @asynccontextmanager
    async def _call(self, action: str, *, admin: bool = False) -> AsyncIterator[None]:
        limit = self.admin_timeout_s if admin else self.timeout_s
        try:
            async with asyncio.timeout(limit):
                yield
        except MAPPED_ERRORS as exc:
            err = map_error(exc, action, limit)
            if err.code == "qdrant_collection_missing":
                self._dim = None  # someone dropped it: the next ensure re-checks
            raise err from exc

    def _quantization_config(self) -> qm.ScalarQuantization | None:
        if self.quantization != "int8":
            return None
        return qm.ScalarQuantization(
            scalar=qm.ScalarQuantizationConfig(
                type=qm.ScalarType.INT8, quantile=INT8_QUANTILE, always_ram=True
            )
        )

    def _search_params(self) -> qm.SearchParams | None:
        if self.quantization != "int8":
            return None
        return qm.SearchParams(
            quantization=qm.QuantizationSearchParams(rescore=True, oversampling=INT8_OVERSAMPLING)
        )

    async def _create(self, dim: int, signature: str) -> None:
        await self.client.create_collection(
            self.collection,
            vectors_config=qm.VectorParams(size=dim, distance=qm.Distance.COSINE),
            quantization_config=self._quantization_config(),
            metadata={SIGNATURE_KEY: signature, DIM_KEY: dim},
        )
        await self._create_indexes(set())

    async def _create_indexes(self, existing: set[str]) -> None:
        for field in KEYWORD_FIELDS:
            if field not in existing:
                schema: qm.PayloadSchemaType | qm.KeywordIndexParams = (
                    qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
                    if field == "owner_id"
                    else qm.PayloadSchemaType.KEYWORD
                )
                await self.client.create_payload_index(
                    self.collection, field_name=field, field_schema=schema
                )
        for field in FLOAT_FIELDS:
            if field not in existing:
                await self.client.create_payload_index(
                    self.collection, field_name=field, field_schema=qm.PayloadSchemaType.FLOAT
                )

    # ---- VectorIndex -------------------------------------------------------------------------
    async def ensure(self, dim: int, signature: str) -> bool:
        """Create the collection for ``dim``-dimensional vectors (cosine) if it is missing.

        Returns True when it was created (every memory then needs a backfill), False when the
        existing collection already fits. ``signature`` is ``source:model:dim[:int8]``; a change
        of only the ``:int8`` suffix updates the quantization config in place.

        Raises:
            VectorIndexError: ``qdrant_dimension_mismatch`` when the collection holds vectors of
                another dimension, ``qdrant_signature_mismatch`` when it was built by another
                embedding model (or carries no signature) — both name the remedy
                (``mnemogate qdrant recreate``); or a transport code (timeout, unavailable...).
        """
        if dim <= 0:
            raise ValueError("dim must be > 0")
        if self._dim == dim and self._signature == signature:
            return False
        async with self._call("checking the collection", admin=True):
            exists = await self.client.collection_exists(self.collection)
            created = False
            if not exists:
                try:
                    await self._create(dim, signature)
                    created = True
                except (UnexpectedResponse, ValueError) as exc:
                    # another process (gateway vs worker) created it in between: check that one
                    if not already_exists(exc):
                        raise
            if not created:
                await self._check_existing(dim, signature)
        self._dim, self._signature, self._problem = dim, signature, None
        return created

    async def _check_existing(self, dim: int, signature: str) -> None:
        info = await self.client.get_collection(self.collection)
        vectors = info.config.params.vectors
        size = vectors.size if isinstance(vectors, qm.VectorParams) else None
        meta = info.config.metadata or {}
        stored_sig = meta.get(SIGNATURE_KEY)
        if size != dim:
            self._problem = (
                f"qdrant collection {self.collection!r} holds {size}-dimensional vectors but the "
                f"embedding model produces {dim} ({stored_sig or 'unknown'} -> {signature}); "
                f"{REMEDY}"
            )
            raise VectorIndexError(self._problem, code="qdrant_dimension_mismatch")
        if not isinstance(stored_sig, str) or _base_signature(stored_sig) != _base_signature(
            signature
        ):
            self._problem = (
                f"qdrant collection {self.collection!r} was built with embedding signature "
                f"{stored_sig or 'unknown (no metadata; Qdrant >= 1.16 stores it)'} but the "
                f"current one is {signature}; {REMEDY}"
            )
            raise VectorIndexError(self._problem, code="qdrant_signature_mismatch")
        want = self._quantization_config()
        have = info.config.quantization_config
        if stored_sig != signature or (want is None) != (have is None):
            await self.client.update_collection(
                self.collection,
                quantization_config=want if want is not None else qm.Disabled.DISABLED,
                metadata={SIGNATURE_KEY: signature, DIM_KEY: dim},
            )
        await self._create_indexes(set(info.payload_schema or {}))

    async def recreate(self, dim: int, signature: str) -> None:
        """Drop the collection (all vectors!) and create it empty for ``dim`` and ``signature``.

        The remedy for a dimension or signature mismatch; ``mnemogate qdrant recreate`` calls it
        and then re-embeds every memory (``reindex --force``).

        Raises:
            VectorIndexError: Qdrant failed or timed out.
        """
        if dim <= 0:
            raise ValueError("dim must be > 0")
        async with self._call("recreating the collection", admin=True):
            if await self.client.collection_exists(self.collection):
                await self.client.delete_collection(self.collection)
            await self._create(dim, signature)
        self._dim, self._signature, self._problem = dim, signature, None

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace the points of ``records`` (idempotent; waits for the write).

        Raises:
            VectorIndexError: a vector's length differs from the ensured dimension
                (``qdrant_dimension_mismatch``), or Qdrant failed.
        """
        if not records:
            return
        if self._dim is not None:
            for r in records:
                if len(r.vector) != self._dim:
                    raise VectorIndexError(
                        f"memory {r.memory_id} has a {len(r.vector)}-dimensional vector, the "
                        f"qdrant collection holds {self._dim}; {REMEDY}",
                        code="qdrant_dimension_mismatch",
                    )
        points = [
            qm.PointStruct(id=r.memory_id, vector=list(r.vector), payload=record_payload(r))
            for r in records
        ]
        async with self._call(f"upserting {len(points)} points"):
            await self.client.upsert(self.collection, points=points, wait=True)

    async def delete(self, memory_ids: Sequence[int]) -> None:
        """Remove the points of ``memory_ids`` (missing ids are ignored; waits for the write).

        Raises:
            VectorIndexError: Qdrant failed.
        """
        if not memory_ids:
            return
        selector = qm.PointIdsList(points=[int(i) for i in memory_ids])
        async with self._call(f"deleting {len(memory_ids)} points"):
            await self.client.delete(self.collection, points_selector=selector, wait=True)

    async def search(
        self, vector: npt.NDArray[np.float32], scope: Scope, k: int, now: float
    ) -> list[VectorHit]:
        """Top-``k`` (any k >= 1; k <= 0 → []) points visible to ``scope`` at ``now``.

        ``vector``: float32, length = dimension. Scores are cosine similarities in [-1, 1],
        nearest first. The scope filter runs inside Qdrant (see :func:`visibility_filter`).

        Raises:
            VectorIndexError: Qdrant failed, timed out, or the collection is missing.
        """
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).ravel().tolist()
        async with self._call("searching"):
            resp = await self.client.query_points(
                self.collection,
                query=query,
                query_filter=visibility_filter(scope, now),
                search_params=self._search_params(),
                limit=k,
                with_payload=False,
                with_vectors=False,
            )
        return [VectorHit(int(p.id), float(p.score)) for p in resp.points]

    async def count(self) -> int:
        """Exact number of points in the collection (0 when it does not exist).

        Raises:
            VectorIndexError: Qdrant failed.
        """
        async with self._call("counting points"):
            if not await self.client.collection_exists(self.collection):
                return 0
            result = await self.client.count(self.collection, exact=True)
        return int(result.count)

    async def health(self) -> str:
        """``"ok"``, or a short reason: unreachable/timeout/auth, missing collection, mismatch.

        One cheap call (collection existence) bounded by ``timeout_s``; never raises.
        """
        if self._problem is not None:
            return self._problem
        try:
            async with self._call("checking health"):
                exists = await self.client.collection_exists(self.collection)
        except VectorIndexError as exc:
            return f"{exc.code}: {exc.message}"
        if not exists:
            return f"qdrant collection {self.collection!r} does not exist (not ensured yet)"
        return "ok"

    async def cleanup_expired(self, now: float) -> int:
        """Delete every point whose ``expires_at`` is ``<= now`` (unix seconds); retention sweep.

        Returns how many points matched just before the delete (approximate under concurrent
        writes). Raises:
            VectorIndexError: Qdrant failed.
        """
        flt = expired_filter(now)
        async with self._call("deleting expired points", admin=True):
            if not await self.client.collection_exists(self.collection):
                return 0
            n = (await self.client.count(self.collection, count_filter=flt, exact=True)).count
            if n:
                await self.client.delete(
                    self.collection, points_selector=qm.FilterSelector(filter=flt), wait=True
                )
        return int(n)

    async def close(self) -> None:
        """Close the underlying client (its HTTP connections)."""
        async with self._call("closing the client"):
            await self.client.close()


def make_qdrant_index(
    url: str,
    api_key: str,
    collection: str,
    quantization: QdrantQuantization = "float32",
    timeout_s: float = 2.0,
) -> QdrantVectorIndex:
    """Build a :class:`QdrantVectorIndex` for the server at ``url`` (REST, e.g. ``http://qdrant:6333``).

    ``api_key`` ``""`` = none (else the ``api-key`` header); ``timeout_s`` (> 0) bounds every
    request-path call, :data:`ADMIN_TIMEOUT_S` the administrative ones (the HTTP client's own
    timeout is the larger one in whole seconds; ``asyncio.timeout`` enforces the exact budgets).
    No I/O here (version check off). ``url`` ``":memory:"`` selects the local mode (tests).

    Raises:
        ValueError: empty ``url``, unknown ``quantization`` or ``timeout_s <= 0``.
    """
    if not url:
        raise ValueError("qdrant url is empty (set MNEMOGATE_QDRANT_URL)")
    if url == ":memory:":
        client = AsyncQdrantClient(location=":memory:")
    else:
        client = AsyncQdrantClient(
            url=url,
            api_key=api_key or None,
            timeout=math.ceil(max(ADMIN_TIMEOUT_S, timeout_s)),
            prefer_grpc=False,
            check_compatibility=False,
        )
    return QdrantVectorIndex(client, collection, quantization=quantization, timeout_s=timeout_s)
