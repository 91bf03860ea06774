"""``create_app(settings)``: the gateway as a Starlette app built from a literal routes list.

The lifespan opens the store (migrating in embedded mode), the upstream HTTP client, the job
queue (arq over Redis, or in-process) and, with Redis, the outbox relay loop; it yields typed
state in ``app.state.gateway``. No I/O happens at import time.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator

import httpx
from arq.connections import ArqRedis
from redis.asyncio import ConnectionPool
from starlette.applications import Starlette
from starlette.routing import Route

from services.gateway import proxy
from services.gateway.api import API_ROUTES
from services.gateway.api.lifespan import management_lifespan
from services.gateway.chat import chat_completions
from services.gateway.errors import EXCEPTION_HANDLERS
from services.gateway.health import healthz, readyz
from services.gateway.mcp_server import McpGateway
from services.gateway.models import list_models
from services.gateway.state import GatewayState
from shared.errors import StoreError
from shared.jobs.access import AccessBatcher
from shared.jobs.context import JobContext, build_job_context
from shared.jobs.handlers import run_with_retries
from shared.jobs.payloads import (
    DECAY_RELEVANCE,
    SWEEP,
    DecayRelevancePayload,
    SweepPayload,
)
from shared.jobs.queue import (
    ArqQueue,
    InProcessQueue,
    JobQueue,
    job_deserializer,
    job_serializer,
    resolve_queue_name,
)
from shared.jobs.reindex import start_reindex_if_needed
from shared.settings import Settings
from shared.store import Store

log = logging.getLogger("mnemogate.gateway")

REDIS_SOCKET_TIMEOUT_S = 2.0


def jobs_client() -> httpx.AsyncClient:
    """HTTP client for background work (LLM extractor, remote embeddings); the proxy hot path
    uses its own aiohttp session (:func:`services.gateway.proxy.upstream_session`)."""
    return httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0))


def arq_pool(redis_url: str, queue_name: str) -> ArqRedis:
    """A lazily-connecting arq Redis pool (no ping at start: the gateway starts without Redis)
    that enqueues into ``queue_name``."""
    pool = ConnectionPool.from_url(
        redis_url,
        socket_connect_timeout=REDIS_SOCKET_TIMEOUT_S,
        socket_timeout=REDIS_SOCKET_TIMEOUT_S,
    )
    return ArqRedis(
        connection_pool=pool,
        job_serializer=job_serializer,
        job_deserializer=job_deserializer,
        default_queue_name=queue_name,
    )


async def _relay_loop(queue: ArqQueue, interval_s: float) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            sent = await queue.relay_outbox()
            if sent:
                log.info("relayed %d parked jobs to redis", sent)
        except Exception:
            log.exception("outbox relay failed")


SWEEP_INTERVAL_S = 3600.0
DECAY_INTERVAL_S = 86_400.0


async def _lifecycle_loop(queue: JobQueue) -> None:
    """Embedded mode's stand-in for the worker's cron: a sweep every hour and a relevance decay
    every day, as in-process jobs (their progress is persisted, so restarts lose nothing)."""
    since_decay = 0.0
    while True:
        await asyncio.sleep(SWEEP_INTERVAL_S)
        now = time.time()
        try:
            await queue.enqueue(SWEEP, SweepPayload(requested_at=now))
            since_decay += SWEEP_INTERVAL_S
            if since_decay >= DECAY_INTERVAL_S:
                since_decay = 0.0
                await queue.enqueue(DECAY_RELEVANCE, DecayRelevancePayload(requested_at=now))
        except Exception:
            log.exception("scheduling lifecycle jobs failed")


async def _warm_up(jobs: JobContext, queue: JobQueue, embedded: bool) -> None:
    """Load the embedding model; in embedded mode also check the vector table against the
    embedding signature and start a reindex when it had to be rebuilt or memories still wait
    for vectors (workers do this in worker mode)."""
    assert jobs.engine is not None
    await jobs.engine.warm_up()
    if embedded:
        try:
            await start_reindex_if_needed(jobs.engine, queue)
        except Exception:
            log.exception("vector table check failed; keyword recall only")


async def _recover(queue: InProcessQueue) -> None:
    """Run the in-process jobs an earlier process left unfinished (see ``recover``)."""
    try:
        await queue.recover()
    except StoreError:
        log.exception("could not recover unfinished in-process jobs")


def create_app(settings: Settings) -> Starlette:
    """Build the gateway application for ``settings``."""
    mcp = McpGateway()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = await Store.open(settings.db_path)  # every mode migrates (race-safe)
        http = jobs_client()
        session = proxy.upstream_session(settings)
        jobs = build_job_context(settings, store, http)
        queue: JobQueue
        relay: asyncio.Task[None] | None = None
        if settings.embedded:
            queue = InProcessQueue(
                lambda name, data: run_with_retries(jobs, name, data), store.outbox
            )
        else:
            queue_name = resolve_queue_name(settings.queue_name, await store.identity.store_id())
            arq_queue = ArqQueue(arq_pool(settings.redis_url, queue_name), store.outbox)
            relay = asyncio.create_task(_relay_loop(arq_queue, settings.outbox_relay_interval_s))
            queue = arq_queue
        jobs.queue = queue
        recovery = (  # jobs a crash interrupted (kill -9, power loss), in the background
            asyncio.create_task(_recover(queue)) if isinstance(queue, InProcessQueue) else None
        )
        warm_up = asyncio.create_task(_warm_up(jobs, queue, settings.embedded))
        lifecycle = (
            asyncio.create_task(_lifecycle_loop(queue))
            if settings.embedded and settings.lifecycle_schedule
            else None
        )
        app.state.gateway = GatewayState(
            settings=settings,
            store=store,
            upstream=session,
            providers=jobs.providers,
            queue=queue,
            jobs=jobs,
            access=AccessBatcher(queue),
        )
        access_flush = asyncio.create_task(app.state.gateway.access.run())
        # Everything allocated so far lives as long as the process: move it out of the
        # collected generations, so full collections no longer walk the start-up heap
        # (~78 ms pauses that set the p99 otherwise; docs/ARCHITECTURE.md, "Recall engine").
        gc.collect()
        gc.freeze()
        try:
            async with management_lifespan(app.state.gateway, mcp):
                yield
        finally:
            warm_up.cancel()
            if recovery is not None:
                recovery.cancel()
            if lifecycle is not None:
                lifecycle.cancel()
            access_flush.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await access_flush
            if relay is not None:
                relay.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await relay
            await queue.close()
            if jobs.engine is not None:
                await jobs.engine.close()
            await session.close()
            await http.aclose()
            await store.close()

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        *API_ROUTES,
        Route("/mcp", endpoint=mcp),
    ]
    return Starlette(routes=routes, lifespan=lifespan, exception_handlers=EXCEPTION_HANDLERS)
