"""Numbered migrations against real SQLite files: idempotent, and safe when several processes
(gateways, workers, ``mnemogate migrate``) start on a new database at the same moment."""

from __future__ import annotations

import asyncio

import sqlean

from shared.store import Store
from shared.store.connection import migration_files


def _applied(path: str) -> list[int]:
    conn = sqlean.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    finally:
        conn.close()


async def test_concurrent_openers_on_a_new_database_all_succeed(tmp_path):
    expected = [version for version, _, _ in migration_files()]
    for round_ in range(20):
        path = str(tmp_path / f"race{round_}.db")
        # each Store has its own connections and threads: the migrations really race
        stores = await asyncio.gather(*(Store.open(path) for _ in range(4)))
        for store in stores:
            await store.close()
        assert _applied(path) == expected


async def test_migrating_twice_applies_nothing_the_second_time(tmp_path):
    path = str(tmp_path / "twice.db")
    store = await Store.open(path)
    await store.close()
    again = await Store.open(path)
    await again.close()
    assert _applied(path) == [version for version, _, _ in migration_files()]
