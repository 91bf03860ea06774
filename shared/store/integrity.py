"""Integrity probe of the search indexes: the FTS5 keyword index and the sqlite-vec table.

A corrupted index does not fail ordinary queries until one touches the damaged page, so
``/readyz`` asks this probe (docs/ARCHITECTURE.md, "Health and readiness"). Checks:

* ``fts``: FTS5's own ``integrity-check`` command with ``rank = 1``, which verifies the index's
  internal structure and that it matches the external content table ``memories``
  (https://sqlite.org/fts5.html#the_integrity_check_command). ``corrupt: ...`` on any error.
* ``vec``: the ``vec0`` shadow tables (``vec_memories_rowids``, ``_chunks``,
  ``_vector_chunks00``, ``_info``) pass ``PRAGMA quick_check(table)``; every row id points at an
  existing chunk; every chunk has its vector blob, all blobs of one length; the newest vector reads
  back. ``absent`` when no vector table exists yet.

The checks run on their own short-lived connection in a worker thread (SQLite releases the GIL
while it works), so the event loop and the store's connection are never blocked. ``integrity-
check`` is an INSERT command: it takes the write lock for its duration (about 0.2-0.7 s per
20,000 memories on a loaded 2-core machine), which only delays background writers. The result is
cached: a new check starts at most every ``interval_s`` seconds and never more often than
:data:`MAX_DUTY` of the time (a check that took 1 s waits at least 50 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import sqlean

from shared.store.connection import _connect

log = logging.getLogger("mnemogate.store")

__all__ = ["MAX_DUTY", "IntegrityProbe", "check_indexes", "is_corrupt"]

MAX_DUTY = 0.02
"""Largest fraction of wall time spent checking (interval >= duration / MAX_DUTY)."""

FTS_TABLE = "memory_fts"
VEC_TABLE = "vec_memories"
VEC_SHADOWS = ("rowids", "chunks", "vector_chunks00", "info")
OK = "ok"
PENDING = {"fts": "pending", "vec": "pending"}


def _table_exists(conn: sqlean.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return row is not None


def _check_fts(conn: sqlean.Connection) -> str:
    if not _table_exists(conn, FTS_TABLE):
        return "absent"
    conn.execute(f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rank) VALUES ('integrity-check', 1)")
    return OK


def _check_vec(conn: sqlean.Connection) -> str:
    if not _table_exists(conn, VEC_TABLE):
        return "absent"
    for shadow in VEC_SHADOWS:
        table = f"{VEC_TABLE}_{shadow}"
        if not _table_exists(conn, table):
            return f"corrupt: {table} is missing"
        verdict = conn.execute(f"PRAGMA quick_check({table})").fetchone()[0]
        if verdict != OK:
            return f"corrupt: {table}: {verdict}"
    orphans = conn.execute(
        f"SELECT COUNT(*) FROM {VEC_TABLE}_rowids r LEFT JOIN {VEC_TABLE}_chunks c "
        "ON c.chunk_id = r.chunk_id WHERE c.chunk_id IS NULL"
    ).fetchone()[0]
    if orphans:
        return f"corrupt: {orphans} vector row ids point at missing chunks"
    missing, lengths = conn.execute(
        f"SELECT COUNT(*) FILTER (WHERE v.rowid IS NULL), COUNT(DISTINCT length(v.vectors)) "
        f"FROM {VEC_TABLE}_chunks c LEFT JOIN {VEC_TABLE}_vector_chunks00 v "
        "ON v.rowid = c.chunk_id"
    ).fetchone()
    if missing or lengths > 1:
        return "corrupt: vector chunks are missing or of different sizes"
    newest = conn.execute(f"SELECT MAX(id) FROM {VEC_TABLE}_rowids").fetchone()[0]
    if newest is not None:
        conn.execute(f"SELECT embedding FROM {VEC_TABLE} WHERE memory_id = ?", (newest,))
    return OK


def _guarded(check: str, conn: sqlean.Connection) -> str:
    try:
        return _check_fts(conn) if check == "fts" else _check_vec(conn)
    except sqlean.Error as exc:
        message = str(exc)
        if "locked" in message or "busy" in message:
            return "unknown: database busy"
        return f"corrupt: {message}"[:200]


def check_indexes(db_path: str) -> dict[str, str]:
    """Run the FTS and vector checks on a new connection to ``db_path`` (blocking).

    Returns:
        ``{"fts": status, "vec": status}``; a status is ``ok``, ``absent``, ``unknown: ...``
        (the database was busy) or ``corrupt: <reason>``. ``{"fts": "unknown: ..."}`` when
        the database cannot be opened. Never raises for database errors.
    """
    try:
        conn = _connect(db_path)
    except sqlean.Error as exc:
        return {"fts": f"unknown: {exc}"[:200], "vec": "unknown"}
    try:
        return {"fts": _guarded("fts", conn), "vec": _guarded("vec", conn)}
    finally:
        conn.close()


def is_corrupt(checks: dict[str, str]) -> bool:
    """True when a status of :func:`check_indexes` reports corruption."""
    return any(status.startswith("corrupt") for status in checks.values())


class IntegrityProbe:
    """The cached result of :func:`check_indexes`, refreshed in the background.

    Args:
        db_path: the store's database file.
        interval_s: least seconds between two checks (0 = never check; reports ``off``).
    """

    def __init__(self, db_path: str, interval_s: float) -> None:
        """Remember where and how often to check; nothing runs before :meth:`checks`."""
        self.db_path = db_path
        self.interval_s = interval_s
        self._checks: dict[str, str] | None = None
        self._checked_at = 0.0
        self._duration_s = 0.0
        self._task: asyncio.Task[None] | None = None

    def _stale(self, now: float) -> bool:
        wait = max(self.interval_s, self._duration_s / MAX_DUTY)
        return self._checks is None or now - self._checked_at >= wait

    async def _run(self) -> None:
        started = time.monotonic()
        checks = await asyncio.to_thread(check_indexes, self.db_path)
        self._duration_s = time.monotonic() - started
        self._checked_at = time.monotonic()
        self._checks = checks
        if is_corrupt(checks):
            log.error("index integrity check failed: %s", checks)

    async def checks(self, wait_s: float) -> dict[str, str]:
        """The latest result, starting a new check when the cached one is stale.

        Waits up to ``wait_s`` seconds for a check in progress only when there is no result
        yet; otherwise answers at once with the cached one. Before the first result:
        ``{"fts": "pending", "vec": "pending"}``.
        """
        if self.interval_s <= 0:
            return {"fts": "off", "vec": "off"}
        if self._task is None and self._stale(time.monotonic()):
            self._task = asyncio.create_task(self._run())
            self._task.add_done_callback(self._finished)
        if self._checks is None and self._task is not None:
            await asyncio.wait({self._task}, timeout=wait_s)
        return dict(self._checks) if self._checks is not None else dict(PENDING)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._task = None
        if not task.cancelled() and task.exception() is not None:
            log.error("index integrity check crashed: %r", task.exception())

    async def close(self) -> None:
        """Cancel a check in progress (its thread finishes on its own)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
