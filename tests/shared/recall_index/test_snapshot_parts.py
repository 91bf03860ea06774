"""Snapshots stored in parts, and the chunked load from rows.

Real store file, real writes through the store's write paths. A snapshot split into many parts
loads back byte for byte and answers like the warm index; a missing or corrupt part makes the
cold load rebuild from the rows (same answers); a delete after the snapshot drops every part and
the deleted memory is never recalled; a snapshot waiting for another writer never holds feed
reads; the owner's rows read in chunks are every row once, in rowid order; analysing rows chunk
by chunk gives exactly the postings, frequencies, lengths and columns of a one-shot analysis.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np
import sqlean

from shared.models import NewMemory, Scope
from shared.recall_index import KeywordIndex, bm25_params, build_keyword_index
from shared.recall_index import snapshot as snap
from shared.recall_index.builder import SegmentBuilder, analyse_rows
from shared.recall_index.cache import OwnerCache
from shared.recall_index.feed import SqliteSource
from shared.recall_index.segment import SegmentData
from shared.settings import Settings, load_settings
from shared.store import Store, recall_rows
from shared.store.connection import transaction
from shared.store.memories import KeywordSearch
from tests.shared.recall_index.test_snapshot import answers

TEXTS = [
    "Caroline went to the LGBTQ support group on Tuesday",
    "Melanie painted a sunrise over the lake last summer",
    "Caroline is researching adoption agencies in the café",
    "Melanie ran a charity race for mental health",
    "Caroline and Melanie went camping in the mountains",
]
Answers = list[list[tuple[int, float]]]


async def _open(tmp_path: Path, n: int) -> tuple[Store, Settings]:
    db = str(tmp_path / "p.db")
    store = await Store.open(db)
    await store.writes.upsert_many(
        [
            NewMemory(
                owner_id="o1",
                user_id=["", "u1", "u2"][i % 3],
                session_id=[None, "s1"][i % 2],
                content=f"{TEXTS[i % len(TEXTS)]} (note {i}, {'extra words ' * (i % 4)})",
                context="" if i % 3 else f"earlier: {TEXTS[(i + 1) % len(TEXTS)]}",
            )
            for i in range(n)
        ]
    )
    await store.writes.upsert(NewMemory(owner_id="o2", content="Caroline support group elsewhere"))
    return store, load_settings({}, db_path=db, recall_freshness_ms=0)


async def _one(store: Store, sql: str, *params: object) -> Any:
    """The first column of the first row of ``sql``."""
    rows = list(await store.reader.execute_fetchall(sql, params))
    return rows[0][0]


async def _stored_in_parts(
    store: Store, config: Settings, now: float
) -> tuple[list[list[tuple[int, float]]], int]:
    """Answers of a warm index, after its snapshot was re-stored in parts of 512 bytes."""
    warm = build_keyword_index(config, store)
    expected = await answers(warm, now)
    await warm.cache.settle()
    await warm.close()
    stored = await recall_rows.load_snapshot(store.reader, "o1")
    assert stored is not None
    seq, fmt, blob = stored
    assert await recall_rows.save_snapshot(
        store.writer, "o1", seq, fmt, bytes(blob), part_bytes=512
    )
    parts = await _one(store, "SELECT COUNT(*) FROM recall_snapshot_parts WHERE owner_id = 'o1'")
    again = await recall_rows.load_snapshot(store.reader, "o1")
    assert again is not None and bytes(again[2]) == bytes(blob)
    return expected, int(parts)


async def test_snapshot_in_parts_round_trips(tmp_path: Path) -> None:
    store, config = await _open(tmp_path, 80)
    now = time.time()
    try:
        expected, parts = await _stored_in_parts(store, config, now)
        assert parts > 3
        cold = build_keyword_index(config, store)
        assert await answers(cold, now) == expected
        assert cold.cache.owners["o1"].from_snapshot
        await cold.close()
    finally:
        await store.close()


async def test_missing_or_corrupt_part_rebuilds_from_rows(tmp_path: Path) -> None:
    store, config = await _open(tmp_path, 80)
    now = time.time()
    try:
        for damage in (
            "DELETE FROM recall_snapshot_parts WHERE owner_id = 'o1' AND part = 2",
            "UPDATE recall_snapshot_parts SET data = zeroblob(length(data)) "
            "WHERE owner_id = 'o1' AND part = 1",
        ):
            expected, _ = await _stored_in_parts(store, config, now)
            async with transaction(store.writer, notify=False):
                await store.writer.execute(damage)
            assert await recall_rows.load_snapshot(store.reader, "o1") is None
            cold = build_keyword_index(config, store)
            assert await answers(cold, now) == expected
            assert not cold.cache.owners["o1"].from_snapshot
            await cold.cache.settle()  # the load from rows stored a whole snapshot again
            await cold.close()
            assert await recall_rows.load_snapshot(store.reader, "o1") is not None
    finally:
        await store.close()


async def test_delete_after_snapshot_drops_every_part(tmp_path: Path) -> None:
    store, config = await _open(tmp_path, 80)
    now = time.time()
    try:
        expected, _ = await _stored_in_parts(store, config, now)
        victim = expected[0][0][0]
        public = await _one(store, "SELECT public_id FROM memories WHERE id = ?", victim)
        await store.writes.delete(public)
        sql = "SELECT COUNT(*) FROM recall_snapshot_parts WHERE owner_id = 'o1'"
        assert await _one(store, sql) == 0
        assert await recall_rows.load_snapshot(store.reader, "o1") is None
        cold = build_keyword_index(config, store)
        hits = await answers(cold, now)
        assert victim not in {i for answer in hits for i, _ in answer}
        assert hits[0]  # the query still finds the other memories
        await cold.close()
    finally:
        await store.close()


async def test_owner_rows_in_chunks_are_every_row_once(tmp_path: Path) -> None:
    store, _ = await _open(tmp_path, 50)
    try:
        ids: list[int] = []
        after = 0
        while chunk := await recall_rows.owner_rows(store.reader, "o1", after, 7):
            assert len(chunk) <= 7
            ids.extend(int(r[0]) for r in chunk)
            after = ids[-1]
        every = await store.reader.execute_fetchall(
            "SELECT id FROM memories WHERE owner_id = 'o1' ORDER BY id"
        )
        assert ids == [int(r[0]) for r in every] and len(ids) == 50
    finally:
        await store.close()


def _per_term(data: SegmentData) -> dict[str, tuple[list[int], list[float], list[float]]]:
    out = {}
    for t, term in enumerate(data.terms):
        s, e = int(data.term_start[t]), int(data.term_start[t + 1])
        out[term] = (
            data.post_doc[s:e].tolist(),
            data.tf_own[s:e].tolist(),
            data.tf_ctx[s:e].tolist(),
        )
    return out


async def test_chunked_analysis_equals_one_shot(tmp_path: Path) -> None:
    store, _ = await _open(tmp_path, 50)
    try:
        rows = recall_rows.decode_rows(await recall_rows.owner_rows(store.reader, "o1", 0, 1000))
    finally:
        await store.close()
    whole = analyse_rows(rows)
    builder = SegmentBuilder()
    for start in range(0, len(rows), 7):
        builder.add(rows[start : start + 7])
    chunked = builder.finish()
    assert _per_term(chunked) == _per_term(whole)
    assert sorted(chunked.terms) == sorted(whole.terms)
    assert np.array_equal(chunked.own_len, whole.own_len)
    assert np.array_equal(chunked.ctx_len, whole.ctx_len)
    assert chunked.users == whole.users and chunked.sessions == whole.sessions
    for name in whole.cols:
        assert np.array_equal(chunked.cols[name], whole.cols[name]), name
    assert [chunked.memories[i] for i in range(50)] == [r.memory for r in rows]
    assert snap.decode(snap.encode(chunked)) is not None


async def test_owner_above_the_cache_budget_is_still_answered(tmp_path: Path) -> None:
    store, config = await _open(tmp_path, 30)
    await store.writes.upsert(NewMemory(owner_id="global", content="Caroline support group rules"))
    now = time.time()
    cache = OwnerCache(
        SqliteSource(store.reader, store.path, writer=store.writer),
        bm25_params(config),
        budget_bytes=1,  # every owner is above the budget
    )
    index = KeywordIndex(cache)
    try:
        for owner in ("o1", "o2", "o1"):
            scope = Scope(owner_id=owner)
            hits = await index.search(
                KeywordSearch(scope=scope, query="support group", limit=5, now=now)
            )
            assert {m.owner_id for m, _ in hits} == {owner, "global"}
            # the owner just answered and the global partition stay; every other owner is evicted
            assert set(cache.owners) == {owner, "global"}
        assert cache.loads == 4  # o1, global, o2, o1 again (global never reloaded)
    finally:
        await index.close()
        await store.close()


async def test_parts_without_a_manifest_are_dropped_by_a_delete(tmp_path: Path) -> None:
    store, config = await _open(tmp_path, 40)
    now = time.time()
    try:
        await _stored_in_parts(store, config, now)
        # a save interrupted after its parts (e.g. a crash before the manifest)
        async with transaction(store.writer, notify=False):
            await store.writer.execute("DELETE FROM recall_snapshots WHERE owner_id = 'o1'")
            await store.writer.execute(
                "INSERT INTO recall_snapshot_parts (owner_id, part, data) VALUES ('o1', 0, 'x')"
            )
        sql = "SELECT COUNT(*) FROM recall_snapshot_parts WHERE owner_id = 'o1'"
        assert await _one(store, sql) == 1
        public = await _one(store, "SELECT public_id FROM memories WHERE owner_id = 'o1'")
        await store.writes.delete(public)
        assert await _one(store, sql) == 0
        # a save over a newer change leaves no part behind
        seq = await recall_rows.feed_head(store.reader) - 1
        assert not await recall_rows.save_snapshot(
            store.writer, "o1", seq, snap.FORMAT, b"y" * 2000, part_bytes=512
        )
        assert await _one(store, sql) == 0
    finally:
        await store.close()


async def test_a_snapshot_waiting_for_the_write_lock_never_holds_feed_reads(tmp_path: Path) -> None:
    """Snapshots are written through the writer: while one waits for another process's write
    lock, this process's feed reads (on the reader) still answer."""
    store, config = await _open(tmp_path, 20)
    await store.writer.execute("PRAGMA busy_timeout = 300000")  # the save waits, never fails
    index = build_keyword_index(config, store)
    source = index.cache.source
    # sqlean, as the store: two SQLite libraries in one process do not see each other's locks
    # (each keeps its own table of the process's POSIX locks; sqlite.org/howtocorrupt.html)
    blocker = sqlean.connect(store.path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the database's write lock
        try:
            head = await source.head()
            save = asyncio.ensure_future(source.save_snapshot("o1", head, snap.FORMAT, b"blob"))
            for _ in range(20):  # the save starts and waits for the write lock
                await asyncio.sleep(0)
            changes = await asyncio.wait_for(source.since(0, 1000), 60)
            assert changes and max(c.seq for c in changes) == head
            assert not save.done(), "the feed read waited for the snapshot's write lock"
            # another feed read, the save still waiting: it cannot pass the lock
            assert await source.since(head, 10) == [] and not save.done()
        finally:
            blocker.execute("ROLLBACK")
        assert await asyncio.wait_for(save, 60), "stored once the lock was released"
    finally:
        blocker.close()
        await index.close()
        await store.close()
