"""Lifecycle SQL: persisted progress, bounded scans, evictions, capacity, relevance decay.

All SQL of the memory lifecycle lives here: the store layer of the same concept as the
:mod:`shared.lifecycle` package (the decisions), see "Job kinds" in ``docs/ARCHITECTURE.md``.
Deleting a memory row removes its FTS5 row through the ``memories_fts_delete`` trigger (migration
0001); if the sqlite-vec table ``vec_memories`` exists, its rows are deleted explicitly in the same
transaction (harmless if the vector tier's own delete trigger already removed them). Qdrant is not
reachable from SQL: callers pass the deleted rowids to a hook (see :mod:`shared.lifecycle.sweep`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiosqlite
import msgspec

from shared.store.connection import store_errors, transaction

ROW_COLUMNS = (
    "id, public_id, owner_id, user_id, session_id, type, category, content, created_at, "
    "last_accessed_at, access_count, expires_at, relevance"
)
SWEEP_CURSOR = "sweep_cursor"
RELEVANCE_DECAYED_AT = "relevance_decayed_at"
VEC_TABLE = "vec_memories"
_CHUNK = 500  # bound on SQL parameters per statement

_encoder = msgspec.json.Encoder()


class LifecycleRow(msgspec.Struct, frozen=True, kw_only=True):
    """The columns of one memory the lifecycle decisions need (times in unix seconds)."""

    id: int
    public_id: str
    owner_id: str
    user_id: str
    session_id: str | None
    type: str
    category: str
    content: str
    created_at: float
    last_accessed_at: float | None
    access_count: int
    expires_at: float | None
    relevance: float


def _row(r: Sequence[Any]) -> LifecycleRow:
    return LifecycleRow(
        id=int(r[0]),
        public_id=r[1],
        owner_id=r[2],
        user_id=r[3],
        session_id=r[4],
        type=r[5],
        category=r[6],
        content=r[7],
        created_at=float(r[8]),
        last_accessed_at=None if r[9] is None else float(r[9]),
        access_count=int(r[10]),
        expires_at=None if r[11] is None else float(r[11]),
        relevance=float(r[12]),
    )


class LifecycleStore:
    """Lifecycle queries over the writer connection (``Store.lifecycle``)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    # ---- persisted state -----------------------------------------------------------------------
    async def get_state(self, name: str) -> str | None:
        """Value of the ``lifecycle_state`` entry ``name``, or None if never set."""
        with store_errors("reading lifecycle state"):
            async with self.conn.execute(
                "SELECT value FROM lifecycle_state WHERE name = ?", (name,)
            ) as cur:
                row = await cur.fetchone()
        return None if row is None else str(row[0])

    async def set_state(self, name: str, value: str, now: float) -> None:
        """Set the ``lifecycle_state`` entry ``name`` to ``value`` (own transaction)."""
        with store_errors("writing lifecycle state"):
            async with transaction(self.conn):
                await self._put_state(name, value, now)

    async def _put_state(self, name: str, value: str, now: float) -> None:
        await self.conn.execute(
            "INSERT INTO lifecycle_state (name, value, updated_at) VALUES (?,?,?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value, "
            "updated_at = excluded.updated_at",
            (name, value, now),
        )

    # ---- scanning ------------------------------------------------------------------------------
    async def scan(
        self, after_id: int, limit: int, upto_id: int | None = None
    ) -> list[LifecycleRow]:
        """Up to ``limit`` rows with ``after_id < id [<= upto_id]``.

        In rowid order (keyset paging, so each batch is one index range scan whatever the table
        size).
        """
        sql = f"SELECT {ROW_COLUMNS} FROM memories WHERE id > ?"
        params: list[Any] = [after_id]
        if upto_id is not None:
            sql += " AND id <= ?"
            params.append(upto_id)
        with store_errors("scanning memories"):
            async with self.conn.execute(sql + " ORDER BY id LIMIT ?", [*params, limit]) as cur:
                rows = await cur.fetchall()
        return [_row(r) for r in rows]

    async def rows(self, ids: Sequence[int]) -> list[LifecycleRow]:
        """Lifecycle rows of the given rowids (missing ids are skipped), in rowid order."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with store_errors("reading memories"):
            async with self.conn.execute(
                f"SELECT {ROW_COLUMNS} FROM memories WHERE id IN ({marks}) ORDER BY id", list(ids)
            ) as cur:
                rows = await cur.fetchall()
        return [_row(r) for r in rows]

    # ---- deletion ------------------------------------------------------------------------------
    async def vec_table_exists(self) -> bool:
        """True once the vector tier has created ``vec_memories``."""
        with store_errors("inspecting the schema"):
            async with self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = ?", (VEC_TABLE,)
            ) as cur:
                return await cur.fetchone() is not None

    async def evict(
        self,
        rows: Sequence[tuple[LifecycleRow, str]],
        now: float,
        *,
        state: tuple[str, str] | None = None,
    ) -> list[int]:
        """Delete ``(row, reason)`` pairs in one transaction; returns the rowids actually deleted.

        Each deleted memory gets one ``eviction`` event (``memory_id`` = rowid, detail: reason,
        public_id, type, category). FTS5 rows go via trigger; ``vec_memories`` rows are deleted
        explicitly (by ``memory_id``, the vec0 primary key) when that table exists. ``state`` =
        ``(name, value)`` is written in the same transaction (the sweep's cursor), so progress
        and deletions commit together.

        Raises:
            StoreError: the database failed (nothing of this call is committed).
        """
        by_id = {row.id: (row, reason) for row, reason in rows}
        deleted: list[int] = []
        with store_errors("evicting memories"):
            has_vec = await self.vec_table_exists() if by_id else False
            async with transaction(self.conn):
                ids = list(by_id)
                for start in range(0, len(ids), _CHUNK):
                    chunk = ids[start : start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    # Rows already deleted by someone else are simply absent here (idempotent).
                    async with self.conn.execute(
                        f"DELETE FROM memories WHERE id IN ({marks}) RETURNING id", chunk
                    ) as cur:
                        deleted.extend(int(r[0]) for r in await cur.fetchall())
                deleted.sort()
                if has_vec and deleted:
                    await self.conn.executemany(
                        f"DELETE FROM {VEC_TABLE} WHERE memory_id = ?", [(i,) for i in deleted]
                    )
                events = []
                for i in deleted:
                    row, reason = by_id[i]
                    detail = {
                        "reason": reason,
                        "public_id": row.public_id,
                        "type": row.type,
                        "category": row.category,
                    }
                    events.append(
                        (row.owner_id, row.user_id, i, _encoder.encode(detail).decode(), now)
                    )
                await self.conn.executemany(
                    "INSERT INTO memory_events "
                    "(owner_id, user_id, memory_id, kind, count, detail, created_at) "
                    "VALUES (?,?,?,'eviction',1,?,?)",
                    events,
                )
                if state is not None:
                    await self._put_state(state[0], state[1], now)
        return deleted

    # ---- capacity ------------------------------------------------------------------------------
    async def buckets_over(self, cap: int) -> list[tuple[str, str, int]]:
        """Owner/end-user buckets holding more than ``cap`` memories.

        Returns ``(owner_id, user_id, count)`` tuples (uses the ``(owner_id, user_id, ...)``
        index).
        """
        with store_errors("counting memories per owner"):
            async with self.conn.execute(
                "SELECT owner_id, user_id, COUNT(*) FROM memories GROUP BY owner_id, user_id "
                "HAVING COUNT(*) > ?",
                (cap,),
            ) as cur:
                rows = await cur.fetchall()
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    async def capacity_candidates(
        self,
        owner_id: str,
        user_id: str,
        *,
        immune_types: Sequence[str],
        access_immunity: int,
        limit: int,
        offset: int = 0,
    ) -> list[LifecycleRow]:
        """The ``limit`` memories of one bucket to evict first (skipping ``offset``), in order.

        Order (same as :func:`shared.lifecycle.decay.capacity_order`): non-immune first (immune =
        type in ``immune_types`` or ``access_count >= access_immunity`` when that is > 0), then
        lowest relevance, then least recently used (last access, else creation), then rowid.
        """
        marks = ",".join("?" * len(immune_types)) or "NULL"
        immunity = access_immunity if access_immunity > 0 else None
        sql = (
            f"SELECT {ROW_COLUMNS} FROM memories WHERE owner_id = ? AND user_id = ? ORDER BY "
            f"(type IN ({marks}) OR (? IS NOT NULL AND access_count >= ?)), relevance, "
            "COALESCE(last_accessed_at, created_at), id LIMIT ? OFFSET ?"
        )
        params = [owner_id, user_id, *immune_types, immunity, immunity, limit, offset]
        with store_errors("choosing memories to evict"):
            async with self.conn.execute(sql, params) as cur:
                rows = await cur.fetchall()
        return [_row(r) for r in rows]

    # ---- relevance decay -----------------------------------------------------------------------
    async def decay_relevance(self, now: float, half_life_s: float) -> tuple[int, float | None]:
        """Apply relevance decay since the last run in one ``UPDATE``, then persist ``now``.

        ``relevance *= 0.5 ** ((now - max(last_run, last_use)) / half_life_s)`` for every memory
        not used since before ``now`` (see :func:`shared.lifecycle.decay.decayed_relevance`).
        The first run ever only records ``now`` (the clock starts then). Returns ``(rows
        updated, previous run time or None)``. The read, update and write of the run time happen
        in one transaction, so two concurrent runs cannot apply the same period twice.

        Raises:
            StoreError: the database failed.
        """
        with store_errors("decaying relevance"):
            async with transaction(self.conn):
                async with self.conn.execute(
                    "SELECT value FROM lifecycle_state WHERE name = ?", (RELEVANCE_DECAYED_AT,)
                ) as cur:
                    row = await cur.fetchone()
                last_run = None if row is None else float(row[0])
                updated = 0
                if last_run is not None and now > last_run and half_life_s > 0:
                    cur = await self.conn.execute(
                        "UPDATE memories SET relevance = relevance * pow(0.5, "
                        "(? - MAX(?, COALESCE(last_accessed_at, created_at))) / ?) "
                        "WHERE COALESCE(last_accessed_at, created_at) < ? AND relevance > 0",
                        (now, last_run, half_life_s, now),
                    )
                    updated = cur.rowcount
                    await cur.close()
                if last_run is None or now > last_run:
                    await self._put_state(RELEVANCE_DECAYED_AT, repr(now), now)
        return updated, last_run

    # ---- summarization -------------------------------------------------------------------------
    async def summary_groups(
        self, cutoff: float, now: float, owner_id: str | None = None, user_id: str | None = None
    ) -> list[tuple[str, str, str | None, int]]:
        """Groups holding at least two live episodic memories created before ``cutoff``.

        Returns ``(owner_id, user_id, session_id, count)`` tuples (only ``owner_id`` /
        ``user_id`` if given).
        """
        sql = (
            "SELECT owner_id, user_id, session_id, COUNT(*) FROM memories "
            "WHERE type = 'episodic' AND created_at < ? AND (expires_at IS NULL OR expires_at > ?)"
        )
        params: list[Any] = [cutoff, now]
        if owner_id is not None:
            sql += " AND owner_id = ?"
            params.append(owner_id)
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        sql += " GROUP BY owner_id, user_id, session_id HAVING COUNT(*) >= 2 ORDER BY 1, 2, 3"
        with store_errors("grouping memories to summarize"):
            async with self.conn.execute(sql, params) as cur:
                rows = await cur.fetchall()
        return [(str(r[0]), str(r[1]), r[2], int(r[3])) for r in rows]

    async def summary_chunk(
        self,
        owner_id: str,
        user_id: str,
        session_id: str | None,
        *,
        cutoff: float,
        now: float,
        after: tuple[float, int],
        limit: int,
    ) -> list[LifecycleRow]:
        """The next ``limit`` live episodic memories of one group created before ``cutoff``.

        Oldest first, after the keyset position ``after`` = ``(created_at, id)``.
        """
        sql = (
            f"SELECT {ROW_COLUMNS} FROM memories WHERE type = 'episodic' AND owner_id = ? "
            "AND user_id = ? AND session_id IS ? AND created_at < ? "
            "AND (expires_at IS NULL OR expires_at > ?) AND (created_at, id) > (?, ?) "
            "ORDER BY created_at, id LIMIT ?"
        )
        params = [owner_id, user_id, session_id, cutoff, now, after[0], after[1], limit]
        with store_errors("reading memories to summarize"):
            async with self.conn.execute(sql, params) as cur:
                rows = await cur.fetchall()
        return [_row(r) for r in rows]
