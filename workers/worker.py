"""The arq worker: runs the shared job handlers from Redis, plus the outbox relay as a cron job.

Shared clients (store, HTTP client, sensitive detector) open in ``on_startup`` and close in
``on_shutdown``. Retries: a handler's :class:`TransientJobError` becomes ``arq.Retry`` with
exponential backoff until ``job_max_tries``; then a dead letter is recorded (arq retries only on
``Retry``, DESIGN §6).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from arq import Retry
from arq.connections import RedisSettings
from arq.cron import cron
from arq.worker import Function, Worker, func

from shared.jobs.context import JobContext, build_detector
from shared.jobs.handlers import HANDLERS, TransientJobError, backoff_s, dead_letter, execute
from shared.jobs.queue import ArqQueue, job_deserializer, job_serializer
from shared.settings import Settings, load_providers
from shared.store import Store

log = logging.getLogger("mnemogate.worker")

JOB_TIMEOUT_S = 120
POLL_DELAY_S = 0.1
MAX_JOBS = 50


def _job_function(name: str, settings: Settings) -> Function:
    async def run(ctx: dict[str, Any], data: bytes) -> dict[str, Any] | None:
        jc: JobContext = ctx["jc"]
        try:
            return await execute(jc, name, data)
        except TransientJobError as exc:
            job_try = int(ctx.get("job_try", 1))
            if job_try >= settings.job_max_tries:
                await dead_letter(jc, name, data, str(exc))
                return None
            raise Retry(defer=backoff_s(job_try)) from exc

    return func(run, name=name, max_tries=settings.job_max_tries, timeout=JOB_TIMEOUT_S)


def _on_startup(settings: Settings) -> Callable[[dict[str, Any]], Awaitable[None]]:
    async def startup(ctx: dict[str, Any]) -> None:
        store = await Store.open(settings.db_path, run_migrations=True)
        jc = JobContext(
            settings=settings,
            store=store,
            http=httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0)),
            detector=build_detector(settings.sensitive_custom_patterns),
            providers=load_providers(settings),
        )
        jc.queue = ArqQueue(ctx["redis"], store.outbox)
        ctx["jc"] = jc

    return startup


async def _on_shutdown(ctx: dict[str, Any]) -> None:
    jc: JobContext | None = ctx.get("jc")
    if jc is not None:
        await jc.http.aclose()
        await jc.store.close()


async def relay_outbox(ctx: dict[str, Any]) -> int:
    """Cron job: send jobs parked in the SQLite outbox to Redis."""
    jc: JobContext = ctx["jc"]
    assert isinstance(jc.queue, ArqQueue)
    return await jc.queue.relay_outbox()


def build_worker(settings: Settings, *, burst: bool = False) -> Worker:
    """An arq :class:`Worker` for ``settings`` (``burst``: drain the queue, then exit)."""
    if not settings.redis_url:
        raise SystemExit("mnemogate worker needs MNEMOGATE_REDIS_URL (embedded mode runs jobs in the gateway)")
    return Worker(
        functions=[_job_function(name, settings) for name in HANDLERS],
        cron_jobs=[cron(relay_outbox, second=set(range(0, 60, 10)), run_at_startup=True)],
        redis_settings=RedisSettings.from_dsn(settings.redis_url),
        on_startup=_on_startup(settings),
        on_shutdown=_on_shutdown,
        burst=burst,
        poll_delay=POLL_DELAY_S,
        max_jobs=MAX_JOBS,
        job_timeout=JOB_TIMEOUT_S,
        keep_result=3600,
        job_serializer=job_serializer,
        job_deserializer=job_deserializer,
        handle_signals=True,
    )
