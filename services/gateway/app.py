"""``create_app(settings)``: the gateway as a Starlette app built from a literal routes list.

The lifespan builds the process :class:`~shared.runtime.Runtime` (store, settings snapshot,
engine, job queue: arq over Redis, or in-process), the proxy's upstream session and the
background loops, and installs the typed :class:`~services.gateway.state.GatewayState` (read
with :func:`~services.gateway.state.state_of`). No I/O happens at import time.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator

from arq.connections import ArqRedis
from redis.asyncio import ConnectionPool
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from services.gateway import passthrough, proxy
from services.gateway.api import API_ROUTES
from services.gateway.api.lifespan import management_lifespan
from services.gateway.chat import chat_completions
from services.gateway.embeddings import create_embeddings
from services.gateway.errors import EXCEPTION_HANDLERS
from services.gateway.health import healthz, readyz
from services.gateway.mcp_server import McpGateway
from services.gateway.messages import create_message
from services.gateway.metrics_route import metrics
from services.gateway.model_list import list_models
from services.gateway.observe import ObserveMiddleware
from services.gateway.responses import create_response
from services.gateway.state import GatewayState, install_state
from services.gateway.ui import UI_ROUTES
from shared.embedding.autobuild import autobuild_target, build_and_switch
from shared.engine import default_model_dir
from shared.errors import StoreError
from shared.jobs.access_recording import AccessBatcher
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
    Runner,
    job_deserializer,
    job_serializer,
    resolve_queue_name,
)
from shared.jobs.reindex import start_reindex_if_needed
from shared.runtime import QueueFactory, Runtime, in_process_queue, open_runtime
from shared.settings import Settings
from shared.store import Store
from shared.store.integrity import IntegrityProbe

log = logging.getLogger("mnemogate.gateway")

REDIS_SOCKET_TIMEOUT_S = 2.0
GC_YOUNG_THRESHOLD = 10_000
"""Allocations (minus deallocations) of container objects between two collections of the
youngest generation once the gateway runs (Python's default is 700; the older generations keep
their thresholds of 10; https://docs.python.org/3/library/gc.html#gc.set_threshold). A request's
objects die by reference counting within milliseconds, so a young collection mostly walks the
objects of requests still in flight: collecting 14 times less often costs 14 times fewer walks,
each a little longer (about 2.5 ms instead of 0.1 ms on the loaded development machine), and
promotes fewer short-lived objects into the older generations, whose collections walk every
object allocated after :func:`gc.freeze` (an owner's recall index, loaded on first use). Measured
with ``bench/gateway.py``'s request mix, interleaved against the default: keyword recall at
10,000 memories 0.85x the CPU per request and about half the p99 at c=10, memory off 0.96x
(README, "Recall engine")."""


def arq_pool(redis_url: str, queue_name: str) -> ArqRedis:
    """A lazily-connecting arq Redis pool.

    (no ping at start: the gateway starts without Redis) that enqueues into ``queue_name``.
    """
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
    """Embedded mode's stand-in for the worker's cron.

    A sweep every hour and a relevance decay every day, as in-process jobs (their progress is
    persisted, so restarts lose nothing).
    """
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


async def _warm_up(runtime: Runtime, embedded: bool) -> None:
    """Load the embedding model.

    In embedded mode also check the vector table against the embedding signature and start a reindex
    when it had to be rebuilt or memories still wait for vectors (workers do this in worker mode).
    On a first start with no static table, build it in the background first (keyword recall
    meanwhile; see shared.embedding.autobuild).
    """
    engine = runtime.engine

    async def check_vectors() -> None:
        try:
            await start_reindex_if_needed(engine, runtime.queue)
        except Exception:
            log.exception("vector table check failed; keyword recall only")

    settings = runtime.settings
    target = autobuild_target(settings, default_model_dir(settings.db_path), embedded=embedded)
    if target is not None:
        await build_and_switch(engine, target, check_vectors)
        return
    await engine.warm_up()
    if embedded:
        await check_vectors()


async def _recover(queue: InProcessQueue) -> None:
    """Run the in-process jobs an earlier process left unfinished (see ``recover``)."""
    try:
        await queue.recover()
    except StoreError:
        log.exception("could not recover unfinished in-process jobs")


def _queue_factory(settings: Settings) -> QueueFactory:
    """In-process jobs in embedded mode; else arq over Redis, on the queue of this store."""
    if settings.embedded:
        return in_process_queue

    async def arq_queue(store: Store, run: Runner) -> JobQueue:
        queue_name = resolve_queue_name(settings.queue_name, await store.identity.store_id())
        return ArqQueue(arq_pool(settings.redis_url, queue_name), store.outbox)

    return arq_queue


def _background_tasks(runtime: Runtime, access: AccessBatcher) -> list[asyncio.Task[None]]:
    """The lifespan's loops.

    Access flushing, warm-up, and per mode the outbox relay (arq) or crash recovery and the
    lifecycle schedule (embedded).
    """
    settings, queue = runtime.settings, runtime.queue
    tasks = [
        asyncio.create_task(access.run()),
        asyncio.create_task(_warm_up(runtime, settings.embedded)),
    ]
    if isinstance(queue, ArqQueue):
        tasks.append(asyncio.create_task(_relay_loop(queue, settings.outbox_relay_interval_s)))
    if isinstance(queue, InProcessQueue):  # jobs a crash interrupted (kill -9, power loss)
        tasks.append(asyncio.create_task(_recover(queue)))
        if settings.lifecycle_schedule:
            tasks.append(asyncio.create_task(_lifecycle_loop(queue)))
    return tasks


async def _stop(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait until they have ended."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


def create_app(settings: Settings) -> Starlette:
    """Build the gateway application for ``settings``."""
    mcp = McpGateway()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        runtime = await open_runtime(settings, _queue_factory(settings))  # migrates (race-safe)
        session = proxy.upstream_session(settings)
        access = AccessBatcher(runtime.queue)
        integrity = IntegrityProbe(settings.db_path, settings.integrity_check_interval_s)
        state = GatewayState(runtime=runtime, upstream=session, access=access, integrity=integrity)
        install_state(app, state)
        tasks = _background_tasks(runtime, access)
        # Everything allocated so far lives as long as the process: move it out of the
        # collected generations, so full collections no longer walk the start-up heap
        # (~78 ms pauses that set the p99 otherwise; docs/ARCHITECTURE.md, "Recall engine").
        gc.collect()
        gc.freeze()
        gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        try:
            async with management_lifespan(runtime.live, mcp):
                yield
        finally:
            await _stop(tasks)
            if state.integrity is not None:
                await state.integrity.close()
            try:
                await session.close()
            finally:
                await runtime.close()

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/responses", create_response, methods=["POST"]),
        Route("/v1/messages", create_message, methods=["POST"]),
        Route("/v1/messages/count_tokens", passthrough.count_tokens, methods=["POST"]),
        Route(
            "/v1/responses/{response_id}", passthrough.stored_response, methods=["GET", "DELETE"]
        ),
        Route("/v1/responses/{response_id}/cancel", passthrough.cancel_response, methods=["POST"]),
        Route(
            "/v1/responses/{response_id}/input_items",
            passthrough.response_input_items,
            methods=["GET"],
        ),
        Route("/v1/embeddings", create_embeddings, methods=["POST"]),
        Route("/metrics", metrics, methods=["GET"]),
        *UI_ROUTES,
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        *API_ROUTES,
        Route("/mcp", endpoint=mcp),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers=EXCEPTION_HANDLERS,
        middleware=[Middleware(ObserveMiddleware, access_log=settings.log_format == "json")],
    )
