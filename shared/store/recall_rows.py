"""SQL of the in-memory recall index: the change feed (``memory_changes``) and row loading.

The feed is written by the triggers of migration 0007; this module only reads and prunes it.
Rows are read with :data:`shared.store.memories.COLUMNS` plus the two search fields
(``search_text``, ``context``), so the index can rank them and hand out :class:`Memory` records
without another query. See docs/ARCHITECTURE.md, "Recall engine".
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import aiosqlite
import msgspec

from shared.models import Memory
from shared.store.connection import autocommit, store_errors
from shared.store.memories import COLUMNS, row_to_memory

LOAD_COLUMNS = COLUMNS + ", search_text, context"
"""Selected columns: :data:`COLUMNS` (decoded by :func:`row_to_memory`) then the search fields."""


class Change(msgspec.Struct, frozen=True, array_like=True):
    """One feed row: ``seq`` (strictly increasing), memory rowid, owner, ``op`` ∈ u | d | a."""

    seq: int
    memory_id: int
    owner_id: str
    op: str


class IndexedRow(msgspec.Struct, frozen=True):
    """A memory with its two search fields.

    A memory with its two search fields: ``search_text`` (content, key, CJK bigrams, as the
    FTS5 column holds it) and ``context`` (neighbouring turns; ``""`` when unknown).
    """

    memory: Memory
    search_text: str
    context: str


def _indexed(row: Sequence[Any]) -> IndexedRow:
    return IndexedRow(row_to_memory(row), str(row[18]), str(row[19] or ""))


async def feed_head(conn: aiosqlite.Connection) -> int:
    """The newest sequence number of the feed (0 when empty). One read of the table's b-tree end.

    Raises:
        StoreError: the database failed.
    """
    with store_errors("reading the change feed head"):
        rows = list(await conn.execute_fetchall("SELECT COALESCE(MAX(seq), 0) FROM memory_changes"))
    return int(rows[0][0]) if rows else 0


async def feed_tail(conn: aiosqlite.Connection) -> int:
    """The oldest sequence number still held.

    The oldest sequence number still held (0 when empty): a reader that applied less than
    ``tail - 1`` missed pruned changes and must rebuild.

    Raises:
        StoreError: the database failed.
    """
    with store_errors("reading the change feed tail"):
        rows = list(await conn.execute_fetchall("SELECT COALESCE(MIN(seq), 0) FROM memory_changes"))
    return int(rows[0][0]) if rows else 0


def has_changes_after(conn: Any, after: int) -> bool:
    """Whether the feed holds a change with ``seq > after`` (a fresh read snapshot).

    Access-counter changes (``op`` ``a``) do not count: recall need not see them at once, and
    every injection writes one, so counting them would make most probes answer True.

    Raises:
        StoreError: the database failed.
    """
    with store_errors("probing the change feed"):
        sql = "SELECT 1 FROM memory_changes WHERE seq > ? AND op <> 'a' LIMIT 1"
        row = conn.execute(sql, (after,)).fetchone()
    return row is not None


async def changes_since(
    conn: aiosqlite.Connection, after: int, limit: int, owner_id: str | None = None
) -> list[Change]:
    """Up to ``limit`` feed rows with ``seq > after``, in sequence order.

    ``owner_id``: that owner's rows only (index ``memory_changes_owner_seq``, migration 0013).

    Raises:
        StoreError: the database failed.
    """
    with store_errors("reading the change feed"):
        if owner_id is None:
            rows = await conn.execute_fetchall(
                "SELECT seq, memory_id, owner_id, op FROM memory_changes WHERE seq > ? "
                "ORDER BY seq LIMIT ?",
                (after, limit),
            )
        else:
            rows = await conn.execute_fetchall(
                "SELECT seq, memory_id, owner_id, op FROM memory_changes "
                "WHERE owner_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (owner_id, after, limit),
            )
    return [Change(int(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]


async def prune_changes(conn: aiosqlite.Connection, older_than: float, keep_last: int) -> int:
    """Delete feed rows written before ``older_than``.

    Delete feed rows written before ``older_than`` (unix seconds), always keeping the newest
    ``keep_last`` rows; returns how many were deleted. Commit hooks are not run: no memory
    changed.

    Raises:
        StoreError: the database failed.
    """
    with store_errors("pruning the change feed"):
        return await autocommit(
            conn,
            "DELETE FROM memory_changes WHERE at < ? AND seq <= "
            "(SELECT COALESCE(MAX(seq), 0) FROM memory_changes) - ?",
            (older_than, keep_last),
        )


async def owner_rows(
    conn: aiosqlite.Connection, owner_id: str, after_id: int, limit: int
) -> list[Sequence[Any]]:
    """Up to ``limit`` memory rows of ``owner_id`` with rowid > ``after_id``, by rowid (undecoded).

    A cold load reads an owner in such chunks (one indexed range scan each, no transaction held
    across them), after reading the feed head: a row changed between two chunks is re-read when
    the feed's change after that head is applied.

    Raises:
        StoreError: the database failed.
    """
    with store_errors("loading an owner's memories"):
        return list(
            await conn.execute_fetchall(
                f"SELECT {LOAD_COLUMNS} FROM memories WHERE owner_id = ? AND id > ? "
                "ORDER BY id LIMIT ?",
                (owner_id, after_id, limit),
            )
        )


def decode_rows(rows: Sequence[Sequence[Any]]) -> list[IndexedRow]:
    """Decode rows selected with :data:`LOAD_COLUMNS`. CPU only (~1 µs per row)."""
    return [_indexed(r) for r in rows]


async def rows_by_id(conn: aiosqlite.Connection, ids: Sequence[int]) -> dict[int, IndexedRow]:
    """The current rows of these rowids (deleted ones are absent).

    Raises:
        StoreError: the database failed.
    """
    out: dict[int, IndexedRow] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        with store_errors("reading changed memories"):
            rows = await conn.execute_fetchall(
                f"SELECT {LOAD_COLUMNS} FROM memories WHERE id IN ({marks})", chunk
            )
        out.update((int(r[0]), _indexed(r)) for r in rows)
    return out


async def access_by_id(
    conn: aiosqlite.Connection, ids: Sequence[int]
) -> dict[int, tuple[int, float | None]]:
    """``rowid → (access_count, last_accessed_at)`` of these rowids (deleted ones absent).

    Raises:
        StoreError: the database failed.
    """
    out: dict[int, tuple[int, float | None]] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        with store_errors("reading access counters"):
            rows = await conn.execute_fetchall(
                f"SELECT id, access_count, last_accessed_at FROM memories WHERE id IN ({marks})",
                chunk,
            )
        out.update((int(r[0]), (int(r[1]), r[2])) for r in rows)
    return out


PART_BYTES = 64 * 1024 * 1024
"""Bytes per stored snapshot part (SQLite's blob limit is 1 GB; one part is read at a time)."""


def _manifest(parts: Sequence[memoryview]) -> bytes:
    """``{"parts": n, "size": total, "crc32": [...]}`` of ``parts`` (JSON, UTF-8)."""
    return msgspec.json.encode(
        {"parts": len(parts), "size": sum(map(len, parts)), "crc32": [zlib.crc32(p) for p in parts]}
    )


class _Manifest(msgspec.Struct):
    parts: int
    size: int
    crc32: list[int]


async def load_snapshot(
    conn: aiosqlite.Connection, owner_id: str
) -> tuple[int, str, bytearray] | None:
    """``(seq, format, blob)`` of ``owner_id``'s recall snapshot, or None.

    The blob is reassembled from its parts (migration 0012) into one buffer, one part read at a
    time (peak memory: the blob plus one part). None when there is no snapshot or it is not
    whole: a part missing, of another length, or failing its CRC-32 (e.g. replaced or deleted
    while it was read; the caller rebuilds the owner from its rows).

    Raises:
        StoreError: the database failed.
    """
    with store_errors("reading a recall snapshot"):
        rows = list(
            await conn.execute_fetchall(
                "SELECT seq, format, data FROM recall_snapshots WHERE owner_id = ?", (owner_id,)
            )
        )
        if not rows:
            return None
        try:
            manifest = msgspec.json.decode(bytes(rows[0][2]), type=_Manifest)
        except msgspec.DecodeError:
            return None
        if manifest.parts != len(manifest.crc32) or manifest.size < 0:
            return None
        blob = bytearray(manifest.size)
        at = 0
        for part, crc in enumerate(manifest.crc32):
            got = list(
                await conn.execute_fetchall(
                    "SELECT data FROM recall_snapshot_parts WHERE owner_id = ? AND part = ?",
                    (owner_id, part),
                )
            )
            data = bytes(got[0][0]) if got else None
            if data is None or zlib.crc32(data) != crc or at + len(data) > len(blob):
                return None
            blob[at : at + len(data)] = data
            at += len(data)
    return (int(rows[0][0]), str(rows[0][1]), blob) if at == len(blob) else None


_ID_CEILING = (1 << 63) - 1
"""The largest SQLite rowid: every memory's (``save_snapshot`` without ``max_id``)."""


async def save_snapshot(
    conn: aiosqlite.Connection,
    owner_id: str,
    seq: int,
    fmt: str,
    blob: bytes,
    *,
    part_bytes: int = PART_BYTES,
    max_id: int | None = None,
) -> bool:
    """Store ``owner_id``'s snapshot as of feed sequence ``seq``, in parts of ``part_bytes``.

    Stored unless the feed holds a change (not of access counters) after ``seq`` of a memory the
    snapshot may hold (rowid up to ``max_id``, None = any of the owner's): its text may be
    deleted or edited, and must not come back at rest; a higher rowid (written after the rows
    were read, e.g. the turn the loading request learns) cannot touch it. The owner's previous
    snapshot is deleted first, each part is written by its own statement (a 1 GB snapshot in
    one transaction would hold the write lock for longer than other writers' busy timeout), and
    the manifest last, by one statement that makes that check; when the check fails the parts
    are deleted again. A reader that meets parts without a manifest, or a manifest
    with other parts, ignores them (the checksums). Returns whether it was stored.

    Raises:
        StoreError: the database failed.
    """
    view = memoryview(blob)
    parts = [view[i : i + part_bytes] for i in range(0, len(blob), max(1, part_bytes))]
    drop_parts = "DELETE FROM recall_snapshot_parts WHERE owner_id = ?"
    with store_errors("writing a recall snapshot"):
        await autocommit(conn, "DELETE FROM recall_snapshots WHERE owner_id = ?", (owner_id,))
        await autocommit(conn, drop_parts, (owner_id,))
        for part, data in enumerate(parts):
            await autocommit(
                conn,
                "INSERT OR REPLACE INTO recall_snapshot_parts (owner_id, part, data) "
                "VALUES (?, ?, ?)",
                (owner_id, part, data),
            )
        stored = await autocommit(
            conn,
            "INSERT OR REPLACE INTO recall_snapshots (owner_id, seq, format, data) "
            "SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM memory_changes "
            "WHERE owner_id = ? AND seq > ? AND op != 'a' AND memory_id <= ?)",
            (
                owner_id,
                seq,
                fmt,
                _manifest(parts),
                owner_id,
                seq,
                _ID_CEILING if max_id is None else max_id,
            ),
        )
        if not stored:
            await autocommit(conn, drop_parts, (owner_id,))
    return bool(stored)


async def drop_snapshot(conn: aiosqlite.Connection, owner_id: str) -> None:
    """Delete ``owner_id``'s recall snapshot (its next cold load reads the rows).

    Raises:
        StoreError: the database failed.
    """
    with store_errors("dropping a recall snapshot"):
        await autocommit(conn, "DELETE FROM recall_snapshots WHERE owner_id = ?", (owner_id,))
