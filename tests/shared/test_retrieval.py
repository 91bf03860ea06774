"""Keyword leg of recall against a real store: the document-frequency stop list."""

from __future__ import annotations

import time

import pytest

from shared.models import NewMemory, Scope
from shared.retrieval import keyword_candidates
from shared.store import Store


@pytest.fixture
async def store(tmp_path):
    s = await Store.open(str(tmp_path / "r.db"))
    items = [NewMemory(owner_id="o", content=f"common filler text number {i}") for i in range(60)]
    items += [
        NewMemory(owner_id="o", content="common thing about zeppelins"),
        NewMemory(owner_id="o", content="common filler about gliders"),
    ]
    await s.writes.upsert_many(items)
    yield s
    await s.close()


async def search(store, query, common_df):
    cands, mems = await keyword_candidates(
        store.memories,
        Scope(owner_id="o"),
        query,
        limit=100,
        now=time.time(),
        retention=None,
        common_df=common_df,
    )
    return [mems[c.memory_id].content for c in cands]


async def test_common_terms_are_dropped_when_rarer_ones_exist(store):
    full = await search(store, "common zeppelins", common_df=0)
    assert len(full) == 62  # "common" matches everything
    pruned = await search(store, "common zeppelins", common_df=50)
    assert pruned == ["common thing about zeppelins"]


async def test_all_common_terms_are_and_ed(store):
    results = await search(store, "common filler", common_df=50)
    assert len(results) == 61  # only memories with both terms, not the zeppelin one
    assert "common thing about zeppelins" not in results


async def test_single_term_queries_are_never_pruned(store):
    assert len(await search(store, "common", common_df=50)) == 62
