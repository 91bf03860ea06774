"""What the memory engine is running now (``GET /api/engine``).

Keyword tier, embedding source, vector tier, Qdrant configuration and pending reindex count, as one
:class:`EngineStatus`.
"""

from __future__ import annotations

import msgspec

from shared.settings import Settings
from shared.store import Store
from shared.store.memories.admin import EngineCounts

#: The FTS5 tokenizer of ``memory_fts`` (migration 0001).
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
#: An embedding signature is ``source:model:dim[:int8]``: at least two colons.
SIGNATURE_MIN_COLONS = 2


class KeywordStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The keyword tier: ``indexed`` FTS rows (null for a client key)."""

    engine: str
    tokenizer: str
    indexed: int | None
    status: str


class EmbeddingStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The embedding in use (``source``, ``model``, ``dim``).

    The configured source and the vector table's ``signature`` (``source:model:dim[:int8]``, null
    before it is built).
    """

    source: str
    model: str
    configured_source: str
    dim: int | None
    signature: str | None
    #: What runs now: the source's signature, ``warming_up``, ``building_static_table``
    #: (first start, keyword recall meanwhile) or ``none``; null without an engine report.
    status: str | None = None


class VectorStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The vector tier: ``status`` ready|not_built, ``reset_at`` of the last rebuild (unix s)."""

    tier: str
    quantization: str
    status: str
    reset_at: float | None


class QdrantStatus(msgspec.Struct, frozen=True, kw_only=True):
    """Qdrant: configured or not, its collection, and its health (null: unknown)."""

    configured: bool
    collection: str | None
    healthy: bool | None


class EngineStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The whole engine status.

    ``health`` is the vector engine's own report (``embedding``, ``sqlite_vec``, ``qdrant``
    statuses) or null; whole-database counts (``memories``, ``pending_reindex``) are null for a
    client key.
    """

    keyword: KeywordStatus
    embedding: EmbeddingStatus
    vector: VectorStatus
    qdrant: QdrantStatus
    health: dict[str, str] | None
    retrieval_strategy: str
    memories: int | None
    pending_reindex: int | None


def _embedding_status(
    settings: Settings, counts: EngineCounts, health: dict[str, str] | None
) -> EmbeddingStatus:
    """The embedding actually in use.

    ``source:model:dim[:int8]`` from the engine's health report, else from the vector table
    metadata, else the configured values.
    """
    meta = counts.vector_meta
    signature = (health or {}).get("embedding") or (meta.signature if meta else None)
    parts = (
        signature.split(":") if signature and signature.count(":") >= SIGNATURE_MIN_COLONS else None
    )
    return EmbeddingStatus(
        source=parts[0] if parts else settings.embedding_source,
        model=parts[1] if parts else settings.embedding_model,
        configured_source=settings.embedding_source,
        dim=meta.dim if meta else (settings.embedding_dim or None),
        signature=meta.signature if meta else None,
        status=(health or {}).get("embedding"),
    )


def _qdrant_status(settings: Settings, health: dict[str, str] | None) -> QdrantStatus:
    """Qdrant's configuration and the health the engine reported for it."""
    return QdrantStatus(
        configured=bool(settings.qdrant_url),
        collection=settings.qdrant_collection if settings.qdrant_url else None,
        healthy=(health["qdrant"] == "ok") if health and "qdrant" in health else None,
    )


async def engine_status(
    store: Store,
    settings: Settings,
    health: dict[str, str] | None = None,
    *,
    with_counts: bool = True,
) -> EngineStatus:
    """The engine status for ``settings`` and the engine's ``health`` report (None: none).

    ``with_counts`` False hides whole-database counts (a client key must not learn how many
    memories other tenants hold).

    Raises:
        StoreError: the database failed.
    """
    counts = await store.admin.engine_counts()
    meta = counts.vector_meta
    return EngineStatus(
        keyword=KeywordStatus(
            engine="fts5",
            tokenizer=FTS_TOKENIZER,
            indexed=counts.fts_rows if with_counts else None,
            status="ok",
        ),
        embedding=_embedding_status(settings, counts, health),
        vector=VectorStatus(
            tier=settings.vector_tier,
            quantization=settings.vector_quantization,
            status="ready" if meta else "not_built",
            reset_at=meta.reset_at if meta else None,
        ),
        qdrant=_qdrant_status(settings, health),
        health=health,
        retrieval_strategy=settings.retrieval_strategy,
        memories=counts.memories if with_counts else None,
        pending_reindex=counts.pending_reindex if with_counts else None,
    )
