"""Where the recall index reads from: the change feed and the rows of the store of record.

:class:`RecallSource` is the whole interface the in-memory index needs, so a networked store of
record could feed it later (a log-shipping or CDC stream instead of the ``memory_changes``
table): a monotonically increasing sequence of ``(seq, memory_id, owner_id, op)`` changes, the
oldest sequence still available, one owner's rows in chunks read after a sequence they reflect
at least, and point reads of current rows. :class:`SqliteSource` implements it over a dedicated
connection to the SQLite store (so loads never queue behind the request path's reads). See
docs/ARCHITECTURE.md, "Recall engine".
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

import aiosqlite

from shared.store import recall_rows
from shared.store.commit_hint import CommitHint
from shared.store.connection import open_probe
from shared.store.recall_rows import Change, IndexedRow

__all__ = ["RecallSource", "SqliteSource"]


class RecallSource(Protocol):
    """The change feed and row access the in-memory recall index is built from."""

    def change_hint(self) -> object:
        """A cheap, local value that changes whenever the store may have new changes.

        A cheap, local value (no I/O beyond reading a few bytes of a local file) that differs
        from every earlier value once any write was committed after that earlier value was
        taken, or None when the source has none (then only the freshness window applies).
        """

    def has_changes_after(self, after: int) -> bool | None:
        """Whether a change with ``seq > after`` exists, read synchronously and cheaply.

        Access-counter changes (``op`` ``a``) are ignored: they need not be seen at once.
        None when the source cannot tell without a round trip (callers then read the feed).
        """

    async def head(self) -> int:
        """Newest change sequence (0 = none yet)."""

    async def tail(self) -> int:
        """Oldest change sequence still held (0 = none)."""

    async def since(self, after: int, limit: int, owner_id: str | None = None) -> list[Change]:
        """Changes with ``seq > after``, oldest first, at most ``limit``.

        ``owner_id``: that owner's changes only (a cold owner's catch-up must not read every
        other owner's traffic).
        """

    async def owner_rows(self, owner_id: str, after_id: int, limit: int) -> list[Sequence[Any]]:
        """Up to ``limit`` raw rows of one owner with memory id > ``after_id``, by id.

        A load reads :meth:`head` first, then the rows in such chunks: each row reflects at
        least that head (a change after it is applied again after the load, idempotently).
        """

    def decode(self, rows: Sequence[Sequence[Any]]) -> list[IndexedRow]:
        """Decode :meth:`owner_rows` rows (CPU only; called off the event loop)."""

    async def rows(self, ids: Sequence[int]) -> dict[int, IndexedRow]:
        """Current rows of these memory ids (deleted ones absent)."""

    async def access(self, ids: Sequence[int]) -> dict[int, tuple[int, float | None]]:
        """Current ``(access_count, last_accessed_at)`` of these memory ids."""

    async def prune(self, older_than: float, keep_last: int) -> int:
        """Drop changes older than ``older_than`` (unix s), keeping the newest ``keep_last``."""

    async def load_snapshot(self, owner_id: str) -> tuple[int, str, bytes | bytearray] | None:
        """``(seq, format, blob)`` of the owner's stored snapshot, or None (none or not whole)."""

    async def save_snapshot(
        self, owner_id: str, seq: int, fmt: str, blob: bytes, max_id: int | None = None
    ) -> bool:
        """Store a snapshot unless a memory it may hold changed after ``seq``; stored or not.

        ``max_id``: the snapshot's largest rowid (None: any memory of the owner counts).
        """

    async def close(self) -> None:
        """Release the source's resources."""


class SqliteSource:
    """:class:`RecallSource` over the store's SQLite file.

    :class:`RecallSource` over the store's SQLite file, through the store's reader connection
    (its own aiosqlite thread, so the event loop never waits on SQLite; no extra connection to
    close). A cold load reads the feed head, then the owner's rows in rowid chunks (index
    ``memories_owner_rowid``, migration 0012), each its own statement, so feed reads for other
    owners interleave with a long load; a change landing in between is applied again after the
    load, which is idempotent.

    The source's own writes (snapshots, feed pruning) go through ``writer``, the store's writer
    connection (its transactions serialised with the store's by ``transaction``'s lock), never
    through ``conn``: a write's ``BEGIN IMMEDIATE`` waits up to the busy timeout for another
    writer (a worker learning, a burst of this process's learn jobs), and on the reader it held
    every feed read of the process behind it, so recalls ran out of budget.
    """

    def __init__(
        self, conn: aiosqlite.Connection, path: str, *, writer: aiosqlite.Connection
    ) -> None:
        self.conn = conn
        self.writer = writer
        self.path = None if path == ":memory:" else path
        # One request at a time on the connection (feed reads, row chunks, snapshot reads), so
        # no feed read ever runs inside another caller's explicit transaction.
        self._txn = asyncio.Lock()
        self._peek: Any = None  # read-only probe connection, opened on first use
        self._hint = CommitHint(path)

    def change_hint(self) -> object:
        """The database's wal-index header (:class:`shared.store.commit_hint.CommitHint`)."""
        return self._hint.read()

    def has_changes_after(self, after: int) -> bool | None:
        """See :meth:`RecallSource.has_changes_after`.

        One indexed probe on a read-only connection of this process (tens of microseconds, run
        on the caller's thread); None for a ``:memory:`` store, which has no second connection.

        Raises:
            StoreError: the database failed.
        """
        if self.path is None:
            return None
        if self._peek is None:
            self._peek = open_probe(self.path)
        return recall_rows.has_changes_after(self._peek, after)

    async def head(self) -> int:
        """See :meth:`RecallSource.head`."""
        async with self._txn:
            return await recall_rows.feed_head(self.conn)

    async def tail(self) -> int:
        """See :meth:`RecallSource.tail`."""
        async with self._txn:
            return await recall_rows.feed_tail(self.conn)

    async def since(self, after: int, limit: int, owner_id: str | None = None) -> list[Change]:
        """See :meth:`RecallSource.since`."""
        async with self._txn:
            return await recall_rows.changes_since(self.conn, after, limit, owner_id)

    async def owner_rows(self, owner_id: str, after_id: int, limit: int) -> list[Sequence[Any]]:
        """See :meth:`RecallSource.owner_rows`."""
        async with self._txn:
            return await recall_rows.owner_rows(self.conn, owner_id, after_id, limit)

    def decode(self, rows: Sequence[Sequence[Any]]) -> list[IndexedRow]:
        """See :meth:`RecallSource.decode`."""
        return recall_rows.decode_rows(rows)

    async def rows(self, ids: Sequence[int]) -> dict[int, IndexedRow]:
        """See :meth:`RecallSource.rows`."""
        async with self._txn:
            return await recall_rows.rows_by_id(self.conn, ids)

    async def access(self, ids: Sequence[int]) -> dict[int, tuple[int, float | None]]:
        """See :meth:`RecallSource.access`."""
        async with self._txn:
            return await recall_rows.access_by_id(self.conn, ids)

    async def prune(self, older_than: float, keep_last: int) -> int:
        """See :meth:`RecallSource.prune`."""
        return await recall_rows.prune_changes(self.writer, older_than, keep_last)

    async def load_snapshot(self, owner_id: str) -> tuple[int, str, bytes | bytearray] | None:
        """See :meth:`RecallSource.load_snapshot` (None for a ``:memory:`` store)."""
        if self.path is None:
            return None
        async with self._txn:
            return await recall_rows.load_snapshot(self.conn, owner_id)

    async def save_snapshot(
        self, owner_id: str, seq: int, fmt: str, blob: bytes, max_id: int | None = None
    ) -> bool:
        """See :meth:`RecallSource.save_snapshot` (never for a ``:memory:`` store)."""
        if self.path is None:
            return False
        return await recall_rows.save_snapshot(self.writer, owner_id, seq, fmt, blob, max_id=max_id)

    async def close(self) -> None:
        """Close the probe connection and file (the main connection belongs to the store)."""
        if self._peek is not None:
            self._peek.close()
            self._peek = None
        self._hint.close()
