"""An owner whose delta outgrew its bound is rebuilt in the background, never dropped.

The index in use keeps answering (same object, every write seen) until the rebuilt one is swapped
in; the rebuilt one holds every memory, including writes committed while it was built, and keeps
the old index's prepared features of the memories that did not change.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from shared.errors import StoreError
from shared.memory_render import MemoryPreparer
from shared.models import NewMemory, Scope
from shared.recall_index import KeywordIndex, build_keyword_index
from shared.recall_index.owner import REBUILD_MIN
from shared.settings import load_settings
from shared.store import Store
from shared.store.memories import KeywordSearch

SCOPE = Scope(owner_id="o1")
OWNER = 4000
BATCH = 40  # below the mass-change bound: applied to the delta one write at a time


OTHER_MAX = REBUILD_MIN // 2
"""The other writer's total: its catch-up alone never outgrows the new index's delta bound, so
exactly one rebuild runs however slowly the build goes (a second would start past the bound)."""


class OtherWriter:
    """Another connection writing batches of memories on its own thread until :meth:`stop`.

    It writes at most :data:`OTHER_MAX` memories in all.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.texts: set[str] = set()
        self.batches = 0
        self.retries = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.thread.start()

    async def _run(self) -> None:
        store = await Store.open(self.path)
        try:
            n = 0
            while not self.done.is_set() and n < OTHER_MAX:
                try:
                    self.texts |= await write(store, 100_000 + n, 10)
                except StoreError:  # busy past the timeout on a loaded machine: a worker's job
                    self.retries += 1  # is retried, and so is this batch
                    assert self.retries <= 5, "the other writer could not write"
                    continue
                n += 10
                self.batches += 1
        finally:
            await store.close()

    def stop(self) -> set[str]:
        """Stop writing; the texts written."""
        self.done.set()
        self.thread.join(timeout=120)
        assert not self.thread.is_alive()
        return self.texts


async def found(index: KeywordIndex, word: str) -> set[str]:
    hits = await index.search(KeywordSearch(scope=SCOPE, query=word, limit=10_000, now=2e9))
    return {m.content for m, _ in hits}


async def write(store: Store, start: int, n: int) -> set[str]:
    texts = [f"walrus note {i}" for i in range(start, start + n)]
    await store.writes.upsert_many([NewMemory(owner_id="o1", content=t) for t in texts])
    return set(texts)


async def test_a_rebuild_swaps_in_a_full_index_while_the_old_one_answers(tmp_path: Path) -> None:
    path = str(tmp_path / "r.db")
    store = await Store.open(path)
    index = build_keyword_index(
        load_settings({}, db_path=path), store, prepare=MemoryPreparer(None)
    )
    try:
        # large enough that the build outlasts the writes below (they land during it)
        expected = await write(store, 0, OWNER)
        assert await found(index, "walrus") == expected
        await index.cache.settle()  # prepared in the background, snapshot stored
        old = index.cache.owners["o1"]
        kept = old.prepared_of([old.segment.memories[0]], MemoryPreparer(None).fingerprint)
        assert kept, "the loaded owner was prepared"
        loads = index.cache.loads
        written = 0
        while not index.cache.rebuilding:  # past the delta bound: a rebuild starts
            expected |= await write(store, OWNER + written, BATCH)
            written += BATCH
            assert await found(index, "walrus") == expected
            assert written <= 4 * REBUILD_MIN, "no rebuild started"
        # the index in use is still cached and answers while the new one is built; another
        # connection writes all along, so writes commit during the build and are caught up
        assert index.cache.owners["o1"] is old
        other = OtherWriter(path)
        try:
            deadline = time.monotonic() + 120
            while index.cache.owners["o1"] is old:
                assert time.monotonic() < deadline, "the rebuilt index was never swapped in"
                await found(index, "walrus")
                await asyncio.sleep(0.005)
        finally:
            expected |= other.stop()
        assert other.batches, "the other connection wrote nothing during the build"
        await asyncio.wait_for(index.cache.settle(), 120)
        new = index.cache.owners["o1"]
        assert new is not old and index.cache.loads == loads + 1
        assert await found(index, "walrus") == expected
        assert new.size == len(expected)  # live documents: re-applied ones count once
        assert len(new.delta) < len(expected) - OWNER  # the catch-up only, not the churn
        # unchanged memories keep the very features prepared for the old index
        first = new.segment.memories[new.segment.pos_of[old.segment.memories[0].id]]
        carried = new.prepared_of([first], MemoryPreparer(None).fingerprint)
        assert carried[first.id] is kept[first.id]
    finally:
        await index.close()
        await store.close()


async def test_a_delete_during_a_rebuild_is_honoured_by_the_new_index(tmp_path: Path) -> None:
    path = str(tmp_path / "d.db")
    store = await Store.open(path)
    index = build_keyword_index(load_settings({}, db_path=path), store)
    try:
        expected = await write(store, 0, 100)
        assert await found(index, "walrus") == expected
        written = 0
        while not index.cache.rebuilding:
            expected |= await write(store, 100 + written, BATCH)
            written += BATCH
            await found(index, "walrus")
        victims, _ = await store.memories.list(owner_id="o1", limit=5)
        for m in victims:
            await store.writes.delete(m.public_id)
            expected.discard(m.content)
        assert await found(index, "walrus") == expected  # the old index honours it at once
        await asyncio.wait_for(index.cache.settle(), 120)
        assert await found(index, "walrus") == expected  # and so does the rebuilt one
    finally:
        await index.close()
        await store.close()
