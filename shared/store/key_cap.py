"""SQL of the per-key memory cap (docs/ARCHITECTURE.md, "Controlling memory").

The cap covers every memory of one key (all its end users); its eviction order is the lifecycle
capacity order, key-wide
(:meth:`shared.store.memories.lifecycle.LifecycleStore.capacity_candidates`).
"""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from shared.store.connection import store_errors
from shared.store.memories.lifecycle import ROW_COLUMNS, LifecycleRow, _row


class KeyCapStore:
    """Totals and eviction candidates of one key's memories (``Store.key_cap``)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def totals(self, owner_id: str) -> tuple[int, int]:
        """``(memories, bytes of content as UTF-8)`` of ``owner_id``."""
        with store_errors("counting a key's memories"):
            rows = list(
                await self.conn.execute_fetchall(
                    "SELECT COUNT(*), COALESCE(SUM(length(CAST(content AS BLOB))), 0) "
                    "FROM memories WHERE owner_id = ?",
                    (owner_id,),
                )
            )
        return int(rows[0][0]), int(rows[0][1])

    async def candidates(
        self, owner_id: str, *, immune_types: Sequence[str], access_immunity: int, limit: int
    ) -> list[tuple[LifecycleRow, int]]:
        """The ``limit`` memories of ``owner_id`` to evict first, with their content bytes.

        Order: non-immune first (type in ``immune_types``, or ``access_count >=
        access_immunity`` when that is > 0, is immune), lowest relevance, least recently used,
        rowid — the lifecycle capacity order.
        """
        marks = ",".join("?" * len(immune_types)) or "NULL"
        immunity = access_immunity if access_immunity > 0 else None
        sql = (
            f"SELECT {ROW_COLUMNS}, length(CAST(content AS BLOB)) FROM memories WHERE owner_id = ? "
            f"ORDER BY (type IN ({marks}) OR (? IS NOT NULL AND access_count >= ?)), relevance, "
            "COALESCE(last_accessed_at, created_at), id LIMIT ?"
        )
        params = [owner_id, *immune_types, immunity, immunity, limit]
        with store_errors("choosing memories to evict"):
            rows = await self.conn.execute_fetchall(sql, params)
        return [(_row(r), int(r[13])) for r in rows]
