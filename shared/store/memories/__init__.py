"""Memory rows: upsert, read, list, delete, keyword (FTS5/BM25) search, access recording.

The ``shared.store.memories`` package holds all SQL that writes the ``memories`` table and its
FTS5 index ``memory_fts``: this module (the request path's reads and the learning writes),
:mod:`shared.store.memories.admin` (operator listing, edits, bulk delete, export/import, stats)
and :mod:`shared.store.memories.lifecycle` (sweep, eviction, decay, summaries). The sqlite-vec tier
(:mod:`shared.store.sqlite_vec`) joins ``memories`` and flags rows for re-embedding.

Every read path applies the same visibility filter (:func:`visibility_sql`): owner and end-user
scope, session scope, global memories, expiry and the retention window of typed decay; every
tier applies the same filters (see "Data model" in ``docs/ARCHITECTURE.md``).
"""

from __future__ import annotations

import builtins
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import aiosqlite
import msgspec

from shared.fts_query import index_text
from shared.models import Memory, NewMemory, Scope
from shared.store.connection import store_errors, transaction
from shared.store.memories.rows import (
    COLUMNS,
    UPSERT_SQL,
    KeywordSearch,
    Retention,
    new_public_id,
    row_to_memory,
    visibility_sql,
)
from shared.store.memories.superseded import delete_superseded

__all__ = [
    "COLUMNS",
    "KeywordSearch",
    "MemoryStore",
    "Retention",
    "new_public_id",
    "row_to_memory",
    "visibility_sql",
]

TERM_DF_TTL_S = 30.0
TERM_DF_CACHE_MAX = 20_000
_json_encoder = msgspec.json.Encoder()


class MemoryStore:
    """Async access to the ``memories`` table and its FTS5 index over one connection.

    Writes run in ``BEGIN IMMEDIATE`` transactions; sqlean errors surface as ``StoreError``.
    """

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self._df_cache: dict[tuple[str, int], tuple[int, float]] = {}

    async def upsert(self, new: NewMemory, now: float | None = None) -> tuple[Memory, bool]:
        """Insert, or update the row with the same (owner, user, key); returns (row, created).

        On update ``created_at`` and ``access_count`` are kept, metadata is merged (JSON merge
        patch, RFC 7386), an empty ``context`` keeps the stored one, and the row is marked for
        re-embedding only if its content changed.

        Raises:
            StoreError: the database failed.
        """
        (result,) = await self.upsert_many([new], now)
        return result

    async def upsert_many(
        self, items: Sequence[NewMemory], now: float | None = None
    ) -> list[tuple[Memory, bool]]:
        """:meth:`upsert` each item, all in ONE transaction (all or nothing); same order out.

        Raises:
            StoreError: the database failed (nothing was written).
        """
        ts = time.time() if now is None else now
        out: list[tuple[Memory, bool]] = []
        if not items:
            return out
        with store_errors("upserting memories"):
            async with transaction(self.conn):
                for new in items:
                    public_id = new_public_id()
                    key = new.key if new.key else f"mem:{public_id}"
                    cur = await self.conn.execute(
                        UPSERT_SQL,
                        (
                            public_id,
                            new.owner_id,
                            new.user_id,
                            new.session_id,
                            new.type,
                            new.category,
                            key,
                            new.content,
                            index_text(new.content, key),
                            _json_encoder.encode(new.metadata).decode(),
                            new.source,
                            ts,
                            ts,
                            new.expires_at,
                            new.relevance,
                            new.context,
                        ),
                    )
                    row = await cur.fetchone()
                    await cur.close()
                    assert row is not None
                    memory = row_to_memory(row)
                    out.append((memory, memory.public_id == public_id))
        return out

    async def get(self, public_id: str, owner_id: str | None = None) -> Memory | None:
        """The memory with ``public_id``; ``owner_id`` given → only if that owner holds it."""
        sql = f"SELECT {COLUMNS} FROM memories WHERE public_id = ?"
        params: list[Any] = [public_id]
        if owner_id is not None:
            sql += " AND owner_id = ?"
            params.append(owner_id)
        with store_errors("reading a memory"):
            _rows = list(await self.conn.execute_fetchall(sql, params))
            row = _rows[0] if _rows else None
        return row_to_memory(row) if row else None

    async def get_many(self, ids: Sequence[int]) -> dict[int, Memory]:
        """Memories by integer rowid (missing ids are absent from the result)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with store_errors("reading memories"):
            rows = list(
                await self.conn.execute_fetchall(
                    f"SELECT {COLUMNS} FROM memories WHERE id IN ({marks})", list(ids)
                )
            )
        return {row[0]: row_to_memory(row) for row in rows}

    async def delete(self, public_id: str, owner_id: str | None = None) -> Memory | None:
        """Delete one memory (FTS5 row and vector rows go with it via triggers); returns it."""
        sql = "DELETE FROM memories WHERE public_id = ?"
        params: list[Any] = [public_id]
        if owner_id is not None:
            sql += " AND owner_id = ?"
            params.append(owner_id)
        with store_errors("deleting a memory"):
            async with transaction(self.conn):
                cur = await self.conn.execute(sql + f" RETURNING {COLUMNS}", params)
                row = await cur.fetchone()
                await cur.close()
        return row_to_memory(row) if row else None

    async def list(
        self,
        *,
        owner_id: str | None,
        user_id: str | None = None,
        session_id: str | None = None,
        type: str | None = None,
        category: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[Memory], int]:
        """A page of memories, newest first, and the total matching the filters.

        ``owner_id`` None lists every owner (admin). ``limit`` is clamped to 1..1000.
        """
        cond: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("owner_id", owner_id),
            ("user_id", user_id),
            ("session_id", session_id),
            ("type", type),
            ("category", category),
        ):
            if value is not None:
                cond.append(f"{column} = ?")
                params.append(value)
        where = ("WHERE " + " AND ".join(cond)) if cond else ""
        limit = max(1, min(limit, 1000))
        with store_errors("listing memories"):
            _rows = list(
                await self.conn.execute_fetchall(f"SELECT COUNT(*) FROM memories {where}", params)
            )
            total_row = _rows[0] if _rows else None
            rows = list(
                await self.conn.execute_fetchall(
                    f"SELECT {COLUMNS} FROM memories {where} ORDER BY updated_at DESC, id DESC "
                    "LIMIT ? OFFSET ?",
                    [*params, limit, max(0, offset)],
                )
            )
        total = int(total_row[0]) if total_row else 0
        return [row_to_memory(r) for r in rows], total

    async def keyword_search(
        self,
        scope: Scope,
        match_query: str,
        *,
        limit: int,
        now: float,
        retention: Retention | None = None,
    ) -> builtins.list[tuple[Memory, float]]:
        """FTS5 search: visible memories matching ``match_query``, best first.

        ``match_query`` must come from :func:`shared.fts_query.build_match_query` (never raw user
        text). Returns ``(memory, bm25)`` pairs; FTS5's ``bm25()`` is negative, lower is better
        (Robertson & Zaragoza 2009, as implemented by SQLite FTS5 with k1=1.2, b=0.75).
        """
        cond, params = visibility_sql(scope, now, retention)
        cols = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))
        sql = (
            f"SELECT {cols}, bm25(memory_fts) AS score FROM memory_fts "
            "JOIN memories m ON m.id = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND {cond} ORDER BY score LIMIT ?"
        )
        with store_errors("searching memories"):
            rows = list(await self.conn.execute_fetchall(sql, [match_query, *params, limit]))
        return [(row_to_memory(r), float(r[18])) for r in rows]

    async def filter_visible(
        self, ids: Sequence[int], scope: Scope, now: float, retention: Retention | None = None
    ) -> dict[int, Memory]:
        """Of the rowids ``ids``, the memories ``scope`` may see at ``now`` (vector-tier filter)."""
        if not ids:
            return {}
        cond, params = visibility_sql(scope, now, retention)
        marks = ",".join("?" * len(ids))
        cols = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))
        with store_errors("filtering memories"):
            rows = list(
                await self.conn.execute_fetchall(
                    f"SELECT {cols} FROM memories m WHERE m.id IN ({marks}) AND {cond}",
                    [*ids, *params],
                )
            )
        return {r[0]: row_to_memory(r) for r in rows}

    async def any_visible(
        self, scope: Scope, now: float, retention: Retention | None = None
    ) -> bool:
        """True when at least one memory is visible to ``scope`` at ``now`` (unix seconds).

        By the same rule as recall (:func:`visibility_sql`). One indexed ``EXISTS`` query.

        Raises:
            StoreError: the database failed.
        """
        cond, params = visibility_sql(scope, now, retention)
        with store_errors("checking for memories"):
            rows = list(
                await self.conn.execute_fetchall(
                    f"SELECT EXISTS (SELECT 1 FROM memories m WHERE {cond})", params
                )
            )
        return bool(rows and rows[0][0])

    async def record_access(self, ids: Sequence[int], now: float) -> None:
        """Count one injection per occurrence of each rowid in ``ids`` (twice listed: twice).

        Touches only counters, never the FTS index; the change feed gets one ``'a'`` row per
        memory counted, from one set-based statement (migration 0014; a row trigger cost more).
        """
        if not ids:
            return
        counts = sorted(Counter(ids).items())
        with store_errors("recording access"):
            async with transaction(self.conn, notify=False):
                await self.conn.executemany(
                    "UPDATE memories SET access_count = access_count + ?, last_accessed_at = "
                    "MAX(COALESCE(last_accessed_at, 0), ?) WHERE id = ?",
                    [(n, now, memory_id) for memory_id, n in counts],
                )
                await self.conn.execute(
                    "INSERT INTO memory_changes (memory_id, owner_id, op) "
                    "SELECT id, owner_id, 'a' FROM memories "
                    "WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
                    (json.dumps([memory_id for memory_id, _ in counts]),),
                )

    async def count(self, owner_id: str | None = None) -> int:
        """Number of memories (of one owner, or all)."""
        sql = "SELECT COUNT(*) FROM memories" + (" WHERE owner_id = ?" if owner_id else "")
        with store_errors("counting memories"):
            _rows = list(await self.conn.execute_fetchall(sql, [owner_id] if owner_id else []))
            row = _rows[0] if _rows else None
        return int(row[0]) if row else 0

    async def pending_reindex(
        self, *, after_id: int = 0, limit: int = 256
    ) -> builtins.list[Memory]:
        """Memories marked ``needs_reindex`` with rowid > ``after_id``, in rowid order."""
        with store_errors("listing memories to embed"):
            rows = list(
                await self.conn.execute_fetchall(
                    f"SELECT {COLUMNS} FROM memories WHERE needs_reindex = 1 AND id > ? "
                    "ORDER BY id LIMIT ?",
                    (after_id, limit),
                )
            )
        return [row_to_memory(r) for r in rows]

    async def count_pending_reindex(self) -> int:
        """Number of memories waiting for an embedding."""
        with store_errors("counting memories to embed"):
            _rows = list(
                await self.conn.execute_fetchall(
                    "SELECT COUNT(*) FROM memories WHERE needs_reindex = 1"
                )
            )
            row = _rows[0] if _rows else None
        return int(row[0]) if row else 0

    async def mark_indexed(self, done: Sequence[tuple[int, float]]) -> None:
        """Clear ``needs_reindex`` for ``(rowid, updated_at)`` pairs.

        Only rows that did not change since they were read are cleared (a concurrent content
        update keeps its flag).
        """
        if not done:
            return
        with store_errors("marking memories embedded"):
            async with transaction(self.conn):
                await self.conn.executemany(
                    "UPDATE memories SET needs_reindex = 0 WHERE id = ? AND updated_at = ?",
                    list(done),
                )

    async def mark_all_for_reindex(self, owner_id: str | None = None) -> int:
        """Flag every memory (of one owner, or all) for re-embedding; returns how many."""
        sql = "UPDATE memories SET needs_reindex = 1"
        params: list[Any] = []
        if owner_id is not None:
            sql += " WHERE owner_id = ?"
            params.append(owner_id)
        with store_errors("marking memories for reindex"):
            async with transaction(self.conn):
                cur = await self.conn.execute(sql, params)
                changed = cur.rowcount
                await cur.close()
        return int(changed)

    async def term_doc_counts(self, quoted_terms: Sequence[str], cap: int) -> Sequence[int]:
        """Documents matching each FTS5 term (already quoted), counted up to ``cap``.

        In one round trip; cost is bounded by ``cap`` postings per term. Counts are cached per term
        for :data:`TERM_DF_TTL_S` seconds (a term's frequency class changes slowly).
        """
        now = time.monotonic()
        counts: list[int | None] = []
        for term in quoted_terms:
            hit = self._df_cache.get((term, cap))
            counts.append(hit[0] if hit is not None and hit[1] > now else None)
        missing = [t for t, c in zip(quoted_terms, counts, strict=True) if c is None]
        if missing:
            sql = " UNION ALL ".join(
                f"SELECT {i}, (SELECT COUNT(*) FROM (SELECT 1 FROM memory_fts "
                f"WHERE memory_fts MATCH ? LIMIT {int(cap)}))"
                for i in range(len(missing))
            )
            with store_errors("counting term frequencies"):
                rows = await self.conn.execute_fetchall(sql, list(missing))
            if len(self._df_cache) > TERM_DF_CACHE_MAX:
                self._df_cache.clear()
            found = {missing[int(i)]: int(n) for i, n in rows}
            for term, n in found.items():
                self._df_cache[(term, cap)] = (n, now + TERM_DF_TTL_S)
            counts = [
                found.get(t, 0) if c is None else c
                for t, c in zip(quoted_terms, counts, strict=True)
            ]
        return [int(c or 0) for c in counts]

    async def delete_keys(
        self,
        owner_id: str,
        user_id: str,
        keys: Sequence[str],
        prefixes: Sequence[str] = (),
        keep: Sequence[str] = (),
        drop_turn: Callable[[str], bool] | None = None,
        replaced: Mapping[str, str] | None = None,
    ) -> Sequence[int]:
        """Delete superseded facts and turns: :func:`.superseded.delete_superseded`."""
        return await delete_superseded(
            self.conn, owner_id, user_id, keys, prefixes, keep, drop_turn, replaced
        )
