"""The job outbox: jobs that could not be handed to Redis wait here until the relay sends them.

Rows are keyed by the job's idempotency id, so writing the same job twice keeps one row.

A payload holds the user's text (a learn job's turns), so a finished job leaves no copy at rest:
connections delete with ``PRAGMA secure_delete`` (the row's bytes are zeroed in the database
page), and :meth:`OutboxStore.scrub` checkpoints the write-ahead log and truncates it to zero
bytes (``PRAGMA wal_checkpoint(TRUNCATE)``), which removes the WAL frames that still held the
payload. The queues call it shortly after removing jobs (see ``docs/ARCHITECTURE.md``,
"Job payloads at rest").
"""

from __future__ import annotations

import time

import aiosqlite
import msgspec

from shared.store.connection import autocommit, outside_transactions, store_errors


class OutboxJob(msgspec.Struct, frozen=True):
    """One waiting job: row id, job function name, idempotency id, encoded payload, attempts."""

    id: int
    job_name: str
    job_id: str
    payload: bytes
    attempts: int


class OutboxStore:
    """Async access to ``job_outbox``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def add(self, job_name: str, job_id: str, payload: bytes, error: str = "") -> None:
        """Park a job (ignored if a job with ``job_id`` is already parked)."""
        with store_errors("writing the job outbox"):
            await autocommit(  # no memory row: no commit hook
                self.conn,
                "INSERT INTO job_outbox (job_name, job_id, payload, created_at, last_error) "
                "VALUES (?,?,?,?,?) ON CONFLICT (job_id) DO NOTHING",
                (job_name, job_id, payload, time.time(), error or None),
            )

    async def take(self, limit: int = 100, *, after_id: int = 0) -> list[OutboxJob]:
        """The oldest ``limit`` parked jobs with a row id above ``after_id``.

        (they stay parked until :meth:`remove`).
        """
        with store_errors("reading the job outbox"):
            async with self.conn.execute(
                "SELECT id, job_name, job_id, payload, attempts FROM job_outbox "
                "WHERE id > ? ORDER BY id LIMIT ?",
                (after_id, limit),
            ) as cur:
                rows = await cur.fetchall()
        return [OutboxJob(r[0], r[1], r[2], bytes(r[3]), r[4]) for r in rows]

    async def remove(self, row_id: int) -> None:
        """Delete a delivered job."""
        with store_errors("deleting from the job outbox"):
            await autocommit(self.conn, "DELETE FROM job_outbox WHERE id = ?", (row_id,))

    async def max_id(self) -> int:
        """The largest row id in the outbox (0 when empty)."""
        with store_errors("reading the job outbox"):
            async with self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM job_outbox") as cur:
                row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def remove_job(self, job_id: str) -> None:
        """Delete the job with idempotency id ``job_id`` (no-op when absent)."""
        with store_errors("deleting from the job outbox"):
            await autocommit(self.conn, "DELETE FROM job_outbox WHERE job_id = ?", (job_id,))

    async def mark_failed(self, row_id: int, error: str) -> None:
        """Count a failed delivery attempt and remember its error."""
        with store_errors("updating the job outbox"):
            await autocommit(
                self.conn,
                "UPDATE job_outbox SET attempts = attempts + 1, last_error = ? WHERE id = ?",
                (error[:500], row_id),
            )

    async def count(self) -> int:
        """Number of parked jobs."""
        with store_errors("counting the job outbox"):
            async with self.conn.execute("SELECT COUNT(*) FROM job_outbox") as cur:
                row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def scrub(self) -> bool:
        """Checkpoint the WAL into the database file and truncate it to zero bytes.

        Deleted payloads then survive neither in old WAL frames nor (with ``secure_delete``) in
        the file.

        Returns True when the checkpoint completed; False when a reader still used an old
        snapshot (SQLite answered busy): the caller tries again later.

        Raises:
            StoreError: the database failed.
        """
        with store_errors("checkpointing the write-ahead log"):
            async with (
                outside_transactions(self.conn),
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)") as cur,
            ):
                row = await cur.fetchone()
        return row is not None and int(row[0]) == 0
