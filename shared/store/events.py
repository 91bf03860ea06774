"""Memory events (injections, extractions, captures, evictions, ...) for stats and dashboards."""

from __future__ import annotations

import time
from typing import Any

import aiosqlite
import msgspec

from shared.store.connection import autocommit, store_errors

_encoder = msgspec.json.Encoder()

INSERT_EVENT = (
    "INSERT INTO memory_events (owner_id, user_id, memory_id, kind, count, detail, created_at) "
    "VALUES (?,?,?,?,?,?,?)"
)
"""The insert of one ``memory_events`` row; parameters as :func:`event_row` returns them."""


def event_row(
    kind: str,
    owner_id: str,
    user_id: str = "",
    memory_id: int | None = None,
    count: int = 1,
    detail: dict[str, Any] | None = None,
    now: float | None = None,
) -> tuple[Any, ...]:
    """The parameters of :data:`INSERT_EVENT` for one event (``now`` None: the current time)."""
    encoded = _encoder.encode(detail or {}).decode()
    at = time.time() if now is None else now
    return (owner_id, user_id, memory_id, kind, count, encoded, at)


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
        """Append one event of ``kind`` (e.g. ``injection``, ``extraction``, ``eviction``).

        Events never change what recall can see, so the commit does not mark the in-memory
        recall cache stale (:func:`~shared.store.connection.autocommit`: no feed read forced).
        """
        row = event_row(kind, owner_id, user_id, memory_id, count, detail, now)
        with store_errors("recording an event"):
            await autocommit(self.conn, INSERT_EVENT, row)

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

    async def page(
        self,
        flt: EventFilter,
        *,
        limit: int,
        offset: int,
    ) -> tuple[list[EventRow], int]:
        """Events matching ``flt``, newest first, and the total matching.

        The memory's public id replaces the internal row id (null when the memory is gone).
        """
        where, params = flt.where()
        with store_errors("reading events"):
            async with self.conn.execute(
                f"SELECT COUNT(*) FROM memory_events e {where}", params
            ) as cur:
                row = await cur.fetchone()
            total = int(row[0]) if row else 0
            async with self.conn.execute(
                "SELECT e.id, e.kind, e.owner_id, e.user_id, m.public_id, e.count, e.detail, "
                "e.created_at FROM memory_events e LEFT JOIN memories m ON m.id = e.memory_id "
                f"{where} ORDER BY e.id DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ) as cur:
                rows = await cur.fetchall()
        return [
            EventRow(
                id=int(r[0]),
                kind=str(r[1]),
                owner_id=str(r[2]),
                user_id=str(r[3]),
                memory_id=r[4],
                count=int(r[5]),
                detail=_detail(r[6]),
                created_at=float(r[7]),
            )
            for r in rows
        ], total


def _detail(raw: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class EventFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which events to read.

    ``owners`` (None = every owner), exact ``kinds``, ``user_id``, and the ``since``/``until``
    bounds (unix seconds, inclusive/exclusive).
    """

    owners: list[str] | None = None
    kinds: list[str] | None = None
    user_id: str | None = None
    since: float | None = None
    until: float | None = None

    def where(self) -> tuple[str, list[Any]]:
        """The SQL ``WHERE`` clause (or empty) over alias ``e`` and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        for column, values in (("e.owner_id", self.owners), ("e.kind", self.kinds)):
            if values is not None:
                clauses.append(f"{column} IN ({','.join('?' * len(values))})" if values else "0")
                params.extend(values)
        if self.user_id is not None:
            clauses.append("e.user_id = ?")
            params.append(self.user_id)
        if self.since is not None:
            clauses.append("e.created_at >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("e.created_at < ?")
            params.append(self.until)
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


class EventRow(msgspec.Struct, frozen=True, kw_only=True):
    """One event: ``memory_id`` is the memory's public id (None if none or deleted)."""

    id: int
    kind: str
    owner_id: str
    user_id: str
    memory_id: str | None
    count: int
    detail: dict[str, Any]
    created_at: float
