"""The ``settings`` row (id = 1): runtime overrides as a JSON object plus an incrementing version.

Every process compares the cheap ``version`` column with the version it last applied and re-reads
``data`` only when it changed (:class:`shared.runtime_settings.RuntimeSettings`).
"""

from __future__ import annotations

import time
from typing import Any

import aiosqlite
import msgspec

from shared.store.connection import store_errors, transaction

_decoder = msgspec.json.Decoder(dict[str, Any])
_encoder = msgspec.json.Encoder()


class SettingsRow(msgspec.Struct, frozen=True, kw_only=True):
    """The stored overrides: ``version`` 0 means no row yet; ``updated_at`` in unix seconds."""

    version: int
    data: dict[str, Any]
    updated_at: float | None


class SettingsStore:
    """Read and write the single ``settings`` row."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def version(self) -> int:
        """The current version (0 when no overrides were ever written).

        Raises:
            StoreError: the database failed.
        """
        with store_errors("reading the settings version"):
            async with self.conn.execute("SELECT version FROM settings WHERE id = 1") as cur:
                row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def read(self) -> SettingsRow:
        """The stored overrides and their version (empty, version 0, when no row exists).

        Raises:
            StoreError: the database failed.
        """
        with store_errors("reading settings"):
            async with self.conn.execute(
                "SELECT version, data, updated_at FROM settings WHERE id = 1"
            ) as cur:
                row = await cur.fetchone()
        if row is None:
            return SettingsRow(version=0, data={}, updated_at=None)
        try:
            data = _decoder.decode(row[1])
        except msgspec.DecodeError:
            data = {}
        return SettingsRow(version=int(row[0]), data=data, updated_at=float(row[2]))

    async def write(
        self, data: dict[str, Any], *, expected_version: int, now: float | None = None
    ) -> SettingsRow | None:
        """Replace the overrides with ``data`` if the stored version is still ``expected_version``.

        (compare-and-set; 0 = no row yet), incrementing the version.

        Returns the new row, or None when another writer got there first (re-read and retry).

        Raises:
            StoreError: the database failed.
        """
        ts = time.time() if now is None else now
        with store_errors("writing settings"):
            async with transaction(self.conn):
                cur = await self.conn.execute(
                    "INSERT INTO settings (id, version, data, updated_at) VALUES (1, 1, ?, ?) "
                    "ON CONFLICT (id) DO UPDATE SET version = settings.version + 1, "
                    "data = excluded.data, updated_at = excluded.updated_at "
                    "WHERE settings.version = ? RETURNING version",
                    (_encoder.encode(data).decode(), ts, expected_version),
                )
                row = await cur.fetchone()
                await cur.close()
        if row is None or (expected_version == 0 and int(row[0]) != 1):
            return None
        return SettingsRow(version=int(row[0]), data=dict(data), updated_at=ts)
