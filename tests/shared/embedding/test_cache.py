"""EmbeddingCache (LRU + TTL) and CachedEmbeddingSource."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from shared.embedding import CachedEmbeddingSource, EmbeddingCache, EmbeddingSource, Vectors
from shared.embedding.base import l2_normalize
from shared.errors import ConfigurationError


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingSource(EmbeddingSource):
    """A deterministic source that records every batch it is asked to embed."""

    source = "static"
    model = "counting"

    def __init__(self, dim: int = 4) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        rows = [
            [len(t) + 1.0, sum(map(ord, t)) % 7 + 1.0, 1.0, float(i % 2)]
            for i, t in enumerate(texts)
        ]
        return l2_normalize(np.array([r[: self.dim] for r in rows], dtype=np.float32))


def vec(x: float) -> np.ndarray:
    return np.array([x, 0.0], dtype=np.float32)


def test_get_put_and_counters() -> None:
    cache = EmbeddingCache(max_entries=10, ttl_s=60)
    assert cache.get("s", "a") is None
    cache.put("s", "a", vec(1))
    got = cache.get("s", "a")
    assert got is not None and got[0] == 1
    assert cache.get("other-signature", "a") is None
    assert (cache.hits, cache.misses) == (1, 2)


def test_stored_vectors_are_copies_and_read_only() -> None:
    cache = EmbeddingCache(10, 60)
    v = vec(1)
    cache.put("s", "a", v)
    v[0] = 99
    got = cache.get("s", "a")
    assert got is not None and got[0] == 1
    with pytest.raises(ValueError):
        got[0] = 5


def test_lru_eviction_order() -> None:
    cache = EmbeddingCache(max_entries=3, ttl_s=60)
    for i, t in enumerate("abc"):
        cache.put("s", t, vec(i))
    assert cache.get("s", "a") is not None  # a is now most recent: order b, c, a
    cache.put("s", "d", vec(3))  # evicts b
    assert cache.get("s", "b") is None
    cache.put("s", "e", vec(4))  # evicts c
    assert cache.get("s", "c") is None
    assert [cache.get("s", t) is not None for t in "ade"] == [True, True, True]
    assert len(cache) == 3


def test_put_existing_key_refreshes_recency() -> None:
    cache = EmbeddingCache(max_entries=2, ttl_s=60)
    cache.put("s", "a", vec(0))
    cache.put("s", "b", vec(1))
    cache.put("s", "a", vec(2))  # a most recent again
    cache.put("s", "c", vec(3))  # evicts b
    assert cache.get("s", "b") is None
    got = cache.get("s", "a")
    assert got is not None and got[0] == 2


def test_ttl_expiry_with_injected_clock() -> None:
    clock = FakeClock()
    cache = EmbeddingCache(max_entries=10, ttl_s=30, clock=clock)
    cache.put("s", "a", vec(1))
    clock.now += 29.9
    assert cache.get("s", "a") is not None
    clock.now += 0.1
    assert cache.get("s", "a") is None
    assert len(cache) == 0
    assert (cache.hits, cache.misses) == (1, 1)


def test_zero_capacity_and_infinite_ttl() -> None:
    none = EmbeddingCache(max_entries=0, ttl_s=60)
    none.put("s", "a", vec(1))
    assert len(none) == 0
    forever = EmbeddingCache(max_entries=1, ttl_s=math.inf)
    forever.put("s", "a", vec(1))
    assert forever.get("s", "a") is not None


@pytest.mark.parametrize(("size", "ttl"), [(-1, 60), (10, 0), (10, -1), (10, math.nan)])
def test_invalid_configuration(size: int, ttl: float) -> None:
    with pytest.raises(ConfigurationError):
        EmbeddingCache(size, ttl)


async def test_cached_source_embeds_only_misses() -> None:
    inner = CountingSource()
    src = CachedEmbeddingSource(inner, EmbeddingCache(100, 60))
    assert src.signature == inner.signature == "static:counting:4"
    first = await src.embed(["a", "bb"])
    second = await src.embed(["bb", "ccc", "a", "dddd", "ccc"])
    assert inner.calls == [["a", "bb"], ["ccc", "dddd"]]
    assert second.shape == (5, 4) and second.dtype == np.float32
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    np.testing.assert_array_equal(second[1], second[4])
    third = await src.embed(["dddd", "a"])
    assert len(inner.calls) == 2
    np.testing.assert_array_equal(third[0], second[3])
    assert src.cache.hits == 2 + 2 and src.cache.misses == 2 + 3


async def test_cached_source_keys_by_signature() -> None:
    cache = EmbeddingCache(100, 60)
    a, b = CountingSource(dim=4), CountingSource(dim=3)
    await CachedEmbeddingSource(a, cache).embed(["x"])
    out = await CachedEmbeddingSource(b, cache).embed(["x"])
    assert out.shape == (1, 3)
    assert len(b.calls) == 1


async def test_cached_source_empty() -> None:
    inner = CountingSource()
    out = await CachedEmbeddingSource(inner, EmbeddingCache(10, 60)).embed([])
    assert out.shape == (0, 4) and inner.calls == []
