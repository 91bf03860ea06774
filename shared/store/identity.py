"""The database's own identity: a random id written once by migration 0005."""

from __future__ import annotations

import aiosqlite

from shared.errors import StoreError
from shared.store.connection import store_errors


class IdentityStore:
    """Async access to ``store_identity`` (one row)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def store_id(self) -> str:
        """This database's id: 16 lowercase hex characters, fixed for the database's life.

        Raises:
            StoreError: the database failed or is not migrated.
        """
        with store_errors("reading the store identity"):
            async with self.conn.execute("SELECT store_id FROM store_identity WHERE id = 1") as cur:
                row = await cur.fetchone()
        if row is None:
            raise StoreError("store identity missing: run `mnemogate migrate`")
        return str(row[0])
