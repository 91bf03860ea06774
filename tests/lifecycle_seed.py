"""Seeding and inspection helpers for lifecycle tests (real migrated SQLite, the store's own SQL).

Lifecycle seeds are relative to a given ``now`` with the default settings (episodic TTL 30
days, access immunity 3).
"""

from __future__ import annotations

from typing import Any

import sqlean
import sqlite_vec

from shared.models import NewMemory
from shared.store import Store

DAY = 86_400.0


async def add(
    store: Store,
    content: str,
    *,
    owner: str = "key_a",
    user: str = "",
    session: str | None = None,
    type: str = "episodic",
    category: str = "turn",
    created: float,
    accesses: int = 0,
    accessed_at: float | None = None,
    relevance: float = 1.0,
) -> int:
    """Insert one memory created at ``created`` and accessed ``accesses`` times at
    ``accessed_at`` (default: ``created``); returns its rowid."""
    memory, _ = await store.writes.upsert(
        NewMemory(
            owner_id=owner,
            user_id=user,
            session_id=session,
            content=content,
            type=type,  # type: ignore[arg-type]
            category=category,  # type: ignore[arg-type]
            relevance=relevance,
        ),
        now=created,
    )
    for _ in range(accesses):
        await store.writes.record_access([memory.id], accessed_at or created)
    return memory.id


async def seed_cases(store: Store, now: float) -> dict[str, int]:
    """The lifecycle seeds plus a fresh episodic memory; returns case name -> rowid."""
    return {
        "L1": await add(
            store,
            "we talked about the zebrafish experiment",
            created=now - 40 * DAY,
            accesses=2,
            accessed_at=now - 35 * DAY,
        ),
        "L2": await add(
            store,
            "the user is allergic to walnuts",
            type="factual",
            category="fact",
            created=now - 400 * DAY,
        ),
        "L3": await add(
            store,
            "we planned the hiking trip to Snowdon",
            created=now - 40 * DAY,
            accesses=3,
            accessed_at=now - 35 * DAY,
        ),
        "fresh": await add(store, "today we discussed sourdough", created=now - 1 * DAY),
    }


def query(db_path: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one read query on a fresh synchronous connection (sqlite-vec loaded)."""
    conn = sqlean.connect(db_path)
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]
    finally:
        conn.close()


def fts_rows(db_path: str, rowid: int) -> int:
    """Rows the FTS5 index still holds for memory ``rowid`` (its docsize entry)."""
    return int(
        query(db_path, "SELECT count(*) FROM memory_fts_docsize WHERE id = ?", (rowid,))[0][0]
    )


def fts_matches(db_path: str, term: str) -> int:
    """Index entries matching the single quoted ``term``."""
    sql = "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?"
    return int(query(db_path, sql, (f'"{term}"',))[0][0])


def ids(db_path: str) -> set[int]:
    """Rowids of every memory."""
    return {int(r[0]) for r in query(db_path, "SELECT id FROM memories")}
