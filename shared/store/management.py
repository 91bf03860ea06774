"""Management SQL over ``memories``: filtered listing with keyword search, bulk delete, edits,
export/import in rowid batches, statistics, engine status.

Unlike recall (:func:`shared.store.memories.visibility_sql`), management sees every row of the
owners it is given (session-scoped, expired, past retention): operators must be able to find and
delete what is stored, not only what would be recalled. Tenant scoping is the ``owners`` list of
:class:`MemoryFilter`, always applied inside the SQL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any

import aiosqlite
import msgspec
import sqlean

from shared.errors import Conflict
from shared.fts_query import index_text
from shared.models import Memory, MemoryCategory, MemoryType
from shared.ranking import MEMORY_OVERHEAD_TOKENS
from shared.store.connection import store_errors, transaction
from shared.store.memories import COLUMNS, row_to_memory

_encoder = msgspec.json.Encoder()
_PREFIXED = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))
DAY_S = 86_400.0


class MemoryFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which rows a management call touches. ``owners`` None = every owner (admin only);
    ``match`` is an FTS5 query from :func:`shared.fts_query.build_match_query` (never raw text).
    ``user_id``/``session_id``/``type``/``category`` None = any."""

    owners: list[str] | None
    user_id: str | None = None
    session_id: str | None = None
    type: str | None = None
    category: str | None = None
    match: str | None = None


class MemoryChanges(msgspec.Struct, frozen=True, kw_only=True):
    """Fields an update may set; ``UNSET`` leaves a field unchanged (``expires_at`` None clears)."""

    content: str | msgspec.UnsetType = msgspec.UNSET
    type: MemoryType | msgspec.UnsetType = msgspec.UNSET
    category: MemoryCategory | msgspec.UnsetType = msgspec.UNSET
    key: str | msgspec.UnsetType = msgspec.UNSET
    metadata: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    expires_at: float | msgspec.UnsetType | None = msgspec.UNSET
    relevance: float | msgspec.UnsetType = msgspec.UNSET


class ImportRow(msgspec.Struct, frozen=True, kw_only=True):
    """One exported memory (a JSON Lines record): ``id`` is the public id; times unix seconds."""

    id: str
    owner_id: str
    content: str
    key: str
    user_id: str = ""
    session_id: str | None = None
    type: MemoryType = "semantic"
    category: MemoryCategory = "fact"
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    source: str = "import"
    created_at: float
    updated_at: float
    expires_at: float | None = None
    last_accessed_at: float | None = None
    access_count: Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)] = 0  # SQLite INTEGER
    relevance: float = 1.0


def _where(flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
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


class ManagementStore:
    """Management queries over one connection (the writer: edits and imports are writes)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def page(self, flt: MemoryFilter, *, limit: int, offset: int) -> tuple[list[Memory], int]:
        """A page of matching memories and the total. With ``match``: best BM25 first; else
        newest ``updated_at`` first. ``limit`` is clamped to 1..1000, ``offset`` to >= 0.

        Raises:
            StoreError: the database failed.
        """
        where, params = _where(flt)
        limit = max(1, min(limit, 1000))
        if flt.match is not None:
            sql = (
                f"SELECT {_PREFIXED} FROM memory_fts JOIN memories m ON m.id = memory_fts.rowid "
                f"{where} AND memory_fts MATCH ? ORDER BY bm25(memory_fts), m.id DESC "
                "LIMIT ? OFFSET ?"
            )
            page_params = [*params, flt.match, limit, max(0, offset)]
        else:
            sql = (
                f"SELECT {_PREFIXED} FROM memories m {where} "
                "ORDER BY m.updated_at DESC, m.id DESC LIMIT ? OFFSET ?"
            )
            page_params = [*params, limit, max(0, offset)]
        with store_errors("listing memories"):
            async with self.conn.execute(f"SELECT COUNT(*) FROM memories m {where}", params) as c:
                total_row = await c.fetchone()
            async with self.conn.execute(sql, page_params) as cur:
                rows = await cur.fetchall()
        return [row_to_memory(r) for r in rows], int(total_row[0]) if total_row else 0

    async def delete_matching(self, flt: MemoryFilter, *, dry_run: bool) -> int:
        """Delete (or with ``dry_run`` only count) the matching memories; returns the count.

        Raises:
            StoreError: the database failed.
        """
        where, params = _where(flt)
        with store_errors("bulk-deleting memories"):
            if dry_run:
                async with self.conn.execute(
                    f"SELECT COUNT(*) FROM memories m {where}", params
                ) as cur:
                    row = await cur.fetchone()
                return int(row[0]) if row else 0
        return len(await self.delete_matching_ids(flt))

    async def delete_matching_ids(self, flt: MemoryFilter) -> list[int]:
        """Delete the matching memories in one transaction; returns their rowids, ascending
        (for the vector tiers outside SQLite: Qdrant).

        Raises:
            StoreError: the database failed (nothing is deleted).
        """
        where, params = _where(flt)
        with store_errors("bulk-deleting memories"):
            async with (
                transaction(self.conn),
                self.conn.execute(
                    f"DELETE FROM memories WHERE id IN (SELECT m.id FROM memories m {where}) "
                    "RETURNING id",
                    params,
                ) as cur,
            ):
                rows = await cur.fetchall()
        return sorted(int(r[0]) for r in rows)

    async def update(
        self, public_id: str, owners: list[str] | None, changes: MemoryChanges, now: float
    ) -> Memory | None:
        """Apply ``changes`` to the memory ``public_id`` if one of ``owners`` holds it (None =
        any owner); returns the new row, or None if not found. A changed content or key marks
        the row ``needs_reindex``.

        Raises:
            Conflict (409): the new key is already used by another memory of the same owner+user.
            StoreError: the database failed.
        """
        owner_sql = ""
        params: list[Any] = [public_id]
        if owners is not None:
            owner_sql = f" AND owner_id IN ({','.join('?' * len(owners))})"
            params.extend(owners)
        with store_errors("updating a memory"):
            async with transaction(self.conn):
                async with self.conn.execute(
                    f"SELECT {COLUMNS} FROM memories WHERE public_id = ?{owner_sql}", params
                ) as cur:
                    row = await cur.fetchone()
                if row is None:
                    return None
                old = row_to_memory(row)
                content = old.content if changes.content is msgspec.UNSET else changes.content
                key = old.key if changes.key is msgspec.UNSET else changes.key
                values = {
                    "content": content,
                    "key": key,
                    "search_text": index_text(content, key),
                    "type": old.type if changes.type is msgspec.UNSET else changes.type,
                    "category": (
                        old.category if changes.category is msgspec.UNSET else changes.category
                    ),
                    "metadata": _encoder.encode(
                        old.metadata if changes.metadata is msgspec.UNSET else changes.metadata
                    ).decode(),
                    "expires_at": (
                        old.expires_at
                        if changes.expires_at is msgspec.UNSET
                        else changes.expires_at
                    ),
                    "relevance": (
                        old.relevance if changes.relevance is msgspec.UNSET else changes.relevance
                    ),
                    "updated_at": now,
                    "needs_reindex": 1
                    if (content != old.content or key != old.key or old.needs_reindex)
                    else 0,
                }
                assignments = ", ".join(f"{k} = ?" for k in values)
                try:
                    cur = await self.conn.execute(
                        f"UPDATE memories SET {assignments} WHERE id = ? RETURNING {COLUMNS}",
                        [*values.values(), old.id],
                    )
                except sqlean.IntegrityError as exc:
                    raise Conflict(
                        f"key '{key}' is already used by another memory of this owner and user",
                        code="duplicate_key",
                    ) from exc
                new_row = await cur.fetchone()
                await cur.close()
        return row_to_memory(new_row) if new_row else None

    async def batches(
        self, flt: MemoryFilter, batch_size: int = 500
    ) -> AsyncIterator[list[Memory]]:
        """Every matching memory in rowid order, ``batch_size`` at a time (keyset pagination,
        so a long export never holds a read transaction open between batches).

        Raises:
            StoreError: the database failed.
        """
        where, params = _where(flt)
        joiner = " AND " if where else "WHERE "
        last = 0
        while True:
            with store_errors("exporting memories"):
                async with self.conn.execute(
                    f"SELECT {_PREFIXED} FROM memories m {where}{joiner}m.id > ? "
                    "ORDER BY m.id LIMIT ?",
                    [*params, last, batch_size],
                ) as cur:
                    rows = await cur.fetchall()
            if not rows:
                return
            batch = [row_to_memory(r) for r in rows]
            last = batch[-1].id
            yield batch

    async def import_rows(self, rows: Sequence[ImportRow]) -> tuple[int, int]:
        """Insert or update ``rows`` by public id, keeping their times; returns (written, skipped).

        Idempotent: importing the same rows twice writes the same values. A row whose public id
        exists under another owner, or whose (owner, user, key) is held by another public id, is
        skipped. Written rows are marked ``needs_reindex`` (the vector tier is rebuilt by the
        reindex/embed jobs).

        Raises:
            StoreError: the database failed.
        """
        written = 0
        with store_errors("importing memories"):
            async with transaction(self.conn):
                for r in rows:
                    # a row whose new key clashes with another memory's (the DO UPDATE path) is
                    # skipped like any other clash, not an error for the whole import
                    await self.conn.execute("SAVEPOINT import_row")
                    try:
                        cur = await self._import_row(r)
                        try:
                            row = await cur.fetchone()
                        finally:
                            await cur.close()
                    except sqlean.IntegrityError:
                        await self.conn.execute("ROLLBACK TO import_row")
                        row = None
                    await self.conn.execute("RELEASE import_row")
                    written += row is not None
        return written, len(rows) - written

    async def _import_row(self, r: ImportRow) -> aiosqlite.Cursor:
        """Run the import upsert of one row (see :meth:`import_rows`); the caller reads the
        ``RETURNING id`` row (none: skipped) and closes the cursor."""
        return await self.conn.execute(
            """
                        INSERT INTO memories (public_id, owner_id, user_id, session_id, type,
                            category, key, content, search_text, metadata, source, created_at,
                            updated_at, expires_at, last_accessed_at, access_count, relevance,
                            needs_reindex)
                        VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1)
                        ON CONFLICT (public_id) DO UPDATE SET
                            user_id = excluded.user_id, session_id = excluded.session_id,
                            type = excluded.type, category = excluded.category,
                            key = excluded.key, content = excluded.content,
                            search_text = excluded.search_text, metadata = excluded.metadata,
                            source = excluded.source, created_at = excluded.created_at,
                            updated_at = excluded.updated_at, expires_at = excluded.expires_at,
                            last_accessed_at = excluded.last_accessed_at,
                            access_count = excluded.access_count,
                            relevance = excluded.relevance, needs_reindex = 1
                        WHERE memories.owner_id = excluded.owner_id
                        ON CONFLICT DO NOTHING
                        RETURNING id
                        """,
            (
                r.id,
                r.owner_id,
                r.user_id,
                r.session_id,
                r.type,
                r.category,
                r.key,
                r.content,
                index_text(r.content, r.key),
                _encoder.encode(r.metadata).decode(),
                r.source,
                r.created_at,
                r.updated_at,
                r.expires_at,
                r.last_accessed_at,
                r.access_count,
                r.relevance,
            ),
        )

    async def public_id_owner(self, public_id: str) -> str | None:
        """The owner of ``public_id``, or None if no such memory."""
        with store_errors("reading a memory owner"):
            async with self.conn.execute(
                "SELECT owner_id FROM memories WHERE public_id = ?", [public_id]
            ) as cur:
                row = await cur.fetchone()
        return str(row[0]) if row else None

    async def stats(self, owners: list[str] | None, *, days: int, now: float) -> dict[str, Any]:
        """Counts by type and category, ``total``, ``tokens_stored`` (estimate:
        ceil(UTF-8 bytes / 4) + :data:`MEMORY_OVERHEAD_TOKENS` per memory), ``pending_reindex``,
        event totals by kind, and per-day event sums for the last ``days`` days (UTC dates).

        Raises:
            StoreError: the database failed.
        """
        where, params = _where(MemoryFilter(owners=owners))
        result: dict[str, Any] = {}
        with store_errors("reading statistics"):
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
            ev_where = ""
            ev_params: list[Any] = []
            if owners is not None:
                ev_where = (
                    f"WHERE owner_id IN ({','.join('?' * len(owners))})" if owners else ("WHERE 0")
                )
                ev_params = list(owners)
            async with self.conn.execute(
                f"SELECT kind, SUM(count) FROM memory_events {ev_where} GROUP BY kind", ev_params
            ) as cur:
                events = {str(r[0]): int(r[1]) for r in await cur.fetchall()}
            since = now - days * DAY_S
            joiner = " AND " if ev_where else "WHERE "
            async with self.conn.execute(
                "SELECT date(created_at, 'unixepoch') AS day, kind, SUM(count) FROM memory_events "
                f"{ev_where}{joiner}created_at >= ? GROUP BY day, kind ORDER BY day",
                [*ev_params, since],
            ) as cur:
                daily: dict[str, dict[str, int]] = {}
                for r in await cur.fetchall():
                    daily.setdefault(str(r[0]), {})[str(r[1])] = int(r[2])
        result.update(
            total=total,
            tokens_stored=tokens + MEMORY_OVERHEAD_TOKENS * total,
            pending_reindex=pending,
            events=events,
            events_by_day=[{"day": d, **kinds} for d, kinds in daily.items()],
        )
        return result

    async def engine_counts(self) -> dict[str, Any]:
        """Whole-database counts for engine status: ``memories``, ``pending_reindex``,
        ``fts_rows`` and the active vector meta (``dim``, ``signature``, ``reset_at``) or None.

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
        return {
            "memories": int(row[0]) if row else 0,
            "pending_reindex": int(row[1]) if row else 0,
            "fts_rows": int(fts[0]) if fts else 0,
            "vector_meta": (
                {"dim": int(meta[0]), "signature": str(meta[1]), "reset_at": float(meta[2])}
                if meta
                else None
            ),
        }
