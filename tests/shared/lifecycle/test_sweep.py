"""Sweep over a real migrated SQLite store.

Decay, expiry, immunity, resumption, cursor, dry run, capacity, hooks.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from shared.engine import record_of
from shared.lifecycle.decay import EvictionReason, LifecycleRow
from shared.lifecycle.relevance import decay_relevance
from shared.lifecycle.sweep import sweep
from shared.settings import Settings, load_settings
from shared.store import Store
from shared.store.memories.lifecycle import RELEVANCE_DECAYED_AT, SWEEP_CURSOR
from shared.store.sqlite_vec import SqliteVecIndex
from tests.lifecycle_seed import DAY, add, fts_rows, ids, query, seed_cases


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "lifecycle.db")


def settings(db_path: str, **overrides: object) -> Settings:
    return load_settings({}, db_path=db_path, **overrides)


async def test_cases_l1_to_l3_sweep_and_dry_run(db_path: str) -> None:
    now = time.time()
    store = await Store.open(db_path)
    try:
        case = await seed_cases(store, now)
        listed: list[tuple[int, EvictionReason]] = []

        def listen(row: LifecycleRow, reason: EvictionReason) -> None:
            listed.append((row.id, reason))

        dry = await sweep(store, settings(db_path), now, dry_run=True, listener=listen)
        assert listed == [(case["L1"], "decayed")]
        assert dry.deleted == 1 and dry.scanned == 4 and dry.full_pass
        assert ids(db_path) == set(case.values()), "dry run removed something"
        assert await store.lifecycle.get_state(SWEEP_CURSOR) is None, "dry run moved the cursor"
        assert await store.events.totals() == {}

        listed.clear()
        report = await sweep(store, settings(db_path), now, listener=listen)
        assert listed == [(case["L1"], "decayed")]
        assert report.by_reason == {"decayed": 1}
        assert ids(db_path) == {case["L2"], case["L3"], case["fresh"]}
        events = query(db_path, "SELECT memory_id, detail FROM memory_events WHERE kind='eviction'")
        assert [(e[0], json.loads(e[1])["reason"]) for e in events] == [(case["L1"], "decayed")]

        again = await sweep(store, settings(db_path), now)
        assert again.deleted == 0, "a second sweep deleted again"
    finally:
        await store.close()


async def test_l4_cursor_survives_restart_and_scan_cap_bounds_each_run(db_path: str) -> None:
    now = time.time()
    cfg = settings(db_path, sweep_max_scan=2, sweep_batch_size=1)
    store = await Store.open(db_path)
    fresh1 = await add(store, "fresh one", created=now)
    fresh2 = await add(store, "fresh two", created=now)
    old = await add(store, "old episodic", created=now - 60 * DAY)
    await store.close()

    store = await Store.open(db_path)  # "restart"
    first = await sweep(store, cfg, now)
    assert (first.scanned, first.deleted, first.cursor_end) == (2, 0, fresh2)
    await store.close()

    store = await Store.open(db_path)  # restart again: resumes at the persisted cursor
    second = await sweep(store, cfg, now)
    assert second.cursor_start == fresh2
    assert second.deleted == 1 and old not in ids(db_path)
    third = await sweep(store, cfg, now)
    assert third.scanned == 2 and fresh1 in ids(db_path)
    await store.close()


async def test_wrap_covers_rows_before_the_cursor_in_one_run(db_path: str) -> None:
    now = time.time()
    store = await Store.open(db_path)
    try:
        old = await add(store, "old one", created=now - 60 * DAY)
        last = await add(store, "fresh", created=now)
        await store.lifecycle.set_state(SWEEP_CURSOR, str(last), now)
        report = await sweep(store, settings(db_path, sweep_batch_size=1), now)
        assert report.full_pass and report.deleted == 1 and old not in ids(db_path)
    finally:
        await store.close()


async def test_capacity_evicts_lowest_relevance_lru_never_immune_first(db_path: str) -> None:
    now = time.time()
    store = await Store.open(db_path)
    try:
        fact = await add(store, "fact", type="factual", category="fact", created=now, relevance=0.0)
        used = await add(store, "used a lot", created=now, accesses=3, relevance=0.05)
        low_old = await add(store, "low old", created=now - 5 * DAY, relevance=0.2)
        low_new = await add(store, "low new", created=now - 1 * DAY, relevance=0.2)
        high = await add(store, "high", created=now - 9 * DAY, relevance=0.9)
        other = await add(store, "other owner", owner="key_b", created=now, relevance=0.0)
        listed: list[tuple[int, EvictionReason]] = []
        cfg = settings(db_path, max_memories_per_owner=3)

        dry = await sweep(
            store, cfg, now, dry_run=True, listener=lambda r, why: listed.append((r.id, why))
        )
        assert listed == [(low_old, "capacity"), (low_new, "capacity")] and dry.deleted == 2
        assert len(ids(db_path)) == 6

        report = await sweep(store, cfg, now)
        assert report.by_reason == {"capacity": 2}
        assert ids(db_path) == {fact, used, high, other}

        # Cap 1: the last non-immune one goes first, then immune ones (all that is left),
        # lowest relevance first: the factual memory (0.0) before the access-immune one (0.05).
        await sweep(store, settings(db_path, max_memories_per_owner=1), now)
        assert ids(db_path) == {used, other}
    finally:
        await store.close()


async def test_capacity_is_per_owner_and_end_user(db_path: str) -> None:
    now = time.time()
    store = await Store.open(db_path)
    try:
        for i in range(3):
            await add(store, f"alice {i}", user="alice", created=now + i)
            await add(store, f"bob {i}", user="bob", created=now + i)
        await sweep(store, settings(db_path, max_memories_per_owner=2), now)
        users = query(db_path, "SELECT user_id, count(*) FROM memories GROUP BY user_id")
        assert sorted(users) == [("alice", 2), ("bob", 2)]
    finally:
        await store.close()


async def test_dry_run_capacity_does_not_double_count_decayed(db_path: str) -> None:
    now = time.time()
    store = await Store.open(db_path)
    try:
        await add(store, "decayed", created=now - 60 * DAY)
        await add(store, "a", created=now)
        await add(store, "b", created=now)
        dry = await sweep(store, settings(db_path, max_memories_per_owner=2), now, dry_run=True)
        real = await sweep(store, settings(db_path, max_memories_per_owner=2), now)
        assert dry.by_reason == real.by_reason == {"decayed": 1}
    finally:
        await store.close()


async def test_on_deleted_hook_receives_rowids_and_its_failure_is_reported(db_path: str) -> None:
    now = time.time()
    store = await Store.open(db_path)
    try:
        old = await add(store, "old", created=now - 60 * DAY)
        seen: list[list[int]] = []

        async def hook(deleted: list[int]) -> None:
            seen.append(deleted)

        await sweep(store, settings(db_path), now, on_deleted=hook)
        assert seen == [[old]]

        await add(store, "old two", created=now - 60 * DAY)

        async def broken(deleted: list[int]) -> None:
            raise RuntimeError("qdrant down")

        report = await sweep(store, settings(db_path), now, on_deleted=broken)
        assert report.deleted == 1 and report.hook_failures == 1
    finally:
        await store.close()


async def test_l4_relevance_decay_catches_up_after_restart(db_path: str) -> None:
    now = time.time()
    store = await Store.open(db_path)
    idle = await add(store, "idle", created=now - 90 * DAY)
    active = await add(store, "active", created=now - 90 * DAY, accesses=1, accessed_at=now)
    first = await decay_relevance(store, settings(db_path), now - 30 * DAY)
    assert first.previous_run is None and first.updated == 0  # the clock starts
    await store.close()

    # 30 days of downtime later, a restarted process catches up in one run.
    store = await Store.open(db_path)
    assert await store.lifecycle.get_state(RELEVANCE_DECAYED_AT) is not None
    report = await decay_relevance(store, settings(db_path), now)
    assert report.elapsed_s == pytest.approx(30 * DAY)
    rel = dict(query(db_path, "SELECT id, relevance FROM memories"))
    assert rel[idle] == pytest.approx(0.5)
    assert rel[active] == pytest.approx(1.0)
    again = await decay_relevance(store, settings(db_path), now)  # same instant: no double decay
    assert again.updated == 0
    assert dict(query(db_path, "SELECT id, relevance FROM memories"))[idle] == pytest.approx(0.5)
    await store.close()


async def test_vec_rows_go_with_every_lifecycle_deletion(db_path: str) -> None:
    """The lifecycle delete paths leave no ``vec_memories`` row (the table as the vector tier
    builds it, with its delete trigger)."""
    now = time.time()
    store = await Store.open(db_path)
    try:
        vec = SqliteVecIndex(store.writer, store.reader, store.memories)
        await vec.ensure(4, "static:test:4")
        old = await add(store, "old", created=now - 60 * DAY)
        over = await add(store, "over capacity", created=now, relevance=0.0)
        keep = await add(store, "keep", type="factual", category="fact", created=now)
        found = await store.memories.get_many([old, over, keep])
        await vec.upsert(
            [
                record_of(found[i], np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32))
                for i in (old, over, keep)
            ]
        )
        await sweep(store, settings(db_path, max_memories_per_owner=1), now)
        left = {r[0] for r in query(db_path, "SELECT memory_id FROM vec_memories")}
        assert left == {keep}
        assert fts_rows(db_path, old) == fts_rows(db_path, over) == 0
    finally:
        await store.close()
