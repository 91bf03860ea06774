"""Export and import of memory rows: the store layer of :mod:`shared.export_import`.

Export reads every row of a filter in rowid batches (keyset pagination); import upserts
:class:`ImportRow` records by public id, keeping their times and marking them ``needs_reindex``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any

import aiosqlite
import msgspec
import sqlean

from shared.fts_query import index_text
from shared.models import (
    Content,
    EndUserId,
    Memory,
    MemoryCategory,
    MemoryType,
    Relevance,
    SearchContext,
    SessionId,
    UnixTime,
    UpsertKey,
)
from shared.store.connection import store_errors, transaction
from shared.store.memories import row_to_memory
from shared.store.memories.admin import PREFIXED_COLUMNS, MemoryFilter, where_sql

_encoder = msgspec.json.Encoder()

#: Insert a row, or update the row of the same public id if the same owner holds it; a row of
#: another owner, or clashing with another memory's owner+user+key, is left alone.
IMPORT_SQL = """
INSERT INTO memories (public_id, owner_id, user_id, session_id, type,
    category, key, content, search_text, metadata, source, created_at,
    updated_at, expires_at, last_accessed_at, access_count, relevance,
    context, needs_reindex)
VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1)
ON CONFLICT (public_id) DO UPDATE SET
    user_id = excluded.user_id, session_id = excluded.session_id,
    type = excluded.type, category = excluded.category,
    key = excluded.key, content = excluded.content,
    search_text = excluded.search_text, metadata = excluded.metadata,
    source = excluded.source, created_at = excluded.created_at,
    updated_at = excluded.updated_at, expires_at = excluded.expires_at,
    last_accessed_at = excluded.last_accessed_at,
    access_count = excluded.access_count,
    relevance = excluded.relevance, context = excluded.context,
    needs_reindex = 1
WHERE memories.owner_id = excluded.owner_id
ON CONFLICT DO NOTHING
RETURNING id
"""


class ImportRow(msgspec.Struct, frozen=True, kw_only=True):
    """One exported memory (a JSON Lines record): ``id`` is the public id; times unix seconds."""

    id: str
    owner_id: str
    content: Content
    key: UpsertKey
    user_id: EndUserId = ""
    session_id: SessionId | None = None
    type: MemoryType = "semantic"
    category: MemoryCategory = "fact"
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    source: str = "import"
    created_at: UnixTime
    updated_at: UnixTime
    expires_at: UnixTime | None = None
    last_accessed_at: UnixTime | None = None
    access_count: Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)] = 0  # SQLite INTEGER
    relevance: Relevance = 1.0
    context: SearchContext = ""


def import_params(r: ImportRow) -> tuple[Any, ...]:
    """The :data:`IMPORT_SQL` parameters of ``r`` (search text and metadata JSON derived)."""
    return (
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
        r.context,
    )


class MemoryExportStore:
    """Export and import over one connection (the writer: imports are writes)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def batches(
        self, flt: MemoryFilter, batch_size: int = 500
    ) -> AsyncIterator[list[tuple[Memory, str]]]:
        """Every matching memory in rowid order, each with its search context.

        ``(memory, context)`` pairs (``context``: the ``memories.context`` column, ``""`` when
        unknown), ``batch_size`` at a time (keyset pagination, so a long export never holds a
        read transaction open between batches).

        Raises:
            StoreError: the database failed.
        """
        where, params = where_sql(flt)
        joiner = " AND " if where else "WHERE "
        last = 0
        while True:
            with store_errors("exporting memories"):
                async with self.conn.execute(
                    f"SELECT {PREFIXED_COLUMNS}, m.context FROM memories m {where}{joiner}m.id > ? "
                    "ORDER BY m.id LIMIT ?",
                    [*params, last, batch_size],
                ) as cur:
                    rows = await cur.fetchall()
            if not rows:
                return
            batch = [(row_to_memory(r), r[-1]) for r in rows]
            last = batch[-1][0].id
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
                        cur = await self.conn.execute(IMPORT_SQL, import_params(r))
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
