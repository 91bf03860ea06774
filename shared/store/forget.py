"""Forget SQL: candidate memories of a forget target, their derived copies, and tombstones.

The matching decision itself is pure (:mod:`shared.forget_terms`); this module only fetches rows.
Candidates are limited to one owner and one end user exactly (``user_id`` as stored, ``''`` for
owner-wide memories of a key used without end users): a forget never reaches another end user's
memories. See docs/ARCHITECTURE.md, "Forget".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiosqlite
import msgspec

from shared.fts_query import quote_term
from shared.models import Memory
from shared.store.connection import store_errors, transaction
from shared.store.memories import COLUMNS, row_to_memory

_CHUNK = 500  # bound on SQL parameters per statement
_json = msgspec.json.Encoder()
_hashes = msgspec.json.Decoder(list[str])


def prefix_match_query(stems: Sequence[str]) -> str | None:
    """FTS5 query OR-ing a prefix query per stem (``"work"* OR "gym"*``), None when empty.

    Stems come from :func:`shared.forget_terms.target_stems` (letters and digits only) and are
    quoted anyway (:func:`shared.fts_query.quote_term`); the prefix form lets a crude stem such
    as ``liv`` find the porter-stemmed ``live`` (SQLite FTS5 docs §3.3, prefix queries).
    """
    parts = [quote_term(s) + "*" for s in stems if s]
    return " OR ".join(parts) if parts else None


class ForgetStore:
    """Queries of the forget flow, on the writer connection (``Store.forget``)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def candidates(
        self, owner_id: str, user_id: str, stems: Sequence[str], limit: int
    ) -> list[Memory]:
        """Memories of one owner and end user that may match a target.

        Up to ``limit`` memories of ``owner_id``/``user_id`` sharing a stem prefix with the target,
        best BM25 first (expired ones included: a forget removes those too).
        """
        match = prefix_match_query(stems)
        if match is None:
            return []
        cols = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))
        sql = (
            f"SELECT {cols} FROM memory_fts JOIN memories m ON m.id = memory_fts.rowid "
            "WHERE memory_fts MATCH ? AND m.owner_id = ? AND m.user_id = ? "
            "ORDER BY bm25(memory_fts) LIMIT ?"
        )
        with store_errors("finding memories to forget"):
            rows = await self.conn.execute_fetchall(sql, (match, owner_id, user_id, limit))
        return [row_to_memory(r) for r in rows]

    async def keyed_candidates(
        self, owner_id: str, user_id: str, patterns: Sequence[str], limit: int
    ) -> list[Memory]:
        """Memories of one owner and end user whose key matches a ``LIKE`` pattern.

        Up to ``limit`` of ``owner_id``/``user_id``'s memories whose ``key`` matches one of
        ``patterns`` (:func:`shared.forget_terms.slot_key_patterns`), newest first: the facts a
        forget target names by their slot ("forget my job": ``identity:employer``).
        """
        if not patterns or limit <= 0:
            return []
        likes = " OR ".join("key LIKE ?" for _ in patterns)
        sql = (
            f"SELECT {COLUMNS} FROM memories WHERE owner_id = ? AND user_id = ? AND ({likes}) "
            "ORDER BY id DESC LIMIT ?"
        )
        with store_errors("finding memories to forget by key"):
            rows = await self.conn.execute_fetchall(sql, (owner_id, user_id, *patterns, limit))
        return [row_to_memory(r) for r in rows]

    async def derived(
        self, owner_id: str, user_id: str, request_ids: Sequence[str], public_ids: Sequence[str]
    ) -> list[Memory]:
        """Memories derived from the same learn requests, and summaries of them.

        Memories of ``owner_id``/``user_id`` written by the same learn requests
        (``metadata.request_id`` in ``request_ids``: the captured turn a fact came from and the
        facts of a captured turn) and summaries whose ``metadata.summary.source_ids`` hold one of
        ``public_ids``.
        """
        out: dict[int, Memory] = {}
        cols = COLUMNS
        for start in range(0, len(request_ids), _CHUNK):
            chunk = list(request_ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            sql = (
                f"SELECT {cols} FROM memories WHERE owner_id = ? AND user_id = ? "
                f"AND json_extract(metadata, '$.request_id') IN ({marks})"
            )
            with store_errors("finding derived memories"):
                rows = await self.conn.execute_fetchall(sql, (owner_id, user_id, *chunk))
            out.update((int(r[0]), row_to_memory(r)) for r in rows)
        for start in range(0, len(public_ids), _CHUNK):
            chunk = list(public_ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            sql = (
                f"SELECT {cols} FROM memories m WHERE owner_id = ? AND user_id = ? "
                "AND category = 'summary' AND EXISTS (SELECT 1 FROM "
                f"json_each(m.metadata, '$.summary.source_ids') j WHERE j.value IN ({marks}))"
            )
            with store_errors("finding derived summaries"):
                rows = await self.conn.execute_fetchall(sql, (owner_id, user_id, *chunk))
            out.update((int(r[0]), row_to_memory(r)) for r in rows)
        return [out[i] for i in sorted(out)]

    async def contexts_holding(
        self, owner_id: str, user_id: str, text: str, limit: int = 1000
    ) -> list[tuple[int, str]]:
        """Memories of one owner and end user whose ``context`` contains ``text``.

        Up to ``limit`` ``(rowid, context)`` pairs (a plain substring test).
        """
        with store_errors("finding contexts to scrub"):
            rows = await self.conn.execute_fetchall(
                "SELECT id, context FROM memories WHERE owner_id = ? AND user_id = ? "
                "AND instr(context, ?) > 0 LIMIT ?",
                (owner_id, user_id, text, limit),
            )
        return [(int(r[0]), str(r[1])) for r in rows]

    async def contexts_of(self, owner_id: str, user_id: str) -> list[tuple[int, str]]:
        """Every ``(rowid, context)`` of one owner and end user with a non-empty context.

        Raises:
            StoreError: the database failed.
        """
        with store_errors("reading contexts to scrub"):
            rows = await self.conn.execute_fetchall(
                "SELECT id, context FROM memories WHERE owner_id = ? AND user_id = ? "
                "AND context <> ''",
                (owner_id, user_id),
            )
        return [(int(r[0]), str(r[1])) for r in rows]

    async def set_contexts(self, contexts: Sequence[tuple[int, str]]) -> None:
        """Replace the ``context`` of each ``(rowid, context)`` in one transaction.

        The change feed and the recall index see it as a change of those memories.
        """
        if not contexts:
            return
        with store_errors("scrubbing contexts"):
            async with transaction(self.conn):
                await self.conn.executemany(
                    "UPDATE memories SET context = ? WHERE id = ?",
                    [(context, rowid) for rowid, context in contexts],
                )

    async def add_tombstone(
        self, owner_id: str, user_id: str, term_hashes: Sequence[str], created_at: float
    ) -> None:
        """Record a forget tombstone.

        Record a forget: learning of requests made at or before ``created_at`` (unix seconds) drops
        memories holding every hashed stem of ``term_hashes``.
        """
        with store_errors("recording a forget"):
            async with transaction(self.conn):
                await self.conn.execute(
                    "INSERT INTO forget_tombstones (owner_id, user_id, term_hashes, created_at) "
                    "VALUES (?,?,?,?)",
                    (owner_id, user_id, _json.encode(list(term_hashes)).decode(), created_at),
                )

    async def remove_tombstone(
        self, owner_id: str, user_id: str, term_hashes: Sequence[str], created_at: float
    ) -> None:
        """Withdraw a forget tombstone.

        Withdraw the tombstone :meth:`add_tombstone` wrote with these same arguments (a forget that
        turned out unclear deletes nothing and blocks nothing).
        """
        with store_errors("withdrawing a forget"):
            async with transaction(self.conn):
                await self.conn.execute(
                    "DELETE FROM forget_tombstones WHERE owner_id = ? AND user_id = ? "
                    "AND term_hashes = ? AND created_at = ?",
                    (owner_id, user_id, _json.encode(list(term_hashes)).decode(), created_at),
                )

    async def tombstones_since(
        self, owner_id: str, user_id: str, since: float
    ) -> list[tuple[str, ...]]:
        """Hashed stems of every forget made since a time.

        Hashed stems of every forget of ``owner_id``/``user_id`` made at or after ``since`` (unix
        seconds), oldest first (index range scan).
        """
        with store_errors("reading forgets"):
            rows = await self.conn.execute_fetchall(
                "SELECT term_hashes FROM forget_tombstones WHERE owner_id = ? AND user_id = ? "
                "AND created_at >= ? ORDER BY created_at, id",
                (owner_id, user_id, since),
            )
        out: list[tuple[str, ...]] = []
        for row in rows:
            value: Any = row[0]
            out.append(tuple(_hashes.decode(value)))
        return out
