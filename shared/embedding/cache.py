"""An in-process LRU + TTL cache of embeddings, and a source wrapper that uses it.

Keys are ``(signature, sha256(text))``: vectors from different sources, models or dimensions
never mix, and the cache does not keep the texts themselves (memories can be sensitive).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from shared.embedding.base import EmbeddingSource, Vectors, empty_vectors
from shared.errors import ConfigurationError
from shared.metrics import note_embedding_cache

_Key = tuple[str, bytes]


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Least-recently-used cache with a time-to-live.

    For one process (not thread-safe; use it from one event loop).

    Args:
        max_entries: capacity (≥ 0; 0 stores nothing). Inserting beyond it evicts the least
            recently used entry (a hit counts as a use).
        ttl_s: seconds an entry stays valid after it was stored (> 0; ``math.inf`` = forever).
        clock: monotonic seconds; injectable for tests.

    Attributes:
        hits, misses: lookup counters since creation (expired entries count as misses).

    Raises:
        ConfigurationError: negative ``max_entries`` or non-positive ``ttl_s``.
    """

    def __init__(
        self, max_entries: int, ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_entries < 0:
            raise ConfigurationError("embedding cache size must be ≥ 0")
        if not ttl_s > 0 or math.isnan(ttl_s):
            raise ConfigurationError("embedding cache TTL must be > 0 seconds")
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self._clock = clock
        self._entries: OrderedDict[_Key, tuple[float, npt.NDArray[np.float32]]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, signature: str, text: str) -> npt.NDArray[np.float32] | None:
        """The cached vector (read-only, shape ``(dim,)``) or ``None``; refreshes its recency."""
        key = (signature, _digest(text))
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        expires_at, vec = entry
        if self._clock() >= expires_at:
            del self._entries[key]
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return vec

    def put(self, signature: str, text: str, vector: npt.NDArray[np.float32]) -> None:
        """Store a copy of ``vector`` (shape ``(dim,)``) for ``ttl_s`` seconds, evicting LRU."""
        if self.max_entries == 0:
            return
        key = (signature, _digest(text))
        vec = np.array(vector, dtype=np.float32, copy=True)
        vec.setflags(write=False)
        self._entries[key] = (self._clock() + self.ttl_s, vec)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry (counters are kept)."""
        self._entries.clear()


class CachedEmbeddingSource(EmbeddingSource):
    """``inner`` behind an :class:`EmbeddingCache`.

    Only the texts not cached are embedded, in one ``inner.embed`` call (duplicates within a call
    are embedded once).

    ``source``, ``model``, ``dim`` and ``signature`` are the inner source's.
    """

    def __init__(self, inner: EmbeddingSource, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache

    @property
    def source(self) -> str:  # type: ignore[override]
        """The wrapped source's kind."""
        return self.inner.source

    @property
    def model(self) -> str:  # type: ignore[override]
        """The wrapped source's model name."""
        return self.inner.model

    @property
    def min_similarity(self) -> float:  # type: ignore[override]
        """The wrapped source's calibrated similarity floor."""
        return self.inner.min_similarity

    @property
    def dim(self) -> int:  # type: ignore[override]
        """The wrapped source's dimension (0 until a remote source has answered once)."""
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """See :meth:`EmbeddingSource.embed`; errors of the inner source propagate."""
        if not texts:
            return empty_vectors(self.inner.dim)
        known = self.inner.dim > 0
        signature = self.inner.signature
        found: dict[int, npt.NDArray[np.float32]] = {}
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            vec = self.cache.get(signature, text) if known else None
            if vec is None:
                missing.setdefault(text, []).append(i)
            else:
                found[i] = vec
        note_embedding_cache(len(found), len(texts) - len(found))
        if not missing:
            return np.stack([found[i] for i in range(len(texts))])
        miss_texts = list(missing)
        fresh = await self.inner.embed(miss_texts)
        signature = self.inner.signature  # a remote source may have just learned its dim
        out = np.empty((len(texts), fresh.shape[1]), dtype=np.float32)
        for i, vec in found.items():
            out[i] = vec
        for row, text in enumerate(miss_texts):
            self.cache.put(signature, text, fresh[row])
            out[missing[text]] = fresh[row]
        return out

    def __repr__(self) -> str:
        return f"<CachedEmbeddingSource {self.inner!r}>"
