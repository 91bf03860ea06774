"""Operator queries over ``memories``.

Filtered listing with keyword search, bulk delete, edits, statistics, engine counts; export and
import in rowid batches are in :mod:`shared.store.memories.export_import`.

Unlike recall (:func:`shared.store.memories.visibility_sql`), management sees every row of the
owners it is given (session-scoped, expired, past retention): operators must be able to find and
delete what is stored, not only what would be recalled. Tenant scoping is the ``owners`` list of
:class:`MemoryFilter`, always applied inside the SQL.
"""

from __future__ import annotations

from typing import Any

import aiosqlite
import msgspec
import sqlean

from shared.errors import Conflict
from shared.fts_query import index_text
from shared.models import Memory, MemoryChanges
from shared.ranking import MEMORY_OVERHEAD_TOKENS
from shared.store.connection import store_errors, transaction
from shared.store.memories import COLUMNS, row_to_memory

_encoder = msgspec.json.Encoder()
#: :data:`~shared.store.memories.COLUMNS` prefixed with the ``m.`` alias.
PREFIXED_COLUMNS = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))
DAY_S = 86_400.0


class MemoryFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which rows an operator query touches.

    ``owners`` None = every owner (admin only); ``match`` is an FTS5 query from
    :func:`shared.fts_query.build_match_query` (never raw text).
    ``user_id``/``session_id``/``type``/``category`` None = any.
    """

    owners: list[str] | None
    user_id: str | None = None
    session_id: str | None = None
    type: str | None = None
    category: str | None = None
    match: str | None = None


def where_sql(flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
    """The ``WHERE`` clause (and its parameters) selecting the rows of ``flt``."""
    cond: list[str] = []
    params: list[Any] = []
    if flt.owners is not None:
        if not flt.owners:
            return "WHERE 0", []
        cond.append(f"{alias}.owner_id IN ({','.join('?' * len(flt.owners))})")
        params.extend(flt.owners)
    for column, value in (
        ("user_id", flt.user_id),
        ("session_id", flt.session_id),
        ("type", flt.type),
        ("category", flt.category),
    ):
        if value is not None:
            cond.append(f"{alias}.{column} = ?")
            params.append(value)
    if flt.match is not None:
        cond.append(f"{alias}.id IN (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?)")
        params.append(flt.match)
    return ("WHERE " + " AND ".join(cond)) if cond else "", params


class VectorMeta(msgspec.Struct, frozen=True, kw_only=True):
    """The active vector table: ``dim``, embedding ``signature``, ``reset_at`` (unix seconds)."""

    dim: int
    signature: str
    reset_at: float


class EngineCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Whole-database counts for the engine status; ``vector_meta`` None = no vector table."""

    memories: int
    pending_reindex: int
    fts_rows: int
    vector_meta: VectorMeta | None


def _changed_values(old: Memory, changes: MemoryChanges, now: float) -> dict[str, Any]:
    """The column values of ``old`` with ``changes`` applied (``UNSET`` keeps a value).

    A changed content or key marks the row ``needs_reindex``.
    """
    kept = msgspec.structs.asdict(old)
    for name in MemoryChanges.__struct_fields__:
        value = getattr(changes, name)
        if value is not msgspec.UNSET:
            kept[name] = value
    content, key = kept["content"], kept["key"]
    reindex = content != old.content or key != old.key or old.needs_reindex
    return {
        "content": content,
        "key": key,
        "search_text": index_text(content, key),
        "type": kept["type"],
        "category": kept["category"],
        "metadata": _encoder.encode(kept["metadata"]).decode(),
        "expires_at": kept["expires_at"],
        "relevance": kept["relevance"],
        "updated_at": now,
        "needs_reindex": 1 if reindex else 0,
    }


def _owners_sql(owners: list[str] | None, column: str = "owner_id") -> tuple[str, list[Any]]:
    """``WHERE`` condition restricting ``column`` to ``owners`` (None: none; empty: no row)."""
    if owners is None:
        return "", []
    if not owners:
        return "WHERE 0", []
    return f"WHERE {column} IN ({','.join('?' * len(owners))})", list(owners)


class MemoryAdminStore:
    """Operator queries over one connection (the writer: edits and imports are writes)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def page(self, flt: MemoryFilter, *, limit: int, offset: int) -> tuple[list[Memory], int]:
        """A page of matching memories and the total.

        With ``match``: best BM25 first; else newest ``updated_at`` first. ``limit`` is clamped to
        1..1000, ``offset`` to >= 0.

        Raises:
            StoreError: the database failed.
        """
        where, params = where_sql(flt)
        limit = max(1, min(limit, 1000))
        if flt.match is not None:
            sql = (
                f"SELECT {PREFIXED_COLUMNS} FROM memory_fts "
                f"JOIN memories m ON m.id = memory_fts.rowid {where} AND memory_fts MATCH ? "
                "ORDER BY bm25(memory_fts), m.id DESC LIMIT ? OFFSET ?"
            )
            page_params = [*params, flt.match, limit, max(0, offset)]
        else:
            sql = (
                f"SELECT {PREFIXED_COLUMNS} FROM memories m {where} "
                "ORDER BY m.updated_at DESC, m.id DESC LIMIT ? OFFSET ?"
            )
            page_params = [*params, limit, max(0, offset)]
        with store_errors("listing memories"):
            async with self.conn.execute(f"SELECT COUNT(*) FROM memories m {where}", params) as c:
                total_row = await c.fetchone()
            async with self.conn.execute(sql, page_params) as cur:
                rows = await cur.fetchall()
        return [row_to_memory(r) for r in rows], int(total_row[0]) if total_row else 0

    async def count(self, flt: MemoryFilter) -> int:
        """How many memories match ``flt``.

        Raises:
            StoreError: the database failed.
        """
        where, params = where_sql(flt)
        with store_errors("counting memories"):
            async with self.conn.execute(f"SELECT COUNT(*) FROM memories m {where}", params) as c:
                row = await c.fetchone()
        return int(row[0]) if row else 0

    async def delete_matching(self, flt: MemoryFilter) -> list[Memory]:
        """Delete the matching memories in one transaction; returns them, by ascending rowid.

        (Their rowids for the vector tiers outside SQLite, Qdrant; their text for the context
        scrub of their neighbours.)

        Raises:
            StoreError: the database failed (nothing is deleted).
        """
        where, params = where_sql(flt)
        with store_errors("bulk-deleting memories"):
            async with (
                transaction(self.conn),
                self.conn.execute(
                    f"DELETE FROM memories WHERE id IN (SELECT m.id FROM memories m {where}) "
                    f"RETURNING {COLUMNS}",
                    params,
                ) as cur,
            ):
                rows = await cur.fetchall()
        return sorted((row_to_memory(r) for r in rows), key=lambda m: m.id)

    async def update(
        self, public_id: str, owners: list[str] | None, changes: MemoryChanges, now: float
    ) -> Memory | None:
        """Apply ``changes`` to the memory ``public_id`` if one of ``owners`` holds it.

        (None = any owner); returns the new row, or None if not found. A changed content or key
        marks the row ``needs_reindex``.

        Raises:
            InvalidRequest: the new key is already used by another memory of the same owner+user.
            StoreError: the database failed.
        """
        owner_sql, owner_params = _owners_sql(owners)
        owner_sql = owner_sql.replace("WHERE", " AND", 1)
        with store_errors("updating a memory"):
            async with transaction(self.conn):
                async with self.conn.execute(
                    f"SELECT {COLUMNS} FROM memories WHERE public_id = ?{owner_sql}",
                    [public_id, *owner_params],
                ) as cur:
                    row = await cur.fetchone()
                if row is None:
                    return None
                old = row_to_memory(row)
                return await self._write_changes(old, _changed_values(old, changes, now))

    async def _write_changes(self, old: Memory, values: dict[str, Any]) -> Memory | None:
        """UPDATE the row of ``old`` with ``values`` (inside the caller's transaction).

        Raises:
            Conflict (409): the new key clashes with another memory of the same owner+user.
        """
        assignments = ", ".join(f"{k} = ?" for k in values)
        try:
            cur = await self.conn.execute(
                f"UPDATE memories SET {assignments} WHERE id = ? RETURNING {COLUMNS}",
                [*values.values(), old.id],
            )
        except sqlean.IntegrityError as exc:
            raise Conflict(
                f"key '{values['key']}' is already used by another memory of this owner and user",
                code="duplicate_key",
            ) from exc
        new_row = await cur.fetchone()
        await cur.close()
        return row_to_memory(new_row) if new_row else None

    async def public_id_owner(self, public_id: str) -> str | None:
        """The owner of ``public_id``, or None if no such memory."""
        with store_errors("reading a memory owner"):
            async with self.conn.execute(
                "SELECT owner_id FROM memories WHERE public_id = ?", [public_id]
            ) as cur:
                row = await cur.fetchone()
        return str(row[0]) if row else None

    async def stats(self, owners: list[str] | None, *, days: int, now: float) -> dict[str, Any]:
        """Counts by type and category, ``total``.

        ``tokens_stored`` (estimate: ceil(UTF-8 bytes / 4) + :data:`MEMORY_OVERHEAD_TOKENS` per
        memory), ``pending_reindex``, event totals by kind, and per-day event sums for the last
        ``days`` days (UTC dates).

        Raises:
            StoreError: the database failed.
        """
        with store_errors("reading statistics"):
            result = await self._memory_counts(owners)
            result.update(await self._event_counts(owners, since=now - days * DAY_S))
        return result

    async def _memory_counts(self, owners: list[str] | None) -> dict[str, Any]:
        """``by_type``, ``by_category``, ``total``, ``tokens_stored``, ``pending_reindex``."""
        where, params = where_sql(MemoryFilter(owners=owners))
        result: dict[str, Any] = {}
        for column in ("type", "category"):
            async with self.conn.execute(
                f"SELECT m.{column}, COUNT(*) FROM memories m {where} GROUP BY m.{column}",
                params,
            ) as cur:
                result[f"by_{column}"] = {str(r[0]): int(r[1]) for r in await cur.fetchall()}
        async with self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM((length(CAST(m.content AS BLOB)) + 3) / 4), 0), "
            f"COALESCE(SUM(m.needs_reindex), 0) FROM memories m {where}",
            params,
        ) as cur:
            row = await cur.fetchone()
        total, tokens, pending = (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)
        result.update(
            total=total,
            tokens_stored=tokens + MEMORY_OVERHEAD_TOKENS * total,
            pending_reindex=pending,
        )
        return result

    async def _event_counts(self, owners: list[str] | None, *, since: float) -> dict[str, Any]:
        """``events`` totals by kind and ``events_by_day`` sums since ``since`` (unix seconds)."""
        ev_where, ev_params = _owners_sql(owners)
        async with self.conn.execute(
            f"SELECT kind, SUM(count) FROM memory_events {ev_where} GROUP BY kind", ev_params
        ) as cur:
            events = {str(r[0]): int(r[1]) for r in await cur.fetchall()}
        joiner = " AND " if ev_where else "WHERE "
        async with self.conn.execute(
            "SELECT date(created_at, 'unixepoch') AS day, kind, SUM(count) FROM memory_events "
            f"{ev_where}{joiner}created_at >= ? GROUP BY day, kind ORDER BY day",
            [*ev_params, since],
        ) as cur:
            daily: dict[str, dict[str, int]] = {}
            for r in await cur.fetchall():
                daily.setdefault(str(r[0]), {})[str(r[1])] = int(r[2])
        return {
            "events": events,
            "events_by_day": [{"day": d, **kinds} for d, kinds in daily.items()],
        }

    async def engine_counts(self) -> EngineCounts:
        """Whole-database counts for the engine status.

        Raises:
            StoreError: the database failed.
        """
        with store_errors("reading engine status"):
            async with self.conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(needs_reindex), 0) FROM memories"
            ) as cur:
                row = await cur.fetchone()
            async with self.conn.execute("SELECT COUNT(*) FROM memory_fts_docsize") as cur:
                fts = await cur.fetchone()
            async with self.conn.execute(
                "SELECT dim, signature, reset_at FROM memory_vec_meta WHERE id = 1"
            ) as cur:
                meta = await cur.fetchone()
        return EngineCounts(
            memories=int(row[0]) if row else 0,
            pending_reindex=int(row[1]) if row else 0,
            fts_rows=int(fts[0]) if fts else 0,
            vector_meta=(
                VectorMeta(dim=int(meta[0]), signature=str(meta[1]), reset_at=float(meta[2]))
                if meta
                else None
            ),
        )
