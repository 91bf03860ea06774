"""The arq worker: runs the shared job handlers from Redis, plus the outbox relay as a cron job.

The process :class:`~shared.runtime.Runtime` (store, settings snapshot, HTTP client, engine, queue)
is built in ``on_startup`` and closed in ``on_shutdown``. Retries: a handler's
:class:`TransientJobError` becomes ``arq.Retry`` with exponential backoff until ``job_max_tries``;
then a dead letter is recorded (arq retries only on ``Retry``; see "Job kinds" in
``docs/ARCHITECTURE.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import signal
import time
from collections.abc import Callable
from typing import Any

from arq import Retry
from arq.connections import RedisSettings
from arq.cron import cron
from arq.typing import StartupShutdown
from arq.worker import Function, Worker, func
from redis.exceptions import RedisError

from shared.jobs.context import JobContext
from shared.jobs.handlers import HANDLERS, TransientJobError, backoff_s, dead_letter, execute
from shared.jobs.payloads import (
    DECAY_RELEVANCE,
    SWEEP,
    DecayRelevancePayload,
    SweepPayload,
    encode_payload,
)
from shared.jobs.queue import ArqQueue, JobQueue, Runner, job_deserializer, job_serializer
from shared.jobs.reindex import start_reindex_if_needed
from shared.runtime import Runtime, open_runtime
from shared.settings import Settings
from shared.store import Store

log = logging.getLogger("mnemogate.worker")

JOB_TIMEOUT_S = 120
POLL_DELAY_S = 0.1
MAX_JOBS = 50


#: arq's own timeout is the handler timeout (``job_timeout_s``, enforced inside
#: :func:`~shared.jobs.handlers.execute`, where it is retried) plus this margin, so a slow job is
#: retried and dead-lettered by us rather than failed by arq. arq keeps a job's in-progress lock
#: for its largest function timeout + 10 s: a job whose worker was killed is re-run by another
#: worker ``job_timeout_s`` + 12 s after it started.
JOB_TIMEOUT_MARGIN_S = 2.0


def arq_job_timeout_s(settings: Settings) -> float:
    """Arq's timeout for every function and cron job: ``job_timeout_s`` + 2 s, in seconds."""
    return settings.job_timeout_s + JOB_TIMEOUT_MARGIN_S


def _job_function(name: str, settings: Settings) -> Function:
    async def run(ctx: dict[str, Any], data: bytes) -> dict[str, Any] | None:
        jc: JobContext = ctx["jc"]
        job_try = int(ctx.get("job_try", 1))
        try:
            return await execute(jc, name, data)
        except TransientJobError as exc:
            if job_try >= settings.job_max_tries:
                await dead_letter(jc, name, data, str(exc), tries=job_try)
                return None
            log.warning("job %s try %d failed, retrying: %s", name, job_try, exc)
            jc.count(f"job_retries:{name}")
            raise Retry(defer=backoff_s(job_try)) from exc
        except Exception as exc:
            # Not retryable (unknown job, malformed payload, a bug): dead-letter, then let arq
            # record the failure too.
            error = f"{type(exc).__name__}: {exc}"
            await dead_letter(jc, name, data, error, tries=job_try, permanent=True)
            raise

    return func(
        run, name=name, max_tries=settings.job_max_tries, timeout=arq_job_timeout_s(settings)
    )


def _on_startup(settings: Settings) -> StartupShutdown:
    async def startup(ctx: dict[Any, Any]) -> None:
        async def arq_queue(store: Store, run: Runner) -> JobQueue:
            return ArqQueue(ctx["redis"], store.outbox, owns_pool=False)  # arq closes it

        runtime = await open_runtime(settings, arq_queue)  # runtime overrides apply from start
        ctx["runtime"] = runtime
        ctx["jc"] = runtime.jobs
        await runtime.engine.warm_up()
        await start_reindex_if_needed(runtime.engine, runtime.queue)
        gc.freeze()  # start-up objects leave the collected generations (docs/ARCHITECTURE.md)

    return startup


async def _on_shutdown(ctx: dict[str, Any]) -> None:
    ctx.pop("jc", None)
    runtime: Runtime | None = ctx.pop("runtime", None)
    if runtime is not None:
        await runtime.close()  # the store's connection threads would keep the process alive


#: Seconds each Redis call may take while the worker shuts down (Redis may be down or hung).
SHUTDOWN_REDIS_TIMEOUT_S = 2.0
#: Seconds cancelled job tasks get to finish (roll back, record their outcome) at shutdown.
SHUTDOWN_TASKS_TIMEOUT_S = 3.0


class MnemogateWorker(Worker):
    """arq's :class:`~arq.worker.Worker` with a shutdown that always runs ``on_shutdown``.

    arq 0.28's ``close()`` gathers the job tasks without ``return_exceptions`` and then awaits
    Redis unbounded. A job task that SIGTERM cancelled while it was recording its result in
    Redis (arq shields that step, so the task ends cancelled) made the gather raise, and a down
    or hung Redis made the health-key delete raise or block: either way ``on_shutdown`` never
    ran, the SQLite connection threads stayed open and the process never exited (seen in CI).
    A cancelled job whose outcome Redis does not take blocked the gather for ever. Here job
    tasks get :data:`SHUTDOWN_TASKS_TIMEOUT_S` and are then cancelled again, each Redis call is
    bounded by :data:`SHUTDOWN_REDIS_TIMEOUT_S`, and ``on_shutdown`` runs in a ``finally``.
    A job whose result could not be recorded is re-run by arq after its in-progress lock
    expires; jobs are idempotent. Uses arq 0.28's ``tasks``, ``_pool`` and ``_handle_signals``
    (arq is pinned below 0.29 in ``pyproject.toml``).
    """

    async def close(self) -> None:
        """Collect job tasks, drop the health key and close Redis (bounded), run on_shutdown."""
        if not self._handle_signals:
            self.handle_sig(signal.SIGUSR1)
        tasks = list(self.tasks.values())
        if tasks:
            # cancelled jobs still record their outcome in Redis (shielded): bounded wait, then
            # a second cancel ends the ones that Redis holds up
            _, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_TASKS_TIMEOUT_S)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=SHUTDOWN_REDIS_TIMEOUT_S)
        self.tasks.clear()
        pool, self._pool = self._pool, None
        try:
            if pool is not None:
                with contextlib.suppress(RedisError, OSError, TimeoutError):
                    await asyncio.wait_for(
                        pool.delete(self.health_check_key), SHUTDOWN_REDIS_TIMEOUT_S
                    )
        finally:
            try:
                if self.on_shutdown and pool is not None:
                    await self.on_shutdown(self.ctx)
            finally:
                if pool is not None:
                    with contextlib.suppress(RedisError, OSError, TimeoutError):
                        await asyncio.wait_for(
                            pool.close(close_connection_pool=True), SHUTDOWN_REDIS_TIMEOUT_S
                        )


async def relay_outbox(ctx: dict[str, Any]) -> int:
    """Cron job: send jobs parked in the SQLite outbox to Redis."""
    jc: JobContext = ctx["jc"]
    assert isinstance(jc.queue, ArqQueue)
    return await jc.queue.relay_outbox()


async def sweep_cron(ctx: dict[str, Any]) -> dict[str, Any]:
    """Cron job (hourly, minute 7): one lifecycle sweep run (typed decay + capacity).

    Runs the same ``sweep`` handler as an enqueued job; progress is persisted per batch, so the
    next run resumes where this one stopped (bounded by ``sweep_max_scan`` rows per run).
    """
    jc: JobContext = ctx["jc"]
    return await execute(jc, SWEEP, encode_payload(SweepPayload(requested_at=time.time())))


async def decay_relevance_cron(ctx: dict[str, Any]) -> dict[str, Any]:
    """Cron job (daily, 03:17 worker time): relevance decay catch-up since the last persisted run.

    The decay applied depends only on elapsed time, not on how often this runs (see
    :mod:`shared.lifecycle.relevance`), so missed runs (downtime) are caught up, never reset.
    """
    jc: JobContext = ctx["jc"]
    payload = DecayRelevancePayload(requested_at=time.time())
    return await execute(jc, DECAY_RELEVANCE, encode_payload(payload))


async def reindex_pending_cron(ctx: dict[str, Any]) -> bool:
    """Cron job (every 10 minutes): start a reindex if any memory still waits for its vectors.

    Repairs memories whose embed job was lost (see
    :func:`~shared.jobs.reindex.start_reindex_if_needed`); a no-op when none is pending.
    """
    jc: JobContext = ctx["jc"]
    return await start_reindex_if_needed(jc.engine, jc.queue)


LIFECYCLE_CRON_JOBS = [
    cron(reindex_pending_cron, minute=set(range(3, 60, 10)), run_at_startup=False),
    cron(sweep_cron, minute=7, run_at_startup=False, timeout=JOB_TIMEOUT_S * 10),
    cron(decay_relevance_cron, hour=3, minute=17, run_at_startup=False),
]


#: Seconds between restarts of a worker that lost Redis: 1, 2, 4 … capped at 30, back to 1
#: after a run that lasted a minute.
RESTART_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
#: A run that lasted this long (seconds) resets the restart backoff.
HEALTHY_RUN_S = 60.0


def run_worker(settings: Settings, queue_name: str, *, burst: bool = False) -> int:
    """Run the arq worker until SIGTERM or SIGINT; return the process exit code.

    arq's worker stops with ``ConnectionError`` as soon as Redis is unreachable (a Redis
    restart, a network blip, Redis not up yet). A job worker must outlive that, so the worker is
    rebuilt and restarted after :data:`RESTART_BACKOFF_S` with a WARNING log line; a signal
    during the wait ends it at once, and so does one that arrives as the wait ends (it stops the
    next worker as soon as that one runs). Jobs are not lost meanwhile: gateways park them in the
    SQLite outbox while Redis is down, and a job that was running is re-run by arq. In burst
    mode a lost Redis ends the run with exit code 1.
    """
    stop = _Stop()
    attempt = 0
    while not stop.signalled:
        worker = build_worker(settings, queue_name, burst=burst)
        stop.worker = worker
        worker.on_stop = stop.signalled.append
        started = time.monotonic()
        try:
            worker.run()
            return 0
        except (RedisError, OSError) as exc:
            if stop.signalled:
                return 0
            if burst:
                log.error("redis unreachable, burst run stopped: %s", exc)
                return 1
            if time.monotonic() - started > HEALTHY_RUN_S:
                attempt = 0
            delay = RESTART_BACKOFF_S[min(attempt, len(RESTART_BACKOFF_S) - 1)]
            attempt += 1
            log.warning("redis unreachable (%s); worker restarts in %g s", exc, delay)
            if _sleep_unless_signalled(worker.loop, delay, stop):
                return 0
    return 0


class _Stop:
    """The signals a restarting worker received, and the worker a late one must stop.

    A signal that reaches the event loop in the iteration that ends a restart wait is dispatched
    to the wait's handler only when the loop next runs, which is inside the next worker's
    ``run()``: the handler then stops that worker (``worker``) instead of the finished wait.
    """

    def __init__(self) -> None:
        self.signalled: list[signal.Signals] = []
        self.worker: Worker | None = None

    def during(self, sleeper: asyncio.Task[None]) -> Callable[[signal.Signals], None]:
        """The signal handler of a restart wait on ``sleeper``."""

        def handle(sig: signal.Signals) -> None:
            self.signalled.append(sig)
            if not sleeper.done():
                sleeper.cancel()
            elif self.worker is not None and self.worker.main_task is not None:
                self.worker.handle_sig(sig)  # the next worker runs: stop it

        return handle


def _sleep_unless_signalled(loop: asyncio.AbstractEventLoop, seconds: float, stop: _Stop) -> bool:
    """Sleep ``seconds`` on ``loop``; True if SIGTERM or SIGINT arrived meanwhile."""
    sleeper = loop.create_task(asyncio.sleep(seconds))
    handle = stop.during(sleeper)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, handle, sig)
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(sleeper)
    return bool(stop.signalled)


#: arq's INFO line for a job start: ``<delay> → <job id>:<function>(<repr of the arguments>)``.
ARQ_JOB_START = "%6.2fs → %s(%s)%s"


class JobArgumentsFilter(logging.Filter):
    """Drops the job arguments from arq's job-start log line (they hold the user's text).

    The line keeps the delay, the job id and the function (``… → <id>:learn(…)``); every other
    record passes unchanged. Job results are not logged either (``log_results=False`` in
    :func:`build_worker`).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the arguments of a job-start record with ``…``; always keep the record."""
        if record.msg == ARQ_JOB_START and isinstance(record.args, tuple):
            delay, ref, *_arguments, extra = record.args
            record.args = (delay, ref, "…", extra)
        return True


def _hide_job_arguments() -> None:
    """Install :class:`JobArgumentsFilter` on arq's worker logger once."""
    arq_log = logging.getLogger("arq.worker")
    if not any(isinstance(f, JobArgumentsFilter) for f in arq_log.filters):
        arq_log.addFilter(JobArgumentsFilter())


def build_worker(settings: Settings, queue_name: str, *, burst: bool = False) -> Worker:
    """An arq :class:`Worker` for ``settings`` on the arq queue ``queue_name``.

    (see :func:`~shared.jobs.queue.resolve_queue_name`); ``burst``: drain the queue, then exit.
    """
    if not settings.redis_url:
        raise SystemExit(
            "mnemogate worker needs MNEMOGATE_REDIS_URL (embedded mode runs jobs in the gateway)"
        )
    _hide_job_arguments()  # logs carry job ids and functions, never the user's text
    return MnemogateWorker(
        queue_name=queue_name,
        functions=[_job_function(name, settings) for name in HANDLERS],
        cron_jobs=[
            cron(relay_outbox, second=set(range(0, 60, 10)), run_at_startup=True),
            # arq holds every job's in-progress lock for its LARGEST timeout + 10 s, so one long
            # cron timeout would delay re-running a killed worker's jobs by as long: cron jobs
            # get the same bound (the sweep resumes from its persisted progress next run).
            *[
                dataclasses.replace(cj, timeout_s=arq_job_timeout_s(settings))
                for cj in (LIFECYCLE_CRON_JOBS if settings.lifecycle_schedule else [])
            ],
        ],
        redis_settings=RedisSettings.from_dsn(settings.redis_url),
        on_startup=_on_startup(settings),
        on_shutdown=_on_shutdown,
        burst=burst,
        poll_delay=POLL_DELAY_S,
        max_jobs=MAX_JOBS,
        job_timeout=arq_job_timeout_s(settings),
        keep_result=3600,
        log_results=False,
        job_serializer=job_serializer,
        job_deserializer=job_deserializer,
        handle_signals=True,
    )
