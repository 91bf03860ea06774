"""Client API keys: create (secret shown once), list, revoke, authenticate.

Secrets are ``mg-`` + 40 URL-safe random characters (240 bits); only their SHA-256 is stored, so a
leaked database does not leak usable keys. SHA-256 without a salt is adequate for high-entropy
random tokens (unlike passwords, they cannot be brute-forced from the hash).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Sequence
from typing import Any

import aiosqlite

from shared.models import ApiKey
from shared.store.connection import store_errors, transaction

SECRET_PREFIX = "mg-"
KEY_COLUMNS = (
    "id, name, prefix, created_at, revoked_at, last_used_at, recall_enabled, learn_enabled, "
    "max_memories, max_bytes"
)
#: Fields :meth:`ApiKeyStore.update` may change.
UPDATABLE = ("recall_enabled", "learn_enabled", "max_memories", "max_bytes")


def _bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _positive(value: Any) -> int | None:
    return int(value) if value else None


def row_to_key(r: Sequence[Any]) -> ApiKey:
    """Decode a row selected with :data:`KEY_COLUMNS` (0/NULL caps read as no cap)."""
    return ApiKey(
        id=r[0],
        name=r[1],
        prefix=r[2],
        created_at=r[3],
        revoked_at=r[4],
        last_used_at=r[5],
        recall_enabled=_bool(r[6]),
        learn_enabled=_bool(r[7]),
        max_memories=_positive(r[8]),
        max_bytes=_positive(r[9]),
    )


def hash_secret(secret: str) -> str:
    """SHA-256 hex digest of a key secret (64 hex characters)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class ApiKeyStore:
    """Async access to ``api_keys``.

    Writes on ``conn``, lookups on ``reader`` (default ``conn``) so that authentication on the
    request path never queues behind background writes.
    """

    def __init__(self, conn: aiosqlite.Connection, reader: aiosqlite.Connection | None = None):
        self.conn = conn
        self.reader = reader or conn

    async def create(self, name: str, now: float | None = None) -> tuple[ApiKey, str]:
        """Create a key named ``name``; returns (record, secret). The secret is not stored."""
        secret = SECRET_PREFIX + secrets.token_urlsafe(30)
        key = ApiKey(
            id="key_" + secrets.token_hex(8),
            name=name,
            prefix=secret[:8],
            created_at=time.time() if now is None else now,
            revoked_at=None,
            last_used_at=None,
        )
        with store_errors("creating an api key"):
            async with transaction(self.conn):
                await self.conn.execute(
                    "INSERT INTO api_keys (id, name, key_hash, prefix, created_at) "
                    "VALUES (?,?,?,?,?)",
                    (key.id, key.name, hash_secret(secret), key.prefix, key.created_at),
                )
        return key, secret

    async def list(self) -> list[ApiKey]:
        """Every key, oldest first (revoked ones included, with ``revoked_at`` set)."""
        with store_errors("listing api keys"):
            rows = list(
                await self.conn.execute_fetchall(
                    f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_at, id"
                )
            )
        return [row_to_key(r) for r in rows]

    async def get(self, key_id: str) -> ApiKey | None:
        """The key ``key_id`` (revoked or not), else None."""
        with store_errors("reading an api key"):
            rows = list(
                await self.reader.execute_fetchall(
                    f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?", (key_id,)
                )
            )
        return row_to_key(rows[0]) if rows else None

    async def update(self, key_id: str, changes: dict[str, Any]) -> ApiKey | None:
        """Set the :data:`UPDATABLE` fields in ``changes`` on ``key_id``.

        None = inherit / no cap. Returns the updated key, None when no such key exists.

        Raises:
            ValueError: a field outside :data:`UPDATABLE`. StoreError: the database failed.
        """
        unknown = set(changes) - set(UPDATABLE)
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        if changes:
            sets = ", ".join(f"{name} = ?" for name in changes)
            values = [None if v is None else int(v) for v in changes.values()]
            with store_errors("updating an api key"):
                async with transaction(self.conn):
                    await self.conn.execute(
                        f"UPDATE api_keys SET {sets} WHERE id = ?", (*values, key_id)
                    )
        with store_errors("reading an api key"):
            rows = list(
                await self.conn.execute_fetchall(
                    f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?", (key_id,)
                )
            )
        return row_to_key(rows[0]) if rows else None

    async def revoke(self, key_id: str, now: float | None = None) -> bool:
        """Revoke ``key_id``; False when no active key has that id."""
        with store_errors("revoking an api key"):
            async with transaction(self.conn):
                cur = await self.conn.execute(
                    "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                    (time.time() if now is None else now, key_id),
                )
                changed = cur.rowcount
                await cur.close()
        return changed > 0

    async def authenticate(self, secret: str) -> ApiKey | None:
        """The active key whose secret is ``secret``, else None (constant work per lookup)."""
        with store_errors("authenticating"):
            _rows = list(
                await self.reader.execute_fetchall(
                    f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL",
                    (hash_secret(secret),),
                )
            )
            r = _rows[0] if _rows else None
        if r is None:
            return None
        return row_to_key(r)
