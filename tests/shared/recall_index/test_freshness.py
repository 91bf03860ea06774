"""Freshness of the recall cache: a write committed by ANOTHER connection (another process in
production: a worker, a second gateway, an admin import) before a recall starts is seen by that
recall, however recently the cache last read the change feed.

The other connection is a real :class:`Store` on its own thread and event loop. Its write runs
while this test's event loop is blocked waiting for it, so the cache's background watcher cannot
notice the write before the recall starts: the recall itself must find it. The freshness window
is the largest the settings allow (1 s), so every recall here starts well inside it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from shared.models import NewMemory, Scope
from shared.recall_index import KeywordIndex, build_keyword_index
from shared.settings import load_settings
from shared.store import Store
from shared.store.memories import KeywordSearch, Retention

T = TypeVar("T")
SCOPE = Scope(owner_id="o1")


class OtherConnection:
    """A :class:`Store` on its own thread and loop; :meth:`call` blocks the caller's loop."""

    def __init__(self, path: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.store: Store = self.call(Store.open(path))

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.call(self.store.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


async def contents(index: KeywordIndex, word: str) -> set[str]:
    hits = await index.search(KeywordSearch(scope=SCOPE, query=word, limit=100, now=2e9))
    return {m.content for m, _ in hits}


async def test_a_write_of_another_connection_is_seen_by_the_next_recall(tmp_path: Path) -> None:
    path = str(tmp_path / "f.db")
    store = await Store.open(path)
    index = build_keyword_index(load_settings({}, db_path=path, recall_freshness_ms=1000), store)
    other = OtherConnection(path)
    try:
        await store.writes.upsert(NewMemory(owner_id="o1", content="zebra zero"))
        assert await contents(index, "zebra") == {"zebra zero"}  # warm: owner loaded, feed read
        # the owner's snapshot is written in the background after that load: let it commit
        # before this loop is blocked below (an open write would lock the other connection out)
        await index.cache.settle()
        expected = {"zebra zero"}
        for n in range(1, 21):
            # blocks this loop: no feed read can happen between the commit and the recall
            other.call(other.store.writes.upsert(NewMemory(owner_id="o1", content=f"zebra {n}")))
            expected.add(f"zebra {n}")
            assert await contents(index, "zebra") == expected, f"write {n} not seen"
        memory = other.call(other.store.writes.upsert(NewMemory(owner_id="o1", content="yak")))[0]
        assert await contents(index, "yak") == {"yak"}
        other.call(other.store.writes.delete(memory.public_id))
        assert await contents(index, "yak") == set()  # a delete elsewhere: honoured at once
    finally:
        other.close()
        await index.close()
        await store.close()


async def test_access_counters_are_seen_without_a_content_change(tmp_path: Path) -> None:
    # an access refreshes an old episodic memory's retention; the cheap probe of the feed skips
    # access-counter changes, so without the watcher's reads (and the probe's age bound,
    # ACCESS_LAG_S) they lagged until the next content change: here no content ever changes
    now, day = 1_700_000_000.0, 86_400.0
    keep = Retention(ttl_s={"episodic": 10 * day}, access_immunity=5)
    path = str(tmp_path / "a.db")
    store = await Store.open(path)
    index = build_keyword_index(load_settings({}, db_path=path, recall_freshness_ms=0), store)
    other = OtherConnection(path)

    async def visible() -> set[str]:
        search = KeywordSearch(scope=SCOPE, query="quokka", limit=10, now=now, retention=keep)
        return {m.content for m, _ in await index.search(search)}

    async def seen_soon() -> set[str]:
        for _ in range(3000):  # 30 s at least: the watcher reads within ms of the commit
            if found := await visible():
                return found
            await asyncio.sleep(0.01)
        return set()

    try:
        old, _ = await store.writes.upsert(
            NewMemory(owner_id="o1", content="quokka island trip", type="episodic"),
            now=now - 20 * day,
        )
        assert await visible() == set()  # past its TTL, never accessed
        await index.cache.settle()
        # blocks this loop: the watcher cannot read the feed before the first recall
        other.call(other.store.memories.record_access([old.id], now))
        assert await seen_soon() == {"quokka island trip"}
    finally:
        other.close()
        await index.close()
        await store.close()


async def test_a_large_access_batch_reaches_every_memory(tmp_path: Path) -> None:
    # more access changes than a feed read applies itself (TOUCH_INLINE): they are applied in
    # background slices (TOUCH_SLICE), and every one of them still arrives
    now, day = 1_700_000_000.0, 86_400.0
    keep = Retention(ttl_s={"episodic": 10 * day}, access_immunity=5)
    path = str(tmp_path / "b.db")
    store = await Store.open(path)
    index = build_keyword_index(load_settings({}, db_path=path, recall_freshness_ms=0), store)
    other = OtherConnection(path)
    items = [
        NewMemory(owner_id="o1", content=f"quokka note {n}", type="episodic") for n in range(1200)
    ]
    search = KeywordSearch(scope=SCOPE, query="quokka", limit=2000, now=now, retention=keep)
    try:
        written = await store.writes.upsert_many(items, now=now - 20 * day)
        assert await index.search(search) == []  # all past their TTL
        await index.cache.settle()
        other.call(other.store.memories.record_access([m.id for m, _ in written], now))
        for _ in range(6000):  # 60 s at least
            if len(found := await index.search(search)) == len(items):
                break
            await asyncio.sleep(0.01)
        assert {m.content for m, _ in found} == {i.content for i in items}
        assert all(m.access_count == 1 for m, _ in found)  # the records' counters too
    finally:
        other.close()
        await index.close()
        await store.close()
