"""SQLite connection: aiosqlite over the ``sqlean.py`` driver with sqlite-vec loaded, WAL mode.

The stdlib ``sqlite3`` on these machines cannot load extensions; ``sqlean`` can (see "Measured facts
about dependencies" in ``docs/ARCHITECTURE.md``). Its exceptions are ``sqlean.Error`` subclasses,
mapped to :class:`shared.errors.StoreError` by :func:`store_errors`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import re
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import aiosqlite
import sqlean
import sqlite_vec

from shared.errors import StoreError

BUSY_TIMEOUT_MS = 10_000
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


#: Seconds to keep retrying the switch to WAL while another connection holds a lock.
WAL_SWITCH_TIMEOUT_S = 10.0


def _enable_wal(conn: sqlean.Connection) -> None:
    """``PRAGMA journal_mode = WAL``, retried while another connection holds a lock.

    Switching a new database to WAL needs an exclusive lock, and SQLite answers "database is
    locked" at once, without the busy handler, while another process is creating or migrating
    the same new file (seen with a gateway and a worker starting together). Once the file is in
    WAL mode the pragma is a no-op.
    """
    deadline = time.monotonic() + WAL_SWITCH_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlean.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _connect(path: str) -> sqlean.Connection:
    conn = sqlean.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if path != ":memory:":
        _enable_wal(conn)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    # Deleted rows (finished job payloads, forgotten memories) are overwritten with zeros rather
    # than left in free space (SQLite "PRAGMA secure_delete"); see OutboxStore.scrub for the WAL.
    conn.execute("PRAGMA secure_delete = ON")
    return conn


@contextlib.contextmanager
def store_errors(action: str) -> Iterator[None]:
    """Map ``sqlean.Error`` raised inside the block to :class:`StoreError` naming ``action``."""
    try:
        yield
    except sqlean.Error as exc:
        raise StoreError(f"store failed while {action}: {exc}") from exc


def open_probe(path: str) -> sqlean.Connection:
    """A read-only, autocommit connection to ``path`` used synchronously on the event loop.

    For indexed point reads on the request path (the change-feed probe, an api key lookup):
    tens of microseconds, far less than a round trip through a connection thread on a busy
    loop (each such hop waits for a whole round of the requests in flight). WAL readers do not
    wait for writers; ``busy_timeout`` bounds the rare wait (WAL recovery) to 100 ms.

    Raises:
        StoreError: the database could not be opened.
    """
    with store_errors("opening a read-only probe"):
        conn = sqlean.connect(
            f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
        )
        conn.execute("PRAGMA busy_timeout = 100")
    return conn


async def open_connection(path: str) -> aiosqlite.Connection:
    """Open (creating if needed) the database at ``path`` with sqlite-vec loaded.

    Autocommit mode (``isolation_level=None``): write paths open explicit transactions.

    Raises:
        StoreError: the file cannot be opened or the extension cannot be loaded.
    """
    if path != ":memory:":
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the database's directory for {path}: {exc}") from exc
    with store_errors(f"opening the database {path}"):
        conn = aiosqlite.Connection(lambda: _connect(path), iter_chunk_size=64)
        await conn
    conn.row_factory = sqlean.Row
    return conn


def migration_files() -> list[tuple[int, str, str]]:
    """Numbered migrations shipped in the ``migrations`` package: ``(version, name, sql)``."""
    found: list[tuple[int, str, str]] = []
    for entry in importlib.resources.files("migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


async def migrate(conn: aiosqlite.Connection) -> list[str]:
    """Apply pending numbered migrations, each in its own transaction; returns applied names.

    Safe to run from several processes at once (gateways and workers all migrate at start-up):
    a migration that fails because another process applied it first is skipped.

    Raises:
        StoreError: a migration failed (it is rolled back; earlier ones stay applied).
    """
    with store_errors("migrating"):
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        async with conn.execute("SELECT version FROM schema_migrations") as cur:
            done = {int(row[0]) for row in await cur.fetchall()}
        applied: list[str] = []
        for version, name, sql in migration_files():
            if version in done:
                continue
            record = f"INSERT INTO schema_migrations VALUES ({version}, '{name}', {time.time()});"
            try:
                await conn.executescript(f"BEGIN IMMEDIATE;\n{sql}\n{record}\nCOMMIT;")
            except sqlean.Error:
                if conn.in_transaction:
                    await conn.execute("ROLLBACK")
                # another process (gateway, worker, `mnemogate migrate`) applied it meanwhile
                async with conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", (version,)
                ) as cur:
                    if await cur.fetchone() is not None:
                        continue
                raise
            applied.append(name)
        return applied


_TRANSACTION_LOCKS: weakref.WeakKeyDictionary[aiosqlite.Connection, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


_COMMIT_HOOKS: weakref.WeakKeyDictionary[aiosqlite.Connection, list[Callable[[], None]]] = (
    weakref.WeakKeyDictionary()
)


def on_commit(conn: aiosqlite.Connection, hook: Callable[[], None]) -> None:
    """Call ``hook()``.

    Call ``hook()`` (synchronous, must not raise) after every :func:`transaction` on ``conn``
    commits: the in-memory recall cache uses it to see this process's writes at once.
    """
    _COMMIT_HOOKS.setdefault(conn, []).append(hook)


_UNDO_TASKS: set[asyncio.Task[None]] = set()  # strong references until each undo has run


async def _undo_begin(conn: aiosqlite.Connection, lock: asyncio.Lock) -> None:
    """Roll back a BEGIN whose task was cancelled, once it has run; then release ``lock``."""
    try:
        async with conn.execute("SELECT 1") as cur:  # queued behind the pending BEGIN
            await cur.fetchall()
        if conn.in_transaction:
            await conn.execute("ROLLBACK")
    except (sqlean.Error, ValueError):  # ValueError: the connection was closed meanwhile
        pass
    finally:
        lock.release()


def _lock_of(conn: aiosqlite.Connection) -> asyncio.Lock:
    lock = _TRANSACTION_LOCKS.get(conn)
    if lock is None:
        lock = _TRANSACTION_LOCKS[conn] = asyncio.Lock()
    return lock


@contextlib.asynccontextmanager
async def outside_transactions(conn: aiosqlite.Connection) -> AsyncIterator[aiosqlite.Connection]:
    """Hold ``conn``'s transaction lock without opening a transaction.

    For statements that must not run inside one (``PRAGMA wal_checkpoint``). Not re-entrant,
    like :func:`transaction`.
    """
    async with _lock_of(conn):
        yield conn


async def autocommit(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> int:
    """Run one write statement as its own implicit transaction; the rows it changed.

    For single-statement writes that change no memory (outbox rows, events, snapshots, feed
    pruning): commit hooks are not run, as with ``transaction(conn, notify=False)``. SQLite takes
    the write lock when the statement starts and commits when it ends, both on the connection's
    thread, so the lock is never held across a trip through the event loop: an explicit
    ``BEGIN IMMEDIATE`` … ``COMMIT`` costs three trips and holds the lock while a busy loop gets
    round to the next one (0.3-0.7 s for a 10-20 MB snapshot part under load, every other write
    of the process waiting). ``conn``'s transaction lock is held for the statement, so it never
    runs inside another task's transaction.

    Raises:
        sqlean.Error: the statement failed (callers map it with :func:`store_errors`).
    """
    async with outside_transactions(conn), conn.execute(sql, params) as cur:
        return int(cur.rowcount)


@contextlib.asynccontextmanager
async def transaction(
    conn: aiosqlite.Connection, *, notify: bool = True
) -> AsyncIterator[aiosqlite.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection.

    ``notify`` False skips the :func:`on_commit` hooks (bookkeeping writes such as access
    counters, which need not be seen at once).

    Transactions on one connection are serialised by a per-connection :class:`asyncio.Lock`:
    concurrent tasks (e.g. 50 arq jobs) share the writer connection, and without the lock a
    second task's ``BEGIN`` fails with "cannot start a transaction within a transaction" (seen
    as failed learn jobs under load). A task cancelled while its ``BEGIN`` waits for another
    process's write lock returns at once; the BEGIN still runs on the connection's thread, so a
    background task keeps the lock, rolls the BEGIN back as soon as it has run, then releases
    the lock: no transaction is left without an owner holding the database's write lock. Not
    re-entrant: never nest ``transaction`` on one connection.
    """
    lock = _lock_of(conn)
    await lock.acquire()
    handed_off = False
    try:
        if conn.in_transaction:  # defensive: a transaction must never be open here
            await conn.execute("ROLLBACK")
        try:
            await conn.execute("BEGIN IMMEDIATE")
        except asyncio.CancelledError:
            undo = asyncio.create_task(_undo_begin(conn, lock))
            _UNDO_TASKS.add(undo)
            undo.add_done_callback(_UNDO_TASKS.discard)
            handed_off = True
            raise
        try:
            yield conn
        except BaseException:
            await conn.execute("ROLLBACK")
            raise
        await conn.execute("COMMIT")
        for hook in _COMMIT_HOOKS.get(conn, ()) if notify else ():
            hook()
    finally:
        if not handed_off:
            lock.release()
