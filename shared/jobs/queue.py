"""Job queues: arq over Redis (with the SQLite outbox as a safety net) or in-process tasks.

Both take the same job names and msgspec payloads and end in the same handler code
(:mod:`shared.jobs.handlers`), so embedded mode and worker mode behave alike (see "Job kinds" in
``docs/ARCHITECTURE.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import msgspec
from arq.connections import ArqRedis
from redis.exceptions import RedisError

from shared.errors import StoreError
from shared.jobs.payloads import encode_payload, job_id_for
from shared.store.outbox import OutboxStore

log = logging.getLogger("mnemogate.jobs")

ENQUEUE_TIMEOUT_S = 2.0
#: Unfinished in-process jobs recovered at start-up: outbox rows read per page, jobs run at once.
RECOVERY_PAGE = 200
RECOVERY_CONCURRENCY = 4
IN_PROCESS_CONCURRENCY = 2
"""In-process jobs running at once; the others wait their turn (oldest first)."""
#: Seconds between removing finished jobs' records and scrubbing the WAL (batches the
#: checkpoints of a burst of jobs into one); a busy checkpoint is retried after as long.
SCRUB_DELAY_S = 0.25


class OutboxScrubber:
    """Debounced :meth:`~shared.store.outbox.OutboxStore.scrub` after outbox rows are removed.

    :meth:`request` schedules one scrub :data:`SCRUB_DELAY_S` later unless one is pending; a
    scrub that SQLite answers busy (a reader on an old snapshot) is retried up to 20 times.
    Failures are logged, never raised.
    """

    def __init__(self, outbox: OutboxStore) -> None:
        self.outbox = outbox
        self._task: asyncio.Task[None] | None = None

    def request(self) -> None:
        """Schedule a scrub (no-op when one is pending)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        for _ in range(20):
            await asyncio.sleep(SCRUB_DELAY_S)
            try:
                if await self.outbox.scrub():
                    return
            except (StoreError, ValueError) as exc:  # ValueError: the store closed meanwhile
                log.warning("could not scrub the write-ahead log: %s", exc)
                return

    async def close(self) -> None:
        """Run a pending scrub now (shutdown), then stop."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, StoreError, ValueError):
                await task
            with contextlib.suppress(StoreError, ValueError):
                await self.outbox.scrub()


def resolve_queue_name(queue_name: str, store_id: str) -> str:
    """The arq queue (a Redis key) to use: ``queue_name`` when set, else ``mnemogate:<store_id>``.

    Deriving the default from the database's random id (migration 0005) gives every gateway and
    worker on one database the same queue, and a second deployment that shares the Redis
    database a different one: its worker cannot take this deployment's jobs and write them to
    the wrong database. Pure.
    """
    return queue_name or f"mnemogate:{store_id}"


class JobQueue(Protocol):
    """Something that accepts jobs. ``enqueue`` never raises for a queue outage."""

    async def enqueue(self, job_name: str, payload: msgspec.Struct) -> str:
        """Submit a job; returns its idempotency id."""
        ...

    async def close(self) -> None:
        """Release resources (in-process: wait for running jobs)."""
        ...


def job_serializer(job: dict[str, Any]) -> bytes:
    """Arq job envelope → MessagePack (replaces arq's default pickle).

    Arq serialises a finished job's result record (``arq:result:<id>``, kept ``keep_result``
    seconds) with this function too; that record repeats the job's arguments, which for a learn
    job are the user's turns. Result records (recognised by their ``s``uccess and ``r``esult
    keys, arq 0.28 ``serialize_result``) are written with empty arguments: the result, its
    timing and the job id stay (``Job.result()`` works, and arq still refuses a duplicate job
    id while the record exists), the user's text does not stay in Redis after the job.
    """
    if "s" in job and "r" in job:
        job = {**job, "a": [], "k": {}}
    return msgspec.msgpack.encode(job)


def job_deserializer(data: bytes) -> dict[str, Any]:
    """MessagePack → arq job envelope."""
    result: dict[str, Any] = msgspec.msgpack.decode(data)
    return result


class ArqQueue:
    """Enqueue to arq; if Redis is unreachable, park the job in ``job_outbox`` for the relay.

    ``owns_pool`` False: the pool belongs to someone else (the arq worker) and is not closed here.
    """

    def __init__(self, pool: ArqRedis, outbox: OutboxStore, *, owns_pool: bool = True) -> None:
        self.pool = pool
        self.outbox = outbox
        self.owns_pool = owns_pool
        self.scrubber = OutboxScrubber(outbox)

    async def enqueue(self, job_name: str, payload: msgspec.Struct) -> str:
        """Send to Redis under a deterministic ``_job_id`` (arq skips a duplicate id)."""
        data = encode_payload(payload)
        job_id = job_id_for(job_name, data)
        try:
            await asyncio.wait_for(
                self.pool.enqueue_job(job_name, data, _job_id=job_id), ENQUEUE_TIMEOUT_S
            )
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("redis unavailable, job %s parked in outbox: %s", job_id, exc)
            await self.outbox.add(job_name, job_id, data, str(exc))
        return job_id

    async def relay_outbox(self, limit: int = 500) -> int:
        """Send parked jobs to Redis, oldest first; stop at the first failure; return the count.

        Delivery keeps each job's idempotency id, so a job relayed twice runs once.
        """
        sent = 0
        for job in await self.outbox.take(limit):
            try:
                await asyncio.wait_for(
                    self.pool.enqueue_job(job.job_name, job.payload, _job_id=job.job_id),
                    ENQUEUE_TIMEOUT_S,
                )
            except (RedisError, OSError, TimeoutError) as exc:
                await self.outbox.mark_failed(job.id, str(exc))
                break
            await self.outbox.remove(job.id)
            sent += 1
        if sent:
            self.scrubber.request()
        return sent

    async def close(self) -> None:
        """Scrub the WAL if relayed payloads wait for it; close the pool if this queue owns it."""
        await self.scrubber.close()
        if self.owns_pool:
            await self.pool.aclose()


Runner = Callable[[str, bytes], Awaitable[Any]]


class InProcessQueue:
    """Embedded mode: run each job as an asyncio task in this process via ``runner``.

    With ``outbox``, every job is written to the SQLite ``job_outbox`` before it starts and
    removed once it has finished (done, or dead-lettered by the runner): a job that a crash or
    ``kill -9`` interrupted is still there at the next start, where :meth:`recover` runs it
    again (jobs are idempotent). If the outbox cannot be written the job still runs, without
    that guarantee. The record is committed before :meth:`enqueue` returns; the gateway
    enqueues learning before the response's last byte is sent (embedded mode), so a crash loses
    at most the exchanges still in flight. After a job's record is removed the WAL is scrubbed
    (:class:`OutboxScrubber`), so the payload's text does not stay at rest.

    A job whose id is already running is not started twice. :meth:`drain` waits for every
    running job (tests, shutdown).
    """

    def __init__(self, runner: Runner, outbox: OutboxStore | None = None) -> None:
        self.runner = runner
        self.outbox = outbox
        self.scrubber = OutboxScrubber(outbox) if outbox is not None else None
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._gate = asyncio.Semaphore(IN_PROCESS_CONCURRENCY)

    async def enqueue(self, job_name: str, payload: msgspec.Struct) -> str:
        """Record the job, then start it in the background; returns its idempotency id."""
        data = encode_payload(payload)
        job_id = job_id_for(job_name, data)
        if job_id in self._tasks:
            return job_id
        if self.outbox is not None:
            try:
                await self.outbox.add(job_name, job_id, data, error="in-process")
            except StoreError as exc:
                log.warning("job %s runs without a durable record: %s", job_id, exc)
        self._start(job_name, job_id, data)
        return job_id

    async def recover(self) -> int:
        """Run the jobs an earlier process left unfinished; returns how many ran.

        Meant to run as a background task from start-up: it pages through the outbox rows that
        existed when it started (oldest first, :data:`RECOVERY_PAGE` at a time) and runs at
        most :data:`RECOVERY_CONCURRENCY` at once, so a long backlog neither delays start-up
        nor floods the process. Nothing is dropped: a job is removed only once it has run.

        Raises:
            StoreError: the outbox could not be read.
        """
        if self.outbox is None:
            return 0
        snapshot = await self.outbox.max_id()  # rows added later belong to jobs now running
        if snapshot == 0:
            return 0
        log.warning("recovering unfinished in-process jobs (outbox rows up to %d)", snapshot)
        gate = asyncio.Semaphore(RECOVERY_CONCURRENCY)
        done = 0
        last_id = 0
        while True:
            page = [
                job
                for job in await self.outbox.take(RECOVERY_PAGE, after_id=last_id)
                if job.id <= snapshot
            ]
            if not page:
                break
            last_id = page[-1].id
            ran = await asyncio.gather(
                *(self._recover_one(gate, j.job_name, j.job_id, j.payload) for j in page)
            )
            done += sum(ran)
        log.warning("recovered %d unfinished in-process jobs", done)
        return done

    async def _recover_one(
        self, gate: asyncio.Semaphore, job_name: str, job_id: str, data: bytes
    ) -> bool:
        """Run one recovered job under ``gate`` and wait for it; False if it was running."""
        async with gate:
            if job_id in self._tasks:  # enqueued again meanwhile: already running
                return False
            task = self._start(job_name, job_id, data)
            await asyncio.wait([task])
            return True

    def _start(self, job_name: str, job_id: str, data: bytes) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(self._run(job_name, job_id, data))
        self._tasks[job_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(job_id, None))
        return task

    async def _run(self, job_name: str, job_id: str, data: bytes) -> None:
        try:
            async with self._gate:
                await self.runner(job_name, data)
        except Exception:
            log.exception("in-process job %s failed", job_name)
        # not reached when cancelled (shutdown): the record stays for the next start
        if self.outbox is not None:
            try:
                await self.outbox.remove_job(job_id)
                if self.scrubber is not None:
                    self.scrubber.request()
            except StoreError as exc:
                log.warning(
                    "job %s done but its record stays (runs again at restart): %s", job_id, exc
                )

    async def drain(self) -> None:
        """Wait until no job is running (jobs started by jobs included)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def close(self) -> None:
        """Drain, then scrub the WAL of the finished jobs' payloads."""
        await self.drain()
        if self.scrubber is not None:
            await self.scrubber.close()
