"""``transaction()`` never leaves a write lock without an owner, against a real SQLite file.

A task cancelled while its ``BEGIN IMMEDIATE`` waits for another process's write lock (a job
timeout, a retrieval time budget, SIGTERM) used to leave that BEGIN to complete on the
connection's thread afterwards: the connection then held the database's write lock until its
next transaction, and every other process's writes waited out their busy timeout.
"""

from __future__ import annotations

import asyncio
import contextlib

import sqlean

from shared.store import Store
from shared.store.connection import autocommit, on_commit, transaction


async def test_cancelled_begin_leaves_no_open_transaction(tmp_path):
    path = str(tmp_path / "t.db")
    store = await Store.open(path)
    other = sqlean.connect(path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock

        async def write() -> None:
            async with transaction(store.writer) as conn:
                await conn.execute("INSERT INTO lifecycle_state VALUES ('x', 'y', 0)")

        task = asyncio.create_task(write())
        await asyncio.sleep(0.3)  # the BEGIN is now waiting in SQLite's busy handler
        task.cancel()
        await asyncio.sleep(0)
        other.execute("ROLLBACK")  # the lock is free: the pending BEGIN succeeds on its thread
        with contextlib.suppress(asyncio.CancelledError):
            await task

        # the BEGIN has been rolled back in the background: the connection holds no transaction
        # and no write lock
        async with transaction(store.writer):  # waits for the background undo (same lock)
            pass
        assert not store.writer.in_transaction
        other.execute("PRAGMA busy_timeout = 200")
        other.execute("BEGIN IMMEDIATE")  # would raise "database is locked" after 0.2 s
        other.execute("ROLLBACK")
        rows = other.execute("SELECT COUNT(*) FROM lifecycle_state WHERE name = 'x'").fetchall()
        assert rows == [(0,)]
        async with transaction(store.writer) as conn:
            await conn.execute("INSERT INTO lifecycle_state VALUES ('z', 'w', 0)")
        assert other.execute("SELECT name FROM lifecycle_state").fetchall() == [("z",)]
    finally:
        other.close()
        await store.close()


async def test_transaction_commits_and_rolls_back(tmp_path):
    store = await Store.open(str(tmp_path / "t.db"))
    try:
        async with transaction(store.writer) as conn:
            await conn.execute("INSERT INTO lifecycle_state VALUES ('a', '1', 0)")
        try:
            async with transaction(store.writer) as conn:
                await conn.execute("INSERT INTO lifecycle_state VALUES ('b', '2', 0)")
                raise RuntimeError("boom")
        except RuntimeError:
            pass
        async with store.writer.execute("SELECT name FROM lifecycle_state ORDER BY name") as cur:
            assert [r[0] for r in await cur.fetchall()] == ["a"]
        assert not store.writer.in_transaction
    finally:
        await store.close()


async def test_autocommit_never_joins_another_tasks_transaction(tmp_path):
    """``autocommit`` waits for a transaction open on the connection, is not undone by its
    rollback, and runs no commit hook."""
    store = await Store.open(str(tmp_path / "t.db"))
    hooks: list[int] = []
    on_commit(store.writer, lambda: hooks.append(1))
    inside, release = asyncio.Event(), asyncio.Event()

    async def rolled_back() -> None:
        with contextlib.suppress(RuntimeError):
            async with transaction(store.writer) as conn:
                await conn.execute("INSERT INTO lifecycle_state VALUES ('a', '1', 0)")
                inside.set()
                await release.wait()
                raise RuntimeError("roll back")

    try:
        task = asyncio.create_task(rolled_back())
        await asyncio.wait_for(inside.wait(), 60)
        sql = "INSERT INTO lifecycle_state VALUES ('b', '2', 0)"
        write = asyncio.create_task(autocommit(store.writer, sql))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not write.done(), "it waits for the open transaction to end"
        release.set()
        await asyncio.wait_for(task, 60)
        assert await asyncio.wait_for(write, 60) == 1
        rows = await store.writer.execute_fetchall("SELECT name FROM lifecycle_state")
        assert [r[0] for r in rows] == ["b"]
        assert hooks == []
    finally:
        await store.close()
