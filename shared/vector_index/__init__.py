"""Vector indexes outside SQL.

The :class:`~shared.vector_index.base.VectorIndex` interface that both tiers implement, the Qdrant
tier, and the int8 quantization they share.

The sqlite-vec tier is SQL and lives in the store (:mod:`shared.store.sqlite_vec`).
"""
