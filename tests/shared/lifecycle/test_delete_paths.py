"""Deleting a memory by any path leaves no FTS5 row and no sqlite-vec row (issue 7, item 4)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shared.lifecycle.summarize import summarize
from shared.lifecycle.sweep import sweep
from shared.settings import load_settings
from shared.store import Store
from tests.lifecycle_seed import DAY, add, fts_matches, fts_rows, ids, query

PATHS = ["store_delete", "sweep", "capacity", "summarize"]


async def delete_by(tmp_path: Path, path: str) -> tuple[str, int, bool]:
    """Seed, delete one memory by ``path``, check FTS5; returns (db, victim rowid, vec exists)."""
    db = str(tmp_path / "d.db")
    now = time.time()
    store = await Store.open(db)
    try:
        old = now - 60 * DAY
        victim = await add(
            store, "quokkaword sits here. extra filler words for length.", created=old
        )
        other = await add(
            store, "another memory entirely. with more filler words here.", created=old
        )
        keep = await add(store, "keeper fact", type="factual", category="fact", created=now)
        assert fts_matches(db, "quokkaword") == 1 and fts_rows(db, victim) == 1
        has_vec = await store.lifecycle.vec_table_exists()

        if path == "store_delete":
            memory = (await store.memories.get_many([victim]))[victim]
            await store.writes.delete(memory.public_id)
        elif path == "sweep":
            await sweep(store, load_settings({}), now)
        elif path == "capacity":
            await store.writes.record_access([victim, other], now)  # not decayed any more
            await sweep(store, load_settings({}, max_memories_per_owner=1), now)
        else:
            await store.writes.record_access([victim, other], now - 20 * DAY)  # live, old
            await summarize(store, load_settings({}), now, older_than_days=30)

        assert victim not in ids(db) and keep in ids(db)
        assert fts_rows(db, victim) == 0
        # Only a live row (a summary that kept the sentence) may still match, never the original.
        live = query(db, "SELECT count(*) FROM memories WHERE content LIKE '%quokkaword%'")[0][0]
        assert fts_matches(db, "quokkaword") == live
        if path == "summarize":
            assert query(db, "SELECT count(*) FROM memories WHERE category = 'summary'")[0][0] == 1
        else:
            assert live == 0
    finally:
        await store.close()
    return db, victim, has_vec


@pytest.mark.parametrize("path", PATHS)
async def test_deletion_leaves_no_fts_row(tmp_path: Path, path: str) -> None:
    await delete_by(tmp_path, path)


@pytest.mark.parametrize("path", PATHS)
async def test_deletion_leaves_no_vec_row(tmp_path: Path, path: str) -> None:
    db, victim, has_vec = await delete_by(tmp_path, path)
    if not has_vec:
        pytest.skip(
            "vec_memories does not exist yet: the vector tier creates it with its delete trigger "
            "(lifecycle paths are covered with a stand-in table in test_sweep.py)"
        )
    assert query(db, "SELECT count(*) FROM vec_memories WHERE rowid = ?", (victim,))[0][0] == 0
