"""Authentication answers remembered per process never outlive a change to the key.

A revoke or update through the same store is honoured at once; one through another connection
(another process's view of the same file) at the next lookup, because it commits to the
write-ahead log that the remembered answer was read under.
"""

from __future__ import annotations

import pytest

from shared.store import Store


@pytest.fixture
async def stores(tmp_path):
    path = str(tmp_path / "k.db")
    first = await Store.open(path)
    second = await Store.open(path, run_migrations=False)
    yield first, second
    await second.close()
    await first.close()


async def test_a_revoke_here_is_honoured_at_once(stores):
    store, _ = stores
    key, secret = await store.keys.create("a")
    assert (await store.keys.authenticate(secret)) == key
    assert (await store.keys.authenticate(secret)) == key  # remembered
    assert await store.keys.revoke(key.id)
    assert await store.keys.authenticate(secret) is None


async def test_a_change_by_another_connection_is_honoured_at_the_next_lookup(stores):
    store, other = stores
    key, secret = await store.keys.create("a")
    assert (await store.keys.authenticate(secret)) == key
    updated = await other.keys.update(key.id, {"recall_enabled": False})
    assert updated is not None and updated.recall_enabled is False
    assert await store.keys.authenticate(secret) == updated
    assert await other.keys.revoke(key.id)
    assert await store.keys.authenticate(secret) is None


async def test_an_unknown_secret_created_elsewhere_is_found(stores):
    store, other = stores
    assert await store.keys.authenticate("mg-unknown") is None
    key, secret = await other.keys.create("b")
    assert await store.keys.authenticate(secret) == key
    assert await store.keys.authenticate("mg-unknown") is None
