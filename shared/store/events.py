"""Memory events (injections, extractions, captures, evictions, ...) for stats and dashboards."""

from __future__ import annotations

import time
from typing import Any

import aiosqlite
import msgspec

from shared.store.connection import store_errors, transaction

_encoder = msgspec.json.Encoder()


class EventStore:
    """Append-only ``memory_events`` log."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def record(
        self,
        kind: str,
        owner_id: str,
        *,
        user_id: str = "",
        memory_id: int | None = None,
        count: int = 1,
        detail: dict[str, Any] | None = None,
        now: float | None = None,
    ) -> None:
        """Append one event of ``kind`` (e.g. ``injection``, ``extraction``, ``eviction``)."""
        with store_errors("recording an event"):
            async with transaction(self.conn):
                await self.conn.execute(
                    "INSERT INTO memory_events "
                    "(owner_id, user_id, memory_id, kind, count, detail, created_at) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (
                        owner_id,
                        user_id,
                        memory_id,
                        kind,
                        count,
                        _encoder.encode(detail or {}).decode(),
                        time.time() if now is None else now,
                    ),
                )

    async def totals(self, owner_id: str | None = None) -> dict[str, int]:
        """Sum of ``count`` per event kind (one owner, or all)."""
        sql = "SELECT kind, SUM(count) FROM memory_events"
        params: list[Any] = []
        if owner_id is not None:
            sql += " WHERE owner_id = ?"
            params.append(owner_id)
        with store_errors("reading events"):
            async with self.conn.execute(sql + " GROUP BY kind", params) as cur:
                rows = await cur.fetchall()
        return {str(r[0]): int(r[1]) for r in rows}
