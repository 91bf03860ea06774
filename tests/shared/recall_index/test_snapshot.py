"""Owner snapshots: a cold load from a snapshot answers exactly as the index it was taken from.

Real store file, real writes through the store's write paths. A first index builds the owner from
its rows and stores a snapshot; later writes (new memories, expiry changes, access counters) are
applied from the change feed by the warm index, and by a second index loaded cold from the
snapshot: both must return the same memories with bit-identical scores in the same order. Every
delete or text change of an owner's memory drops its snapshot (no deleted text at rest), a
snapshot is never stored over a newer change of its owner, and a snapshot that does not decode
falls back to the rows.
"""

from __future__ import annotations

import time
from pathlib import Path

from shared.models import MemoryChanges, NewMemory, Scope
from shared.recall_index import KeywordIndex, build_keyword_index
from shared.recall_index import snapshot as snap
from shared.recall_index.loading import SNAPSHOT_LAG
from shared.settings import Settings, load_settings
from shared.store import Store, recall_rows
from shared.store.memories import KeywordSearch

TEXTS = [
    "Caroline went to the LGBTQ support group on Tuesday",
    "Melanie painted a sunrise over the lake last summer",
    "Caroline is researching adoption agencies",
    "Melanie ran a charity race for mental health",
    "Caroline and Melanie went camping in the mountains",
]
QUERIES = ["support group Caroline", "Melanie sunrise lake", "camping mountains", "charity race"]


async def _seed(store: Store, n: int) -> None:
    items = [
        NewMemory(
            owner_id="o1",
            user_id=["", "u1", "u2"][i % 3],
            session_id=[None, "s1"][i % 2],
            content=f"{TEXTS[i % len(TEXTS)]} (note {i}, {'extra words ' * (i % 4)})",
        )
        for i in range(n)
    ]
    await store.writes.upsert_many(items)


async def answers(index: KeywordIndex, now: float) -> list[list[tuple[int, float]]]:
    """What ``index`` returns (ids and scores) for :data:`QUERIES` in two scopes of owner o1."""
    out = []
    for who in (Scope(owner_id="o1"), Scope(owner_id="o1", user_id="u1", session_id="s1")):
        for q in QUERIES:
            hits = await index.search(KeywordSearch(scope=who, query=q, limit=7, now=now))
            out.append([(m.id, score) for m, score in hits])
    return out


async def _open(tmp_path: Path) -> tuple[Store, Settings]:
    db = str(tmp_path / "s.db")
    return await Store.open(db), load_settings({}, db_path=db, recall_freshness_ms=0)


async def test_cold_load_from_snapshot_answers_like_the_warm_index(tmp_path: Path) -> None:
    store, config = await _open(tmp_path)
    now = time.time()
    await _seed(store, 60)
    warm = build_keyword_index(config, store)
    cold = build_keyword_index(config, store)
    try:
        before = await answers(warm, now)
        assert not warm.cache.owners["o1"].from_snapshot
        await warm.cache.settle()
        stored = await recall_rows.load_snapshot(store.reader, "o1")
        assert stored is not None and stored[1] == snap.FORMAT
        await store.writes.upsert(NewMemory(owner_id="o1", content="Caroline support group again"))
        rows = list(await store.reader.execute_fetchall("SELECT id, public_id FROM memories"))
        await store.admin.update(rows[3][1], ["o1"], MemoryChanges(expires_at=now - 1), now)
        await store.writes.record_access([rows[5][0]], now)
        assert await recall_rows.load_snapshot(store.reader, "o1") is not None
        after = await answers(warm, now)
        assert after != before
        assert await answers(cold, now) == after
        assert cold.cache.owners["o1"].from_snapshot
    finally:
        await warm.close()
        await cold.close()
        await store.close()


async def test_delete_or_text_change_drops_the_snapshot(tmp_path: Path) -> None:
    store, config = await _open(tmp_path)
    now = time.time()
    await _seed(store, 20)
    index = build_keyword_index(config, store)
    try:
        await answers(index, now)
        await index.cache.settle()
        rows = list(await store.reader.execute_fetchall("SELECT id, public_id FROM memories"))
        assert await recall_rows.load_snapshot(store.reader, "o1") is not None
        await store.writes.delete(rows[0][1])
        assert await recall_rows.load_snapshot(store.reader, "o1") is None
        cold = build_keyword_index(config, store)
        hits = await answers(cold, now)
        assert rows[0][0] not in {i for answer in hits for i, _ in answer}
        assert not cold.cache.owners["o1"].from_snapshot
        await cold.cache.settle()
        assert await recall_rows.load_snapshot(store.reader, "o1") is not None
        await store.admin.update(rows[1][1], ["o1"], MemoryChanges(content="changed text"), now)
        assert await recall_rows.load_snapshot(store.reader, "o1") is None
        await cold.close()
    finally:
        await index.close()
        await store.close()


async def test_snapshot_is_not_stored_over_a_newer_change(tmp_path: Path) -> None:
    store, _ = await _open(tmp_path)
    await _seed(store, 3)
    seq = await recall_rows.feed_head(store.reader)
    await store.writes.upsert(NewMemory(owner_id="o1", content="newer"))
    assert not await recall_rows.save_snapshot(store.writer, "o1", seq, snap.FORMAT, b"x")
    assert await recall_rows.save_snapshot(store.writer, "o2", seq, snap.FORMAT, b"x")
    await store.close()


async def test_undecodable_snapshot_falls_back_to_rows(tmp_path: Path) -> None:
    store, config = await _open(tmp_path)
    now = time.time()
    await _seed(store, 10)
    reference = build_keyword_index(config, store)
    expected = await answers(reference, now)
    await reference.cache.settle()
    await reference.close()
    seq = await recall_rows.feed_head(store.reader)
    assert await recall_rows.save_snapshot(store.writer, "o1", seq, snap.FORMAT, b"\x93garbage")
    index = build_keyword_index(config, store)
    assert await answers(index, now) == expected
    assert not index.cache.owners["o1"].from_snapshot
    await index.close()
    await store.close()


async def test_access_counters_alone_never_make_a_snapshot_too_old(tmp_path: Path) -> None:
    # every recall logs one access change per recalled memory: counting them against the
    # snapshot's lag made a busy owner's snapshot useless after ~2,000 requests, so every restart
    # rebuilt the owner from its rows and prepared it again
    store, config = await _open(tmp_path)
    await _seed(store, 50)
    warm = build_keyword_index(config, store)
    try:
        now = time.time()
        await answers(warm, now)
        await warm.cache.settle()  # the snapshot is stored
        listed, _ = await store.memories.list(owner_id="o1", limit=50)
        ids = [m.id for m in listed]
        rounds = SNAPSHOT_LAG // len(ids) + 5
        for i in range(rounds):
            await store.memories.record_access(ids, now + i)
        cold = build_keyword_index(config, store)
        try:
            got = await answers(cold, now)
            assert cold.cache.owners["o1"].from_snapshot
            assert got == await answers(warm, now)
            held = cold.cache.owners["o1"].lookup(ids[:1])[ids[0]]
            assert held.access_count == rounds  # the counters were caught up from the feed
        finally:
            await cold.close()
    finally:
        await warm.close()
        await store.close()


async def test_a_memory_written_after_the_snapshot_rows_does_not_block_the_store(
    tmp_path: Path,
) -> None:
    # the request that loads a cold owner learns a new turn while the snapshot is written: a
    # higher rowid cannot touch the snapshot's text, so the store goes ahead; an edit of a memory
    # the snapshot holds still blocks it (its old text must not come back at rest)
    store, _ = await _open(tmp_path)
    await _seed(store, 3)
    seq = await recall_rows.feed_head(store.reader)
    rows = await store.reader.execute_fetchall(
        "SELECT id, public_id FROM memories WHERE owner_id = 'o1' ORDER BY id DESC LIMIT 1"
    )
    top, public = next(iter(rows))
    await store.writes.upsert(NewMemory(owner_id="o1", content="learned meanwhile"))
    assert await recall_rows.save_snapshot(store.writer, "o1", seq, snap.FORMAT, b"x", max_id=top)
    assert not await recall_rows.save_snapshot(store.writer, "o1", seq, snap.FORMAT, b"x")
    await store.writes.record_access([top], 1.0)  # access counters never block
    assert await recall_rows.save_snapshot(store.writer, "o1", seq, snap.FORMAT, b"x", max_id=top)
    await store.admin.update(
        public, ["o1"], MemoryChanges(content="edited after the snapshot"), time.time()
    )
    assert not await recall_rows.save_snapshot(
        store.writer, "o1", seq, snap.FORMAT, b"x", max_id=top
    )
    await store.close()
