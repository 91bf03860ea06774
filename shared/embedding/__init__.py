"""Embedding sources behind one interface.

Remote (OpenAI-compatible HTTP), a local ONNX transformer (all-MiniLM-L6-v2 int8), and a static
table distilled from it; plus an LRU/TTL cache and :func:`select_source`. Importing this package
loads no model and imports no optional package.
"""

from shared.embedding.base import EmbeddingSource, Vectors, l2_normalize
from shared.embedding.cache import CachedEmbeddingSource, EmbeddingCache
from shared.embedding.onnx_minilm import (
    TransformerEmbeddingSource,
    tokenizer_available,
    transformers_available,
)
from shared.embedding.remote import RemoteEmbeddingSource, validate_endpoint_url
from shared.embedding.select import SOURCE_CHOICES, select_source, static_table_path
from shared.embedding.static import StaticEmbeddingSource, build_static_table

__all__ = [
    "SOURCE_CHOICES",
    "CachedEmbeddingSource",
    "EmbeddingCache",
    "EmbeddingSource",
    "RemoteEmbeddingSource",
    "StaticEmbeddingSource",
    "TransformerEmbeddingSource",
    "Vectors",
    "build_static_table",
    "l2_normalize",
    "select_source",
    "static_table_path",
    "tokenizer_available",
    "transformers_available",
    "validate_endpoint_url",
]
