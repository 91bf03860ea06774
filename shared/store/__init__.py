"""The SQLite store of record: one :class:`Store` facade over per-table stores.

Two connections: ``writer`` for every write (serialised by SQLite anyway) and ``reader`` for the
request path's reads, so recall never waits behind a background write in WAL mode.
"""

from __future__ import annotations

import aiosqlite

from shared.store.api_keys import ApiKeyStore
from shared.store.connection import migrate, open_connection
from shared.store.contexts import ContextStore
from shared.store.cursors import CursorStore
from shared.store.events import EventStore
from shared.store.identity import IdentityStore
from shared.store.lifecycle import LifecycleStore
from shared.store.management import ManagementStore
from shared.store.memories import MemoryStore, Retention
from shared.store.outbox import OutboxStore
from shared.store.settings_row import SettingsStore

__all__ = ["Retention", "Store"]


class Store:
    """Open database with its table stores: ``memories`` (reads), ``writes`` (memory writes),
    ``keys``, ``outbox``, ``events``.

    ``memories`` uses the reader connection (recall, listing); ``writes`` uses the writer one.
    """

    def __init__(self, path: str, writer: aiosqlite.Connection, reader: aiosqlite.Connection):
        self.path = path
        self.writer = writer
        self.reader = reader
        self.memories = MemoryStore(reader)
        self.writes = MemoryStore(writer)
        self.contexts = ContextStore(writer)
        self.keys = ApiKeyStore(writer, reader)
        self.outbox = OutboxStore(writer)
        self.events = EventStore(writer)
        self.cursors = CursorStore(writer)
        self.management = ManagementStore(writer)
        self.settings = SettingsStore(writer)
        self.lifecycle = LifecycleStore(writer)
        self.identity = IdentityStore(reader)

    @classmethod
    async def open(cls, path: str, *, run_migrations: bool = True) -> Store:
        """Open ``path`` (two connections; one if ``:memory:``), applying migrations first.

        Raises:
            StoreError: the database cannot be opened or migrated.
        """
        writer = await open_connection(path)
        if run_migrations:
            await migrate(writer)
        reader = writer if path == ":memory:" else await open_connection(path)
        return cls(path, writer, reader)

    async def close(self) -> None:
        """Close both connections."""
        if self.reader is not self.writer:
            await self.reader.close()
        await self.writer.close()
