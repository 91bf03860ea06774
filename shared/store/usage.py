"""Per-key, per-day usage of memory, read from ``memory_events``.

Per-key, per-day usage of memory, read from ``memory_events`` (docs/ARCHITECTURE.md, "Controlling
memory": visible cost).

Sources: ``injection`` events (one per access batch: ``count`` memories injected, detail
``requests`` and ``tokens``), ``extraction`` events (``count`` facts learned) and ``forget``
events (one per forget; ``count`` memories deleted). Days are UTC calendar days.
"""

from __future__ import annotations

from typing import Any

import aiosqlite
import msgspec

from shared.store.connection import store_errors

DAY_S = 86_400.0


class UsageDay(msgspec.Struct, frozen=True, kw_only=True):
    """One key's memory usage on one UTC day (``day`` as ``YYYY-MM-DD``)."""

    key_id: str
    day: str
    requests_with_memory: int
    memories_injected: int
    tokens_injected: int
    facts_learned: int
    forgets: int
    memories_forgotten: int


_SQL = """
SELECT owner_id, date(created_at, 'unixepoch') AS day,
  SUM(CASE WHEN kind = 'injection' THEN COALESCE(json_extract(detail, '$.requests'), 0) END),
  SUM(CASE WHEN kind = 'injection' THEN count END),
  SUM(CASE WHEN kind = 'injection' THEN COALESCE(json_extract(detail, '$.tokens'), 0) END),
  SUM(CASE WHEN kind = 'extraction' THEN count END),
  SUM(CASE WHEN kind = 'forget' THEN 1 END),
  SUM(CASE WHEN kind = 'forget' THEN count END)
FROM memory_events
WHERE kind IN ('injection', 'extraction', 'forget') AND created_at >= ? {owner}
GROUP BY owner_id, day ORDER BY day, owner_id
"""


class UsageStore:
    """Usage queries (``Store.usage``)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def daily(self, owner_id: str | None, days: int, now: float) -> list[UsageDay]:
        """Usage per key and UTC day over the last ``days`` days.

        Usage per key and UTC day over the last ``days`` days (today included), oldest day first;
        ``owner_id`` None = every key. Days without events are absent.

        Raises:
            StoreError: the database failed.
        """
        start_of_today = now - (now % DAY_S)
        since = start_of_today - (max(1, days) - 1) * DAY_S
        params: list[Any] = [since]
        owner = ""
        if owner_id is not None:
            owner = "AND owner_id = ?"
            params.append(owner_id)
        with store_errors("reading usage"):
            rows = await self.conn.execute_fetchall(_SQL.format(owner=owner), params)
        return [
            UsageDay(
                key_id=str(r[0]),
                day=str(r[1]),
                requests_with_memory=int(r[2] or 0),
                memories_injected=int(r[3] or 0),
                tokens_injected=int(r[4] or 0),
                facts_learned=int(r[5] or 0),
                forgets=int(r[6] or 0),
                memories_forgotten=int(r[7] or 0),
            )
            for r in rows
        ]
