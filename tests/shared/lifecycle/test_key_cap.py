"""The per-key cap (count and bytes) on a real migrated store: the least relevant memories of
the whole key (all end users) go first, until both limits hold; no cap → nothing happens."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from shared.lifecycle.key_cap import enforce_key_cap
from shared.models import NewMemory
from shared.settings import Settings, load_settings
from shared.store import Store


@pytest.fixture
async def env(tmp_path) -> AsyncIterator[tuple[Store, Settings]]:
    settings = load_settings({}, db_path=str(tmp_path / "cap.db"))
    store = await Store.open(settings.db_path)
    yield store, settings
    await store.close()


async def fill(store: Store, owner: str) -> None:
    for i, relevance in enumerate((0.9, 0.1, 0.5, 0.3)):
        await store.writes.upsert(
            NewMemory(
                owner_id=owner,
                user_id="alice" if i % 2 else "",
                content=f"memory number {i} " + "x" * 100,
                relevance=relevance,
            )
        )


async def relevances(store: Store, owner: str) -> list[float]:
    items, _ = await store.memories.list(owner_id=owner, limit=100)
    return sorted(m.relevance for m in items)


async def test_count_cap_evicts_the_least_relevant_key_wide(env: tuple[Store, Settings]) -> None:
    store, settings = env
    key, _secret = await store.keys.create("k")
    await fill(store, key.id)
    assert await enforce_key_cap(store, settings, key.id, time.time()) == []  # no cap yet
    await store.keys.update(key.id, {"max_memories": 2})
    evicted = await enforce_key_cap(store, settings, key.id, time.time())
    assert len(evicted) == 2
    assert await relevances(store, key.id) == [0.5, 0.9]


async def test_byte_cap(env: tuple[Store, Settings]) -> None:
    store, settings = env
    key, _secret = await store.keys.create("k")
    await fill(store, key.id)
    total = (await store.key_cap.totals(key.id))[1]
    await store.keys.update(key.id, {"max_bytes": total - 1})
    assert len(await enforce_key_cap(store, settings, key.id, time.time())) == 1
    assert await relevances(store, key.id) == [0.3, 0.5, 0.9]
    assert (await store.key_cap.totals(key.id))[1] <= total - 1
