"""Hybrid CombSUM over one candidate pool, through ``shared.retrieval.recall`` and a real engine.

The query is embedded by the fake upstream's ``/v1/embeddings`` (a real HTTP server); the
memories' vectors are written into sqlite-vec with chosen cosines to it, so the test controls both
legs exactly: two keyword hits (K1 the better BM25 match, K2 far more similar to the query) and two
vector-only hits that fill the vector leg's top k, leaving both keyword hits outside it. Scored by
its own cosine (``recall_fusion_score_all``), K2 overtakes K1; counted as 0 on the vector side (the
previous behaviour, the setting off) it cannot.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import numpy as np
import pytest

from shared.engine import Engine, build_engine, record_of
from shared.models import NewMemory, Scope
from shared.retrieval import recall, retention_of
from shared.settings import Settings, load_settings
from shared.store import Store
from tests.fakes.upstream import hashed_embedding

DIM = 32
QUERY = "zebra"
COSINES = {
    "zebra zebra stripes": 0.1,  # K1: tf 2, the best BM25
    "zebra stripes": 0.6,  # K2: tf 1, far closer to the query
    "savanna at dusk": 0.9,  # vector only
    "grass and wind": 0.8,  # vector only
}


def _with_cosine(query: np.ndarray, cosine: float, seed: int) -> np.ndarray:
    """A unit vector whose cosine with the unit ``query`` is exactly ``cosine``."""
    other = np.random.default_rng(seed).standard_normal(len(query))
    other -= (other @ query) * query
    other /= np.linalg.norm(other)
    return (cosine * query + np.sqrt(1 - cosine**2) * other).astype(np.float32)


def _settings(db: str, base_url: str, **overrides: object) -> Settings:
    return load_settings(
        {},
        db_path=db,
        retrieval_strategy="hybrid",
        embedding_source="remote",
        embedding_base_url=base_url,
        embedding_model="fake-embed",
        embedding_dim=DIM,
        embedding_timeout_s=30.0,
        vector_min_similarity=0.1,
        recall_top_k=2,
        **overrides,
    )


@pytest.fixture
async def world(tmp_path, upstream) -> AsyncIterator[tuple[Store, Engine, str, str]]:
    upstream.embedding_dim = DIM
    db = str(tmp_path / "h.db")
    store = await Store.open(db)
    http = httpx.AsyncClient()
    settings = _settings(db, upstream.base_url)
    engine = build_engine(settings, store, http, retention_of(settings))
    await engine.warm_up()
    assert engine.embedder is not None
    query = np.asarray(hashed_embedding(QUERY, DIM), dtype=np.float32)
    written = [
        m
        for m, _ in await store.writes.upsert_many(
            [NewMemory(owner_id="o", content=t) for t in COSINES]
        )
    ]
    await engine.sqlite_vec.ensure(DIM, engine.embedder.signature)
    await engine.sqlite_vec.upsert(
        [
            record_of(m, _with_cosine(query, COSINES[m.content], seed))
            for seed, m in enumerate(written)
        ]
    )
    yield store, engine, db, upstream.base_url
    await engine.close()
    await http.aclose()
    await store.close()


async def _recalled(world: tuple[Store, Engine, str, str], **overrides: object) -> list[str]:
    store, engine, db, base_url = world
    result = await recall(
        store.memories,
        Scope(owner_id="o"),
        QUERY,
        _settings(db, base_url, **overrides),
        time.time(),
        engine,
    )
    assert result.tier == "hybrid"
    return [m.content for m in result.memories]


async def test_a_keyword_hit_outside_the_vector_top_k_counts_its_own_cosine(world) -> None:
    scored_all = await _recalled(world)
    assert scored_all[0] == "zebra stripes", scored_all
    assert set(scored_all) == set(COSINES)
    legs_only = await _recalled(world, recall_fusion_score_all=False)
    assert legs_only[0] == "zebra zebra stripes", legs_only


async def test_rrf_ignores_the_candidate_cosines(world) -> None:
    ranked = await _recalled(world, recall_fusion="rrf")
    assert ranked == await _recalled(world, recall_fusion="rrf", recall_fusion_score_all=False)


async def test_a_vector_leg_past_its_deadline_leaves_the_keyword_hits(world, upstream) -> None:
    # under overload the query embedding queues longest: past the vector deadline recall answers
    # from the keyword leg (degraded, but with memories) instead of losing the whole recall
    store, engine, db, base_url = world
    upstream.embeddings_delay_s = 5.0  # far past the deadline
    deadline = asyncio.get_running_loop().time() + 0.2
    result = await recall(
        store.memories,
        Scope(owner_id="o"),
        "stripes",  # not embedded before: no cached vector
        _settings(db, base_url),
        time.time(),
        engine,
        vector_deadline=deadline,
    )
    assert result.degraded == "vector_timeout"
    assert {m.content for m in result.memories} == {"zebra zebra stripes", "zebra stripes"}
