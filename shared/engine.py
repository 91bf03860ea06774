"""The semantic engine: the embedding source and the vector tiers, built once per process.

Used by recall on the request path (query embedding + KNN, with the fallback chain Qdrant →
sqlite-vec → keyword, see "Vector tiers" in ``docs/ARCHITECTURE.md``) and by the embedding/reindex
jobs (memory embedding and the writes to every vector tier: sqlite-vec always, Qdrant too when it is
selected, so turning Qdrant off falls back to a complete sqlite-vec index).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import numpy.typing as npt

from shared.embedding.base import EmbeddingSource
from shared.embedding.cache import EmbeddingCache
from shared.embedding.select import select_source
from shared.errors import ConfigurationError, EmbeddingError, VectorIndexError
from shared.memory_render import preparer_for
from shared.models import Memory, Scope
from shared.recall_index import KeywordIndex, build_keyword_index
from shared.recall_index.vectors import VectorMatrices
from shared.sensitive_patterns import build_detector
from shared.settings import Settings
from shared.store import Store
from shared.store.memories import Retention
from shared.store.sqlite_vec import SqliteVecIndex
from shared.vector_index.base import VectorHit, VectorIndex, VectorRecord

#: Rank of a batch of vectors (rows × dimensions).
MATRIX_NDIM = 2

log = logging.getLogger("mnemogate.engine")

EMBED_BATCH = 64


def default_model_dir(db_path: str) -> Path:
    """Where local model artefacts (the static table) live: ``<db folder>/models``."""
    return Path(db_path).resolve().parent / "models"


def record_of(memory: Memory, vector: npt.NDArray[np.float32]) -> VectorRecord:
    """The vector-tier record of ``memory`` with its embedding ``vector`` (shape ``(dim,)``)."""
    return VectorRecord(
        memory_id=memory.id,
        owner_id=memory.owner_id,
        user_id=memory.user_id,
        session_id=memory.session_id,
        type=memory.type,
        created_at=memory.created_at,
        expires_at=memory.expires_at,
        vector=[float(x) for x in vector],
    )


@dataclass
class VectorResult:
    """Hits of the vector leg, the tier that answered, and why a preferred tier was skipped."""

    hits: list[VectorHit]
    tier: str
    degraded: str | None = None
    #: The query's embedding (None when nothing was embedded), for :meth:`Engine.similarities`.
    query: npt.NDArray[np.float32] | None = None


@dataclass
class Engine:
    """Embedding source (or None: keyword only), sqlite-vec index, optional Qdrant index."""

    embedder: EmbeddingSource | None
    sqlite_vec: SqliteVecIndex
    qdrant: VectorIndex | None = None
    cache: EmbeddingCache | None = None
    notes: list[str] = field(default_factory=list)
    warm: bool = False
    keywords: KeywordIndex | None = None
    """The in-memory keyword index (None: recall uses the SQL FTS5 tier)."""
    matrices: VectorMatrices | None = None
    """The sqlite-vec tier searched in memory (None: one SQL KNN per query)."""

    #: Set while the static table is built in the background (shared.embedding.autobuild):
    #: reported as the ``embedding`` status; recall is keyword-only meanwhile.
    building: str | None = None

    async def close(self) -> None:
        """Stop the keyword index's background work."""
        if self.keywords is not None:
            await self.keywords.close()

    async def warm_up(self) -> None:
        """Load the embedding model (local models load lazily) with one probe embedding.

        So the first request does not pay for it; until then the vector leg reports
        ``embedding_warming_up`` and recall uses the keyword leg. A failure is logged.
        """
        if self.embedder is None:
            return
        try:
            await self.embedder.embed(["warm up"])
        except EmbeddingError as exc:
            log.warning("embedding warm-up failed: %s", exc.message)
        self.warm = True

    @property
    def enabled(self) -> bool:
        """True when semantic recall is possible at all (an embedding source exists)."""
        return self.embedder is not None

    async def prepare(self) -> bool:
        """Make sure the vector table matches the embedding signature.

        (local sources know their dimension up front). Returns True when the table was rebuilt: the
        caller should start a reindex. Remote sources with an unknown dimension are prepared at the
        first embedding.
        """
        if self.embedder is None or self.embedder.dim <= 0:
            return False
        return await self.sqlite_vec.ensure(self.embedder.dim, self.embedder.signature)

    async def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embedding of a query (cached by the source wrapper), shape ``(dim,)``.

        Raises:
            EmbeddingError: the source failed or there is none.
        """
        if self.embedder is None:
            raise EmbeddingError("no embedding source configured", code="embedding_disabled")
        row: npt.NDArray[np.float32] = self.embedder_vectors(await self.embedder.embed([text]))[0]
        return row

    @staticmethod
    def embedder_vectors(mat: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Identity with a shape check: ``(n, dim)`` float32."""
        if mat.ndim != MATRIX_NDIM:
            raise EmbeddingError(
                "embedding source returned a bad shape", code="embedding_bad_response"
            )
        return mat

    async def vector_search(
        self, text: str, scope: Scope, k: int, now: float, *, use_qdrant: bool
    ) -> VectorResult:
        """KNN for ``text`` in Qdrant (if selected) else sqlite-vec, falling back on failure.

        With no vector table for the current embedding yet (a fresh store before the worker
        built it, or a model change before the reindex), recall lacks vectors only if ``scope``
        can see some memory: with none, the answer is no hits (tier ``vector``), not an error.

        Raises:
            EmbeddingError: the query could not be embedded.
            VectorIndexError: no vector tier could answer (``.code`` says why; ``reindex_pending``
                when memories visible to ``scope`` have no usable vectors yet).
        """
        assert self.embedder is not None
        if not self.warm:
            raise EmbeddingError("embedding model is loading", code="embedding_warming_up")
        if not await self.sqlite_vec.usable_for(self.embedder.signature) and not (
            use_qdrant and self.qdrant is not None
        ):
            if not await self.sqlite_vec.memories.any_visible(
                scope, now, self.sqlite_vec.retention
            ):
                return VectorResult([], "vector")
            raise VectorIndexError("vectors are being rebuilt", code="reindex_pending")
        vector = await self.embed_query(text)
        degraded = None
        if use_qdrant and self.qdrant is not None:
            try:
                hits = await self.qdrant.search(vector, scope, k, now)
                # Retention (typed decay not yet swept) lives only in SQLite, and a point may
                # lag its memory (a pending re-sync): re-check every hit against the store.
                visible = await self.sqlite_vec.memories.filter_visible(
                    [h.memory_id for h in hits], scope, now, self.sqlite_vec.retention
                )
                return VectorResult(
                    [h for h in hits if h.memory_id in visible], "qdrant", query=vector
                )
            except VectorIndexError as exc:
                degraded = exc.code or "qdrant_unavailable"
                log.warning("qdrant search failed, falling back to sqlite-vec: %s", exc)
            if not await self.sqlite_vec.usable_for(self.embedder.signature):
                raise VectorIndexError("qdrant failed and sqlite-vec is not ready", code=degraded)
        found = await self.matrices.search(vector, scope, k, now) if self.matrices else None
        hits = found if found is not None else await self.sqlite_vec.search(vector, scope, k, now)
        return VectorResult(hits, "vector", degraded, query=vector)

    def similarities(
        self, query: npt.NDArray[np.float32] | None, scope: Scope, memory_ids: Sequence[int]
    ) -> dict[int, float]:
        """Cosine of ``query`` (a :attr:`VectorResult.query`) with each of ``memory_ids``.

        Answered from the in-memory matrices a sqlite-vec search just used (no I/O); ids whose
        row is not cached (a Qdrant-tier search reads no matrix, a memory not embedded yet) are
        left out. Empty when ``query`` is None or there are no matrices.
        """
        if query is None or self.matrices is None:
            return {}
        return self.matrices.similarities(query, scope, memory_ids)

    async def index(self, memories: Sequence[Memory], *, use_qdrant: bool) -> bool:
        """Embed ``memories`` and write them to sqlite-vec (and Qdrant when selected).

        Returns True when the sqlite-vec table had to be rebuilt (new signature): every memory
        is then marked for reindex and the caller should run a reindex.

        Raises:
            EmbeddingError, VectorIndexError: transient failures (the job retries).
        """
        if self.embedder is None or not memories:
            return False
        rebuilt = False
        for start in range(0, len(memories), EMBED_BATCH):
            batch = memories[start : start + EMBED_BATCH]
            mat = self.embedder_vectors(await self.embedder.embed([m.content for m in batch]))
            dim = int(mat.shape[1])
            rebuilt = await self.sqlite_vec.ensure(dim, self.embedder.signature) or rebuilt
            records = [record_of(m, mat[i]) for i, m in enumerate(batch)]
            await self.sqlite_vec.upsert(records)
            if use_qdrant and self.qdrant is not None:
                signature = self.sqlite_vec.full_signature(self.embedder.signature)
                await self.qdrant.ensure(dim, signature)
                await self.qdrant.upsert(records)
        return rebuilt

    async def delete(self, memory_ids: Sequence[int]) -> None:
        """Remove the vectors of the rowids ``memory_ids`` from Qdrant.

        (sqlite-vec rows go with the memory row via a trigger). A missing collection holds nothing
        to delete.

        Raises:
            VectorIndexError: Qdrant failed or timed out (callers retry through a job).
        """
        if self.qdrant is None or not memory_ids:
            return
        try:
            await self.qdrant.delete(memory_ids)
        except VectorIndexError as exc:
            if exc.code != "qdrant_collection_missing":
                raise

    async def health(self) -> dict[str, str]:
        """Status of each part: embedding source, sqlite-vec, Qdrant."""
        embedding = self.building or "none"
        if self.embedder is not None:
            embedding = self.embedder.signature if self.warm else "warming_up"
        out = {
            "embedding": embedding,
            "sqlite_vec": await self.sqlite_vec.health(),
        }
        if self.qdrant is not None:
            out["qdrant"] = await self.qdrant.health()
        return out


def _embedding_source(
    settings: Settings, http: httpx.AsyncClient, cache: EmbeddingCache, notes: list[str]
) -> EmbeddingSource | None:
    """The configured embedding source, or None (noted in ``notes``) when it is unavailable."""
    try:
        return select_source(
            settings.embedding_source,
            client=http,
            base_url=settings.embedding_base_url,
            api_key=settings.embedding_api_key,
            model=settings.embedding_model,
            dim=settings.embedding_dim or None,
            timeout_s=settings.embedding_timeout_s,
            cache_dir=default_model_dir(settings.db_path),
            static_path=settings.static_model_path or None,
            cache=cache,
        )
    except ConfigurationError as exc:
        log.error("embedding source unavailable, keyword recall only: %s", exc.message)
        notes.append(exc.message)
        return None


def _qdrant_index(
    settings: Settings, qdrant_factory: Callable[[Settings], VectorIndex] | None
) -> VectorIndex:
    """The Qdrant tier from settings (or from ``qdrant_factory``, for tests)."""
    if qdrant_factory is not None:
        return qdrant_factory(settings)
    from shared.vector_index.qdrant import make_qdrant_index

    return make_qdrant_index(
        settings.qdrant_url,
        settings.qdrant_api_key,
        settings.qdrant_collection,
        settings.vector_quantization,
        settings.qdrant_timeout_s,
    )


def build_engine(
    settings: Settings,
    store: Store,
    http: httpx.AsyncClient,
    retention: Retention | None,
    *,
    qdrant_factory: Callable[[Settings], VectorIndex] | None = None,
) -> Engine:
    """Build the engine from settings.

    A misconfigured embedding source is logged and disables the vector leg (keyword recall keeps
    working) rather than failing start-up.
    """
    cache = EmbeddingCache(settings.embedding_cache_size, settings.embedding_cache_ttl_s)
    notes: list[str] = []
    embedder = _embedding_source(settings, http, cache, notes)
    sqlite_vec = SqliteVecIndex(
        store.writer,
        store.reader,
        store.memories,
        quantization=settings.vector_quantization,
        retention=retention,
    )
    qdrant: VectorIndex | None = None
    if settings.vector_tier == "qdrant" and embedder is not None:
        qdrant = _qdrant_index(settings, qdrant_factory)
    detector = build_detector(settings.sensitive_custom_patterns)
    keywords = build_keyword_index(
        settings, store, preparer_for(settings.sensitive_filter, detector)
    )
    return Engine(
        embedder=embedder,
        sqlite_vec=sqlite_vec,
        qdrant=qdrant,
        cache=cache,
        notes=notes,
        keywords=keywords,
        matrices=VectorMatrices(sqlite_vec, keywords, settings.vector_preselect_dims),
    )
