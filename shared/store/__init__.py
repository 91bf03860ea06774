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
from shared.store.forget import ForgetStore
from shared.store.identity import IdentityStore
from shared.store.key_cap import KeyCapStore
from shared.store.memories import MemoryStore, Retention
from shared.store.memories.admin import MemoryAdminStore
from shared.store.memories.export_import import MemoryExportStore
from shared.store.memories.lifecycle import LifecycleStore
from shared.store.outbox import OutboxStore
from shared.store.settings_row import SettingsStore
from shared.store.usage import UsageStore

__all__ = ["Retention", "Store"]


class Store:
    """Open database with its table stores.

    ``memories`` (reads), ``writes`` (memory writes), ``admin`` (operator queries over memories),
    ``exports`` (export/import), ``lifecycle`` (sweep, decay, summaries), ``keys``, ``outbox``,
    ``events``, ``cursors``, ``settings``, ``identity``, ``forget`` (forget candidates, derived
    copies, tombstones), ``usage`` (memory usage per key and day), ``key_cap`` (per-key cap).

    ``memories`` uses the reader connection (recall, listing); ``writes`` uses the writer one.
    """

    def __init__(self, path: str, writer: aiosqlite.Connection, reader: aiosqlite.Connection):
        self.path = path
        self.writer = writer
        self.reader = reader
        self.memories = MemoryStore(reader)
        self.writes = MemoryStore(writer)
        self.contexts = ContextStore(writer)
        self.keys = ApiKeyStore(writer, reader, path)
        self.outbox = OutboxStore(writer)
        self.events = EventStore(writer)
        self.cursors = CursorStore(writer)
        self.admin = MemoryAdminStore(writer)
        self.exports = MemoryExportStore(writer)
        self.settings = SettingsStore(writer)
        self.lifecycle = LifecycleStore(writer)
        self.identity = IdentityStore(reader)
        self.forget = ForgetStore(writer)
        self.usage = UsageStore(writer)
        self.key_cap = KeyCapStore(writer)

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
        """Close both connections (and the key lookups' probe)."""
        self.keys.close()
        if self.reader is not self.writer:
            await self.reader.close()
        await self.writer.close()
