"""Client API keys: create (secret shown once), list, revoke, authenticate.

Secrets are ``mg-`` + 40 URL-safe random characters (240 bits); only their SHA-256 is stored, so a
leaked database does not leak usable keys. SHA-256 without a salt is adequate for high-entropy
random tokens (unlike passwords, they cannot be brute-forced from the hash).

Authentication remembers its answers per process (:class:`_AuthCache`): an answer is reused only
while nothing was committed to the database since it was read (its commit hint,
:class:`shared.store.commit_hint.CommitHint`, is unchanged) and for at most :data:`AUTH_CACHE_S`;
a revoke or update through this store forgets every answer at once. An answer read again (the
database changed: under load, every second) is read synchronously on a read-only connection
(:func:`shared.store.connection.open_probe`): one indexed lookup, instead of a round trip
through the reader's thread that every request in flight would wait for.
"""

from __future__ import annotations

import builtins
import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import aiosqlite
import sqlean

from shared.errors import StoreError
from shared.models import ApiKey
from shared.store.commit_hint import CommitHint
from shared.store.connection import open_probe, store_errors, transaction

SECRET_PREFIX = "mg-"
KEY_COLUMNS = (
    "id, name, prefix, created_at, revoked_at, last_used_at, recall_enabled, learn_enabled, "
    "max_memories, max_bytes"
)
#: Fields :meth:`ApiKeyStore.update` may change.
UPDATABLE = ("recall_enabled", "learn_enabled", "max_memories", "max_bytes")
#: Longest a remembered authentication answer is used (seconds), whatever the commit hint says:
#: a backstop of the same order as the recall index's freshness window.
AUTH_CACHE_S = 1.0
#: Distinct secrets remembered per process (least recently used first out; ~0.5 KB each).
AUTH_CACHE_SIZE = 1024
_BY_HASH = f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL"


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


class _AuthCache:
    """Authentication answers by secret hash, valid while the database is unchanged.

    Every commit, by any process, rewrites the database's commit hint, so an unchanged hint
    means no key was created, revoked or updated since the answer was read; answers are also
    dropped after :data:`AUTH_CACHE_S`. ``path`` None: nothing is remembered. ``":memory:"``:
    answers are dropped only through :meth:`clear` (such a database has no other connection).
    """

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._commits = CommitHint(path)
        self._answers: OrderedDict[str, tuple[ApiKey | None, object, float]] = OrderedDict()

    def hint(self) -> object:
        """The database's change hint now; None = do not remember (no write-ahead log)."""
        if self.path is None:
            return None
        if self.path == ":memory:":
            return ()
        return self._commits.read()

    def get(self, digest: str) -> tuple[bool, ApiKey | None]:
        """``(True, answer)`` when a still-valid answer for ``digest`` is remembered."""
        found = self._answers.get(digest)
        if found is None:
            return False, None
        key, hint, read_at = found
        if time.monotonic() - read_at >= AUTH_CACHE_S or hint != self.hint():
            del self._answers[digest]
            return False, None
        return True, key

    def put(self, digest: str, key: ApiKey | None, hint: object, read_at: float) -> None:
        """Remember ``key`` as the answer for ``digest``, read under ``hint`` at ``read_at``."""
        if hint is None:
            return
        self._answers[digest] = (key, hint, read_at)
        self._answers.move_to_end(digest)
        while len(self._answers) > AUTH_CACHE_SIZE:
            self._answers.popitem(last=False)

    def clear(self) -> None:
        """Forget every answer (a key changed through this process)."""
        self._answers.clear()

    def close(self) -> None:
        """Close the commit hint's file (reopened on the next :meth:`hint`)."""
        self._commits.close()


class ApiKeyStore:
    """Async access to ``api_keys``.

    Writes on ``conn``, lookups on ``reader`` (default ``conn``) so that authentication on the
    request path never queues behind background writes. ``path``: the database file, which lets
    :meth:`authenticate` remember its answers (see the module docstring); None = always read.
    """

    def __init__(
        self,
        conn: aiosqlite.Connection,
        reader: aiosqlite.Connection | None = None,
        path: str | None = None,
    ):
        self.conn = conn
        self.reader = reader or conn
        self._auth = _AuthCache(path)
        self._probe: sqlean.Connection | None = None

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
        self._auth.clear()
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
        self._auth.clear()
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
        self._auth.clear()
        return changed > 0

    async def authenticate(self, secret: str) -> ApiKey | None:
        """The active key whose secret is ``secret``, else None (constant work per lookup).

        A remembered answer is reused while the database is unchanged (module docstring).
        """
        digest = hash_secret(secret)
        known, key = self._auth.get(digest)
        if known:
            return key
        hint, read_at = self._auth.hint(), time.monotonic()  # before the read: later commits count
        _rows = self._probed(digest)
        if _rows is None:
            with store_errors("authenticating"):
                _rows = list(await self.reader.execute_fetchall(_BY_HASH, (digest,)))
        key = row_to_key(_rows[0]) if _rows else None
        self._auth.put(digest, key, hint, read_at)
        return key

    def _probed(self, digest: str) -> builtins.list[Any] | None:
        """The rows of ``digest``'s active key read on the probe connection; None = read async.

        None for a database without a file (``:memory:``: no second connection) or when the
        probe fails (the reader's read then answers, or raises).
        """
        path = self._auth.path
        if path is None or path == ":memory:":
            return None
        try:
            if self._probe is None:
                self._probe = open_probe(path)
            rows: builtins.list[Any] = self._probe.execute(_BY_HASH, (digest,)).fetchall()
            return rows
        except (StoreError, sqlean.Error):
            return None

    def close(self) -> None:
        """Close the probe connection and the commit hint's file (both reopen on use)."""
        if self._probe is not None:
            self._probe.close()
            self._probe = None
        self._auth.close()
